/* SPDX-License-Identifier: MIT */
/* The transport-neutral request (req.h) and the fabrics controller model:
 * Connect (admin and I/O, CNTLIDs, host and subsystem NQNs), Property
 * Get/Set, CC.EN -> CSTS.RDY, Identify's fabrics fields and CNS 08h, KV
 * commands with data as the transport's iovecs (inline keys and head
 * form), Keep Alive expiry, AERs held, the Discovery log page. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "nvmf/fabrics.h"
#include "target/core/poller.h"
#include "target/core/req.h"
#include "tgt_host.h"

#define SC(sc) NKV_STATUS(NKV_SCT_GENERIC, sc)
#define CS(sc) NKV_STATUS(NKV_SCT_CMD_SPECIFIC, sc)
#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:test-host"
#define SUBNQN "nqn.2026-01.io.nkv:target"

static struct nkv_subsys *SS;
static struct nkv_tgt_fab *F;
static int ndone;

static void done(struct nkv_tgt_req *r)
{
	(void)r;
	ndone++;
}

static void setup(void)
{
	struct nkv_be_conf kv = { sizeof(kv), .capacity = 64 << 20, .max_keys = 1000,
				  .max_value = 8 << 20 };
	struct nkv_tgt_port p = { 1, NKV_NVMF_ADRFAM_IPV4, "127.0.0.1", "4420" };

	SS = nkv_subsys_create(NULL);
	cr_assert(SS);
	cr_assert_eq(nkv_subsys_add_ns(SS, 1, h_mem(&kv)), 0);
	F = nkv_tgt_fab_create(SS, NULL);
	cr_assert(F);
	cr_assert_eq(nkv_tgt_fab_add_port(F, &p), 0);
	ndone = 0;
}

static void teardown(void)
{
	nkv_tgt_fab_destroy(F);
	nkv_subsys_destroy(SS);
}

TestSuite(capsule, .init = setup, .fini = teardown, .timeout = 30);

static void fab_sqe(struct nkv_sqe *s, uint8_t fctype)
{
	memset(s, 0, sizeof(*s));
	s->cdw0 = NKV_NVMF_OPC;
	s->nsid = fctype;
}

static uint16_t connect(uint16_t qid, uint16_t cntlid, const char *host, const char *sub,
			uint32_t kato, struct nkv_tgt_ctrl **c, uint32_t *dw0)
{
	struct nkv_nvmf_connect_data d;
	struct nkv_tgt_req r = { 0 };

	memset(&d, 0, sizeof(d));
	d.cntlid = cntlid;
	snprintf(d.hostnqn, sizeof(d.hostnqn), "%s", host);
	snprintf(d.subnqn, sizeof(d.subnqn), "%s", sub);
	fab_sqe(&r.sqe, NKV_NVMF_CONNECT);
	r.sqe.cdw10 = (uint32_t)qid << 16;
	r.sqe.cdw11 = 127;	/* 128 entries */
	r.sqe.cdw12 = kato;
	r.qid = qid;
	cr_assert_eq(nkv_tgt_fab_connect(F, &r, &d, sizeof(d), c), 0);
	if (dw0)
		*dw0 = r.dw0;
	return r.status;
}

static struct nkv_tgt_req run(struct nkv_tgt_ctrl *c, uint16_t qid, const struct nkv_sqe *s,
			      void *buf, uint64_t len)
{
	struct nkv_tgt_req r = { .sqe = *s, .qid = qid, .done = done };
	int before = ndone, i;

	if (len) {
		r.iov[0].iov_base = buf;
		r.iov[0].iov_len = len;
		r.iovcnt = 1;
	}
	cr_assert_eq(nkv_tgt_ctrl_exec(c, &r), 0);
	for (i = 0; i < 10000 && ndone == before; i++)
		nkv_tgt_ctrl_poll(c);
	cr_assert_eq(ndone, before + 1, "one done() per request");
	return r;
}

