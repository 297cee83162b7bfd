/* SPDX-License-Identifier: MIT */
/*
 * control.c - the NVMe/TCP server's control side (server.h): the
 * connections listed and one ended, for the control socket's
 * connection_list and connection_close. Only the poll thread touches
 * connections, so a caller posts its request (one at a time, under the
 * control lock), kicks the thread through an eventfd and waits for the
 * answer; the thread serves it between two passes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "target/core/poller.h"
#include "target/tcp/tcp.h"

enum { NKV_TCP_CTL_NONE, NKV_TCP_CTL_LIST, NKV_TCP_CTL_CLOSE };

static void nkv_tcp_ctl_info(const struct nkv_tcp_conn *c, uint64_t now,
			     struct nkv_tcp_conn_info *i)
{
	struct nkv_tgt_ctrl *ctrl = c->assoc ? c->assoc->ctrl : NULL;

	memset(i, 0, sizeof(*i));
	i->id = c->id;
	snprintf(i->peer, sizeof(i->peer), "%s", c->peer);
	i->age_ms = (now - c->t_open_ns) / 1000000u;
	i->connected = ctrl != NULL;
	i->qid = c->qid;
	i->cntlid = ctrl ? nkv_tgt_ctrl_cntlid(ctrl) : 0;
	snprintf(i->hostnqn, sizeof(i->hostnqn), "%s", ctrl ? nkv_tgt_ctrl_hostnqn(ctrl) : "");
	i->inflight = c->inflight;
	i->hdgst = c->neg.hdgst;
	i->ddgst = c->neg.ddgst;
}

/* The posted request, on the poll thread. */
void nkv_tcp_ctl_serve(struct nkv_tcp_server *s)
{
	uint64_t now = nkv_tgt_now_ns(), v;
	struct nkv_tcp_conn *c;
	uint32_t n = 0;
	int rc = -ENOENT;

	while (read(s->ctl_fd, &v, sizeof(v)) > 0)
		;
	pthread_mutex_lock(&s->ctl_mu);
	if (s->ctl_req == NKV_TCP_CTL_NONE) {
		pthread_mutex_unlock(&s->ctl_mu);
		return;
	}
	for (c = s->conns; c; c = c->next) {
		if (c->dead || c->broken)
			continue;
		if (s->ctl_req == NKV_TCP_CTL_LIST && n < s->ctl_max)
			nkv_tcp_ctl_info(c, now, &s->ctl_out[n]);
		n++;
		if (s->ctl_req == NKV_TCP_CTL_CLOSE && c->id == s->ctl_id) {
			nkv_tcp_log(s, NKV_TCP_WARN, "event=tcp_conn_closed_by_rpc conn=%u peer=%s",
				    c->id, c->peer);
			nkv_tcp_conn_break(c, "closed_by_rpc");
			rc = 0;
			break;
		}
	}
	s->ctl_rc = s->ctl_req == NKV_TCP_CTL_LIST ? (int)n : rc;
	s->ctl_req = NKV_TCP_CTL_NONE;
	pthread_cond_broadcast(&s->ctl_cv);
	pthread_mutex_unlock(&s->ctl_mu);
}

/* Post req, kick, wait up to wait_ms: its result, or -ETIMEDOUT (the
 * request withdrawn). One caller at a time (ctl_busy). */
static int nkv_tcp_ctl_call(struct nkv_tcp_server *s, int req, uint32_t id,
			    struct nkv_tcp_conn_info *out, uint32_t max, uint32_t wait_ms)
{
	struct timespec ts;
	uint64_t one = 1;
	int rc = 0;

	if (!s->started)
		return req == NKV_TCP_CTL_LIST ? 0 : -ENOENT;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += wait_ms / 1000;
	ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->ctl_mu);
	while (s->ctl_busy && rc == 0)
		rc = pthread_cond_timedwait(&s->ctl_cv, &s->ctl_mu, &ts);
	if (rc) {
		pthread_mutex_unlock(&s->ctl_mu);
		return -ETIMEDOUT;
	}
	s->ctl_busy = 1;
	s->ctl_req = req;
	s->ctl_id = id;
	s->ctl_out = out;
	s->ctl_max = max;
	(void)!write(s->ctl_fd, &one, sizeof(one));
	while (s->ctl_req != NKV_TCP_CTL_NONE && rc == 0)
		rc = pthread_cond_timedwait(&s->ctl_cv, &s->ctl_mu, &ts);
	if (s->ctl_req != NKV_TCP_CTL_NONE) {	/* not served: withdrawn */
		s->ctl_req = NKV_TCP_CTL_NONE;
		s->ctl_rc = -ETIMEDOUT;
	}
	rc = s->ctl_rc;
	s->ctl_busy = 0;
	pthread_cond_broadcast(&s->ctl_cv);
	pthread_mutex_unlock(&s->ctl_mu);
	return rc;
}

int nkv_tcp_server_conns(struct nkv_tcp_server *s, struct nkv_tcp_conn_info *out, uint32_t max,
			 uint32_t wait_ms)
{
	return nkv_tcp_ctl_call(s, NKV_TCP_CTL_LIST, 0, out, max, wait_ms);
}

int nkv_tcp_server_close_conn(struct nkv_tcp_server *s, uint32_t id, uint32_t wait_ms)
{
	return nkv_tcp_ctl_call(s, NKV_TCP_CTL_CLOSE, id, NULL, 0, wait_ms);
}
