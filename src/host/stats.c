/* SPDX-License-Identifier: MIT */
/*
 * stats.c - per-queue counters.
 *
 * The synchronous API counts its commands, bytes and statuses exactly.
 * Doorbells: with a forwarder every write that reaches the controller
 * passes through nkv_h_stats_doorbell (device code's and the sync API's
 * alike), which also turns SQ tail / CQ head advances into submitted and
 * completed entries; with mapped doorbells device code stores straight
 * to the controller, so only the sync API's own doorbells are counted.
 * All counters are relaxed atomics: the forwarder thread adds to them.
 */
#include <errno.h>
#include <string.h>

#include "host/host.h"

#define NKV_H_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define NKV_H_GET(p) __atomic_load_n((p), __ATOMIC_RELAXED)

void nkv_h_stats_result(struct nkv_h_qstats *s, uint16_t status, uint64_t bytes)
{
	NKV_H_ADD(&s->commands, 1);
	NKV_H_ADD(&s->bytes, bytes);
	if (!status)
		return;
	NKV_H_ADD(&s->errors, 1);
	if (nkv_status_sct(status) == NKV_SCT_GENERIC && nkv_status_sc(status) >= 0x80 &&
	    nkv_status_sc(status) <= 0x8f)
		NKV_H_ADD(&s->by_status[nkv_status_sc(status) - 0x80], 1);
	else
		NKV_H_ADD(&s->other_status, 1);
}

/* A doorbell write of queue index idx (2 qid: SQ tail, 2 qid + 1: CQ
 * head) reached the controller: count it and the entries it moved. */
void nkv_h_stats_doorbell(struct nkv_ctrl *c, uint32_t idx, uint32_t val)
{
	uint32_t qid = idx / 2u, depth, *last;
	struct nkv_h_qstats *s;

	if (qid == 0 || qid > c->granted)
		return;
	s = &c->qst[qid];
	if (idx & 1u) {
		NKV_H_ADD(&s->cq_doorbells, 1);
		depth = NKV_H_GET(&s->depth_cq);
		last = &s->last_cq;
	} else {
		NKV_H_ADD(&s->sq_doorbells, 1);
		depth = NKV_H_GET(&s->depth_sq);
		last = &s->last_sq;
	}
	if (!depth || val >= depth)
		return;
	NKV_H_ADD(idx & 1u ? &s->dev_completions : &s->dev_commands,
		  (uint64_t)((val + depth - NKV_H_GET(last)) % depth));
	__atomic_store_n(last, val, __ATOMIC_RELAXED);
}

/* What device code counted in the descriptor (the device copy for a
 * queue pair of device code: no kernel may run on it meanwhile). */
static int nkv_h_dev_counters(struct nkv_qpair *q, struct nkv_qpair_stats *st)
{
	struct nkv_dev_qp d;
	int rc = 0;

	if (q->on_device)
		rc = nkv_h_qp_gpu_read(q, &d);
	else
		memcpy(&d, q->dev, sizeof(d));
	if (rc)
		return rc;
	st->dev_commands = d.commands;
	st->dev_sq_doorbells = d.sq_doorbells;
	st->dev_cq_doorbells = d.cq_doorbells;
	return 0;
}

int nkv_qpair_get_stats(struct nkv_qpair *q, struct nkv_qpair_stats *st)
{
	struct nkv_h_qstats *s;
	unsigned i;

	if (!q || !st)
		return -EINVAL;
	/* Forwarder mode: what device code wrote so far reaches the
	 * controller (and the counters) first. */
	nkv_h_db_flush(q->c);
	s = &q->c->qst[q->qid];
	memset(st, 0, sizeof(*st));
	st->commands = NKV_H_GET(&s->commands);
	st->bytes = NKV_H_GET(&s->bytes);
	st->sq_doorbells = NKV_H_GET(&s->sq_doorbells);
	st->cq_doorbells = NKV_H_GET(&s->cq_doorbells);
	st->errors = NKV_H_GET(&s->errors);
	st->timeouts = NKV_H_GET(&s->timeouts);
	for (i = 0; i < 16; i++)
		st->by_status[i] = NKV_H_GET(&s->by_status[i]);
	st->other_status = NKV_H_GET(&s->other_status);
	st->fwd_submitted = NKV_H_GET(&s->dev_commands);
	st->fwd_completed = NKV_H_GET(&s->dev_completions);
	return nkv_h_dev_counters(q, st);
}