static uint64_t prop_get(struct nkv_tgt_ctrl *c, uint32_t ofst, int eight)
{
	struct nkv_sqe s;
	struct nkv_tgt_req r;

	fab_sqe(&s, NKV_NVMF_PROP_GET);
	s.cdw10 = eight ? 1 : 0;
	s.cdw11 = ofst;
	r = run(c, 0, &s, NULL, 0);
	cr_assert_eq(r.status, 0);
	return r.dw0 | ((uint64_t)r.dw1 << 32);
}

static uint16_t prop_set(struct nkv_tgt_ctrl *c, uint32_t ofst, uint32_t v)
{
	struct nkv_sqe s;

	fab_sqe(&s, NKV_NVMF_PROP_SET);
	s.cdw11 = ofst;
	s.cdw12 = v;
	return run(c, 0, &s, NULL, 0).status;
}

/* Admin Connect, then CC.EN = 1: a ready controller. */
static struct nkv_tgt_ctrl *up(uint32_t kato)
{
	struct nkv_tgt_ctrl *c;

	cr_assert_eq(connect(0, 0xffff, HOSTNQN, SUBNQN, kato, &c, NULL), 0);
	cr_assert_eq(prop_set(c, NKV_REG_CC, h_cc()), 0);
	cr_assert_eq(prop_get(c, NKV_REG_CSTS, 0) & NKV_CSTS_RDY, NKV_CSTS_RDY);
	return c;
}

Test(capsule, connect_property_enable)
{
	struct nkv_tgt_ctrl *c, *c2;
	uint32_t dw0;
	uint64_t cap;

	cr_assert_eq(connect(0, 0xffff, HOSTNQN, SUBNQN, 0, &c, &dw0), 0);
	cr_assert(c);
	cr_assert_eq(dw0, nkv_tgt_ctrl_cntlid(c));
	cr_assert_str_eq(nkv_tgt_ctrl_hostnqn(c), HOSTNQN);
	cap = prop_get(c, NKV_REG_CAP, 1);
	cr_assert_eq(cap & 0xffff, 1023, "MQES");
	cr_assert_eq(prop_get(c, NKV_REG_VS, 0), 0x00020000);
	cr_assert_eq(prop_get(c, NKV_REG_CSTS, 0), 0);
	/* Before CC.EN = 1 only Fabrics commands are answered. */
	{
		struct nkv_sqe s = { .cdw0 = NKV_ADM_IDENTIFY, .cdw10 = NKV_CNS_CTRL };
		uint8_t id[4096];

		cr_assert_eq(run(c, 0, &s, id, sizeof(id)).status, SC(0x0c));
	}
	cr_assert_eq(prop_set(c, NKV_REG_CC, h_cc()), 0);
	cr_assert_eq(prop_get(c, NKV_REG_CSTS, 0) & NKV_CSTS_RDY, NKV_CSTS_RDY);
	/* A second admin Connect: another controller, another CNTLID. */
	cr_assert_eq(connect(0, 0xffff, HOSTNQN, SUBNQN, 0, &c2, NULL), 0);
	cr_assert_neq(nkv_tgt_ctrl_cntlid(c2), nkv_tgt_ctrl_cntlid(c));
}

Test(capsule, property_errors)
{
	struct nkv_tgt_ctrl *c = up(0);
	struct nkv_sqe s;

	fab_sqe(&s, NKV_NVMF_PROP_GET);
	s.cdw11 = NKV_REG_CAP;	/* CAP read as 4 bytes */
	cr_assert_eq(run(c, 0, &s, NULL, 0).status, SC(NKV_SC_INVALID_FIELD));
	s.cdw11 = 0x1000;	/* a doorbell: none on fabrics */
	cr_assert_eq(run(c, 0, &s, NULL, 0).status, SC(NKV_SC_INVALID_FIELD));
	cr_assert_eq(prop_set(c, NKV_REG_CAP, 1), SC(NKV_SC_INVALID_FIELD));
	fab_sqe(&s, NKV_NVMF_AUTH_SEND);
	cr_assert_eq(run(c, 0, &s, NULL, 0).status, SC(NKV_SC_INVALID_OPCODE));
}

