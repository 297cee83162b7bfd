/* SPDX-License-Identifier: MIT */
/*
 * nkv_block.h - block batches: every thread of a block (a CUDA thread
 * block, a HIP workgroup, a cpu-engine block of waves) packs one SQE, and
 * one SQ tail doorbell rings for the whole block: up to min(block size,
 * credit limit) commands per doorbell, 1023 at queue depth 1024, where a
 * wave batch (nkv_dev.h) stops at 32 or 64. Built on nkv_dev.h's queue
 * operations; nothing of a wave batch changes (a wave is a block of one
 * wave here, and its own API stays the lighter one).
 *
 * In one hand (docs/host.md, "Block batches"):
 *   NKV_BLOCK_SHARED(sh);                          at kernel entry
 *   const struct nkv_block b = nkv_block_enter(sh);
 *   t = nkv_block_submit(b, qp, have, nkv_dev_retrieve(qp,
 *                        nkv_block_slot(b, 0), key, klen));
 *   r = nkv_block_wait(b, qp, t);    r.err, else r.status and r.dw0
 *
 * Who may call what: nkv_block_enter() and the nkv_block_*() collectives
 * are called by EVERY thread of the block, together (same call, same
 * order), each with its own have / prep / ticket: block-wide steps meet
 * at the block barrier (__syncthreads), which every thread reaches, and
 * the wave steps inside are collectives of each thread's whole wave (its
 * context from nkv_wave_enter(), made inside nkv_block_enter()). The
 * block's thread 0 (its first wave's leader) does the queue pair's
 * bookkeeping: it reserves, marks the CIDs, rings the doorbell, reaps.
 *
 * Contract: ONE BLOCK OWNS A QUEUE PAIR AT A TIME, as one wave does with
 * the wave API; never mix the two on one queue pair within a kernel.
 * Blocks of at most NKV_BLOCK_MAX_WAVES waves (1024 threads of 32-lane
 * waves; GPUs allow no more, nor does the cpu engine).
 */
#ifndef NKV_BLOCK_H
#define NKV_BLOCK_H

#include "nkv_dev.h"

#define NKV_BLOCK_MAX_WAVES 32u

/*
 * What the block's threads share: declared once per kernel with
 * NKV_BLOCK_SHARED(), in shared memory on a GPU (static __shared__) and
 * as a per-block variable of the cpu engine. Every field is written
 * before it is read; no initialization needed.
 */
struct nkv_block_shared {
	uint64_t grant;		/* thread 0's reservation for the chunk */
	uint32_t sent[NKV_BLOCK_MAX_WAVES]; /* per wave: threads with an SQE */
	uint32_t st;		/* thread 0's reap: 0 or -NKV_E* */
	uint32_t rsvd;
};

/* Declares @name, a pointer to the block's struct nkv_block_shared: put
 * it at the top of the kernel (or of the device function every thread of
 * the block calls at entry), before nkv_block_enter(@name). */
#define NKV_BLOCK_SHARED(name) NKV_ARCH_SHARED(struct nkv_block_shared, name)

/* One thread's view of its block; made once at kernel entry, passed to
 * every collective by value (it lives in registers). */
struct nkv_block {
	struct nkv_wave w;	/* this thread's wave, every lane of it */
	struct nkv_block_shared *sh;
	uint32_t thread;	/* index in the block; thread 0 keeps the queue pair */
	uint32_t size;		/* threads in the block */
	uint32_t wave;		/* this thread's wave in the block */
	uint32_t rsvd;
};

/* Every thread of the block, at kernel entry before any branch (the
 * block is converged by construction there), with the shared struct
 * NKV_BLOCK_SHARED() declared. */
NKV_DEV struct nkv_block nkv_block_enter(struct nkv_block_shared *sh)
{
	struct nkv_block b;

	b.w = nkv_wave_enter();
	b.sh = sh;
	b.thread = nkv_arch_block_thread();
	b.size = nkv_arch_block_size();
	b.wave = b.thread / nkv_arch_wave_size();
	b.rsvd = 0;
	return b;
}

/* This thread's value slot for batch @k of the batches a block keeps in
 * flight at once (k = 0 with one): k * size + thread, so no two threads
 * or batches share a slot; n batches need n * size slots. */
NKV_DEV uint32_t nkv_block_slot(struct nkv_block b, uint32_t k)
{
	return k * b.size + b.thread;
}

/* How many threads of a block send, and this thread's rank among them. */
struct nkv_block_count {
	uint32_t n;
	uint32_t rank;
};

/* Collective (every thread): count the threads with @send and rank this
 * one among them (block thread order). Per-wave ballots, each wave's
 * count in shared memory, the count barrier. Nothing reads sent[] before
 * that barrier, and nkv_block_submit() writes it again only after a later
 * one (its grant barrier), which every reader reaches after reading. */
NKV_DEV struct nkv_block_count nkv_block_count_send(struct nkv_block b, int send)
{
	uint64_t mine = nkv_arch_ballot(b.w.mask, send);
	struct nkv_block_count c;
	uint32_t v;

	c.rank = nkv_arch_popc64(mine & ((1ull << b.w.lane) - 1ull));
	if (b.w.lane == b.w.leader)
		b.sh->sent[b.wave] = nkv_arch_popc64(mine);
	c.n = nkv_arch_block_count(send);
	if (c.n)
		for (v = 0; v < b.wave; v++)
			c.rank += b.sh->sent[v];
	return c;
}

