/* SPDX-License-Identifier: MIT */
/*
 * listen.c - the server: bind and listen, the accept thread, start and
 * stop, statistics, and serving one already connected fd.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "target/core/ns.h"
#include "target/vfio-user/vfu.h"

/* A client we accepted but cannot serve (no memory, no thread): closed,
 * logged and counted, never silently. Called with s->lock held. */
static void nkv_vfu_accept_failed(struct nkv_vfu_server *s, int fd, const char *why, int err)
{
	s->st.failed++;
	pthread_mutex_unlock(&s->lock);
	nkv_vfu_log(s, NKV_VFU_LOG_ERROR, "event=conn_failed reason=%s errno=%d", why, err);
	if (fd >= 0)
		close(fd);
}

/* Who is at the other end: its uid and gid are its tenant (access
 * rules, owners); as the kernel saw them at connect. */
static void nkv_vfu_peer_cred(struct nkv_vfu_conn *c)
{
	struct ucred uc;
	socklen_t l = sizeof(uc);

	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &uc, &l) || l != sizeof(uc))
		return;
	c->has_cred = 1;
	c->pid = uc.pid;
	c->uid = uc.uid;
	c->gid = uc.gid;
}

static void nkv_vfu_accept_one(struct nkv_vfu_server *s)
{
	struct nkv_vfu_conn *c;
	pthread_attr_t at;
	pthread_t t;
	int fd, rc, max;

	fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0) {
		rc = errno;
		if (rc == EAGAIN || rc == EINTR || rc == ECONNABORTED)
			return;
		/* Out of fds or memory: the client stays queued; do not spin. */
		pthread_mutex_lock(&s->lock);
		nkv_vfu_accept_failed(s, -1, "accept", rc);
		usleep(10000);
		return;
	}
	pthread_mutex_lock(&s->lock);
	max = s->o.max_conns > 0 ? s->o.max_conns : 16;	/* the control side may change it */
	if (s->nconns >= (uint32_t)max) {
		s->st.refused++;
		pthread_mutex_unlock(&s->lock);
		nkv_vfu_log(s, NKV_VFU_LOG_WARN, "event=conn_refused reason=max_conns max=%d", max);
		close(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		nkv_vfu_accept_failed(s, fd, "no_memory", ENOMEM);
		return;
	}
	c->s = s;
	c->fd = fd;
	nkv_vfu_peer_cred(c);
	c->id = ++s->next_id;
	if (!c->id)
		c->id = ++s->next_id;	/* cntlid 0 is avoided */
	c->opened_ns = c->last_msg_ns = c->log_refill_ns = nkv_vfu_now_ns();
	c->log_tokens = NKV_VFU_LOG_BURST;
	/* The connection thread frees c when it ends, which can be before
	 * pthread_create returns here: nothing reads c after it starts (it
	 * logs its own conn_open, so the log never shows a close first). */
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &at, nkv_vfu_conn_main, c);
	if (rc) {
		pthread_attr_destroy(&at);
		free(c);
		nkv_vfu_accept_failed(s, fd, "thread_create", rc);
		return;
	}
	pthread_attr_destroy(&at);
	s->nconns++;
	s->st.accepted++;
	pthread_mutex_unlock(&s->lock);
}

static void *nkv_vfu_accept_main(void *arg)
{
	struct nkv_vfu_server *s = arg;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		struct pollfd p[2] = { { .fd = s->lfd, .events = POLLIN },
				       { .fd = s->stop_fd, .events = POLLIN } };

		/* The stop eventfd ends the wait at once. */
		if (poll(p, 2, 50) > 0 && (p[0].revents & POLLIN))
			nkv_vfu_accept_one(s);
	}
	return NULL;
}

/* Under the path's lock: a socket file at path was left by a target that
 * died (a live one would hold the lock), and is replaced; anything else
 * there is not ours to replace. */
