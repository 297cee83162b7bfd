/* SPDX-License-Identifier: MIT */
/*
 * pdu.h - the NVMe/TCP PDU codec: what every received common header must
 * satisfy before a byte of its payload is trusted, the digests (CRC32C
 * through ISA-L), and the PDUs both ends build the same way (TermReq).
 * No I/O: callers own their sockets and buffers (the target's connection
 * state machine, an initiator, the fuzzer).
 */
#ifndef NKV_TCP_PDU_H
#define NKV_TCP_PDU_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nvme-tcp/proto.h"

/* Which end receives the PDU: a controller receives host-to-controller
 * PDUs (ICReq, H2CTermReq, CapsuleCmd, H2CData), a host the others. */
enum nkv_tcp_side { NKV_TCP_AT_CTRL, NKV_TCP_AT_HOST };

/* What the connection negotiated (all 0 before ICReq/ICResp). */
struct nkv_tcp_neg {
	int hdgst;		/* header digests on */
	int ddgst;		/* data digests on */
	uint32_t align;		/* PDO alignment the receiver asked for, bytes
				 * ((CPDA or HPDA + 1) * 4); 0 or 1: none */
	uint32_t max_data;	/* most DATA bytes one PDU may carry */
};

/* Where the parts of a checked PDU lie, from its first byte. */
struct nkv_tcp_layout {
	uint32_t hlen;		/* header */
	uint32_t hd;		/* header digest bytes after it (0 or 4) */
	uint32_t pdo;		/* DATA (0: none) */
	uint32_t dlen;		/* DATA bytes */
	uint32_t dd;		/* data digest bytes after DATA (0 or 4) */
};

/* Why a PDU is refused: what the TermReq says, and a log word. */
struct nkv_tcp_fault {
	uint16_t fes;		/* NKV_TCP_FES_* */
	uint32_t fei;		/* Invalid Header Field: the field's byte offset */
	const char *why;
};

/*
 * Check a received common header: a type that travels towards side, the
 * HLEN of that type, FLAGS (digest flags exactly as negotiated; LAST and
 * SUCCESS only where they exist), PDO and PLEN consistent (PDO past the
 * header and its digest, aligned; PLEN = PDO + DATA + data digest; DATA
 * at most n->max_data; no PDO without DATA). 0 with *l filled, or -EPROTO
 * with *f saying what the TermReq must say.
 */
int nkv_tcp_ch_check(const struct nkv_tcp_ch *ch, enum nkv_tcp_side side,
		     const struct nkv_tcp_neg *n, struct nkv_tcp_layout *l,
		     struct nkv_tcp_fault *f);

/* CRC32C (Castagnoli, iSCSI's): start with NKV_TCP_CRC_INIT, feed with
 * nkv_tcp_crc_update(), finish with nkv_tcp_crc_final(). "123456789"
 * gives E3069283h. */
#define NKV_TCP_CRC_INIT 0xffffffffu
uint32_t nkv_tcp_crc_update(uint32_t crc, const void *buf, size_t len);
static inline uint32_t nkv_tcp_crc_final(uint32_t crc)
{
	return crc ^ 0xffffffffu;
}
uint32_t nkv_tcp_crc32c(const void *buf, size_t len);

/* The header digest of the hlen bytes at hdr, written after them / checked
 * against the 4 bytes after them. */
void nkv_tcp_hdgst_put(void *hdr, uint32_t hlen);
int nkv_tcp_hdgst_ok(const void *hdr, uint32_t hlen);

/* A common header. */
static inline void nkv_tcp_ch_init(struct nkv_tcp_ch *ch, uint8_t type, uint8_t flags,
				   uint8_t hlen, uint8_t pdo, uint32_t plen)
{
	ch->type = type;
	ch->flags = flags;
	ch->hlen = hlen;
	ch->pdo = pdo;
	ch->plen = plen;
}

/*
 * The H2CData header answering r for its bytes [off, off + n): LAST on
 * the one that ends the R2T's range. Lengths and digests are the
 * sender's (its send path fills HLEN, PDO and PLEN).
 */
static inline void nkv_tcp_h2c_init(struct nkv_tcp_data *d, const struct nkv_tcp_r2t *r,
				    uint32_t off, uint32_t n)
{
	memset(d, 0, sizeof(*d));
	d->ch.type = NKV_TCP_H2C_DATA;
	d->ch.flags = off + n == r->r2to + r->r2tl ? NKV_TCP_F_LAST : 0;
	d->cccid = r->cccid;
	d->ttag = r->ttag;
	d->datao = off;
	d->datal = n;
}

/*
 * A TermReq (type NKV_TCP_C2H_TERM or NKV_TCP_H2C_TERM) quoting up to
 * NKV_TCP_TERM_DATA_MAX bytes of the offending header bad (bad_len bytes)
 * into buf (at least sizeof(struct nkv_tcp_term) + NKV_TCP_TERM_DATA_MAX
 * bytes). Returns its length. Never digested.
 */
uint32_t nkv_tcp_term_build(void *buf, uint8_t type, const struct nkv_tcp_fault *f,
			    const void *bad, uint32_t bad_len);
static inline uint32_t nkv_tcp_term_fei(const struct nkv_tcp_term *t)
{
	return (uint32_t)t->fei[0] | (uint32_t)t->fei[1] << 8 |
	       (uint32_t)t->fei[2] << 16 | (uint32_t)t->fei[3] << 24;
}

/* The NVMe/TCP name of a PDU type, for logs ("?" for unknown). */
const char *nkv_tcp_type_name(uint8_t type);

#endif /* NKV_TCP_PDU_H */
