/* SPDX-License-Identifier: MIT */
/*
 * listen.c - the NVMe/TCP server: listeners, accepting within each host's
 * budget, associations (a controller, its admin and I/O connections) and
 * the one poll thread that serves all of them.
 *
 * The loop: poll every controller (backend completions become C2HData and
 * CapsuleResps), end associations whose host went silent past KATO and
 * connections that never sent ICReq, then sleep in epoll on every socket
 * and every controller's wake fd (nkv_tgt_ctrl_sleep_begin/_end, so a
 * backend's completion wakes it), handle what is ready, end the
 * connections marked broken and free the dead ones nobody references.
 */
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "nvmf/fabrics.h"
#include "target/core/ns.h"
#include "target/core/poller.h"
#include "target/tcp/tcp.h"

/* epoll tags: a connection is its pointer (aligned); the rest tag low bits. */
#define NKV_TCP_TAG_LIS 1u
#define NKV_TCP_TAG_WAKE 2u
#define NKV_TCP_TAG_STOP 3u
#define NKV_TCP_TAG_AER (NKV_TCP_TAG_STOP | 4u)	/* tag 3, payload 1 */
#define NKV_TCP_TAG_CTL (NKV_TCP_TAG_STOP | 8u)	/* tag 3, payload 2 */
#define NKV_TCP_IDLE_MS 100	/* longest sleep: keep alive and IC timers */

void nkv_tcp_log(struct nkv_tcp_server *s, int level, const char *fmt, ...)
{
	static const char *const lv[] = { "error", "warn", "info", "debug" };
	char line[512];
	struct timespec ts;
	va_list ap;
	int n;

	if (level > __atomic_load_n(&s->o.log_level, __ATOMIC_RELAXED))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(line, sizeof(line), "ts=%lld.%06ld level=%s ", (long long)ts.tv_sec,
		     ts.tv_nsec / 1000, lv[level & 3]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(s->o.log ? s->o.log : stderr, "%s\n", line);
	fflush(s->o.log ? s->o.log : stderr);
}

void nkv_tcp_server_log_level_set(struct nkv_tcp_server *s, int level)
{
	__atomic_store_n(&s->o.log_level, level, __ATOMIC_RELAXED);
}

/* Counters: the poll thread adds, nkv_tcp_server_stats() reads. */
void nkv_tcp_stat_add(uint64_t *ctr)
{
	__atomic_add_fetch(ctr, 1, __ATOMIC_RELAXED);
}

int nkv_tcp_server_create(const struct nkv_tcp_server_opts *o, struct nkv_tcp_server **out)
{
	struct nkv_tcp_server *s;

	if (!o || o->size < sizeof(*o) || !o->ss)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *o;
	if (!s->o.max_conns_per_host)
		s->o.max_conns_per_host = NKV_TCP_DEF_CONNS;
	if (!s->o.max_buf_per_conn)
		s->o.max_buf_per_conn = NKV_TCP_DEF_BUF;
	if (!s->o.ic_ms)
		s->o.ic_ms = NKV_TCP_DEF_IC_MS;
	/* A connection holds NKV_TCP_SLOTS commands: that is its queue's depth. */
	if (!s->o.ctrl.mqes || s->o.ctrl.mqes > NKV_TCP_SLOTS)
		s->o.ctrl.mqes = NKV_TCP_SLOTS;
	s->ep = epoll_create1(EPOLL_CLOEXEC);
	s->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->aer_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->ctl_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	pthread_mutex_init(&s->ctl_mu, NULL);
	pthread_cond_init(&s->ctl_cv, NULL);
	s->fab = nkv_tgt_fab_create(o->ss, &s->o.ctrl);
	if (s->ep < 0 || s->stop_fd < 0 || s->aer_fd < 0 || s->ctl_fd < 0 || !s->fab) {
		nkv_tcp_server_stop(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

static int nkv_tcp_bind(const char *addr, uint16_t port, int *fd_out, uint16_t *bound, int *fam)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_PASSIVE,
				  .ai_socktype = SOCK_STREAM }, *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char ps[8];
	int fd, one = 1, rc;

	snprintf(ps, sizeof(ps), "%u", port);
	if (getaddrinfo(addr, ps, &hints, &ai))
		return -EINVAL;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	*fam = ai->ai_family;
	rc = fd < 0 ? -errno : 0;
	if (!rc)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (!rc && (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128) ||
		    getsockname(fd, (struct sockaddr *)&ss, &sl)))
		rc = -errno;
	freeaddrinfo(ai);
	if (rc) {
		if (fd >= 0)
			close(fd);
		return rc;
	}
	*bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						: ((struct sockaddr_in *)&ss)->sin_port);
	*fd_out = fd;
	return 0;
}

