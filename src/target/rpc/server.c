/* SPDX-License-Identifier: MIT */
/*
 * server.c - the control socket (rpc.h): one thread that listens,
 * accepts, reads requests and writes responses for every connection,
 * with non-blocking sockets and one poll, so that no client can hold it.
 *
 * Framing: a stream of JSON values, each request one object, parsed as
 * it arrives by json-c's streaming tokener (json_tokener_parse_ex): no
 * delimiter is needed, and whitespace (a newline) between requests is
 * skipped. Each response is one line: compact JSON and "\n".
 *
 * Bounds, each a JSON-RPC error and the connection closed: a request
 * past max_request bytes (-32600), bytes that are not JSON (-32700: the
 * rest of the stream cannot be trusted), a request begun but not whole
 * within request_ms (-32600: a slow sender). A connection past max_conns
 * gets -32000 and is closed at once; one silent for idle_ms is closed.
 */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "target/core/backend.h"
#include "target/core/pidlock.h"
#include "target/core/poller.h"	/* nkv_tgt_now_ns */
#include "target/rpc/rpc.h"

#define NKV_RPC_READ_CHUNK 65536
#define NKV_RPC_MAX_OUT (16u << 20)	/* responses a client leaves unread */
#define NKV_RPC_TICK_MS 100		/* how often time limits are checked */
#define NKV_RPC_MS 1000000ull

struct nkv_rpc_conn {
	int fd;
	uint32_t id;
	json_tokener *tok;
	size_t req_bytes;	/* of the request being read */
	uint64_t req_start_ns;	/* its first byte; 0: between requests */
	uint64_t last_ns;	/* the last byte in or out */
	char *out;		/* responses not yet sent */
	size_t out_len, out_off;
	int closing;		/* read no more; close once out is sent */
};

struct nkv_rpc_lock {
	int fd;			/* flocked */
	char path[4096];	/* PATH.lock */
};

struct nkv_rpc_server {
	struct nkv_rpc_server_opts o;
	char path[108];
	struct nkv_rpc_lock *plock;	/* the path's, held from start to stop */
	int lfd, stop_fd;
	pthread_t thr;
	struct nkv_rpc_conn *conns;	/* o.max_conns of them; the server thread's */
	struct pollfd *pfds;
	uint32_t nconns, next_id;
	uint64_t listen_again_ns;	/* out of fds: accept again from then */
	uint64_t refused_logged_ns;
	char rbuf[NKV_RPC_READ_CHUNK];
	pthread_mutex_t lock;		/* st */
	struct nkv_rpc_server_stats st;
};

static void nkv_rpc_count(struct nkv_rpc_server *s, uint64_t *field)
{
	pthread_mutex_lock(&s->lock);
	(*field)++;
	pthread_mutex_unlock(&s->lock);
}

/* Send what out holds, as much as the socket takes now. 0, or -errno. */
static int nkv_rpc_flush(struct nkv_rpc_conn *c, uint64_t now)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		c->out_off += (size_t)n;
		c->last_ns = now;
	}
	c->out_off = c->out_len = 0;
	return 0;
}

/* Queue one response line. 0, or -ENOBUFS for a client that leaves
 * NKV_RPC_MAX_OUT unread, -ENOMEM. */
