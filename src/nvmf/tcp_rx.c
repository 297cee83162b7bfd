/* SPDX-License-Identifier: MIT */
/*
 * tcp_rx.c - the initiator's receive path (tcp_host.h): one PDU at a
 * time, every field checked before a byte of data moves (the common
 * header by nkv_tcp_ch_check, then the CID, the transfer's order and
 * range, the digests). Anything wrong ends the association: the remote
 * broke the protocol, so nothing more it sends can be trusted.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "nvmf/tcp_int.h"

static int nkv_nvmf_bad(struct nkv_nvmf_q *q, uint16_t fes, uint32_t fei, const char *why)
{
	struct nkv_tcp_fault f = { fes, fei, why };
	struct nkv_tcp_ch *ch = (void *)q->hdr;

	return nkv_nvmf_q_violation(q, q->hdr, ch->hlen <= NKV_TCP_HDR_MAX ? ch->hlen : 8, &f);
}

static struct nkv_nvmf_cmd *nkv_nvmf_by_cid(struct nkv_nvmf_q *q, uint16_t cid)
{
	return cid < q->depth ? q->slot[cid] : NULL;
}

static void nkv_nvmf_complete(struct nkv_nvmf_q *q, uint16_t cid)
{
	q->slot[cid]->done = 1;
	q->slot[cid] = NULL;
	q->inflight--;
}

static int nkv_nvmf_rx_rsp(struct nkv_nvmf_q *q)
{
	const struct nkv_tcp_rsp *r = (const void *)q->hdr;
	uint16_t cid = (uint16_t)r->cqe.dw3;
	struct nkv_nvmf_cmd *c = nkv_nvmf_by_cid(q, cid);

	if (!c)
		return nkv_nvmf_bad(q, NKV_TCP_FES_HDR_FIELD, 8 + 12, "rsp_unknown_cid");
	c->cqe = r->cqe;
	nkv_nvmf_complete(q, cid);
	return 1;
}

/* Bytes between the header (and its digest) and PDO: padding, dropped. */
static int nkv_nvmf_skip(struct nkv_nvmf_q *q, uint32_t n)
{
	uint8_t pad[128];

	return n > sizeof(pad) ? -EPROTO : n ? nkv_nvmf_read(q, pad, n) : 0;
}

/* The data digest after dlen bytes at p. 0, or the association ended. */
static int nkv_nvmf_ddgst(struct nkv_nvmf_q *q, const struct nkv_tcp_layout *l, const void *p)
{
	uint32_t crc;
	int rc;

	if (!l->dd)
		return 0;
	rc = nkv_nvmf_read(q, &crc, 4);
	if (rc)
		return nkv_nvmf_q_fail(q, rc);
	if (crc == nkv_tcp_crc32c(p, l->dlen))
		return 0;
	nkv_nvmf_logf(q, "event=nvmf_protocol_error peer=%s:%u qid=%u pdu=c2h_data why=data_digest",
		      q->host, q->port, q->qid);
	return nkv_nvmf_q_fail(q, -EBADMSG);
}

static int nkv_nvmf_rx_c2h(struct nkv_nvmf_q *q, const struct nkv_tcp_layout *l)
{
	const struct nkv_tcp_data *d = (const void *)q->hdr;
	struct nkv_nvmf_cmd *c = nkv_nvmf_by_cid(q, d->cccid);
	uint8_t *dst;
	int rc;

	if (!c || !c->c2h_len)
		return nkv_nvmf_bad(q, NKV_TCP_FES_HDR_FIELD, 8, "c2h_unknown_cid");
	if (d->datal != l->dlen || !d->datal)
		return nkv_nvmf_bad(q, NKV_TCP_FES_HDR_FIELD, 16, "c2h_datal");
	if ((uint64_t)d->datao + d->datal > c->c2h_len)
		return nkv_nvmf_bad(q, NKV_TCP_FES_RANGE, 0, "c2h_outside_buffer");
	if (d->datao != c->c2h_next)
		return nkv_nvmf_bad(q, NKV_TCP_FES_HDR_FIELD, 12, "c2h_datao_order");
	if ((d->ch.flags & NKV_TCP_F_SUCCESS) && !(d->ch.flags & NKV_TCP_F_LAST))
		return nkv_nvmf_bad(q, NKV_TCP_FES_HDR_FIELD, 1, "c2h_success_not_last");
	dst = (uint8_t *)c->c2h + d->datao;
	rc = nkv_nvmf_skip(q, l->pdo - l->hlen - l->hd);
	if (!rc)
		rc = nkv_nvmf_read(q, dst, d->datal);
	if (rc)
		return nkv_nvmf_q_fail(q, rc);
	rc = nkv_nvmf_ddgst(q, l, dst);
	if (rc)
		return rc;
	c->c2h_next += d->datal;
	c->got = c->c2h_next;
	if (!(d->ch.flags & NKV_TCP_F_SUCCESS))
		return 0;
	/* SUCCESS: no CapsuleResp follows; the command succeeded. */
	memset(&c->cqe, 0, sizeof(c->cqe));
	c->cqe.dw3 = d->cccid;
	nkv_nvmf_complete(q, d->cccid);
	return 1;
}

