/* SPDX-License-Identifier: MIT */
/*
 * nkv_wire.h - NVMe and NVMe Key-Value wire structures.
 *
 * Shared by device code (hipcc, nvcc, a C compiler), the host library and
 * nkv-target. Everything here is fixed-width, naturally aligned, little
 * endian on the wire, and reached through shift/mask accessors: no
 * bitfields, no packed structs, no <stdatomic.h> (C++ compilers see this).
 *
 * Sources: NVM Express Base Specification 2.0 (registers, SQE/CQE, admin
 * commands), NVM Command Set 1.0 (Read/Write) and Key Value Command Set 1.0
 * (opcodes, key placement, status codes, Identify Namespace, List payload).
 */
#ifndef NKV_WIRE_H
#define NKV_WIRE_H

#ifdef __cplusplus
#include <cstddef>
#include <cstdint>
#define NKV_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#include <stddef.h>
#include <stdint.h>
#define NKV_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* Functions callable from host and device code alike. */
#if defined(__HIPCC__) || defined(__CUDACC__)
#define NKV_HD __host__ __device__ static inline
#else
#define NKV_HD static inline
#endif

#define NKV_ASSERT_SIZE(type, size) \
	NKV_STATIC_ASSERT(sizeof(type) == (size), #type " size")
#define NKV_ASSERT_OFF(type, field, off) \
	NKV_STATIC_ASSERT(offsetof(type, field) == (off), #type "." #field " offset")

/* Extract / insert a field of @width bits at bit @shift. */
#define NKV_GET(v, shift, width) \
	(((v) >> (shift)) & ((1ULL << (width)) - 1ULL))
#define NKV_SET(v, shift, width, x)                                   \
	(((v) & ~(((1ULL << (width)) - 1ULL) << (shift))) |           \
	 ((((uint64_t)(x)) & ((1ULL << (width)) - 1ULL)) << (shift)))

/* ------------------------------------------------------------------ */
/* Controller registers (BAR0), NVMe Base 2.0 section 3.1.4             */
/* ------------------------------------------------------------------ */
enum nkv_reg {
	NKV_REG_CAP = 0x00,	/* 64-bit Controller Capabilities */
	NKV_REG_VS = 0x08,	/* Version */
	NKV_REG_INTMS = 0x0c,
	NKV_REG_INTMC = 0x10,
	NKV_REG_CC = 0x14,	/* Controller Configuration */
	NKV_REG_CSTS = 0x1c,	/* Controller Status */
	NKV_REG_NSSR = 0x20,
	NKV_REG_AQA = 0x24,	/* Admin Queue Attributes */
	NKV_REG_ASQ = 0x28,	/* 64-bit Admin SQ base */
	NKV_REG_ACQ = 0x30,	/* 64-bit Admin CQ base */
	NKV_REG_DBS = 0x1000,	/* first doorbell */
};

/* CAP fields. */
NKV_HD uint32_t nkv_cap_mqes(uint64_t cap) { return (uint32_t)NKV_GET(cap, 0, 16); }
NKV_HD uint32_t nkv_cap_cqr(uint64_t cap) { return (uint32_t)NKV_GET(cap, 16, 1); }
NKV_HD uint32_t nkv_cap_to(uint64_t cap) { return (uint32_t)NKV_GET(cap, 24, 8); }  /* 500 ms units */
NKV_HD uint32_t nkv_cap_dstrd(uint64_t cap) { return (uint32_t)NKV_GET(cap, 32, 4); }
NKV_HD uint32_t nkv_cap_css(uint64_t cap) { return (uint32_t)NKV_GET(cap, 37, 8); }
NKV_HD uint32_t nkv_cap_mpsmin(uint64_t cap) { return (uint32_t)NKV_GET(cap, 48, 4); }
NKV_HD uint32_t nkv_cap_mpsmax(uint64_t cap) { return (uint32_t)NKV_GET(cap, 52, 4); }
#define NKV_CAP_CSS_NVM (1u << 0)	/* NVM command set */
#define NKV_CAP_CSS_IOCS (1u << 6)	/* one or more I/O command sets */
#define NKV_CAP_CSS_NOIO (1u << 7)	/* admin only */

/* VS: major[31:16] minor[15:8] tertiary[7:0]. */
#define NKV_VS(maj, min, ter) (((uint32_t)(maj) << 16) | ((uint32_t)(min) << 8) | (uint32_t)(ter))

/* CC fields. */
#define NKV_CC_EN_SHIFT 0
#define NKV_CC_CSS_SHIFT 4	/* 3 bits */
#define NKV_CC_MPS_SHIFT 7	/* 4 bits: page = 2^(12+MPS) */
#define NKV_CC_AMS_SHIFT 11	/* 3 bits */
#define NKV_CC_SHN_SHIFT 14	/* 2 bits */
#define NKV_CC_IOSQES_SHIFT 16	/* 4 bits: log2 SQE size (6) */
#define NKV_CC_IOCQES_SHIFT 20	/* 4 bits: log2 CQE size (4) */
#define NKV_CC_CSS_NVM 0u
#define NKV_CC_CSS_IOCS 6u	/* all supported I/O command sets (110b) */
#define NKV_CC_CSS_ADMIN 7u
#define NKV_CC_SHN_NONE 0u
#define NKV_CC_SHN_NORMAL 1u
#define NKV_CC_SHN_ABRUPT 2u
NKV_HD uint32_t nkv_cc_en(uint32_t cc) { return (uint32_t)NKV_GET(cc, NKV_CC_EN_SHIFT, 1); }
NKV_HD uint32_t nkv_cc_css(uint32_t cc) { return (uint32_t)NKV_GET(cc, NKV_CC_CSS_SHIFT, 3); }
NKV_HD uint32_t nkv_cc_mps(uint32_t cc) { return (uint32_t)NKV_GET(cc, NKV_CC_MPS_SHIFT, 4); }
NKV_HD uint32_t nkv_cc_shn(uint32_t cc) { return (uint32_t)NKV_GET(cc, NKV_CC_SHN_SHIFT, 2); }
NKV_HD uint32_t nkv_cc_iosqes(uint32_t cc) { return (uint32_t)NKV_GET(cc, NKV_CC_IOSQES_SHIFT, 4); }
NKV_HD uint32_t nkv_cc_iocqes(uint32_t cc) { return (uint32_t)NKV_GET(cc, NKV_CC_IOCQES_SHIFT, 4); }

/* CSTS fields. */
#define NKV_CSTS_RDY (1u << 0)
#define NKV_CSTS_CFS (1u << 1)
#define NKV_CSTS_SHST_SHIFT 2	/* 2 bits */
#define NKV_CSTS_SHST_NORMAL 0u
#define NKV_CSTS_SHST_OCCURRING 1u
#define NKV_CSTS_SHST_COMPLETE 2u
NKV_HD uint32_t nkv_csts_shst(uint32_t csts) { return (uint32_t)NKV_GET(csts, NKV_CSTS_SHST_SHIFT, 2); }

/* AQA: ASQS[11:0], ACQS[27:16], both 0's based. */
NKV_HD uint32_t nkv_aqa_asqs(uint32_t aqa) { return (uint32_t)NKV_GET(aqa, 0, 12) + 1; }
NKV_HD uint32_t nkv_aqa_acqs(uint32_t aqa) { return (uint32_t)NKV_GET(aqa, 16, 12) + 1; }
NKV_HD uint32_t nkv_aqa(uint32_t sq_entries, uint32_t cq_entries)
{
	return ((sq_entries - 1) & 0xfffu) | (((cq_entries - 1) & 0xfffu) << 16);
}

/* Doorbell offsets: SQ y tail at 0x1000 + (2y) * (4 << DSTRD),
 * CQ y head at 0x1000 + (2y + 1) * (4 << DSTRD). */
NKV_HD uint32_t nkv_sq_db_off(uint32_t qid, uint32_t dstrd)
{
	return NKV_REG_DBS + (2u * qid) * (4u << dstrd);
}
NKV_HD uint32_t nkv_cq_db_off(uint32_t qid, uint32_t dstrd)
{
	return NKV_REG_DBS + (2u * qid + 1u) * (4u << dstrd);
}

/* ------------------------------------------------------------------ */
/* Submission Queue Entry (64 bytes), NVMe Base 2.0 figure 88          */
/* ------------------------------------------------------------------ */
struct nkv_sqe {
	uint32_t cdw0;	/* OPC[7:0] FUSE[9:8] PSDT[15:14] CID[31:16] */
	uint32_t nsid;	/* CDW1 */
	uint32_t cdw2;	/* KV: key bytes 0-3 */
	uint32_t cdw3;	/* KV: key bytes 4-7 */
	uint64_t mptr;	/* CDW4-5 */
	uint64_t prp1;	/* CDW6-7 (DPTR) */
	uint64_t prp2;	/* CDW8-9 */
	uint32_t cdw10;	/* KV: value size / host buffer size */
	uint32_t cdw11;	/* KV: KL[7:0] options[15:8] */
	uint32_t cdw12;
	uint32_t cdw13;
	uint32_t cdw14;	/* KV: key bytes 8-11 */
	uint32_t cdw15;	/* KV: key bytes 12-15 */
};
NKV_ASSERT_SIZE(struct nkv_sqe, 64);
NKV_ASSERT_OFF(struct nkv_sqe, cdw0, 0);
NKV_ASSERT_OFF(struct nkv_sqe, nsid, 4);
NKV_ASSERT_OFF(struct nkv_sqe, cdw2, 8);
NKV_ASSERT_OFF(struct nkv_sqe, cdw3, 12);
NKV_ASSERT_OFF(struct nkv_sqe, mptr, 16);
NKV_ASSERT_OFF(struct nkv_sqe, prp1, 24);
NKV_ASSERT_OFF(struct nkv_sqe, prp2, 32);
NKV_ASSERT_OFF(struct nkv_sqe, cdw10, 40);
NKV_ASSERT_OFF(struct nkv_sqe, cdw11, 44);
NKV_ASSERT_OFF(struct nkv_sqe, cdw12, 48);
NKV_ASSERT_OFF(struct nkv_sqe, cdw13, 52);
NKV_ASSERT_OFF(struct nkv_sqe, cdw14, 56);
NKV_ASSERT_OFF(struct nkv_sqe, cdw15, 60);

NKV_HD uint32_t nkv_sqe_opc(const struct nkv_sqe *s) { return (uint32_t)NKV_GET(s->cdw0, 0, 8); }
NKV_HD uint32_t nkv_sqe_fuse(const struct nkv_sqe *s) { return (uint32_t)NKV_GET(s->cdw0, 8, 2); }
NKV_HD uint32_t nkv_sqe_psdt(const struct nkv_sqe *s) { return (uint32_t)NKV_GET(s->cdw0, 14, 2); }
NKV_HD uint16_t nkv_sqe_cid(const struct nkv_sqe *s) { return (uint16_t)NKV_GET(s->cdw0, 16, 16); }
NKV_HD uint32_t nkv_sqe_cdw0(uint8_t opc, uint16_t cid)
{
	return (uint32_t)opc | ((uint32_t)cid << 16);
}

/* PSDT: how DPTR (CDW6-9) addresses data. */
#define NKV_PSDT_PRP 0u		/* PRP1, PRP2 */
#define NKV_PSDT_SGL 1u		/* SGL1, metadata (unused here) contiguous */
NKV_HD uint32_t nkv_sqe_cdw0_psdt(uint32_t cdw0, uint32_t psdt)
{
	return NKV_SET(cdw0, 14, 2, psdt);
}

/* ------------------------------------------------------------------ */
/* SGL descriptor (16 bytes), NVMe Base 2.0 4.1.4                      */
/* ------------------------------------------------------------------ */
struct nkv_sgl_desc {
	uint64_t addr;		/* Data Block: the data; Segment: the next list */
	uint32_t len;		/* bytes (a Segment's: of its list, 16 per entry) */
	uint8_t rsvd[3];
	uint8_t id;		/* type [7:4], subtype [3:0] (0: address) */
};
NKV_ASSERT_SIZE(struct nkv_sgl_desc, 16);
NKV_ASSERT_OFF(struct nkv_sgl_desc, addr, 0);
NKV_ASSERT_OFF(struct nkv_sgl_desc, len, 8);
NKV_ASSERT_OFF(struct nkv_sgl_desc, rsvd, 12);
NKV_ASSERT_OFF(struct nkv_sgl_desc, id, 15);

enum nkv_sgl_type {
	NKV_SGL_DATA_BLOCK = 0x0,
	NKV_SGL_BIT_BUCKET = 0x1,
	NKV_SGL_SEGMENT = 0x2,		/* a list that ends in a Segment or Last Segment */
	NKV_SGL_LAST_SEGMENT = 0x3,	/* a list of Data Blocks only */
};
NKV_HD uint32_t nkv_sgl_type(uint8_t id) { return (uint32_t)NKV_GET(id, 4, 4); }
NKV_HD uint32_t nkv_sgl_subtype(uint8_t id) { return (uint32_t)NKV_GET(id, 0, 4); }
NKV_HD uint8_t nkv_sgl_id(uint32_t type) { return (uint8_t)(type << 4); }

/* SGL1 lives in DPTR: address in CDW6-7, length in CDW8, id in CDW9[31:24]. */
NKV_HD struct nkv_sgl_desc nkv_sqe_sgl1(const struct nkv_sqe *s)
{
	struct nkv_sgl_desc d;

	d.addr = s->prp1;
	d.len = (uint32_t)s->prp2;
	d.rsvd[0] = (uint8_t)(s->prp2 >> 32);
	d.rsvd[1] = (uint8_t)(s->prp2 >> 40);
	d.rsvd[2] = (uint8_t)(s->prp2 >> 48);
	d.id = (uint8_t)(s->prp2 >> 56);
	return d;
}
NKV_HD void nkv_sqe_sgl1_set(struct nkv_sqe *s, uint64_t addr, uint32_t len, uint32_t type)
{
	s->prp1 = addr;
	s->prp2 = (uint64_t)len | ((uint64_t)nkv_sgl_id(type) << 56);
}

/* ------------------------------------------------------------------ */
/* Completion Queue Entry (16 bytes), NVMe Base 2.0 figure 89          */
/* ------------------------------------------------------------------ */
struct nkv_cqe {
	uint32_t dw0;	/* command specific; KV Retrieve: full value size */
	uint32_t dw1;
	uint32_t dw2;	/* SQHD[15:0] SQID[31:16] */
	uint32_t dw3;	/* CID[15:0] P[16] SF[31:17]; written last */
};
NKV_ASSERT_SIZE(struct nkv_cqe, 16);
NKV_ASSERT_OFF(struct nkv_cqe, dw0, 0);
NKV_ASSERT_OFF(struct nkv_cqe, dw1, 4);
NKV_ASSERT_OFF(struct nkv_cqe, dw2, 8);
NKV_ASSERT_OFF(struct nkv_cqe, dw3, 12);

NKV_HD uint16_t nkv_cqe_sqhd(uint32_t dw2) { return (uint16_t)NKV_GET(dw2, 0, 16); }
NKV_HD uint16_t nkv_cqe_sqid(uint32_t dw2) { return (uint16_t)NKV_GET(dw2, 16, 16); }
NKV_HD uint16_t nkv_cqe_cid(uint32_t dw3) { return (uint16_t)NKV_GET(dw3, 0, 16); }
NKV_HD uint32_t nkv_cqe_phase(uint32_t dw3) { return (uint32_t)NKV_GET(dw3, 16, 1); }
/* Status field without the phase bit: SC[7:0] SCT[10:8] CRD[12:11] M[13] DNR[14]. */
NKV_HD uint16_t nkv_cqe_status(uint32_t dw3) { return (uint16_t)NKV_GET(dw3, 17, 15); }
NKV_HD uint32_t nkv_cqe_dw2(uint16_t sqhd, uint16_t sqid) { return (uint32_t)sqhd | ((uint32_t)sqid << 16); }
NKV_HD uint32_t nkv_cqe_dw3(uint16_t cid, uint32_t phase, uint16_t status)
{
	return (uint32_t)cid | ((phase & 1u) << 16) | ((uint32_t)(status & 0x7fffu) << 17);
}

/* Status = SCT << 8 | SC, with optional DNR (bit 14) and More (bit 13). */
NKV_HD uint8_t nkv_status_sc(uint16_t st) { return (uint8_t)NKV_GET(st, 0, 8); }
NKV_HD uint8_t nkv_status_sct(uint16_t st) { return (uint8_t)NKV_GET(st, 8, 3); }
NKV_HD uint32_t nkv_status_dnr(uint16_t st) { return (uint32_t)NKV_GET(st, 14, 1); }
#define NKV_STATUS(sct, sc) ((uint16_t)((((sct) & 7u) << 8) | ((sc) & 0xffu)))
#define NKV_STATUS_DNR ((uint16_t)(1u << 14))

enum nkv_sct {
	NKV_SCT_GENERIC = 0x0,
	NKV_SCT_CMD_SPECIFIC = 0x1,
	NKV_SCT_MEDIA = 0x2,
	NKV_SCT_PATH = 0x3,
	NKV_SCT_VENDOR = 0x7,
};

/* Generic command status (SCT 0). */
enum nkv_sc_generic {
	NKV_SC_SUCCESS = 0x00,
	NKV_SC_INVALID_OPCODE = 0x01,
	NKV_SC_INVALID_FIELD = 0x02,
	NKV_SC_CID_CONFLICT = 0x03,
	NKV_SC_DATA_XFER_ERROR = 0x04,
	NKV_SC_INTERNAL = 0x06,
	NKV_SC_ABORTED_BY_REQUEST = 0x07,
	NKV_SC_ABORTED_SQ_DELETION = 0x08,
	NKV_SC_INVALID_NS = 0x0b,
	NKV_SC_NS_WRITE_PROTECTED = 0x20,	/* Namespace is Write Protected */
	NKV_SC_SGL_COUNT_INVALID = 0x0e,	/* Invalid Number of SGL Descriptors */
	NKV_SC_SGL_DATA_LEN_INVALID = 0x0f,	/* Data SGL Length Invalid */
	NKV_SC_SGL_TYPE_INVALID = 0x11,		/* SGL Descriptor Type Invalid */
	NKV_SC_PRP_OFFSET_INVALID = 0x13,
	NKV_SC_SGL_OFFSET_INVALID = 0x16,	/* SGL Offset Invalid */
	NKV_SC_INVALID_PRP_OFFSET = NKV_SC_PRP_OFFSET_INVALID,
	NKV_SC_LBA_OUT_OF_RANGE = 0x80,
	NKV_SC_CAPACITY_EXCEEDED = 0x81,
	NKV_SC_NS_NOT_READY = 0x82,
	/* Key Value command set, generic status values 85h-89h. */
	NKV_SC_KV_INVALID_VALUE_SIZE = 0x85,
	NKV_SC_KV_INVALID_KEY_SIZE = 0x86,
	NKV_SC_KV_KEY_NOT_EXISTS = 0x87,
	NKV_SC_KV_UNRECOVERED_ERROR = 0x88,
	NKV_SC_KV_KEY_EXISTS = 0x89,
};

/* Command specific status (SCT 1) used by admin queue management. */
enum nkv_sc_cmd_specific {
	NKV_SC_CQ_INVALID = 0x00,
	NKV_SC_QID_INVALID = 0x01,
	NKV_SC_QSIZE_INVALID = 0x02,
	NKV_SC_ABORT_LIMIT = 0x03,
	NKV_SC_LOG_PAGE_INVALID = 0x09,
	NKV_SC_FEATURE_NOT_SAVEABLE = 0x0d,
	NKV_SC_INVALID_QUEUE_DELETION = 0x0c,
	NKV_SC_FEATURE_NOT_CHANGEABLE = 0x0e,
	/* I/O, SCT 1: Attempted Write to Read Only Range (what rados-nkv
	 * answers a write to a read-only namespace with). */
	NKV_SC_WRITE_READ_ONLY = 0x82,
};

/* ------------------------------------------------------------------ */
/* Admin commands                                                       */
/* ------------------------------------------------------------------ */
enum nkv_admin_opc {
	NKV_ADM_DELETE_SQ = 0x00,
	NKV_ADM_CREATE_SQ = 0x01,
	NKV_ADM_GET_LOG_PAGE = 0x02,
	NKV_ADM_DELETE_CQ = 0x04,
	NKV_ADM_CREATE_CQ = 0x05,
	NKV_ADM_IDENTIFY = 0x06,
	NKV_ADM_ABORT = 0x08,
	NKV_ADM_SET_FEATURES = 0x09,
	NKV_ADM_GET_FEATURES = 0x0a,
};

/* Identify CDW10: CNS[7:0] CNTID[31:16]; CDW11: CSI[31:24]. */
enum nkv_cns {
	NKV_CNS_NS = 0x00,
	NKV_CNS_CTRL = 0x01,
	NKV_CNS_ACTIVE_NS_LIST = 0x02,
	NKV_CNS_NS_DESC_LIST = 0x03,
	NKV_CNS_IOCS_NS = 0x05,		/* I/O command set specific namespace */
	NKV_CNS_IOCS_CTRL = 0x06,	/* I/O command set specific controller */
	NKV_CNS_IOCS_ACTIVE_NS_LIST = 0x07,
	NKV_CNS_IOCS_VECTOR = 0x1c,	/* I/O command set combinations */
};
enum nkv_csi {
	NKV_CSI_NVM = 0x00,
	NKV_CSI_KV = 0x01,
	NKV_CSI_ZNS = 0x02,
};
NKV_HD uint32_t nkv_identify_cdw10(uint8_t cns, uint16_t cntid) { return (uint32_t)cns | ((uint32_t)cntid << 16); }
NKV_HD uint32_t nkv_identify_cdw11(uint8_t csi) { return (uint32_t)csi << 24; }
NKV_HD uint8_t nkv_identify_cns(uint32_t cdw10) { return (uint8_t)NKV_GET(cdw10, 0, 8); }
NKV_HD uint8_t nkv_identify_csi(uint32_t cdw11) { return (uint8_t)NKV_GET(cdw11, 24, 8); }

/* Create I/O CQ: CDW10 QID[15:0] QSIZE[31:16] (0's based);
 * CDW11 PC[0] IEN[1] IV[31:16].
 * Create I/O SQ: CDW10 as above; CDW11 PC[0] QPRIO[2:1] CQID[31:16].
 * Delete I/O SQ/CQ: CDW10 QID[15:0]. */
NKV_HD uint32_t nkv_queue_cdw10(uint16_t qid, uint32_t entries)
{
	return (uint32_t)qid | (((entries - 1u) & 0xffffu) << 16);
}
NKV_HD uint16_t nkv_queue_qid(uint32_t cdw10) { return (uint16_t)NKV_GET(cdw10, 0, 16); }
NKV_HD uint32_t nkv_queue_entries(uint32_t cdw10) { return (uint32_t)NKV_GET(cdw10, 16, 16) + 1u; }
#define NKV_QUEUE_PC (1u << 0)		/* physically contiguous */
#define NKV_CQ_IEN (1u << 1)		/* interrupts enabled */
NKV_HD uint32_t nkv_create_sq_cdw11(uint16_t cqid) { return NKV_QUEUE_PC | ((uint32_t)cqid << 16); }
NKV_HD uint16_t nkv_create_sq_cqid(uint32_t cdw11) { return (uint16_t)NKV_GET(cdw11, 16, 16); }

/* Features: CDW10 FID[7:0] SV[31]; Get Features SEL[10:8]. */
enum nkv_fid {
	NKV_FID_NUM_QUEUES = 0x07,	/* CDW11/DW0: NSQR[15:0] NCQR[31:16], 0's based */
	NKV_FID_KV_CONFIG = 0x20,	/* Key Value Configuration (KV 1.0) */
	NKV_FID_ASYNC_EVENT_CFG = 0x0b,	/* CDW11/DW0: the notices sent (NKV_AEC_*) */
};
/* Asynchronous Event Configuration bit 8 and Identify Controller OAES
 * bit 8: Namespace Attribute Notices (the same bit in both). */
#define NKV_AEC_NS_ATTR (1u << 8)
#define NKV_OAES_NS_ATTR (1u << 8)
/* KV Configuration feature CDW11/DW0: bit 0 = Delete of a missing key
 * returns success (1) or Key Does Not Exist (0, the default). */
#define NKV_KV_CONFIG_DEL_MISSING_OK (1u << 0)
NKV_HD uint32_t nkv_num_queues(uint32_t nsq, uint32_t ncq)
{
	return ((nsq - 1u) & 0xffffu) | (((ncq - 1u) & 0xffffu) << 16);
}

/* Get Log Page CDW10: LID[7:0] NUMDL[31:16]; CDW11 NUMDU[15:0] (dwords, 0's based). */
enum nkv_lid {
	NKV_LID_ERROR = 0x01,
	NKV_LID_SMART = 0x02,
	NKV_LID_CHANGED_NS = 0x04,	/* Changed Namespace List */
	NKV_LID_CMD_EFFECTS = 0x05,	/* Commands Supported and Effects */
};
/* Get Log Page CDW14: CSI[31:24], the command set a log page is of. */
NKV_HD uint32_t nkv_log_csi(uint32_t cdw14) { return (uint32_t)NKV_GET(cdw14, 24, 8); }

/*
 * Commands Supported and Effects (log page 05h): an entry per admin
 * opcode, then one per I/O opcode of the command set CDW14's CSI names.
 * A host (Linux) reads it before it takes a namespace of a command set
 * other than NVM as a generic device; a controller that refuses it gets
 * its namespace dropped.
 */
struct nkv_cmd_effects_log {
	uint32_t acs[256];		/* admin commands */
	uint32_t iocs[256];		/* I/O commands */
	uint8_t rsvd2048[2048];
};
NKV_ASSERT_SIZE(struct nkv_cmd_effects_log, 4096);
NKV_ASSERT_OFF(struct nkv_cmd_effects_log, iocs, 1024);
NKV_ASSERT_OFF(struct nkv_cmd_effects_log, rsvd2048, 2048);
#define NKV_CE_CSUPP (1u << 0)	/* command supported */
#define NKV_CE_LBCC (1u << 1)	/* it may change stored content (a value, a block) */
/* Identify Controller LPA bit 1: log page 05h is supported. */
#define NKV_LPA_CMD_EFFECTS (1u << 1)
/* CDW10 bit 15: Retain Asynchronous Event (the read leaves the log and
 * the event's mask as they were). */
NKV_HD uint32_t nkv_log_rae(uint32_t cdw10) { return (uint32_t)NKV_GET(cdw10, 15, 1); }

/* Asynchronous Event Request completion DW0: type[2:0], info[15:8],
 * log page[23:16]. */
enum nkv_aen_type {
	NKV_AEN_TYPE_NOTICE = 0x2,
};
#define NKV_AEN_INFO_NS_ATTR 0x00	/* Namespace Attribute Changed */
NKV_HD uint32_t nkv_aen_dw0(uint32_t type, uint32_t info, uint32_t lid)
{
	return (type & 7u) | ((info & 0xffu) << 8) | ((lid & 0xffu) << 16);
}
NKV_HD uint32_t nkv_aen_type(uint32_t dw0) { return (uint32_t)NKV_GET(dw0, 0, 3); }
NKV_HD uint32_t nkv_aen_info(uint32_t dw0) { return (uint32_t)NKV_GET(dw0, 8, 8); }
NKV_HD uint32_t nkv_aen_lid(uint32_t dw0) { return (uint32_t)NKV_GET(dw0, 16, 8); }
/* The Namespace Attribute Changed notice: its DW0 (0x00040002). */
#define NKV_AEN_NS_CHANGED 0x00040002u	/* nkv_aen_dw0(NOTICE, NS_ATTR, 04h) */

/* Changed Namespace List (log page 04h): up to 1024 NSIDs, ascending,
 * zero-filled; entry 0 = FFFFFFFFh when more than 1024 changed. */
#define NKV_CHANGED_NS_MAX 1024u
#define NKV_CHANGED_NS_OVERFLOW 0xffffffffu
struct nkv_changed_ns_log {
	uint32_t nsid[NKV_CHANGED_NS_MAX];
};
NKV_STATIC_ASSERT(sizeof(struct nkv_changed_ns_log) == 4096, "Changed Namespace List is 4 KiB");
NKV_HD uint32_t nkv_log_lid(uint32_t cdw10) { return (uint32_t)NKV_GET(cdw10, 0, 8); }
/* 64-bit: NUMDL = NUMDU = 0xffff means 2^32 dwords, which a 32-bit sum
 * would wrap to 0 (a zero-length transfer instead of Invalid Field). */
NKV_HD uint64_t nkv_log_numd(uint32_t cdw10, uint32_t cdw11)
{
	return ((uint64_t)NKV_GET(cdw10, 16, 16) | ((uint64_t)NKV_GET(cdw11, 0, 16) << 16)) + 1u;
}

/* Error Information log entry (64 bytes). */
struct nkv_error_log {
	uint64_t error_count;
	uint16_t sqid;
	uint16_t cid;
	uint16_t status;	/* status field, phase bit 0 */
	uint16_t param_loc;
	uint64_t lba;
	uint32_t nsid;
	uint8_t vs;
	uint8_t trtype;
	uint8_t rsvd30[2];
	uint64_t cmd_specific;
	uint16_t trtype_specific;
	uint8_t rsvd42[22];
};
NKV_ASSERT_SIZE(struct nkv_error_log, 64);
NKV_ASSERT_OFF(struct nkv_error_log, sqid, 8);
NKV_ASSERT_OFF(struct nkv_error_log, cid, 10);
NKV_ASSERT_OFF(struct nkv_error_log, status, 12);
NKV_ASSERT_OFF(struct nkv_error_log, lba, 16);
NKV_ASSERT_OFF(struct nkv_error_log, nsid, 24);
NKV_ASSERT_OFF(struct nkv_error_log, cmd_specific, 32);

/* SMART / Health log (512 bytes); only the fields nkv fills are named.
 * 128-bit counters are kept as two little-endian u64 halves. */
struct nkv_smart_log {
	uint8_t critical_warning;
	uint8_t temperature[2];		/* kelvin */
	uint8_t avail_spare;
	uint8_t spare_thresh;
	uint8_t percent_used;
	uint8_t endu_grp_crit;
	uint8_t rsvd7[25];
	uint64_t data_units_read[2];
	uint64_t data_units_written[2];
	uint64_t host_reads[2];
	uint64_t host_writes[2];
	uint64_t ctrl_busy_time[2];
	uint64_t power_cycles[2];
	uint64_t power_on_hours[2];
	uint64_t unsafe_shutdowns[2];
	uint64_t media_errors[2];
	uint64_t num_err_log_entries[2];
	uint8_t rsvd192[320];
};
NKV_ASSERT_SIZE(struct nkv_smart_log, 512);
NKV_ASSERT_OFF(struct nkv_smart_log, data_units_read, 32);
NKV_ASSERT_OFF(struct nkv_smart_log, host_reads, 64);
NKV_ASSERT_OFF(struct nkv_smart_log, media_errors, 160);
NKV_ASSERT_OFF(struct nkv_smart_log, num_err_log_entries, 176);

/* Identify Controller (CNS 01h), 4096 bytes; fields nkv uses. */
struct nkv_id_ctrl {
	uint16_t vid;
	uint16_t ssvid;
	char sn[20];
	char mn[40];
	char fr[8];
	uint8_t rab;
	uint8_t ieee[3];
	uint8_t cmic;
	uint8_t mdts;		/* max transfer 2^MDTS * CAP.MPSMIN pages; 0 = none */
	uint16_t cntlid;
	uint32_t ver;
	uint32_t rtd3r;
	uint32_t rtd3e;
	uint32_t oaes;
	uint32_t ctratt;
	uint8_t rsvd100[11];
	uint8_t cntrltype;	/* 1 = I/O controller */
	uint8_t fguid[16];
	uint8_t rsvd128[128];
	uint16_t oacs;
	uint8_t acl;
	uint8_t aerl;
	uint8_t frmw;
	uint8_t lpa;
	uint8_t elpe;		/* error log entries, 0's based */
	uint8_t npss;
	uint8_t rsvd264[248];
	uint8_t sqes;		/* [3:0] required, [7:4] max log2 SQE size */
	uint8_t cqes;
	uint16_t maxcmd;
	uint32_t nn;		/* number of namespaces */
	uint16_t oncs;
	uint16_t fuses;
	uint8_t fna;
	uint8_t vwc;
	uint16_t awun;
	uint16_t awupf;
	uint8_t icsvscc;
	uint8_t nwpc;
	uint16_t acwu;
	uint16_t ocfs;
	uint32_t sgls;		/* NKV_SGLS_* */
	uint32_t mnan;
	uint8_t rsvd544[224];
	char subnqn[256];
	uint8_t rsvd1024[1024];
	uint8_t psd[1024];
	uint8_t vs[1024];
};
NKV_ASSERT_SIZE(struct nkv_id_ctrl, 4096);
NKV_ASSERT_OFF(struct nkv_id_ctrl, sn, 4);
NKV_ASSERT_OFF(struct nkv_id_ctrl, mn, 24);
NKV_ASSERT_OFF(struct nkv_id_ctrl, fr, 64);
NKV_ASSERT_OFF(struct nkv_id_ctrl, mdts, 77);
NKV_ASSERT_OFF(struct nkv_id_ctrl, cntlid, 78);
NKV_ASSERT_OFF(struct nkv_id_ctrl, ver, 80);
NKV_ASSERT_OFF(struct nkv_id_ctrl, ctratt, 96);
NKV_ASSERT_OFF(struct nkv_id_ctrl, cntrltype, 111);
NKV_ASSERT_OFF(struct nkv_id_ctrl, oacs, 256);
NKV_ASSERT_OFF(struct nkv_id_ctrl, elpe, 262);
NKV_ASSERT_OFF(struct nkv_id_ctrl, sqes, 512);
NKV_ASSERT_OFF(struct nkv_id_ctrl, cqes, 513);
NKV_ASSERT_OFF(struct nkv_id_ctrl, maxcmd, 514);
NKV_ASSERT_OFF(struct nkv_id_ctrl, nn, 516);
NKV_ASSERT_OFF(struct nkv_id_ctrl, oncs, 520);
NKV_ASSERT_OFF(struct nkv_id_ctrl, sgls, 536);
/* Identify Controller SGLS: bits 1:0 SGL support (01b any alignment,
 * 10b dword aligned), bit 18 an SGL may describe more than the transfer. */
#define NKV_SGLS_SUPPORT_MASK 0x3u
#define NKV_SGLS_SUPPORTED 0x1u
#define NKV_SGLS_DWORD_ALIGNED 0x2u
#define NKV_SGLS_LONGER_THAN_DATA (1u << 18)
NKV_ASSERT_OFF(struct nkv_id_ctrl, subnqn, 768);
NKV_ASSERT_OFF(struct nkv_id_ctrl, psd, 2048);
NKV_ASSERT_OFF(struct nkv_id_ctrl, vs, 3072);

/* LBA Format (NVM Identify Namespace). */
struct nkv_lbaf {
	uint16_t ms;	/* metadata size */
	uint8_t lbads;	/* log2 LBA data size */
	uint8_t rp;	/* relative performance [1:0] */
};
NKV_ASSERT_SIZE(struct nkv_lbaf, 4);

/* Identify Namespace, NVM command set (CNS 00h), 4096 bytes. */
struct nkv_id_ns_nvm {
	uint64_t nsze;
	uint64_t ncap;
	uint64_t nuse;
	uint8_t nsfeat;
	uint8_t nlbaf;	/* 0's based */
	uint8_t flbas;	/* [3:0] format index */
	uint8_t mc;
	uint8_t dpc;
	uint8_t dps;
	uint8_t nmic;
	uint8_t rescap;
	uint8_t rsvd32[72];
	uint8_t nguid[16];
	uint8_t eui64[8];
	struct nkv_lbaf lbaf[64];
	uint8_t vs[3712];
};
NKV_ASSERT_SIZE(struct nkv_id_ns_nvm, 4096);
NKV_ASSERT_OFF(struct nkv_id_ns_nvm, nuse, 16);
NKV_ASSERT_OFF(struct nkv_id_ns_nvm, nlbaf, 25);
NKV_ASSERT_OFF(struct nkv_id_ns_nvm, flbas, 26);
NKV_ASSERT_OFF(struct nkv_id_ns_nvm, nguid, 104);
NKV_ASSERT_OFF(struct nkv_id_ns_nvm, lbaf, 128);

/* Namespace Identification Descriptor (CNS 03h): NIDT, NIDL, 2 rsvd, NID. */
enum nkv_nidt {
	NKV_NIDT_EUI64 = 0x01,	/* 8 bytes */
	NKV_NIDT_NGUID = 0x02,	/* 16 bytes */
	NKV_NIDT_UUID = 0x03,	/* 16 bytes */
	NKV_NIDT_CSI = 0x04,	/* 1 byte: the namespace's command set */
};
struct nkv_ns_desc_hdr {
	uint8_t nidt;
	uint8_t nidl;
	uint8_t rsvd[2];
};
NKV_ASSERT_SIZE(struct nkv_ns_desc_hdr, 4);

/* I/O Command Set vector (CNS 1Ch): 512 u64 combinations; bit n = CSI n. */
#define NKV_IOCS_VECTOR_NVM (1ull << NKV_CSI_NVM)
#define NKV_IOCS_VECTOR_KV (1ull << NKV_CSI_KV)

/* ------------------------------------------------------------------ */
/* NVM command set I/O commands (for block-namespace rehearsals)        */
/* ------------------------------------------------------------------ */
enum nkv_nvm_opc {
	NKV_NVM_FLUSH = 0x00,
	NKV_NVM_WRITE = 0x01,
	NKV_NVM_READ = 0x02,
};
/* Read/Write: CDW10-11 SLBA (64-bit), CDW12 NLB[15:0] (0's based). */

/* ------------------------------------------------------------------ */
/* Key Value command set, KV 1.0                                       */
/* ------------------------------------------------------------------ */
enum nkv_kv_opc {
	NKV_KV_STORE = 0x01,
	NKV_KV_RETRIEVE = 0x02,
	NKV_KV_LIST = 0x06,
	NKV_KV_DELETE = 0x10,
	NKV_KV_EXIST = 0x14,
	NKV_KV_EXEC = 0x83,	/* vendor (rados-nkv): data both ways */
};

/*
 * Keys. 1..16 bytes travel inline: bytes 0-7 in CDW2/3, 8-15 in
 * CDW14/15, CDW11 KL = the length (KV 1.0). 1..255 bytes may travel at
 * the head of the data buffer as [u16 length, little-endian][key bytes],
 * signalled by KL = 0 (the rados-nkv encoding, its docs/wire-format.md):
 * Store's buffer is [head][value]; Retrieve's and List's hold the head
 * (host to device) and take the value / payload right after it, at
 * offset 2 + length (device to host); Exist's and Delete's are the head
 * alone. CDW10 never counts the head.
 */
#define NKV_KEY_INLINE_MAX 16u
#define NKV_KEY_MAX 255u
#define NKV_KEY_HEAD_MAX (2u + NKV_KEY_MAX)	/* the longest head, 257 bytes */

/* Bytes a head for a key of @klen bytes takes. */
NKV_HD uint32_t nkv_key_head_size(uint32_t klen) { return 2u + klen; }
/* The length a head claims (its first two bytes, little-endian). */
NKV_HD uint32_t nkv_key_head_len(const uint8_t *head)
{
	return (uint32_t)head[0] | ((uint32_t)head[1] << 8);
}
/* Write the head for @key (@klen bytes) at @head. */
NKV_HD void nkv_key_head_put(uint8_t *head, const uint8_t *key, uint32_t klen)
{
	uint32_t i;

	head[0] = (uint8_t)klen;
	head[1] = (uint8_t)(klen >> 8);
	for (i = 0; i < klen; i++)
		head[2 + i] = key[i];
}

/* CDW11: KL[7:0] key length; options in [15:8]. */
NKV_HD uint32_t nkv_kv_key_len(const struct nkv_sqe *s) { return (uint32_t)NKV_GET(s->cdw11, 0, 8); }
NKV_HD uint32_t nkv_kv_options(const struct nkv_sqe *s) { return (uint32_t)NKV_GET(s->cdw11, 8, 8); }
/* Store options, as bits of CDW11 (bit 8 = option bit 0). */
#define NKV_STORE_MUST_EXIST (1u << 8)		/* else Key Does Not Exist (87h) */
#define NKV_STORE_MUST_NOT_EXIST (1u << 9)	/* else Key Exists (89h) */
#define NKV_STORE_NO_COMPRESS (1u << 10)
#define NKV_STORE_OPTIONS_MASK (NKV_STORE_MUST_EXIST | NKV_STORE_MUST_NOT_EXIST | NKV_STORE_NO_COMPRESS)
/*
 * The rados-nkv dialect's vendor Store options (option bits 3-5). A
 * controller honours them only where it advertises them (struct
 * nkv_kv_vs below); one that does not answers Invalid Field in Command,
 * or, if it ignores unknown bits, stores durably forever: hosts send them
 * only when advertised.
 */
#define NKV_STORE_TTL (1u << 11)	/* CDW12 = time to live, seconds (1..) */
#define NKV_STORE_EPHEMERAL (1u << 12)	/* not durable: kept in the controller's memory */
#define NKV_STORE_TOUCH (1u << 13)	/* refresh an existing key's TTL; no value
					 * (CDW10 = 0), else Invalid Field */
#define NKV_STORE_VENDOR_MASK (NKV_STORE_TTL | NKV_STORE_EPHEMERAL | NKV_STORE_TOUCH)
#define NKV_STORE_ALL_MASK (NKV_STORE_OPTIONS_MASK | NKV_STORE_VENDOR_MASK)

/* List option, as a bit of CDW11: the start key travels in head form
 * (KL = 0; the payload follows the head; a head claiming 0 lists from
 * the beginning). Without it KL = 0 lists from the beginning with the
 * payload at offset 0, as KV 1.0 has it: a List cannot tell a head from
 * its payload buffer by KL alone. */
#define NKV_LIST_KEY_HEAD (1u << 8)

/* Copy the inline key out of an SQE (bytes 0-7 from CDW2/3, 8-15 from
 * CDW14/15); the caller's buffer holds 16 bytes. Returns the key length
 * field (0: the key is at the head of the data buffer). */
NKV_HD uint32_t nkv_kv_key_get(const struct nkv_sqe *s, uint8_t key[NKV_KEY_INLINE_MAX])
{
	uint32_t w[4];
	uint32_t i;

	w[0] = s->cdw2;
	w[1] = s->cdw3;
	w[2] = s->cdw14;
	w[3] = s->cdw15;
	/* Four bytes of one dword at a time: compilers merge these into one
	 * 32-bit store on a little-endian CPU (a byte loop was ~180
	 * instructions, a tenth of nkv-target's work for an Exist). */
	for (i = 0; i < 4; i++) {
		key[4 * i] = (uint8_t)w[i];
		key[4 * i + 1] = (uint8_t)(w[i] >> 8);
		key[4 * i + 2] = (uint8_t)(w[i] >> 16);
		key[4 * i + 3] = (uint8_t)(w[i] >> 24);
	}
	return nkv_kv_key_len(s);
}

/* KV Format descriptor inside the KV Identify Namespace (16 bytes). */
struct nkv_kv_format {
	uint16_t kml;	/* maximum key length, bytes */
	uint8_t rsvd2;
	uint8_t rp;	/* relative performance [1:0] */
	uint32_t mvl;	/* maximum value length, bytes */
	uint32_t mnk;	/* maximum number of keys; 0 = no limit reported */
	uint8_t rsvd12[4];
};
NKV_ASSERT_SIZE(struct nkv_kv_format, 16);
NKV_ASSERT_OFF(struct nkv_kv_format, kml, 0);
NKV_ASSERT_OFF(struct nkv_kv_format, rp, 3);
NKV_ASSERT_OFF(struct nkv_kv_format, mvl, 4);
NKV_ASSERT_OFF(struct nkv_kv_format, mnk, 8);

/* I/O command set specific Identify Namespace for KV (CNS 05h, CSI 01h). */
struct nkv_id_ns_kv {
	uint64_t nsze;		/* bytes */
	uint8_t rsvd8[8];
	uint64_t nuse;		/* bytes in use */
	uint8_t nsfeat;
	uint8_t nkvf;		/* number of KV formats, 0's based */
	uint8_t nmic;
	uint8_t rescap;
	uint8_t fpi;
	uint8_t rsvd29[3];
	uint32_t novg;		/* optimal value granularity */
	uint32_t anagrpid;
	uint8_t rsvd40[3];
	uint8_t nsattr;
	uint16_t nvmsetid;
	uint16_t endgid;
	uint8_t nguid[16];
	uint8_t eui64[8];
	struct nkv_kv_format kvf[16];
	uint8_t rsvd328[3512];
	uint8_t vs[256];
};
NKV_ASSERT_SIZE(struct nkv_id_ns_kv, 4096);
NKV_ASSERT_OFF(struct nkv_id_ns_kv, nuse, 16);
NKV_ASSERT_OFF(struct nkv_id_ns_kv, nsfeat, 24);
NKV_ASSERT_OFF(struct nkv_id_ns_kv, nkvf, 25);
NKV_ASSERT_OFF(struct nkv_id_ns_kv, novg, 32);
NKV_ASSERT_OFF(struct nkv_id_ns_kv, anagrpid, 36);
NKV_ASSERT_OFF(struct nkv_id_ns_kv, nsattr, 43);
NKV_ASSERT_OFF(struct nkv_id_ns_kv, nguid, 48);
NKV_ASSERT_OFF(struct nkv_id_ns_kv, eui64, 64);
NKV_ASSERT_OFF(struct nkv_id_ns_kv, kvf, 72);
NKV_ASSERT_OFF(struct nkv_id_ns_kv, rsvd328, 328);
NKV_ASSERT_OFF(struct nkv_id_ns_kv, vs, 3840);

/* NSATTR bit 0: the namespace is write protected (read-only). */
#define NKV_NSATTR_WRITE_PROTECTED 0x1u

/*
 * nkv's vendor-specific bytes of the KV Identify Namespace (vs[], bytes
 * 3840..4095): what a controller honours beyond the KV command set. A
 * controller that does not fill them (sig not "nkvX") advertises nothing:
 * hosts then send no vendor option bit.
 */
struct nkv_kv_vs {
	uint8_t sig[4];		/* NKV_KV_VS_SIG: 'n' 'k' 'v' 'X' */
	uint8_t ver;		/* NKV_KV_VS_VER */
	uint8_t flags;		/* NKV_KV_VS_* */
	uint16_t rsvd6;
	uint32_t store_opts;	/* NKV_STORE_VENDOR_MASK bits honoured (CDW11
				 * positions) */
	uint32_t max_ttl;	/* longest TTL, seconds; 0: any u32 */
	uint32_t cmd_timeout_ms; /* longest an I/O command may take before the
				 * controller answers it with a status (its
				 * backend's own timeout); 0: not said. A
				 * client waits longer than this (a margin)
				 * so the status, not its timeout, answers */
	uint8_t rsvd20[236];
};
NKV_ASSERT_SIZE(struct nkv_kv_vs, 256);
NKV_ASSERT_OFF(struct nkv_kv_vs, ver, 4);
NKV_ASSERT_OFF(struct nkv_kv_vs, flags, 5);
NKV_ASSERT_OFF(struct nkv_kv_vs, store_opts, 8);
NKV_ASSERT_OFF(struct nkv_kv_vs, max_ttl, 12);
NKV_ASSERT_OFF(struct nkv_kv_vs, cmd_timeout_ms, 16);
#define NKV_KV_VS_SIG "nkvX"
#define NKV_KV_VS_VER 1u
#define NKV_KV_VS_READ_ONLY 0x1u	/* Store and Delete answer SCT 1h / SC 82h */
#define NKV_KV_VS_SIZE_QUERY 0x2u	/* Retrieve with CDW10 = 0: DW0 = the
					 * stored size, nothing moved */
#define NKV_KV_VS_EXEC 0x4u		/* Exec (83h) is served (modules still
					 * need an allowlist entry) */
NKV_STATIC_ASSERT((NKV_KV_VS_READ_ONLY | NKV_KV_VS_SIZE_QUERY | NKV_KV_VS_EXEC) <= 0xffu,
		  "nkv_kv_vs.flags is one byte");
NKV_STATIC_ASSERT(!(NKV_KV_VS_EXEC & (NKV_KV_VS_READ_ONLY | NKV_KV_VS_SIZE_QUERY)),
		  "NKV_KV_VS_EXEC is a bit of its own");

/*
 * Exec (83h, the rados-nkv dialect's vendor command, its
 * docs/wire-format.md): run the module a namespace's allowlist binds to
 * op-ID CDW13 against the value of a key, next to it. One buffer both
 * ways: in, [u16 key_len][key (1..255)][input (CDW10 bytes)]; out, the
 * module's result from byte 0, at most CDW12 bytes (a longer one is
 * truncated, not failed); CQE DW0 = the result's true length. KL
 * (CDW11[7:0]) and the option byte are 0. The buffer is
 * nkv_exec_buf_size() bytes. Over NVMe/TCP the input part travels as
 * in-capsule data and the output as C2HData of CDW12 bytes (docs/wire.md).
 */
NKV_HD uint32_t nkv_exec_in_len(const struct nkv_sqe *s) { return s->cdw10; }
NKV_HD uint32_t nkv_exec_out_cap(const struct nkv_sqe *s) { return s->cdw12; }
NKV_HD uint32_t nkv_exec_op_id(const struct nkv_sqe *s) { return s->cdw13; }
/* max(2 + klen + ilen, ocap), 64-bit: CDW10 and CDW12 are any u32. */
NKV_HD uint64_t nkv_exec_buf_size(uint32_t klen, uint32_t ilen, uint32_t ocap)
{
	uint64_t in = 2ull + klen + ilen;

	return in > ocap ? in : (uint64_t)ocap;
}
/* Exec's own statuses: SCT 1h (command specific), vendor codes C0h-FFh
 * (rados-nkv defines none). Each is logged by the target with the
 * namespace, op-ID and why. */
#define NKV_SC_EXEC_NOT_ALLOWED 0xc0u	/* no allowlist entry for (nsid, op-ID) */
#define NKV_SC_EXEC_DIGEST 0xc1u	/* the module's bytes (or their absence)
					 * do not hash to the allowlisted SHA-256 */
#define NKV_SC_EXEC_BUDGET 0xc2u	/* instructions, memory, output or wall
					 * time past the entry's caps */
#define NKV_SC_EXEC_MODULE 0xc3u	/* the module failed to load or raised an
					 * error (forbidden calls included) */
#define NKV_EXEC_DIGEST_LEN 32u		/* SHA-256 */

/* List payload: u32 count, then per key {u16 length, key bytes, zero pad
 * so the next entry starts on a 4-byte boundary}. Only whole entries. */
struct nkv_list_hdr {
	uint32_t count;
};
NKV_ASSERT_SIZE(struct nkv_list_hdr, 4);
#define NKV_LIST_HDR_SIZE 4u
/* Bytes one entry with a key of @klen bytes takes, padding included. */
NKV_HD uint32_t nkv_list_entry_size(uint32_t klen) { return (2u + klen + 3u) & ~3u; }

/* Memory page size every nkv component uses for PRPs (CC.MPS = 0). */
#define NKV_PAGE_SHIFT 12u
#define NKV_PAGE_SIZE (1u << NKV_PAGE_SHIFT)

#endif /* NKV_WIRE_H */
