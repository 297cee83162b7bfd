/* SPDX-License-Identifier: MIT */
/* bench_kernels_hip.cpp - nkv-bench's kernel body for hipcc. */
#include "device/bench_kernels.h"

/* One wavefront per block; block b owns qps[b] with args[b]. */
__global__ void nkv_bk_run_kernel(struct nkv_dev_qp *qps, const struct nkv_bk_args *args)
{
	/* One wave owns a queue pair: a block launched wider than one wavefront
	 * must not put a second one on it (a batch wider than the wave is
	 * refused by the first, NKV_QP_FAILED_ARGS). */
	if (threadIdx.x / warpSize != 0 || threadIdx.y || threadIdx.z)
		return;
	nkv_bk_run(&qps[blockIdx.x], &args[blockIdx.x]);
}