static int nkv_rpc_queue(struct nkv_rpc_conn *c, struct json_object *resp)
{
	const char *txt = json_object_to_json_string_ext(resp, JSON_C_TO_STRING_PLAIN |
							 JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t len = strlen(txt);
	char *out;

	if (c->out_len - c->out_off + len + 1 > NKV_RPC_MAX_OUT)
		return -ENOBUFS;
	out = realloc(c->out, c->out_len + len + 1);
	if (!out)
		return -ENOMEM;
	memcpy(out + c->out_len, txt, len);
	out[c->out_len + len] = '\n';
	c->out = out;
	c->out_len += len + 1;
	return 0;
}

/* The connection's stream cannot go on: one error response (id null),
 * then close once it is sent. */
static void nkv_rpc_fail(struct nkv_rpc_server *s, struct nkv_rpc_conn *c, int code,
			 const char *reason, const char *msg)
{
	struct json_object *r = nkv_rpc_error_response(NULL, code, msg);

	(void)nkv_rpc_queue(c, r);
	json_object_put(r);
	c->closing = 1;
	pthread_mutex_lock(&s->lock);
	s->st.errors++;
	s->st.dropped++;
	pthread_mutex_unlock(&s->lock);
	nkv_be_log(NKV_BE_LOG_WARN, "event=rpc_conn_end rpc_conn=%u reason=%s", c->id, reason);
}

/* Run one request and queue its response (none for a notification). */
static void nkv_rpc_handle(struct nkv_rpc_server *s, struct nkv_rpc_conn *c,
			   struct json_object *req)
{
	struct json_object *resp, *e;
	int rc;

	nkv_rpc_count(s, &s->st.requests);	/* before: stats_get counts itself */
	resp = nkv_rpc_run(req, s->o.ctx, s);
	if (!resp)
		return;
	if (json_object_object_get_ex(resp, "error", &e))
		nkv_rpc_count(s, &s->st.errors);
	rc = nkv_rpc_queue(c, resp);
	json_object_put(resp);
	if (rc) {
		c->closing = 1;
		c->out_len = c->out_off = 0;
		nkv_rpc_count(s, &s->st.dropped);
		nkv_be_log(NKV_BE_LOG_WARN, "event=rpc_conn_end rpc_conn=%u reason=%s", c->id,
			   rc == -ENOBUFS ? "responses_unread" : "no_memory");
	}
}

/* Bytes in: whole requests run, a partial one kept in the tokener. */
static void nkv_rpc_feed(struct nkv_rpc_server *s, struct nkv_rpc_conn *c, const char *buf,
			 size_t len, uint64_t now)
{
	char msg[160];
	size_t off = 0;

	while (off < len && !c->closing) {
		struct json_object *obj;
		enum json_tokener_error err;

		if (!c->req_bytes) {	/* between requests: whitespace is skipped */
			while (off < len && isspace((unsigned char)buf[off]))
				off++;
			if (off == len)
				return;
			c->req_start_ns = now;
		}
		obj = json_tokener_parse_ex(c->tok, buf + off, (int)(len - off));
		err = json_tokener_get_error(c->tok);
		c->req_bytes += json_tokener_get_parse_end(c->tok);
		off += json_tokener_get_parse_end(c->tok);
		if (c->req_bytes > s->o.max_request) {
			json_object_put(obj);
			snprintf(msg, sizeof(msg), "request larger than %u bytes: connection closed",
				 s->o.max_request);
			nkv_rpc_fail(s, c, NKV_RPC_INVALID_REQUEST, "request_too_large", msg);
			return;
		}
		if (err == json_tokener_continue)
			return;
		if (err != json_tokener_success) {
			snprintf(msg, sizeof(msg), "parse error at byte %zu of the request: %s: "
				 "connection closed", c->req_bytes, json_tokener_error_desc(err));
			nkv_rpc_fail(s, c, NKV_RPC_PARSE_ERROR, "parse_error", msg);
			return;
		}
		nkv_rpc_handle(s, c, obj);
		json_object_put(obj);
		json_tokener_reset(c->tok);
		c->req_bytes = 0;
		c->req_start_ns = 0;
	}
}

/* Read what the socket has. 0, or -1: close now. */
static int nkv_rpc_read(struct nkv_rpc_server *s, struct nkv_rpc_conn *c, uint64_t now)
{
	ssize_t n = recv(c->fd, s->rbuf, sizeof(s->rbuf), MSG_DONTWAIT);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	if (!n) {		/* the client is done: answer what it sent, then close */
		c->closing = 1;
		return 0;
	}
	c->last_ns = now;
	nkv_rpc_feed(s, c, s->rbuf, (size_t)n, now);
	return 0;
}

/* The time limits (rpc.h). 0, or -1: close now. */
static int nkv_rpc_expired(struct nkv_rpc_server *s, struct nkv_rpc_conn *c, uint64_t now)
{
	char msg[128];

	if (c->req_start_ns && !c->closing &&
	    now - c->req_start_ns > s->o.request_ms * NKV_RPC_MS) {
		snprintf(msg, sizeof(msg), "request not whole within %u ms of its first byte: "
			 "connection closed", s->o.request_ms);
		nkv_rpc_fail(s, c, NKV_RPC_INVALID_REQUEST, "request_timeout", msg);
		return 0;	/* the error goes out first */
	}
	if (now - c->last_ns <= s->o.idle_ms * NKV_RPC_MS)
		return 0;
	if (!c->closing)
		nkv_be_log(NKV_BE_LOG_INFO, "event=rpc_conn_end rpc_conn=%u reason=idle_timeout",
			   c->id);
	return -1;
}

static void nkv_rpc_conn_close(struct nkv_rpc_server *s, uint32_t i)
{
	struct nkv_rpc_conn *c = &s->conns[i];

	close(c->fd);
	json_tokener_free(c->tok);
	free(c->out);
	s->conns[i] = s->conns[--s->nconns];
	pthread_mutex_lock(&s->lock);
	s->st.conns = s->nconns;
	pthread_mutex_unlock(&s->lock);
}

/* One connection after poll: 0 keeps it. */
static int nkv_rpc_conn_serve(struct nkv_rpc_server *s, struct nkv_rpc_conn *c, short rev,
			      uint64_t now)
{
	if ((rev & POLLIN) && !c->closing && nkv_rpc_read(s, c, now))
		return -1;
	if ((rev & (POLLHUP | POLLERR | POLLNVAL)) && !(rev & POLLIN))
		return -1;
	if (nkv_rpc_flush(c, now))
		return -1;
	if (c->closing && c->out_len == c->out_off)
		return -1;
	return nkv_rpc_expired(s, c, now);
}

/* Past max_conns: told so in one line (best effort), closed. */
static void nkv_rpc_refuse(struct nkv_rpc_server *s, int fd, uint64_t now)
{
	struct json_object *r;
	const char *txt;
	char msg[96];

	snprintf(msg, sizeof(msg), "too many connections (max %u): try again later",
		 s->o.max_conns);
	r = nkv_rpc_error_response(NULL, NKV_RPC_ERR_BUSY, msg);
	txt = json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN);
	(void)!send(fd, txt, strlen(txt), MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)!send(fd, "\n", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	json_object_put(r);
	close(fd);
	nkv_rpc_count(s, &s->st.refused);
	if (now - s->refused_logged_ns > 1000 * NKV_RPC_MS) {	/* a line a second at most */
		s->refused_logged_ns = now;
		nkv_be_log(NKV_BE_LOG_WARN, "event=rpc_conn_refused reason=max_conns max=%u",
			   s->o.max_conns);
	}
}

static void nkv_rpc_accept(struct nkv_rpc_server *s, uint64_t now)
{
	struct nkv_rpc_conn *c;
	int fd;

	for (;;) {
		fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOMEM ||
			       errno == ENOBUFS)) {
			/* The client stays queued; poll would say so at once again. */
			nkv_be_log(NKV_BE_LOG_ERROR, "event=rpc_accept_failed errno=%d", errno);
			s->listen_again_ns = now + NKV_RPC_TICK_MS * NKV_RPC_MS;
		}
		if (fd < 0)
			return;
		if (s->nconns == s->o.max_conns) {
			nkv_rpc_refuse(s, fd, now);
			continue;
		}
		c = &s->conns[s->nconns];
		memset(c, 0, sizeof(*c));
		c->tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
		if (!c->tok) {
			close(fd);
			continue;
		}
		json_tokener_set_flags(c->tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
		c->fd = fd;
		c->id = ++s->next_id;
		c->last_ns = now;
		pthread_mutex_lock(&s->lock);
		s->st.conns = ++s->nconns;
		s->st.accepted++;
		pthread_mutex_unlock(&s->lock);
		nkv_be_log(NKV_BE_LOG_DEBUG, "event=rpc_conn_open rpc_conn=%u", c->id);
	}
}

