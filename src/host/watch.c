/* SPDX-License-Identifier: MIT */
/*
 * watch.c - notices a controller that is gone, also while nobody talks
 * to it.
 *
 * Device code sees no socket and no register, only each queue pair's
 * host-visible fail word (nkv_qp_watch in nkv_dev.h reads it every 256
 * empty polls). So one thread per controller looks every NKV_H_WATCH_MS
 * whether the controller is still there: the transport's alive op (a
 * vfio-user socket that hung up, seen by poll() without reading from
 * it; a pcie device unbound or reading all-ones) and, where a register
 * read is a load from a mapping (pcie), CSTS for all-ones and CFS. Over
 * vfio-user a register read is a message, which a stopped target would
 * hold for seconds: the watch sends none (CFS there is seen by the admin
 * path, after each completion and while it waits).
 *
 * Once gone, the controller is dead (every call: -ENOTCONN) and every
 * queue pair still OK gets NKV_QP_FAILED_GONE in its fail word, and in
 * its descriptor where the host keeps that (not one in device memory):
 * device waits end with NKV_ENOTCONN, the synchronous API with
 * -ENOTCONN. The thread then has nothing left to do and ends. A
 * controller that is there but silent is none of its business: waits on
 * it end by their own timeout (NKV_QP_FAILED_TIMEOUT).
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "host/host.h"

/* How often the watch looks: a wait ends within this, plus a device
 * wait's 256 polls, of the loss. */
#define NKV_H_WATCH_MS 10

/* 0 while the controller looks present; else why not: -EIO with CSTS.CFS
 * set (in *csts), -ENODEV for registers reading all-ones, or the
 * transport's error (its connection ended). */
static int nkv_h_watch_look(struct nkv_ctrl *c, uint32_t *csts)
{
	uint64_t v = 0;
	int rc = c->ops->alive ? c->ops->alive(c->tr) : 0;

	if (rc || !c->ops->mapped_regs || c->ops->reg_read(c->tr, NKV_REG_CSTS, 4, &v))
		return rc;
	*csts = (uint32_t)v;
	if (*csts == 0xffffffffu)
		return -ENODEV;
	return (*csts & NKV_CSTS_CFS) ? -EIO : 0;
}

/* NKV_QP_FAILED_GONE into @q, where no other reason is there first. */
static void nkv_h_watch_fail_qp(struct nkv_qpair *q)
{
	uint32_t ok = NKV_QP_OK;

	__atomic_compare_exchange_n(q->fail_word, &ok, NKV_QP_FAILED_GONE, 0, __ATOMIC_SEQ_CST,
				    __ATOMIC_RELAXED);
	if (q->on_device)
		return;	/* the descriptor is device code's: it adopts the word */
	ok = NKV_QP_OK;
	__atomic_compare_exchange_n(&q->dev->failed, &ok, NKV_QP_FAILED_GONE, 0,
				    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

static void nkv_h_watch_say(int why, uint32_t csts)
{
	if (why == -EIO)
		nkv_h_log("controller gone: CSTS %#x has CFS (Controller Fatal Status) set; "
			  "its queue pairs are failed", csts);
	else if (why == -ENODEV)
		nkv_h_log("controller gone: its registers read all-ones or its device went "
			  "away; its queue pairs are failed");
	else if (why == -ECONNRESET)
		nkv_h_log("controller gone: its connection closed; its queue pairs are failed");
	else	/* a message had no reply in time, or the socket broke */
		nkv_h_log("controller gone: the transport gave up on it (%s); its queue pairs "
			  "are failed", strerror(-why));
}

/* Mark @c dead and its queue pairs failed: 1, or 0 while another thread
 * holds the lock (an admin command: it sees c->lost and lets go soon). */
static int nkv_h_watch_mark(struct nkv_ctrl *c, int why, uint32_t csts)
{
	uint32_t q;

	if (pthread_mutex_trylock(&c->lock))
		return 0;
	c->dead = 1;
	if (why == -EIO && !c->failed_csts)
		c->failed_csts = csts;
	else if (why != -EIO)
		__atomic_store_n(&c->gone, 1, __ATOMIC_RELEASE);	/* no register access */
	for (q = 1; q <= c->granted; q++)
		if (c->qps[q])
			nkv_h_watch_fail_qp(c->qps[q]);
	pthread_mutex_unlock(&c->lock);
	return 1;
}

static void *nkv_h_watch_main(void *arg)
{
	struct nkv_ctrl *c = arg;
	struct timespec ts = { 0, NKV_H_WATCH_MS * 1000000L };
	uint32_t csts = 0;
	int why = 0;

	while (!__atomic_load_n(&c->watch_stop, __ATOMIC_ACQUIRE)) {
		if (!why) {
			why = nkv_h_watch_look(c, &csts);
			if (why) {
				__atomic_store_n(&c->lost, why, __ATOMIC_RELEASE);
				nkv_h_watch_say(why, csts);
			}
		}
		if (why && nkv_h_watch_mark(c, why, csts))
			break;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int nkv_h_watch_start(struct nkv_ctrl *c)
{
	__atomic_store_n(&c->watch_stop, 0, __ATOMIC_RELAXED);
	if (pthread_create(&c->watch, NULL, nkv_h_watch_main, c))
		return -EAGAIN;
	c->watch_on = 1;
	return 0;
}

void nkv_h_watch_stop(struct nkv_ctrl *c)
{
	if (!c->watch_on)
		return;
	__atomic_store_n(&c->watch_stop, 1, __ATOMIC_RELEASE);
	pthread_join(c->watch, NULL);
	c->watch_on = 0;
}
