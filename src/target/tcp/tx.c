/* SPDX-License-Identifier: MIT */
/*
 * tx.c - a connection's send queue. PDUs leave in the order they were
 * queued (a command's C2HData before its CapsuleResp), with non-blocking
 * writes: a host that stops reading fills its socket and then only its
 * own queue; the poll thread goes on serving the others, and sends the
 * rest when the socket says it has room (EPOLLOUT). A value goes out
 * straight from its command's buffer, the header and digests around it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "target/tcp/tcp.h"

struct nkv_tcp_tx *nkv_tcp_tx_new(void)
{
	return calloc(1, sizeof(struct nkv_tcp_tx));
}

/* Wait for room to send (on) or not; a connection ending with a TermReq
 * reads nothing more, so it stops asking to be told about input, else a
 * host that keeps sending would wake the poll thread for nothing. */
static void nkv_tcp_tx_want_out(struct nkv_tcp_conn *c, int on)
{
	struct epoll_event ev = { .events = (c->closing ? 0 : EPOLLIN) | (on ? EPOLLOUT : 0),
				  .data.ptr = c };

	if (c->want_out == on)
		return;
	c->want_out = on;
	epoll_ctl(c->s->ep, EPOLL_CTL_MOD, c->fd, &ev);
}

void nkv_tcp_tx_queue(struct nkv_tcp_conn *c, struct nkv_tcp_tx *t)
{
	t->next = NULL;
	if (c->txq_tail)
		c->txq_tail->next = t;
	else
		c->txq = t;
	c->txq_tail = t;
}

/* The parts of t not sent yet, as iovecs. */
static int nkv_tcp_tx_iov(const struct nkv_tcp_tx *t, struct iovec *iov)
{
	uint64_t skip = t->sent;
	const void *base[3] = { t->hdr, t->data, t->ddgst };
	uint64_t len[3] = { t->hdr_len, t->data_len, t->dd_len };
	int i, n = 0;

	for (i = 0; i < 3; i++) {
		if (skip >= len[i]) {
			skip -= len[i];
			continue;
		}
		iov[n].iov_base = (uint8_t *)(uintptr_t)base[i] + skip;
		iov[n++].iov_len = len[i] - skip;
		skip = 0;
	}
	return n;
}

static void nkv_tcp_tx_done(struct nkv_tcp_conn *c, struct nkv_tcp_tx *t)
{
	c->txq = t->next;
	if (!c->txq)
		c->txq_tail = NULL;
	if (t->release)
		nkv_tcp_io_release(t->release);
	free(t);
}

/* Up to NKV_TCP_TX_BATCH queued PDUs in one sendmsg: a burst of small
 * completions (C2HData + CapsuleResp each) costs a call, not two each. */
#define NKV_TCP_TX_BATCH 16

/* Account n bytes sent against the queue's head items; 1 when a TermReq
 * went out whole (the connection ends). */
static int nkv_tcp_tx_sent(struct nkv_tcp_conn *c, uint64_t n)
{
	struct nkv_tcp_tx *t;

	while ((t = c->txq) && n) {
		uint64_t left = (uint64_t)t->hdr_len + t->data_len + t->dd_len - t->sent;
		int close_after = t->close_after;

		if (n < left) {
			t->sent += n;
			return 0;
		}
		n -= left;
		nkv_tcp_tx_done(c, t);
		if (close_after)
			return 1;
	}
	return 0;
}

int nkv_tcp_tx_flush(struct nkv_tcp_conn *c)
{
	struct iovec iov[3 * NKV_TCP_TX_BATCH];
	struct nkv_tcp_tx *t;
	ssize_t n;
	int k, niov;

	while (c->txq) {
		struct msghdr m = { .msg_iov = iov };

		niov = 0;
		for (t = c->txq, k = 0; t && k < NKV_TCP_TX_BATCH; t = t->next, k++) {
			niov += nkv_tcp_tx_iov(t, iov + niov);
			if (t->close_after)
				break;	/* nothing after a TermReq */
		}
		m.msg_iovlen = (size_t)niov;
		n = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			nkv_tcp_tx_want_out(c, 1);
			return 0;
		}
		if (n < 0)
			return -1;
		if (nkv_tcp_tx_sent(c, (uint64_t)n))
			return -1;	/* the TermReq is out: the connection ends */
	}
	nkv_tcp_tx_want_out(c, 0);
	return 0;
}

/* A connection ending: what is queued goes nowhere, its commands free. */
void nkv_tcp_tx_drop(struct nkv_tcp_conn *c)
{
	while (c->txq)
		nkv_tcp_tx_done(c, c->txq);
}
