/* SPDX-License-Identifier: MIT */
/*
 * proto.h - NVMe/TCP transport 1.0 PDUs (NVM Express TCP Transport
 * Specification 1.0), shared by nkv-target's transport (src/target/tcp/)
 * and an initiator (issue 45), as src/vfio-user/ is for vfio-user.
 *
 * Every PDU starts with the 8-byte common header; HLEN bytes of header,
 * then a header digest (CRC32C, 4 bytes) when negotiated, then padding up
 * to PDO, DATA, and a data digest when negotiated. Fixed-width fields,
 * little-endian, no bitfields; sizes and offsets asserted.
 */
#ifndef NKV_TCP_PROTO_H
#define NKV_TCP_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "nkv_wire.h"

#define NKV_TCP_PFV 0		/* PDU format version 1.0 */
#define NKV_TCP_DGST_LEN 4u	/* CRC32C */
#define NKV_TCP_PORT 4420	/* IANA: NVMe/TCP I/O controllers */
#define NKV_TCP_DISC_PORT 8009	/* IANA: NVMe/TCP discovery */
#define NKV_TCP_TERM_DATA_MAX 128u	/* the offending header a TermReq quotes */

enum nkv_tcp_type {
	NKV_TCP_ICREQ = 0x00,
	NKV_TCP_ICRESP = 0x01,
	NKV_TCP_H2C_TERM = 0x02,
	NKV_TCP_C2H_TERM = 0x03,
	NKV_TCP_CMD = 0x04,
	NKV_TCP_RSP = 0x05,
	NKV_TCP_H2C_DATA = 0x06,
	NKV_TCP_C2H_DATA = 0x07,
	NKV_TCP_R2T = 0x09,
};

/* Common header FLAGS. */
#define NKV_TCP_F_HDGST 0x01u		/* a header digest follows the header */
#define NKV_TCP_F_DDGST 0x02u		/* a data digest follows the data */
#define NKV_TCP_F_LAST 0x04u		/* H2CData/C2HData: last of the transfer */
#define NKV_TCP_F_SUCCESS 0x08u		/* C2HData: no CapsuleResp follows */

/* Fatal Error Status of a TermReq. */
enum nkv_tcp_fes {
	NKV_TCP_FES_HDR_FIELD = 0x01,	/* Invalid PDU Header Field: FEI = byte offset */
	NKV_TCP_FES_SEQUENCE = 0x02,	/* PDU Sequence Error */
	NKV_TCP_FES_HDGST = 0x03,	/* Header Digest Error */
	NKV_TCP_FES_RANGE = 0x04,	/* Data Transfer Out of Range */
	NKV_TCP_FES_LIMIT = 0x05,	/* Data Transfer Limit Exceeded */
	NKV_TCP_FES_PARAM = 0x06,	/* Unsupported Parameter: FEI = byte offset */
};

struct nkv_tcp_ch {
	uint8_t type;
	uint8_t flags;
	uint8_t hlen;		/* header bytes, without the digest */
	uint8_t pdo;		/* where DATA starts; 0: none */
	uint32_t plen;		/* the whole PDU, digests and padding included */
};
NKV_ASSERT_SIZE(struct nkv_tcp_ch, 8);
NKV_ASSERT_OFF(struct nkv_tcp_ch, flags, 1);
NKV_ASSERT_OFF(struct nkv_tcp_ch, hlen, 2);
NKV_ASSERT_OFF(struct nkv_tcp_ch, pdo, 3);
NKV_ASSERT_OFF(struct nkv_tcp_ch, plen, 4);

/* ICReq (host) and ICResp (controller): 128 bytes, no digests, no data. */
struct nkv_tcp_icreq {
	struct nkv_tcp_ch ch;
	uint16_t pfv;
	uint8_t hpda;		/* host PDU data alignment: (hpda + 1) * 4, 0..31 */
	uint8_t dgst;		/* bit 0 header digest, bit 1 data digest wanted */
	uint32_t maxr2t;	/* outstanding R2Ts per command, 0's based */
	uint8_t rsvd16[112];
};
NKV_ASSERT_SIZE(struct nkv_tcp_icreq, 128);
NKV_ASSERT_OFF(struct nkv_tcp_icreq, pfv, 8);
NKV_ASSERT_OFF(struct nkv_tcp_icreq, hpda, 10);
NKV_ASSERT_OFF(struct nkv_tcp_icreq, dgst, 11);
NKV_ASSERT_OFF(struct nkv_tcp_icreq, maxr2t, 12);

