/* SPDX-License-Identifier: MIT */
/*
 * batch.c - the host batch API: many commands on one host queue pair,
 * built by the nkv_mr.h builders into command-memory blocks 0..nr_cmds-1
 * (the synchronous API keeps the last block for itself), published into
 * consecutive SQ entries under one nkv_qp_reserve() grant and rung in
 * with one tail doorbell per grant, then reaped by phase and filed, by
 * CID, into each caller's struct nkv_batch_cmd. It is the leader's half
 * of nkv_wave_submit() with one thread playing every lane: the same
 * reserve, CID, publish (release fence per entry) and ring steps.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"
#include "nkv_mr.h"

/* The batch state of q, made on first use: -ENOMEM or 0. */
static int nkv_h_batch_init(struct nkv_qpair *q)
{
	uint32_t i, n = q->dev->nr_cmds;

	if (q->bat)
		return 0;
	q->bat = calloc(q->dev->cid_count, sizeof(*q->bat));
	q->bat_free = calloc(n ? n : 1, sizeof(*q->bat_free));
	q->bat_prep = calloc(n ? n : 1, sizeof(*q->bat_prep));
	if (!q->bat || !q->bat_free || !q->bat_prep) {
		nkv_h_batch_free(q);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		q->bat_free[i] = (uint16_t)(n - 1u - i);
	q->bat_nfree = n;
	q->bat_live = 0;
	return 0;
}

void nkv_h_batch_free(struct nkv_qpair *q)
{
	free(q->bat);
	free(q->bat_free);
	free(q->bat_prep);
	q->bat = NULL;
	q->bat_free = NULL;
	q->bat_prep = NULL;
}

static void nkv_h_batch_done(struct nkv_batch_cmd *b, int err)
{
	b->err = err;
	b->state = NKV_BATCH_DONE;
}

static void nkv_h_batch_uses(struct nkv_batch_cmd *b, int d)
{
	uint32_t i;

	if (b->opc != NKV_KV_STORE && b->opc != NKV_KV_RETRIEVE)
		return;
	if (!b->iov) {
		nkv_h_mr_use(b->mr, d);
		return;
	}
	for (i = 0; i < b->n_iov; i++)
		nkv_h_mr_use(b->iov[i].mr, d);
}

/* The bytes of @b's value or buffer (0 for Exist and Delete). */
static uint64_t nkv_h_batch_bytes(const struct nkv_batch_cmd *b)
{
	uint64_t t = 0;
	uint32_t i;

	if (b->opc != NKV_KV_STORE && b->opc != NKV_KV_RETRIEVE)
		return 0;
	if (!b->iov)
		return b->len;
	for (i = 0; i < b->n_iov; i++)
		t += b->iov[i].len;
	return t;
}

/* Every batch command in flight on q ends with @err (a failed queue
 * pair): its CID stays held and its block taken until nkv_qpair_reset. */
static void nkv_h_batch_fail_all(struct nkv_qpair *q, int err)
{
	uint32_t cid;

	for (cid = 0; q->bat && cid < q->dev->cid_count && q->bat_live; cid++) {
		if (!q->bat[cid])
			continue;
		nkv_h_batch_uses(q->bat[cid], -1);
		nkv_h_batch_done(q->bat[cid], err);
		q->bat[cid] = NULL;
		q->bat_live--;
	}
}

void nkv_h_batch_clear(struct nkv_qpair *q)
{
	uint32_t i, n = q->dev->nr_cmds;

	if (!q->bat)
		return;
	nkv_h_batch_fail_all(q, -EIO);
	for (i = 0; i < n; i++)
		q->bat_free[i] = (uint16_t)(n - 1u - i);
	q->bat_nfree = n;
}

/* Runs as the builders take them, the regions checked to be q's. */
static int nkv_h_batch_runs(struct nkv_qpair *q, const struct nkv_batch_cmd *b,
			    struct nkv_dev_iov *small, struct nkv_dev_iov **out, uint64_t *total)
{
	struct nkv_iov one = { b->mr, b->off, b->len };
	const struct nkv_iov *iov = b->iov ? b->iov : &one;
	uint32_t i, n = b->iov ? b->n_iov : 1;
	struct nkv_dev_iov *dv = small;

	if (!n || n > NKV_IOV_MAX) {
		nkv_h_log("batch: %u runs: %s", n,
			  nkv_run_why_str(n ? NKV_RUN_TOO_MANY : NKV_RUN_NO_REGION));
		return -EINVAL;
	}
	if (n > 1 && !(dv = calloc(n, sizeof(*dv))))
		return -ENOMEM;
	*total = 0;
	for (i = 0; i < n; i++) {
		const struct nkv_dev_mr *m = nkv_h_mr_host(iov[i].mr, q->c);

		if (!m) {
			nkv_h_log("batch: run %u: %s", i,
				  iov[i].mr ? "a region of another controller" : "no region");
			if (dv != small)
				free(dv);
			return -EINVAL;
		}
		dv[i] = nkv_dev_run(m, iov[i].off, iov[i].len);
		*total += iov[i].len;
	}
	*out = dv;
	return 0;
}

/* Build @b's entry through command-memory block @cmd: 0 or -errno
 * (logged where the reason is the caller's). */
static int nkv_h_batch_prep(struct nkv_qpair *q, struct nkv_batch_cmd *b, uint32_t cmd,
			    struct nkv_prep *p)
{
	struct nkv_dev_iov small[1], *dv = NULL;
	struct nkv_run_bad bad = { 0, 0 };
	int store = b->opc == NKV_KV_STORE;
	uint64_t total = 0;
	int rc = nkv_h_sync_key(q, b->key, b->klen, 1);

	if (rc)
		return rc;
	if (b->opc == NKV_KV_EXIST || b->opc == NKV_KV_DELETE) {
		*p = nkv_dev_nodata_cmd(q->dev, cmd, b->opc, b->key, b->klen);
		return p->err;
	}
	if (!store && b->opc != NKV_KV_RETRIEVE) {
		nkv_h_log("batch: opcode %#x is not Store, Retrieve, Exist or Delete", b->opc);
		return -EINVAL;
	}
	if (store && (b->opts & NKV_STORE_TOUCH))
		return -EINVAL;
	rc = store ? nkv_h_sync_opts(q, b->opts, b->ttl_s, 1) : 0;
	if (!rc)
		rc = nkv_h_batch_runs(q, b, small, &dv, &total);
	if (!rc)
		rc = nkv_h_value_fits(q->c, store ? "value" : "buffer", total);
	if (rc)
		goto out;
	*p = store ? nkv_dev_store_iov(q->dev, cmd, b->key, b->klen, b->opts, dv,
				       b->iov ? b->n_iov : 1, &bad)
		   : nkv_dev_retrieve_iov(q->dev, cmd, b->key, b->klen, dv,
					  b->iov ? b->n_iov : 1, &bad);
	if (p->err) {
		nkv_h_log("batch: %s: %s", store ? "Store" : "Retrieve",
			  nkv_run_why_str(bad.why ? bad.why : NKV_RUN_PAGE));
		rc = -EINVAL;
	} else if (store && b->ttl_s) {
		*p = nkv_prep_ttl(*p, b->ttl_s);
	}
out:
	if (dv && dv != small)
		free(dv);
	return rc;
}

/* Publish @k built entries (q->bat_prep, their commands in @who) in
 * grants of the queue's free entries, one SQ tail doorbell per grant.
 * 0, or the error that stopped it (the commands not in then carry it). */
static int nkv_h_batch_ring(struct nkv_qpair *q, struct nkv_batch_cmd **who, uint32_t k)
{
	struct nkv_dev_qp *d = q->dev;
	struct nkv_ctrl *c = q->c;
	uint32_t done = 0, j;

	while (done < k) {
		uint64_t g = nkv_qp_reserve(d, k - done);
		uint32_t chunk, tail;
		uint16_t cids[64];

		if (g & NKV_GRANT_ERR)
			return -(int)(uint32_t)g;
		chunk = (uint32_t)g;
		tail = (uint32_t)(g >> 32);
		for (j = 0; j < chunk; j += 64) {
			uint32_t m = chunk - j < 64 ? chunk - j : 64, x;

			/* The lowest free CIDs, as the lanes of a wave each
			 * find theirs, then marked taken in one pass. */
			for (x = 0; x < m; x++)
				cids[x] = (uint16_t)nkv_qp_cid_nth(d, x);
			nkv_qp_cids_take(d, m);
			for (x = 0; x < m; x++) {
				struct nkv_batch_cmd *b = who[done + j + x];

				b->cid = cids[x];
				b->state = NKV_BATCH_INFLIGHT;
				q->bat[cids[x]] = b;
				q->bat_live++;
				nkv_h_batch_uses(b, 1);
				nkv_lane_publish(d, q->bat_prep[done + j + x].sqe,
						 (tail + j + x) % d->sq_depth, cids[x]);
			}
		}
		nkv_qp_ring_chunk(d, 1, chunk, chunk);
		if (c->fwd) {
			if (nkv_h_db_flush(c)) {
				nkv_qp_fail(d, NKV_QP_FAILED_GONE);
				return -ENOTCONN;
			}
		} else {
			__atomic_fetch_add(&c->qst[q->qid].sq_doorbells, 1, __ATOMIC_RELAXED);
		}
		nkv_h_trace("qp %u: batch: %u commands, one doorbell", q->qid, chunk);
		done += chunk;
	}
	return 0;
}

/* File every parked completion of a batch command: how many. */
static uint32_t nkv_h_batch_take(struct nkv_qpair *q)
{
	struct nkv_dev_qp *d = q->dev;
	uint32_t cid, n = 0;

	for (cid = 0; cid < d->cid_count && q->bat_live; cid++) {
		struct nkv_batch_cmd *b = q->bat[cid];
		struct nkv_dev_result r;
		struct nkv_result res;
		uint64_t moved;

		if (!b || !__atomic_load_n(&q->cpl[cid].done, __ATOMIC_ACQUIRE))
			continue;
		r = nkv_qp_take(d, cid);
		nkv_arch_fetch_add_dev_u32(&d->cids_held, 0u - 1u);
		q->bat[cid] = NULL;
		q->bat_live--;
		q->bat_free[q->bat_nfree++] = b->cmd;
		nkv_h_batch_uses(b, -1);
		res.status = r.status & 0x7ff;
		res.dw0 = r.dw0;
		b->dw0 = r.dw0;
		moved = nkv_h_batch_bytes(b);
		moved = b->opc == NKV_KV_RETRIEVE && r.dw0 < moved ? r.dw0 : moved;
		nkv_h_sync_count(q, &res, res.status ? 0 : moved);
		nkv_h_batch_done(b, r.err ? r.err : res.status);
		n++;
	}
	return n;
}

/* Reap and file once: how many batch commands ended, or -errno when the
 * queue pair failed (every command in flight then ends with it). */
static int nkv_h_batch_poll(struct nkv_qpair *q)
{
	struct nkv_dev_qp *d = q->dev;
	int n = nkv_qp_reap(d, d->cq_depth);

	if (n > 0 && !q->c->fwd)
		__atomic_fetch_add(&q->c->qst[q->qid].cq_doorbells, 1, __ATOMIC_RELAXED);
	if (n < 0 || __atomic_load_n(q->fail_word, __ATOMIC_ACQUIRE) || nkv_dev_qp_failed(d)) {
		int err = nkv_h_sync_pre(q, &(struct nkv_result){ 0, 0 });

		err = err ? err : -EIO;
		nkv_h_batch_take(q);
		nkv_h_batch_fail_all(q, err);
		return err;
	}
	return (int)nkv_h_batch_take(q);
}

/* Wait until at least one batch command ends, within q's timeout. */
static int nkv_h_batch_progress(struct nkv_qpair *q)
{
	uint64_t t0 = nkv_h_now_ns(), limit = (uint64_t)q->timeout_ms * 1000000ull;

	for (;;) {
		int n = nkv_h_batch_poll(q);
		uint64_t waited;

		if (n)
			return n < 0 ? n : 0;
		if (!q->bat_live)
			return 0;
		waited = nkv_h_now_ns() - t0;
		if (waited > limit) {
			nkv_qp_fail(q->dev, NKV_QP_FAILED_TIMEOUT);
			__atomic_fetch_add(&q->c->qst[q->qid].timeouts, 1, __ATOMIC_RELAXED);
			nkv_h_trace("queue pair %u: batch: no completion in %u ms", q->qid,
				    q->timeout_ms);
			nkv_h_batch_fail_all(q, -ETIMEDOUT);
			return -ETIMEDOUT;
		}
		nkv_h_sync_pause(waited);
	}
}

static int nkv_h_batch_ready(struct nkv_qpair *q)
{
	int rc = nkv_h_sync_pre(q, &(struct nkv_result){ 0, 0 });

	return rc ? rc : nkv_h_batch_init(q);
}

int nkv_batch_submit(struct nkv_qpair *q, struct nkv_batch_cmd *cmds, uint32_t n)
{
	struct nkv_batch_cmd **who = NULL;
	uint32_t i = 0, sent = 0, k, j;
	int rc;

	if (!q || (n && !cmds))
		return -EINVAL;
	for (j = 0; j < n; j++) {
		cmds[j].err = 0;
		cmds[j].dw0 = 0;
		cmds[j].state = NKV_BATCH_IDLE;
		cmds[j].cid = NKV_CID_NONE;
	}
	rc = nkv_h_batch_ready(q);
	if (!rc && q->dev->nr_cmds == 0)
		rc = -EINVAL;
	if (!rc && !(who = calloc(q->dev->nr_cmds, sizeof(*who))))
		rc = -ENOMEM;
	while (!rc && i < n) {
		if (!q->bat_nfree) {
			rc = nkv_h_batch_progress(q);
			continue;
		}
		/* Build as many as the free blocks hold, then ring them in. */
		for (k = 0; i < n && k < q->bat_nfree; i++) {
			struct nkv_batch_cmd *b = &cmds[i];
			uint16_t blk = q->bat_free[q->bat_nfree - 1u - k];
			int e = nkv_h_batch_prep(q, b, blk, &q->bat_prep[k]);

			if (e) {
				nkv_h_batch_done(b, e);
				continue;
			}
			b->cmd = blk;
			who[k++] = b;
		}
		q->bat_nfree -= k;
		rc = nkv_h_batch_ring(q, who, k);
		for (j = 0; j < k; j++) {
			if (who[j]->state == NKV_BATCH_INFLIGHT) {
				sent++;
				continue;
			}
			q->bat_free[q->bat_nfree++] = who[j]->cmd;
			nkv_h_batch_done(who[j], rc);
		}
	}
	for (; rc && i < n; i++)
		nkv_h_batch_done(&cmds[i], rc);
	free(who);
	return sent || !rc ? (int)sent : rc;
}

int nkv_batch_wait(struct nkv_qpair *q, struct nkv_batch_cmd *cmds, uint32_t n, uint32_t min)
{
	uint32_t i, done;
	int rc;

	if (!q || (n && !cmds))
		return -EINVAL;
	if (q->on_device)
		return nkv_h_batch_ready(q);
	min = min < n ? min : n;
	if (q->bat && q->bat_live) {
		rc = nkv_h_batch_poll(q);
		if (rc < 0)
			return rc;
	}
	for (;;) {
		for (done = 0, i = 0; i < n; i++)
			done += cmds[i].state != NKV_BATCH_INFLIGHT;
		if (done >= min || !q->bat || !q->bat_live)
			return (int)done;
		rc = nkv_h_batch_progress(q);
		if (rc < 0)
			return rc;
	}
}

int nkv_batch_run(struct nkv_qpair *q, struct nkv_batch_cmd *cmds, uint32_t n)
{
	int sent = nkv_batch_submit(q, cmds, n);
	int rc = sent < 0 ? sent : nkv_batch_wait(q, cmds, n, n);

	return rc < 0 ? rc : sent;
}
