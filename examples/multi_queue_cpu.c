/* SPDX-License-Identifier: MIT */
/*
 * multi_queue_cpu.c - example 2 on the cpu engine: 4 waves of 16 lanes,
 * each wave owning its own queue pair (never share one between waves:
 * its ring state has no atomics), each storing then retrieving its own
 * 128 keys with two batches in flight at once (kv_kernels.h's
 * ex_batch2(): nkv_wave_submit() twice, then nkv_wave_wait() for the
 * second batch before the first). On a GPU this is one workgroup (of
 * one wave) per queue pair: multi_queue_gpu.cu.
 *
 *   multi_queue_cpu vfio-user:/tmp/nkv.sock
 */
#include "nkv_cpu.h"
#include "ex_host.h"

#define EX_WAVES 4u
#define EX_WAVE 16u
#define EX_KEYS_PER_WAVE 128u

struct ex_launch {
	struct nkv_dev_qp *qp[EX_WAVES];
	struct ex_args args[EX_WAVES];
	int store;
};

/* Wave w takes queue pair w and its own keys: nothing is shared. */
static void ex_lane(void *arg)
{
	struct ex_launch *l = arg;
	uint32_t w = nkv_cpu_wave_id();

	ex_batch2(l->qp[w], &l->args[w], l->store);
}

/* SQ doorbells and commands device code counted on every queue pair. */
static int ex_count(struct nkv_qpair *const *q, uint64_t *doorbells, uint64_t *commands)
{
	struct nkv_qpair_stats st;
	uint32_t w;

	*doorbells = *commands = 0;
	for (w = 0; w < EX_WAVES && q[w]; w++) {
		if (nkv_qpair_get_stats(q[w], &st))
			return -1;
		*doorbells += st.dev_sq_doorbells;
		*commands += st.dev_commands;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct nkv_cpu_cfg cfg = { .size = sizeof(cfg), .mode = NKV_CPU_FIBERS,
				   .waves = EX_WAVES, .wave_size = EX_WAVE };
	const char *uri;
	const uint32_t n = EX_WAVES * EX_KEYS_PER_WAVE;
	struct ex_out *out = calloc(n, sizeof(*out));
	struct ex_key *keys = ex_keys("ex2-key", 0, n);
	struct nkv_qpair *q[EX_WAVES] = { NULL };
	struct ex_launch l = { 0 };
	uint64_t doorbells = 0, commands = 0;
	struct nkv_ctrl *c;
	uint32_t w;
	int rc = EX_EXIT_OK;

	ex_log_stderr();
	uri = ex_uri(argc, argv, "multi_queue_cpu");
	if (!uri)
		return EX_EXIT_USAGE;
	if (!out || !keys || !(c = ex_connect(uri, EX_WAVES)))
		return EX_EXIT_SETUP;
	for (w = 0; w < EX_WAVES && !rc; w++) {
		q[w] = ex_qpair(c, 2 * EX_WAVE);	/* a slot per lane and batch in flight */
		if (!q[w]) {
			rc = EX_EXIT_SETUP;
			break;
		}
		l.qp[w] = nkv_qpair_dev(q[w]);
		/* The pattern depends on the key's index within its wave. */
		l.args[w] = ex_args_of(keys + w * EX_KEYS_PER_WAVE, out + w * EX_KEYS_PER_WAVE,
				       EX_KEYS_PER_WAVE, 0x5eed + w);
	}
	l.store = 1;
	rc = rc ? rc : nkv_cpu_launch(&cfg, ex_lane, &l) ? EX_EXIT_SETUP
				: ex_check("store", out, n, NULL);
	l.store = 0;
	memset(out, 0, n * sizeof(*out));
	rc = rc ? rc : nkv_cpu_launch(&cfg, ex_lane, &l) ? EX_EXIT_SETUP
				: ex_check("retrieve", out, n, NULL);
	/* Counted after a failed step too: what was sent before it. */
	if (ex_count(q, &doorbells, &commands)) {
		fprintf(stderr, "cannot read the %u queue pairs' counters\n", EX_WAVES);
		rc = ex_worse(rc, EX_EXIT_SETUP);
	}
	printf("%u waves x %u lanes, one queue pair each, two batches in flight: stored and "
	       "retrieved %u values: %s; %llu SQ doorbells for %llu commands\n", EX_WAVES,
	       EX_WAVE, n, rc ? "FAILED" : "all bytes match", (unsigned long long)doorbells,
	       (unsigned long long)commands);
	/* One doorbell per batch: each submit rings once. */
	if (!rc && (commands != 2 * n || doorbells != 2 * n / EX_WAVE)) {
		fprintf(stderr, "%llu SQ doorbells for %llu commands: want %u for %u (one per "
			"batch of %u)\n", (unsigned long long)doorbells,
			(unsigned long long)commands, 2 * n / EX_WAVE, 2 * n, EX_WAVE);
		rc = EX_EXIT_FAIL;
	}
	for (w = 0; w < EX_WAVES; w++)
		nkv_qpair_destroy(q[w]);
	nkv_ctrl_close(c);
	free(out);
	free(keys);
	return rc;
}
