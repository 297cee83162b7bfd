/* SPDX-License-Identifier: MIT */
/*
 * handoff.c - backend completions to the poll thread.
 *
 * A backend calls op->done() from any thread. done() pushes the command
 * onto a lock-free stack (one CAS); the poll thread takes the whole stack
 * with one exchange and completes the commands in push order. Push-only
 * plus take-all has no ABA problem, so no tags or hazard pointers. A
 * poll thread asleep (nkv_tgt_ctrl_sleep_begin) is woken by an eventfd
 * write, so waiting on a slow backend costs no CPU. A done() on the poll
 * thread itself, inside submit, skips all that (nkv_tgt_be_done).
 *
 * Two batchings for backends with a thread of their own: an SQ burst's
 * ops may be left for the backend's poll at the burst's end, so its
 * thread is woken once for them (nkv_be_poll_later), and a run of done()s
 * from that thread may hold its wake-ups of sleeping poll threads for one
 * at the end (nkv_be_done_hold).
 */
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "metrics.h"

/*
 * A backend thread's held wake-ups (nkv_be_done_hold): the controllers
 * its pushes went to since the hold began, and how many each. Their
 * pushers count stays raised until the release has woken them, so none
 * is destroyed in between.
 */
#define NKV_TGT_HELD_MAX 8
static __thread struct nkv_tgt_held {
	unsigned depth, n;
	struct nkv_tgt_ctrl *c[NKV_TGT_HELD_MAX];
	uint32_t pushes[NKV_TGT_HELD_MAX];
} nkv_tgt_held;

/* Whether a push to c made during a hold leaves its wake-up to the
 * release (0: no hold, or no room: wake now). */
static int nkv_tgt_hold(struct nkv_tgt_ctrl *c)
{
	struct nkv_tgt_held *h = &nkv_tgt_held;
	unsigned i;

	if (!h->depth)
		return 0;
	for (i = 0; i < h->n && h->c[i] != c; i++)
		;
	if (i == h->n) {
		if (h->n == NKV_TGT_HELD_MAX)
			return 0;
		h->c[h->n] = c;
		h->pushes[h->n++] = 0;
	}
	h->pushes[i]++;
	return 1;
}

/* Wake c's poll thread if it sleeps; then n of our pushes are out. */
static void nkv_tgt_handoff_wake(struct nkv_tgt_ctrl *c, uint32_t n)
{
	/* Sequentially consistent with nkv_tgt_ctrl_sleep_begin(): a poll
	 * thread that announced its sleep before our push gets woken. */
	if (__atomic_load_n(&c->sleeping, __ATOMIC_SEQ_CST)) {
		uint64_t one = 1;

		(void)!write(c->wake_fd, &one, sizeof(one));
	}
	__atomic_sub_fetch(&c->pushers, n, __ATOMIC_RELEASE);
}

void nkv_be_done_hold(void)
{
	nkv_tgt_held.depth++;
}

void nkv_be_done_release(void)
{
	struct nkv_tgt_held *h = &nkv_tgt_held;
	unsigned i;

	if (!h->depth || --h->depth)
		return;
	for (i = 0; i < h->n; i++)
		nkv_tgt_handoff_wake(h->c[i], h->pushes[i]);
	h->n = 0;
}

