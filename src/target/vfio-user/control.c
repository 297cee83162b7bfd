/* SPDX-License-Identifier: MIT */
/*
 * control.c - the server's control side (server.h): connections listed
 * and ended, limits changed while it runs. The caller is another thread
 * (nkv-target's RPC server); a connection's controller is touched only
 * by that connection's own thread, which is handed each request through
 * its kick_fd and serves it at its next wait (nkv_vfu_conn_control).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "target/core/stats.h"
#include "target/vfio-user/vfu.h"

void nkv_vfu_conn_link(struct nkv_vfu_conn *c)
{
	pthread_mutex_lock(&c->s->lock);
	c->next = c->s->conns;
	c->s->conns = c;
	pthread_mutex_unlock(&c->s->lock);
}

/* After this no control request reaches c: its kick_fd may be closed. */
void nkv_vfu_conn_unlink(struct nkv_vfu_conn *c)
{
	struct nkv_vfu_conn **p;

	pthread_mutex_lock(&c->s->lock);
	for (p = &c->s->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	pthread_mutex_unlock(&c->s->lock);
}

uint64_t nkv_vfu_poll_ns(const struct nkv_vfu_server *s)
{
	return __atomic_load_n(&s->o.poll_interval_ns, __ATOMIC_RELAXED);
}

/* Ask c (under s->lock) for what ctl names. */
static void nkv_vfu_conn_ask(struct nkv_vfu_conn *c, uint32_t ctl)
{
	c->ctl |= ctl;
	(void)!write(c->kick_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
}

/* The queues' counters of c's controller, summed (c's thread). */
static void nkv_vfu_conn_qsum(struct nkv_vfu_conn *c, struct nkv_vfu_conn_info *i)
{
	struct nkv_tgt_qstats q;
	uint16_t qid;

	for (qid = 0; c->ctrl && !nkv_tgt_ctrl_stats(c->ctrl, qid, &q) && qid < UINT16_MAX; qid++) {
		i->commands += q.commands;
		i->bytes += q.bytes;
		i->errors += q.errors;
		i->sq_doorbells += q.sq_doorbells;
		i->cq_doorbells += q.cq_doorbells;
		i->bad_doorbells += q.bad_doorbells;
	}
}

/* c as its own thread sees it (under s->lock). */
static void nkv_vfu_conn_snap(struct nkv_vfu_conn *c, struct nkv_vfu_conn_info *i)
{
	uint64_t now = nkv_vfu_now_ns();

	memset(i, 0, sizeof(*i));
	i->id = c->id;
	i->fresh = 1;
	i->age_ms = (now - c->opened_ns) / NKV_VFU_MS;
	i->has_cred = c->has_cred;
	i->pid = c->pid;
	i->uid = c->uid;
	i->gid = c->gid;
	i->idle_ms = (now - c->last_msg_ns) / NKV_VFU_MS;
	i->negotiated = c->negotiated;
	i->enabled = c->ctrl && (nkv_tgt_ctrl_reg_read(c->ctrl, NKV_REG_CSTS, 4) & NKV_CSTS_RDY);
	i->failed = c->ctrl ? nkv_tgt_ctrl_failed(c->ctrl) : NULL;
	i->dma_maps = c->nmaps;
	i->dma_bytes = c->mapped;
	nkv_vfu_conn_qsum(c, i);
}

int nkv_vfu_conn_control(struct nkv_vfu_conn *c)
{
	struct nkv_vfu_server *s = c->s;
	uint64_t v;
	uint32_t ctl;

	(void)!read(c->kick_fd, &v, sizeof(v));
	c->kicked = 0;
	pthread_mutex_lock(&s->lock);
	ctl = c->ctl;
	c->ctl = 0;
	if (ctl & NKV_VFU_CTL_SNAP) {
		nkv_vfu_conn_snap(c, &c->snap);
		c->snap_done = c->snap_req;
		pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	if ((ctl & NKV_VFU_CTL_EVENTS) && c->ctrl)
		nkv_tgt_ctrl_ns_events(c->ctrl);
	if (ctl & NKV_VFU_CTL_SETTINGS) {
		v = nkv_vfu_poll_ns(s);
		c->poller.interval_ns = v ? v : NKV_TGT_POLL_INTERVAL_NS;
	}
	if (!(ctl & NKV_VFU_CTL_CLOSE))
		return 0;
	c->end_reason = "closed_by_rpc";
	return -ECONNABORTED;
}

static struct nkv_vfu_conn *nkv_vfu_conn_find(struct nkv_vfu_server *s, uint16_t id)
{
	struct nkv_vfu_conn *c;

	for (c = s->conns; c && c->id != id; c = c->next)
		;
	return c;
}

/* Until every asked connection answered or the deadline passed (under
 * s->lock, which the wait gives up). */
static void nkv_vfu_conns_wait(struct nkv_vfu_server *s, struct nkv_vfu_conn_info *out,
			       const uint32_t *seq, uint32_t n, uint32_t wait_ms)
{
	struct timespec dl;
	struct nkv_vfu_conn *c;
	uint32_t i;

	clock_gettime(CLOCK_REALTIME, &dl);	/* s->cond's clock */
	dl.tv_sec += wait_ms / 1000;
	dl.tv_nsec += (long)(wait_ms % 1000) * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	for (;;) {
		for (i = 0; i < n; i++) {
			c = nkv_vfu_conn_find(s, out[i].id);
			if (c && (int32_t)(c->snap_done - seq[i]) < 0)
				break;
		}
		if (i == n || pthread_cond_timedwait(&s->cond, &s->lock, &dl) == ETIMEDOUT)
			return;
	}
}

int nkv_vfu_server_conns(struct nkv_vfu_server *s, struct nkv_vfu_conn_info *out,
			 uint32_t max, uint32_t wait_ms)
{
	uint32_t seq[1024], n = 0, total = 0, i;
	uint64_t now = nkv_vfu_now_ns();
	struct nkv_vfu_conn *c;

	if (max > 1024)
		max = 1024;
	pthread_mutex_lock(&s->lock);
	for (c = s->conns; c; c = c->next, total++) {
		if (n == max)
			continue;
		memset(&out[n], 0, sizeof(out[n]));
		out[n].id = c->id;
		out[n].age_ms = (now - c->opened_ns) / NKV_VFU_MS;
		out[n].has_cred = c->has_cred;	/* set at accept, never changed */
		out[n].pid = c->pid;
		out[n].uid = c->uid;
		out[n].gid = c->gid;
		seq[n++] = ++c->snap_req;
		nkv_vfu_conn_ask(c, NKV_VFU_CTL_SNAP);
	}
	nkv_vfu_conns_wait(s, out, seq, n, wait_ms);
	for (i = 0; i < n; i++) {
		c = nkv_vfu_conn_find(s, out[i].id);
		if (c && (int32_t)(c->snap_done - seq[i]) >= 0)
			out[i] = c->snap;
	}
	pthread_mutex_unlock(&s->lock);
	return (int)total;
}

void nkv_vfu_server_ns_changed(void *server)
{
	struct nkv_vfu_server *s = server;
	struct nkv_vfu_conn *c;

	pthread_mutex_lock(&s->lock);
	for (c = s->conns; c; c = c->next)
		nkv_vfu_conn_ask(c, NKV_VFU_CTL_EVENTS);
	pthread_mutex_unlock(&s->lock);
}

int nkv_vfu_server_close_conn(struct nkv_vfu_server *s, uint16_t id)
{
	struct nkv_vfu_conn *c;

	pthread_mutex_lock(&s->lock);
	c = nkv_vfu_conn_find(s, id);
	if (c)
		nkv_vfu_conn_ask(c, NKV_VFU_CTL_CLOSE);
	pthread_mutex_unlock(&s->lock);
	if (c)
		nkv_vfu_log(s, NKV_VFU_LOG_INFO, "event=conn_close_asked conn=%u by=rpc", id);
	return c ? 0 : -ENOENT;
}

void nkv_vfu_server_live_get(struct nkv_vfu_server *s, struct nkv_vfu_server_live *l)
{
	const struct nkv_vfu_server_opts *o = &s->o;

	pthread_mutex_lock(&s->lock);
	l->handshake_ms = o->handshake_ms ? o->handshake_ms : NKV_VFU_HANDSHAKE_MS;
	l->idle_ms = o->idle_ms ? o->idle_ms : NKV_VFU_IDLE_MS;
	l->msg_ms = o->msg_ms ? o->msg_ms : NKV_VFU_MSG_MS;
	l->max_conns = o->max_conns > 0 ? o->max_conns : 16;
	l->poll_interval_ns = o->poll_interval_ns ? o->poll_interval_ns : NKV_TGT_POLL_INTERVAL_NS;
	l->log_level = o->log_level;
	pthread_mutex_unlock(&s->lock);
}

/* Connections read these without the lock (vfu.h's nkv_vfu_ms, log.c,
 * nkv_vfu_poll_ns): atomic stores, under the lock for the other
 * writers and max_conns' reader (accept). */
int nkv_vfu_server_live_set(struct nkv_vfu_server *s, const struct nkv_vfu_server_live *l)
{
	struct nkv_vfu_server_opts *o = &s->o;
	struct nkv_vfu_conn *c;

	if (l->max_conns < 0 || l->log_level < NKV_VFU_LOG_ERROR || l->log_level > NKV_VFU_LOG_DEBUG)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	__atomic_store_n(&o->handshake_ms, l->handshake_ms, __ATOMIC_RELAXED);
	__atomic_store_n(&o->idle_ms, l->idle_ms, __ATOMIC_RELAXED);
	__atomic_store_n(&o->msg_ms, l->msg_ms, __ATOMIC_RELAXED);
	o->max_conns = l->max_conns;
	__atomic_store_n(&o->poll_interval_ns, l->poll_interval_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&o->log_level, l->log_level, __ATOMIC_RELAXED);
	/* A sleeping connection rereads its interval now, not after the
	 * old (maybe long) one; the time limits are checked at each wake. */
	for (c = s->conns; c; c = c->next)
		nkv_vfu_conn_ask(c, NKV_VFU_CTL_SETTINGS);
	pthread_mutex_unlock(&s->lock);
	return 0;
}
