/* SPDX-License-Identifier: MIT */
/* gpu_cuda.cu - nkv-bench's GPU engine on NVIDIA (nvcc, make GPU=cuda). */
#include <cuda_runtime.h>

#define NKV_RT(name) cuda##name
#define NKV_RT_PROP cudaDeviceProp
#include "gpu_launch.h"