void nkv_tgt_handoff_push(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	struct nkv_tgt_cmd *head;

	/* Once pushed, the command may be drained and the controller freed
	 * by the poll thread: destroy waits until no pusher is inside. */
	__atomic_add_fetch(&c->pushers, 1, __ATOMIC_SEQ_CST);
	head = __atomic_load_n(&c->handoff, __ATOMIC_RELAXED);
	/* Release: the backend's results (status, dw0, data written to the
	 * client's buffers) are visible before the command is. Pairs with
	 * the acquire exchange in nkv_tgt_handoff_drain(). */
	do {
		cmd->next = head;
	} while (!__atomic_compare_exchange_n(&c->handoff, &head, cmd, 1,
					      __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
	if (!nkv_tgt_hold(c))
		nkv_tgt_handoff_wake(c, 1);
}

/* The controller whose poll thread is inside a backend's submit (this
 * thread's, so no other thread ever matches it). */
static __thread struct nkv_tgt_ctrl *nkv_tgt_submitting;

int nkv_tgt_be_submit(struct nkv_tgt_ctrl *c, struct nkv_be *be, struct nkv_be_op *op)
{
	int rc;

	nkv_tgt_submitting = c;
	rc = nkv_be_submit(be, op);
	nkv_tgt_submitting = NULL;
	return rc;
}

void nkv_be_wait_near(struct nkv_be_op *op)
{
	struct nkv_tgt_cmd *cmd = (struct nkv_tgt_cmd *)op;
	struct nkv_tgt_ctrl *c = nkv_tgt_submitting;

	/* Inside nkv_tgt_be_submit the op is a command of c's (a test's
	 * direct caller's op is none: no controller submitting). */
	if (!c || cmd->ctrl != c || cmd->near)
		return;
	cmd->near = 1;
	c->near++;
}

/*
 * A burst: the commands one pass fetched from one SQ. A backend may leave
 * an op submitted in it for later (nkv_be_poll_later) and is then polled
 * once at the burst's end, on this thread, as inside submit (its done()s
 * stay local): a doorbell's Stores then reach the backend's worker with
 * one wake-up, not one each (rocksdb.c, nkv_rocks_poll). The list is
 * this thread's and lives only between begin and end, so nothing can be
 * left in it.
 */
#define NKV_TGT_LATER_MAX 4
static __thread struct nkv_tgt_burst {
	struct nkv_tgt_ctrl *c;		/* the burst's; NULL outside one */
	unsigned n;
	struct nkv_be *be[NKV_TGT_LATER_MAX];
} nkv_tgt_burst;

void nkv_tgt_burst_begin(struct nkv_tgt_ctrl *c)
{
	nkv_tgt_burst.c = c;
	nkv_tgt_burst.n = 0;
}

void nkv_tgt_burst_end(struct nkv_tgt_ctrl *c)
{
	struct nkv_tgt_burst *b = &nkv_tgt_burst;
	struct nkv_be *be[NKV_TGT_LATER_MAX];
	unsigned i, n = b->n;

	b->c = NULL;
	if (!n)
		return;
	/* Closed first: what a poll submits is served at once. */
	memcpy(be, b->be, n * sizeof(be[0]));
	b->n = 0;
	nkv_tgt_submitting = c;
	for (i = 0; i < n; i++)
		be[i]->ops->poll(be[i]);
	nkv_tgt_submitting = NULL;
}

int nkv_be_poll_later(struct nkv_be *be)
{
	struct nkv_tgt_burst *b = &nkv_tgt_burst;
	unsigned i;

	if (!b->c || nkv_tgt_submitting != b->c || !be->ops->poll)
		return 0;
	for (i = 0; i < b->n; i++)
		if (b->be[i] == be)
			return 1;
	if (b->n == NKV_TGT_LATER_MAX)
		return 0;
	b->be[b->n++] = be;
	return 1;
}

/*
 * A backend that completes during submit (the mem backend) calls done()
 * on the poll thread itself: the command goes on the poll thread's own
 * list, with no atomic, and is completed with the others at the end of
 * the pass (so a burst's CQEs are still written together): none of the
 * push's four atomic operations (two sequentially consistent), which
 * only a completion from another thread needs.
 */
void nkv_tgt_be_done(struct nkv_be_op *op)
{
	struct nkv_tgt_cmd *cmd = (struct nkv_tgt_cmd *)op;
	struct nkv_tgt_ctrl *c = cmd->ctrl;

	nkv_tgt_metrics_be(c, cmd);
	if (nkv_tgt_submitting != c) {
		nkv_tgt_handoff_push(c, cmd);
		return;
	}
	nkv_tgt_cmd_append(&c->done_head, &c->done_tail, cmd);
}

/* Complete a list of commands a backend is done with, in order. */
static int nkv_tgt_handoff_finish(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	struct nkv_tgt_cmd *next;
	int n = 0;

	nkv_tgt_metrics_batch(1);	/* the list's completions share a stamp */
	for (; cmd; cmd = next, n++) {
		next = cmd->next;
		nkv_tgt_data_end(cmd);
		cmd->status = cmd->op.status;
		cmd->dw0 = cmd->op.dw0;
		if (cmd->fault)
			nkv_tgt_mem_lost(c);
		nkv_tgt_io_finish(c, cmd);
		nkv_tgt_complete(c, cmd);
	}
	nkv_tgt_metrics_batch(0);
	return n;
}

int nkv_tgt_handoff_drain(struct nkv_tgt_ctrl *c)
{
	struct nkv_tgt_cmd *list, *rev = NULL, *next;
	int n = 0;

	if (c->done_head) {
		list = c->done_head;
		c->done_head = c->done_tail = NULL;
		n = nkv_tgt_handoff_finish(c, list);
	}
	if (!__atomic_load_n(&c->handoff, __ATOMIC_RELAXED))
		return n;
	list = __atomic_exchange_n(&c->handoff, NULL, __ATOMIC_ACQUIRE);
	while (list) {		/* the stack is newest first: reverse it */
		next = list->next;
		list->next = rev;
		rev = list;
		list = next;
	}
	return n + nkv_tgt_handoff_finish(c, rev);
}
