/* SPDX-License-Identifier: MIT */
/*
 * stats.h - nkv-target extras around ctrl.h: per-queue counters, the
 * optional trace, and the poll-loop helper a transport drives a
 * controller with.
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

/*
 * Poll loop helper. Busy-polls while there is work; after idle_spins
 * empty passes it sleeps, doubling from 1 us up to interval_us, so an
 * idle controller costs next to no CPU and a busy one no latency.
 * interval_us = 0 never sleeps (pure busy poll).
 */
struct nkv_tgt_poller {
	uint32_t interval_us;	/* longest sleep (init argument); 0 = never */
	uint32_t idle_spins;	/* empty passes before sleeping; init: 256 */
	uint32_t idle;		/* empty passes so far */
	uint32_t sleep_us;	/* current back-off */
};

void nkv_tgt_poller_init(struct nkv_tgt_poller *p, uint32_t interval_us);
/* One nkv_tgt_ctrl_poll() pass; returns how long the caller should sleep
 * (microseconds, 0 = poll again at once). A transport that also waits on
 * sockets uses this as its poll()/epoll timeout. */
uint32_t nkv_tgt_poller_step(struct nkv_tgt_poller *p, struct nkv_tgt_ctrl *c);
/* Loop step + sleep until *stop becomes non-zero (read with acquire). */
void nkv_tgt_poller_run(struct nkv_tgt_poller *p, struct nkv_tgt_ctrl *c,
			const int *stop);

#endif /* NKV_TGT_STATS_H */
