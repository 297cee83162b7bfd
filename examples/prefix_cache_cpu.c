/* SPDX-License-Identifier: MIT */
/*
 * prefix_cache_cpu.c - a KV-cache tier for an LLM serving engine, on the
 * cpu engine: one 64-lane wave plays the GPU (prefix_kernels.h), the page
 * pool is the queue pair's value slots in the device arena (emulated VRAM
 * without a GPU). Request 1 stores every block; request 2 shares 75 % of
 * it, looks its prefix up, loads the hits layer by layer beside a
 * stand-in compute, computes and stores the rest, and checks every page.
 * Run it twice: the second process finds every block. GPU version:
 * prefix_cache_gpu.cu.
 *
 *   prefix_cache_cpu [--ci] vfio-user:/tmp/nkv.sock
 */
#include "nkv_cpu.h"
#include "pc_host.h"

#define PC_WAVE 64u

struct pc_launch {
	struct nkv_dev_qp *qp;
	const struct pc_args *a;
};

static void pc_lane(void *arg)
{
	struct pc_launch *l = (struct pc_launch *)arg;

	pc_run(l->qp, l->a);
}

static int pc_cpu_run(struct nkv_dev_qp *qp, const struct pc_args *a)
{
	struct nkv_cpu_cfg cfg = { .size = sizeof(cfg), .mode = NKV_CPU_FIBERS, .waves = 1,
				   .wave_size = PC_WAVE };
	struct pc_launch l = { qp, a };

	return nkv_cpu_launch(&cfg, pc_lane, &l);
}

/* Values in the device arena (NKV_MEM_DATA); the lanes use the host
 * pointer nkv_qpair_dev() gives. */
static int pc_cpu_qpair(struct nkv_ctrl *c, const struct nkv_qpair_opts *o, struct nkv_qpair **q,
			struct nkv_dev_qp **dev)
{
	struct nkv_qpair_opts r = *o;
	int rc;

	r.memory_mode = NKV_MEM_DATA;
	rc = nkv_qpair_create(c, &r, q);
	if (!rc)
		*dev = nkv_qpair_dev(*q);
	return rc;
}

static void *pc_cpu_alloc(size_t len)
{
	return calloc(1, len);
}

static int pc_cpu_copy(void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
	return 0;
}

int main(int argc, char **argv)
{
	const struct pc_ops ops = { pc_cpu_qpair, pc_cpu_alloc, free, pc_cpu_copy, pc_cpu_copy,
				    pc_cpu_run, PC_WAVE };

	return pc_main(argc, argv, &ops);
}
