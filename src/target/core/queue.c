/* SPDX-License-Identifier: MIT */
/*
 * queue.c - I/O queue creation and deletion, doorbells, SQE fetch with
 * round-robin arbitration, CQE posting.
 *
 * Doorbells are read from the doorbell page with acquire loads: the client
 * (possibly another process through shared memory) writes SQEs, then the
 * tail with release, so an acquire load of the tail makes the SQEs visible.
 * An out-of-range doorbell value is ignored and counted (bad_doorbells),
 * never trusted; the documented alternative, CSTS.CFS, would take the
 * whole controller down for one bad write.
 */
#include <string.h>

#include "core.h"
#include "metrics.h"

int nkv_tgt_queue_mem(struct nkv_tgt_ctrl *c, uint64_t iova, uint64_t bytes,
		      uint32_t prot, void **ptr, int *stable)
{
	if (iova & (c->page_size - 1))
		return nkv_tgt_sc(NKV_SC_INVALID_FIELD);
	*ptr = nkv_dma_ptr_stable(c->dma, iova, bytes, prot, stable);
	return *ptr ? 0 : nkv_tgt_sc(NKV_SC_DATA_XFER_ERROR);
}

/* Pending completions of a deleted CQ or SQ are dropped: the queue is
 * gone, so nothing may be written to its memory any more. */
void nkv_tgt_cq_delete(struct nkv_tgt_ctrl *c, uint16_t qid)
{
	struct nkv_tgt_cq *cq = &c->cq[qid];
	struct nkv_tgt_cmd *cmd;

	while ((cmd = cq->pend_head)) {
		cq->pend_head = cmd->next;
		c->npend--;
		nkv_tgt_cmd_put(c, cmd);
	}
	memset(cq, 0, sizeof(*cq));
}

/* The poll pass visits only live I/O SQs: a controller offers up to
 * max_ioq of them (64 by default) and a client uses a few, and visiting
 * every slot cost a visible share of an idle pass, i.e. of how late a
 * doorbell is seen. */
static void nkv_tgt_sq_live_add(struct nkv_tgt_ctrl *c, uint16_t qid)
{
	c->ioq_live[c->nioq_live++] = qid;
}

static void nkv_tgt_sq_live_del(struct nkv_tgt_ctrl *c, uint16_t qid)
{
	uint32_t i;

	for (i = 0; i < c->nioq_live; i++)
		if (c->ioq_live[i] == qid) {
			c->ioq_live[i] = c->ioq_live[--c->nioq_live];
			return;
		}
}

static uint16_t nkv_tgt_qcheck(struct nkv_tgt_ctrl *c, uint16_t qid, uint32_t entries,
			       int pc, uint32_t granted, int live)
{
	if (!qid || qid > granted || live)
		return nkv_tgt_cs(NKV_SC_QID_INVALID);
	if (entries < 2 || entries > c->mqes)
		return nkv_tgt_cs(NKV_SC_QSIZE_INVALID);
	if (!pc)
		return nkv_tgt_sc(NKV_SC_INVALID_FIELD);	/* CAP.CQR = 1 */
	return 0;
}

uint16_t nkv_tgt_cq_create(struct nkv_tgt_ctrl *c, uint16_t qid, uint32_t entries,
			   int pc, uint64_t iova)
{
	int live = qid <= c->max_ioq && c->cq[qid].live;
	uint16_t st = nkv_tgt_qcheck(c, qid, entries, pc, c->ncq_granted, live);
	int stable;
	void *p;

	if (st)
		return st;
	st = (uint16_t)nkv_tgt_queue_mem(c, iova, (uint64_t)entries * 16,
					 NKV_DMA_WRITE, &p, &stable);
	if (st)
		return st;
	c->cq[qid] = (struct nkv_tgt_cq){ .live = 1, .size = entries, .phase = 1,
		.iova = iova, .epoch = ++c->next_epoch, .ring = p, .stable = stable };
	__atomic_store_n(nkv_tgt_dbp(c, 2u * qid + 1), 0, __ATOMIC_RELAXED);
	return 0;
}

