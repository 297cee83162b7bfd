/* SPDX-License-Identifier: MIT */
/*
 * gpu_cuda.c - the CUDA runtime (make GPU=cuda): host rings, values and
 * the doorbell page registered mapped (cudaHostRegister), a PCIe BAR as
 * I/O memory; queue bookkeeping in cudaMalloc memory. Plain C against
 * the CUDA runtime API; only kernels go through nvcc.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "host/gpu.h"

static int cuda_errno(cudaError_t e)
{
	switch (e) {
	case cudaSuccess:
		return 0;
	case cudaErrorMemoryAllocation:
		return -ENOMEM;
	case cudaErrorNoDevice:
	case cudaErrorInsufficientDriver:
		return -ENODEV;
	case cudaErrorInvalidValue:
		return -EINVAL;
	default:
		return -EIO;
	}
}

static int cuda_init(struct nkv_gpu_caps *caps, char *err, size_t errlen)
{
	const char *e = getenv("NKV_GPU_DEVICE");
	int n = 0, dev = e ? atoi(e) : 0;
	cudaError_t r = cudaGetDeviceCount(&n);

	if (r != cudaSuccess || n == 0) {
		snprintf(err, errlen, "no CUDA device (%s)",
			 r != cudaSuccess ? cudaGetErrorString(r) : "none found");
		return -ENODEV;
	}
	if (dev < 0 || dev >= n) {
		snprintf(err, errlen, "NKV_GPU_DEVICE=%d: only %d CUDA devices", dev, n);
		return -ENODEV;
	}
	r = cudaSetDevice(dev);
	if (r != cudaSuccess) {
		snprintf(err, errlen, "cudaSetDevice(%d): %s", dev, cudaGetErrorString(r));
		return cuda_errno(r);
	}
	caps->name = "cuda";
	caps->emulated = 0;
	/* A PCIe NVIDIA GPU gives user space no CPU mapping of its memory. */
	caps->host_maps_vram = 0;
	return 0;
}

static int cuda_host_register(void *va, size_t len, int iomem, uint64_t *dev)
{
	unsigned flags = cudaHostRegisterMapped | (iomem ? cudaHostRegisterIoMemory : 0);
	void *d = NULL;
	int rc = cuda_errno(cudaHostRegister(va, len, flags));

	if (!rc)
		rc = cuda_errno(cudaHostGetDevicePointer(&d, va, 0));
	if (rc) {
		cudaHostUnregister(va);
		return rc;
	}
	*dev = (uint64_t)(uintptr_t)d;
	return 0;
}

static void cuda_host_unregister(void *va)
{
	cudaHostUnregister(va);
}

static int cuda_dev_alloc(size_t len, uint64_t *dev)
{
	void *d = NULL;
	int rc = cuda_errno(cudaMalloc(&d, len));

	if (!rc)
		rc = cuda_errno(cudaMemset(d, 0, len));
	if (rc) {
		cudaFree(d);
		return rc;
	}
	*dev = (uint64_t)(uintptr_t)d;
	return 0;
}

static void cuda_dev_free(uint64_t dev)
{
	cudaFree((void *)(uintptr_t)dev);
}

static int cuda_to_dev(uint64_t dev, const void *src, size_t len)
{
	return cuda_errno(cudaMemcpy((void *)(uintptr_t)dev, src, len, cudaMemcpyHostToDevice));
}

static int cuda_from_dev(void *dst, uint64_t dev, size_t len)
{
	return cuda_errno(cudaMemcpy(dst, (const void *)(uintptr_t)dev, len,
				     cudaMemcpyDeviceToHost));
}

static const struct nkv_gpu_ops cuda_ops = {
	.name = "cuda",
	.init = cuda_init,
	.host_register = cuda_host_register,
	.host_unregister = cuda_host_unregister,
	.dev_alloc = cuda_dev_alloc,
	.dev_free = cuda_dev_free,
	.to_dev = cuda_to_dev,
	.from_dev = cuda_from_dev,
};

const struct nkv_gpu_ops *nkv_h_gpu(void)
{
	return &cuda_ops;
}