/* The poll set: stop, listen (unless out of fds), then each connection,
 * reading only while it has no responses waiting (back-pressure). */
static nfds_t nkv_rpc_pollset(struct nkv_rpc_server *s, uint64_t now)
{
	uint32_t i;

	s->pfds[0] = (struct pollfd){ .fd = s->stop_fd, .events = POLLIN };
	s->pfds[1] = (struct pollfd){ .fd = now < s->listen_again_ns ? -1 : s->lfd,
				      .events = POLLIN };
	for (i = 0; i < s->nconns; i++) {
		struct nkv_rpc_conn *c = &s->conns[i];

		s->pfds[2 + i] = (struct pollfd){ .fd = c->fd,
			.events = c->out_len > c->out_off ? POLLOUT : c->closing ? 0 : POLLIN };
	}
	return 2 + s->nconns;
}

static void *nkv_rpc_main(void *arg)
{
	struct nkv_rpc_server *s = arg;

	for (;;) {
		uint64_t now = nkv_tgt_now_ns();
		nfds_t n = nkv_rpc_pollset(s, now);
		uint32_t i;

		if (poll(s->pfds, n, NKV_RPC_TICK_MS) < 0 && errno != EINTR)
			break;
		if (s->pfds[0].revents)
			break;
		now = nkv_tgt_now_ns();
		/* Backwards: a closed one's slot takes the last, already served. */
		for (i = s->nconns; i-- > 0;)
			if (nkv_rpc_conn_serve(s, &s->conns[i], s->pfds[2 + i].revents, now))
				nkv_rpc_conn_close(s, i);
		if (s->pfds[1].revents & POLLIN)
			nkv_rpc_accept(s, now);
	}
	return NULL;
}

