/* SPDX-License-Identifier: MIT */
/*
 * mem.c - the memory backend (see mem.h).
 *
 * The KV map is an ordered B+ tree (kvmap.h) under an rwlock: lookups
 * and List seek in O(log n) and share the lock; Store and Delete take it
 * exclusively, also O(log n), so keys arriving in random order (content
 * hashes, as an LLM KV cache makes them) cost the same as sorted ones.
 * Entries live in the namespace's value allocator (valloc.h: no heap
 * growth on the poll thread), filled from the op's data (backend.h's copy
 * helpers) before the lock and given back after it. A value of up to 232
 * bytes shares one block with its 24-byte header; a larger one has an
 * extent of its own and its header sits in the allocator's 32-byte
 * class, so a power-of-two value takes a block of exactly its size, and
 * starts aligned (page-aligned above 32 KiB): with a 4-byte header in
 * front, a 2 MiB value took a 2.5 MiB block and every copy into it ran
 * 4 bytes off alignment, up to 4x slower.
 *
 * TTLs (NKV_STORE_TTL): the header holds the key's expiry on the
 * backend clock (nkv_be_now_ms) and its TTL, for touch to restart it. A
 * key is absent from the moment its expiry passes; whoever meets it
 * first removes it (a read notices under the shared lock and removes it
 * under the exclusive one, if still expired), and a sweep thread removes
 * the ones nobody asks for, so capacity comes back without a reader.
 * The sweep scans the map only while TTL'd keys exist, a bounded stretch
 * per lock hold, so no command waits behind it for long.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mem.h"
#include "kvmap.h"
#include "lend.h"
#include "lru.h"
#include "registry.h"
#include "valloc.h"

/* The map's value: the stored bytes' header (the key lives in the map). */
struct nkv_mem_ent {
	uint8_t *val;		/* just after the header, or an extent of its own */
	uint64_t expire_ms;	/* absent once nkv_be_now_ms() reaches it; 0: no TTL */
	uint32_t size;
	uint32_t ttl_s;		/* the TTL it was stored or touched with; 0: none */
};
_Static_assert(sizeof(struct nkv_mem_ent) == 24, "the header size mem.h documents");

/* How often the sweep thread looks for expired keys, and how much it
 * does per lock hold: entries looked at under the shared lock, expired
 * keys removed under the exclusive one. */
#define NKV_MEM_SWEEP_MS 1000
#define NKV_MEM_SWEEP_SCAN 1024
#define NKV_MEM_SWEEP_BATCH 32

/* Values up to this many bytes follow their header in one block. */
#define NKV_MEM_INLINE (256 - sizeof(struct nkv_mem_ent))

struct nkv_be_mem {
	struct nkv_be be;
	pthread_rwlock_t lock;
	struct nkv_kvmap map;		/* key -> struct nkv_mem_ent */
	struct nkv_valloc *va;		/* KV: where entries live */
	uint64_t bytes;
	uint8_t *blocks;		/* NVM flavour */
	/* Worker mode: FIFO of ops. */
	int worker;
	pthread_t thr;
	pthread_mutex_t qlock;
	pthread_cond_t qcond;
	struct nkv_be_op **q;
	size_t qhead, qlen, qcap;
	int stop;
	/* KV: keys with a TTL (atomic; the sweep skips the scan at 0), and
	 * the sweep thread. */
	uint64_t ttl_keys;
	uint64_t expiries;	/* atomic: keys removed because their TTL passed */
	int sweeper;
	pthread_t sweep_thr;
	pthread_mutex_t slock;
	pthread_cond_t scond;
	int sstop;
	/* --evict lru: keys by last Store or Retrieve (NULL: 81h when
	 * full), and how many were evicted (atomic). */
	struct nkv_lru *lru;
	uint64_t evictions;
	/* KV: the most namespace_set may raise the capacity to (the
	 * allocator's reservation holds it). */
	uint64_t cap_max;
	/* KV: values a transport is sending from (lend.h). */
	struct nkv_lend *lend;
};

uint64_t nkv_be_mem_key_cost(uint64_t len)
{
	uint64_t blocks = len <= NKV_MEM_INLINE
				  ? nkv_valloc_block(sizeof(struct nkv_mem_ent) + len)
				  : nkv_valloc_block(sizeof(struct nkv_mem_ent)) + nkv_valloc_block(len);

	return blocks + nkv_kvmap_key_bytes();
}

/* The same for a key of klen bytes: a key over 16 bytes keeps its bytes
 * in an allocation of the index's own. */
static uint64_t nkv_mem_cost(uint32_t klen, uint64_t len)
{
	return nkv_be_mem_key_cost(len) + nkv_kvmap_long_bytes(klen);
}

/* An entry for a value of len bytes (not filled), or NULL when the
 * allocator has no room. */
static struct nkv_mem_ent *nkv_mem_ent_get(struct nkv_be_mem *m, uint64_t len)
{
	int inl = len <= NKV_MEM_INLINE;
	struct nkv_mem_ent *e = nkv_valloc_get(m->va, sizeof(*e) + (inl ? len : 0));

	if (!e)
		return NULL;
	e->size = (uint32_t)len;
	e->val = inl ? (uint8_t *)(e + 1) : nkv_valloc_get(m->va, len);
	if (!e->val) {
		nkv_valloc_put(m->va, e, sizeof(*e));
		return NULL;
	}
	return e;
}

