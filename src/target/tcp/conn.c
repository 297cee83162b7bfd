/* SPDX-License-Identifier: MIT */
/*
 * conn.c - one NVMe/TCP connection: the receive state machine and the
 * connection's own PDUs (ICReq/ICResp, TermReqs).
 *
 * Receiving is one state machine (common header, rest of the header and
 * its digest, padding, data, data digest) whose progress survives short
 * reads, with a byte budget per pass so that no host starves the poll
 * thread. Every header is checked by the codec (pdu.h) before anything
 * is read by its lengths; data goes straight to its place (a command's
 * in-capsule buffer, the R2T'd part of its transfer buffer), which the
 * command code chose after checking the header against the command.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "nvmf/fabrics.h"
#include "target/core/poller.h"
#include "target/tcp/tcp.h"

/* The peer's address and address:port, for the budget and the log. */
static void nkv_tcp_peer_name(struct nkv_tcp_conn *c)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char a[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (!getpeername(c->fd, (struct sockaddr *)&ss, &sl)) {
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)&ss;

			inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
			port = ntohs(in->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

			inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
			port = ntohs(in6->sin6_port);
		}
	}
	snprintf(c->host, sizeof(c->host), "%s", a);
	snprintf(c->peer, sizeof(c->peer), "%s:%d", a, port);
}

int nkv_tcp_conn_local(const struct nkv_tcp_conn *c, char *addr, size_t len, uint8_t *adrfam)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct in6_addr *a6;

	if (getsockname(c->fd, (struct sockaddr *)&ss, &sl))
		return -errno;
	if (ss.ss_family == AF_INET) {
		*adrfam = NKV_NVMF_ADRFAM_IPV4;
		return inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, addr,
				 (socklen_t)len) ? 0 : -errno;
	}
	if (ss.ss_family != AF_INET6)
		return -EAFNOSUPPORT;
	a6 = &((struct sockaddr_in6 *)&ss)->sin6_addr;
	if (IN6_IS_ADDR_V4MAPPED(a6)) {	/* an IPv4 host on a dual-stack :: */
		*adrfam = NKV_NVMF_ADRFAM_IPV4;
		return inet_ntop(AF_INET, &a6->s6_addr[12], addr, (socklen_t)len) ? 0 : -errno;
	}
	*adrfam = NKV_NVMF_ADRFAM_IPV6;
	return inet_ntop(AF_INET6, a6, addr, (socklen_t)len) ? 0 : -errno;
}

struct nkv_tcp_conn *nkv_tcp_conn_new(struct nkv_tcp_server *s, int fd)
{
	struct nkv_tcp_conn *c = calloc(1, sizeof(*c));
	int one = 1;
	uint32_t i;

