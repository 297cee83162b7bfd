/* SPDX-License-Identifier: MIT */
/*
 * gpu_hip.c - the HIP runtime (make GPU=hip, ROCm 5.2+): host rings,
 * values and the doorbell page registered mapped (hipHostRegister), a
 * PCIe BAR as I/O memory; queue bookkeeping in hipMalloc memory. Plain C
 * against the HIP runtime API. Compiled here, never run: no AMD GPU has
 * been at hand (docs/gpu.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <hip/hip_runtime_api.h>

#include "host/gpu.h"

static int hip_errno(hipError_t e)
{
	switch (e) {
	case hipSuccess:
		return 0;
	case hipErrorOutOfMemory:
		return -ENOMEM;
	case hipErrorNoDevice:
	case hipErrorInsufficientDriver:
		return -ENODEV;
	case hipErrorInvalidValue:
		return -EINVAL;
	default:
		return -EIO;
	}
}

static int hip_init(struct nkv_gpu_caps *caps, char *err, size_t errlen)
{
	const char *e = getenv("NKV_GPU_DEVICE");
	int n = 0, dev = e ? atoi(e) : 0, large_bar = 0;
	hipError_t r = hipGetDeviceCount(&n);

	if (r != hipSuccess || n == 0) {
		snprintf(err, errlen, "no HIP device (%s)",
			 r != hipSuccess ? hipGetErrorString(r) : "none found");
		return -ENODEV;
	}
	if (dev < 0 || dev >= n) {
		snprintf(err, errlen, "NKV_GPU_DEVICE=%d: only %d HIP devices", dev, n);
		return -ENODEV;
	}
	r = hipSetDevice(dev);
	if (r != hipSuccess) {
		snprintf(err, errlen, "hipSetDevice(%d): %s", dev, hipGetErrorString(r));
		return hip_errno(r);
	}
	if (hipDeviceGetAttribute(&large_bar, hipDeviceAttributeIsLargeBar, dev) != hipSuccess)
		large_bar = 0;
	caps->name = "hip";
	caps->emulated = 0;
	caps->host_maps_vram = large_bar;
	return 0;
}

static int hip_host_register(void *va, size_t len, int iomem, uint64_t *dev)
{
	unsigned flags = hipHostRegisterMapped | (iomem ? hipHostRegisterIoMemory : 0);
	void *d = NULL;
	int rc = hip_errno(hipHostRegister(va, len, flags));

	if (!rc)
		rc = hip_errno(hipHostGetDevicePointer(&d, va, 0));
	if (rc) {
		(void)hipHostUnregister(va);
		return rc;
	}
	*dev = (uint64_t)(uintptr_t)d;
	return 0;
}

static void hip_host_unregister(void *va)
{
	(void)hipHostUnregister(va);
}

static int hip_dev_alloc(size_t len, uint64_t *dev)
{
	void *d = NULL;
	int rc = hip_errno(hipMalloc(&d, len));

	if (!rc)
		rc = hip_errno(hipMemset(d, 0, len));
	if (rc) {
		(void)hipFree(d);
		return rc;
	}
	*dev = (uint64_t)(uintptr_t)d;
	return 0;
}

static void hip_dev_free(uint64_t dev)
{
	(void)hipFree((void *)(uintptr_t)dev);
}

static int hip_to_dev(uint64_t dev, const void *src, size_t len)
{
	return hip_errno(hipMemcpy((void *)(uintptr_t)dev, src, len, hipMemcpyHostToDevice));
}

static int hip_from_dev(void *dst, uint64_t dev, size_t len)
{
	return hip_errno(hipMemcpy(dst, (const void *)(uintptr_t)dev, len, hipMemcpyDeviceToHost));
}

static const struct nkv_gpu_ops hip_ops = {
	.name = "hip",
	.init = hip_init,
	.host_register = hip_host_register,
	.host_unregister = hip_host_unregister,
	.dev_alloc = hip_dev_alloc,
	.dev_free = hip_dev_free,
	.to_dev = hip_to_dev,
	.from_dev = hip_from_dev,
};

const struct nkv_gpu_ops *nkv_h_gpu(void)
{
	return &hip_ops;
}