static void nkv_mem_ent_free(struct nkv_be_mem *m, struct nkv_mem_ent *e)
{
	if (e->size <= NKV_MEM_INLINE) {
		nkv_valloc_put(m->va, e, sizeof(*e) + e->size);
		return;
	}
	nkv_valloc_put(m->va, e->val, e->size);
	nkv_valloc_put(m->va, e, sizeof(*e));
}

/* lend.h's free_fn: a retired entry's last borrower is done. */
static void nkv_mem_ent_unlent(void *owner, void *ent)
{
	nkv_mem_ent_free(owner, ent);
}

/* An entry that left the map (or never joined it): freed now, or by its
 * last borrower when a transport is still sending its value. */
static void nkv_mem_ent_put(struct nkv_be_mem *m, struct nkv_mem_ent *e)
{
	if (!e || (m->lend && nkv_lend_retire(m->lend, e)))
		return;
	nkv_mem_ent_free(m, e);
}

static uint16_t nkv_mem_st(uint8_t sc)
{
	return NKV_STATUS(NKV_SCT_GENERIC, sc);
}

static int nkv_mem_expired(const struct nkv_mem_ent *e, uint64_t now)
{
	return e->expire_ms && now >= e->expire_ms;
}

/* Take a key's entry (just removed from the map, or replaced) off the
 * books; under the write lock. */
static void nkv_mem_forget(struct nkv_be_mem *m, const uint8_t *key, uint8_t klen,
			   const struct nkv_mem_ent *e, int evicted)
{
	if (evicted >= 0)	/* -1: replaced, nkv_be_owner_stored() takes it over */
		nkv_be_owner_gone(&m->be, key, klen, evicted);
	if (m->lru)
		nkv_lru_drop(m->lru, key, klen);
	m->bytes -= nkv_mem_cost(klen, e->size);
	if (e->expire_ms)
		__atomic_sub_fetch(&m->ttl_keys, 1, __ATOMIC_RELAXED);
}

/* Remove key if it is stored and expired at now; under the write lock.
 * The removed entry (the caller's to free after unlocking), or NULL. */
static struct nkv_mem_ent *nkv_mem_drop_expired(struct nkv_be_mem *m, const uint8_t *key,
						uint8_t klen, uint64_t now)
{
	struct nkv_mem_ent *e = nkv_kvmap_find(&m->map, key, klen);

	if (!e || !nkv_mem_expired(e, now))
		return NULL;
	nkv_kvmap_delete(&m->map, key, klen);
	nkv_mem_forget(m, key, klen, e, 0);
	__atomic_fetch_add(&m->expiries, 1, __ATOMIC_RELAXED);
	return e;
}

/* A read found key expired under the shared lock: remove it under the
 * exclusive one, unless a Store renewed it in between. */
static void nkv_mem_reap(struct nkv_be_mem *m, const uint8_t *key, uint8_t klen)
{
	struct nkv_mem_ent *e;

	pthread_rwlock_wrlock(&m->lock);
	e = nkv_mem_drop_expired(m, key, klen, nkv_be_now_ms());
	pthread_rwlock_unlock(&m->lock);
	nkv_mem_ent_put(m, e);
}

/* Under either lock: key's entry unless absent or expired at now (then
 * NULL, and *gone = 1 when an expired one is there for nkv_mem_reap). */
static const struct nkv_mem_ent *nkv_mem_find_live(struct nkv_be_mem *m, const uint8_t *key,
						   uint8_t klen, uint64_t now, int *gone)
{
	const struct nkv_mem_ent *e = nkv_kvmap_find(&m->map, key, klen);

	*gone = e && nkv_mem_expired(e, now);
	return *gone ? NULL : e;
}

/* --evict lru: remove the least recently used key other than the one
 * being stored, of the tenant furthest over its share first (lru.h);
 * under the write lock. 0 when there is none. */
static int nkv_mem_evict_one(struct nkv_be_mem *m, const uint8_t *skip, uint8_t sklen)
{
	uint8_t key[NKV_KEY_MAX], klen = nkv_lru_victim(m->lru, &m->be, key, skip, sklen);
	struct nkv_mem_ent *e;

	if (!klen)
		return 0;
	e = nkv_kvmap_delete(&m->map, key, klen);
	if (!e) {
		nkv_lru_drop(m->lru, key, klen);	/* not stored: nothing freed, look on */
		return 1;
	}
	nkv_mem_forget(m, key, klen, e, 1);
	nkv_mem_ent_put(m, e);	/* valloc takes its own lock */
	__atomic_add_fetch(&m->evictions, 1, __ATOMIC_RELAXED);
	return 1;
}

/* Store under the write lock; e is consumed on success. *old gets an
 * entry the Store replaced or found expired, the caller's to free after
 * unlocking (either way). */
static uint16_t nkv_mem_store_locked(struct nkv_be_mem *m, struct nkv_be_op *op,
				     struct nkv_mem_ent *e, uint64_t now, void **old)
{
	void **slot = nkv_kvmap_slot(&m->map, op->key, op->klen);
	struct nkv_mem_ent *cur = slot ? *slot : NULL;
	uint64_t cost = nkv_mem_cost(op->klen, op->len);

