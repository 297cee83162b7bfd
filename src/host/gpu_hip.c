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
#include "host/gpu_runtime.h"
