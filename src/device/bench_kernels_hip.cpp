/* SPDX-License-Identifier: MIT */
/* bench_kernels_hip.cpp - nkv-bench's kernel body for hipcc. */
#include "device/bench_kernels.h"

/* One wavefront per block; block b owns qps[b] with args[b]. */
__global__ void nkv_bk_run_kernel(struct nkv_dev_qp *qps, const struct nkv_bk_args *args)
{
	nkv_bk_run(&qps[blockIdx.x], &args[blockIdx.x]);
}