	if (cur && nkv_mem_expired(cur, now)) {
		/* Absent: removed now, so a refused Store leaves nothing stale. */
		*old = nkv_mem_drop_expired(m, op->key, op->klen, now);
		cur = NULL;
		slot = NULL;
	}
	if ((op->options & NKV_STORE_MUST_EXIST) && !cur)
		return nkv_mem_st(NKV_SC_KV_KEY_NOT_EXISTS);
	if ((op->options & NKV_STORE_MUST_NOT_EXIST) && cur)
		return nkv_mem_st(NKV_SC_KV_KEY_EXISTS);	/* the owner stays */
	if (nkv_be_owner_admit(&m->be, op->owner, op->key, op->klen, cost))
		return nkv_mem_st(NKV_SC_CAPACITY_EXCEEDED);	/* this tenant's quota */
	while (m->bytes - (cur ? nkv_mem_cost(op->klen, cur->size) : 0) + cost > m->be.capacity ||
	       (!cur && m->be.max_keys && m->map.count >= m->be.max_keys))
		if (!m->lru || !nkv_mem_evict_one(m, op->key, op->klen))
			return nkv_mem_st(NKV_SC_CAPACITY_EXCEEDED);
	if (slot) {
		nkv_mem_forget(m, op->key, op->klen, cur, -1);
		*old = cur;	/* a replace: no second descent */
		*slot = e;
	} else if (nkv_kvmap_insert(&m->map, op->key, op->klen, e, NULL) < 0) {
		return nkv_mem_st(NKV_SC_INTERNAL);
	}
	m->bytes += cost;
	nkv_be_owner_stored(&m->be, op->owner, op->key, op->klen, cost, e->expire_ms != 0);
	if (e->expire_ms)
		__atomic_add_fetch(&m->ttl_keys, 1, __ATOMIC_RELAXED);
	if (m->lru)
		nkv_lru_use(m->lru, op->key, op->klen);	/* no memory: never evicted */
	return 0;
}

/* Touch: the value stays; a TTL given restarts the key's life with it,
 * else a TTL'd key's own TTL restarts (a key without one: nothing). */
static uint16_t nkv_mem_touch(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	uint64_t now = nkv_be_now_ms();
	struct nkv_mem_ent *e, *dead;

	pthread_rwlock_wrlock(&m->lock);
	dead = nkv_mem_drop_expired(m, op->key, op->klen, now);
	e = nkv_kvmap_find(&m->map, op->key, op->klen);
	if (e && (op->options & NKV_STORE_TTL)) {
		if (!e->expire_ms)
			__atomic_add_fetch(&m->ttl_keys, 1, __ATOMIC_RELAXED);
		e->ttl_s = op->ttl_s;
	}
	if (e && e->ttl_s) {
		e->expire_ms = now + (uint64_t)e->ttl_s * 1000u;
		nkv_be_owner_ttl(&m->be, op->key, op->klen, 1);
	}
	pthread_rwlock_unlock(&m->lock);
	nkv_mem_ent_put(m, dead);
	return e ? 0 : nkv_mem_st(NKV_SC_KV_KEY_NOT_EXISTS);
}

static size_t nkv_mem_sweep(struct nkv_be_mem *m);

/* One attempt at the map for a filled entry. */
static uint16_t nkv_mem_store_try(struct nkv_be_mem *m, struct nkv_be_op *op,
				  struct nkv_mem_ent *e)
{
	uint64_t now = nkv_be_now_ms();
	void *old = NULL;
	uint16_t st;

	e->expire_ms = e->ttl_s ? now + (uint64_t)e->ttl_s * 1000u : 0;
	pthread_rwlock_wrlock(&m->lock);
	st = nkv_mem_store_locked(m, op, e, now, &old);
	pthread_rwlock_unlock(&m->lock);
	nkv_mem_ent_put(m, old);
	return st;
}

/* A Store that finds the namespace full sweeps once and tries again:
 * expired keys must not keep a live one out until the sweep thread
 * comes round. */
static uint16_t nkv_mem_store(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	const uint16_t full = nkv_mem_st(NKV_SC_CAPACITY_EXCEEDED);
	struct nkv_mem_ent *e;
	uint16_t st;

	if (op->options & NKV_STORE_TOUCH)
		return nkv_mem_touch(m, op);
	/* The reservation is twice the capacity: out of it only when freed
	 * space too scattered to hold the value fills it. */
	e = nkv_mem_ent_get(m, op->len);
	if (!e && nkv_mem_sweep(m))
		e = nkv_mem_ent_get(m, op->len);
	if (!e)
		return full;
	st = nkv_be_copy_in(op, e->val, op->len);
	if (st) {
		nkv_mem_ent_put(m, e);
		return st;
	}
	e->ttl_s = op->options & NKV_STORE_TTL ? op->ttl_s : 0;
	st = nkv_mem_store_try(m, op, e);
	if (st == full && nkv_mem_sweep(m))
		st = nkv_mem_store_try(m, op, e);
	if (st)
		nkv_mem_ent_put(m, e);
	return st;
}

/* Values from this size are lent to a transport that sends from memory
 * (backend.h nkv_be_lend) rather than copied: below it the copy costs
 * less than the loan's bookkeeping. */