/*
 * Collective (every thread of @b). Each thread with @have puts @p's SQE
 * (its CID field is overwritten) into the SQ; threads with have = 0 sit
 * out (@p unread), and so does one whose builder failed (p.err, which
 * its ticket carries). The batch goes in whole with ONE SQ tail doorbell,
 * or, when it exceeds the queue's credit limit, in full-queue chunks
 * (thread 0 waits for credits rather than ring for a few), as
 * nkv_wave_submit() does. Each chunk: thread 0 reserves; a block barrier
 * hands the grant over; every thread of the chunk derives its CID from
 * the bitmap by its rank in the block; a barrier, then thread 0 takes
 * them; threads publish and fence their own SQEs; the count barrier
 * checks every slot got its entry; thread 0 writes the doorbell. Every
 * loop here runs the same number of times in every thread. Returns each
 * thread's ticket, for nkv_block_wait(): the CID its command went in
 * under, or NKV_CID_NONE and why not (the builder's error, or NKV_EIO /
 * NKV_ETIMEDOUT / NKV_ENOSPC for the threads the queue pair could not
 * take; threads whose chunk went in before that keep their CID).
 */
NKV_DEV struct nkv_ticket nkv_block_submit(struct nkv_block b, struct nkv_dev_qp *qp, int have,
					   struct nkv_prep p)
{
	int send = have && !p.err;
	struct nkv_ticket t = nkv_ticket_none(have ? p.err : 0);
	const struct nkv_block_count bc = nkv_block_count_send(b, send);
	uint32_t n = bc.n, rank = bc.rank, done = 0;

	while (done < n) {
		uint32_t chunk, tail;
		uint64_t g;
		int mine, c = 0;

		if (b.thread == 0)
			b.sh->grant = nkv_qp_reserve(qp, n - done);
		nkv_arch_block_barrier();
		/* Read before the next barrier; rewritten only after a later one. */
		g = b.sh->grant;
		if (g & NKV_GRANT_ERR) {
			if (send && rank >= done)
				t.err = -(int)(uint32_t)g;
			return t;
		}
		chunk = (uint32_t)g;
		tail = (uint32_t)(g >> 32);
		mine = send && rank >= done && rank < done + chunk;
		if (mine)
			c = nkv_qp_cid_nth(qp, rank - done);
		/* Every thread has read the bitmap; now thread 0 marks. */
		nkv_arch_block_barrier();
		if (b.thread == 0)
			nkv_qp_cids_take(qp, chunk);
		mine = mine && c >= 0;
		if (mine) {
			nkv_lane_publish(qp, p.sqe, (tail + rank - done) % qp->sq_depth, (uint16_t)c);
			t.cid = (uint16_t)c;
		}
		/* Every publishing thread fenced; the count is the barrier. */
		if (!nkv_qp_ring_chunk(qp, b.thread == 0, nkv_arch_block_count(mine), chunk)) {
			if (send && rank >= done)
				t = nkv_ticket_none(nkv_qp_failed_err(qp));
			return t;
		}
		done += chunk;
	}
	return t;
}

/*
 * Collective (every thread of @b). Threads whose ticket holds a CID wait
 * for its completion. Thread 0 alone reaps, for the whole block, while
 * the others wait at the block barrier: completions come in any order
 * and are parked per CID, so a thread whose completion another pass (or
 * another batch's wait) reaped just takes it, and the loop runs while
 * any thread of the block still waits. Each such thread then takes its
 * result and gives its CID back. The result: the ticket's error for a
 * thread whose command never went in; NKV_EINVAL for a CID this queue
 * pair does not hold; NKV_ETIMEDOUT when the poll budget or timeout ran
 * out (the queue pair is now failed); NKV_ENOTCONN when the host marked
 * the controller gone; NKV_EIO when it had failed otherwise; else err 0 and the NVMe status as the controller sent it.
 * Batches in flight may be waited in any order.
 */
NKV_DEV struct nkv_dev_result nkv_block_wait(struct nkv_block b, struct nkv_dev_qp *qp,
					     struct nkv_ticket tk)
{
	struct nkv_dev_cpl *t = NKV_DEV_PTR(struct nkv_dev_cpl, qp->cpl_addr);
	int have = tk.cid != NKV_CID_NONE;
	struct nkv_dev_result res = nkv_result_none(have ? 0 : tk.err);
	uint32_t cid = have ? tk.cid : 0, st;

	/* Per thread, but no loop below depends on it: only this thread's
	 * own result does. */
	if (have && nkv_dev_qp_failed(qp)) {
		have = 0;
		res.err = nkv_qp_failed_err(qp);
	} else if (have && !nkv_qp_cid_held(qp, cid)) {
		have = 0;
		res.err = NKV_EINVAL;
	}
	/* Each pass reaps at least one completion or ends the loop. */
	while (nkv_arch_block_count(have && !nkv_arch_load_dev_u32(&t[cid].done))) {
		if (b.thread == 0)
			b.sh->st = (uint32_t)-nkv_qp_progress(qp);
		nkv_arch_block_barrier();
		/* Read before the next barrier, rewritten only after it. */
		st = b.sh->st;
		if (st) {
			/* Threads whose result did arrive still take it; the
			 * others keep their CIDs until the host resets. */
			if (have && !nkv_arch_load_dev_u32(&t[cid].done)) {
				res.err = -(int)st;
				have = 0;
			}
			break;
		}
	}
	return nkv_wave_take(b.w, qp, have, cid, res);
}

/* Collective (every thread of @b): submit then wait, one command per
 * thread with @have; the per-thread result of either step. */
NKV_DEV struct nkv_dev_result nkv_block_exec(struct nkv_block b, struct nkv_dev_qp *qp, int have,
					     struct nkv_prep p)
{
	return nkv_block_wait(b, qp, nkv_block_submit(b, qp, have, p));
}

#endif /* NKV_BLOCK_H */
