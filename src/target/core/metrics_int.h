/* SPDX-License-Identifier: MIT */
/*
 * metrics_int.h - between metrics.c (counting) and metrics_thread.c (the
 * per-thread tables it counts into, summed for a scrape).
 */
#ifndef NKV_TGT_METRICS_INT_H
#define NKV_TGT_METRICS_INT_H

#include "metrics.h"

/* This thread's table for namespace nsid (1..NKV_TGT_MAX_NS), made on
 * first use; NULL when there is no memory (the command goes uncounted). */
struct nkv_tgt_ns_metrics *nkv_tgt_met_mine(uint32_t nsid);

/* Namespace nsid's tables summed over every thread into out. Any
 * thread; counts a scrape sees are each whole, not all of one instant. */
void nkv_tgt_met_sum(uint32_t nsid, struct nkv_tgt_ns_metrics *out);

/* Add n to a counter only this thread writes: a plain add, stored
 * whole (relaxed), so a scrape's relaxed load never sees it torn. */
static inline void nkv_tgt_inc(uint64_t *v, uint64_t n)
{
	__atomic_store_n(v, __atomic_load_n(v, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

#endif /* NKV_TGT_METRICS_INT_H */