/* Answer an R2T with H2CData PDUs of at most MAXH2CDATA, in order. */
static int nkv_nvmf_rx_r2t(struct nkv_nvmf_q *q)
{
	const struct nkv_tcp_r2t *r = (const void *)q->hdr;
	struct nkv_nvmf_cmd *c = nkv_nvmf_by_cid(q, r->cccid);
	uint32_t off, end;
	int rc = 0;

	if (!c || !c->h2c_len)
		return nkv_nvmf_bad(q, NKV_TCP_FES_HDR_FIELD, 8, "r2t_unknown_cid");
	if (!r->r2tl || (uint64_t)r->r2to + r->r2tl > c->h2c_len)
		return nkv_nvmf_bad(q, NKV_TCP_FES_RANGE, 0, "r2t_outside_data");
	off = r->r2to;
	end = r->r2to + r->r2tl;
	while (!rc && off < end) {
		struct nkv_tcp_data d;
		uint32_t n = end - off < q->maxh2cdata ? end - off : q->maxh2cdata;

		nkv_tcp_h2c_init(&d, r, off, n);
		rc = nkv_nvmf_send_pdu(q, &d, sizeof(d), (const uint8_t *)c->h2c + off, n);
		off += n;
	}
	return rc ? nkv_nvmf_q_fail(q, rc) : 0;
}

static int nkv_nvmf_rx_term(struct nkv_nvmf_q *q, const struct nkv_tcp_layout *l)
{
	const struct nkv_tcp_term *t = (const void *)q->hdr;
	uint8_t quote[NKV_TCP_TERM_DATA_MAX];

	if (l->dlen)
		nkv_nvmf_read(q, quote, l->dlen);
	nkv_nvmf_logf(q, "event=nvmf_c2h_term peer=%s:%u qid=%u fes=%u fei=%u", q->host, q->port,
		      q->qid, t->fes, nkv_tcp_term_fei(t));
	return nkv_nvmf_q_fail(q, -ECONNRESET);
}

/* The earliest deadline of a command in flight passed: end it all. */
static int nkv_nvmf_overdue(struct nkv_nvmf_q *q)
{
	uint64_t now = nkv_nvmf_now_ms();
	uint16_t i;

	for (i = 0; i < q->depth; i++)
		if (q->slot[i] && q->slot[i]->deadline_ms <= now) {
			nkv_nvmf_logf(q, "event=nvmf_timeout peer=%s:%u qid=%u opc=%#x timeout_ms=%u",
				      q->host, q->port, q->qid, q->slot[i]->sqe.cdw0 & 0xffu,
				      q->timeout_ms);
			return nkv_nvmf_q_fail(q, -ETIMEDOUT);
		}
	return 0;
}

/* One PDU's header in and checked; its layout in *l. */
static int nkv_nvmf_rx_hdr(struct nkv_nvmf_q *q, struct nkv_tcp_layout *l)
{
	struct nkv_tcp_neg n = { q->hdgst, q->ddgst, 0, UINT32_MAX };
	struct nkv_tcp_fault f;
	int rc = nkv_nvmf_read_idle(q, q->hdr, 8);

	if (rc)
		return rc == -EAGAIN ? rc : nkv_nvmf_q_fail(q, rc);
	if (nkv_tcp_ch_check((const void *)q->hdr, NKV_TCP_AT_HOST, &n, l, &f))
		return nkv_nvmf_q_violation(q, q->hdr, 8, &f);
	rc = nkv_nvmf_read(q, q->hdr + 8, l->hlen + l->hd - 8);
	if (rc)
		return nkv_nvmf_q_fail(q, rc);
	if (l->hd && !nkv_tcp_hdgst_ok(q->hdr, l->hlen))
		return nkv_nvmf_bad(q, NKV_TCP_FES_HDGST, 0, "header_digest");
	return 0;
}

static int nkv_nvmf_rx_one(struct nkv_nvmf_q *q)
{
	struct nkv_tcp_layout l;
	int rc = nkv_nvmf_rx_hdr(q, &l);

	if (rc == -EAGAIN)
		return nkv_nvmf_overdue(q);
	if (rc)
		return rc;
	switch (q->hdr[0]) {
	case NKV_TCP_RSP:
		return nkv_nvmf_rx_rsp(q);
	case NKV_TCP_C2H_DATA:
		return nkv_nvmf_rx_c2h(q, &l);
	case NKV_TCP_R2T:
		return nkv_nvmf_rx_r2t(q);
	case NKV_TCP_C2H_TERM:
		return nkv_nvmf_rx_term(q, &l);
	default:		/* an ICResp now: out of sequence */
		return nkv_nvmf_bad(q, NKV_TCP_FES_SEQUENCE, 0, "unexpected_pdu");
	}
}

int nkv_nvmf_q_reap(struct nkv_nvmf_q *q)
{
	int n = 0, rc;

	while (!n) {
		if (q->err)
			return q->err;
		if (!q->inflight)
			return 0;
		rc = nkv_nvmf_overdue(q);
		if (!rc)
			rc = nkv_nvmf_rx_one(q);
		if (rc < 0)
			return rc;
		n += rc;
	}
	return n;
}
