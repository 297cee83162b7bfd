/* SPDX-License-Identifier: MIT */
/* wave_kernels_cuda.cu - __global__ wrappers of wave_kernels.h for nvcc. */
#include "device/wave_kernels.h"

/* One warp per block; block b owns qps[b]. */
__global__ void nkv_wk_kv_batch_kernel(struct nkv_dev_qp *qps, const struct nkv_wk_args *args)
{
	/* One wave owns a queue pair: a block launched wider than one warp
	 * must not put a second one on it (a batch wider than the wave is
	 * refused by the first, NKV_QP_FAILED_ARGS). */
	if (threadIdx.x / warpSize != 0 || threadIdx.y || threadIdx.z)
		return;
	nkv_wk_kv_batch(&qps[blockIdx.x], &args[blockIdx.x]);
}