uint16_t nkv_tgt_sq_create(struct nkv_tgt_ctrl *c, uint16_t qid, uint32_t entries,
			   int pc, uint16_t cqid, uint64_t iova)
{
	int live = qid <= c->max_ioq && c->sq[qid].live;
	uint16_t st = nkv_tgt_qcheck(c, qid, entries, pc, c->nsq_granted, live);
	int stable;
	void *p;

	if (st)
		return st;
	if (!cqid || cqid > c->max_ioq || !c->cq[cqid].live)
		return nkv_tgt_cs(NKV_SC_CQ_INVALID);
	st = (uint16_t)nkv_tgt_queue_mem(c, iova, (uint64_t)entries * 64,
					 NKV_DMA_READ, &p, &stable);
	if (st)
		return st;
	c->sq[qid] = (struct nkv_tgt_sq){ .live = 1, .cqid = cqid, .size = entries,
		.iova = iova, .epoch = ++c->next_epoch, .ring = p, .stable = stable };
	c->cq[cqid].nsq++;
	nkv_tgt_sq_live_add(c, qid);
	__atomic_store_n(nkv_tgt_dbp(c, 2u * qid), 0, __ATOMIC_RELAXED);
	return 0;
}

void nkv_tgt_sq_delete(struct nkv_tgt_ctrl *c, uint16_t qid)
{
	struct nkv_tgt_sq *sq = &c->sq[qid];
	struct nkv_tgt_cq *cq = &c->cq[sq->cqid];
	struct nkv_tgt_cmd **pp = &cq->pend_head, *cmd;

	/* Its commands no longer count against the CQ: those still at a
	 * backend come back with a dead epoch and are dropped. */
	for (cmd = c->inflight_head; cmd; cmd = cmd->inext)
		if (cmd->sqid == qid && cmd->epoch == sq->epoch)
			cq->outstanding--;
	/* Drop this SQ's completions still waiting for CQ room. */
	cq->pend_tail = NULL;
	while ((cmd = *pp)) {
		if (cmd->sqid == qid) {
			*pp = cmd->next;
			c->npend--;
			nkv_tgt_cmd_put(c, cmd);
		} else {
			cq->pend_tail = cmd;
			pp = &cmd->next;
		}
	}
	cq->nsq--;
	if (qid)
		nkv_tgt_sq_live_del(c, qid);
	memset(sq, 0, sizeof(*sq));
}

static uint32_t nkv_tgt_db(struct nkv_tgt_ctrl *c, uint32_t idx)
{
	/* Acquire: pairs with the client's release before its doorbell
	 * store, so the SQEs (or its CQ reads) are ordered before. */
	return __atomic_load_n(nkv_tgt_dbp(c, idx), __ATOMIC_ACQUIRE);
}

static void nkv_tgt_cq_head(struct nkv_tgt_ctrl *c, uint16_t qid)
{
	struct nkv_tgt_cq *cq = &c->cq[qid];
	uint32_t v = nkv_tgt_db(c, 2u * qid + 1);

	if (v == cq->last_db)
		return;
	cq->last_db = v;
	if (v >= cq->size) {
		c->qstats[qid].bad_doorbells++;
		NKV_TGT_TRACE(c, "cq %u: head doorbell %u out of range", qid, v);
		return;
	}
	c->qstats[qid].cq_doorbells++;
	cq->head = v;
	NKV_TGT_TRACE(c, "cq %u: head doorbell %u", qid, v);
}

/* Write one CQE: DW0-DW2 first, then DW3 (with the phase) with release,
 * so a client that reads the phase and then acquires sees a whole entry. */
