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
 * helpers) before the lock and given back after it. A value of up to 240
 * bytes shares one block with its 16-byte header; a larger one has an
 * extent of its own and its header sits in the allocator's 16-byte
 * class, so a power-of-two value takes a block of exactly its size, and
 * starts aligned (page-aligned above 32 KiB): with a 4-byte header in
 * front, a 2 MiB value took a 2.5 MiB block and every copy into it ran
 * 4 bytes off alignment, up to 4x slower.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "kvmap.h"
#include "registry.h"
#include "valloc.h"

/* The map's value: the stored bytes' header (the key lives in the map). */
struct nkv_mem_ent {
	uint32_t size;
	uint8_t *val;	/* just after the header, or an extent of its own */
};

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

static void nkv_mem_ent_put(struct nkv_be_mem *m, struct nkv_mem_ent *e)
{
	if (!e)
		return;
	if (e->size <= NKV_MEM_INLINE) {
		nkv_valloc_put(m->va, e, sizeof(*e) + e->size);
		return;
	}
	nkv_valloc_put(m->va, e->val, e->size);
	nkv_valloc_put(m->va, e, sizeof(*e));
}

static uint16_t nkv_mem_st(uint8_t sc)
{
	return NKV_STATUS(NKV_SCT_GENERIC, sc);
}

/* Store under the write lock; e is consumed on success (*old, the
 * replaced entry, is the caller's to free after unlocking). */
static uint16_t nkv_mem_store_locked(struct nkv_be_mem *m, struct nkv_be_op *op,
				     struct nkv_mem_ent *e, void **old)
{
	void **slot = nkv_kvmap_slot(&m->map, op->key, op->klen);
	const struct nkv_mem_ent *cur = slot ? *slot : NULL;
	uint64_t ocost = cur ? nkv_mem_cost(op->klen, cur->size) : 0;
	uint64_t cost = nkv_mem_cost(op->klen, op->len);

	if ((op->options & NKV_STORE_MUST_EXIST) && !cur)
		return nkv_mem_st(NKV_SC_KV_KEY_NOT_EXISTS);
	if ((op->options & NKV_STORE_MUST_NOT_EXIST) && cur)
		return nkv_mem_st(NKV_SC_KV_KEY_EXISTS);
	if (m->bytes - ocost + cost > m->be.capacity ||
	    (!cur && m->be.max_keys && m->map.count >= m->be.max_keys))
		return nkv_mem_st(NKV_SC_CAPACITY_EXCEEDED);
	if (slot) {
		*old = *slot;	/* a replace: no second descent */
		*slot = e;
	} else if (nkv_kvmap_insert(&m->map, op->key, op->klen, e, old) < 0) {
		return nkv_mem_st(NKV_SC_INTERNAL);
	}
	m->bytes = m->bytes - ocost + cost;
	return 0;
}

static uint16_t nkv_mem_store(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	struct nkv_mem_ent *e = nkv_mem_ent_get(m, op->len);
	void *old = NULL;
	uint16_t st;

	/* The reservation is twice the capacity: out of it only when freed
	 * space too scattered to hold the value fills it. */
	if (!e)
		return nkv_mem_st(NKV_SC_CAPACITY_EXCEEDED);
	st = nkv_be_copy_in(op, e->val, op->len);
	if (st) {
		nkv_mem_ent_put(m, e);
		return st;
	}
	pthread_rwlock_wrlock(&m->lock);
	st = nkv_mem_store_locked(m, op, e, &old);
	pthread_rwlock_unlock(&m->lock);
	nkv_mem_ent_put(m, st ? e : old);
	return st;
}