Test(capsule, connect_errors)
{
	struct nkv_tgt_ctrl *c = up(0), *x;
	uint16_t id = nkv_tgt_ctrl_cntlid(c);
	uint32_t dw0;

	cr_assert_eq(connect(0, 0xffff, HOSTNQN, "nqn.2026-01.io.nkv:other", 0, &x, &dw0),
		     CS(NKV_SC_CONNECT_PARAM));
	cr_assert_eq(dw0, nkv_nvmf_connect_ipo(1, 256));
	cr_assert_null(x);
	cr_assert_eq(connect(0, 5, HOSTNQN, SUBNQN, 0, &x, &dw0), CS(NKV_SC_CONNECT_PARAM));
	cr_assert_eq(dw0, nkv_nvmf_connect_ipo(1, 16));
	cr_assert_eq(connect(1, (uint16_t)(id + 100), HOSTNQN, SUBNQN, 0, &x, &dw0),
		     CS(NKV_SC_CONNECT_PARAM), "unknown CNTLID");
	cr_assert_eq(connect(1, id, "nqn.2014-08.org.nvmexpress:uuid:intruder", SUBNQN, 0,
			     &x, NULL), CS(NKV_SC_CONNECT_HOST), "another host");
	cr_assert_eq(connect(1, id, HOSTNQN, NKV_NVMF_DISC_NQN, 0, &x, NULL),
		     CS(NKV_SC_CONNECT_PARAM), "another subsystem");
	cr_assert_eq(connect(1, id, HOSTNQN, SUBNQN, 0, &x, NULL), 0);
	cr_assert_eq(x, c);
	cr_assert_eq(connect(1, id, HOSTNQN, SUBNQN, 0, &x, &dw0), CS(NKV_SC_CONNECT_PARAM),
		     "QID 1 twice");
	cr_assert_eq(dw0, nkv_nvmf_connect_ipo(0, 42));
	nkv_tgt_fab_disconnect(F, c, 1);
	cr_assert_eq(connect(1, id, HOSTNQN, SUBNQN, 0, &x, NULL), 0, "QID 1 free again");
	nkv_tgt_fab_disconnect(F, c, 0);	/* the association ends */
	cr_assert_eq(connect(2, id, HOSTNQN, SUBNQN, 0, &x, NULL), CS(NKV_SC_CONNECT_PARAM));
}

Test(capsule, identify_fabrics_fields)
{
	struct nkv_tgt_ctrl *c = up(0);
	struct nkv_sqe s = { .cdw0 = NKV_ADM_IDENTIFY, .cdw10 = NKV_CNS_CTRL };
	uint8_t id[4096];
	const struct nkv_id_ctrl *ic = (const void *)id;
	uint32_t v32;
	uint16_t v16;

	cr_assert_eq(run(c, 0, &s, id, sizeof(id)).status, 0);
	memcpy(&v32, id + NKV_ID_IOCCSZ, 4);
	cr_assert_eq(v32, (64 + NKV_TGT_ICD_IO) / 16);
	memcpy(&v32, id + NKV_ID_IORCSZ, 4);
	cr_assert_eq(v32, 1);
	memcpy(&v16, id + NKV_ID_ICDOFF, 2);
	cr_assert_eq(v16, 0);
	cr_assert_eq(id[NKV_ID_MSDBD], 1);
	memcpy(&v16, id + NKV_ID_KAS, 2);
	cr_assert_neq(v16, 0);
	cr_assert_eq(ic->sgls, NKV_SGLS_SUPPORTED | NKV_SGLS_OFFSET | NKV_SGLS_TRANSPORT);
	cr_assert_eq(ic->cntrltype, 1);
	cr_assert_eq(ic->cntlid, nkv_tgt_ctrl_cntlid(c));
	cr_assert_str_eq(ic->subnqn, SUBNQN);
	/* CNS 08h: namespace 1 ready; CNS 05h CSI 01h: the KV page. */
	s.cdw10 = 0x08;
	s.nsid = 1;
	cr_assert_eq(run(c, 0, &s, id, sizeof(id)).status, 0);
	cr_assert_eq(id[14] & 1, 1, "NSTAT ready");
	s.cdw10 = NKV_CNS_IOCS_NS;
	s.cdw11 = (uint32_t)NKV_CSI_KV << 24;
	cr_assert_eq(run(c, 0, &s, id, sizeof(id)).status, 0);
	cr_assert_eq(((const struct nkv_id_ns_kv *)id)->kvf[0].mvl, 8u << 20);
	/* Queues are connections here. */
	s = (struct nkv_sqe){ .cdw0 = NKV_ADM_CREATE_CQ };
	cr_assert_eq(run(c, 0, &s, NULL, 0).status, SC(NKV_SC_INVALID_OPCODE));
}