#define NKV_MEM_LEND_MIN (64u << 10)

/* n bytes of e's value to op: lent where the transport takes a loan (the
 * namespace's own Retrieve, not a tier's: lend 1), else copied. Under
 * the map's lock, so e cannot be retired before the loan is recorded. */
static uint16_t nkv_mem_give(struct nkv_be_mem *m, struct nkv_be_op *op,
			     const struct nkv_mem_ent *e, uint64_t n, int lend)
{
	void *tok;

	if (lend && m->lend && n >= NKV_MEM_LEND_MIN && nkv_be_lendable(op) &&
	    (tok = nkv_lend_take(m->lend, (void *)e))) {
		if (!nkv_be_lend(op, e->val, n, nkv_lend_release, tok))
			return 0;
		nkv_lend_release(tok);
	}
	return nkv_be_copy_out(op, e->val, n);
}

/* Retrieve; a host buffer of 0 bytes asks for the size only. */
static uint16_t nkv_mem_retrieve(struct nkv_be_mem *m, struct nkv_be_op *op, int lend)
{
	const struct nkv_mem_ent *e;
	uint16_t st = 0;
	int gone;

	pthread_rwlock_rdlock(&m->lock);
	e = nkv_mem_find_live(m, op->key, op->klen, nkv_be_now_ms(), &gone);
	if (e) {
		op->dw0 = e->size;	/* the full size, even when truncated */
		if (m->lru)
			nkv_lru_use(m->lru, op->key, op->klen);
		if (op->len)
			st = nkv_mem_give(m, op, e, e->size < op->len ? e->size : op->len, lend);
	} else {
		st = nkv_mem_st(NKV_SC_KV_KEY_NOT_EXISTS);
	}
	pthread_rwlock_unlock(&m->lock);
	if (gone)
		nkv_mem_reap(m, op->key, op->klen);
	return st;
}

static uint16_t nkv_mem_delete(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	uint64_t now = nkv_be_now_ms();
	struct nkv_mem_ent *e;
	int live;

	pthread_rwlock_wrlock(&m->lock);
	e = nkv_kvmap_delete(&m->map, op->key, op->klen);
	if (e)
		nkv_mem_forget(m, op->key, op->klen, e, 0);
	pthread_rwlock_unlock(&m->lock);
	live = e && !nkv_mem_expired(e, now);
	nkv_mem_ent_put(m, e);
	return live ? 0 : nkv_mem_st(NKV_SC_KV_KEY_NOT_EXISTS);
}

static uint16_t nkv_mem_exist(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	int found, gone;

	pthread_rwlock_rdlock(&m->lock);
	found = nkv_mem_find_live(m, op->key, op->klen, nkv_be_now_ms(), &gone) != NULL;
	pthread_rwlock_unlock(&m->lock);
	if (gone)
		nkv_mem_reap(m, op->key, op->klen);
	return found ? 0 : nkv_mem_st(NKV_SC_KV_KEY_NOT_EXISTS);
}

/* List: live keys >= the start key, in map order, while whole entries
 * fit (expired ones are left to the sweep). */
static uint16_t nkv_mem_list(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	uint64_t now = nkv_be_now_ms();
	struct nkv_kvmap_cursor c;
	int more;

	pthread_rwlock_rdlock(&m->lock);
	for (more = nkv_kvmap_seek(&m->map, &c, op->key, op->klen); more > 0;
	     more = nkv_kvmap_next(&c))
		if (!nkv_mem_expired(c.val, now) && nkv_be_list_add(op, c.key, c.klen))
			break;	/* full, or the client's page vanished */
	pthread_rwlock_unlock(&m->lock);
	return 0;
}

/* ---- the sweep ---- */

/* One stretch of the sweep: expired keys found under the shared lock
 * (copied, as the map may change before they are removed), resuming
 * after the last key looked at. */
struct nkv_mem_sweep {
	uint64_t now;
	uint8_t flen;			/* 0: from the beginning */
	uint8_t from[NKV_KEY_MAX];	/* the last key looked at */
	unsigned n;
	uint8_t klen[NKV_MEM_SWEEP_BATCH];
	uint8_t key[NKV_MEM_SWEEP_BATCH][NKV_KEY_MAX];
};

/* Find up to a batch of expired keys; 1 while the map goes on past the
 * last key looked at. */
static int nkv_mem_sweep_scan(struct nkv_be_mem *m, struct nkv_mem_sweep *s)
{
	struct nkv_kvmap_cursor c;
	unsigned seen = 0;
	int more;

	s->n = 0;
	pthread_rwlock_rdlock(&m->lock);
	more = nkv_kvmap_seek(&m->map, &c, s->from, s->flen);
	if (more > 0 && !nkv_kvmap_cmp(c.key, c.klen, s->from, s->flen))
		more = nkv_kvmap_next(&c);	/* looked at last time */
	for (; more > 0 && seen < NKV_MEM_SWEEP_SCAN && s->n < NKV_MEM_SWEEP_BATCH;
	     more = nkv_kvmap_next(&c), seen++) {
		if (nkv_mem_expired(c.val, s->now)) {
			memcpy(s->key[s->n], c.key, c.klen);
			s->klen[s->n++] = c.klen;
		}
		memcpy(s->from, c.key, c.klen);
		s->flen = c.klen;
	}
	pthread_rwlock_unlock(&m->lock);
	return more > 0;
}