static uint16_t nkv_mem_retrieve(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	const struct nkv_mem_ent *e;
	uint16_t st = 0;

	pthread_rwlock_rdlock(&m->lock);
	e = nkv_kvmap_find(&m->map, op->key, op->klen);
	if (e) {
		op->dw0 = e->size;	/* the full size, even when truncated */
		st = nkv_be_copy_out(op, e->val, e->size < op->len ? e->size : op->len);
	} else {
		st = nkv_mem_st(NKV_SC_KV_KEY_NOT_EXISTS);
	}
	pthread_rwlock_unlock(&m->lock);
	return st;
}

static uint16_t nkv_mem_delete(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	struct nkv_mem_ent *e;

	pthread_rwlock_wrlock(&m->lock);
	e = nkv_kvmap_delete(&m->map, op->key, op->klen);
	if (e)
		m->bytes -= nkv_mem_cost(op->klen, e->size);
	pthread_rwlock_unlock(&m->lock);
	if (!e)
		return nkv_mem_st(NKV_SC_KV_KEY_NOT_EXISTS);
	nkv_mem_ent_put(m, e);
	return 0;
}

static uint16_t nkv_mem_exist(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	int found;

	pthread_rwlock_rdlock(&m->lock);
	found = nkv_kvmap_find(&m->map, op->key, op->klen) != NULL;
	pthread_rwlock_unlock(&m->lock);
	return found ? 0 : nkv_mem_st(NKV_SC_KV_KEY_NOT_EXISTS);
}

/* List: keys >= the start key, in map order, while whole entries fit. */
static uint16_t nkv_mem_list(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	struct nkv_kvmap_cursor c;
	int more;

	pthread_rwlock_rdlock(&m->lock);
	for (more = nkv_kvmap_seek(&m->map, &c, op->key, op->klen); more > 0;
	     more = nkv_kvmap_next(&c))
		if (nkv_be_list_add(op, c.key, c.klen))
			break;	/* full, or the client's page vanished */
	pthread_rwlock_unlock(&m->lock);
	return 0;
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

static uint16_t nkv_mem_exec(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	if (m->blocks)
		return nkv_mem_nvm(m, op);
	switch (op->opc) {
	case NKV_KV_STORE: return nkv_mem_store(m, op);
	case NKV_KV_RETRIEVE: return nkv_mem_retrieve(m, op);
	case NKV_KV_DELETE: return nkv_mem_delete(m, op);
	case NKV_KV_EXIST: return nkv_mem_exist(m, op);
	case NKV_KV_LIST: return nkv_mem_list(m, op);
	default: return nkv_mem_st(NKV_SC_INVALID_OPCODE);
	}
}

static void nkv_mem_run(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	op->dw0 = 0;
	op->status = nkv_mem_exec(m, op);
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
	nkv_kvmap_fini(&m->map, NULL);	/* the entries go with the allocator */
	nkv_valloc_destroy(m->va);
	pthread_rwlock_destroy(&m->lock);
	free(m->q);
	free(m->blocks);
	free(m);
}

static const struct nkv_be_ops nkv_mem_ops = {
	.name = "mem",
	.submit = nkv_mem_submit,
	.bytes_used = nkv_mem_bytes,
	.keys_used = nkv_mem_keys,
	.destroy = nkv_mem_destroy,
};

/* valloc reserves about twice capacity + one value of address space. */
#define NKV_MEM_MAX_CAPACITY (1ull << 60)

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
		m->va = nkv_valloc_create(cap, m->be.max_value);
		return m->va ? 0 : -ENOMEM;
	}
	m->be.csi = NKV_CSI_NVM;
	m->be.block_size = bs;
	m->be.capacity = cap / bs;
	m->blocks = calloc(m->be.capacity, bs);
	return m->blocks ? 0 : -ENOMEM;
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

/* No options of its own: --capacity, --max-value, --max-keys and --nvm-ns
 * are the namespace's (struct nkv_be_conf); its name is a label only. */
const struct nkv_be_type nkv_be_type_mem = {
	.name = "mem",
	.summary = "in memory, lost at exit (also the NVM namespace of --nvm-ns)",
	.create = nkv_mem_new,
};
