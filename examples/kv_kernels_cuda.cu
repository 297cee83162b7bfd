/* SPDX-License-Identifier: MIT */
/*
 * kv_kernels_cuda.cu - the examples' kernel bodies through nvcc (compile
 * proof: the same kv_kernels.h the HIP and cpu-engine examples use; a
 * warp of 32 lanes is the batch on NVIDIA).
 */
#include "kv_kernels.h"

__global__ void ex_batch_kernel(struct nkv_dev_qp *qp, const struct ex_args *a, int store)
{
	ex_batch(qp, a, store);
}

__global__ void ex_multi_kernel(struct nkv_dev_qp *const *qps, const struct ex_args *args,
				int store)
{
	ex_batch(qps[blockIdx.x], &args[blockIdx.x], store);
}

__global__ void ex_lookup_kernel(struct nkv_dev_qp *qp, const struct ex_args *a)
{
	ex_cache_lookup(qp, a);
}
