/* SPDX-License-Identifier: MIT */
/* The NVMe/TCP PDU codec: CRC32C's check value, header digests, every
 * common header rule (type per direction, HLEN, FLAGS, PDO, PLEN, the
 * data limit), TermReq building. */
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>

#include "nvme-tcp/pdu.h"

static const struct nkv_tcp_neg NONE = { 0, 0, 0, 1u << 20 };
static const struct nkv_tcp_neg BOTH = { 1, 1, 0, 1u << 20 };

Test(tcp_pdu, crc32c_check_value)
{
	uint32_t c;

	cr_assert_eq(nkv_tcp_crc32c("123456789", 9), 0xE3069283u);
	/* Fed in pieces, the same. */
	c = nkv_tcp_crc_update(NKV_TCP_CRC_INIT, "1234", 4);
	c = nkv_tcp_crc_update(c, "56789", 5);
	cr_assert_eq(nkv_tcp_crc_final(c), 0xE3069283u);
}

Test(tcp_pdu, header_digest)
{
	uint8_t h[72 + 4];

	memset(h, 0x11, sizeof(h));
	nkv_tcp_hdgst_put(h, 72);
	cr_assert(nkv_tcp_hdgst_ok(h, 72));
	h[5] ^= 1;
	cr_assert_not(nkv_tcp_hdgst_ok(h, 72));
}

static int check(uint8_t type, uint8_t flags, uint8_t hlen, uint8_t pdo, uint32_t plen,
		 enum nkv_tcp_side side, const struct nkv_tcp_neg *n,
		 struct nkv_tcp_layout *l, struct nkv_tcp_fault *f)
{
	struct nkv_tcp_ch ch;

	nkv_tcp_ch_init(&ch, type, flags, hlen, pdo, plen);
	return nkv_tcp_ch_check(&ch, side, n, l, f);
}

Test(tcp_pdu, valid_headers)
{
	struct nkv_tcp_layout l;
	struct nkv_tcp_fault f;

	cr_assert_eq(check(NKV_TCP_ICREQ, 0, 128, 0, 128, NKV_TCP_AT_CTRL, &NONE, &l, &f), 0);
	cr_assert_eq(check(NKV_TCP_CMD, 0, 72, 0, 72, NKV_TCP_AT_CTRL, &NONE, &l, &f), 0);
	cr_assert_eq(l.dlen, 0);
	cr_assert_eq(check(NKV_TCP_CMD, 0, 72, 72, 72 + 1024, NKV_TCP_AT_CTRL, &NONE, &l, &f), 0);
	cr_assert_eq(l.pdo, 72);
	cr_assert_eq(l.dlen, 1024);
	cr_assert_eq(check(NKV_TCP_CMD, 3, 72, 76, 76 + 1024 + 4, NKV_TCP_AT_CTRL, &BOTH,
			   &l, &f), 0);
	cr_assert_eq(l.hd, 4);
	cr_assert_eq(l.dd, 4);
	cr_assert_eq(l.dlen, 1024);
	cr_assert_eq(check(NKV_TCP_H2C_DATA, NKV_TCP_F_LAST, 24, 24, 24 + 4096,
			   NKV_TCP_AT_CTRL, &NONE, &l, &f), 0);
	cr_assert_eq(check(NKV_TCP_C2H_DATA, NKV_TCP_F_LAST | NKV_TCP_F_SUCCESS, 24, 24,
			   24 + 9, NKV_TCP_AT_HOST, &NONE, &l, &f), 0);
	cr_assert_eq(check(NKV_TCP_R2T, 1, 24, 0, 28, NKV_TCP_AT_HOST, &BOTH, &l, &f), 0);
	cr_assert_eq(check(NKV_TCP_C2H_TERM, 0, 24, 24, 24 + 72, NKV_TCP_AT_HOST, &BOTH, &l, &f), 0);
	cr_assert_eq(l.dlen, 72);
}

#define BAD(fes_, fei_, ...) do {					\
	cr_assert_eq(check(__VA_ARGS__, &l, &f), -EPROTO);		\
	cr_assert_eq(f.fes, fes_, "%s", f.why);				\
	cr_assert_eq(f.fei, fei_, "%s", f.why);				\
} while (0)

