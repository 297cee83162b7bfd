/* SPDX-License-Identifier: MIT */
/*
 * fuzz_tcp_pdu.c - the NVMe/TCP PDU codec (src/nvme-tcp/pdu.h) on
 * arbitrary bytes: what a peer sends before anything else reads it.
 *
 * Input: byte 0 picks the negotiation (bit 0 header digests, bit 1 data
 * digests, bit 2 the host side receives, bits 3-4 the PDO alignment),
 * byte 1 the data limit (4 KiB << (b & 7)); the rest is a stream of PDUs,
 * each walked as a receiver would: the common header checked, then only
 * the bytes its layout names read (header digest verified, data digest
 * computed), in an exact-size copy so ASan sees any read past it. A
 * refused header gets the TermReq built that quotes it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nvme-tcp/pdu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fz_pdu(const uint8_t *p, size_t left, const struct nkv_tcp_layout *l)
{
	uint8_t *copy;
	uint32_t end = l->pdo ? l->pdo + l->dlen + l->dd : l->hlen + l->hd;

	if (end > left)
		return;		/* a short read: the receiver waits for more */
	copy = malloc(end);
	memcpy(copy, p, end);
	if (l->hd)
		(void)nkv_tcp_hdgst_ok(copy, l->hlen);
	if (l->dlen)
		(void)nkv_tcp_crc32c(copy + l->pdo, l->dlen);
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t term[sizeof(struct nkv_tcp_term) + NKV_TCP_TERM_DATA_MAX];
	struct nkv_tcp_neg n;
	struct nkv_tcp_layout l;
	struct nkv_tcp_fault f;
	struct nkv_tcp_ch ch;
	enum nkv_tcp_side side;
	size_t at = 2;

	if (size < 2)
		return 0;
	n.hdgst = data[0] & 1;
	n.ddgst = !!(data[0] & 2);
	side = data[0] & 4 ? NKV_TCP_AT_HOST : NKV_TCP_AT_CTRL;
	n.align = ((data[0] >> 3) & 3) * 4;
	n.max_data = 4096u << (data[1] & 7);
	while (size - at >= sizeof(ch)) {
		memcpy(&ch, data + at, sizeof(ch));
		if (nkv_tcp_ch_check(&ch, side, &n, &l, &f)) {
			nkv_tcp_term_build(term, NKV_TCP_C2H_TERM, &f, data + at, (uint32_t)(size - at));
			return 0;	/* the connection ends here */
		}
		fz_pdu(data + at, size - at, &l);
		at += ch.plen;	/* at least the header: checked above */
		if (at > size)
			return 0;
	}
	return 0;
}
