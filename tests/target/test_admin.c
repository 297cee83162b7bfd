/* SPDX-License-Identifier: MIT */
/* Admin commands: Identify pages field by field, queue management,
 * features, log pages, Abort, unknown opcodes. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "tgt_host.h"

static struct h H;
static uint8_t id[4096];

static void setup(void)
{
	struct nkv_be_conf kv = { sizeof(kv), .capacity = 1 << 20,
				  .max_keys = 1000, .max_value = 65536 };
	struct nkv_tgt_ctrl_opts co = { sizeof(co), .cntlid = 7, .mqes = 256 };

	h_init(&H, &co, &kv);
	cr_assert_eq(h_enable(&H, 32), NKV_CSTS_RDY);
}

static void teardown(void)
{
	h_fini(&H);
}

TestSuite(admin, .init = setup, .fini = teardown, .timeout = 20);

#define SC(sc) NKV_STATUS(NKV_SCT_GENERIC, sc)
#define CS(sc) NKV_STATUS(NKV_SCT_CMD_SPECIFIC, sc)

static int all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		if (*b++)
			return 0;
	return 1;
}

Test(admin, identify_controller)
{
	const struct nkv_id_ctrl *c = (const void *)id;

	cr_assert_eq(h_identify(&H, NKV_CNS_CTRL, 0, 0, id), 0);
	cr_assert_neq(c->vid, 0);
	cr_assert_eq(c->ssvid, c->vid);
	cr_assert_eq(memcmp(c->sn, "NKV0001             ", 20), 0);
	cr_assert_eq(memcmp(c->mn, "nkv-target", 10), 0);
	cr_assert_eq(c->mn[10], ' ');
	cr_assert_eq(c->mn[39], ' ');
	cr_assert_neq(c->fr[0], 0);
	cr_assert_eq(c->mdts, 8);
	cr_assert_eq(c->cntlid, 7);
	cr_assert_eq(c->ver, 0x00020000);
	cr_assert_eq(c->ctratt, 0);
	cr_assert_eq(c->cntrltype, 1);
	cr_assert_eq(c->elpe, 63);
	cr_assert_eq(c->sqes, 0x66);
	cr_assert_eq(c->cqes, 0x44);
	cr_assert_eq(c->maxcmd, 256);
	cr_assert_eq(c->nn, NKV_TGT_MAX_NS);
	cr_assert_eq(c->oncs, 0);
	cr_assert_eq(c->sgls, NKV_SGLS_SUPPORTED | NKV_SGLS_LONGER_THAN_DATA, "byte-aligned SGLs, longer than the data allowed");
	cr_assert_str_eq(c->subnqn, "nqn.2026-01.io.nkv:target");
	cr_assert(all_zero(c->psd, sizeof(c->psd)));
	cr_assert(all_zero(c->rsvd1024, sizeof(c->rsvd1024)));
}

Test(admin, identify_namespace_nvm_and_kv)
{
	const struct nkv_id_ns_nvm *n = (const void *)id;

	cr_assert_eq(h_identify(&H, NKV_CNS_NS, 2, 0, id), 0);
	cr_assert_eq(n->nsze, (1 << 20) / 512);
	cr_assert_eq(n->ncap, n->nsze);
	cr_assert_eq(n->nlbaf, 0);
	cr_assert_eq(n->flbas, 0);
	cr_assert_eq(n->lbaf[0].lbads, 9);
	cr_assert_eq(n->lbaf[0].ms, 0);
	cr_assert_not(all_zero(n->nguid, 16));
	cr_assert_eq(h_identify(&H, NKV_CNS_NS, 1, 0, id), 0);
	cr_assert(all_zero(id, 4096), "KV namespace: zeroed NVM data");
	cr_assert_eq(h_identify(&H, NKV_CNS_NS, 3, 0, id), 0);
	cr_assert(all_zero(id, 4096), "inactive namespace: zeroed");
	cr_assert_eq(h_identify(&H, NKV_CNS_NS, 0, 0, id), SC(NKV_SC_INVALID_NS));
	cr_assert_eq(h_identify(&H, NKV_CNS_NS, 33, 0, id), SC(NKV_SC_INVALID_NS));
}

Test(admin, identify_active_lists)
{
	const uint32_t *l = (const void *)id;

	cr_assert_eq(h_identify(&H, NKV_CNS_ACTIVE_NS_LIST, 0, 0, id), 0);
	cr_assert_eq(l[0], 1);
	cr_assert_eq(l[1], 2);
	cr_assert(all_zero(l + 2, 4096 - 8));
	cr_assert_eq(h_identify(&H, NKV_CNS_ACTIVE_NS_LIST, 1, 0, id), 0);
	cr_assert_eq(l[0], 2);
	cr_assert_eq(l[1], 0);
	cr_assert_eq(h_identify(&H, NKV_CNS_ACTIVE_NS_LIST, 0xfffffffe, 0, id),
		     SC(NKV_SC_INVALID_NS));
	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_ACTIVE_NS_LIST, 0, NKV_CSI_KV, id), 0);
	cr_assert_eq(l[0], 1);
	cr_assert_eq(l[1], 0);
	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_ACTIVE_NS_LIST, 0, NKV_CSI_NVM, id), 0);
	cr_assert_eq(l[0], 2);
	cr_assert_eq(l[1], 0);
	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_ACTIVE_NS_LIST, 0, 2, id),
		     SC(NKV_SC_INVALID_FIELD));
}

/* Find descriptor type t in a CNS 03h list; returns its NID. */
static const uint8_t *desc(uint8_t t, uint8_t *len)
{
	size_t off = 0;

	while (off + 4 <= 4096 && id[off]) {
		if (id[off] == t) {
			*len = id[off + 1];
			return id + off + 4;
		}
		off += 4 + id[off + 1];
	}
	return NULL;
}

