/* SPDX-License-Identifier: MIT */
/* Register file and controller state machine. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "nvmf/fabrics.h"	/* NKV_ADM_ASYNC_EVENT */
#include "target/core/req.h"	/* nkv_tgt_ctrl_aers */
#include "tgt_host.h"

static struct h H;

static void setup(void)
{
	h_init(&H, NULL, NULL);
}

static void teardown(void)
{
	h_fini(&H);
}

TestSuite(regs, .init = setup, .fini = teardown, .timeout = 20);

static uint32_t rd32(uint32_t off)
{
	return (uint32_t)nkv_tgt_ctrl_reg_read(H.c, off, 4);
}

Test(regs, cap_vs_defaults)
{
	uint64_t cap = nkv_tgt_ctrl_reg_read(H.c, NKV_REG_CAP, 8);

	cr_assert_eq(nkv_cap_mqes(cap), 1023);
	cr_assert_eq(nkv_cap_cqr(cap), 1);
	cr_assert_eq(nkv_cap_to(cap), 20);
	cr_assert_eq(nkv_cap_dstrd(cap), 0);
	cr_assert_eq(nkv_cap_css(cap), NKV_CAP_CSS_NVM | NKV_CAP_CSS_IOCS);
	cr_assert_eq(nkv_cap_mpsmin(cap), 0);
	cr_assert_eq(nkv_cap_mpsmax(cap), 0);
	cr_assert_eq(NKV_GET(cap, 17, 2), 0, "AMS: round robin only");
	cr_assert_eq(rd32(NKV_REG_CAP), (uint32_t)cap);
	cr_assert_eq(rd32(NKV_REG_CAP + 4), (uint32_t)(cap >> 32));
	cr_assert_eq(rd32(NKV_REG_VS), 0x00020000);
	cr_assert_eq(rd32(NKV_REG_CSTS), 0);
	cr_assert_eq(rd32(0x40), 0, "unknown offset reads 0");
	nkv_tgt_ctrl_reg_write(H.c, NKV_REG_CAP, 0, 8);
	cr_assert_eq(nkv_tgt_ctrl_reg_read(H.c, NKV_REG_CAP, 8), cap, "CAP read-only");
	nkv_tgt_ctrl_reg_write(H.c, NKV_REG_VS, 0, 4);
	cr_assert_eq(rd32(NKV_REG_VS), 0x00020000);
	cr_assert_eq(nkv_tgt_ctrl_bar0_size(H.c), 0x2000);
}

Test(regs, cap_honest_opts)
{
	struct h h2;
	struct nkv_tgt_ctrl_opts o = { sizeof(o), .mqes = 64, .max_ioq = 1000, .to = 3 };
	uint64_t cap;

	h_init(&h2, &o, NULL);
	cap = nkv_tgt_ctrl_reg_read(h2.c, NKV_REG_CAP, 8);
	cr_assert_eq(nkv_cap_mqes(cap), 63);
	cr_assert_eq(nkv_cap_to(cap), 3);
	cr_assert_geq(nkv_tgt_ctrl_bar0_size(h2.c), 0x1000 + 8 * 1001);
	h_fini(&h2);
}

/* BAR0's layout from options alone: the defaults the controller applies,
 * the doorbell stride, a given max_ioq, and what create would refuse. */
Test(regs, bar0_layout)
{
	struct nkv_tgt_ctrl_opts o = { sizeof(o) };
	struct nkv_tgt_bar0_layout l;
	struct h h2;

	cr_assert_eq(nkv_tgt_ctrl_layout(NULL, &l), 0, "NULL: all defaults");
	cr_assert_eq(l.db_offset, NKV_REG_DBS);
	cr_assert_eq(l.db_stride, 4);
	cr_assert_eq(l.db_bytes, 2 * 65 * 4, "max_ioq 64 by default");
	cr_assert_eq(l.size, 0x2000);
	cr_assert_eq(nkv_tgt_ctrl_layout(&o, &l), 0);
	cr_assert_eq(l.size, 0x2000);

	o.dstrd = NKV_TGT_DSTRD_LINE;
	cr_assert_eq(nkv_tgt_ctrl_layout(&o, &l), 0);
	cr_assert_eq(l.db_stride, 64);
	cr_assert_eq(l.db_bytes, 2 * 65 * 64);
	cr_assert_eq(l.size, 0x4000, "0x1000 + 8320 bytes: the next power of two");

	o.max_ioq = 1000;
	o.dstrd = 0;
	cr_assert_eq(nkv_tgt_ctrl_layout(&o, &l), 0);
	cr_assert_eq(l.db_bytes, 2 * 1001 * 4);
	cr_assert_eq(l.size, 0x4000);
	h_init(&h2, &o, NULL);
	cr_assert_eq(nkv_tgt_ctrl_bar0_size(h2.c), l.size, "the controller agrees");
	h_fini(&h2);

	o.max_ioq = 4;
	o.dstrd = 5;
	cr_assert_eq(nkv_tgt_ctrl_layout(&o, &l), -EINVAL, "DSTRD past 4");
	o.dstrd = 0;
	o.max_ioq = 65535;
	cr_assert_eq(nkv_tgt_ctrl_layout(&o, &l), -EINVAL, "max_ioq past 65534");
	o.max_ioq = 0;
	o.mqes = 1;
	cr_assert_eq(nkv_tgt_ctrl_layout(&o, &l), -EINVAL, "MQES below 2");
	o.mqes = 0;
	o.mdts = NKV_TGT_MDTS_MAX;
	cr_assert_eq(nkv_tgt_ctrl_layout(&o, &l), 0, "MDTS 15: 128 MiB");
	o.mdts = NKV_TGT_MDTS_MAX + 1;
	cr_assert_eq(nkv_tgt_ctrl_layout(&o, &l), -EINVAL, "MDTS past 15");
}

