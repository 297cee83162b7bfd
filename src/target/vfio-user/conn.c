/* SPDX-License-Identifier: MIT */
/*
 * conn.c - one connection: its controller instance and BAR0 memfd, and
 * the thread that both polls the controller and answers the client.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include "target/vfio-user/vfu.h"

struct nkv_tgt_ctrl_opts nkv_vfu_ctrl_opts(const struct nkv_vfu_server_opts *o, uint16_t cntlid)
{
	struct nkv_tgt_ctrl_opts co = o->ctrl;

	co.size = sizeof(co);
	co.cntlid = cntlid;
	return co;
}

int nkv_vfu_ctrl_new(struct nkv_vfu_conn *c)
{
	struct nkv_tgt_ctrl_opts co = nkv_vfu_ctrl_opts(&c->s->o, c->id);

	memset(c->bar, 0, c->bar0.size);
	c->ctrl = nkv_tgt_ctrl_create(c->s->o.ss, c->dma,
				      (volatile uint32_t *)(c->bar + c->bar0.db_offset), &co);
	if (!c->ctrl)
		return -ENOMEM;
	nkv_tgt_ctrl_set_bus_master(c->ctrl, nkv_vfu_command(c) & NKV_PCI_CMD_MASTER);
	nkv_tgt_ctrl_set_xfer(c->ctrl, nkv_vfu_dma_xfer, c);
	if (c->has_cred)
		nkv_tgt_ctrl_set_peer(c->ctrl, c->uid, c->gid);
	c->failed_logged = NULL;
	return 0;
}

static int nkv_vfu_conn_setup(struct nkv_vfu_conn *c)
{
	struct nkv_tgt_ctrl_opts co = nkv_vfu_ctrl_opts(&c->s->o, c->id);
	int rc;

	c->bar_fd = -1;
	c->max_xfer = NKV_VFU_MAX_XFER;
	c->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);	/* control.c */
	if (c->kick_fd < 0)
		return -errno;
	/* BAR0 as the controller lays it out (start checked the options). */
	rc = nkv_tgt_ctrl_layout(&co, &c->bar0);
	if (rc)
		return rc;
	c->dma = nkv_dma_create();
	if (!c->dma)
		return -ENOMEM;
	c->bar_fd = memfd_create("nkv-bar0", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (c->bar_fd < 0 || ftruncate(c->bar_fd, (off_t)c->bar0.size) < 0)
		return -errno;
	/* The client maps this fd: it must not be able to shrink it under
	 * our own mapping either (the same SIGBUS, the other way round). */
	fcntl(c->bar_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	c->bar = mmap(NULL, c->bar0.size, PROT_READ | PROT_WRITE, MAP_SHARED, c->bar_fd, 0);
	if (c->bar == MAP_FAILED) {
		c->bar = NULL;
		return -errno;
	}
	nkv_vfu_cfg_init(c);
	return nkv_vfu_ctrl_new(c);
}

/* Controller first (it finishes or fails in-flight commands, which may
 * still point into DMA memory), then the memory. */
static void nkv_vfu_conn_teardown(struct nkv_vfu_conn *c)
{
	uint32_t i;

	c->dma_dead = c->dma_dead ? c->dma_dead : -ECONNRESET;	/* no more messages */
	if (c->ctrl)
		nkv_tgt_ctrl_destroy(c->ctrl);
	for (i = 0; i < c->nheld; i++)
		nkv_vfu_msg_free(&c->held[i]);
	for (i = 0; i < c->nmaps; i++) {
		nkv_dma_unmap(c->dma, c->maps[i].iova, c->maps[i].len);
		munmap(c->maps[i].ptr, c->maps[i].len);
	}
	free(c->maps);
	if (c->dma)
		nkv_dma_destroy(c->dma);
	if (c->bar)
		munmap(c->bar, c->bar0.size);
	if (c->bar_fd >= 0)
		close(c->bar_fd);
	if (c->kick_fd >= 0)
		close(c->kick_fd);
	close(c->fd);
	free(c->rbuf);
}

/*
 * Wait for the socket (and, while asleep, for a backend completion) at
 * most *to. Returns ppoll's result for the socket entry, or -errno of the
 * ppoll itself (read before anything else can overwrite errno).
 */
static int nkv_vfu_conn_wait(struct nkv_vfu_conn *c, struct pollfd *p,
			     const struct timespec *to, int sleep)
{
	static const struct timespec zero = { 0, 0 };
	struct pollfd fds[4] = { *p, { .fd = -1, .events = POLLIN },
				 { .fd = c->s->stop_fd, .events = POLLIN },
				 { .fd = c->kick_fd, .events = POLLIN } };
	int n, armed = 0;

	/* No controller (a failed reset): nothing to wake for but messages. */
	if (sleep && c->ctrl) {
		armed = nkv_tgt_ctrl_sleep_begin(c->ctrl);
		sleep = armed;
		if (armed)
			fds[1].fd = nkv_tgt_ctrl_wake_fd(c->ctrl);
	}
	if (sleep)
		__atomic_add_fetch(&c->s->sleeps, 1, __ATOMIC_RELAXED);
	n = ppoll(fds, 4, sleep ? to : &zero, NULL);
	if (n < 0)
		n = -errno;
	c->kicked = n > 0 && (fds[3].revents & POLLIN);
	if (armed)
		nkv_tgt_ctrl_sleep_end(c->ctrl);
	p->revents = fds[0].revents;
	return n < 0 ? n : !!fds[0].revents;
}

/*
 * How long an idle connection sleeps: the poller's interval while its
 * controller is ready. A controller that is not ready can only be given
 * work by a message (register writes included) or a backend completion,
 * and both wake the ppoll, so it sleeps until its next time limit.
 */
static struct timespec nkv_vfu_sleep_for(const struct nkv_vfu_conn *c)
{
	const struct nkv_vfu_server_opts *o = &c->s->o;
	uint64_t ns = nkv_tgt_poller_sleep_ns(&c->poller, c->ctrl), now, end;

	if (!ns) {
		now = nkv_vfu_now_ns();
		end = c->negotiated ? c->last_msg_ns + nkv_vfu_ms(&o->idle_ms, NKV_VFU_IDLE_MS)
				    : c->opened_ns + nkv_vfu_ms(&o->handshake_ms, NKV_VFU_HANDSHAKE_MS);
		/* 1 ms past the limit, so the wake-up finds it passed. */
		ns = (end > now ? end - now : 0) + NKV_VFU_MS;
	}
	return (struct timespec){ (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
}

/* Why a connection ended: the client's doing (info) or ours (warn, and
 * counted as dropped). rc 0 is a server stop. */
static void nkv_vfu_conn_end(struct nkv_vfu_conn *c, int rc)
{
	struct nkv_vfu_server *s = c->s;
	int by_client = rc == -ECONNRESET || rc == -EPIPE;

	if (!rc || rc == -ECANCELED)
		return;		/* the server is stopping */
	nkv_vfu_log(s, by_client ? NKV_VFU_LOG_INFO : NKV_VFU_LOG_WARN,
		    "event=conn_end conn=%u reason=%s", c->id,
		    c->end_reason ? c->end_reason :
		    rc == -ECONNRESET ? "client_closed" : rc == -EPIPE ? "hangup" : strerror(-rc));
	if (by_client)
		return;
	pthread_mutex_lock(&s->lock);
	s->st.dropped++;
	pthread_mutex_unlock(&s->lock);
}

/* A connection that never says VERSION, or whose controller stays
 * disabled with no message, holds one of max_conns: past its limit it
 * ends (-ETIMEDOUT, with end_reason set). */
static int nkv_vfu_conn_expired(struct nkv_vfu_conn *c)
{
	const struct nkv_vfu_server_opts *o = &c->s->o;
	uint64_t now = nkv_vfu_now_ns();

	if (!c->negotiated) {
		if (now - c->opened_ns < nkv_vfu_ms(&o->handshake_ms, NKV_VFU_HANDSHAKE_MS))
			return 0;
		c->end_reason = "handshake_timeout";
		return -ETIMEDOUT;
	}
	if (now - c->last_msg_ns < nkv_vfu_ms(&o->idle_ms, NKV_VFU_IDLE_MS))
		return 0;
	if (c->ctrl && (nkv_tgt_ctrl_reg_read(c->ctrl, NKV_REG_CSTS, 4) & NKV_CSTS_RDY))
		return 0;
	c->end_reason = "idle_timeout_controller_disabled";
	return -ETIMEDOUT;
}

/* A connection's busy ticks into the server's total (stats). */
static void nkv_vfu_busy_flush(struct nkv_vfu_conn *c)
{
	__atomic_add_fetch(&c->s->busy_ticks, nkv_tgt_poller_take_busy(&c->poller),
			   __ATOMIC_RELAXED);
}

/*
 * One thread per connection: poll the controller, check the socket, sleep
 * when idle, as the poller says (poller.h): the socket is looked at only
 * now and then while spinning, and a sleep is woken early by a message or
 * a backend completion.
 */
static int nkv_vfu_conn_loop(struct nkv_vfu_conn *c)
{
	struct nkv_vfu_server *s = c->s;
	struct nkv_tgt_poller *pl = &c->poller;

	nkv_tgt_poller_init(pl, nkv_vfu_poll_ns(s));
	/* Short poll intervals mean it: no 50 us default timer slack. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		struct timespec to;
		int n, sleep;

		nkv_tgt_poller_pass(pl, c->ctrl);
		if (c->ctrl && nkv_tgt_ctrl_failed(c->ctrl) != c->failed_logged)
			nkv_vfu_log_failed(c);
		if (c->dma_dead)	/* logged by nkv_vfu_conn_end() */
			return c->dma_dead;
		if (c->nheld) {	/* requests that came during a DMA message */
			int rc = nkv_vfu_handle_one(c);

			nkv_tgt_poller_aside(pl);
			if (rc)
				return rc == -ECANCELED ? 0 : rc;
			continue;
		}
		if (c->ctrl && nkv_tgt_ctrl_lost_memory(c->ctrl)) {
			/* Logged and counted as dropped by nkv_vfu_conn_end(). */
			c->end_reason = "client_memory_vanished(SIGBUS_caught:truncated_or_hole_punched_dma_fd)";
			return -EFAULT;
		}
		n = nkv_tgt_poller_next(pl, c->ctrl);
		if (n == NKV_TGT_POLL_AGAIN)
			continue;
		sleep = n == NKV_TGT_POLL_SLEEP;
		nkv_vfu_busy_flush(c);
		if (sleep)
			to = nkv_vfu_sleep_for(c);
		n = nkv_vfu_conn_wait(c, &p, &to, sleep);
		if (c->kicked && nkv_vfu_conn_control(c))
			return -ECONNABORTED;	/* logged by nkv_vfu_conn_end() */
		/* A signal for an embedding program is not the client's doing. */
		if (n == -EINTR || n == 0) {
			n = nkv_vfu_conn_expired(c);
			if (n)
				return n;
			continue;
		}
		if (n < 0)
			return n;
		nkv_tgt_poller_woken(pl);
		if (p.revents & POLLIN) {
			int rc = nkv_vfu_handle_one(c);

			if (rc == -ECANCELED)
				return 0;
			if (rc)
				return rc;
		} else if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) {
			return -EPIPE;
		}
	}
	return 0;
}

/*
 * SCHED_IDLE takes no privilege; a failure (a seccomp filter, say) leaves
 * the thread as it was, which still works, so it is logged, not fatal.
 */
static void nkv_vfu_conn_sched(struct nkv_vfu_conn *c)
{
	struct sched_param sp = { .sched_priority = 0 };
	int rc;

	if (c->s->o.poll_sched != NKV_VFU_SCHED_IDLE)
		return;
	rc = pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
	if (rc)
		nkv_vfu_log(c->s, NKV_VFU_LOG_WARN, "event=sched_idle_failed conn=%u errno=%d",
			    c->id, rc);
}

void *nkv_vfu_conn_main(void *arg)
{
	struct nkv_vfu_conn *c = arg;
	struct nkv_vfu_server *s = c->s;
	int rc;

	if (c->has_cred)
		nkv_vfu_log(s, NKV_VFU_LOG_INFO, "event=conn_open conn=%u pid=%d uid=%u gid=%u",
			    c->id, (int)c->pid, (unsigned)c->uid, (unsigned)c->gid);
	else
		nkv_vfu_log(s, NKV_VFU_LOG_INFO, "event=conn_open conn=%u", c->id);
	nkv_vfu_conn_sched(c);
	rc = nkv_vfu_conn_setup(c);
	if (rc) {
		nkv_vfu_log(s, NKV_VFU_LOG_ERROR, "event=conn_setup_failed conn=%u errno=%d", c->id, -rc);
		pthread_mutex_lock(&s->lock);
		s->st.failed++;
		pthread_mutex_unlock(&s->lock);
	} else {
		nkv_vfu_conn_link(c);
		nkv_vfu_conn_end(c, nkv_vfu_conn_loop(c));
		nkv_vfu_conn_unlink(c);
		nkv_vfu_busy_flush(c);
	}
	nkv_vfu_conn_teardown(c);
	nkv_vfu_log(s, NKV_VFU_LOG_INFO, "event=conn_closed conn=%u log_suppressed=%llu", c->id,
		    (unsigned long long)c->log_dropped_total);
	free(c);
	pthread_mutex_lock(&s->lock);
	s->nconns--;
	s->st.closed++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);	/* nothing touches s after this */
	return NULL;
}
