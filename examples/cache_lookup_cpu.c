/* SPDX-License-Identifier: MIT */
/*
 * cache_lookup_cpu.c - example 3 on the cpu engine: the store as a cache.
 * 128 keys are stored, then the odd ones deleted again with the
 * synchronous API (fine between launches, on this host queue pair); then
 * a 32-lane wave looks every key up: Exist for the whole batch, Retrieve
 * only for the hits, the misses (87h, a normal answer) computed instead.
 * Every value must come out right either way. GPU version:
 * cache_lookup_gpu.cu.
 *
 *   cache_lookup_cpu vfio-user:/tmp/nkv.sock
 */
#include "nkv_cpu.h"
#include "ex_host.h"

#define EX_WAVE 32u
#define EX_KEYS 128u

struct ex_launch {
	struct nkv_dev_qp *qp;
	struct ex_args args;
	int mode;	/* 0: store (warm the cache), 1: look up */
};

static void ex_lane(void *arg)
{
	struct ex_launch *l = arg;

	if (l->mode == 0)
		ex_batch(l->qp, &l->args, 1);
	else
		ex_cache_lookup(l->qp, &l->args);
}

int main(int argc, char **argv)
{
	struct nkv_cpu_cfg cfg = { .size = sizeof(cfg), .mode = NKV_CPU_FIBERS,
				   .waves = 1, .wave_size = EX_WAVE };
	const char *uri;
	struct ex_out *out = calloc(EX_KEYS, sizeof(*out));
	struct ex_key *keys = ex_keys("ex3-key", 0, EX_KEYS);
	struct ex_launch l = { 0 };
	struct nkv_qpair *q;
	struct nkv_ctrl *c;
	uint32_t i, hits = 0, misses = 0, wrong = 0;
	int rc = EX_EXIT_SETUP;

	ex_log_stderr();
	uri = ex_uri(argc, argv, "cache_lookup_cpu");
	if (!uri)
		return EX_EXIT_USAGE;
	if (!out || !keys || !(c = ex_connect(uri, 1)))
		return EX_EXIT_SETUP;
	q = ex_qpair(c, EX_WAVE);
	if (q) {
		/* Warm the cache: store every key's value. */
		l.qp = nkv_qpair_dev(q);
		l.args = ex_args_of(keys, out, EX_KEYS, 0xcac4e);
		rc = nkv_cpu_launch(&cfg, ex_lane, &l) ? EX_EXIT_SETUP
						       : ex_check("store", out, EX_KEYS, NULL);
		/* Drop the odd keys again: now half the lookups miss. */
		for (i = 1; !rc && i < EX_KEYS; i += 2) {
			struct nkv_result r;

			rc = nkv_delete(q, keys[i].bytes, keys[i].len, &r) ? EX_EXIT_SETUP
					 : r.status ? EX_EXIT_FAIL : EX_EXIT_OK;
			if (rc)
				fprintf(stderr, "delete: key %u: %s\n", i, rc == EX_EXIT_FAIL ?
					nkv_status_str(r.status) : "the controller did not answer");
		}
		memset(out, 0, EX_KEYS * sizeof(*out));
		l.mode = 1;
		rc = rc ? rc : nkv_cpu_launch(&cfg, ex_lane, &l) ? EX_EXIT_SETUP
					  : ex_check("lookup", out, EX_KEYS, &misses);
		for (i = 0; i < EX_KEYS; i++) {
			hits += out[i].hit;
			wrong += out[i].hit != !(i & 1) || out[i].bad;
		}
		printf("cache lookup of %u keys: %u hits (retrieved), %u misses (87h, computed), "
		       "%u wrong: %s\n", EX_KEYS, hits, misses, wrong, rc || wrong ? "FAILED" : "ok");
		if (!rc && (wrong || hits != EX_KEYS / 2 || misses != EX_KEYS / 2))
			rc = EX_EXIT_FAIL;
		nkv_qpair_destroy(q);
	}
	nkv_ctrl_close(c);
	free(out);
	free(keys);
	return rc;
}
