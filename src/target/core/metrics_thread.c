/* SPDX-License-Identifier: MIT */
/*
 * metrics_thread.c - the counters' home: one table per thread and
 * namespace, written by that thread alone (no lock prefix on the hot
 * path, no cache line shared between poll threads), summed at a scrape.
 *
 * A thread takes a block of tables at its first counted command (a free
 * one an exited thread left, else a new one) and gives it back when it
 * exits (a pthread key's destructor): its counts stay in the block and
 * the next owner adds to them, so sums never go back. Blocks are never
 * freed: as many as threads ever counted at once. The mutex orders an
 * old owner's last writes before a new owner's first.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "metrics_int.h"

struct nkv_tgt_met_blk {
	struct nkv_tgt_met_blk *next;	/* the list: set before publishing */
	int in_use;			/* under nkv_tgt_blk_lock */
	struct nkv_tgt_ns_metrics *ns[NKV_TGT_MAX_NS + 1];	/* release-published */
};

static struct nkv_tgt_met_blk *nkv_tgt_blks;	/* newest first, acquire-read */
static pthread_mutex_t nkv_tgt_blk_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t nkv_tgt_blk_once = PTHREAD_ONCE_INIT;
static pthread_key_t nkv_tgt_blk_key;
static __thread struct nkv_tgt_met_blk *nkv_tgt_blk_mine;

static void nkv_tgt_blk_release(void *p)
{
	struct nkv_tgt_met_blk *b = p;

	pthread_mutex_lock(&nkv_tgt_blk_lock);
	b->in_use = 0;
	pthread_mutex_unlock(&nkv_tgt_blk_lock);
}

static void nkv_tgt_blk_init(void)
{
	pthread_key_create(&nkv_tgt_blk_key, nkv_tgt_blk_release);
}

static struct nkv_tgt_met_blk *nkv_tgt_blk_take(void)
{
	struct nkv_tgt_met_blk *b;

	pthread_once(&nkv_tgt_blk_once, nkv_tgt_blk_init);
	pthread_mutex_lock(&nkv_tgt_blk_lock);
	for (b = nkv_tgt_blks; b && b->in_use; b = b->next)
		;
	if (!b && (b = calloc(1, sizeof(*b)))) {
		b->next = nkv_tgt_blks;
		__atomic_store_n(&nkv_tgt_blks, b, __ATOMIC_RELEASE);
	}
	if (b)
		b->in_use = 1;
	pthread_mutex_unlock(&nkv_tgt_blk_lock);
	if (b)
		pthread_setspecific(nkv_tgt_blk_key, b);
	return b;
}

struct nkv_tgt_ns_metrics *nkv_tgt_met_mine(uint32_t nsid)
{
	struct nkv_tgt_met_blk *b = nkv_tgt_blk_mine;
	struct nkv_tgt_ns_metrics *m;

	if (__builtin_expect(!b, 0)) {
		b = nkv_tgt_blk_take();
		nkv_tgt_blk_mine = b;
		if (!b)
			return NULL;
	}
	m = b->ns[nsid];
	if (__builtin_expect(!m, 0)) {
		m = calloc(1, sizeof(*m));
		if (m)	/* zeroed before a scrape can see it */
			__atomic_store_n(&b->ns[nsid], m, __ATOMIC_RELEASE);
	}
	return m;
}

static uint64_t nkv_tgt_ld(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

static void nkv_tgt_hist_sum(struct nkv_tgt_hist *out, const struct nkv_tgt_hist *h)
{
	unsigned i;

	for (i = 0; i < NKV_TGT_HIST_N; i++)
		out->bucket[i] += nkv_tgt_ld(&h->bucket[i]);
	out->sum_ns += nkv_tgt_ld(&h->sum_ns);
}

/* A shard's named statuses into out's, first come first named; what
 * finds no slot stays counted only in errors (shown as "other"). */
static void nkv_tgt_err_sum(struct nkv_tgt_ns_metrics *out, const struct nkv_tgt_ns_metrics *m,
			    unsigned op)
{
	unsigned i, j;

	for (i = 0; i < NKV_TGT_MET_ERRS; i++) {
		uint32_t st = __atomic_load_n(&m->err[op][i].status, __ATOMIC_RELAXED);

		if (!st)
			break;
		for (j = 0; j < NKV_TGT_MET_ERRS && out->err[op][j].status &&
		     out->err[op][j].status != st; j++)
			;
		if (j == NKV_TGT_MET_ERRS)
			continue;
		out->err[op][j].status = st;
		out->err[op][j].count += nkv_tgt_ld(&m->err[op][i].count);
	}
}

static void nkv_tgt_ns_sum(struct nkv_tgt_ns_metrics *out, const struct nkv_tgt_ns_metrics *m)
{
	unsigned op;

	for (op = 0; op < NKV_TGT_MOP_N; op++) {
		out->cmds[op] += nkv_tgt_ld(&m->cmds[op]);
		out->errors[op] += nkv_tgt_ld(&m->errors[op]);
		nkv_tgt_err_sum(out, m, op);
		nkv_tgt_hist_sum(&out->cmd_lat[op], &m->cmd_lat[op]);
		nkv_tgt_hist_sum(&out->be_lat[op], &m->be_lat[op]);
	}
	out->bytes_in += nkv_tgt_ld(&m->bytes_in);
	out->bytes_out += nkv_tgt_ld(&m->bytes_out);
}

void nkv_tgt_met_sum(uint32_t nsid, struct nkv_tgt_ns_metrics *out)
{
	const struct nkv_tgt_met_blk *b;

	memset(out, 0, sizeof(*out));
	for (b = __atomic_load_n(&nkv_tgt_blks, __ATOMIC_ACQUIRE); b; b = b->next) {
		const struct nkv_tgt_ns_metrics *m = __atomic_load_n(&b->ns[nsid],
								       __ATOMIC_ACQUIRE);

		if (m)
			nkv_tgt_ns_sum(out, m);
	}
}