Test(admin, identify_descriptors)
{
	uint8_t len = 0, nguid[16];
	const uint8_t *p;

	cr_assert_eq(h_identify(&H, NKV_CNS_NS_DESC_LIST, 1, 0, id), 0);
	p = desc(NKV_NIDT_CSI, &len);
	cr_assert_not_null(p);
	cr_assert_eq(len, 1);
	cr_assert_eq(*p, NKV_CSI_KV);
	p = desc(NKV_NIDT_NGUID, &len);
	cr_assert_not_null(p);
	cr_assert_eq(len, 16);
	memcpy(nguid, p, 16);
	p = desc(NKV_NIDT_UUID, &len);
	cr_assert_not_null(p);
	cr_assert_eq(len, 16);
	cr_assert_eq(p[6] >> 4, 8, "UUID version nibble");
	cr_assert_eq(h_identify(&H, NKV_CNS_NS_DESC_LIST, 2, 0, id), 0);
	cr_assert_eq(*desc(NKV_NIDT_CSI, &len), NKV_CSI_NVM);
	cr_assert_neq(memcmp(desc(NKV_NIDT_NGUID, &len), nguid, 16), 0,
		      "namespaces have distinct NGUIDs");
	cr_assert_eq(h_identify(&H, NKV_CNS_NS_DESC_LIST, 3, 0, id),
		     SC(NKV_SC_INVALID_NS));
	/* The KV Identify Namespace NGUID is the descriptor's. */
	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_NS, 1, NKV_CSI_KV, id), 0);
	cr_assert_eq(memcmp(((struct nkv_id_ns_kv *)id)->nguid, nguid, 16), 0);
}

