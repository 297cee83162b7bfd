/* SPDX-License-Identifier: MIT */
/* gpu_hip.cpp - nkv-bench's GPU engine on AMD (hipcc, make GPU=hip). */
#include <hip/hip_runtime.h>

#define NKV_RT(name) hip##name
#define NKV_RT_PROP hipDeviceProp_t
#include "gpu_launch.h"