/* Remove the keys a scan found that are still expired; how many. */
static size_t nkv_mem_sweep_remove(struct nkv_be_mem *m, struct nkv_mem_sweep *s)
{
	struct nkv_mem_ent *dead[NKV_MEM_SWEEP_BATCH];
	unsigned i, n = 0;

	if (!s->n)
		return 0;
	pthread_rwlock_wrlock(&m->lock);
	for (i = 0; i < s->n; i++) {
		dead[n] = nkv_mem_drop_expired(m, s->key[i], s->klen[i], s->now);
		n += dead[n] != NULL;
	}
	pthread_rwlock_unlock(&m->lock);
	for (i = 0; i < n; i++)
		nkv_mem_ent_put(m, dead[i]);
	return n;
}

static size_t nkv_mem_sweep(struct nkv_be_mem *m)
{
	struct nkv_mem_sweep s;
	size_t removed = 0;
	int more;

	if (!__atomic_load_n(&m->ttl_keys, __ATOMIC_RELAXED))
		return 0;
	s.now = nkv_be_now_ms();
	s.flen = 0;
	do {
		more = nkv_mem_sweep_scan(m, &s);
		removed += nkv_mem_sweep_remove(m, &s);
	} while (more);
	return removed;
}

static void *nkv_mem_sweeper(void *arg)
{
	struct nkv_be_mem *m = arg;
	struct timespec ts;

	pthread_mutex_lock(&m->slock);
	while (!m->sstop) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += NKV_MEM_SWEEP_MS % 1000 * 1000000L;
		ts.tv_sec += NKV_MEM_SWEEP_MS / 1000 + ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&m->scond, &m->slock, &ts);
		if (m->sstop)
			break;
		pthread_mutex_unlock(&m->slock);
		nkv_mem_sweep(m);
		pthread_mutex_lock(&m->slock);
	}
	pthread_mutex_unlock(&m->slock);
	return NULL;
}

static int nkv_mem_sweeper_start(struct nkv_be_mem *m)
{
	pthread_condattr_t ca;
	int rc;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&m->slock, NULL);
	pthread_cond_init(&m->scond, &ca);
	pthread_condattr_destroy(&ca);
	rc = pthread_create(&m->sweep_thr, NULL, nkv_mem_sweeper, m);
	if (rc) {
		pthread_cond_destroy(&m->scond);
		pthread_mutex_destroy(&m->slock);
		return -rc;
	}
	m->sweeper = 1;
	return 0;
}

static void nkv_mem_sweeper_stop(struct nkv_be_mem *m)
{
	if (!m->sweeper)
		return;
	pthread_mutex_lock(&m->slock);
	m->sstop = 1;
	pthread_cond_signal(&m->scond);
	pthread_mutex_unlock(&m->slock);
	pthread_join(m->sweep_thr, NULL);
	pthread_cond_destroy(&m->scond);
	pthread_mutex_destroy(&m->slock);
	m->sweeper = 0;
}

/* NVM Read / Write: the core checked the range against be.capacity. */
static uint16_t nkv_mem_nvm(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	uint8_t *p = m->blocks + op->slba * m->be.block_size;
	uint16_t st;

	if (op->opc == NKV_NVM_FLUSH)
		return 0;
	if (op->opc == NKV_NVM_WRITE) {
		pthread_rwlock_wrlock(&m->lock);
		st = nkv_be_copy_in(op, p, op->len);
	} else if (op->opc == NKV_NVM_READ) {
		pthread_rwlock_rdlock(&m->lock);
		st = nkv_be_copy_out(op, p, op->len);
	} else {
		return nkv_mem_st(NKV_SC_INVALID_OPCODE);
	}
	pthread_rwlock_unlock(&m->lock);
	return st;
}

/* lend: the namespace's own command (a tier's caller copies). */
static uint16_t nkv_mem_exec(struct nkv_be_mem *m, struct nkv_be_op *op, int lend)
{
	if (m->blocks)
		return nkv_mem_nvm(m, op);
	switch (op->opc) {
	case NKV_KV_STORE: return nkv_mem_store(m, op);
	case NKV_KV_RETRIEVE: return nkv_mem_retrieve(m, op, lend);
	case NKV_KV_DELETE: return nkv_mem_delete(m, op);
	case NKV_KV_EXIST: return nkv_mem_exist(m, op);
	case NKV_KV_LIST: return nkv_mem_list(m, op);
	default: return nkv_mem_st(NKV_SC_INVALID_OPCODE);
	}
}

static void nkv_mem_run(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	op->dw0 = 0;
	op->status = nkv_mem_exec(m, op, 1);
	op->done(op);
}

static void *nkv_mem_worker(void *arg)
{
	struct nkv_be_mem *m = arg;
	struct nkv_be_op *op;

	pthread_mutex_lock(&m->qlock);
	for (;;) {
		while (!m->qlen && !m->stop)
			pthread_cond_wait(&m->qcond, &m->qlock);
		if (!m->qlen)
			break;	/* stop requested and drained */
		op = m->q[m->qhead];
		m->qhead = (m->qhead + 1) % m->qcap;
		m->qlen--;
		pthread_mutex_unlock(&m->qlock);
		nkv_mem_run(m, op);
		pthread_mutex_lock(&m->qlock);
	}
	pthread_mutex_unlock(&m->qlock);
	return NULL;
}