static void kv_sqe(struct nkv_sqe *s, uint8_t opc, const char *key, uint32_t cdw10)
{
	uint32_t kl = (uint32_t)strlen(key);

	h_kv(s, opc, 1, key, kl <= 16 ? kl : 0, cdw10, 0);
	s->cdw0 |= 1u << 14;	/* PSDT: SGLs, as a fabrics host sends */
}

Test(capsule, kv_store_retrieve)
{
	struct nkv_tgt_ctrl *c = up(0), *x;
	uint32_t n = 3u << 20, i;
	uint8_t *v = malloc(n), *back = malloc(n + 64);
	struct nkv_sqe s;
	struct nkv_tgt_req r;

	cr_assert_eq(connect(1, nkv_tgt_ctrl_cntlid(c), HOSTNQN, SUBNQN, 0, &x, NULL), 0);
	for (i = 0; i < n; i++)
		v[i] = (uint8_t)(i * 7 + 3);
	kv_sqe(&s, NKV_KV_STORE, "capsule-key", n);
	cr_assert_eq(run(c, 1, &s, v, n).status, 0);
	kv_sqe(&s, NKV_KV_STORE, "short", 100);
	cr_assert_eq(run(c, 1, &s, v, 99).status, SC(NKV_SC_SGL_DATA_LEN_INVALID),
		     "data shorter than CDW10");
	memset(back, 0xee, n + 64);
	kv_sqe(&s, NKV_KV_RETRIEVE, "capsule-key", n + 64);
	r = run(c, 1, &s, back, n + 64);
	cr_assert_eq(r.status, 0);
	cr_assert_eq(r.dw0, n);
	cr_assert_eq(r.produced, n);
	cr_assert_eq(memcmp(v, back, n), 0);
	cr_assert_eq(back[n], 0xee, "nothing written past the value");
	kv_sqe(&s, NKV_KV_EXIST, "capsule-key", 0);
	cr_assert_eq(run(c, 1, &s, NULL, 0).status, 0);
	/* An I/O command on a queue not connected. */
	cr_assert_eq(run(c, 2, &s, NULL, 0).status, SC(0x0c));
	free(v);
	free(back);
}

/* A 40-byte key in head form: the head in its own buffer (in-capsule
 * data), the value's room after it (C2H). */
