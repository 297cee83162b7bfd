/* SPDX-License-Identifier: MIT */
/*
 * gpu_hip.c - the HIP runtime (make GPU=hip, ROCm 5.2+), gpu_runtime.h
 * over the HIP runtime API. Compiled here, never run: no AMD GPU has
 * been at hand (docs/gpu.md). Large-BAR GPUs let this process map
 * device memory.
 */
#include <hip/hip_runtime_api.h>

/* hipDeviceAttributeIsLargeBar, 0 when it cannot be read. */
static int nkv_hip_large_bar(int dev)
{
	int v = 0;

	return hipDeviceGetAttribute(&v, hipDeviceAttributeIsLargeBar, dev) == hipSuccess && v;
}

#define NKV_RT(name) hip##name
#define NKV_RT_NAME "hip"
#define NKV_RT_ENOMEM hipErrorOutOfMemory
#define NKV_RT_HOST_MAPS_VRAM(dev) nkv_hip_large_bar(dev)
/* ROCm 5.2 has no hsa_amd_portable_export_dmabuf: no export (pcie values
 * in VRAM stay refused, docs/gpu.md). */
#define NKV_RT_EXPORT_DMABUF NULL
#define NKV_RT_DMABUF_READY() 0
#include "host/gpu_runtime.h"
