/* SPDX-License-Identifier: MIT */
/*
 * tcp_host.c - the NVMe/TCP queue: connection, ICReq, capsules, the
 * receive path with its checks, R2T answers (tcp_host.h). Fabrics
 * commands and the association are in tcp_assoc.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "nvme-tcp/pdu.h"
#include "nvmf/tcp_host.h"
#include "nvmf/tcp_int.h"

uint64_t nkv_nvmf_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void nkv_nvmf_q_params(const struct nkv_nvmf_q *q, struct nkv_nvmf_q_params *p)
{
	*p = (struct nkv_nvmf_q_params){ .qid = q->qid, .depth = q->depth, .hdgst = q->hdgst,
					 .ddgst = q->ddgst, .cpda = q->cpda,
					 .maxh2cdata = q->maxh2cdata, .icd_max = q->icd_max };
}

void nkv_nvmf_logf(const struct nkv_nvmf_q *q, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!q->log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	q->log(q->log_ctx, line);
}

/* TCP connect with a deadline: non-blocking connect, poll, then blocking
 * with send/receive timeouts so no later call waits past them. */
static int nkv_nvmf_dial(const struct nkv_nvmf_addr *a, uint32_t ms)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	struct addrinfo *ai;
	char port[8];
	int fd, one = 1, rc;

	snprintf(port, sizeof(port), "%u", a->port);
	if (getaddrinfo(a->host, port, &hints, &ai))
		return -EHOSTUNREACH;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		freeaddrinfo(ai);
		return -errno;
	}
	rc = connect(fd, ai->ai_addr, ai->ai_addrlen) ? -errno : 0;
	freeaddrinfo(ai);
	if (rc == -EINPROGRESS) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		socklen_t sl = sizeof(rc);

		rc = poll(&p, 1, (int)ms) == 1 ? 0 : -ETIMEDOUT;
		if (!rc && getsockopt(fd, SOL_SOCKET, SO_ERROR, &rc, &sl) == 0)
			rc = -rc;
	}
	if (rc) {
		close(fd);
		return rc;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Every byte of iov out, or the -errno that ends the association. */
static int nkv_nvmf_sendv(struct nkv_nvmf_q *q, struct iovec *iov, int n)
{
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };

	while (m.msg_iovlen) {
		ssize_t w = sendmsg(q->fd, &m, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? -ETIMEDOUT :
			       w < 0 ? -errno : -EPIPE;
		while (m.msg_iovlen && (size_t)w >= m.msg_iov->iov_len) {
			w -= (ssize_t)m.msg_iov->iov_len;
			m.msg_iov++;
			m.msg_iovlen--;
		}
		if (m.msg_iovlen) {
			m.msg_iov->iov_base = (uint8_t *)m.msg_iov->iov_base + w;
			m.msg_iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* As nkv_nvmf_read, but -EAGAIN when the receive timeout passed before
 * the first byte: the stream is still whole, a caller may wait again. */
int nkv_nvmf_read_idle(struct nkv_nvmf_q *q, void *buf, size_t len)
{
	ssize_t n;

	do
		n = recv(q->fd, buf, len, 0);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return -ECONNRESET;
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return nkv_nvmf_read(q, (uint8_t *)buf + n, len - (size_t)n);
}

/* len bytes in, or -ETIMEDOUT (the receive timeout passed with nothing),
 * -ECONNRESET (the remote closed), another -errno. */
int nkv_nvmf_read(struct nkv_nvmf_q *q, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = recv(q->fd, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return -ECONNRESET;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * One PDU out: hdr (hlen bytes, type and type fields filled; FLAGS'
 * digest bits, HLEN, PDO, PLEN set here), the header digest, padding to
 * the controller's CPDA, data, the data digest, as negotiated.
 */
int nkv_nvmf_send_pdu(struct nkv_nvmf_q *q, void *hdr, uint8_t hlen, const void *data,
		      uint32_t dlen)
{
	static const uint8_t zero[128];
	struct nkv_tcp_ch *ch = hdr;
	int dig = ch->type != NKV_TCP_ICREQ && ch->type != NKV_TCP_H2C_TERM;
	uint32_t hd = dig && q->hdgst ? 4 : 0, dd = dig && q->ddgst && dlen ? 4 : 0;
	uint32_t pdo = hlen + hd, crc = 0;
	uint8_t h[NKV_TCP_HDR_MAX + 4];
	struct iovec iov[4];
	int n = 0;

	if (dlen && q->cpda > 1)
		pdo = (pdo + q->cpda - 1) / q->cpda * q->cpda;
	ch->flags &= (uint8_t)~(NKV_TCP_F_HDGST | NKV_TCP_F_DDGST);
	ch->flags |= (uint8_t)((hd ? NKV_TCP_F_HDGST : 0) | (dd ? NKV_TCP_F_DDGST : 0));
	nkv_tcp_ch_init(ch, ch->type, ch->flags, hlen, dlen ? (uint8_t)pdo : 0,
			(dlen ? pdo + dlen + dd : hlen + hd));
	memcpy(h, hdr, hlen);
	if (hd)
		nkv_tcp_hdgst_put(h, hlen);
	iov[n++] = (struct iovec){ h, hlen + hd };
	if (dlen && pdo > hlen + hd)
		iov[n++] = (struct iovec){ (void *)zero, pdo - hlen - hd };
	if (dlen)
		iov[n++] = (struct iovec){ (void *)data, dlen };
	if (dd) {
		crc = nkv_tcp_crc32c(data, dlen);
		iov[n++] = (struct iovec){ &crc, 4 };
	}
	return nkv_nvmf_sendv(q, iov, n);
}

/* Complete every command in flight with err; the association is over. */
int nkv_nvmf_q_fail(struct nkv_nvmf_q *q, int err)
{
	uint16_t i;

	if (!q->err) {
		q->err = err;
		if (err != -ESHUTDOWN)	/* a close of ours is no event */
			nkv_nvmf_logf(q, "event=nvmf_assoc_end peer=%s:%u qid=%u error=\"%s\" inflight=%u",
				      q->host, q->port, q->qid, strerror(-err), q->inflight);
		shutdown(q->fd, SHUT_RDWR);
	}
	for (i = 0; i < q->depth; i++) {
		struct nkv_nvmf_cmd *c = q->slot[i];

		if (!c)
			continue;
		c->err = q->err;
		c->done = 1;
		q->slot[i] = NULL;
	}
	q->inflight = 0;
	return q->err;
}

/* A received PDU broke a rule: say so in an H2CTermReq (best effort), end
 * the association with -EPROTO. */
int nkv_nvmf_q_violation(struct nkv_nvmf_q *q, const void *hdr, uint32_t hlen,
			 const struct nkv_tcp_fault *f)
{
	uint8_t t[sizeof(struct nkv_tcp_term) + NKV_TCP_TERM_DATA_MAX];
	uint32_t n = nkv_tcp_term_build(t, NKV_TCP_H2C_TERM, f, hdr, hlen);
	struct iovec iov = { t, n };

	nkv_nvmf_logf(q, "event=nvmf_protocol_error peer=%s:%u qid=%u pdu=%s why=%s fes=%u",
		      q->host, q->port, q->qid, nkv_tcp_type_name(((const uint8_t *)hdr)[0]),
		      f->why, f->fes);
	if (!q->err)
		nkv_nvmf_sendv(q, &iov, 1);
	return nkv_nvmf_q_fail(q, -EPROTO);
}

static int nkv_nvmf_ic(struct nkv_nvmf_q *q, const struct nkv_nvmf_opts *o)
{
	struct nkv_tcp_icreq r;
	struct nkv_tcp_icresp *p = (void *)q->hdr;
	struct nkv_tcp_neg n0 = { 0 };
	struct nkv_tcp_layout l;
	struct nkv_tcp_fault f;
	int rc;

	memset(&r, 0, sizeof(r));
	r.ch.type = NKV_TCP_ICREQ;
	r.dgst = (uint8_t)((o->hdgst ? NKV_TCP_DGST_HDR : 0) | (o->ddgst ? NKV_TCP_DGST_DATA : 0));
	rc = nkv_nvmf_send_pdu(q, &r, sizeof(r), NULL, 0);
	if (!rc)
		rc = nkv_nvmf_read(q, q->hdr, 8);
	if (rc)
		return rc;
	if (nkv_tcp_ch_check(&p->ch, NKV_TCP_AT_HOST, &n0, &l, &f) || p->ch.type != NKV_TCP_ICRESP)
		return nkv_nvmf_q_violation(q, q->hdr, 8, &f);
	rc = nkv_nvmf_read(q, q->hdr + 8, sizeof(*p) - 8);
	if (rc)
		return rc;
	if (p->pfv != NKV_TCP_PFV || p->maxh2cdata < 4096 || p->cpda > 31 ||
	    (p->dgst & ~r.dgst)) {
		f = (struct nkv_tcp_fault){ NKV_TCP_FES_PARAM, 8, "icresp_params" };
		return nkv_nvmf_q_violation(q, q->hdr, sizeof(*p), &f);
	}
	q->hdgst = !!(p->dgst & NKV_TCP_DGST_HDR);
	q->ddgst = !!(p->dgst & NKV_TCP_DGST_DATA);
	q->maxh2cdata = p->maxh2cdata;
	q->cpda = p->cpda ? (p->cpda + 1u) * 4u : 0;
	return 0;
}

static int nkv_nvmf_q_alloc(struct nkv_nvmf_q **out, const struct nkv_nvmf_addr *a,
			    const struct nkv_nvmf_opts *o, uint16_t qid)
{
	uint16_t depth = o->depth ? o->depth : 32;
	struct nkv_nvmf_q *q;

	if (depth > NKV_NVMF_DEPTH_MAX)
		return -EINVAL;
	q = calloc(1, sizeof(*q) + depth * sizeof(q->slot[0]));
	if (!q)
		return -ENOMEM;
	q->fd = -1;
	q->qid = qid;
	q->depth = depth;
	q->timeout_ms = o->timeout_ms ? o->timeout_ms : 5000;
	q->icd_max = 8192;	/* the admin queue's until Identify says more */
	q->log = o->log;
	q->log_ctx = o->log_ctx;
	q->port = a->port;
	snprintf(q->host, sizeof(q->host), "%s", a->host);
	*out = q;
	return 0;
}

int nkv_nvmf_q_open(const struct nkv_nvmf_addr *a, const char *subnqn, uint16_t qid,
		    uint16_t cntlid, const struct nkv_nvmf_opts *o, struct nkv_nvmf_q **out,
		    uint16_t *cntlid_out)
{
	struct nkv_nvmf_q *q;
	int rc;

	if (!o || o->size < sizeof(*o))
		return -EINVAL;
	rc = nkv_nvmf_q_alloc(&q, a, o, qid);
	if (rc)
		return rc;
	q->fd = nkv_nvmf_dial(a, q->timeout_ms);
	rc = q->fd < 0 ? q->fd : nkv_nvmf_ic(q, o);
	if (!rc)
		rc = nkv_nvmf_connect(q, subnqn, cntlid, o, cntlid_out);
	if (rc) {
		nkv_nvmf_logf(q, "event=nvmf_connect_failed peer=%s:%u qid=%u error=\"%s\"",
			      a->host, a->port, qid, strerror(-rc));
		nkv_nvmf_q_close(q);
		return rc;
	}
	*out = q;
	return 0;
}

int nkv_nvmf_q_from_fd(int fd, const struct nkv_nvmf_addr *a, const struct nkv_nvmf_opts *o,
		       uint16_t qid, struct nkv_nvmf_q **out)
{
	struct nkv_nvmf_q *q;
	struct timeval tv;
	int rc = nkv_nvmf_q_alloc(&q, a, o, qid);

	if (rc) {
		close(fd);
		return rc;
	}
	q->fd = fd;
	tv = (struct timeval){ q->timeout_ms / 1000, (q->timeout_ms % 1000) * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	rc = nkv_nvmf_ic(q, o);
	if (rc) {
		nkv_nvmf_q_close(q);
		return rc;
	}
	*out = q;
	return 0;
}

void nkv_nvmf_q_close(struct nkv_nvmf_q *q)
{
	if (!q)
		return;
	nkv_nvmf_q_fail(q, q->err ? q->err : -ESHUTDOWN);
	if (q->fd >= 0)
		close(q->fd);
	free(q);
}

int nkv_nvmf_q_error(const struct nkv_nvmf_q *q)
{
	return q->err;
}

uint32_t nkv_nvmf_q_icd_max(const struct nkv_nvmf_q *q)
{
	return q->icd_max;
}

/* A free CID: the slot index (CIDs are reused only after completion). */
static int nkv_nvmf_cid(struct nkv_nvmf_q *q)
{
	uint16_t i;

	for (i = 0; i < q->depth; i++) {
		uint16_t s = (uint16_t)((q->next_cid + i) % q->depth);

		if (!q->slot[s]) {
			q->next_cid = (uint16_t)(s + 1);
			return s;
		}
	}
	return -EBUSY;
}

int nkv_nvmf_q_submit(struct nkv_nvmf_q *q, struct nkv_nvmf_cmd *c)
{
	struct nkv_tcp_cmd cmd;
	uint32_t xfer = c->h2c_len ? c->h2c_len : c->c2h_len;
	int cid, rc;

	if (q->err)
		return q->err;
	if ((c->h2c_len && c->c2h_len) || c->icd_len > q->icd_max || (c->icd_len && c->h2c_len))
		return -EINVAL;
	cid = nkv_nvmf_cid(q);
	if (cid < 0)
		return cid;
	c->got = 0;
	c->err = 0;
	c->done = 0;
	c->c2h_next = 0;
	memset(&c->cqe, 0, sizeof(c->cqe));
	c->deadline_ms = nkv_nvmf_now_ms() + q->timeout_ms;
	/* PSDT 01b: SGLs; CID in CDW0[31:16]. */
	c->sqe.cdw0 = (c->sqe.cdw0 & 0xffu) | (1u << 14) | ((uint32_t)cid << 16);
	if (c->icd_len && !c->c2h_len)
		nkv_sqe_sgl1_set(&c->sqe, 0, c->icd_len, 0);
	else
		nkv_sqe_sgl1_set(&c->sqe, 0, xfer, 0);
	c->sqe.prp2 |= (uint64_t)(c->icd_len && !c->c2h_len ? NKV_TCP_SGL_ICD :
				  NKV_TCP_SGL_TRANSPORT) << 56;
	memset(&cmd, 0, sizeof(cmd));
	cmd.ch.type = NKV_TCP_CMD;
	cmd.sqe = c->sqe;
	q->slot[cid] = c;
	q->inflight++;
	rc = nkv_nvmf_send_pdu(q, &cmd, sizeof(cmd), c->icd, c->icd_len);
	return rc ? nkv_nvmf_q_fail(q, rc) : 0;
}

void nkv_nvmf_q_cork(struct nkv_nvmf_q *q, int on)
{
	int v = on ? 1 : 0;

	/* Uncorking sends what was held at once; a failure leaves the
	 * socket as it was, which only costs segments. */
	if (!q->err)
		(void)setsockopt(q->fd, IPPROTO_TCP, TCP_CORK, &v, sizeof(v));
}

int nkv_nvmf_q_exec(struct nkv_nvmf_q *q, struct nkv_nvmf_cmd *c)
{
	int rc = nkv_nvmf_q_submit(q, c);

	while (!rc && !c->done) {
		rc = nkv_nvmf_q_reap(q);
		rc = rc < 0 ? rc : 0;
	}
	return c->done ? c->err : rc;
}
