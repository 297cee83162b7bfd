/* SPDX-License-Identifier: MIT */
/*
 * stats.h - nkv-target extras around ctrl.h: per-queue counters and the
 * optional trace (the poll loop is poller.h).
 *
 * Threading: like every nkv_tgt_ctrl_* call, these run on the
 * controller's poll thread (counters are plain fields it writes).
 */
#ifndef NKV_TGT_STATS_H
#define NKV_TGT_STATS_H

#include <stdint.h>

struct nkv_tgt_ctrl;

#define NKV_TGT_STAT_ERRS 8	/* distinct error statuses kept per queue */

/* Counters of one queue pair (index = SQ id; CQ doorbells under its id). */
struct nkv_tgt_qstats {
	uint64_t commands;	/* completions posted for this SQ */
	uint64_t bytes;		/* payload moved by successful commands */
	uint64_t sq_doorbells;	/* tail doorbell changes seen */
	uint64_t cq_doorbells;	/* head doorbell changes seen */
	uint64_t bad_doorbells;	/* out-of-range doorbell values ignored */
	uint64_t errors;	/* completions with a non-zero status */
	struct {
		uint16_t status;	/* NKV_STATUS(sct, sc) */
		uint64_t count;
	} err[NKV_TGT_STAT_ERRS];	/* first distinct statuses; rest only in errors */
};

/* Copy queue qid's counters. 0, or -EINVAL for qid > max_ioq. */
int nkv_tgt_ctrl_stats(const struct nkv_tgt_ctrl *c, uint16_t qid,
		       struct nkv_tgt_qstats *out);

/* Trace sink: one line per SQE fetched, doorbell seen, CQE posted,
 * register write. NULL fn with on = 1 writes to stderr; on = 0 turns it
 * off (the cost is then one predictable branch per event). */
typedef void (*nkv_tgt_trace_fn)(void *arg, const char *line);
void nkv_tgt_ctrl_set_trace(struct nkv_tgt_ctrl *c, int on,
			    nkv_tgt_trace_fn fn, void *arg);

#endif /* NKV_TGT_STATS_H */