Test(admin, identify_kv_namespace)
{
	const struct nkv_id_ns_kv *k = (const void *)id;

	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_NS, 1, NKV_CSI_KV, id), 0);
	cr_assert_eq(k->nsze, 1 << 20);
	cr_assert_eq(k->nuse, 0);
	cr_assert_eq(k->nkvf, 0);
	cr_assert_eq(k->kvf[0].kml, 255, "keys to 255 bytes (17..255 in head form)");
	cr_assert_eq(k->kvf[0].mvl, 65536);
	cr_assert_eq(k->kvf[0].mnk, 1000);
	cr_assert(all_zero(&k->kvf[1], 15 * 16));
	cr_assert(all_zero(k->rsvd328, sizeof(k->rsvd328)));
	cr_assert_eq(h_create_qpair(&H, 1, 8), 0);
	cr_assert_eq(h_store(&H, 1, "abc", 3, "0123456789", 10, 0), 0);
	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_NS, 1, NKV_CSI_KV, id), 0);
	cr_assert_eq(k->nuse, nkv_be_mem_key_cost(10), "a key's real cost");
	/* Wrong or unknown CSI; NVM-specific page of the NVM namespace. */
	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_NS, 1, NKV_CSI_NVM, id),
		     SC(NKV_SC_INVALID_FIELD));
	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_NS, 1, 9, id), SC(NKV_SC_INVALID_FIELD));
	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_NS, 2, NKV_CSI_KV, id),
		     SC(NKV_SC_INVALID_FIELD));
	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_NS, 2, NKV_CSI_NVM, id), 0);
	cr_assert(all_zero(id, 4096));
	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_NS, 0, NKV_CSI_KV, id),
		     SC(NKV_SC_INVALID_NS));
}

Test(admin, identify_iocs_ctrl_vector_and_bad_cns)
{
	uint64_t v;

	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_CTRL, 0, NKV_CSI_KV, id), 0);
	cr_assert(all_zero(id, 4096));
	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_CTRL, 0, NKV_CSI_NVM, id), 0);
	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_CTRL, 0, 5, id), SC(NKV_SC_INVALID_FIELD));
	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_VECTOR, 0, 0, id), 0);
	memcpy(&v, id, 8);
	cr_assert_eq(v, NKV_IOCS_VECTOR_NVM | NKV_IOCS_VECTOR_KV);
	cr_assert(all_zero(id + 8, 4088));
	cr_assert_eq(h_identify(&H, 0x10, 0, 0, id), SC(NKV_SC_INVALID_FIELD));
	cr_assert_eq(h_identify(&H, 0x04, 0, 0, id), SC(NKV_SC_INVALID_FIELD));
}

Test(admin, identify_bad_buffer)
{
	struct nkv_sqe s = { 0 };

	s.cdw0 = NKV_ADM_IDENTIFY;
	s.cdw10 = NKV_CNS_CTRL;
	s.prp1 = 0x40;	/* unregistered */
	cr_assert_eq(h_cmd(&H, 0, &s, NULL), SC(NKV_SC_DATA_XFER_ERROR));
	s.prp1 = H_IOVA + 2;
	cr_assert_eq(h_cmd(&H, 0, &s, NULL), SC(NKV_SC_PRP_OFFSET_INVALID));
	s.prp1 = H_IOVA + 8;	/* second page needs PRP2 */
	s.prp2 = 0x7000000000ull;
	cr_assert_eq(h_cmd(&H, 0, &s, NULL), SC(NKV_SC_DATA_XFER_ERROR));
	s.cdw0 |= 1u << 14;	/* PSDT: SGLs not supported */
	s.prp1 = H_IOVA;
	cr_assert_eq(h_cmd(&H, 0, &s, NULL), SC(NKV_SC_INVALID_FIELD));
}

static uint16_t q_cmd(uint8_t opc, uint16_t qid, uint32_t entries, uint32_t cdw11,
		      uint64_t prp1)
{
	struct nkv_sqe s = { 0 };

	s.cdw0 = opc;
	s.cdw10 = nkv_queue_cdw10(qid, entries);
	s.cdw11 = cdw11;
	s.prp1 = prp1;
	return h_cmd(&H, 0, &s, NULL);
}

