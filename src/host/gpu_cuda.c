/* SPDX-License-Identifier: MIT */
/*
 * gpu_cuda.c - the CUDA runtime (make GPU=cuda), gpu_runtime.h over the
 * CUDA runtime API. A PCIe NVIDIA GPU gives user space no CPU mapping of
 * its memory.
 */
#include <errno.h>
#include <stddef.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

/*
 * VRAM as a dma-buf for nkv.ko (pcie, memory mode 0x8 and NKV_MEM_DEVICE
 * regions): cuMemGetHandleForAddressRange(CU_MEM_RANGE_HANDLE_TYPE_
 * DMA_BUF_FD), a driver API entry point reached through the runtime
 * (cudaGetDriverEntryPointByVersion), so libnkv links no libcuda. Compiled
 * here, never run: no GPU has proven the path (docs/gpu.md).
 */
typedef CUresult (*nkv_cu_range_handle_fn)(void *handle, CUdeviceptr dptr, size_t size,
					   CUmemRangeHandleType type, unsigned long long flags);

static nkv_cu_range_handle_fn nkv_cuda_range_handle(void)
{
	static nkv_cu_range_handle_fn fn;
	static int looked;
	enum cudaDriverEntryPointQueryResult q;
	void *p = NULL;

	if (!looked) {
		looked = 1;
		if (cudaGetDriverEntryPointByVersion("cuMemGetHandleForAddressRange", &p, 12000,
						     cudaEnableDefault, &q) == cudaSuccess &&
		    q == cudaDriverEntryPointSuccess)
			fn = (nkv_cu_range_handle_fn)p;
	}
	return fn;
}

static int nkv_cuda_export_dmabuf(uint64_t dev, size_t len, int *fd)
{
	nkv_cu_range_handle_fn fn = nkv_cuda_range_handle();
	int h = -1;

	if (!fn)
		return -EOPNOTSUPP;
	if (fn(&h, (CUdeviceptr)dev, len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0) != CUDA_SUCCESS)
		return -EIO;
	*fd = h;
	return 0;
}

#define NKV_RT(name) cuda##name
#define NKV_RT_NAME "cuda"
#define NKV_RT_ENOMEM cudaErrorMemoryAllocation
#define NKV_RT_HOST_MAPS_VRAM(dev) ((void)(dev), 0)
#define NKV_RT_EXPORT_DMABUF nkv_cuda_export_dmabuf
#define NKV_RT_DMABUF_READY() (nkv_cuda_range_handle() != NULL)
#include "host/gpu_runtime.h"