/* Doorbells a cache line apart (CAP.DSTRD 4): CAP says so, BAR0 grows,
 * a doorbell message lands on its line, writes between doorbells do
 * nothing, and the admin queue works (its SQ tail is at offset 0). */
Test(regs, doorbell_stride)
{
	struct h h2;
	struct nkv_tgt_ctrl_opts o = { sizeof(o), .max_ioq = 4, .dstrd = NKV_TGT_DSTRD_LINE };
	uint8_t id[4096];

	h_init(&h2, &o, NULL);
	cr_assert_eq(nkv_cap_dstrd(nkv_tgt_ctrl_reg_read(h2.c, NKV_REG_CAP, 8)), 4);
	cr_assert_geq(nkv_tgt_ctrl_bar0_size(h2.c), 0x1000 + 10 * 64);
	cr_assert_eq(h_enable(&h2, 16), NKV_CSTS_RDY);
	nkv_tgt_ctrl_reg_write(h2.c, NKV_REG_DBS + 3 * 64, 5, 4);	/* CQ 1 head */
	cr_assert_eq(h2.db[3 * 16], 5);
	nkv_tgt_ctrl_reg_write(h2.c, NKV_REG_DBS + 3 * 64 + 4, 6, 4);	/* padding */
	nkv_tgt_ctrl_reg_write(h2.c, NKV_REG_DBS + 4, 6, 4);		/* padding */
	cr_assert_eq(h2.db[3 * 16 + 1], 0);
	cr_assert_eq(h2.db[1], 0);
	cr_assert_eq(h_identify(&h2, NKV_CNS_CTRL, 0, 0, id), 0);
	h_fini(&h2);
}

Test(regs, doorbell_stride_out_of_range_refused)
{
	struct nkv_tgt_ctrl_opts o = { sizeof(o), .dstrd = 5 };
	struct nkv_subsys *ss = nkv_subsys_create(NULL);
	struct nkv_dma *dma = nkv_dma_create();
	static uint32_t db[4096];

	cr_assert_null(nkv_tgt_ctrl_create(ss, dma, db, &o));
	o.dstrd = 4;
	{
		struct nkv_tgt_ctrl *c = nkv_tgt_ctrl_create(ss, dma, db, &o);

		cr_assert_not_null(c);
		nkv_tgt_ctrl_destroy(c);
	}
	nkv_dma_destroy(dma);
	nkv_subsys_destroy(ss);
}

Test(regs, enable_and_registers_read_back)
{
	cr_assert_eq(h_enable(&H, 32), NKV_CSTS_RDY);
	cr_assert_eq(rd32(NKV_REG_CC), h_cc());
	cr_assert_eq(rd32(NKV_REG_AQA), nkv_aqa(32, 32));
	cr_assert_eq(nkv_tgt_ctrl_reg_read(H.c, NKV_REG_ASQ, 8), H.q[0].sq_iova);
	cr_assert_eq(nkv_tgt_ctrl_reg_read(H.c, NKV_REG_ACQ, 8), H.q[0].cq_iova);
}

