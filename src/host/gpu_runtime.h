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
#include <stdio.h>
#include <stdlib.h>

#include "host/gpu.h"

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
	if (r != NKV_RT(Success)) {
		snprintf(err, errlen, "set device %d: %s", dev, NKV_RT(GetErrorString)(r));
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
		rc = nkv_rt_errno(NKV_RT(Memset)(d, 0, len));
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

static int nkv_rt_to_dev(uint64_t dev, const void *src, size_t len)
{
	return nkv_rt_errno(NKV_RT(Memcpy)((void *)(uintptr_t)dev, src, len,
					   NKV_RT(MemcpyHostToDevice)));
}

static int nkv_rt_from_dev(void *dst, uint64_t dev, size_t len)
{
	return nkv_rt_errno(NKV_RT(Memcpy)(dst, (const void *)(uintptr_t)dev, len,
					   NKV_RT(MemcpyDeviceToHost)));
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