Test(admin, queue_create_delete_errors)
{
	uint64_t m = h_alloc(&H, 256 * 64);

	cr_assert_eq(q_cmd(NKV_ADM_CREATE_CQ, 0, 8, 1, m), CS(NKV_SC_QID_INVALID));
	cr_assert_eq(q_cmd(NKV_ADM_CREATE_CQ, 65, 8, 1, m), CS(NKV_SC_QID_INVALID));
	cr_assert_eq(q_cmd(NKV_ADM_CREATE_CQ, 1, 1, 1, m), CS(NKV_SC_QSIZE_INVALID));
	cr_assert_eq(q_cmd(NKV_ADM_CREATE_CQ, 1, 257, 1, m), CS(NKV_SC_QSIZE_INVALID));
	cr_assert_eq(q_cmd(NKV_ADM_CREATE_CQ, 1, 8, 0, m), SC(NKV_SC_INVALID_FIELD));
	cr_assert_eq(q_cmd(NKV_ADM_CREATE_CQ, 1, 8, 1, m + 16), SC(NKV_SC_INVALID_FIELD));
	cr_assert_eq(q_cmd(NKV_ADM_CREATE_CQ, 1, 8, 1, 0x7000000000ull),
		     SC(NKV_SC_DATA_XFER_ERROR));
	cr_assert_eq(q_cmd(NKV_ADM_CREATE_CQ, 1, 256, 1, m), 0);
	/* Queue memory running past the registered region. */
	cr_assert_eq(q_cmd(NKV_ADM_CREATE_SQ, 1, 256, nkv_create_sq_cdw11(1),
			   H_IOVA + H_ARENA - 4096), SC(NKV_SC_DATA_XFER_ERROR));
	cr_assert_eq(q_cmd(NKV_ADM_CREATE_CQ, 1, 8, 1, m), CS(NKV_SC_QID_INVALID));
	cr_assert_eq(q_cmd(NKV_ADM_CREATE_SQ, 1, 8, nkv_create_sq_cdw11(2),
			   m + 8192), CS(NKV_SC_CQ_INVALID));
	cr_assert_eq(q_cmd(NKV_ADM_CREATE_SQ, 1, 8, nkv_create_sq_cdw11(0),
			   m + 8192), CS(NKV_SC_CQ_INVALID));
	cr_assert_eq(q_cmd(NKV_ADM_CREATE_SQ, 1, 8, 1u << 16, m + 8192),
		     SC(NKV_SC_INVALID_FIELD), "PC = 0");
	cr_assert_eq(q_cmd(NKV_ADM_CREATE_SQ, 0, 8, nkv_create_sq_cdw11(1),
			   m + 8192), CS(NKV_SC_QID_INVALID));
	cr_assert_eq(q_cmd(NKV_ADM_CREATE_SQ, 1, 1, nkv_create_sq_cdw11(1),
			   m + 8192), CS(NKV_SC_QSIZE_INVALID));
	cr_assert_eq(q_cmd(NKV_ADM_CREATE_SQ, 1, 8, nkv_create_sq_cdw11(1),
			   m + 8192), 0);
	cr_assert_eq(q_cmd(NKV_ADM_CREATE_SQ, 1, 8, nkv_create_sq_cdw11(1),
			   m + 12288), CS(NKV_SC_QID_INVALID));
	cr_assert_eq(q_cmd(NKV_ADM_DELETE_CQ, 1, 1, 0, 0),
		     CS(NKV_SC_INVALID_QUEUE_DELETION));
	cr_assert_eq(q_cmd(NKV_ADM_DELETE_SQ, 2, 1, 0, 0), CS(NKV_SC_QID_INVALID));
	cr_assert_eq(q_cmd(NKV_ADM_DELETE_SQ, 0, 1, 0, 0), CS(NKV_SC_QID_INVALID));
	cr_assert_eq(q_cmd(NKV_ADM_DELETE_SQ, 1, 1, 0, 0), 0);
	cr_assert_eq(q_cmd(NKV_ADM_DELETE_CQ, 1, 1, 0, 0), 0);
	cr_assert_eq(q_cmd(NKV_ADM_DELETE_CQ, 1, 1, 0, 0), CS(NKV_SC_QID_INVALID));
	cr_assert_eq(q_cmd(NKV_ADM_DELETE_CQ, 0, 1, 0, 0), CS(NKV_SC_QID_INVALID));
}

static uint16_t feat(uint8_t opc, uint32_t cdw10, uint32_t cdw11, uint32_t *dw0)
{
	struct nkv_sqe s = { 0 };
	struct nkv_cqe e;
	uint16_t st;

	s.cdw0 = opc;
	s.cdw10 = cdw10;
	s.cdw11 = cdw11;
	st = h_cmd(&H, 0, &s, &e);
	if (dw0)
		*dw0 = e.dw0;
	return st;
}

