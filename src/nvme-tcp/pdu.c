/* SPDX-License-Identifier: MIT */
/*
 * pdu.c - the NVMe/TCP PDU codec (pdu.h): common header checks, digests,
 * TermReqs. Every length a peer sends is checked here against the others
 * and the negotiated limits before anyone reads or allocates by it.
 */
#include <errno.h>
#include <string.h>

#include <isa-l/crc.h>

#include "nvme-tcp/pdu.h"

/* Per type: its header length, the direction it travels, whether it may
 * carry DATA and digests (IC and Term PDUs never have digests). */
struct nkv_tcp_rule {
	uint8_t hlen;
	uint8_t to_ctrl;
	uint8_t data;		/* may carry DATA */
	uint8_t digests;	/* digest flags apply */
	uint8_t flags;		/* FLAGS bits allowed besides the digests */
};

static const struct nkv_tcp_rule nkv_tcp_rules[] = {
	[NKV_TCP_ICREQ] = { 128, 1, 0, 0, 0 },
	[NKV_TCP_ICRESP] = { 128, 0, 0, 0, 0 },
	[NKV_TCP_H2C_TERM] = { 24, 1, 1, 0, 0 },
	[NKV_TCP_C2H_TERM] = { 24, 0, 1, 0, 0 },
	[NKV_TCP_CMD] = { 72, 1, 1, 1, 0 },
	[NKV_TCP_RSP] = { 24, 0, 0, 1, 0 },
	[NKV_TCP_H2C_DATA] = { 24, 1, 1, 1, NKV_TCP_F_LAST },
	[NKV_TCP_C2H_DATA] = { 24, 0, 1, 1, NKV_TCP_F_LAST | NKV_TCP_F_SUCCESS },
	[0x08] = { 0, 0, 0, 0, 0 },
	[NKV_TCP_R2T] = { 24, 0, 0, 1, 0 },
};

static int nkv_tcp_bad(struct nkv_tcp_fault *f, uint16_t fes, uint32_t fei, const char *why)
{
	f->fes = fes;
	f->fei = fei;
	f->why = why;
	return -EPROTO;
}

/* FLAGS: the digest bits exactly as negotiated, others only where the
 * type has them. */
static int nkv_tcp_flags_check(const struct nkv_tcp_ch *ch, const struct nkv_tcp_rule *r,
			       const struct nkv_tcp_neg *n, int has_data, struct nkv_tcp_fault *f)
{
	uint8_t want = 0;

	if (r->digests && n->hdgst)
		want |= NKV_TCP_F_HDGST;
	if (r->digests && n->ddgst && has_data)
		want |= NKV_TCP_F_DDGST;
	if ((ch->flags & (NKV_TCP_F_HDGST | NKV_TCP_F_DDGST)) != want ||
	    (ch->flags & ~(NKV_TCP_F_HDGST | NKV_TCP_F_DDGST) & ~r->flags))
		return nkv_tcp_bad(f, NKV_TCP_FES_HDR_FIELD, 1, "flags");
	return 0;
}

/* A TermReq's DATA (the quoted header) starts right after its header. */
static int nkv_tcp_term_check(const struct nkv_tcp_ch *ch, struct nkv_tcp_layout *l,
			      struct nkv_tcp_fault *f)
{
	if (ch->plen < ch->hlen || ch->plen > ch->hlen + NKV_TCP_TERM_DATA_MAX)
		return nkv_tcp_bad(f, NKV_TCP_FES_HDR_FIELD, 4, "term_plen");
	l->pdo = ch->plen > ch->hlen ? ch->hlen : 0;
	l->dlen = ch->plen - ch->hlen;
	return 0;
}

/* PDO and PLEN against each other, the header and the limits. */
static int nkv_tcp_len_check(const struct nkv_tcp_ch *ch, const struct nkv_tcp_rule *r,
			     const struct nkv_tcp_neg *n, struct nkv_tcp_layout *l,
			     struct nkv_tcp_fault *f)
{
	uint32_t hend = l->hlen + l->hd;

	if (!ch->pdo) {
		if (ch->plen != hend)
			return nkv_tcp_bad(f, NKV_TCP_FES_HDR_FIELD, 4, "plen");
		return 0;
	}
	if (!r->data)
		return nkv_tcp_bad(f, NKV_TCP_FES_HDR_FIELD, 3, "pdo_without_data");
	if (ch->pdo < hend || (n->align > 1 && ch->pdo % n->align))
		return nkv_tcp_bad(f, NKV_TCP_FES_HDR_FIELD, 3, "pdo");
	l->dd = n->ddgst && r->digests ? NKV_TCP_DGST_LEN : 0;
	if (ch->plen <= (uint64_t)ch->pdo + l->dd)
		return nkv_tcp_bad(f, NKV_TCP_FES_HDR_FIELD, 4, "plen_no_data");
	l->pdo = ch->pdo;
	l->dlen = ch->plen - ch->pdo - l->dd;
	if (l->dlen > n->max_data)
		return nkv_tcp_bad(f, NKV_TCP_FES_LIMIT, 4, "data_too_long");
	return 0;
}