Test(capsule, kv_head_form)
{
	struct nkv_tgt_ctrl *c = up(0), *x;
	const char *key = "a-key-of-forty-bytes-0123456789abcdefghi";
	uint8_t head[2 + 40], val[500], back[600];
	struct nkv_tgt_req r = { .qid = 1, .done = done };
	uint16_t kl = 40;
	int n0;

	cr_assert_eq(connect(1, nkv_tgt_ctrl_cntlid(c), HOSTNQN, SUBNQN, 0, &x, NULL), 0);
	memcpy(head, &kl, 2);
	memcpy(head + 2, key, 40);
	memset(val, 0x5a, sizeof(val));
	{
		uint8_t all[sizeof(head) + sizeof(val)];
		struct nkv_sqe s;

		memcpy(all, head, sizeof(head));
		memcpy(all + sizeof(head), val, sizeof(val));
		kv_sqe(&s, NKV_KV_STORE, key, sizeof(val));
		cr_assert_eq(run(c, 1, &s, all, sizeof(all)).status, 0);
	}
	kv_sqe(&r.sqe, NKV_KV_RETRIEVE, key, sizeof(back));
	r.iov[0] = (struct iovec){ head, sizeof(head) };
	r.iov[1] = (struct iovec){ back, sizeof(back) };
	r.iovcnt = 2;
	n0 = ndone;
	cr_assert_eq(nkv_tgt_ctrl_exec(c, &r), 0);
	while (ndone == n0)
		nkv_tgt_ctrl_poll(c);
	cr_assert_eq(r.status, 0);
	cr_assert_eq(r.dw0, sizeof(val));
	cr_assert_eq(r.produced, sizeof(val));
	cr_assert_eq(memcmp(back, val, sizeof(val)), 0);
}

Test(capsule, keep_alive_expiry)
{
	struct nkv_tgt_ctrl *c = up(200);
	struct nkv_sqe s = { .cdw0 = NKV_ADM_KEEP_ALIVE };
	uint64_t t0 = nkv_tgt_now_ns();

	cr_assert_not(nkv_tgt_ctrl_kato_expired(c, t0));
	cr_assert(nkv_tgt_ctrl_kato_expired(c, t0 + 300000000ull));
	cr_assert_eq(run(c, 0, &s, NULL, 0).status, 0);
	cr_assert_not(nkv_tgt_ctrl_kato_expired(c, nkv_tgt_now_ns() + 100000000ull));
}

Test(capsule, aer_held)
{
	struct nkv_tgt_ctrl *c = up(0);
	struct nkv_tgt_req r[NKV_TGT_AERL + 1];
	uint32_t i;
	int n0 = ndone;

	for (i = 0; i <= NKV_TGT_AERL; i++) {
		r[i] = (struct nkv_tgt_req){ .sqe = { .cdw0 = NKV_ADM_ASYNC_EVENT }, .done = done };
		cr_assert_eq(nkv_tgt_ctrl_exec(c, &r[i]), 0);
	}
	cr_assert_eq(ndone, n0 + 1, "only the one past the limit answered");
	cr_assert_eq(r[NKV_TGT_AERL].status, CS(NKV_SC_AER_LIMIT));
	cr_assert_eq(nkv_tgt_ctrl_aers(c), NKV_TGT_AERL);
	cr_assert_eq(nkv_tgt_ctrl_aer_event(c, 0x020002), 0);
	cr_assert_eq(ndone, n0 + 2);
	cr_assert_eq(r[0].dw0, 0x020002);
	/* A reset (CC.EN 1 -> 0) returns the rest as aborted. */
	nkv_tgt_ctrl_reg_write(c, NKV_REG_CC, 0, 4);
	cr_assert_eq(ndone, n0 + 2 + NKV_TGT_AERL - 1);
	cr_assert_eq(r[1].status, SC(NKV_SC_ABORTED_SQ_DELETION));
}

