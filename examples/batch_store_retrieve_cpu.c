/* SPDX-License-Identifier: MIT */
/*
 * batch_store_retrieve_cpu.c - example 1 on the cpu engine: one wave of
 * 32 lanes stores 256 values (one SQE per lane, one SQ doorbell per
 * batch of 32), then retrieves them and checks every byte. The kernel
 * body is kv_kernels.h's ex_batch(), the same one
 * batch_store_retrieve_gpu.cu launches on a GPU.
 *
 *   batch_store_retrieve_cpu vfio-user:/tmp/nkv.sock
 */
#include "ex_host.h"

#define EX_WAVE 32u
#define EX_KEYS 256u

struct ex_launch {
	struct nkv_dev_qp *qp;
	struct ex_args args;
	int store;
};

/* What every lane runs: the kernel body on our wave's queue pair. */
static void ex_lane(void *arg)
{
	struct ex_launch *l = arg;

	ex_batch(l->qp, &l->args, l->store);
}

int main(int argc, char **argv)
{
	struct nkv_cpu_cfg cfg = { .size = sizeof(cfg), .mode = NKV_CPU_FIBERS,
				   .waves = 1, .wave_size = EX_WAVE };
	const char *uri = ex_uri(argc, argv, "batch_store_retrieve_cpu");
	struct ex_out *out = calloc(EX_KEYS, sizeof(*out));
	struct ex_key *keys = ex_keys("ex1-key", 0, EX_KEYS);
	struct nkv_ctrl_info info;
	struct ex_launch l = { 0 };
	struct nkv_qpair *q;
	struct nkv_ctrl *c;
	uint64_t stores;
	int rc = 1;

	if (!uri || !out || !keys || !(c = ex_connect(uri, 1, &info)))
		return 1;
	q = ex_qpair(c, EX_WAVE);
	if (q) {
		l.qp = nkv_qpair_dev(q);	/* the descriptor a kernel receives */
		l.args = ex_args_of(keys, out, EX_KEYS, info.nsid, 0x5eed);
		ex_count_doorbells(0, q);
		l.store = 1;
		rc = nkv_cpu_launch(&cfg, ex_lane, &l) || ex_check("store", out, EX_KEYS, NULL);
		stores = ex_sq_writes;
		l.store = 0;
		memset(out, 0, EX_KEYS * sizeof(*out));
		rc = rc || nkv_cpu_launch(&cfg, ex_lane, &l) || ex_check("retrieve", out, EX_KEYS, NULL);
		printf("stored and retrieved %u values of 4096 B in batches of %u lanes: %s; "
		       "SQ doorbells: %llu for %u stores, %llu for %u retrieves\n", EX_KEYS, EX_WAVE,
		       rc ? "FAILED" : "all bytes match", (unsigned long long)stores, EX_KEYS,
		       (unsigned long long)(ex_sq_writes - stores), EX_KEYS);
		if (!rc && (stores != EX_KEYS / EX_WAVE || ex_sq_writes != 2 * stores))
			rc = 1;
		nkv_qpair_destroy(q);
	}
	nkv_cpu_set_mmio_hook(NULL, NULL);
	nkv_ctrl_close(c);
	free(out);
	free(keys);
	return rc ? 1 : 0;
}
