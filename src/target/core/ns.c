/* SPDX-License-Identifier: MIT */
/*
 * ns.c - namespaces attached while controllers serve (ns.h).
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "core.h"
#include "ns.h"

/* Attaches one at a time: the check and the store are one step. */
static pthread_mutex_t nkv_tgt_ns_lock = PTHREAD_MUTEX_INITIALIZER;

/* Does be's largest value (and its key head) fit one transfer of the
 * controllers serving now? They read their MDTS at create. */
static int nkv_tgt_ns_fits(struct nkv_subsys *ss, const struct nkv_be *be)
{
	uint64_t xfer = (uint64_t)NKV_PAGE_SIZE << nkv_subsys_mdts(ss);

	return be->csi != NKV_CSI_KV || (uint64_t)be->max_value + NKV_TGT_KEY_HEAD <= xfer;
}

int nkv_subsys_ns_attach(struct nkv_subsys *ss, uint32_t nsid, struct nkv_be *be)
{
	int rc;

	if (!ss || !be || !nsid || nsid > NKV_TGT_MAX_NS)
		return -EINVAL;
	pthread_mutex_lock(&nkv_tgt_ns_lock);
	if (__atomic_load_n(&ss->ns[nsid], __ATOMIC_ACQUIRE)) {
		rc = -EEXIST;
	} else if (!nkv_tgt_ns_fits(ss, be)) {
		rc = -EMSGSIZE;
	} else {
		/* Publish be whole: its fields before the slot (pairs with
		 * nkv_subsys_ns_get()'s load on the poll threads). */
		__atomic_thread_fence(__ATOMIC_RELEASE);
		rc = nkv_subsys_add_ns(ss, nsid, be);
	}
	pthread_mutex_unlock(&nkv_tgt_ns_lock);
	if (!rc)
		nkv_tgt_ns_changed(ss, nsid);
	return rc;
}

/* Until nsid has no holder, or wait_ms passed: 0 or -ETIMEDOUT. The
 * slot is clear, so the count only goes down (a new holder's get backs
 * off at once). */
static int nkv_tgt_ns_drain(struct nkv_subsys *ss, uint32_t nsid, uint32_t wait_ms)
{
	struct timespec ms = { 0, 1000000 };
	uint32_t waited;

	for (waited = 0; __atomic_load_n(&ss->ns_refs[nsid], __ATOMIC_SEQ_CST); waited++) {
		if (waited >= wait_ms)
			return -ETIMEDOUT;
		nanosleep(&ms, NULL);
	}
	return 0;
}

int nkv_subsys_ns_remove(struct nkv_subsys *ss, uint32_t nsid, uint32_t wait_ms)
{
	struct nkv_be *be;
	int rc = 0;

	if (!ss || !nsid || nsid > NKV_TGT_MAX_NS)
		return -EINVAL;
	pthread_mutex_lock(&nkv_tgt_ns_lock);	/* no attach of nsid meanwhile */
	be = ss->ns[nsid];
	if (!be) {
		rc = -ENOENT;
	} else {
		/* Clear, then count (nkv_subsys_ns_get's pairing, core.h). */
		__atomic_store_n(&ss->ns[nsid], NULL, __ATOMIC_SEQ_CST);
		rc = nkv_tgt_ns_drain(ss, nsid, wait_ms);
		if (rc)	/* still in use: serve it again rather than free it under a holder */
			__atomic_store_n(&ss->ns[nsid], be, __ATOMIC_SEQ_CST);
	}
	pthread_mutex_unlock(&nkv_tgt_ns_lock);
	if (rc)
		return rc;
	be->ops->destroy(be);
	nkv_tenant_ns_reset(ss->tenants, nsid);	/* what it stored is gone; counters stay */
	nkv_tgt_ns_changed(ss, nsid);
	return 0;
}

struct nkv_be *nkv_subsys_ns_hold(struct nkv_subsys *ss, uint32_t nsid)
{
	return ss ? nkv_subsys_ns_get(ss, nsid) : NULL;
}

void nkv_subsys_ns_release(struct nkv_subsys *ss, uint32_t nsid)
{
	nkv_subsys_ns_put(ss, nsid);
}

void nkv_tgt_ns_changed(struct nkv_subsys *ss, uint32_t nsid)
{
	uint64_t gen;
	uint32_t i;

	if (!ss || !nsid || nsid > NKV_TGT_MAX_NS)
		return;
	nkv_be_log(NKV_BE_LOG_INFO, "event=namespace_changed nsid=%u", nsid);
	pthread_mutex_lock(&nkv_tgt_ns_lock);
	gen = ss->ns_gen + 1;
	/* The nsid's mark before the count: a reader that loads ns_gen with
	 * acquire finds every mark up to it (admin.c's log page 04h). */
	__atomic_store_n(&ss->ns_changed[nsid], gen, __ATOMIC_RELEASE);
	__atomic_store_n(&ss->ns_gen, gen, __ATOMIC_RELEASE);
	for (i = 0; i < NKV_SUBSYS_LISTENERS; i++)
		if (ss->listen[i].fn)
			ss->listen[i].fn(ss->listen[i].arg);
	pthread_mutex_unlock(&nkv_tgt_ns_lock);
}

int nkv_subsys_ns_listen(struct nkv_subsys *ss, void (*fn)(void *arg), void *arg)
{
	uint32_t i;
	int rc = -ENOSPC;

	if (!ss || !fn)
		return -EINVAL;
	pthread_mutex_lock(&nkv_tgt_ns_lock);
	for (i = 0; i < NKV_SUBSYS_LISTENERS; i++)
		if (!ss->listen[i].fn) {
			ss->listen[i].fn = fn;
			ss->listen[i].arg = arg;
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&nkv_tgt_ns_lock);
	return rc;
}

void nkv_subsys_ns_unlisten(struct nkv_subsys *ss, void (*fn)(void *arg), void *arg)
{
	uint32_t i;

	if (!ss)
		return;
	pthread_mutex_lock(&nkv_tgt_ns_lock);
	for (i = 0; i < NKV_SUBSYS_LISTENERS; i++)
		if (ss->listen[i].fn == fn && ss->listen[i].arg == arg)
			ss->listen[i].fn = NULL;
	pthread_mutex_unlock(&nkv_tgt_ns_lock);
}
