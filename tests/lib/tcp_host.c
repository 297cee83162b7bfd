/* SPDX-License-Identifier: MIT */
/* tcp_host.c - a small NVMe/TCP host for tests (tcp_host.h). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "tcp_host.h"

/* A connect() a signal interrupted goes on in the background (a fuzzer's
 * SIGALRM once came at just that moment): wait for it and take its result,
 * 0 or -1 with errno set. */
static int th_connect_wait(int fd, uint32_t deadline_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	socklen_t l = sizeof(int);
	int n, e = 0;

	do
		n = poll(&p, 1, (int)deadline_ms);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		errno = n ? errno : ETIMEDOUT;
		return -1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l))
		return -1;
	errno = e;
	return e ? -1 : 0;
}

int th_open(struct th *t, uint16_t port, uint32_t deadline_ms)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { deadline_ms / 1000, (deadline_ms % 1000) * 1000 };
	int one = 1;

	memset(t, 0, sizeof(*t));
	t->port = port;
	t->icd_max = 8192;	/* the admin queue's until Connect says more */
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	t->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (t->fd < 0)
		return -errno;
	setsockopt(t->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(t->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(t->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(t->fd, (struct sockaddr *)&a, sizeof(a)) &&
	    (errno != EINTR || th_connect_wait(t->fd, deadline_ms))) {
		int e = -errno;

		close(t->fd);
		t->fd = -1;
		return e;
	}
	return 0;
}

void th_close(struct th *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	free(t->rbuf);
	t->rbuf = NULL;
	t->rcap = 0;
}

int th_send(struct th *t, const void *buf, uint32_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(t->fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;	/* a signal (libFuzzer's timer): not an answer */
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (uint32_t)n;
	}
	return 0;
}

static int th_read(struct th *t, void *buf, uint32_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = recv(t->fd, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return 0;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
		p += n;
		len -= (uint32_t)n;
	}
	return 1;
}

int th_recv_pdu(struct th *t, void *buf, uint32_t cap)
{
	struct nkv_tcp_ch *ch = buf;
	int rc = th_read(t, buf, 8);

	if (rc <= 0)
		return rc;
	if (ch->plen < 8 || ch->plen > cap)
		return -EMSGSIZE;
	rc = th_read(t, (uint8_t *)buf + 8, ch->plen - 8);
	return rc <= 0 ? rc : (int)ch->plen;
}

int th_send_pdu(struct th *t, void *hdr, uint8_t hlen, const void *data, uint32_t dlen)
{
	struct nkv_tcp_ch *ch = hdr;
	int digests = ch->type != NKV_TCP_ICREQ && ch->type != NKV_TCP_H2C_TERM;
	uint32_t hd = digests && t->hdgst ? 4 : 0, dd = digests && t->ddgst && dlen ? 4 : 0;
	uint8_t h[256];
	uint32_t crc;
	int rc;

	ch->flags &= (uint8_t)~(NKV_TCP_F_HDGST | NKV_TCP_F_DDGST);
	ch->flags |= (uint8_t)((hd ? NKV_TCP_F_HDGST : 0) | (dd ? NKV_TCP_F_DDGST : 0));
	ch->hlen = hlen;
	ch->pdo = dlen ? (uint8_t)(hlen + hd) : 0;
	ch->plen = hlen + hd + dlen + dd;
	memcpy(h, hdr, hlen);
	if (hd)
		nkv_tcp_hdgst_put(h, hlen);
	rc = th_send(t, h, hlen + hd);
	if (!rc && dlen)
		rc = th_send(t, data, dlen);
	if (!rc && dd) {
		crc = nkv_tcp_crc32c(data, dlen);
		rc = th_send(t, &crc, 4);
	}
	return rc;
}

int th_ic(struct th *t, int hdgst, int ddgst)
{
	struct nkv_tcp_icreq q;
	struct nkv_tcp_icresp r;
	int rc;

	memset(&q, 0, sizeof(q));
	q.ch.type = NKV_TCP_ICREQ;
	q.dgst = (uint8_t)((hdgst ? NKV_TCP_DGST_HDR : 0) | (ddgst ? NKV_TCP_DGST_DATA : 0));
	q.maxr2t = 0;
	rc = th_send_pdu(t, &q, sizeof(q), NULL, 0);
	if (rc)
		return rc;
	rc = th_recv_pdu(t, &r, sizeof(r));
	if (rc != (int)sizeof(r) || r.ch.type != NKV_TCP_ICRESP)
		return rc < 0 ? rc : -EPROTO;
	t->hdgst = !!(r.dgst & NKV_TCP_DGST_HDR);
	t->ddgst = !!(r.dgst & NKV_TCP_DGST_DATA);
	t->maxh2cdata = r.maxh2cdata;
	return 0;
}

/* A C2HData whose common header is in buf: the rest of its header, then
 * its data straight into its place in c2h (checked against c2h_len
 * first), then its data digest. 0 or -EPROTO. */
static int th_c2h(struct th *t, uint8_t *buf, void *c2h, uint32_t c2h_len, uint32_t *got)
{
	const struct nkv_tcp_data *d = (const void *)buf;
	uint32_t hd = d->ch.flags & NKV_TCP_F_HDGST ? 4 : 0, dd = d->ch.flags & NKV_TCP_F_DDGST ? 4 : 0;
	uint8_t pad[256];
	uint32_t crc;

	if (d->ch.hlen != sizeof(*d) || d->ch.pdo < sizeof(*d) + hd ||
	    d->ch.pdo - sizeof(*d) - hd > sizeof(pad) ||
	    th_read(t, buf + 8, sizeof(*d) + hd - 8) <= 0 ||
	    (uint64_t)d->datao + d->datal > c2h_len || d->ch.plen != d->ch.pdo + d->datal + dd)
		return -EPROTO;
	if (hd && !nkv_tcp_hdgst_ok(buf, d->ch.hlen))
		return -EPROTO;
	if (d->ch.pdo > sizeof(*d) + hd &&
	    th_read(t, pad, d->ch.pdo - (uint32_t)sizeof(*d) - hd) <= 0)
		return -EPROTO;
	if (d->datal && th_read(t, (uint8_t *)c2h + d->datao, d->datal) <= 0)
		return -EPROTO;
	if (dd && (th_read(t, &crc, 4) <= 0 ||
		   crc != nkv_tcp_crc32c((uint8_t *)c2h + d->datao, d->datal)))
		return -EPROTO;
	*got += d->datal;
	t->c2h_flags = d->ch.flags;
	return 0;
}

/* The rest of a PDU whose common header is in buf. Its length or <= 0. */
static int th_rest(struct th *t, uint8_t *buf, uint32_t cap)
{
	const struct nkv_tcp_ch *ch = (const void *)buf;
	int rc;

	if (ch->plen < 8 || ch->plen > cap)
		return -EMSGSIZE;
	rc = th_read(t, buf + 8, ch->plen - 8);
	return rc <= 0 ? rc : (int)ch->plen;
}

/* Answer an R2T with H2CData PDUs of at most MAXH2CDATA. */
static int th_r2t(struct th *t, const uint8_t *buf, const void *h2c, uint32_t h2c_len)
{
	const struct nkv_tcp_r2t *r = (const void *)buf;
	uint32_t off = r->r2to, end = r->r2to + r->r2tl;
	int rc = 0;

	if ((uint64_t)r->r2to + r->r2tl > h2c_len)
		return -EPROTO;
	while (!rc && off < end) {
		struct nkv_tcp_data d;
		uint32_t n = end - off < t->maxh2cdata ? end - off : t->maxh2cdata;

		nkv_tcp_h2c_init(&d, r, off, n);
		rc = th_send_pdu(t, &d, sizeof(d), (const uint8_t *)h2c + off, n);
		off += n;
	}
	return rc;
}

static uint8_t *th_buf(struct th *t, uint32_t need)
{
	if (need > t->rcap) {
		free(t->rbuf);
		t->rbuf = malloc(need);
		t->rcap = t->rbuf ? need : 0;
	}
	return t->rbuf;
}

int th_cmd_send(struct th *t, struct nkv_sqe *s, const void *h2c, uint32_t h2c_len,
		const void *head, uint32_t head_len, uint32_t c2h_len)
{
	struct nkv_tcp_cmd cmd;
	const void *icd = head;
	uint32_t icd_len = head_len;

	s->cdw0 = (s->cdw0 & 0xffffu & ~(3u << 14)) | (1u << 14) | ((uint32_t)++t->cid << 16);
	if (h2c_len && h2c_len <= t->icd_max && !head_len) {
		nkv_sqe_sgl1_set(s, 0, h2c_len, 0);
		s->prp2 |= (uint64_t)NKV_TCP_SGL_ICD << 56;
		icd = h2c;
		icd_len = h2c_len;
	} else {
		nkv_sqe_sgl1_set(s, 0, h2c_len ? h2c_len : c2h_len, 0);
		s->prp2 |= (uint64_t)NKV_TCP_SGL_TRANSPORT << 56;
	}
	memset(&cmd, 0, sizeof(cmd));
	cmd.ch.type = NKV_TCP_CMD;
	cmd.sqe = *s;
	return th_send_pdu(t, &cmd, sizeof(cmd), icd, icd_len) ? -EIO : 0;
}

uint16_t th_cmd_finish(struct th *t, const void *h2c, uint32_t h2c_len, void *c2h,
		       uint32_t c2h_len, uint32_t *got)
{
	uint32_t dummy = 0, cap = 8192;
	uint8_t *buf = th_buf(t, cap);
	int rc;

	got = got ? got : &dummy;
	*got = 0;
	for (;;) {
		if (th_read(t, buf, 8) <= 0)
			return TH_TIMEOUT;
		rc = buf[0] == NKV_TCP_C2H_DATA ? 0 : th_rest(t, buf, cap);
		if (rc < 0 || (rc == 0 && buf[0] != NKV_TCP_C2H_DATA))
			return TH_TIMEOUT;
		switch (buf[0]) {
		case NKV_TCP_C2H_DATA:
			rc = th_c2h(t, buf, c2h, c2h_len, got);
			break;
		case NKV_TCP_R2T:
			rc = th_r2t(t, buf, h2c, h2c_len);
			break;
		case NKV_TCP_RSP:
			memcpy(&t->cqe, buf + 8, sizeof(t->cqe));
			return (uint16_t)(t->cqe.dw3 >> 17);
		case NKV_TCP_C2H_TERM:
			memcpy(&t->term, buf, sizeof(t->term));
			return TH_TIMEOUT;
		default:
			return TH_TIMEOUT;
		}
		if (rc)
			return TH_TIMEOUT;
	}
}

uint16_t th_cmd(struct th *t, struct nkv_sqe *s, const void *h2c, uint32_t h2c_len,
		const void *head, uint32_t head_len, void *c2h, uint32_t c2h_len, uint32_t *got)
{
	if (got)
		*got = 0;
	if (th_cmd_send(t, s, h2c, h2c_len, head, head_len, c2h_len))
		return TH_TIMEOUT;
	return th_cmd_finish(t, h2c, h2c_len, c2h, c2h_len, got);
}

static void th_fab(struct nkv_sqe *s, uint8_t fctype)
{
	memset(s, 0, sizeof(*s));
	s->cdw0 = NKV_NVMF_OPC;
	s->nsid = fctype;
}

uint16_t th_connect(struct th *t, uint16_t qid, uint16_t cntlid, const char *hostnqn,
		    const char *subnqn, uint32_t kato_ms)
{
	struct nkv_nvmf_connect_data d;
	struct nkv_sqe s;
	uint16_t st;

	memset(&d, 0, sizeof(d));
	d.cntlid = qid ? cntlid : 0xffff;
	snprintf(d.hostnqn, sizeof(d.hostnqn), "%s", hostnqn);
	snprintf(d.subnqn, sizeof(d.subnqn), "%s", subnqn);
	th_fab(&s, NKV_NVMF_CONNECT);
	s.cdw10 = (uint32_t)qid << 16;
	s.cdw11 = qid ? 127 : 31;
	s.cdw12 = kato_ms;
	st = th_cmd(t, &s, &d, sizeof(d), NULL, 0, NULL, 0, NULL);
	if (!st) {
		t->cntlid = (uint16_t)t->cqe.dw0;
		t->qid = qid;
		t->icd_max = qid ? TH_ICD_IO : 8192;
		snprintf(t->subnqn, sizeof(t->subnqn), "%s", subnqn);
		snprintf(t->hostnqn, sizeof(t->hostnqn), "%s", hostnqn);
	}
	return st;
}

uint16_t th_prop_get(struct th *t, uint32_t ofst, int eight, uint64_t *val)
{
	struct nkv_sqe s;
	uint16_t st;

	th_fab(&s, NKV_NVMF_PROP_GET);
	s.cdw10 = eight ? 1 : 0;
	s.cdw11 = ofst;
	st = th_cmd(t, &s, NULL, 0, NULL, 0, NULL, 0, NULL);
	*val = t->cqe.dw0 | ((uint64_t)t->cqe.dw1 << 32);
	return st;
}

uint16_t th_prop_set(struct th *t, uint32_t ofst, uint32_t val)
{
	struct nkv_sqe s;

	th_fab(&s, NKV_NVMF_PROP_SET);
	s.cdw11 = ofst;
	s.cdw12 = val;
	return th_cmd(t, &s, NULL, 0, NULL, 0, NULL, 0, NULL);
}

int th_admin(struct th *t, uint16_t port, int hdgst, int ddgst, const char *subnqn,
	     uint32_t kato_ms)
{
	return th_admin_as(t, port, TH_HOSTNQN, hdgst, ddgst, subnqn, kato_ms);
}

int th_admin_as(struct th *t, uint16_t port, const char *hostnqn, int hdgst, int ddgst,
		const char *subnqn, uint32_t kato_ms)
{
	/* CC: EN, CSS 110b (I/O command sets), IOSQES 6, IOCQES 4. */
	uint32_t cc = 1u | (6u << 4) | (6u << 16) | (4u << 20);
	uint64_t csts = 0;
	int i;

	if (th_open(t, port, 10000) || th_ic(t, hdgst, ddgst) ||
	    th_connect(t, 0, 0, hostnqn, subnqn, kato_ms) || th_prop_set(t, NKV_REG_CC, cc))
		return -1;
	for (i = 0; i < 100 && !(csts & NKV_CSTS_RDY); i++)
		if (th_prop_get(t, NKV_REG_CSTS, 0, &csts))
			return -1;
	return csts & NKV_CSTS_RDY ? 0 : -1;
}

int th_io_steps(struct th *t, const struct th *admin, uint16_t qid, const char **step)
{
	int rc;

	*step = "connect";
	if ((rc = th_open(t, admin->port, 10000)) != 0)
		return rc;
	*step = "ICReq";
	if ((rc = th_ic(t, admin->hdgst, admin->ddgst)) != 0)
		return rc;
	*step = "Connect (NVMe status)";
	return th_connect(t, qid, admin->cntlid, admin->hostnqn, admin->subnqn, 0);
}

int th_io(struct th *t, const struct th *admin, uint16_t qid)
{
	const char *step;

	return th_io_steps(t, admin, qid, &step) ? -1 : 0;
}

/* A KV SQE: a key of 1..16 bytes inline, a longer one in head form (KL 0). */
static void th_kv(struct nkv_sqe *s, uint8_t opc, const void *key, uint32_t klen,
		  uint32_t cdw10)
{
	uint8_t k[16] = { 0 };

	memset(s, 0, sizeof(*s));
	s->cdw0 = opc;
	s->nsid = 1;
	s->cdw10 = cdw10;
	if (klen > 16)
		return;
	memcpy(k, key, klen);
	memcpy(&s->cdw2, k, 4);
	memcpy(&s->cdw3, k + 4, 4);
	memcpy(&s->cdw14, k + 8, 4);
	memcpy(&s->cdw15, k + 12, 4);
	s->cdw11 = klen;
}

static uint32_t th_head(uint8_t *h, const void *key, uint32_t klen)
{
	h[0] = (uint8_t)klen;
	h[1] = (uint8_t)(klen >> 8);
	memcpy(h + 2, key, klen);
	return klen + 2;
}

uint16_t th_store(struct th *t, const void *key, uint32_t klen, const void *val, uint32_t len)
{
	struct nkv_sqe s;
	uint8_t *all;
	uint32_t hl;
	uint16_t st;

	th_kv(&s, NKV_KV_STORE, key, klen, len);
	if (klen <= 16)
		return th_cmd(t, &s, val, len, NULL, 0, NULL, 0, NULL);
	/* Head form: the head, then the value, as one H2C transfer. */
	all = malloc(len + 2 + klen);
	hl = th_head(all, key, klen);
	memcpy(all + hl, val, len);
	st = th_cmd(t, &s, all, hl + len, NULL, 0, NULL, 0, NULL);
	free(all);
	return st;
}

int th_retrieve_send(struct th *t, const void *key, uint32_t klen, uint32_t len)
{
	struct nkv_sqe s;

	th_kv(&s, NKV_KV_RETRIEVE, key, klen, len);
	return th_cmd_send(t, &s, NULL, 0, NULL, 0, len);
}

uint16_t th_retrieve(struct th *t, const void *key, uint32_t klen, void *buf, uint32_t len,
		     uint32_t *dw0, uint32_t *got)
{
	struct nkv_sqe s;
	uint8_t h[2 + 255];
	uint16_t st;

	th_kv(&s, NKV_KV_RETRIEVE, key, klen, len);
	if (klen <= 16)
		st = th_cmd(t, &s, NULL, 0, NULL, 0, buf, len, got);
	else
		st = th_cmd(t, &s, NULL, 0, h, th_head(h, key, klen), buf, len, got);
	if (dw0)
		*dw0 = t->cqe.dw0;
	return st;
}

uint16_t th_kv_simple(struct th *t, uint8_t opc, const void *key, uint32_t klen)
{
	struct nkv_sqe s;
	uint8_t h[2 + 255];

	th_kv(&s, opc, key, klen, 0);
	if (klen <= 16)
		return th_cmd(t, &s, NULL, 0, NULL, 0, NULL, 0, NULL);
	/* A head alone: in-capsule data of a command without a transfer. */
	return th_cmd(t, &s, NULL, 0, h, th_head(h, key, klen), NULL, 0, NULL);
}

uint16_t th_identify(struct th *t, uint8_t cns, uint32_t nsid, uint8_t csi, void *buf4k)
{
	struct nkv_sqe s;

	memset(&s, 0, sizeof(s));
	s.cdw0 = NKV_ADM_IDENTIFY;
	s.nsid = nsid;
	s.cdw10 = cns;
	s.cdw11 = (uint32_t)csi << 24;
	return th_cmd(t, &s, NULL, 0, NULL, 0, buf4k, 4096, NULL);
}

int th_wait_close(struct th *t)
{
	uint8_t buf[4096];
	int rc;

	memset(&t->term, 0, sizeof(t->term));
	for (;;) {
		rc = th_recv_pdu(t, buf, sizeof(buf));
		if (rc == 0 || rc == -ECONNRESET)
			return 1;
		if (rc < 0)
			return rc == -ETIMEDOUT ? 0 : 1;
		if (buf[0] == NKV_TCP_C2H_TERM)
			memcpy(&t->term, buf, sizeof(t->term));
	}
}