Test(admin, features_number_of_queues)
{
	uint32_t dw0;

	cr_assert_eq(feat(NKV_ADM_SET_FEATURES, NKV_FID_NUM_QUEUES,
			  nkv_num_queues(200, 3), &dw0), 0);
	cr_assert_eq(dw0, nkv_num_queues(64, 3));
	cr_assert_eq(feat(NKV_ADM_GET_FEATURES, NKV_FID_NUM_QUEUES, 0, &dw0), 0);
	cr_assert_eq(dw0, nkv_num_queues(64, 3));
	cr_assert_eq(feat(NKV_ADM_SET_FEATURES, NKV_FID_NUM_QUEUES, 0xffff, NULL),
		     SC(NKV_SC_INVALID_FIELD));
	/* Only 3 CQs granted: CQ 4 is refused. */
	cr_assert_eq(q_cmd(NKV_ADM_CREATE_CQ, 4, 8, 1, h_alloc(&H, 4096)),
		     CS(NKV_SC_QID_INVALID));
	cr_assert_eq(h_create_qpair(&H, 3, 8), 0);
	cr_assert_eq(feat(NKV_ADM_SET_FEATURES, NKV_FID_NUM_QUEUES, 0, NULL),
		     SC(0x0c), "no change once I/O queues exist");
	cr_assert_eq(feat(NKV_ADM_SET_FEATURES, NKV_FID_NUM_QUEUES | (1u << 31), 0, NULL),
		     CS(NKV_SC_FEATURE_NOT_SAVEABLE));
	cr_assert_eq(feat(NKV_ADM_SET_FEATURES, 0x02, 0, NULL), SC(NKV_SC_INVALID_FIELD));
	cr_assert_eq(feat(NKV_ADM_GET_FEATURES, 0x02, 0, NULL), SC(NKV_SC_INVALID_FIELD));
}

Test(admin, features_kv_config_delete_missing)
{
	struct nkv_sqe s;
	uint32_t dw0 = 9;

	cr_assert_eq(h_create_qpair(&H, 1, 8), 0);
	cr_assert_eq(feat(NKV_ADM_GET_FEATURES, NKV_FID_KV_CONFIG, 0, &dw0), 0);
	cr_assert_eq(dw0, 0);
	h_kv(&s, NKV_KV_DELETE, 1, "nope", 4, 0, 0);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_KV_KEY_NOT_EXISTS));
	cr_assert_eq(feat(NKV_ADM_SET_FEATURES, NKV_FID_KV_CONFIG, 1, NULL), 0);
	cr_assert_eq(feat(NKV_ADM_GET_FEATURES, NKV_FID_KV_CONFIG, 0, &dw0), 0);
	cr_assert_eq(dw0, 1);
	cr_assert_eq(feat(NKV_ADM_GET_FEATURES, NKV_FID_KV_CONFIG | (1u << 8), 0, &dw0), 0);
	cr_assert_eq(dw0, 0, "default value");
	h_kv(&s, NKV_KV_DELETE, 1, "nope", 4, 0, 0);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	/* Exist still reports absence. */
	h_kv(&s, NKV_KV_EXIST, 1, "nope", 4, 0, 0);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_KV_KEY_NOT_EXISTS));
}

/* Get Log Page of the command set csi (CDW14). */
static uint16_t get_log_csi(uint8_t lid, uint32_t csi, uint32_t bytes, uint64_t off, void *out)
{
	uint64_t iova = h_alloc(&H, bytes);
	struct nkv_sqe s = { 0 };
	uint16_t st;

	s.cdw0 = NKV_ADM_GET_LOG_PAGE;
	s.nsid = 0xffffffff;
	s.cdw10 = lid | ((bytes / 4 - 1) << 16);
	s.cdw12 = (uint32_t)off;
	s.cdw14 = csi << 24;
	h_prp(&H, &s, iova, bytes);
	memset(h_ptr(&H, iova), 0xa5, bytes);	/* prove every byte is written */
	st = h_cmd(&H, 0, &s, NULL);
	memcpy(out, h_ptr(&H, iova), bytes);
	return st;
}

