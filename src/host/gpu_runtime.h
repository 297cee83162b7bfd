/* SPDX-License-Identifier: MIT */
/*
 * gpu_runtime.h - the host library's CUDA and HIP runtimes, written once:
 * their runtime APIs differ only in their prefix, so gpu_cuda.c and
 * gpu_hip.c define NKV_RT(name) (cuda##name / hip##name), NKV_RT_NAME,
 * NKV_RT_ENOMEM (the out-of-memory error), NKV_RT_HOST_MAPS_VRAM(dev)
 * (can this process map the GPU's memory: 1 / 0), NKV_RT_EXPORT_DMABUF
 * (the export_dmabuf op, or NULL) and NKV_RT_DMABUF_READY() (does the
 * export work here: 1 / 0), then include this.
 * Host rings, values and the doorbell page are registered mapped (a
 * PCIe BAR as I/O memory); queue bookkeeping lives in device memory.
 * Plain C against the runtime API; only kernels go through nvcc/hipcc.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "host/gpu.h"

/*
 * Copies to and from GPU memory go on one non-blocking stream of the
 * device init chose, never the legacy default stream: a DMA message for
 * a value in VRAM (memory mode 0x8, served while the kernel that asked
 * for it still runs) copied on the default stream would wait for that
 * kernel, which waits for the completion the copy holds up. The first
 * lent GPU showed it: the target timed out and gave up the controller.
 */
static pthread_mutex_t nkv_rt_lock = PTHREAD_MUTEX_INITIALIZER;
static NKV_RT(Stream_t) nkv_rt_stream;
static int nkv_rt_dev = -1;

static int nkv_rt_errno(NKV_RT(Error_t) e)
{
	if (e == NKV_RT(Success))
		return 0;
	if (e == NKV_RT_ENOMEM)
		return -ENOMEM;
	if (e == NKV_RT(ErrorNoDevice) || e == NKV_RT(ErrorInsufficientDriver))
		return -ENODEV;
	return e == NKV_RT(ErrorInvalidValue) ? -EINVAL : -EIO;
}

static int nkv_rt_init(struct nkv_gpu_caps *caps, char *err, size_t errlen)
{
	const char *e = getenv("NKV_GPU_DEVICE");
	int n = 0, dev = e ? atoi(e) : 0;
	NKV_RT(Error_t) r = NKV_RT(GetDeviceCount)(&n);

	if (r != NKV_RT(Success) || n == 0) {
		snprintf(err, errlen, "no %s device (%s)", NKV_RT_NAME,
			 r != NKV_RT(Success) ? NKV_RT(GetErrorString)(r) : "none found");
		return -ENODEV;
	}
	if (dev < 0 || dev >= n) {
		snprintf(err, errlen, "NKV_GPU_DEVICE=%d: only %d %s devices", dev, n, NKV_RT_NAME);
		return -ENODEV;
	}
	r = NKV_RT(SetDevice)(dev);
	pthread_mutex_lock(&nkv_rt_lock);
	if (r == NKV_RT(Success) && nkv_rt_dev >= 0 && nkv_rt_dev != dev)
		r = NKV_RT(ErrorInvalidDevice);
	if (r == NKV_RT(Success) && nkv_rt_dev < 0) {
		r = NKV_RT(StreamCreateWithFlags)(&nkv_rt_stream, NKV_RT(StreamNonBlocking));
		if (r == NKV_RT(Success))
			nkv_rt_dev = dev;
	}
	pthread_mutex_unlock(&nkv_rt_lock);
	if (r != NKV_RT(Success)) {
		snprintf(err, errlen, "device %d%s: %s", dev,
			 nkv_rt_dev >= 0 && nkv_rt_dev != dev ? " (this process uses another)" : "",
			 NKV_RT(GetErrorString)(r));
		return nkv_rt_errno(r);
	}
	caps->name = NKV_RT_NAME;
	caps->emulated = 0;
	caps->host_maps_vram = NKV_RT_HOST_MAPS_VRAM(dev);
	caps->dmabuf_export = NKV_RT_DMABUF_READY();
	return 0;
}

static int nkv_rt_host_register(void *va, size_t len, int iomem, uint64_t *dev)
{
	unsigned flags = NKV_RT(HostRegisterMapped) | (iomem ? NKV_RT(HostRegisterIoMemory) : 0);
	void *d = NULL;
	int rc = nkv_rt_errno(NKV_RT(HostRegister)(va, len, flags));

	if (!rc)
		rc = nkv_rt_errno(NKV_RT(HostGetDevicePointer)(&d, va, 0));
	if (rc) {
		(void)NKV_RT(HostUnregister)(va);
		return rc;
	}
	*dev = (uint64_t)(uintptr_t)d;
	return 0;
}

static void nkv_rt_host_unregister(void *va)
{
	(void)NKV_RT(HostUnregister)(va);
}

static int nkv_rt_dev_alloc(size_t len, uint64_t *dev)
{
	void *d = NULL;
	int rc = nkv_rt_errno(NKV_RT(Malloc)(&d, len));

	if (!rc)
		rc = nkv_rt_errno(NKV_RT(MemsetAsync)(d, 0, len, nkv_rt_stream));
	if (!rc)
		rc = nkv_rt_errno(NKV_RT(StreamSynchronize)(nkv_rt_stream));
	if (rc) {
		(void)NKV_RT(Free)(d);
		return rc;
	}
	*dev = (uint64_t)(uintptr_t)d;
	return 0;
}

static void nkv_rt_dev_free(uint64_t dev)
{
	(void)NKV_RT(Free)((void *)(uintptr_t)dev);
}

/* One copy on the copy stream, from any thread (the current device is
 * per thread: a message thread has none set). */
static int nkv_rt_copy(void *dst, const void *src, size_t len, int to_dev)
{
	NKV_RT(Error_t) r = NKV_RT(SetDevice)(nkv_rt_dev);

	if (r == NKV_RT(Success))
		r = NKV_RT(MemcpyAsync)(dst, src, len,
					to_dev ? NKV_RT(MemcpyHostToDevice) : NKV_RT(MemcpyDeviceToHost),
					nkv_rt_stream);
	if (r == NKV_RT(Success))
		r = NKV_RT(StreamSynchronize)(nkv_rt_stream);
	return nkv_rt_errno(r);
}

static int nkv_rt_to_dev(uint64_t dev, const void *src, size_t len)
{
	return nkv_rt_copy((void *)(uintptr_t)dev, src, len, 1);
}

static int nkv_rt_from_dev(void *dst, uint64_t dev, size_t len)
{
	return nkv_rt_copy(dst, (const void *)(uintptr_t)dev, len, 0);
}

static const struct nkv_gpu_ops nkv_rt_ops = {
	.name = NKV_RT_NAME,
	.init = nkv_rt_init,
	.host_register = nkv_rt_host_register,
	.host_unregister = nkv_rt_host_unregister,
	.dev_alloc = nkv_rt_dev_alloc,
	.dev_free = nkv_rt_dev_free,
	.to_dev = nkv_rt_to_dev,
	.from_dev = nkv_rt_from_dev,
	.export_dmabuf = NKV_RT_EXPORT_DMABUF,
};

const struct nkv_gpu_ops *nkv_h_gpu(void)
{
	return &nkv_rt_ops;
}
