// SPDX-License-Identifier: MIT
/*
 * ex_gpu.h - what the GPU examples share on the host: the runtime of the
 * compiler at hand (HIP under hipcc, CUDA under nvcc: one example source
 * for both GPUs), a check for its calls, the helpers of ex_host.h and a
 * queue pair for a kernel. Copy what you need.
 *
 * A GPU example connects with the default options (ex_connect() sets
 * only the number of queue pairs) and makes its queue pairs with
 * nkv_qpair_create_dev(), memory mode 0 in the queue pair's options:
 * rings and values in host RAM registered with the GPU, what a GPU
 * honours today (docs/gpu.md). The descriptor that call gives is a
 * device pointer: the host passes it to kernels and never reads it.
 */
#ifndef NKV_EXAMPLES_EX_GPU_H
#define NKV_EXAMPLES_EX_GPU_H

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#define EX_RT(name) hip##name
#define EX_RT_PROP hipDeviceProp_t
#else
#include <cuda_runtime.h>
#define EX_RT(name) cuda##name
#define EX_RT_PROP cudaDeviceProp
#endif

#include "ex_host.h"

/* A failed runtime call ends main() with its message: a setup failure. */
#define EX_GPU(call)                                                            \
	do {                                                                    \
		EX_RT(Error_t) e_ = (call);                                     \
		if (e_ != EX_RT(Success)) {                                     \
			fprintf(stderr, "%s: %s\n", #call, EX_RT(GetErrorString)(e_)); \
			return EX_EXIT_SETUP;                                   \
		}                                                               \
	} while (0)

/* A fresh device copy of len bytes at h, in *d (the caller frees it). */
static inline EX_RT(Error_t) ex_gpu_put(void *d, const void *h, size_t len)
{
	void **dp = (void **)d;
	EX_RT(Error_t) e = EX_RT(Malloc)(dp, len);

	if (e == EX_RT(Success))
		e = EX_RT(Memcpy)(*dp, h, len, EX_RT(MemcpyHostToDevice));
	return e;
}

/* Lanes per wave of GPU 0: the batch (32 on NVIDIA and RDNA, 64 on CDNA);
 * -1, said, without a GPU. */
static inline int ex_gpu_wave(int *wave)
{
	EX_RT_PROP p;
	EX_RT(Error_t) e = EX_RT(GetDeviceProperties)(&p, 0);

	if (e != EX_RT(Success)) {
		fprintf(stderr, "no GPU 0: %s\n", EX_RT(GetErrorString)(e));
		return -1;
	}
	*wave = p.warpSize;
	return 0;
}

/* A queue pair for a kernel with @slots value buffers, its descriptor in
 * *dev; memory mode 0: rings and values in host RAM registered with the
 * GPU (its descriptor and tables are in GPU memory whatever the mode). */
static inline struct nkv_qpair *ex_qpair_dev(struct nkv_ctrl *c, uint32_t slots,
					     struct nkv_dev_qp **dev)
{
	struct nkv_qpair_opts o = ex_qpair_opts(slots, 0);
	struct nkv_qpair *q = NULL;
	int rc = nkv_qpair_create_dev(c, &o, &q, dev);

	if (rc)
		fprintf(stderr, "cannot create a queue pair for the GPU: %s\n", strerror(-rc));
	return q;
}

#endif /* NKV_EXAMPLES_EX_GPU_H */