struct nkv_tcp_icresp {
	struct nkv_tcp_ch ch;
	uint16_t pfv;
	uint8_t cpda;		/* controller PDU data alignment, as hpda */
	uint8_t dgst;		/* the digests enabled */
	uint32_t maxh2cdata;	/* bytes one H2CData may carry, >= 4096 */
	uint8_t rsvd16[112];
};
NKV_ASSERT_SIZE(struct nkv_tcp_icresp, 128);
NKV_ASSERT_OFF(struct nkv_tcp_icresp, cpda, 10);
NKV_ASSERT_OFF(struct nkv_tcp_icresp, dgst, 11);
NKV_ASSERT_OFF(struct nkv_tcp_icresp, maxh2cdata, 12);

#define NKV_TCP_DGST_HDR 0x01u
#define NKV_TCP_DGST_DATA 0x02u

/* H2CTermReq / C2HTermReq: the header, then (as DATA) the offending PDU
 * header, up to NKV_TCP_TERM_DATA_MAX bytes. */
struct nkv_tcp_term {
	struct nkv_tcp_ch ch;
	uint16_t fes;
	uint8_t fei[4];		/* a u32 the wire leaves unaligned (bytes 10..13) */
	uint8_t rsvd14[10];
};
NKV_ASSERT_SIZE(struct nkv_tcp_term, 24);
NKV_ASSERT_OFF(struct nkv_tcp_term, fes, 8);
NKV_ASSERT_OFF(struct nkv_tcp_term, fei, 10);

/* CapsuleCmd: the SQE; in-capsule data at PDO. */
struct nkv_tcp_cmd {
	struct nkv_tcp_ch ch;
	struct nkv_sqe sqe;
};
NKV_ASSERT_SIZE(struct nkv_tcp_cmd, 72);
NKV_ASSERT_OFF(struct nkv_tcp_cmd, sqe, 8);

/* CapsuleResp: the CQE. */
struct nkv_tcp_rsp {
	struct nkv_tcp_ch ch;
	struct nkv_cqe cqe;
};
NKV_ASSERT_SIZE(struct nkv_tcp_rsp, 24);
NKV_ASSERT_OFF(struct nkv_tcp_rsp, cqe, 8);

/* H2CData and C2HData. */
struct nkv_tcp_data {
	struct nkv_tcp_ch ch;
	uint16_t cccid;		/* the command's CID */
	uint16_t ttag;		/* H2CData: the R2T's tag; C2HData: reserved */
	uint32_t datao;		/* offset of DATA within the command's data */
	uint32_t datal;
	uint8_t rsvd20[4];
};
NKV_ASSERT_SIZE(struct nkv_tcp_data, 24);
NKV_ASSERT_OFF(struct nkv_tcp_data, cccid, 8);
NKV_ASSERT_OFF(struct nkv_tcp_data, ttag, 10);
NKV_ASSERT_OFF(struct nkv_tcp_data, datao, 12);
NKV_ASSERT_OFF(struct nkv_tcp_data, datal, 16);

/* R2T: the controller asks for [r2to, r2to + r2tl) of a command's data. */
struct nkv_tcp_r2t {
	struct nkv_tcp_ch ch;
	uint16_t cccid;
	uint16_t ttag;
	uint32_t r2to;
	uint32_t r2tl;
	uint8_t rsvd20[4];
};
NKV_ASSERT_SIZE(struct nkv_tcp_r2t, 24);
NKV_ASSERT_OFF(struct nkv_tcp_r2t, ttag, 10);
NKV_ASSERT_OFF(struct nkv_tcp_r2t, r2to, 12);
NKV_ASSERT_OFF(struct nkv_tcp_r2t, r2tl, 16);

/* SGL1 identifiers of NVMe/TCP commands (nkv_sgl_desc.id): in-capsule
 * data (Data Block, subtype Offset: addr = offset into the capsule's
 * data) and data moved by R2T/H2CData or C2HData (Transport Data Block). */
#define NKV_TCP_SGL_ICD 0x01u
#define NKV_TCP_SGL_TRANSPORT 0x5au

/* The largest header of any PDU type (ICReq/ICResp). */
#define NKV_TCP_HDR_MAX 128u

#endif /* NKV_TCP_PROTO_H */