Test(capsule, discovery_log)
{
	struct nkv_tgt_ctrl *d;
	struct nkv_sqe s = { .cdw0 = NKV_ADM_IDENTIFY, .cdw10 = NKV_CNS_CTRL };
	uint8_t buf[4096];
	const struct nkv_nvmf_disc_hdr *h = (const void *)buf;
	const struct nkv_nvmf_disc_entry *e = (const void *)(buf + 1024);

	cr_assert_eq(connect(0, 0xffff, HOSTNQN, NKV_NVMF_DISC_NQN, 0, &d, NULL), 0);
	cr_assert_eq(prop_set(d, NKV_REG_CC, h_cc()), 0);
	cr_assert_eq(run(d, 0, &s, buf, sizeof(buf)).status, 0);
	cr_assert_eq(((const struct nkv_id_ctrl *)buf)->cntrltype, 2);
	cr_assert_str_eq(((const struct nkv_id_ctrl *)buf)->subnqn, NKV_NVMF_DISC_NQN);
	memset(buf, 0xff, sizeof(buf));
	s = (struct nkv_sqe){ .cdw0 = NKV_ADM_GET_LOG_PAGE,
			      .cdw10 = NKV_LID_DISCOVERY | ((2048u / 4 - 1) << 16) };
	cr_assert_eq(run(d, 0, &s, buf, 2048).status, 0);
	cr_assert_eq(h->numrec, 1);
	cr_assert_eq(e->trtype, NKV_NVMF_TRTYPE_TCP);
	cr_assert_eq(e->subtype, NKV_NVMF_SUBTYPE_NVME);
	cr_assert_str_eq(e->subnqn, SUBNQN);
	cr_assert_eq(memcmp(e->traddr, "127.0.0.1 ", 10), 0);
	cr_assert_eq(memcmp(e->trsvcid, "4420 ", 5), 0);
}

/* A port listening on a wildcard address is listed at the address the
 * asking host reached (the transport's nkv_tgt_ctrl_set_local_addr),
 * one on a given address as it listens; without a local address the
 * wildcard stays (no transport said). */
Test(capsule, discovery_log_names_the_address_reached_for_a_wildcard_port)
{
	struct nkv_tgt_port any4 = { 2, NKV_NVMF_ADRFAM_IPV4, "0.0.0.0", "4421" };
	struct nkv_tgt_port any6 = { 3, NKV_NVMF_ADRFAM_IPV6, "::", "4422" };
	struct nkv_sqe s = { .cdw0 = NKV_ADM_GET_LOG_PAGE,
			     .cdw10 = NKV_LID_DISCOVERY | ((4096u / 4 - 1) << 16) };
	uint8_t buf[4096];
	const struct nkv_nvmf_disc_hdr *h = (const void *)buf;
	const struct nkv_nvmf_disc_entry *e = (const void *)(buf + 1024);
	struct nkv_tgt_ctrl *d;

	cr_assert_eq(nkv_tgt_fab_add_port(F, &any4), 0);
	cr_assert_eq(nkv_tgt_fab_add_port(F, &any6), 0);
	cr_assert_eq(connect(0, 0xffff, HOSTNQN, NKV_NVMF_DISC_NQN, 0, &d, NULL), 0);
	cr_assert_eq(prop_set(d, NKV_REG_CC, h_cc()), 0);
	cr_assert_eq(run(d, 0, &s, buf, sizeof(buf)).status, 0);
	cr_assert_eq(h->numrec, 3);
	cr_expect_eq(memcmp(e[1].traddr, "0.0.0.0 ", 8), 0, "no transport said: as listened");
	nkv_tgt_ctrl_set_local_addr(d, NKV_NVMF_ADRFAM_IPV4, "192.0.2.7");
	cr_assert_eq(run(d, 0, &s, buf, sizeof(buf)).status, 0);
	cr_expect_eq(memcmp(e[0].traddr, "127.0.0.1 ", 10), 0, "a given address stays");
	cr_expect_eq(memcmp(e[1].traddr, "192.0.2.7 ", 10), 0);
	cr_expect_eq(e[1].adrfam, NKV_NVMF_ADRFAM_IPV4);
	cr_expect_eq(memcmp(e[1].trsvcid, "4421 ", 5), 0, "the port's own service id");
	cr_expect_eq(memcmp(e[2].traddr, "192.0.2.7 ", 10), 0, ":: too, as the host reached it");
	cr_expect_eq(e[2].adrfam, NKV_NVMF_ADRFAM_IPV4);
	cr_expect_eq(e[2].portid, 3);
}
