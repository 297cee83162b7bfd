/* SPDX-License-Identifier: MIT */
/*
 * regs.c - BAR0 register file and the controller state machine.
 *
 * State changes happen inside the CC write itself (enable validates and
 * sets RDY, disable tears every queue down and clears RDY), so they always
 * finish well within CAP.TO. Shutdown is the only state that waits: SHST
 * reads "occurring" until the backends have returned every in-flight
 * command, then "complete" (see nkv_tgt_ctrl_poll()).
 */
#include "core.h"

void nkv_tgt_regs_init(struct nkv_tgt_ctrl *c)
{
	uint64_t cap = 0;

	cap = NKV_SET(cap, 0, 16, c->mqes - 1);		/* MQES, 0's based */
	cap = NKV_SET(cap, 16, 1, 1);			/* CQR: contiguous only */
	cap = NKV_SET(cap, 24, 8, c->to);		/* TO */
	cap = NKV_SET(cap, 32, 4, c->dstrd);		/* DSTRD */
	cap = NKV_SET(cap, 37, 8, NKV_CAP_CSS_NVM | NKV_CAP_CSS_IOCS);
	cap = NKV_SET(cap, 48, 4, 0);			/* MPSMIN: 4 KiB */
	cap = NKV_SET(cap, 52, 4, 0);			/* MPSMAX: 4 KiB */
	c->cap = cap;
	c->page_size = NKV_PAGE_SIZE;
	c->nsq_granted = c->max_ioq;
	c->ncq_granted = c->max_ioq;
}

/* Delete every queue and forget in-flight results (backends still own
 * their ops; those complete into dead epochs and are freed). */
void nkv_tgt_ctrl_reset(struct nkv_tgt_ctrl *c)
{
	uint32_t q;

	for (q = 0; q <= c->max_ioq; q++)
		if (c->sq[q].live)
			nkv_tgt_sq_delete(c, (uint16_t)q);
	for (q = 0; q <= c->max_ioq; q++)
		if (c->cq[q].live)
			nkv_tgt_cq_delete(c, (uint16_t)q);
	nkv_tgt_aer_flush(c, nkv_tgt_sc(NKV_SC_ABORTED_SQ_DELETION));
	c->csts = 0;
	c->cc = 0;
	c->failed = NULL;
	c->shutting_down = 0;
	c->nsq_granted = c->max_ioq;
	c->ncq_granted = c->max_ioq;
	c->kv_config = 0;
	c->rr = 0;
}

/* Everything CC and the admin queue registers must satisfy at enable. */
static int nkv_tgt_cc_valid(struct nkv_tgt_ctrl *c, uint32_t cc)
{
	uint32_t sqs = nkv_aqa_asqs(c->aqa), cqs = nkv_aqa_acqs(c->aqa);

	if (nkv_cc_css(cc) != NKV_CC_CSS_NVM && nkv_cc_css(cc) != NKV_CC_CSS_IOCS)
		return 0;
	if (nkv_cc_mps(cc) != 0 || NKV_GET(cc, NKV_CC_AMS_SHIFT, 3) != 0)
		return 0;
	if (nkv_cc_iosqes(cc) != 6 || nkv_cc_iocqes(cc) != 4)
		return 0;
	if (c->capsule)
		return 1;	/* its admin queue is a connection, not memory */
	if (sqs < 2 || cqs < 2 || sqs > c->mqes || cqs > c->mqes)
		return 0;
	if ((c->asq | c->acq) & (c->page_size - 1))
		return 0;
	return 1;
}

static int nkv_tgt_admin_create(struct nkv_tgt_ctrl *c)
{
	struct nkv_tgt_sq *sq = &c->sq[0];
	struct nkv_tgt_cq *cq = &c->cq[0];
	int sst, cst;
	void *sp, *cp;

	if (nkv_tgt_queue_mem(c, c->asq, (uint64_t)nkv_aqa_asqs(c->aqa) * 64,
			      NKV_DMA_READ, &sp, &sst) ||
	    nkv_tgt_queue_mem(c, c->acq, (uint64_t)nkv_aqa_acqs(c->aqa) * 16,
			      NKV_DMA_WRITE, &cp, &cst))
		return 0;
	*cq = (struct nkv_tgt_cq){ .live = 1, .size = nkv_aqa_acqs(c->aqa),
		.phase = 1, .iova = c->acq, .epoch = ++c->next_epoch,
		.ring = cp, .nsq = 1, .stable = cst };
	*sq = (struct nkv_tgt_sq){ .live = 1, .size = nkv_aqa_asqs(c->aqa),
		.iova = c->asq, .epoch = ++c->next_epoch, .ring = sp, .stable = sst };
	/* A fresh queue starts at 0: so must the client's doorbells. */
	__atomic_store_n(nkv_tgt_dbp(c, 0), 0, __ATOMIC_RELAXED);
	__atomic_store_n(nkv_tgt_dbp(c, 1), 0, __ATOMIC_RELAXED);
	return 1;
}