int nkv_tcp_server_listen(struct nkv_tcp_server *s, const char *addr, uint16_t port,
			  uint16_t *bound)
{
	struct nkv_tcp_listener *l;
	struct nkv_tgt_port p = { 0 };
	struct epoll_event ev = { .events = EPOLLIN };
	int fam, rc;

	if (s->started || s->nlis == NKV_TCP_MAX_LISTEN)
		return -EBUSY;
	l = &s->lis[s->nlis];
	addr = addr ? addr : NKV_TCP_DEF_ADDR;
	rc = nkv_tcp_bind(addr, port, &l->fd, &l->port, &fam);
	if (rc)
		return rc;
	snprintf(l->addr, sizeof(l->addr), "%s", addr);
	p.portid = (uint16_t)(s->nlis + 1);
	p.adrfam = fam == AF_INET6 ? NKV_NVMF_ADRFAM_IPV6 : NKV_NVMF_ADRFAM_IPV4;
	snprintf(p.traddr, sizeof(p.traddr), "%s", addr);
	snprintf(p.trsvcid, sizeof(p.trsvcid), "%u", l->port);
	nkv_tgt_fab_add_port(s->fab, &p);
	ev.data.u64 = ((uint64_t)s->nlis << 2) | NKV_TCP_TAG_LIS;
	epoll_ctl(s->ep, EPOLL_CTL_ADD, l->fd, &ev);
	s->nlis++;
	if (bound)
		*bound = l->port;
	nkv_tcp_log(s, NKV_TCP_INFO, "event=tcp_listening addr=%s port=%u", addr, l->port);
	return 0;
}

static uint32_t nkv_tcp_host_conns(struct nkv_tcp_server *s, const char *host)
{
	struct nkv_tcp_conn *c;
	uint32_t n = 0;

	for (c = s->conns; c; c = c->next)
		if (!c->dead && !strcmp(c->host, host))
			n++;
	return n;
}

static void nkv_tcp_accept(struct nkv_tcp_server *s, struct nkv_tcp_listener *l)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct nkv_tcp_conn *c;
	int fd;

	while ((fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		c = nkv_tcp_conn_new(s, fd);
		if (!c) {
			close(fd);
			continue;
		}
		if (nkv_tcp_host_conns(s, c->host) >= s->o.max_conns_per_host) {
			nkv_tcp_log(s, NKV_TCP_WARN, "event=tcp_refused peer=%s reason=max_conns_per_host max=%u",
				    c->peer, s->o.max_conns_per_host);
			nkv_tcp_stat_add(&s->st.refused);
			nkv_tcp_conn_free(c);
			continue;
		}
		ev.data.ptr = c;
		epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev);
		c->next = s->conns;
		s->conns = c;
		__atomic_add_fetch(&s->st.conns, 1, __ATOMIC_RELAXED);
		nkv_tcp_stat_add(&s->st.accepted);
		nkv_tcp_log(s, NKV_TCP_INFO, "event=tcp_open conn=%u peer=%s port=%u", c->id, c->peer, l->port);
	}
}

int nkv_tcp_assoc_new(struct nkv_tcp_conn *c, struct nkv_tgt_ctrl *ctrl)
{
	struct nkv_tcp_server *s = c->s;
	struct nkv_tcp_assoc *a = calloc(1, sizeof(*a));
	struct epoll_event ev = { .events = EPOLLIN };

	if (!a)
		return -ENOMEM;
	a->ctrl = ctrl;
	a->conns = c;
	a->wake_fd = nkv_tgt_ctrl_wake_fd(ctrl);
	ev.data.u64 = (uint64_t)(uintptr_t)a | NKV_TCP_TAG_WAKE;
	epoll_ctl(s->ep, EPOLL_CTL_ADD, a->wake_fd, &ev);
	c->assoc = a;
	a->next = s->assocs;
	s->assocs = a;
	__atomic_add_fetch(&s->st.assocs, 1, __ATOMIC_RELAXED);
	return 0;
}

/* An I/O connection joins the association that holds ctrl. */
int nkv_tcp_assoc_join(struct nkv_tcp_conn *c, struct nkv_tgt_ctrl *ctrl)
{
	struct nkv_tcp_assoc *a;

	for (a = c->s->assocs; a && a->ctrl != ctrl; a = a->next)
		;
	if (!a)
		return -ENOENT;
	c->assoc = a;
	c->anext = a->conns->anext;	/* the admin connection stays first */
	a->conns->anext = c;
	return 0;
}