	if (!c)
		return NULL;
	c->s = s;
	c->fd = fd;
	c->id = ++s->next_id;
	c->t_open_ns = nkv_tgt_now_ns();
	c->sqsize = 32;
	c->rbuf = malloc(NKV_TCP_RBUF);
	/* Before ICReq only ICReq is valid, and it has no data or digest. */
	c->neg.max_data = 0;
	for (i = 0; i < NKV_TCP_SLOTS; i++) {
		c->slots[i].conn = c;
		c->slots[i].ttag = (uint16_t)i;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	/* Small PDUs (responses, R2Ts) go out at once: latency over batching. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	nkv_tcp_peer_name(c);
	return c;
}

void nkv_tcp_conn_free(struct nkv_tcp_conn *c)
{
	uint32_t i;

	nkv_tcp_tx_drop(c);
	for (i = 0; i < NKV_TCP_SLOTS; i++)
		if (c->slots[i].busy)
			nkv_tcp_io_release(&c->slots[i]);
	if (c->fd >= 0)
		close(c->fd);
	free(c->spare);
	free(c->rbuf);
	free(c);
}

/* Mark the connection to be ended by the poll loop (never from inside a
 * callback of the core: the association's controller may go with it). */
void nkv_tcp_conn_break(struct nkv_tcp_conn *c, const char *why)
{
	if (!c->broken) {
		c->broken = 1;
		c->why = why;
	}
}

void nkv_tcp_conn_fatal(struct nkv_tcp_conn *c, const struct nkv_tcp_fault *f,
			const void *hdr, uint32_t len)
{
	struct nkv_tcp_tx *t;

	if (c->closing)
		return;
	c->closing = 1;
	c->t_close_ns = nkv_tgt_now_ns();
	c->want_out = -1;	/* re-arm epoll: output only from now on */
	nkv_tcp_stat_add(&c->s->st.terminated);
	nkv_tcp_log(c->s, NKV_TCP_WARN, "event=tcp_term conn=%u peer=%s fes=%u fei=%u why=%s",
		    c->id, c->peer, f->fes, f->fei, f->why);
	t = nkv_tcp_tx_new();
	if (!t) {
		nkv_tcp_conn_break(c, f->why);
		return;
	}
	t->hdr_len = nkv_tcp_term_build(t->hdr, NKV_TCP_C2H_TERM, f, hdr, len);
	t->close_after = 1;
	nkv_tcp_tx_queue(c, t);
	if (nkv_tcp_tx_flush(c))
		nkv_tcp_conn_break(c, f->why);
}

static void nkv_tcp_fatal(struct nkv_tcp_conn *c, uint16_t fes, uint32_t fei, const char *why)
{
	struct nkv_tcp_fault f = { fes, fei, why };

	nkv_tcp_conn_fatal(c, &f, c->hbuf, c->hgot);
}

/* ICReq: PFV 0, HPDA up to 31; digests as the host asks; one R2T at a
 * time per command whatever MAXR2T allows (always within it). */
static void nkv_tcp_icreq(struct nkv_tcp_conn *c)
{
	const struct nkv_tcp_icreq *q = (const void *)c->hbuf;
	struct nkv_tcp_icresp *r;
	struct nkv_tcp_tx *t;

	if (q->pfv != NKV_TCP_PFV)
		return nkv_tcp_fatal(c, NKV_TCP_FES_PARAM, 8, "icreq_pfv");
	if (q->hpda > 31)
		return nkv_tcp_fatal(c, NKV_TCP_FES_PARAM, 10, "icreq_hpda");
	t = nkv_tcp_tx_new();
	if (!t)
		return nkv_tcp_conn_break(c, "no_memory");
	r = (struct nkv_tcp_icresp *)t->hdr;
	nkv_tcp_ch_init(&r->ch, NKV_TCP_ICRESP, 0, sizeof(*r), 0, sizeof(*r));
	r->pfv = NKV_TCP_PFV;
	r->cpda = 0;
	r->dgst = q->dgst & (NKV_TCP_DGST_HDR | NKV_TCP_DGST_DATA);
	r->maxh2cdata = NKV_TCP_MAXH2CDATA;
	t->hdr_len = sizeof(*r);
	c->neg.hdgst = !!(r->dgst & NKV_TCP_DGST_HDR);
	c->neg.ddgst = !!(r->dgst & NKV_TCP_DGST_DATA);
	c->neg.align = 0;
	c->neg.max_data = NKV_TCP_MAXH2CDATA > NKV_TGT_ICD_IO ? NKV_TCP_MAXH2CDATA : NKV_TGT_ICD_IO;
	c->hpda_align = (q->hpda + 1u) * 4u;
	c->ic_done = 1;
	nkv_tcp_tx_queue(c, t);
	if (nkv_tcp_tx_flush(c))
		nkv_tcp_conn_break(c, "send_failed");
	nkv_tcp_log(c->s, NKV_TCP_INFO, "event=tcp_ic conn=%u peer=%s hdgst=%d ddgst=%d hpda=%u maxr2t=%u",
		    c->id, c->peer, c->neg.hdgst, c->neg.ddgst, q->hpda, q->maxr2t + 1);
}

/* One PDU is in: back to waiting for a common header. */
static void nkv_tcp_rx_reset(struct nkv_tcp_conn *c)
{
	c->rx = NKV_TCP_RX_CH;
	c->hgot = 0;
	c->dgot = 0;
	c->ddgot = 0;
	c->dst = NULL;
}

static void nkv_tcp_pdu_done(struct nkv_tcp_conn *c)
{
	uint8_t type = c->hbuf[0];

	nkv_tcp_rx_reset(c);
	if (type == NKV_TCP_CMD)
		nkv_tcp_cmd_capsule_done(c);
	else if (type == NKV_TCP_H2C_DATA)
		nkv_tcp_h2c_done(c);
}

/* The common header is in: is it a PDU this connection may get now? */
static void nkv_tcp_ch_in(struct nkv_tcp_conn *c)
{
	const struct nkv_tcp_ch *ch = (const void *)c->hbuf;
	struct nkv_tcp_fault f;

	if (nkv_tcp_ch_check(ch, NKV_TCP_AT_CTRL, &c->neg, &c->lay, &f))
		return nkv_tcp_conn_fatal(c, &f, c->hbuf, c->hgot);
	if (!c->ic_done != (ch->type == NKV_TCP_ICREQ))
		return nkv_tcp_fatal(c, NKV_TCP_FES_SEQUENCE, 0, "icreq_order");
	c->rx = NKV_TCP_RX_HDR;
}

/* The whole header (and its digest) is in. */
static void nkv_tcp_hdr_in(struct nkv_tcp_conn *c)
{
	const struct nkv_tcp_ch *ch = (const void *)c->hbuf;
	int rc = 0;

	if (c->lay.hd && !nkv_tcp_hdgst_ok(c->hbuf, c->lay.hlen))
		return nkv_tcp_fatal(c, NKV_TCP_FES_HDGST, 0, "header_digest");
	switch (ch->type) {
	case NKV_TCP_ICREQ:
		nkv_tcp_icreq(c);
		nkv_tcp_rx_reset(c);
		return;
	case NKV_TCP_H2C_TERM:
		nkv_tcp_log(c->s, NKV_TCP_WARN, "event=tcp_host_term conn=%u peer=%s fes=%u", c->id,
			    c->peer, ((const struct nkv_tcp_term *)c->hbuf)->fes);
		return nkv_tcp_conn_break(c, "host_terminated");
	case NKV_TCP_CMD:
		rc = nkv_tcp_cmd_begin(c, (const struct nkv_tcp_cmd *)c->hbuf);
		break;
	default:	/* H2CData: the only other type the codec lets through */
		rc = nkv_tcp_h2c_begin(c, (const struct nkv_tcp_data *)c->hbuf);
		break;
	}
	if (rc)
		return;
	if (!c->lay.pdo)
		return nkv_tcp_pdu_done(c);
	c->pad_left = c->lay.pdo - c->lay.hlen - c->lay.hd;
	c->dcrc = NKV_TCP_CRC_INIT;
	c->rx = c->pad_left ? NKV_TCP_RX_PAD : NKV_TCP_RX_DATA;
}

static void nkv_tcp_ddgst_in(struct nkv_tcp_conn *c)
{
	uint32_t d;

	memcpy(&d, c->ddbuf, sizeof(d));
	if (d != nkv_tcp_crc_final(c->dcrc))
		return nkv_tcp_fatal(c, NKV_TCP_FES_HDGST, 0, "data_digest");
	nkv_tcp_pdu_done(c);
}

/* Read up to want bytes into p. >0 read, 0 nothing now, -1 ended.
 * Small reads (headers, small data) come from a read-ahead buffer, so a
 * burst of capsules costs one recv, not two per PDU; a large one goes
 * straight to its place once the read-ahead is used up. */
static ssize_t nkv_tcp_read(struct nkv_tcp_conn *c, void *p, size_t want)
{
	ssize_t n;

	if (c->rpos == c->rlen && want < NKV_TCP_RBUF / 4 && c->rbuf) {
		n = recv(c->fd, c->rbuf, NKV_TCP_RBUF, MSG_DONTWAIT);
		if (n > 0) {
			c->rpos = 0;
			c->rlen = (uint32_t)n;
		}
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
			       errno != EINTR)) {
			nkv_tcp_conn_break(c, n == 0 ? "peer_closed" : "recv_failed");
			return -1;
		}
	}
	if (c->rpos < c->rlen) {
		n = (ssize_t)(c->rlen - c->rpos < want ? c->rlen - c->rpos : want);
		memcpy(p, c->rbuf + c->rpos, (size_t)n);
		c->rpos += (uint32_t)n;
		return n;
	}
	n = recv(c->fd, p, want, MSG_DONTWAIT);