/* Under the path's lock: a socket there was left by a dead target and
 * is replaced; anything else is not ours. */
static int nkv_rpc_reclaim(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -ENOTSOCK;
	nkv_be_log(NKV_BE_LOG_WARN, "event=socket_reclaimed socket=%s reason=no_live_holder", path);
	return 0;
}

/* Bind a temporary name, set its mode, listen, rename it over path: the
 * socket appears only once it accepts, with its permissions. */
static int nkv_rpc_bind(struct nkv_rpc_server *s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s.%d.tmp", s->path, (int)getpid());
	int e = nkv_rpc_reclaim(s->path);

	if (e)
		return e;
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s->path);
	unlink(sa.sun_path);
	if (bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	if (chmod(sa.sun_path, s->o.mode) || listen(s->lfd, 128) ||
	    (strcmp(sa.sun_path, s->path) && rename(sa.sun_path, s->path)))
		e = -errno;
	if (e)
		unlink(sa.sun_path);
	return e;
}

static void nkv_rpc_free(struct nkv_rpc_server *s)
{
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	nkv_rpc_lock_release(s->plock);
	pthread_mutex_destroy(&s->lock);
	free(s->conns);
	free(s->pfds);
	free(s);
}

static void nkv_rpc_defaults(struct nkv_rpc_server_opts *o)
{
	o->mode = o->mode ? o->mode : 0600;
	o->max_request = o->max_request ? o->max_request : NKV_RPC_MAX_REQUEST;
	o->max_conns = o->max_conns ? o->max_conns : NKV_RPC_MAX_CONNS;
	o->idle_ms = o->idle_ms ? o->idle_ms : NKV_RPC_IDLE_MS;
	o->request_ms = o->request_ms ? o->request_ms : NKV_RPC_REQUEST_MS;
}

