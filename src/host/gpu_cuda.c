/* SPDX-License-Identifier: MIT */
/*
 * gpu_cuda.c - the CUDA runtime (make GPU=cuda), gpu_runtime.h over the
 * CUDA runtime API. A PCIe NVIDIA GPU gives user space no CPU mapping of
 * its memory.
 */
#include <cuda_runtime_api.h>

#define NKV_RT(name) cuda##name
#define NKV_RT_NAME "cuda"
#define NKV_RT_ENOMEM cudaErrorMemoryAllocation
#define NKV_RT_HOST_MAPS_VRAM(dev) ((void)(dev), 0)
#include "host/gpu_runtime.h"
