/* SPDX-License-Identifier: MIT */
/* wave_kernels_cuda.cu - __global__ wrappers of wave_kernels.h for nvcc. */
#include "device/wave_kernels.h"

/* One warp per block; block b owns qps[b]. */
__global__ void nkv_wk_kv_batch_kernel(struct nkv_dev_qp *qps, const struct nkv_wk_args *args)
{
	nkv_wk_kv_batch(&qps[blockIdx.x], &args[blockIdx.x]);
}