/* Enable with one thing wrong: CFS, never RDY. */
static void bad_enable(uint32_t cc, uint32_t aqa, uint64_t asq)
{
	struct h h2;
	uint64_t sq, cq;

	h_init(&h2, NULL, NULL);
	sq = h_alloc(&h2, 4096);
	cq = h_alloc(&h2, 4096);
	nkv_tgt_ctrl_reg_write(h2.c, NKV_REG_AQA, aqa, 4);
	nkv_tgt_ctrl_reg_write(h2.c, NKV_REG_ASQ, asq ? asq : sq, 8);
	nkv_tgt_ctrl_reg_write(h2.c, NKV_REG_ACQ, cq, 8);
	nkv_tgt_ctrl_reg_write(h2.c, NKV_REG_CC, cc, 4);
	nkv_tgt_ctrl_poll(h2.c);
	cr_assert_eq(nkv_tgt_ctrl_reg_read(h2.c, NKV_REG_CSTS, 4) &
		     (NKV_CSTS_RDY | NKV_CSTS_CFS), NKV_CSTS_CFS,
		     "cc %#x aqa %#x", cc, aqa);
	/* A disable clears the fatal status. */
	nkv_tgt_ctrl_reg_write(h2.c, NKV_REG_CC, 0, 4);
	cr_assert_eq(nkv_tgt_ctrl_reg_read(h2.c, NKV_REG_CSTS, 4), 0);
	h_fini(&h2);
}