/* Append to the worker's ring, growing it (unwrapped) when full. */
static int nkv_mem_enqueue(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	pthread_mutex_lock(&m->qlock);
	if (m->qlen == m->qcap) {
		size_t cap = m->qcap ? m->qcap * 2 : 256, i;
		struct nkv_be_op **q = malloc(cap * sizeof(*q));

		if (!q) {
			pthread_mutex_unlock(&m->qlock);
			return -ENOMEM;
		}
		for (i = 0; i < m->qlen; i++)
			q[i] = m->q[(m->qhead + i) % m->qcap];
		free(m->q);
		m->q = q;
		m->qcap = cap;
		m->qhead = 0;
	}
	m->q[(m->qhead + m->qlen) % m->qcap] = op;
	m->qlen++;
	pthread_cond_signal(&m->qcond);
	pthread_mutex_unlock(&m->qlock);
	return 0;
}

static int nkv_mem_submit(struct nkv_be *be, struct nkv_be_op *op)
{
	struct nkv_be_mem *m = (struct nkv_be_mem *)be;

	if (m->worker)
		return nkv_mem_enqueue(m, op);
	nkv_mem_run(m, op);
	return 0;
}

/* ---- the volatile-tier API (mem.h) ---- */

uint16_t nkv_be_mem_run(struct nkv_be *be, struct nkv_be_op *op)
{
	op->dw0 = 0;
	return nkv_mem_exec((struct nkv_be_mem *)be, op, 0);
}

int nkv_be_mem_has(struct nkv_be *be, const uint8_t *key, uint8_t klen)
{
	struct nkv_be_mem *m = (struct nkv_be_mem *)be;
	int found, gone;

	pthread_rwlock_rdlock(&m->lock);
	found = nkv_mem_find_live(m, key, klen, nkv_be_now_ms(), &gone) != NULL;
	pthread_rwlock_unlock(&m->lock);
	if (gone)
		nkv_mem_reap(m, key, klen);
	return found;
}

int nkv_be_mem_remove(struct nkv_be *be, const uint8_t *key, uint8_t klen)
{
	struct nkv_be_mem *m = (struct nkv_be_mem *)be;
	struct nkv_mem_ent *e;

	pthread_rwlock_wrlock(&m->lock);
	e = nkv_kvmap_delete(&m->map, key, klen);
	if (e)
		nkv_mem_forget(m, key, klen, e, 0);
	pthread_rwlock_unlock(&m->lock);
	nkv_mem_ent_put(m, e);
	return e != NULL;
}

int nkv_be_mem_walk(struct nkv_be *be,
		    int (*fn)(void *arg, const uint8_t *key, uint8_t klen), void *arg)
{
	struct nkv_be_mem *m = (struct nkv_be_mem *)be;
	uint64_t now = nkv_be_now_ms();
	struct nkv_kvmap_cursor c;
	int more, rc = 0;

	pthread_rwlock_rdlock(&m->lock);
	for (more = nkv_kvmap_seek(&m->map, &c, NULL, 0); more > 0 && !rc;
	     more = nkv_kvmap_next(&c))
		if (!nkv_mem_expired(c.val, now))
			rc = fn(arg, c.key, c.klen);
	pthread_rwlock_unlock(&m->lock);
	return rc;
}

size_t nkv_be_mem_sweep(struct nkv_be *be)
{
	return nkv_mem_sweep((struct nkv_be_mem *)be);
}

uint64_t nkv_be_mem_room(struct nkv_be *be)
{
	struct nkv_be_mem *m = (struct nkv_be_mem *)be;
	uint64_t room;

	pthread_rwlock_rdlock(&m->lock);
	room = m->bytes < be->capacity ? be->capacity - m->bytes : 0;
	pthread_rwlock_unlock(&m->lock);
	return room;
}

static uint64_t nkv_mem_bytes(struct nkv_be *be)
{
	struct nkv_be_mem *m = (struct nkv_be_mem *)be;
	uint64_t v;

	pthread_rwlock_rdlock(&m->lock);
	v = m->blocks ? be->capacity * be->block_size : m->bytes;
	pthread_rwlock_unlock(&m->lock);
	return v;
}

static uint64_t nkv_mem_keys(struct nkv_be *be)
{
	struct nkv_be_mem *m = (struct nkv_be_mem *)be;
	uint64_t v;

	pthread_rwlock_rdlock(&m->lock);
	v = m->map.count;
	pthread_rwlock_unlock(&m->lock);
	return v;
}

static uint64_t nkv_mem_evictions(struct nkv_be *be)
{
	return __atomic_load_n(&((struct nkv_be_mem *)be)->evictions, __ATOMIC_RELAXED);
}

/* The metrics endpoint's figures: TTL keys held and expired. */
static unsigned nkv_mem_metrics(struct nkv_be *be, struct nkv_be_metric *out, unsigned max)
{
	struct nkv_be_mem *m = (struct nkv_be_mem *)be;

	if (be->csi != NKV_CSI_KV || max < 2)
		return 0;
	out[0] = (struct nkv_be_metric){ "ttl_keys", "Keys stored with a TTL.", 0,
					 (double)__atomic_load_n(&m->ttl_keys, __ATOMIC_RELAXED) };
	out[1] = (struct nkv_be_metric){ "ttl_expiries_total",
					 "Keys removed because their TTL passed.", 1,
					 (double)__atomic_load_n(&m->expiries, __ATOMIC_RELAXED) };
	return 2;
}