static void nkv_tgt_cqe_write(struct nkv_tgt_ctrl *c, struct nkv_tgt_cq *cq,
			      struct nkv_tgt_cmd *cmd)
{
	struct nkv_cqe *e = &cq->ring[cq->tail];
	uint32_t dw2 = nkv_cqe_dw2((uint16_t)c->sq[cmd->sqid].head, cmd->sqid);
	uint32_t dw3 = nkv_cqe_dw3(nkv_sqe_cid(&cmd->sqe), cq->phase, cmd->status);
	uint32_t dw[3] = { cmd->dw0, 0, dw2 };

	/* Through memguard: the CQ may sit in a page the client took away
	 * (unless its region is stable: sealed, its pages cannot vanish). */
	if (cq->stable) {
		memcpy(e, dw, sizeof(dw));
		__atomic_store_n(&e->dw3, dw3, __ATOMIC_RELEASE);
	} else if (nkv_guard_copy_publish(e, dw, sizeof(dw), &e->dw3, dw3)) {
		nkv_tgt_mem_lost(c);
		nkv_tgt_ctrl_fail(c, "completion_queue_memory_vanished(SIGBUS)");
		return;
	}
	NKV_TGT_TRACE(c, "cqe cq %u slot %u: sq %u sqhd %u cid %u status %#x dw0 %#x p %u",
		      cmd->cqid, cq->tail, cmd->sqid, c->sq[cmd->sqid].head,
		      nkv_sqe_cid(&cmd->sqe), cmd->status, cmd->dw0, cq->phase);
	if (++cq->tail == cq->size) {
		cq->tail = 0;
		cq->phase ^= 1;
	}
}

/* Post waiting completions while the CQ has a free slot (one slot stays
 * empty: full is tail + 1 == head). */
int nkv_tgt_cq_flush(struct nkv_tgt_ctrl *c, uint16_t cqid)
{
	struct nkv_tgt_cq *cq = &c->cq[cqid];
	struct nkv_tgt_cmd *cmd;
	int n = 0;

	if (c->failed)
		return 0;	/* a failed controller posts nothing */
	if (cq->pend_head && !c->bus_master) {
		nkv_tgt_ctrl_fail(c, "completion_to_post_with_bus_master_enable_clear");
		return 0;
	}
	while ((cmd = cq->pend_head)) {
		if ((cq->tail + 1) % cq->size == cq->head) {
			nkv_tgt_cq_head(c, cqid);
			if ((cq->tail + 1) % cq->size == cq->head)
				break;
		}
		nkv_tgt_cqe_write(c, cq, cmd);
		if (c->failed)
			break;	/* the CQ's memory vanished: cmd stays pending */
		cq->pend_head = cmd->next;
		if (!cq->pend_head)
			cq->pend_tail = NULL;
		cq->outstanding--;
		c->npend--;
		nkv_tgt_cmd_put(c, cmd);
		n++;
	}
	return n;
}

static void nkv_tgt_sq_tail(struct nkv_tgt_ctrl *c, uint16_t qid)
{
	struct nkv_tgt_sq *sq = &c->sq[qid];
	uint32_t v = nkv_tgt_db(c, 2u * qid);

	if (v == sq->last_db)
		return;
	sq->last_db = v;
	if (v >= sq->size) {
		c->qstats[qid].bad_doorbells++;
		NKV_TGT_TRACE(c, "sq %u: tail doorbell %u out of range", qid, v);
		return;
	}
	c->qstats[qid].sq_doorbells++;
	sq->tail = v;
	NKV_TGT_TRACE(c, "sq %u: tail doorbell %u", qid, v);
}

/* The client wrote the SQEs on another core: each is a cache miss.
 * Asking for the whole burst first lets those misses overlap instead of
 * paying one after the other while each command runs (a prefetch never
 * faults, so a page the client took away is still met by memguard). */
static void nkv_tgt_sq_prefetch(const struct nkv_tgt_sq *sq)
{
	uint32_t i = sq->head, n;

	for (n = 0; i != sq->tail && n < NKV_TGT_BURST; n++) {
		__builtin_prefetch(&sq->ring[i], 0, 3);
		i = i + 1 < sq->size ? i + 1 : 0;
	}
}