static int nkv_vfu_reclaim(struct nkv_vfu_server *s)
{
	struct stat st;

	if (lstat(s->path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -ENOTSOCK;
	/* stale_pid: the target that died holding it, when its lock says */
	nkv_vfu_log(s, NKV_VFU_LOG_WARN, "event=socket_reclaimed socket=%s lock=%s stale_pid=%d "
		    "reason=no_live_holder", s->path, s->plock->path, (int)s->plock->stale);
	return 0;
}

/* Who may connect (opts.socket_mode, socket_gid), set on the bound name
 * before listen: no client ever meets other permissions. */
static int nkv_vfu_sock_perm(const struct nkv_vfu_server *s, const char *name)
{
	if (s->o.socket_mode && chmod(name, s->o.socket_mode & 0777))
		return -errno;
	if (s->o.socket_gid_set && chown(name, (uid_t)-1, s->o.socket_gid))
		return -errno;
	return 0;
}

/*
 * Bind and listen on a temporary name, then rename it over path: the
 * socket file appears only once it accepts connections (a client that
 * waits for the file never sees ECONNREFUSED), with its permissions set,
 * and a stale socket at path is replaced in one step. Called under the
 * path's lock.
 */
static int nkv_vfu_bind_listen(struct nkv_vfu_server *s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char tmp[sizeof(sa.sun_path)];
	const char *path = s->path;
	int n = snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid()), e;

	e = nkv_vfu_reclaim(s);
	if (e)
		return e;
	if (n < 0 || (size_t)n >= sizeof(tmp))
		snprintf(tmp, sizeof(tmp), "%s", path);	/* no room: bind in place */
	strcpy(sa.sun_path, tmp);
	unlink(tmp);
	if (bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	e = nkv_vfu_sock_perm(s, tmp);
	if (!e && (listen(s->lfd, 16) < 0 || (strcmp(tmp, path) && rename(tmp, path) < 0)))
		e = -errno;
	if (e)
		unlink(tmp);
	return e;
}

/* Would a connection's controller take these options? */
static int nkv_vfu_ctrl_ok(const struct nkv_vfu_server_opts *o)
{
	struct nkv_tgt_ctrl_opts co = nkv_vfu_ctrl_opts(o, 0);
	struct nkv_tgt_bar0_layout l;

	return !nkv_tgt_ctrl_layout(&co, &l);
}

/* The listening line: the socket and every limit a client meets, the
 * defaults filled in, so a log says what the target ran with. */
static void nkv_vfu_log_listening(struct nkv_vfu_server *s)
{
	struct nkv_tgt_ctrl_opts given = nkv_vfu_ctrl_opts(&s->o, 0), co;
	const struct nkv_vfu_server_opts *o = &s->o;
	struct stat st = { 0 };

	nkv_tgt_ctrl_opts_resolve(&given, &co);	/* checked at start */
	if (!co.mdts)
		co.mdts = nkv_subsys_mdts(o->ss);
	(void)stat(s->path, &st);	/* who may connect, as it is */
	nkv_vfu_log(s, NKV_VFU_LOG_INFO, "event=listening socket=%s socket_mode=%04o socket_uid=%u "
		    "socket_gid=%u sparse_mmap=%d max_conns=%d "
		    "queue_depth=%u max_queue_pairs=%u max_xfer=%llu cap_to_ms=%u doorbell_stride=%u "
		    "poll_interval_ns=%llu poll_sched=%s handshake_timeout_ms=%u idle_timeout_ms=%u "
		    "msg_timeout_ms=%u max_dma_maps=%u max_dma_bytes=%llu trace=%d",
		    s->path, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
		    (unsigned)st.st_gid, !o->no_sparse_mmap, o->max_conns > 0 ? o->max_conns : 16,
		    co.mqes, co.max_ioq, (unsigned long long)NKV_PAGE_SIZE << co.mdts, co.to * 500u,
		    4u << co.dstrd,
		    (unsigned long long)(o->poll_interval_ns ? o->poll_interval_ns
							     : NKV_TGT_POLL_INTERVAL_NS),
		    o->poll_sched == NKV_VFU_SCHED_IDLE ? "idle" : "normal",
		    o->handshake_ms ? o->handshake_ms : NKV_VFU_HANDSHAKE_MS,
		    o->idle_ms ? o->idle_ms : NKV_VFU_IDLE_MS, o->msg_ms ? o->msg_ms : NKV_VFU_MSG_MS,
		    nkv_vfu_max_maps(s),
		    (unsigned long long)(o->max_dma_bytes ? o->max_dma_bytes : NKV_VFU_DMA_BYTES),
		    co.trace);
}

int nkv_vfu_server_start(const struct nkv_vfu_server_opts *opts, struct nkv_vfu_server **out)
{
	struct sockaddr_un sa;
	struct nkv_vfu_server *s = NULL;
	int rc = 0;

	*out = NULL;
	if (!opts || opts->size < sizeof(*opts))
		return -EINVAL;
	if (!opts->socket_path || !opts->ss || !nkv_vfu_ctrl_ok(opts) ||
	    (unsigned)opts->poll_sched > NKV_VFU_SCHED_IDLE || opts->socket_mode > 0777)
		rc = -EINVAL;
	else if (strlen(opts->socket_path) >= sizeof(sa.sun_path))
		rc = -ENAMETOOLONG;
	else if (!(s = calloc(1, sizeof(*s))))
		rc = -ENOMEM;
	if (rc) {
		nkv_vfu_lock_release(opts->lock);	/* ours from the call on */
		return rc;
	}
	s->o = *opts;
	s->o.lock = NULL;
	s->plock = opts->lock;
	nkv_tgt_clock_init(&s->clock);
	strcpy(s->path, opts->socket_path);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->lfd < 0 || s->stop_fd < 0) {
		rc = -errno;
		goto fail;
	}
	if (!s->plock) {
		pid_t holder;

		rc = nkv_vfu_lock_take(s->path, &s->plock, &holder);
		if (rc)
			goto fail;
	}
	rc = nkv_vfu_bind_listen(s);
	if (!rc)
		rc = nkv_subsys_ns_listen(s->o.ss, nkv_vfu_server_ns_changed, s);
	if (rc)
		goto fail;
	if (pthread_create(&s->accept_thr, NULL, nkv_vfu_accept_main, s)) {
		rc = -EAGAIN;
		nkv_subsys_ns_unlisten(s->o.ss, nkv_vfu_server_ns_changed, s);
		unlink(s->path);
		goto fail;
	}
	nkv_vfu_log_listening(s);
	*out = s;
	return 0;
fail:
	nkv_vfu_lock_release(s->plock);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return rc;
}

void nkv_vfu_server_stop(struct nkv_vfu_server *s)
{
	if (!s)
		return;
	nkv_subsys_ns_unlisten(s->o.ss, nkv_vfu_server_ns_changed, s);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	/* Never read: stays readable, so every wait of every connection
	 * (asleep, or mid-message with a slow client) ends at once. */
	(void)!write(s->stop_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
	pthread_join(s->accept_thr, NULL);
	close(s->lfd);
	/* The path is ours while we hold its lock: the socket goes first. */
	unlink(s->path);
	nkv_vfu_lock_release(s->plock);
	/* Connection threads see stop within one poll interval. */
	pthread_mutex_lock(&s->lock);
	while (s->nconns)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	nkv_vfu_log(s, NKV_VFU_LOG_INFO,
		    "event=stopped accepted=%llu closed=%llu refused=%llu failed=%llu dropped=%llu",
		    (unsigned long long)s->st.accepted, (unsigned long long)s->st.closed,
		    (unsigned long long)s->st.refused, (unsigned long long)s->st.failed,
		    (unsigned long long)s->st.dropped);
	close(s->stop_fd);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void nkv_vfu_server_stats(struct nkv_vfu_server *s, struct nkv_vfu_server_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->st;
	st->conns = s->nconns;
	st->sleeps = __atomic_load_n(&s->sleeps, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->lock);
	st->busy_ns = nkv_tgt_clock_ns(&s->clock, __atomic_load_n(&s->busy_ticks, __ATOMIC_RELAXED));
}

int nkv_vfu_serve_fd(const struct nkv_vfu_server_opts *opts, int fd)
{
	struct nkv_vfu_server *s;
	struct nkv_vfu_conn *c;

	if (!opts || opts->size < sizeof(*opts) || !opts->ss || fd < 0 || !nkv_vfu_ctrl_ok(opts)) {
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	c = calloc(1, sizeof(*c));
	if (!s || !c) {
		free(s);
		free(c);
		close(fd);
		return -ENOMEM;
	}
	s->o = *opts;
	s->lfd = -1;
	s->stop_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->nconns = 1;		/* the connection below, as if accepted */
	s->st.accepted = 1;
	c->s = s;
	c->fd = fd;
	c->id = 1;
	c->opened_ns = c->last_msg_ns = c->log_refill_ns = nkv_vfu_now_ns();
	c->log_tokens = NKV_VFU_LOG_BURST;
	nkv_vfu_conn_main(c);	/* frees c, closes fd */
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return 0;
}