static uint16_t get_log(uint8_t lid, uint32_t bytes, uint64_t off, void *out)
{
	return get_log_csi(lid, NKV_CSI_NVM, bytes, off, out);
}

/*
 * Commands Supported and Effects (05h), advertised in LPA: Linux refuses
 * a KV namespace (no /dev/ngXnY) when the page is refused
 * (docs/tcp.md). The admin commands, then each command set's own.
 */
Test(admin, cmd_effects_log)
{
	const struct nkv_id_ctrl *c = (const void *)id;
	static struct nkv_cmd_effects_log l;

	cr_assert_eq(h_identify(&H, NKV_CNS_CTRL, 0, 0, id), 0);
	cr_assert(c->lpa & NKV_LPA_CMD_EFFECTS, "LPA %#x", c->lpa);
	cr_assert_eq(get_log_csi(NKV_LID_CMD_EFFECTS, NKV_CSI_KV, sizeof(l), 0, &l), 0);
	cr_expect_eq(l.acs[NKV_ADM_IDENTIFY], NKV_CE_CSUPP);
	cr_expect_eq(l.acs[NKV_ADM_CREATE_SQ], NKV_CE_CSUPP, "a ring transport creates queues");
	cr_expect_eq(l.acs[0x7f], 0, "Fabrics commands are not listed");
	cr_expect_eq(l.iocs[NKV_KV_STORE], NKV_CE_CSUPP | NKV_CE_LBCC);
	cr_expect_eq(l.iocs[NKV_KV_DELETE], NKV_CE_CSUPP | NKV_CE_LBCC);
	cr_expect_eq(l.iocs[NKV_KV_RETRIEVE], NKV_CE_CSUPP);
	cr_expect_eq(l.iocs[NKV_KV_LIST], NKV_CE_CSUPP);
	cr_expect_eq(l.iocs[NKV_KV_EXIST], NKV_CE_CSUPP);
	cr_expect_eq(l.iocs[0x03], 0);
	cr_expect(all_zero(l.rsvd2048, sizeof(l.rsvd2048)));
	cr_assert_eq(get_log_csi(NKV_LID_CMD_EFFECTS, NKV_CSI_NVM, sizeof(l), 0, &l), 0);
	cr_expect_eq(l.iocs[NKV_NVM_WRITE], NKV_CE_CSUPP | NKV_CE_LBCC);
	cr_expect_eq(l.iocs[NKV_NVM_READ], NKV_CE_CSUPP);
	cr_expect_eq(l.iocs[NKV_KV_LIST], 0, "06h is not an NVM command here");
	cr_assert_eq(get_log_csi(NKV_LID_CMD_EFFECTS, 0x02, sizeof(l), 0, &l), 0);
	cr_expect(all_zero(l.iocs, sizeof(l.iocs)), "no I/O command of a set not served");
}

