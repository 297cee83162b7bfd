/* SPDX-License-Identifier: MIT */
/*
 * fabrics.h - NVMe over Fabrics definitions (NVMe Base 2.0, section 6:
 * Fabrics commands; the Discovery log page) that any fabrics transport
 * and both ends use: nkv-target's controller core answers them, an
 * initiator (issue 45) sends them. Transport PDUs live beside their
 * transport (src/nvme-tcp/proto.h).
 *
 * Fixed-width fields, little-endian, offsets asserted; no bitfields.
 */
#ifndef NKV_NVMF_FABRICS_H
#define NKV_NVMF_FABRICS_H

#include <stddef.h>
#include <stdint.h>

#include "nkv_wire.h"

#define NKV_NVMF_OPC 0x7fu		/* a Fabrics command: FCTYPE says which */
#define NKV_NVMF_DISC_NQN "nqn.2014-08.org.nvmexpress.discovery"
#define NKV_NVMF_NQN_MAX 223u		/* bytes of an NQN, without the NUL */

/* FCTYPE, SQE byte 4. */
enum nkv_nvmf_fctype {
	NKV_NVMF_PROP_SET = 0x00,
	NKV_NVMF_CONNECT = 0x01,
	NKV_NVMF_PROP_GET = 0x04,
	NKV_NVMF_AUTH_SEND = 0x05,
	NKV_NVMF_AUTH_RECV = 0x06,
	NKV_NVMF_DISCONNECT = 0x08,
};

/* Connect's command specific status codes (SCT 1). */
enum nkv_nvmf_connect_sc {
	NKV_SC_CONNECT_FORMAT = 0x80,	/* Incompatible Format (RECFMT) */
	NKV_SC_CONNECT_BUSY = 0x81,	/* Controller Busy */
	NKV_SC_CONNECT_PARAM = 0x82,	/* Invalid Parameters: DW0 says where */
	NKV_SC_CONNECT_RESTART = 0x83,	/* Restart Discovery */
	NKV_SC_CONNECT_HOST = 0x84,	/* Invalid Host */
};

/* Admin opcodes that only matter here: Keep Alive and AER. */
#define NKV_ADM_ASYNC_EVENT 0x0cu
#define NKV_ADM_KEEP_ALIVE 0x18u
#define NKV_SC_AER_LIMIT 0x05u		/* command specific: AER Limit Exceeded */
#define NKV_LID_DISCOVERY 0x70u
#define NKV_SC_CMD_SEQ_ERROR 0x0c	/* generic: Command Sequence Error */

/* The FCTYPE of a Fabrics SQE (byte 4, CDW1[7:0] as nkv_sqe sees it:
 * Fabrics commands have no NSID). */
static inline uint8_t nkv_nvmf_fctype(const struct nkv_sqe *s)
{
	return (uint8_t)(s->nsid & 0xffu);
}

/* Connect SQE: CDW10 = RECFMT[15:0] QID[31:16], CDW11 = SQSIZE[15:0]
 * (0's based) CATTR[23:16], CDW12 = KATO in ms. */
static inline uint16_t nkv_nvmf_connect_recfmt(const struct nkv_sqe *s) { return (uint16_t)s->cdw10; }
static inline uint16_t nkv_nvmf_connect_qid(const struct nkv_sqe *s) { return (uint16_t)(s->cdw10 >> 16); }
static inline uint32_t nkv_nvmf_connect_sqsize(const struct nkv_sqe *s) { return (s->cdw11 & 0xffffu) + 1; }
static inline uint32_t nkv_nvmf_connect_kato(const struct nkv_sqe *s) { return s->cdw12; }

/* Property Get / Set SQE: CDW10[2:0] ATTRIB size (0: 4 bytes, 1: 8),
 * CDW11 = OFST, CDW12-13 = VALUE (Set). Get answers in CQE DW0-DW1. */
static inline unsigned nkv_nvmf_prop_size(const struct nkv_sqe *s) { return (s->cdw10 & 7u) == 1 ? 8 : 4; }
static inline int nkv_nvmf_prop_attrib_ok(const struct nkv_sqe *s) { return (s->cdw10 & 7u) <= 1; }
static inline uint32_t nkv_nvmf_prop_ofst(const struct nkv_sqe *s) { return s->cdw11; }
static inline uint64_t nkv_nvmf_prop_value(const struct nkv_sqe *s)
{
	return s->cdw12 | ((uint64_t)s->cdw13 << 32);
}

