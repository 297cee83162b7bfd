/* SPDX-License-Identifier: MIT */
/*
 * metrics.h - what the controller core counts for the metrics endpoint
 * (src/target/metrics/, docs/metrics.md): per namespace, commands by
 * opcode, errors by opcode and status, bytes each way, and two latency
 * histograms (the backend's part, the whole command).
 *
 * Off (the default) the hot path pays one predictable branch per
 * command and reads no clock. On (nkv_tgt_metrics_enable, once, before
 * any controller runs) it reads the clock (the TSC where the kernel
 * keeps time by it, else CLOCK_MONOTONIC: metrics.c) twice per I/O
 * command (submit, the backend's done) and once per burst fetched and per list
 * of completions (their commands share the stamp, so a command's
 * latency runs from the pass that fetched it to the pass that completed
 * it), and adds to counters of the thread's own (metrics_thread.c: no
 * lock prefix, no line shared between poll threads) that a scrape sums:
 * counters, not a synchronisation, so a scrape may see one command's
 * count before its histogram sample.
 */
#ifndef NKV_TGT_METRICS_H
#define NKV_TGT_METRICS_H

#include <stdint.h>

#include "target/core/ctrl.h"

/* The opcodes counted apart; NKV_TGT_MOP_OTHER takes the rest. */
enum nkv_tgt_mop {
	NKV_TGT_MOP_STORE, NKV_TGT_MOP_RETRIEVE, NKV_TGT_MOP_LIST, NKV_TGT_MOP_DELETE,
	NKV_TGT_MOP_EXIST, NKV_TGT_MOP_READ, NKV_TGT_MOP_WRITE, NKV_TGT_MOP_FLUSH,
	NKV_TGT_MOP_OTHER, NKV_TGT_MOP_N
};

/* Histogram buckets: upper bounds 1 us << i for i < NKV_TGT_HIST_FINITE
 * (1 us .. ~1.05 s), then +Inf. Powers of two: the bucket is a count of
 * leading zeros, no search. */
#define NKV_TGT_HIST_FINITE 21
#define NKV_TGT_HIST_N (NKV_TGT_HIST_FINITE + 1)
#define NKV_TGT_MET_ERRS 8	/* distinct error statuses kept per opcode */

struct nkv_tgt_hist {
	uint64_t bucket[NKV_TGT_HIST_N];	/* not cumulative */
	uint64_t sum_ns;
};

/* One namespace's counters (index = nsid). */
struct nkv_tgt_ns_metrics {
	uint64_t cmds[NKV_TGT_MOP_N];
	uint64_t errors[NKV_TGT_MOP_N];
	struct {
		uint32_t status;	/* NKV_STATUS(sct, sc); 0: slot free */
		uint64_t count;
	} err[NKV_TGT_MOP_N][NKV_TGT_MET_ERRS];	/* the rest only in errors */
	uint64_t bytes_in;	/* host to target: Store, Write data */
	uint64_t bytes_out;	/* target to host: Retrieve, List, Read data */
	struct nkv_tgt_hist cmd_lat[NKV_TGT_MOP_N];	/* fetch to completion */
	struct nkv_tgt_hist be_lat[NKV_TGT_MOP_N];	/* submit to the backend's done() */
};

extern int nkv_tgt_metrics_on;

/* Start counting (any thread, before controllers run; never turned off). */
void nkv_tgt_metrics_enable(void);
/* Copy namespace nsid's counters (1..NKV_TGT_MAX_NS): 0, or -EINVAL. */
int nkv_tgt_metrics_ns(uint32_t nsid, struct nkv_tgt_ns_metrics *out);
/* The name of op ("store", ...), and whether it is a KV opcode's. */
const char *nkv_tgt_mop_name(enum nkv_tgt_mop op);
/* The upper bound of bucket i in seconds (i < NKV_TGT_HIST_FINITE). */
double nkv_tgt_hist_le(unsigned i);
/* CLOCK_MONOTONIC in ns, 0 while metrics are off (the hot path's stamp). */
uint64_t nkv_tgt_metrics_stamp(void);

/* The core's hooks (off: each returns at its first branch). A command
 * completed (stats.c: counted, its whole latency), and a backend done
 * with one (handoff.c: the backend's latency; any thread). */
struct nkv_tgt_cmd;
void nkv_tgt_metrics_cmd_on(struct nkv_tgt_ctrl *c, const struct nkv_tgt_cmd *cmd);
void nkv_tgt_metrics_be_on(struct nkv_tgt_ctrl *c, const struct nkv_tgt_cmd *cmd);
void nkv_tgt_metrics_batch_on(int begin);

/* Inline, so that off costs a load and a branch, not a call. */
static inline int nkv_tgt_metrics_enabled(void)
{
	return __builtin_expect(__atomic_load_n(&nkv_tgt_metrics_on, __ATOMIC_RELAXED), 0);
}

static inline void nkv_tgt_metrics_cmd(struct nkv_tgt_ctrl *c, const struct nkv_tgt_cmd *cmd)
{
	if (nkv_tgt_metrics_enabled())
		nkv_tgt_metrics_cmd_on(c, cmd);
}

static inline void nkv_tgt_metrics_be(struct nkv_tgt_ctrl *c, const struct nkv_tgt_cmd *cmd)
{
	if (nkv_tgt_metrics_enabled())
		nkv_tgt_metrics_be_on(c, cmd);
}

/* Completions between begin (1) and end (0) on this thread take one
 * clock read, made at begin, as their completion time. */
static inline void nkv_tgt_metrics_batch(int begin)
{
	if (nkv_tgt_metrics_enabled())
		nkv_tgt_metrics_batch_on(begin);
}

#endif /* NKV_TGT_METRICS_H */
