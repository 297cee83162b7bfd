// SPDX-License-Identifier: MIT
/*
 * prefix_cache_gpu.cu - the prefix_cache example on a GPU: one wave of
 * one block runs prefix_kernels.h's body for each step; its queue pair's
 * value slots (memory mode 0: host RAM registered with the GPU) are the
 * page pool. The host side is pc_host.h, shared with prefix_cache_cpu.c.
 * One source for nvcc and hipcc.
 */
#include "ex_gpu.h"
#include "pc_host.h"

static int pc_wave;

__global__ void pc_kernel(struct nkv_dev_qp *qp, const struct pc_args *a)
{
	pc_run(qp, a);
}

static int pc_gpu_run(struct nkv_dev_qp *qp, const struct pc_args *a)
{
	struct pc_args *d = NULL;

	EX_GPU(ex_gpu_put(&d, a, sizeof(*a)));
	pc_kernel<<<1, pc_wave>>>(qp, d);
	EX_GPU(EX_RT(DeviceSynchronize)());
	EX_GPU(EX_RT(Free)(d));
	return 0;
}

static int pc_gpu_qpair(struct nkv_ctrl *c, const struct nkv_qpair_opts *o, struct nkv_qpair **q,
			struct nkv_dev_qp **dev)
{
	return nkv_qpair_create_dev(c, o, q, dev);
}

static void *pc_gpu_alloc(size_t len)
{
	void *p = NULL;

	if (EX_RT(Malloc)(&p, len) != EX_RT(Success))
		return NULL;
	return EX_RT(Memset)(p, 0, len) == EX_RT(Success) ? p : NULL;
}

static void pc_gpu_release(void *p)
{
	if (p)
		(void)EX_RT(Free)(p);
}

static int pc_gpu_put(void *dst, const void *src, size_t len)
{
	return EX_RT(Memcpy)(dst, src, len, EX_RT(MemcpyHostToDevice)) != EX_RT(Success);
}

static int pc_gpu_get(void *dst, const void *src, size_t len)
{
	return EX_RT(Memcpy)(dst, src, len, EX_RT(MemcpyDeviceToHost)) != EX_RT(Success);
}

int main(int argc, char **argv)
{
	struct pc_ops ops = { pc_gpu_qpair, pc_gpu_alloc, pc_gpu_release, pc_gpu_put, pc_gpu_get,
			      pc_gpu_run, 0 };

	if (ex_gpu_wave(&pc_wave))
		return EX_EXIT_SETUP;
	ops.wave = (uint32_t)pc_wave;
	return pc_main(argc, argv, &ops);
}
