/* SPDX-License-Identifier: MIT */
/* wave_kernels_hip.cpp - __global__ wrappers of wave_kernels.h and
 * block_kernels.h for hipcc. */
#include "device/block_kernels.h"
#include "device/wave_kernels.h"

/* One wavefront per block; block b owns qps[b]. */
__global__ void nkv_wk_kv_batch_kernel(struct nkv_dev_qp *qps, const struct nkv_wk_args *args)
{
	/* One wave owns a queue pair: a block launched wider than one wavefront
	 * must not put a second one on it (a batch wider than the wave is
	 * refused by the first, NKV_QP_FAILED_ARGS). */
	if (threadIdx.x / warpSize != 0 || threadIdx.y || threadIdx.z)
		return;
	nkv_wk_kv_batch(&qps[blockIdx.x], &args[blockIdx.x]);
}

/* One whole block per queue pair (up to 1024 threads: one doorbell for
 * up to min(threads, depth - 1) commands); block b owns qps[b]. */
__global__ void __launch_bounds__(1024)
nkv_wk_kv_block_kernel(struct nkv_dev_qp *qps, const struct nkv_wk_args *args)
{
	nkv_wk_kv_block(&qps[blockIdx.x], &args[blockIdx.x]);
}