static void nkv_mem_destroy(struct nkv_be *be)
{
	struct nkv_be_mem *m = (struct nkv_be_mem *)be;
	if (m->worker) {
		pthread_mutex_lock(&m->qlock);
		m->stop = 1;
		pthread_cond_signal(&m->qcond);
		pthread_mutex_unlock(&m->qlock);
		pthread_join(m->thr, NULL);
		pthread_mutex_destroy(&m->qlock);
		pthread_cond_destroy(&m->qcond);
	}
	nkv_mem_sweeper_stop(m);
	nkv_lend_destroy(m->lend);	/* values still being sent: waited for */
	nkv_kvmap_fini(&m->map, NULL);	/* the entries go with the allocator */
	nkv_valloc_destroy(m->va);
	nkv_lru_destroy(m->lru);
	pthread_rwlock_destroy(&m->lock);
	free(m->q);
	free(m->blocks);
	free(m);
}

static void nkv_mem_describe(struct nkv_be *be, char *buf, size_t len)
{
	const struct nkv_be_mem *m = (const struct nkv_be_mem *)be;

	/* The NVM namespace has no settings of its own. */
	snprintf(buf, len, "%s", m->blocks ? "" : m->lru ? "evict=lru" : "evict=none");
}

static int nkv_mem_set_limits(struct nkv_be *be, const struct nkv_be_limits *l, char *err,
			      size_t errlen);

static const struct nkv_be_ops nkv_mem_ops = {
	.name = "mem",
	.submit = nkv_mem_submit,
	.bytes_used = nkv_mem_bytes,
	.keys_used = nkv_mem_keys,
	.evictions = nkv_mem_evictions,
	.describe = nkv_mem_describe,
	.metrics = nkv_mem_metrics,
	.destroy = nkv_mem_destroy,
	.set_limits = nkv_mem_set_limits,
};

/* valloc reserves about twice capacity + one value of address space. */
#define NKV_MEM_MAX_CAPACITY (1ull << 60)
/* A KV namespace reserves address space (only: no memory until values
 * use it) for this many times its start capacity, so namespace_set can
 * raise it while it serves. */
#define NKV_MEM_GROW 4u

/* Every stored key into a new LRU (order: key order, as nothing says
 * which was used last). Under the write lock. NULL when out of memory. */
static struct nkv_lru *nkv_mem_lru_fill(struct nkv_be_mem *m)
{
	struct nkv_lru *l = nkv_lru_create();
	struct nkv_kvmap_cursor c;
	int more;

	for (more = l ? nkv_kvmap_seek(&m->map, &c, NULL, 0) : 0; more > 0;
	     more = nkv_kvmap_next(&c))
		if (nkv_lru_use(l, c.key, c.klen)) {
			nkv_lru_destroy(l);
			return NULL;
		}
	return l;
}

/* namespace_set: every Store takes the write lock and reads the limits
 * and the LRU under it, so changing them under it is seen whole. */
static int nkv_mem_set_limits(struct nkv_be *be, const struct nkv_be_limits *l, char *err,
			      size_t errlen)
{
	struct nkv_be_mem *m = (struct nkv_be_mem *)be;
	struct nkv_lru *lru = NULL, *old = NULL;

	if (m->blocks) {
		snprintf(err, errlen, "mem backend: an NVM namespace's size is fixed");
		return -EOPNOTSUPP;
	}
	if (l->capacity > m->cap_max) {
		snprintf(err, errlen, "mem backend: capacity %llu is more than %llu, the "
			 "address space reserved at start (%ux --capacity); restart with a "
			 "larger --capacity", (unsigned long long)l->capacity,
			 (unsigned long long)m->cap_max, NKV_MEM_GROW);
		return -ERANGE;
	}
	pthread_rwlock_wrlock(&m->lock);
	if (l->evict == 1 && !m->lru && !(lru = nkv_mem_lru_fill(m))) {
		pthread_rwlock_unlock(&m->lock);
		snprintf(err, errlen, "mem backend: no memory for the LRU");
		return -ENOMEM;
	}
	if (l->capacity)
		__atomic_store_n(&m->be.capacity, l->capacity, __ATOMIC_RELAXED);
	if (l->set_max_keys)
		__atomic_store_n(&m->be.max_keys, l->max_keys, __ATOMIC_RELAXED);
	if (lru)
		m->lru = lru;
	else if (l->evict == 0) {
		old = m->lru;
		m->lru = NULL;
	}
	m->be.evict = m->lru != NULL;
	pthread_rwlock_unlock(&m->lock);
	nkv_lru_destroy(old);
	return 0;
}

/* Why o cannot be a namespace, or NULL. */
static const char *nkv_mem_check(const struct nkv_be_conf *o, uint64_t cap, uint32_t bs)
{
	if (!o->nvm)
		return cap > NKV_MEM_MAX_CAPACITY ? "capacity is larger than 2^60 bytes" : NULL;
	if (bs < 512 || (bs & (bs - 1)))
		return "block size is not a power of two of at least 512";
	return cap < bs ? "capacity is less than one block" : NULL;
}

