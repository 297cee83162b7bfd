/* SPDX-License-Identifier: MIT */
/*
 * batch_store_retrieve_cpu.c - example 1 on the cpu engine: one wave of
 * 32 lanes stores 256 values (one SQE per lane, one SQ doorbell per
 * batch of 32), then retrieves them and checks every byte. The kernel
 * body is kv_kernels.h's ex_batch(), the same one
 * batch_store_retrieve_gpu.cu launches on a GPU. The doorbells are
 * counted by device code in the descriptor; the host reads them with
 * nkv_qpair_get_stats().
 *
 *   batch_store_retrieve_cpu vfio-user:/tmp/nkv.sock
 */
#include "nkv_cpu.h"
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
	const char *uri;
	struct ex_out *out = calloc(EX_KEYS, sizeof(*out));
	struct ex_key *keys = ex_keys("ex1-key", 0, EX_KEYS);
	struct nkv_qpair_stats st = { 0 }, st1 = { 0 };
	struct ex_launch l = { 0 };
	struct nkv_qpair *q;
	struct nkv_ctrl *c;
	int rc = EX_EXIT_SETUP;

	ex_log_stderr();
	uri = ex_uri(argc, argv, "batch_store_retrieve_cpu");
	if (!uri)
		return EX_EXIT_USAGE;
	if (!out || !keys || !(c = ex_connect(uri, 1)))
		return EX_EXIT_SETUP;
	q = ex_qpair(c, EX_WAVE);	/* one value slot per lane */
	if (q) {
		l.qp = nkv_qpair_dev(q);	/* the descriptor the cpu engine's lanes use */
		l.args = ex_args_of(keys, out, EX_KEYS, 0x5eed);
		l.store = 1;
		rc = nkv_cpu_launch(&cfg, ex_lane, &l) ? EX_EXIT_SETUP
						       : ex_check("store", out, EX_KEYS, NULL);
		/* The counts after each step, also when it failed (or was not
		 * run): the line below subtracts them. */
		rc = nkv_qpair_get_stats(q, &st1) ? EX_EXIT_SETUP : rc;
		l.store = 0;
		memset(out, 0, EX_KEYS * sizeof(*out));
		rc = rc ? rc : nkv_cpu_launch(&cfg, ex_lane, &l) ? EX_EXIT_SETUP
								 : ex_check("retrieve", out, EX_KEYS, NULL);
		rc = nkv_qpair_get_stats(q, &st) ? EX_EXIT_SETUP : rc;
		printf("stored and retrieved %u values of 4096 B in batches of %u lanes: %s; "
		       "SQ doorbells: %llu for %llu stores, %llu for %llu retrieves\n", EX_KEYS,
		       EX_WAVE, rc ? "FAILED" : "all bytes match",
		       (unsigned long long)st1.dev_sq_doorbells, (unsigned long long)st1.dev_commands,
		       (unsigned long long)(st.dev_sq_doorbells - st1.dev_sq_doorbells),
		       (unsigned long long)(st.dev_commands - st1.dev_commands));
		/* One doorbell per batch of EX_WAVE commands, each way. */
		if (!rc && (st1.dev_commands != EX_KEYS || st.dev_commands != 2 * EX_KEYS ||
			    st1.dev_sq_doorbells != EX_KEYS / EX_WAVE ||
			    st.dev_sq_doorbells != 2 * st1.dev_sq_doorbells))
			rc = EX_EXIT_FAIL;
		nkv_qpair_destroy(q);
	}
	nkv_ctrl_close(c);
	free(out);
	free(keys);
	return rc;
}