Test(tcp_pdu, refused_headers)
{
	struct nkv_tcp_layout l;
	struct nkv_tcp_fault f;
	struct nkv_tcp_neg small = { 0, 0, 0, 4096 }, aligned = { 0, 0, 8, 1u << 20 };

	/* Types: unknown, reserved 08h, the wrong direction. */
	BAD(NKV_TCP_FES_HDR_FIELD, 0, 0x0a, 0, 24, 0, 24, NKV_TCP_AT_CTRL, &NONE);
	BAD(NKV_TCP_FES_HDR_FIELD, 0, 0x08, 0, 24, 0, 24, NKV_TCP_AT_CTRL, &NONE);
	BAD(NKV_TCP_FES_HDR_FIELD, 0, NKV_TCP_RSP, 0, 24, 0, 24, NKV_TCP_AT_CTRL, &NONE);
	BAD(NKV_TCP_FES_HDR_FIELD, 0, NKV_TCP_CMD, 0, 72, 0, 72, NKV_TCP_AT_HOST, &NONE);
	/* HLEN. */
	BAD(NKV_TCP_FES_HDR_FIELD, 2, NKV_TCP_CMD, 0, 64, 0, 64, NKV_TCP_AT_CTRL, &NONE);
	BAD(NKV_TCP_FES_HDR_FIELD, 2, NKV_TCP_ICREQ, 0, 127, 0, 127, NKV_TCP_AT_CTRL, &NONE);
	/* FLAGS: a digest not negotiated, one missing, SUCCESS on H2CData. */
	BAD(NKV_TCP_FES_HDR_FIELD, 1, NKV_TCP_CMD, 1, 72, 0, 76, NKV_TCP_AT_CTRL, &NONE);
	BAD(NKV_TCP_FES_HDR_FIELD, 1, NKV_TCP_CMD, 0, 72, 0, 72, NKV_TCP_AT_CTRL, &BOTH);
	BAD(NKV_TCP_FES_HDR_FIELD, 1, NKV_TCP_H2C_DATA, NKV_TCP_F_SUCCESS, 24, 24, 25,
	    NKV_TCP_AT_CTRL, &NONE);
	BAD(NKV_TCP_FES_HDR_FIELD, 1, NKV_TCP_ICREQ, 1, 128, 0, 128, NKV_TCP_AT_CTRL, &NONE);
	/* PDO: inside the header, inside its digest, misaligned, on a PDU
	 * without data. */
	BAD(NKV_TCP_FES_HDR_FIELD, 3, NKV_TCP_CMD, 0, 72, 70, 100, NKV_TCP_AT_CTRL, &NONE);
	BAD(NKV_TCP_FES_HDR_FIELD, 3, NKV_TCP_CMD, 3, 72, 72, 200, NKV_TCP_AT_CTRL, &BOTH);
	BAD(NKV_TCP_FES_HDR_FIELD, 3, NKV_TCP_CMD, 0, 72, 76, 200, NKV_TCP_AT_CTRL, &aligned);
	BAD(NKV_TCP_FES_HDR_FIELD, 3, NKV_TCP_R2T, 0, 24, 24, 40, NKV_TCP_AT_HOST, &NONE);
	BAD(NKV_TCP_FES_HDR_FIELD, 3, NKV_TCP_ICREQ, 0, 128, 128, 128, NKV_TCP_AT_CTRL, &NONE);
	/* PLEN: short of the header, no data after PDO, past the limit. */
	BAD(NKV_TCP_FES_HDR_FIELD, 4, NKV_TCP_CMD, 0, 72, 0, 71, NKV_TCP_AT_CTRL, &NONE);
	BAD(NKV_TCP_FES_HDR_FIELD, 4, NKV_TCP_CMD, 0, 72, 72, 72, NKV_TCP_AT_CTRL, &NONE);
	BAD(NKV_TCP_FES_HDR_FIELD, 4, NKV_TCP_CMD, 3, 72, 76, 80, NKV_TCP_AT_CTRL, &BOTH);
	BAD(NKV_TCP_FES_LIMIT, 4, NKV_TCP_H2C_DATA, 0, 24, 24, 24 + 4097, NKV_TCP_AT_CTRL, &small);
	BAD(NKV_TCP_FES_LIMIT, 4, NKV_TCP_CMD, 0, 72, 72, 0xffffffffu, NKV_TCP_AT_CTRL,
	    &small);
	BAD(NKV_TCP_FES_HDR_FIELD, 4, NKV_TCP_H2C_TERM, 0, 24, 24, 24 + 129, NKV_TCP_AT_CTRL,
	    &NONE);
}

Test(tcp_pdu, term_build)
{
	uint8_t buf[sizeof(struct nkv_tcp_term) + NKV_TCP_TERM_DATA_MAX], bad[200];
	const struct nkv_tcp_term *t = (const void *)buf;
	struct nkv_tcp_fault f = { NKV_TCP_FES_HDR_FIELD, 3, "pdo" };
	struct nkv_tcp_layout l;
	struct nkv_tcp_fault g;

	memset(bad, 0xab, sizeof(bad));
	cr_assert_eq(nkv_tcp_term_build(buf, NKV_TCP_C2H_TERM, &f, bad, sizeof(bad)), 24 + 128);
	cr_assert_eq(t->ch.type, NKV_TCP_C2H_TERM);
	cr_assert_eq(t->ch.plen, 24 + 128);
	cr_assert_eq(t->fes, NKV_TCP_FES_HDR_FIELD);
	cr_assert_eq(nkv_tcp_term_fei(t), 3);
	cr_assert_eq(buf[24 + 127], 0xab);
	cr_assert_eq(nkv_tcp_ch_check(&t->ch, NKV_TCP_AT_HOST, &BOTH, &l, &g), 0,
		     "what we build passes our own check");
	cr_assert_str_eq(nkv_tcp_type_name(NKV_TCP_R2T), "R2T");
	cr_assert_str_eq(nkv_tcp_type_name(0x42), "?");
}