int nkv_tcp_ch_check(const struct nkv_tcp_ch *ch, enum nkv_tcp_side side,
		     const struct nkv_tcp_neg *n, struct nkv_tcp_layout *l,
		     struct nkv_tcp_fault *f)
{
	const struct nkv_tcp_rule *r;
	int rc;

	memset(l, 0, sizeof(*l));
	if (ch->type >= sizeof(nkv_tcp_rules) / sizeof(nkv_tcp_rules[0]) ||
	    !nkv_tcp_rules[ch->type].hlen ||
	    nkv_tcp_rules[ch->type].to_ctrl != (side == NKV_TCP_AT_CTRL))
		return nkv_tcp_bad(f, NKV_TCP_FES_HDR_FIELD, 0, "pdu_type");
	r = &nkv_tcp_rules[ch->type];
	if (ch->hlen != r->hlen)
		return nkv_tcp_bad(f, NKV_TCP_FES_HDR_FIELD, 2, "hlen");
	l->hlen = ch->hlen;
	if (!r->digests) {
		if (ch->flags)
			return nkv_tcp_bad(f, NKV_TCP_FES_HDR_FIELD, 1, "flags");
		if (r->data)
			return nkv_tcp_term_check(ch, l, f);
		if (ch->pdo || ch->plen != ch->hlen)
			return nkv_tcp_bad(f, NKV_TCP_FES_HDR_FIELD, ch->pdo ? 3 : 4, "ic_len");
		return 0;
	}
	l->hd = n->hdgst ? NKV_TCP_DGST_LEN : 0;
	rc = nkv_tcp_flags_check(ch, r, n, ch->pdo != 0, f);
	return rc ? rc : nkv_tcp_len_check(ch, r, n, l, f);
}

uint32_t nkv_tcp_crc_update(uint32_t crc, const void *buf, size_t len)
{
	/* ISA-L's iSCSI CRC is CRC32C without the final inversion. */
	return crc32_iscsi((unsigned char *)(uintptr_t)buf, (int)len, crc);
}

uint32_t nkv_tcp_crc32c(const void *buf, size_t len)
{
	return nkv_tcp_crc_final(nkv_tcp_crc_update(NKV_TCP_CRC_INIT, buf, len));
}

void nkv_tcp_hdgst_put(void *hdr, uint32_t hlen)
{
	uint32_t d = nkv_tcp_crc32c(hdr, hlen);

	memcpy((uint8_t *)hdr + hlen, &d, sizeof(d));
}

int nkv_tcp_hdgst_ok(const void *hdr, uint32_t hlen)
{
	uint32_t d;

	memcpy(&d, (const uint8_t *)hdr + hlen, sizeof(d));
	return d == nkv_tcp_crc32c(hdr, hlen);
}

uint32_t nkv_tcp_term_build(void *buf, uint8_t type, const struct nkv_tcp_fault *f,
			    const void *bad, uint32_t bad_len)
{
	struct nkv_tcp_term *t = buf;
	uint32_t n = bad_len < NKV_TCP_TERM_DATA_MAX ? bad_len : NKV_TCP_TERM_DATA_MAX;
	uint32_t fei = f->fes == NKV_TCP_FES_HDR_FIELD || f->fes == NKV_TCP_FES_PARAM ? f->fei : 0;

	memset(t, 0, sizeof(*t));
	nkv_tcp_ch_init(&t->ch, type, 0, sizeof(*t), n ? sizeof(*t) : 0,
			(uint32_t)sizeof(*t) + n);
	t->fes = f->fes;
	t->fei[0] = (uint8_t)fei;
	t->fei[1] = (uint8_t)(fei >> 8);
	t->fei[2] = (uint8_t)(fei >> 16);
	t->fei[3] = (uint8_t)(fei >> 24);
	if (n)
		memcpy((uint8_t *)buf + sizeof(*t), bad, n);
	return (uint32_t)sizeof(*t) + n;
}

const char *nkv_tcp_type_name(uint8_t type)
{
	static const char *const names[] = {
		"ICReq", "ICResp", "H2CTermReq", "C2HTermReq", "CapsuleCmd",
		"CapsuleResp", "H2CData", "C2HData", "?", "R2T",
	};

	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}