/* Fetch and start up to NKV_TGT_BURST commands from one SQ. Stops while
 * its CQ already has as many results coming as it has slots, so held-back
 * completions stay bounded by the CQ size. */
static int nkv_tgt_sq_fetch(struct nkv_tgt_ctrl *c, uint16_t qid)
{
	struct nkv_tgt_sq *sq = &c->sq[qid];
	struct nkv_tgt_cq *cq = &c->cq[sq->cqid];
	struct nkv_tgt_cmd *cmd;
	uint32_t n = 0;
	uint64_t t_fetch = 0;	/* one clock read per burst, metrics on */

	nkv_tgt_sq_tail(c, qid);
	if (sq->live && sq->head != sq->tail && !c->bus_master) {
		nkv_tgt_ctrl_fail(c, "command_fetch_with_bus_master_enable_clear");
		return 0;
	}
	nkv_tgt_sq_prefetch(sq);
	nkv_tgt_burst_begin(c);
	while (sq->live && sq->head != sq->tail && n < NKV_TGT_BURST &&
	       cq->outstanding < cq->size) {
		cmd = nkv_tgt_cmd_get(c);
		if (!cmd)
			break;	/* out of memory: retry next pass */
		if (sq->stable)
			memcpy(&cmd->sqe, &sq->ring[sq->head], sizeof(cmd->sqe));
		else if (nkv_guard_copy(&cmd->sqe, &sq->ring[sq->head], sizeof(cmd->sqe))) {
			/* The SQ's page vanished: no command to answer. */
			nkv_tgt_cmd_put(c, cmd);
			nkv_tgt_mem_lost(c);
			nkv_tgt_ctrl_fail(c, "submission_queue_memory_vanished(SIGBUS)");
			break;
		}
		sq->head = (sq->head + 1) % sq->size;
		if (!t_fetch && nkv_tgt_metrics_enabled())
			t_fetch = nkv_tgt_metrics_stamp();
		cmd->op.t_fetch_ns = t_fetch;
		cmd->sqid = qid;
		cmd->cqid = sq->cqid;
		cmd->epoch = sq->epoch;
		cq->outstanding++;
		NKV_TGT_TRACE(c, "sqe sq %u: opc %#x cid %u nsid %u cdw10 %#x cdw11 %#x",
			      qid, nkv_sqe_opc(&cmd->sqe), nkv_sqe_cid(&cmd->sqe),
			      cmd->sqe.nsid, cmd->sqe.cdw10, cmd->sqe.cdw11);
		if (qid == 0)
			nkv_tgt_admin_exec(c, cmd);
		else
			nkv_tgt_io_exec(c, cmd);
		n++;
	}
	nkv_tgt_burst_end(c);
	return (int)n;
}

int nkv_tgt_queues_poll(struct nkv_tgt_ctrl *c)
{
	uint32_t q, i, n = c->nioq_live, k;
	int work = 0;

	if (c->failed)
		return 0;
	/* Completions held for want of a CQ slot (rare: npend counts them). */
	for (q = 0; c->npend && q <= c->max_ioq; q++)
		if (c->cq[q].live && c->cq[q].pend_head)
			work += nkv_tgt_cq_flush(c, (uint16_t)q);
	if (c->shutting_down || nkv_cc_shn(c->cc))
		return work;
	/* Admin first (cheap, rare), then every I/O SQ once, starting after
	 * the one that went first last time: no queue can starve another. */
	if (c->sq[0].live)
		work += nkv_tgt_sq_fetch(c, 0);
	if (!n)
		return work;
	if (c->rr >= n)
		c->rr = 0;
	for (i = 0, k = c->rr; i < n; i++, k = k + 1 < n ? k + 1 : 0)
		work += nkv_tgt_sq_fetch(c, c->ioq_live[k]);
	c->rr = c->rr + 1 < n ? c->rr + 1 : 0;
	return work;
}
