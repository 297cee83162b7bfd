/* SPDX-License-Identifier: MIT */
/*
 * qpair_check.h - the host's check of a struct nkv_dev_qp it filled
 * (qpair.c, on create and on reset; the tests' fake controllers), run
 * before the descriptor is handed to device code. Library-private and
 * header-only, so a test that builds its own descriptor needs no libnkv.
 * Pure: any thread, on a descriptor no device code is using.
 */
#ifndef NKV_HOST_QPAIR_CHECK_H
#define NKV_HOST_QPAIR_CHECK_H

#include "nkv_dev.h"

/* 0 when every setup field and the ring state are sane; NKV_EINVAL for a
 * NULL @qp, a missing address or unknown key flags, NKV_ERANGE for a
 * depth, credit limit, CID count, longest key or ring position out of
 * range (command memory too), NKV_EINVAL for unknown data-pointer or
 * queue-pair flags. */
static inline int nkv_dev_qp_check(const struct nkv_dev_qp *qp)
{
	uint32_t dmax;

	if (!qp || !qp->sq_addr || !qp->cq_addr || !qp->sq_db_addr ||
	    !qp->cq_db_addr || !qp->cid_bitmap_addr || !qp->cpl_addr)
		return NKV_EINVAL;
	if (qp->sq_depth < 2 || qp->cq_depth < 2 || qp->sq_depth > NKV_QDEPTH_MAX ||
	    qp->cq_depth > NKV_QDEPTH_MAX)
		return NKV_ERANGE;
	dmax = qp->sq_depth > qp->cq_depth ? qp->sq_depth : qp->cq_depth;
	if (qp->credit_limit != nkv_dev_credit_limit(qp->sq_depth, qp->cq_depth) ||
	    qp->cid_count < dmax || qp->cid_count > NKV_CID_MAX ||
	    (qp->nr_slots && !qp->slots_addr) || qp->poll_budget == 0 ||
	    qp->max_key > NKV_KEY_MAX)
		return NKV_ERANGE;
	/* Bits 8-15: the vendor Store options advertised, no others. */
	if (qp->key_flags & ~(NKV_DEV_KEY_HEAD | NKV_STORE_VENDOR_MASK))
		return NKV_EINVAL;
	/* Command memory: a head page and at least one list page each. */
	if (qp->nr_cmds && (!qp->cmd_addr || !qp->cmd_pages_addr ||
			    qp->cmd_size < 2u * NKV_PAGE_SIZE || qp->cmd_size % NKV_PAGE_SIZE))
		return NKV_ERANGE;
	if ((qp->dptr & ~(NKV_DEV_DPTR_SGL | NKV_DEV_DPTR_SGL_DWORD)) ||
	    (qp->qp_flags & ~NKV_DEV_QP_REPORT_SHORT))
		return NKV_EINVAL;
	if (qp->sq_tail >= qp->sq_depth || qp->sq_head >= qp->sq_depth ||
	    qp->cq_head >= qp->cq_depth || qp->cq_phase > 1)
		return NKV_ERANGE;
	return 0;
}

#endif /* NKV_HOST_QPAIR_CHECK_H */