Test(admin, log_pages)
{
	struct nkv_error_log el[2];
	struct nkv_smart_log sm;
	struct nkv_sqe s;
	uint8_t buf[8192], *big;

	cr_assert_eq(h_create_qpair(&H, 1, 8), 0);
	cr_assert_eq(h_store(&H, 1, "a", 1, "xyz", 3, 0), 0);
	cr_assert_eq(h_store(&H, 1, "b", 1, "xyz", 3, 0), 0);
	h_kv(&s, NKV_KV_EXIST, 1, "c", 1, 0, 0);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_KV_KEY_NOT_EXISTS));
	h_kv(&s, NKV_KV_EXIST, 1, "0123456789abcdefg", 17, 0, 0);	/* inline cannot carry 17 */
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_KV_INVALID_KEY_SIZE));
	cr_assert_eq(get_log(NKV_LID_ERROR, sizeof(el), 0, el), 0);
	cr_assert_eq(el[0].error_count, 2, "newest first");
	cr_assert_eq(el[0].sqid, 1);
	cr_assert_eq(el[0].status >> 1, SC(NKV_SC_KV_INVALID_KEY_SIZE));
	cr_assert_eq(el[0].cid, H.q[1].cid - 1);
	cr_assert_eq(el[0].nsid, 1);
	cr_assert_eq(el[1].error_count, 1);
	cr_assert_eq(el[1].status >> 1, SC(NKV_SC_KV_KEY_NOT_EXISTS));
	cr_assert_eq(get_log(NKV_LID_SMART, 512, 0, &sm), 0);
	cr_assert_eq(sm.host_writes[0], 2);
	cr_assert_eq(sm.data_units_written[0], 1);
	cr_assert_eq(sm.host_reads[0], 0);
	cr_assert_eq(sm.num_err_log_entries[0], 2);
	cr_assert_eq(sm.critical_warning, 0);
	/* Longer than the page: zero filled; offset; bad offset; bad LID. */
	cr_assert_eq(get_log(NKV_LID_SMART, 8192, 0, buf), 0);
	cr_assert(all_zero(buf + 512, 8192 - 512));
	big = malloc(200 << 10);	/* zeros in several chunks, none allocated */
	cr_assert_eq(get_log(NKV_LID_ERROR, 200 << 10, 64, big), 0);
	cr_assert_eq(memcmp(big, &el[1], 64), 0, "the page from the offset");
	/* Two errors logged: past the second entry, zeros to the end. */
	cr_assert(all_zero(big + 64, (200 << 10) - 64));
	free(big);
	cr_assert_eq(get_log(NKV_LID_SMART, 16, 64, buf), 0);
	cr_assert_eq(memcmp(buf, &sm.host_reads, 16), 0);
	cr_assert_eq(get_log(NKV_LID_SMART, 16, 512, buf), SC(NKV_SC_INVALID_FIELD));
	cr_assert_eq(get_log(0x03, 512, 0, buf), CS(NKV_SC_LOG_PAGE_INVALID));
	cr_assert_eq(get_log(0xc0, 512, 0, buf), CS(NKV_SC_LOG_PAGE_INVALID));
}

/* NUMDL = NUMDU = 0xffff asks for 2^32 dwords (16 GiB): more than any
 * transfer, so Invalid Field; a 32-bit NUMD + 1 wrapped to 0 and the
 * command "succeeded" with no data. */
Test(admin, log_numd_max_is_invalid_field)
{
	uint64_t iova = h_alloc(&H, 4096);
	struct nkv_sqe s = { 0 };

	s.cdw0 = NKV_ADM_GET_LOG_PAGE;
	s.nsid = 0xffffffff;
	s.cdw10 = NKV_LID_SMART | (0xffffu << 16);
	s.cdw11 = 0xffff;
	h_prp(&H, &s, iova, 4096);
	cr_assert_eq(h_cmd(&H, 0, &s, NULL), SC(NKV_SC_INVALID_FIELD));
	cr_assert_eq(nkv_log_numd(0xffff0000u, 0xffff), 1ull << 32);
}

Test(admin, abort_and_unknown_opcodes)
{
	struct nkv_sqe s = { 0 };
	struct nkv_cqe e;

	s.cdw0 = NKV_ADM_ABORT;
	s.cdw10 = 5;
	cr_assert_eq(h_cmd(&H, 0, &s, &e), 0);
	cr_assert_eq(e.dw0 & 1, 1, "not aborted");
	memset(&s, 0, sizeof(s));
	s.cdw0 = 0x7f;
	cr_assert_eq(h_cmd(&H, 0, &s, &e), SC(NKV_SC_INVALID_OPCODE));
	s.cdw0 = 0x80;	/* Format NVM: not implemented */
	cr_assert_eq(h_cmd(&H, 0, &s, &e), SC(NKV_SC_INVALID_OPCODE));
	s.cdw0 = NKV_ADM_IDENTIFY | (1u << 8);	/* fused */
	cr_assert_eq(h_cmd(&H, 0, &s, &e), SC(NKV_SC_INVALID_FIELD));
	cr_assert_eq(nkv_cqe_sqid(e.dw2), 0);
	cr_assert_eq(nkv_cqe_sqhd(e.dw2), 4);
	cr_assert_eq(nkv_cqe_cid(e.dw3), 3);
}