static int nkv_mem_setup(struct nkv_be_mem *m, const struct nkv_be_conf *o, uint64_t cap,
			 uint32_t bs, uint32_t mv)
{
	m->be.ops = &nkv_mem_ops;
	if (!o->nvm) {
		m->be.csi = NKV_CSI_KV;
		m->be.capacity = cap;
		m->be.max_keys = o->max_keys;
		m->be.max_value = mv;
		/* TTL and touch in full; ephemeral is what mem always is. */
		m->be.store_opts = NKV_STORE_VENDOR_MASK;
		m->cap_max = cap > NKV_MEM_MAX_CAPACITY / NKV_MEM_GROW ? NKV_MEM_MAX_CAPACITY
								      : cap * NKV_MEM_GROW;
		m->va = nkv_valloc_create_grow(cap, m->cap_max, m->be.max_value);
		return m->va ? nkv_mem_sweeper_start(m) : -ENOMEM;
	}
	m->be.csi = NKV_CSI_NVM;
	m->be.block_size = bs;
	m->be.capacity = cap / bs;
	m->blocks = calloc(m->be.capacity, bs);
	return m->blocks ? 0 : -ENOMEM;
}

/* --evict's value, or NULL (registry.c's nkv_be_conf_get is not linked
 * where mem is used alone). */
static const char *nkv_mem_evict(const struct nkv_be_conf *o)
{
	const char *v = NULL;
	size_t i;

	for (i = 0; i < o->nparams; i++)
		if (!strcmp(o->params[i].name, "evict"))
			v = o->params[i].value;
	return v;
}

static int nkv_mem_check_opts(const struct nkv_be_conf *o, char *err, size_t errlen)
{
	const char *ev = nkv_mem_evict(o);

	if (!ev || !strcmp(ev, "lru"))
		return 0;
	snprintf(err, errlen, "mem backend: --evict %s: the only policy is lru", ev);
	return -EINVAL;
}

/* 64 MiB, or room for two values of the largest size when that is more
 * (a default namespace with 64 MiB values still holds one). */
static uint64_t nkv_mem_default_capacity(const struct nkv_be_conf *o, uint32_t mv)
{
	uint64_t two = 2 * nkv_be_mem_key_cost(mv);

	return o->nvm || two < (64ull << 20) ? 64ull << 20 : two;
}

/* The one way a mem backend is made (the type's create): NULL, errno and
 * a reason in err. */
static struct nkv_be *nkv_mem_new(const struct nkv_be_conf *o, char *err, size_t errlen)
{
	uint32_t mv = o->max_value ? o->max_value : 1u << 20;
	uint64_t cap = o->capacity ? o->capacity : nkv_mem_default_capacity(o, mv);
	uint32_t bs = o->block_size ? o->block_size : 4096;
	const char *why = nkv_mem_check(o, cap, bs);
	struct nkv_be_mem *m;
	int rc;

	if (nkv_mem_check_opts(o, err, errlen)) {
		errno = EINVAL;
		return NULL;
	}
	if (why) {
		snprintf(err, errlen, "mem backend: %s (capacity %llu, %s %u)", why,
			 (unsigned long long)cap, o->nvm ? "block size" : "max value",
			 o->nvm ? bs : mv);
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "mem backend: %s", strerror(ENOMEM));
		errno = ENOMEM;
		return NULL;
	}
	pthread_rwlock_init(&m->lock, NULL);
	nkv_kvmap_init(&m->map);
	rc = nkv_mem_setup(m, o, cap, bs, mv);
	if (!rc && nkv_mem_evict(o) && !(m->lru = nkv_lru_create()))
		rc = -ENOMEM;
	if (!rc && !o->nvm && !(m->lend = nkv_lend_create(nkv_mem_ent_unlent, m)))
		rc = -ENOMEM;
	m->be.evict = m->lru != NULL;
	if (!rc && o->worker) {
		pthread_mutex_init(&m->qlock, NULL);
		pthread_cond_init(&m->qcond, NULL);
		m->worker = 1;
		rc = -pthread_create(&m->thr, NULL, nkv_mem_worker, m);
		if (rc)
			m->worker = 0;
	}
	if (rc) {
		nkv_mem_destroy(&m->be);
		snprintf(err, errlen, "mem backend: %s", strerror(-rc));
		errno = -rc;
		return NULL;
	}
	return &m->be;
}

/* --evict is its one option: --capacity, --max-value, --max-keys and
 * --nvm-ns are the namespace's (struct nkv_be_conf); its name is a label
 * only. */
static const struct nkv_be_optdesc nkv_mem_opts[] = {
	{ "evict", "lru", "when a Store would exceed --capacity (or --max-keys), delete\n"
			  "the least recently stored or retrieved keys instead of\n"
			  "answering 81h; evictions are counted in the stats" },
	{ NULL, NULL, NULL },
};

const struct nkv_be_type nkv_be_type_mem = {
	.name = "mem",
	.summary = "in memory, lost at exit (also the NVM namespace of --nvm-ns)",
	.opts = nkv_mem_opts,
	.create = nkv_mem_new,
	.check = nkv_mem_check_opts,
};