/* Connect data: the 1 KiB a Connect carries (in-capsule on NVMe/TCP). */
struct nkv_nvmf_connect_data {
	uint8_t hostid[16];
	uint16_t cntlid;		/* 0xffff on an admin Connect: any */
	uint8_t rsvd18[238];
	char subnqn[256];
	char hostnqn[256];
	uint8_t rsvd768[256];
};
NKV_ASSERT_SIZE(struct nkv_nvmf_connect_data, 1024);
NKV_ASSERT_OFF(struct nkv_nvmf_connect_data, cntlid, 16);
NKV_ASSERT_OFF(struct nkv_nvmf_connect_data, subnqn, 256);
NKV_ASSERT_OFF(struct nkv_nvmf_connect_data, hostnqn, 512);

/* Connect Invalid Parameters: DW0 = IATTR[0] (1: in the data) | IPO << 16
 * (the byte offset of the parameter). */
static inline uint32_t nkv_nvmf_connect_ipo(int in_data, uint16_t off)
{
	return (in_data ? 1u : 0u) | ((uint32_t)off << 16);
}

/* Discovery log page (LID 70h): a 1 KiB header, then 1 KiB entries. */
struct nkv_nvmf_disc_hdr {
	uint64_t genctr;
	uint64_t numrec;
	uint16_t recfmt;
	uint8_t rsvd18[1006];
};
NKV_ASSERT_SIZE(struct nkv_nvmf_disc_hdr, 1024);
NKV_ASSERT_OFF(struct nkv_nvmf_disc_hdr, numrec, 8);
NKV_ASSERT_OFF(struct nkv_nvmf_disc_hdr, recfmt, 16);

struct nkv_nvmf_disc_entry {
	uint8_t trtype;			/* 3: TCP */
	uint8_t adrfam;			/* 1: IPv4, 2: IPv6 */
	uint8_t subtype;		/* 2: an NVM subsystem, 3: this discovery subsystem */
	uint8_t treq;			/* [1:0] 10b: secure channel not required */
	uint16_t portid;
	uint16_t cntlid;		/* 0xffff: dynamic */
	uint16_t asqsz;
	uint8_t rsvd10[22];
	char trsvcid[32];		/* the port, as ASCII */
	uint8_t rsvd64[192];
	char subnqn[256];
	char traddr[256];
	uint8_t tsas[256];		/* TCP: byte 0 SECTYPE, 0 = none */
};
NKV_ASSERT_SIZE(struct nkv_nvmf_disc_entry, 1024);
NKV_ASSERT_OFF(struct nkv_nvmf_disc_entry, portid, 4);
NKV_ASSERT_OFF(struct nkv_nvmf_disc_entry, cntlid, 6);
NKV_ASSERT_OFF(struct nkv_nvmf_disc_entry, asqsz, 8);
NKV_ASSERT_OFF(struct nkv_nvmf_disc_entry, trsvcid, 32);
NKV_ASSERT_OFF(struct nkv_nvmf_disc_entry, subnqn, 256);
NKV_ASSERT_OFF(struct nkv_nvmf_disc_entry, traddr, 512);
NKV_ASSERT_OFF(struct nkv_nvmf_disc_entry, tsas, 768);

#define NKV_NVMF_TRTYPE_TCP 3u
#define NKV_NVMF_ADRFAM_IPV4 1u
#define NKV_NVMF_ADRFAM_IPV6 2u
#define NKV_NVMF_SUBTYPE_NVME 2u
#define NKV_NVMF_SUBTYPE_DISC_CUR 3u
#define NKV_NVMF_TREQ_NOT_REQUIRED 2u

/*
 * Identify Controller bytes 1792..2047 (NVMe over Fabrics): IOCCSZ and
 * IORCSZ in 16-byte units (the capsule: SQE + in-capsule data; the
 * response: a CQE), ICDOFF (in-capsule data offset, 16-byte units), FCATT
 * bit 0 (0: the dynamic controller model), MSDBD (SGL Data Block
 * descriptors a command may hold). nkv_id_ctrl keeps them in its reserved
 * bytes, so they are written by offset.
 */
#define NKV_ID_IOCCSZ 1792u
#define NKV_ID_IORCSZ 1796u
#define NKV_ID_ICDOFF 1800u
#define NKV_ID_FCATT 1802u
#define NKV_ID_MSDBD 1803u
#define NKV_ID_KAS 320u			/* Keep Alive granularity, 100 ms units */
#define NKV_ID_AERL 259u
/* SGLS bits a fabrics controller adds: bit 20 the Address of a Data Block
 * may be an offset (in-capsule data), bit 21 the Transport SGL Data Block. */
#define NKV_SGLS_OFFSET (1u << 20)
#define NKV_SGLS_TRANSPORT (1u << 21)

#endif /* NKV_NVMF_FABRICS_H */
