/* SPDX-License-Identifier: MIT */
/*
 * be_mem.c - the memory backend (see be_mem.h).
 *
 * The KV map is a sorted array of entries under an rwlock: lookups and
 * List are O(log n) to seek and share the lock; Store and Delete take it
 * exclusively (an insert moves pointers, memmove-fast for the key counts
 * a reference target holds). Values are copied in and out of the client's
 * segments outside the lock where possible.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "be_mem.h"

struct nkv_mem_ent {
	uint8_t klen;
	uint8_t key[NKV_KEY_MAX];
	uint32_t size;
	uint8_t *val;
};

struct nkv_be_mem {
	struct nkv_be be;
	pthread_rwlock_t lock;
	struct nkv_mem_ent **ent;	/* sorted */
	size_t n;
	size_t cap;
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

static uint16_t nkv_mem_st(uint8_t sc)
{
	return NKV_STATUS(NKV_SCT_GENERIC, sc);
}

static int nkv_mem_cmp(const uint8_t *a, uint8_t al, const uint8_t *b, uint8_t bl)
{
	int r = memcmp(a, b, al < bl ? al : bl);

	return r ? r : (int)al - (int)bl;
}

/* First entry not below (key, klen). */
static size_t nkv_mem_seek(const struct nkv_be_mem *m, const uint8_t *key, uint8_t klen)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (nkv_mem_cmp(m->ent[mid]->key, m->ent[mid]->klen, key, klen) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int nkv_mem_found(const struct nkv_be_mem *m, size_t i, const struct nkv_be_op *op)
{
	return i < m->n && !nkv_mem_cmp(m->ent[i]->key, m->ent[i]->klen, op->key, op->klen);
}

static void nkv_mem_gather(uint8_t *dst, const struct nkv_be_op *op, uint64_t len)
{
	uint64_t done = 0;
	int i;

	for (i = 0; i < op->iovcnt && done < len; i++) {
		uint64_t n = op->iov[i].iov_len < len - done ? op->iov[i].iov_len : len - done;

		memcpy(dst + done, op->iov[i].iov_base, n);
		done += n;
	}
}

static void nkv_mem_scatter(const struct nkv_be_op *op, const uint8_t *src, uint64_t len)
{
	uint64_t done = 0;
	int i;

	for (i = 0; i < op->iovcnt && done < len; i++) {
		uint64_t n = op->iov[i].iov_len < len - done ? op->iov[i].iov_len : len - done;

		memcpy(op->iov[i].iov_base, src + done, n);
		done += n;
	}
}

static int nkv_mem_grow(struct nkv_be_mem *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct nkv_mem_ent **e;

	if (m->n < m->cap)
		return 0;
	e = realloc(m->ent, cap * sizeof(*e));
	if (!e)
		return -ENOMEM;
	m->ent = e;
	m->cap = cap;
	return 0;
}

/* Store under the write lock; buf (len bytes) is consumed on success. */
static uint16_t nkv_mem_store_locked(struct nkv_be_mem *m, struct nkv_be_op *op,
				     uint8_t *buf)
{
	size_t i = nkv_mem_seek(m, op->key, op->klen);
	int found = nkv_mem_found(m, i, op);
	uint64_t old = found ? m->ent[i]->size : 0;
	struct nkv_mem_ent *e;

	if ((op->options & NKV_STORE_MUST_EXIST) && !found)
		return nkv_mem_st(NKV_SC_KV_KEY_NOT_EXISTS);
	if ((op->options & NKV_STORE_MUST_NOT_EXIST) && found)
		return nkv_mem_st(NKV_SC_KV_KEY_EXISTS);
	if (m->bytes - old + op->len > m->be.capacity ||
	    (!found && m->be.max_keys && m->n >= m->be.max_keys))
		return nkv_mem_st(NKV_SC_CAPACITY_EXCEEDED);
	if (found) {
		e = m->ent[i];
		free(e->val);
	} else {
		e = calloc(1, sizeof(*e));
		if (!e || nkv_mem_grow(m)) {
			free(e);
			return nkv_mem_st(NKV_SC_INTERNAL);
		}
		e->klen = op->klen;
		memcpy(e->key, op->key, op->klen);
		memmove(&m->ent[i + 1], &m->ent[i], (m->n - i) * sizeof(e));
		m->ent[i] = e;
		m->n++;
	}
	e->val = buf;
	e->size = (uint32_t)op->len;
	m->bytes = m->bytes - old + op->len;
	return 0;
}

static uint16_t nkv_mem_store(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	uint8_t *buf = malloc(op->len);
	uint16_t st;

	if (!buf)
		return nkv_mem_st(NKV_SC_INTERNAL);
	nkv_mem_gather(buf, op, op->len);
	pthread_rwlock_wrlock(&m->lock);
	st = nkv_mem_store_locked(m, op, buf);
	pthread_rwlock_unlock(&m->lock);
	if (st)
		free(buf);
	return st;
}

static uint16_t nkv_mem_retrieve(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	size_t i;
	uint16_t st = 0;

	pthread_rwlock_rdlock(&m->lock);
	i = nkv_mem_seek(m, op->key, op->klen);
	if (nkv_mem_found(m, i, op)) {
		const struct nkv_mem_ent *e = m->ent[i];

		op->dw0 = e->size;	/* the full size, even when truncated */
		nkv_mem_scatter(op, e->val, e->size < op->len ? e->size : op->len);
	} else {
		st = nkv_mem_st(NKV_SC_KV_KEY_NOT_EXISTS);
	}
	pthread_rwlock_unlock(&m->lock);
	return st;
}

static uint16_t nkv_mem_delete(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	struct nkv_mem_ent *e = NULL;
	size_t i;

	pthread_rwlock_wrlock(&m->lock);
	i = nkv_mem_seek(m, op->key, op->klen);
	if (nkv_mem_found(m, i, op)) {
		e = m->ent[i];
		memmove(&m->ent[i], &m->ent[i + 1], (m->n - i - 1) * sizeof(e));
		m->n--;
		m->bytes -= e->size;
	}
	pthread_rwlock_unlock(&m->lock);
	if (!e)
		return nkv_mem_st(NKV_SC_KV_KEY_NOT_EXISTS);
	free(e->val);
	free(e);
	return 0;
}

static uint16_t nkv_mem_exist(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	int found;

	pthread_rwlock_rdlock(&m->lock);
	found = nkv_mem_found(m, nkv_mem_seek(m, op->key, op->klen), op);
	pthread_rwlock_unlock(&m->lock);
	return found ? 0 : nkv_mem_st(NKV_SC_KV_KEY_NOT_EXISTS);
}

/* List: keys >= the start key, in map order, whole entries only. */
static uint16_t nkv_mem_list(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	uint8_t *buf = calloc(1, op->len);
	uint32_t count = 0, off = NKV_LIST_HDR_SIZE;
	size_t i;

	if (!buf)
		return nkv_mem_st(NKV_SC_INTERNAL);
	pthread_rwlock_rdlock(&m->lock);
	for (i = nkv_mem_seek(m, op->key, op->klen); i < m->n; i++) {
		const struct nkv_mem_ent *e = m->ent[i];
		uint16_t kl = e->klen;

		if (off + nkv_list_entry_size(kl) > op->len)
			break;
		memcpy(buf + off, &kl, 2);
		memcpy(buf + off + 2, e->key, kl);
		off += nkv_list_entry_size(kl);
		count++;
	}
	pthread_rwlock_unlock(&m->lock);
	memcpy(buf, &count, 4);
	op->dw0 = count;
	nkv_mem_scatter(op, buf, off);
	free(buf);
	return 0;
}

static uint16_t nkv_mem_nvm(struct nkv_be_mem *m, struct nkv_be_op *op)
{
	uint8_t *p = m->blocks + op->slba * m->be.block_size;

	if (op->opc == NKV_NVM_FLUSH)
		return 0;
	if (op->slba >= m->be.capacity ||
	    op->len > (m->be.capacity - op->slba) * m->be.block_size)
		return nkv_mem_st(NKV_SC_LBA_OUT_OF_RANGE);
	if (op->opc == NKV_NVM_WRITE) {
		pthread_rwlock_wrlock(&m->lock);
		nkv_mem_gather(p, op, op->len);
	} else if (op->opc == NKV_NVM_READ) {
		pthread_rwlock_rdlock(&m->lock);
		nkv_mem_scatter(op, p, op->len);
	} else {
		return nkv_mem_st(NKV_SC_INVALID_OPCODE);
	}
	pthread_rwlock_unlock(&m->lock);
	return 0;
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
	v = m->n;
	pthread_rwlock_unlock(&m->lock);
	return v;
}

static void nkv_mem_destroy(struct nkv_be *be)
{
	struct nkv_be_mem *m = (struct nkv_be_mem *)be;
	size_t i;

	if (m->worker) {
		pthread_mutex_lock(&m->qlock);
		m->stop = 1;
		pthread_cond_signal(&m->qcond);
		pthread_mutex_unlock(&m->qlock);
		pthread_join(m->thr, NULL);
		pthread_mutex_destroy(&m->qlock);
		pthread_cond_destroy(&m->qcond);
	}
	for (i = 0; i < m->n; i++) {
		free(m->ent[i]->val);
		free(m->ent[i]);
	}
	pthread_rwlock_destroy(&m->lock);
	free(m->ent);
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

static int nkv_mem_setup(struct nkv_be_mem *m, const struct nkv_be_mem_opts *o)
{
	uint64_t cap = o->capacity ? o->capacity : 64ull << 20;
	uint32_t bs = o->block_size ? o->block_size : 4096;

	m->be.ops = &nkv_mem_ops;
	if (!o->nvm) {
		m->be.csi = NKV_CSI_KV;
		m->be.capacity = cap;
		m->be.max_keys = o->max_keys;
		m->be.max_value = o->max_value ? o->max_value : 1u << 20;
		return 0;
	}
	if (bs < 512 || (bs & (bs - 1)) || cap < bs)
		return -EINVAL;
	m->be.csi = NKV_CSI_NVM;
	m->be.block_size = bs;
	m->be.capacity = cap / bs;
	m->blocks = calloc(m->be.capacity, bs);
	return m->blocks ? 0 : -ENOMEM;
}

struct nkv_be *nkv_be_mem_create(const struct nkv_be_mem_opts *o)
{
	struct nkv_be_mem *m;
	int rc;

	if (!o || o->size < sizeof(*o)) {
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	pthread_rwlock_init(&m->lock, NULL);
	rc = nkv_mem_setup(m, o);
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
		errno = -rc;
		return NULL;
	}
	return &m->be;
}