Test(regs, enable_validates)
{
	uint32_t cc = h_cc(), aqa = nkv_aqa(16, 16);

	bad_enable((uint32_t)NKV_SET(cc, NKV_CC_CSS_SHIFT, 3, 1), aqa, 0);
	bad_enable((uint32_t)NKV_SET(cc, NKV_CC_CSS_SHIFT, 3, 7), aqa, 0);
	bad_enable((uint32_t)NKV_SET(cc, NKV_CC_MPS_SHIFT, 4, 1), aqa, 0);
	bad_enable((uint32_t)NKV_SET(cc, NKV_CC_AMS_SHIFT, 3, 1), aqa, 0);
	bad_enable((uint32_t)NKV_SET(cc, NKV_CC_IOSQES_SHIFT, 4, 7), aqa, 0);
	bad_enable((uint32_t)NKV_SET(cc, NKV_CC_IOCQES_SHIFT, 4, 5), aqa, 0);
	bad_enable(cc, nkv_aqa(1, 16), 0);
	bad_enable(cc, nkv_aqa(16, 1), 0);
	bad_enable(cc, nkv_aqa(2048, 16), 0);	/* > MQES + 1 */
	bad_enable(cc, aqa, H_IOVA + 64);		/* ASQ not page aligned */
	bad_enable(cc, aqa, 0x7000000000ull);	/* ASQ not registered */
	/* CSS = NVM only is fine. */
	H.q[0].size = 0;
	nkv_tgt_ctrl_reg_write(H.c, NKV_REG_AQA, aqa, 4);
	nkv_tgt_ctrl_reg_write(H.c, NKV_REG_ASQ, h_alloc(&H, 4096), 8);
	nkv_tgt_ctrl_reg_write(H.c, NKV_REG_ACQ, h_alloc(&H, 4096), 8);
	nkv_tgt_ctrl_reg_write(H.c, NKV_REG_CC,
			       (uint32_t)NKV_SET(cc, NKV_CC_CSS_SHIFT, 3, 0), 4);
	cr_assert_eq(rd32(NKV_REG_CSTS), NKV_CSTS_RDY);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

Test(regs, ready_transitions_within_cap_to)
{
	double to = nkv_cap_to(nkv_tgt_ctrl_reg_read(H.c, NKV_REG_CAP, 8)) * 0.5;
	double t0 = now();

	h_enable(&H, 16);
	while (!(rd32(NKV_REG_CSTS) & NKV_CSTS_RDY) && now() - t0 < to)
		nkv_tgt_ctrl_poll(H.c);
	cr_assert(rd32(NKV_REG_CSTS) & NKV_CSTS_RDY);
	t0 = now();
	nkv_tgt_ctrl_reg_write(H.c, NKV_REG_CC, 0, 4);
	while ((rd32(NKV_REG_CSTS) & NKV_CSTS_RDY) && now() - t0 < to)
		nkv_tgt_ctrl_poll(H.c);
	cr_assert_eq(rd32(NKV_REG_CSTS) & NKV_CSTS_RDY, 0);
	cr_assert_lt(now() - t0, to);
}

Test(regs, reset_deletes_queues)
{
	struct nkv_sqe s;
	struct nkv_tgt_qstats st;
	uint8_t id[4096];

	cr_assert_eq(h_enable(&H, 16), NKV_CSTS_RDY);
	cr_assert_eq(h_create_qpair(&H, 1, 16), 0);
	cr_assert_eq(h_store(&H, 1, "k", 1, "v", 1, 0), 0);
	/* Queue a command, then reset before polling: it must vanish. */
	h_kv(&s, NKV_KV_EXIST, 1, "k", 1, 0, 0);
	h_submit(&H, 1, &s);
	nkv_tgt_ctrl_reg_write(H.c, NKV_REG_CC, 0, 4);
	cr_assert_eq(rd32(NKV_REG_CSTS), 0);
	cr_assert_eq(nkv_tgt_ctrl_poll(H.c), 0);
	cr_assert_eq(nkv_tgt_ctrl_inflight(H.c), 0);
	cr_assert_eq(H.q[1].cq[1].dw3, 0, "no CQE after reset");
	/* Re-enable: the old I/O queue id is free again; data persisted. */
	cr_assert_eq(h_enable(&H, 16), NKV_CSTS_RDY);
	cr_assert_eq(h_identify(&H, NKV_CNS_CTRL, 0, 0, id), 0);
	cr_assert_eq(h_create_qpair(&H, 1, 16), 0);
	h_kv(&s, NKV_KV_EXIST, 1, "k", 1, 0, 0);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	cr_assert_eq(nkv_tgt_ctrl_stats(H.c, 1, &st), 0);
	cr_assert_eq(st.commands, 2, "counters are per queue id, across resets");
}

Test(regs, shutdown_reports_complete)
{
	cr_assert_eq(h_enable(&H, 16), NKV_CSTS_RDY);
	nkv_tgt_ctrl_reg_write(H.c, NKV_REG_CC,
			       (uint32_t)NKV_SET(h_cc(), NKV_CC_SHN_SHIFT, 2, 1), 4);
	nkv_tgt_ctrl_poll(H.c);
	cr_assert_eq(nkv_csts_shst(rd32(NKV_REG_CSTS)), NKV_CSTS_SHST_COMPLETE);
	cr_assert(rd32(NKV_REG_CSTS) & NKV_CSTS_RDY);
	/* Reset after shutdown brings it back. */
	nkv_tgt_ctrl_reg_write(H.c, NKV_REG_CC, 0, 4);
	cr_assert_eq(nkv_csts_shst(rd32(NKV_REG_CSTS)), 0);
	cr_assert_eq(h_enable(&H, 16), NKV_CSTS_RDY);
}

/* A held Asynchronous Event Request is not work a shutdown waits for:
 * Linux sends one (OAES set), then CC.SHN, and polls CSTS.SHST. */
Test(regs, shutdown_completes_with_an_aer_held)
{
	struct nkv_sqe s = { .cdw0 = NKV_ADM_ASYNC_EVENT };

	cr_assert_eq(h_enable(&H, 16), NKV_CSTS_RDY);
	h_submit(&H, 0, &s);
	nkv_tgt_ctrl_poll(H.c);
	cr_assert_eq(nkv_tgt_ctrl_aers(H.c), 1, "the AER is held, not answered");
	nkv_tgt_ctrl_reg_write(H.c, NKV_REG_CC,
			       (uint32_t)NKV_SET(h_cc(), NKV_CC_SHN_SHIFT, 2, 1), 4);
	nkv_tgt_ctrl_poll(H.c);
	cr_assert_eq(nkv_csts_shst(rd32(NKV_REG_CSTS)), NKV_CSTS_SHST_COMPLETE);
}

Test(regs, doorbell_messages_land_in_page)
{
	cr_assert_eq(h_enable(&H, 16), NKV_CSTS_RDY);
	nkv_tgt_ctrl_reg_write(H.c, NKV_REG_DBS + 8 * 3 + 4, 7, 4);
	cr_assert_eq(H.db[7], 7);
	nkv_tgt_ctrl_reg_write(H.c, NKV_REG_DBS + 4 * 4096, 9, 4);	/* out of range */
	nkv_tgt_ctrl_reg_write(H.c, NKV_REG_DBS + 2, 9, 4);		/* unaligned */
	cr_assert_eq(H.db[0], 0);
}

Test(regs, bad_doorbell_ignored_and_counted)
{
	struct nkv_tgt_qstats st;
	uint8_t id[4096];

	cr_assert_eq(h_enable(&H, 16), NKV_CSTS_RDY);
	__atomic_store_n(&H.db[0], 99, __ATOMIC_RELEASE);
	nkv_tgt_ctrl_poll(H.c);
	cr_assert_eq(nkv_tgt_ctrl_stats(H.c, 0, &st), 0);
	cr_assert_eq(st.bad_doorbells, 1);
	cr_assert_eq(rd32(NKV_REG_CSTS), NKV_CSTS_RDY, "not fatal");
	__atomic_store_n(&H.db[0], 0, __ATOMIC_RELEASE);
	cr_assert_eq(h_identify(&H, NKV_CNS_CTRL, 0, 0, id), 0);
	cr_assert_eq(nkv_tgt_ctrl_stats(H.c, 200, &st), -22);
}