	if (n > 0)
		return n;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	nkv_tcp_conn_break(c, n == 0 ? "peer_closed" : "recv_failed");
	return -1;
}

/* One step of the state machine: bytes read (0: none to read now). */
static ssize_t nkv_tcp_rx_step(struct nkv_tcp_conn *c)
{
	uint8_t pad[256];
	uint32_t want;
	ssize_t n;

	switch (c->rx) {
	case NKV_TCP_RX_CH:
	case NKV_TCP_RX_HDR:
		want = (c->rx == NKV_TCP_RX_CH ? 8 : c->lay.hlen + c->lay.hd) - c->hgot;
		n = nkv_tcp_read(c, c->hbuf + c->hgot, want);
		if (n <= 0)
			return n;
		c->hgot += (uint32_t)n;
		if ((uint32_t)n == want)
			c->rx == NKV_TCP_RX_CH ? nkv_tcp_ch_in(c) : nkv_tcp_hdr_in(c);
		return n;
	case NKV_TCP_RX_PAD:
		n = nkv_tcp_read(c, pad, c->pad_left < sizeof(pad) ? c->pad_left : sizeof(pad));
		if (n > 0 && !(c->pad_left -= (uint32_t)n))
			c->rx = NKV_TCP_RX_DATA;
		return n;
	case NKV_TCP_RX_DATA:
		n = nkv_tcp_read(c, c->dst + c->dgot, c->lay.dlen - c->dgot);
		if (n <= 0)
			return n;
		if (c->lay.dd)
			c->dcrc = nkv_tcp_crc_update(c->dcrc, c->dst + c->dgot, (size_t)n);
		c->dgot += (uint32_t)n;
		if (c->dgot == c->lay.dlen) {
			if (c->lay.dd)
				c->rx = NKV_TCP_RX_DDGST;
			else
				nkv_tcp_pdu_done(c);
		}
		return n;
	default:
		n = nkv_tcp_read(c, c->ddbuf + c->ddgot, NKV_TCP_DGST_LEN - c->ddgot);
		if (n > 0 && (c->ddgot += (uint32_t)n) == NKV_TCP_DGST_LEN)
			nkv_tcp_ddgst_in(c);
		return n;
	}
}

void nkv_tcp_conn_readable(struct nkv_tcp_conn *c)
{
	uint64_t budget = NKV_TCP_RX_BUDGET;
	ssize_t n;

	while (!c->dead && !c->broken && !c->closing && budget) {
		n = nkv_tcp_rx_step(c);
		if (n <= 0)
			return;
		budget = (uint64_t)n < budget ? budget - (uint64_t)n : 0;
	}
}