int nkv_rpc_lock_take(const char *path, struct nkv_rpc_lock **out, pid_t *holder)
{
	struct nkv_rpc_lock *l = calloc(1, sizeof(*l));
	pid_t stale;
	int n;

	*out = NULL;
	*holder = 0;
	if (!l)
		return -ENOMEM;
	n = snprintf(l->path, sizeof(l->path), "%s.lock", path);
	if (n < 0 || (size_t)n >= sizeof(l->path)) {
		free(l);
		return -ENAMETOOLONG;
	}
	l->fd = nkv_pidlock_take(l->path, holder, &stale);
	if (l->fd < 0) {
		n = l->fd;
		free(l);
		return n == -EWOULDBLOCK ? -EADDRINUSE : n;
	}
	*out = l;
	return 0;
}

void nkv_rpc_lock_release(struct nkv_rpc_lock *l)
{
	if (!l)
		return;
	nkv_pidlock_release(l->path, l->fd);
	free(l);
}

/* The lock, the socket, the thread (s filled by start). */
static int nkv_rpc_open(struct nkv_rpc_server *s, pid_t *holder)
{
	int rc = s->plock ? 0 : nkv_rpc_lock_take(s->path, &s->plock, holder);

	if (rc)
		return rc;
	s->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->lfd < 0 || s->stop_fd < 0)
		return -errno;
	rc = nkv_rpc_bind(s);
	if (rc)
		return rc;
	if (pthread_create(&s->thr, NULL, nkv_rpc_main, s)) {
		unlink(s->path);
		return -EAGAIN;
	}
	return 0;
}

int nkv_rpc_server_start(const struct nkv_rpc_server_opts *opts, struct nkv_rpc_server **out,
			 pid_t *holder)
{
	struct nkv_rpc_server *s;
	int rc;

	*out = NULL;
	*holder = 0;
	rc = !opts || opts->size < sizeof(*opts) || !opts->path || opts->mode > 0777 ? -EINVAL
	     : strlen(opts->path) >= sizeof(s->path) ? -ENAMETOOLONG : 0;
	s = rc ? NULL : calloc(1, sizeof(*s));
	if (!s) {
		if (opts && opts->size >= sizeof(*opts))
			nkv_rpc_lock_release(opts->lock);	/* ours from the call on */
		return rc ? rc : -ENOMEM;
	}
	s->o = *opts;
	s->plock = opts->lock;
	s->o.lock = NULL;
	nkv_rpc_defaults(&s->o);
	strcpy(s->path, opts->path);
	s->lfd = s->stop_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	s->conns = calloc(s->o.max_conns, sizeof(*s->conns));
	s->pfds = calloc(s->o.max_conns + 2, sizeof(*s->pfds));
	rc = s->conns && s->pfds ? nkv_rpc_open(s, holder) : -ENOMEM;
	if (rc) {
		nkv_rpc_free(s);
		return rc;
	}
	nkv_be_log(NKV_BE_LOG_INFO, "event=rpc_listening socket=%s socket_mode=%04o max_conns=%u "
		   "max_request=%u idle_timeout_ms=%u request_timeout_ms=%u", s->path, s->o.mode,
		   s->o.max_conns, s->o.max_request, s->o.idle_ms, s->o.request_ms);
	*out = s;
	return 0;
}

void nkv_rpc_server_stop(struct nkv_rpc_server *s)
{
	if (!s)
		return;
	(void)!write(s->stop_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
	pthread_join(s->thr, NULL);
	while (s->nconns)
		nkv_rpc_conn_close(s, s->nconns - 1);
	/* The path is ours while we hold its lock: the socket goes first. */
	unlink(s->path);
	nkv_be_log(NKV_BE_LOG_INFO, "event=rpc_stopped accepted=%llu refused=%llu requests=%llu "
		   "errors=%llu dropped=%llu", (unsigned long long)s->st.accepted,
		   (unsigned long long)s->st.refused, (unsigned long long)s->st.requests,
		   (unsigned long long)s->st.errors, (unsigned long long)s->st.dropped);
	nkv_rpc_free(s);
}

void nkv_rpc_server_stats(struct nkv_rpc_server *s, struct nkv_rpc_server_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->st;
	pthread_mutex_unlock(&s->lock);
}

uint64_t nkv_rpc_raise_nofile(uint64_t need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 0;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || need < rl.rlim_max ? need
										 : rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur;
}