static void nkv_tgt_enable(struct nkv_tgt_ctrl *c, uint32_t cc)
{
	if (!nkv_tgt_cc_valid(c, cc) || (!c->capsule && !nkv_tgt_admin_create(c))) {
		c->cc = cc;	/* EN reads back 1; RDY stays 0 */
		NKV_TGT_TRACE(c, "enable refused: cc %#x aqa %#x", cc, c->aqa);
		nkv_tgt_ctrl_fail(c, "enable_refused(CC_or_admin_queue_registers_invalid)");
		return;
	}
	c->cc = cc;
	c->csts = NKV_CSTS_RDY;
	if (c->quirks & NKV_TGT_QUIRK_FAIL_ON_READY)
		c->csts |= NKV_CSTS_CFS;
	NKV_TGT_TRACE(c, "enabled: cc %#x", cc);
}

static void nkv_tgt_cc_write(struct nkv_tgt_ctrl *c, uint32_t cc)
{
	uint32_t was = nkv_cc_en(c->cc), en = nkv_cc_en(cc);

	if (!was && en) {
		nkv_tgt_enable(c, cc);
		return;
	}
	if (was && !en) {
		nkv_tgt_ctrl_reset(c);
		NKV_TGT_TRACE(c, "disabled");
		return;
	}
	if (!en) {
		c->cc = cc;	/* host may stage fields before enabling */
		return;
	}
	/* Enabled: only SHN changes anything. */
	if (nkv_cc_shn(cc) && !nkv_cc_shn(c->cc)) {
		c->shutting_down = 1;
		c->csts = (uint32_t)NKV_SET(c->csts, NKV_CSTS_SHST_SHIFT, 2,
					    NKV_CSTS_SHST_OCCURRING);
	}
	c->cc = (uint32_t)NKV_SET(c->cc, NKV_CC_SHN_SHIFT, 2, nkv_cc_shn(cc));
}

static uint32_t nkv_tgt_reg32(const struct nkv_tgt_ctrl *c, uint32_t off)
{
	switch (off) {
	case NKV_REG_CAP: return (uint32_t)c->cap;
	case NKV_REG_CAP + 4: return (uint32_t)(c->cap >> 32);
	case NKV_REG_VS: return NKV_VS(2, 0, 0);
	case NKV_REG_CC: return c->cc;
	case NKV_REG_CSTS: return c->csts;
	case NKV_REG_AQA: return c->aqa;
	case NKV_REG_ASQ: return (uint32_t)c->asq;
	case NKV_REG_ASQ + 4: return (uint32_t)(c->asq >> 32);
	case NKV_REG_ACQ: return (uint32_t)c->acq;
	case NKV_REG_ACQ + 4: return (uint32_t)(c->acq >> 32);
	default: return 0;
	}
}

uint64_t nkv_tgt_ctrl_reg_read(struct nkv_tgt_ctrl *c, uint32_t off, unsigned size)
{
	uint64_t v = nkv_tgt_reg32(c, off);

	if (size == 8)
		v |= (uint64_t)nkv_tgt_reg32(c, off + 4) << 32;
	return v;
}

static void nkv_tgt_half(uint64_t *reg, uint32_t hi, uint32_t v)
{
	*reg = hi ? (*reg & 0xffffffffull) | ((uint64_t)v << 32)
		  : (*reg & ~0xffffffffull) | v;
}

static void nkv_tgt_reg_write32(struct nkv_tgt_ctrl *c, uint32_t off, uint32_t v)
{
	if (off >= NKV_REG_DBS) {
		uint32_t stride = 4u << c->dstrd, i = (off - NKV_REG_DBS) / stride;

		/* A doorbell that came as a message: store it where the
		 * client's mapped writes land, ordered like theirs. Writes
		 * between doorbells (the stride's padding) are ignored. */
		if (!((off - NKV_REG_DBS) & (stride - 1)) && i < c->ndb)
			__atomic_store_n(nkv_tgt_dbp(c, i), v, __ATOMIC_RELEASE);
		return;
	}
	NKV_TGT_TRACE(c, "reg write %#x = %#x", off, v);
	switch (off) {
	case NKV_REG_CC: nkv_tgt_cc_write(c, v); break;
	case NKV_REG_AQA: c->aqa = v & 0x0fff0fffu; break;
	case NKV_REG_ASQ: nkv_tgt_half(&c->asq, 0, v); break;
	case NKV_REG_ASQ + 4: nkv_tgt_half(&c->asq, 1, v); break;
	case NKV_REG_ACQ: nkv_tgt_half(&c->acq, 0, v); break;
	case NKV_REG_ACQ + 4: nkv_tgt_half(&c->acq, 1, v); break;
	default: break;	/* read-only or unimplemented: ignored */
	}
}

void nkv_tgt_ctrl_reg_write(struct nkv_tgt_ctrl *c, uint32_t off, uint64_t val,
			    unsigned size)
{
	nkv_tgt_reg_write32(c, off, (uint32_t)val);
	if (size == 8)
		nkv_tgt_reg_write32(c, off + 4, (uint32_t)(val >> 32));
}