/* Close the socket; commands the core does not hold go now, the others
 * when it returns them (or when the controller goes). */
static void nkv_tcp_conn_close(struct nkv_tcp_conn *c, const char *why)
{
	uint32_t i;

	if (c->dead)
		return;
	nkv_tcp_log(c->s, NKV_TCP_INFO, "event=tcp_closed conn=%u peer=%s qid=%u why=%s", c->id, c->peer,
		    c->qid, why);
	c->dead = 1;
	epoll_ctl(c->s->ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	__atomic_sub_fetch(&c->s->st.conns, 1, __ATOMIC_RELAXED);
	nkv_tcp_tx_drop(c);
	for (i = 0; i < NKV_TCP_SLOTS; i++)
		if (c->slots[i].busy && !c->slots[i].in_core)
			nkv_tcp_io_release(&c->slots[i]);
}

/* End an association: every connection closed, the controller destroyed
 * (commands its backends still hold come back to nobody), then every
 * command of its connections freed. */
static void nkv_tcp_assoc_end(struct nkv_tcp_assoc *a, int level, const char *why)
{
	struct nkv_tcp_server *s = a->conns->s;
	struct nkv_tcp_assoc **pp;
	struct nkv_tcp_conn *c;
	uint32_t i;

	nkv_tcp_log(s, level, "event=tcp_assoc_end cntlid=%u hostnqn=%s why=%s",
		    nkv_tgt_ctrl_cntlid(a->ctrl), nkv_tgt_ctrl_hostnqn(a->ctrl), why);
	for (c = a->conns; c; c = c->anext)
		nkv_tcp_conn_close(c, why);
	epoll_ctl(s->ep, EPOLL_CTL_DEL, a->wake_fd, NULL);
	nkv_tgt_fab_disconnect(s->fab, a->ctrl, 0);
	for (c = a->conns; c; c = c->anext) {
		for (i = 0; i < NKV_TCP_SLOTS; i++)
			nkv_tcp_io_release(&c->slots[i]);
		c->assoc = NULL;
	}
	for (c = a->zombies; c; c = c->znext) {
		for (i = 0; i < NKV_TCP_SLOTS; i++)
			nkv_tcp_io_release(&c->slots[i]);
		c->zassoc = NULL;
	}
	for (pp = &s->assocs; *pp != a; pp = &(*pp)->next)
		;
	*pp = a->next;
	__atomic_sub_fetch(&s->st.assocs, 1, __ATOMIC_RELAXED);
	free(a);
}

void nkv_tcp_conn_end(struct nkv_tcp_conn *c, const char *why)
{
	struct nkv_tcp_assoc *a = c->assoc;
	struct nkv_tcp_conn **pp;

	if (c->dead)
		return;
	if (a && c == a->conns)
		return nkv_tcp_assoc_end(a, NKV_TCP_INFO, why);
	nkv_tcp_conn_close(c, why);
	if (!a)
		return;
	nkv_tgt_fab_disconnect(c->s->fab, a->ctrl, c->qid);
	for (pp = &a->conns; *pp != c; pp = &(*pp)->anext)
		;
	*pp = c->anext;
	c->assoc = NULL;
	/* Commands the core still holds come back through done(): the
	 * connection stays (dead) until they have, or its association ends. */
	if (c->inflight) {
		c->zassoc = a;
		c->znext = a->zombies;
		a->zombies = c;
	}
}

static void nkv_tcp_zombie_unlink(struct nkv_tcp_conn *c)
{
	struct nkv_tcp_conn **pp;

	if (!c->zassoc)
		return;
	for (pp = &c->zassoc->zombies; *pp != c; pp = &(*pp)->znext)
		;
	*pp = c->znext;
	c->zassoc = NULL;
}

/* Send what this pass queued, one flush per connection. Read on for a
 * connection that stopped at its byte budget with bytes read ahead:
 * epoll will not say so again (they left the socket already). */
static int nkv_tcp_flush_and_rx(struct nkv_tcp_server *s)
{
	struct nkv_tcp_conn *c;
	int work = 0;

	for (c = s->conns; c; c = c->next) {
		if (c->dead || c->broken)
			continue;
		if (c->rpos < c->rlen && !c->closing) {
			nkv_tcp_conn_readable(c);
			work++;
		}
		if (c->tx_dirty) {
			c->tx_dirty = 0;
			if (nkv_tcp_tx_flush(c))
				nkv_tcp_conn_break(c, "send_failed");
		}
	}
	return work;
}

static int nkv_tcp_poll_ctrls(struct nkv_tcp_server *s)
{
	struct nkv_tcp_assoc *a;
	int work = 0;

	for (a = s->assocs; a; a = a->next)
		work += nkv_tgt_ctrl_poll(a->ctrl);
	return work;
}

/* Associations past KATO, connections past the ICReq limit. */
static void nkv_tcp_timers(struct nkv_tcp_server *s)
{
	uint64_t now = nkv_tgt_now_ns();
	struct nkv_tcp_assoc *a, *an;
	struct nkv_tcp_conn *c;

	for (a = s->assocs; a; a = an) {
		an = a->next;
		if (nkv_tgt_ctrl_kato_expired(a->ctrl, now)) {
			nkv_tcp_stat_add(&s->st.kato_expired);
			nkv_tcp_assoc_end(a, NKV_TCP_WARN, "keep_alive_timeout");
		}
	}
	for (c = s->conns; c; c = c->next) {
		if (!c->dead && !c->ic_done && now - c->t_open_ns > s->o.ic_ms * 1000000ull)
			nkv_tcp_conn_break(c, "no_icreq");
		if (!c->dead && c->closing && now - c->t_close_ns > NKV_TCP_TERM_MS * 1000000ull)
			nkv_tcp_conn_break(c, "term_not_read");
	}
}

/* End what was marked broken; free the dead that nothing holds. */
static void nkv_tcp_reap(struct nkv_tcp_server *s)
{
	struct nkv_tcp_conn **pp = &s->conns, *c;

	for (c = s->conns; c; c = c->next)
		if (c->broken && !c->dead)
			nkv_tcp_conn_end(c, c->why);
	while ((c = *pp)) {
		if (c->dead && !c->inflight && !c->assoc) {
			*pp = c->next;
			nkv_tcp_zombie_unlink(c);
			nkv_tcp_conn_free(c);
		} else {
			pp = &c->next;
		}
	}
}

static void nkv_tcp_event(struct nkv_tcp_server *s, const struct epoll_event *ev)
{
	uint64_t tag = ev->data.u64 & 3u;
	struct nkv_tcp_conn *c;

	if (tag == NKV_TCP_TAG_LIS)
		return nkv_tcp_accept(s, &s->lis[ev->data.u64 >> 2]);
	if (tag)
		return;		/* a wake fd (drained by sleep_end) */
	c = ev->data.ptr;
	if (c->dead)
		return;
	if (ev->events & EPOLLOUT && nkv_tcp_tx_flush(c))
		nkv_tcp_conn_break(c, "send_failed");
	if (ev->events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		nkv_tcp_conn_readable(c);
	if (c->closing && !c->txq)
		nkv_tcp_conn_break(c, "terminated");
}

/* Sleep in epoll unless a controller has a completion waiting. */
static int nkv_tcp_wait(struct nkv_tcp_server *s, int work, struct epoll_event *evs, int max)
{
	struct nkv_tcp_assoc *a;
	int timeout = work ? 0 : NKV_TCP_IDLE_MS, n;

	for (a = s->assocs; a && timeout; a = a->next)
		if (!nkv_tgt_ctrl_sleep_begin(a->ctrl))
			timeout = 0;
	n = epoll_wait(s->ep, evs, max, timeout);
	if (timeout)
		for (a = s->assocs; a; a = a->next)
			nkv_tgt_ctrl_sleep_end(a->ctrl);
	return n;
}

int nkv_tcp_server_aer(struct nkv_tcp_server *s, uint32_t dw0)
{
	uint64_t none = 0, one = 1;

	if (!__atomic_compare_exchange_n(&s->aer_word, &none, (1ull << 32) | dw0, 0,
					 __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		return -EAGAIN;
	(void)!write(s->aer_fd, &one, sizeof(one));
	return 0;
}

/* The posted event, on the poll thread: one held AER of each controller. */
static void nkv_tcp_aer_deliver(struct nkv_tcp_server *s)
{
	uint64_t w = __atomic_exchange_n(&s->aer_word, 0, __ATOMIC_ACQUIRE), v;
	struct nkv_tcp_assoc *a;

	while (read(s->aer_fd, &v, sizeof(v)) > 0)
		;
	for (a = s->assocs; a; a = a->next) {
		if (w)
			nkv_tgt_ctrl_aer_event(a->ctrl, (uint32_t)w);
		/* A namespace change posted while another event held the
		 * word (-EAGAIN) is in the subsystem's record: look there. */
		nkv_tgt_ctrl_ns_events(a->ctrl);
	}
}

/* ns.h's listener: the change reaches each controller on the poll thread.
 * -EAGAIN is fine: the word still posted is delivered after the change
 * was recorded, and delivery looks at the record. */
static void nkv_tcp_server_ns_changed(void *server)
{
	(void)nkv_tcp_server_aer(server, NKV_AEN_NS_CHANGED);
}

static void *nkv_tcp_thread(void *arg)
{
	struct nkv_tcp_server *s = arg;
	struct epoll_event evs[64];
	uint64_t v;
	int n, i, stop = 0;

	while (!stop) {
		int work = nkv_tcp_poll_ctrls(s);

		work += nkv_tcp_flush_and_rx(s);
		nkv_tcp_timers(s);
		nkv_tcp_reap(s);
		n = nkv_tcp_wait(s, work, evs, 64);
		for (i = 0; i < n; i++) {
			if (evs[i].data.u64 == NKV_TCP_TAG_STOP)
				stop = 1;
			else if (evs[i].data.u64 == NKV_TCP_TAG_AER)
				nkv_tcp_aer_deliver(s);
			else if (evs[i].data.u64 == NKV_TCP_TAG_CTL)
				nkv_tcp_ctl_serve(s);
			else
				nkv_tcp_event(s, &evs[i]);
		}
		nkv_tcp_flush_and_rx(s);
		nkv_tcp_reap(s);
	}
	while (read(s->stop_fd, &v, sizeof(v)) > 0)
		;
	return NULL;
}

int nkv_tcp_server_start(struct nkv_tcp_server *s)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = NKV_TCP_TAG_STOP };
	struct epoll_event aev = { .events = EPOLLIN, .data.u64 = NKV_TCP_TAG_AER };
	struct epoll_event cev = { .events = EPOLLIN, .data.u64 = NKV_TCP_TAG_CTL };
	int rc;

	if (s->started || !s->nlis)
		return -EINVAL;
	epoll_ctl(s->ep, EPOLL_CTL_ADD, s->stop_fd, &ev);
	epoll_ctl(s->ep, EPOLL_CTL_ADD, s->aer_fd, &aev);
	epoll_ctl(s->ep, EPOLL_CTL_ADD, s->ctl_fd, &cev);
	rc = nkv_subsys_ns_listen(s->o.ss, nkv_tcp_server_ns_changed, s);
	if (rc)
		return rc;
	rc = pthread_create(&s->thr, NULL, nkv_tcp_thread, s);
	if (rc) {
		nkv_subsys_ns_unlisten(s->o.ss, nkv_tcp_server_ns_changed, s);
		return -rc;
	}
	s->started = 1;
	return 0;
}

void nkv_tcp_server_stop(struct nkv_tcp_server *s)
{
	struct nkv_tcp_conn *c;
	uint64_t one = 1;
	uint32_t i;

	if (!s)
		return;
	if (s->started) {
		nkv_subsys_ns_unlisten(s->o.ss, nkv_tcp_server_ns_changed, s);
		(void)!write(s->stop_fd, &one, sizeof(one));
		pthread_join(s->thr, NULL);
	}
	while (s->assocs)
		nkv_tcp_assoc_end(s->assocs, NKV_TCP_INFO, "target_stopping");
	while ((c = s->conns)) {
		s->conns = c->next;
		nkv_tcp_conn_close(c, "target_stopping");
		nkv_tcp_conn_free(c);
	}
	for (i = 0; i < s->nlis; i++)
		close(s->lis[i].fd);
	nkv_tgt_fab_destroy(s->fab);
	if (s->ep >= 0)
		close(s->ep);
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	if (s->aer_fd >= 0)
		close(s->aer_fd);
	if (s->ctl_fd >= 0)
		close(s->ctl_fd);
	pthread_cond_destroy(&s->ctl_cv);
	pthread_mutex_destroy(&s->ctl_mu);
	free(s);
}

void nkv_tcp_server_stats(struct nkv_tcp_server *s, struct nkv_tcp_server_stats *st)
{
	st->conns = __atomic_load_n(&s->st.conns, __ATOMIC_RELAXED);
	st->assocs = __atomic_load_n(&s->st.assocs, __ATOMIC_RELAXED);
	st->accepted = __atomic_load_n(&s->st.accepted, __ATOMIC_RELAXED);
	st->refused = __atomic_load_n(&s->st.refused, __ATOMIC_RELAXED);
	st->terminated = __atomic_load_n(&s->st.terminated, __ATOMIC_RELAXED);
	st->kato_expired = __atomic_load_n(&s->st.kato_expired, __ATOMIC_RELAXED);
	st->commands = __atomic_load_n(&s->st.commands, __ATOMIC_RELAXED);
}
