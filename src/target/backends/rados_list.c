// SPDX-License-Identifier: MIT
/*
 * rados_list.c - the RADOS backend's List: RADOS' hash order, remembered
 * resume cursors, and the worker thread List runs on (librados' object
 * listing is synchronous and the core's poll thread must never block).
 *
 * A List keeps to the backend's advertised command time as the other
 * commands do: one that waited an op timeout behind other Lists is
 * answered 88h without running, and none starts a batch (one RADOS
 * round trip, bounded by the op timeout) later than an op timeout after
 * it was submitted. What it has by then is its page, when that holds a
 * key beyond the start key; else 88h.
 */
#include <errno.h>
#include <pthread.h>
#include <rados/librados.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "rados_int.h"

#define NKV_RADOS_LIST_BATCH 64u

/* Bob Jenkins' 1996 mixing step, as Ceph's rjenkins string hash uses it. */
#define NKV_RJ_MIX(a, b, c) do { \
	a -= b; a -= c; a ^= (c >> 13); \
	b -= c; b -= a; b ^= (a << 8); \
	c -= a; c -= b; c ^= (b >> 13); \
	a -= b; a -= c; a ^= (c >> 12); \
	b -= c; b -= a; b ^= (a << 16); \
	c -= a; c -= b; c ^= (b >> 5); \
	a -= b; a -= c; a ^= (c >> 3); \
	b -= c; b -= a; b ^= (a << 10); \
	c -= a; c -= b; c ^= (b >> 15); \
} while (0)

static uint32_t nkv_rj_word(const uint8_t *k)
{
	return k[0] | (uint32_t)k[1] << 8 | (uint32_t)k[2] << 16 | (uint32_t)k[3] << 24;
}

static uint32_t nkv_rjenkins(const uint8_t *k, size_t length)
{
	uint32_t a = 0x9e3779b9, b = a, c = 0;
	size_t len = length;

	while (len >= 12) {
		a += nkv_rj_word(k);
		b += nkv_rj_word(k + 4);
		c += nkv_rj_word(k + 8);
		NKV_RJ_MIX(a, b, c);
		k += 12;
		len -= 12;
	}
	c += (uint32_t)length;
	/* The tail: c's low byte is taken by the length. */
	switch (len) {
	case 11: c += (uint32_t)k[10] << 24; /* fall through */
	case 10: c += (uint32_t)k[9] << 16; /* fall through */
	case 9: c += (uint32_t)k[8] << 8; /* fall through */
	case 8: b += (uint32_t)k[7] << 24; /* fall through */
	case 7: b += (uint32_t)k[6] << 16; /* fall through */
	case 6: b += (uint32_t)k[5] << 8; /* fall through */
	case 5: b += k[4]; /* fall through */
	case 4: a += (uint32_t)k[3] << 24; /* fall through */
	case 3: a += (uint32_t)k[2] << 16; /* fall through */
	case 2: a += (uint32_t)k[1] << 8; /* fall through */
	case 1: a += k[0]; /* fall through */
	default: break;
	}
	NKV_RJ_MIX(a, b, c);
	return c;
}

uint32_t nkv_rados_obj_hash(const char *ns, const char *oid, size_t len)
{
	/* A namespaced object hashes as "ns" 0x1f "name" (pg_pool_t::hash_key). */
	uint8_t buf[256 + 2 * NKV_KEY_MAX + 1];
	size_t nl = ns ? strlen(ns) : 0;

	if (!nl)
		return nkv_rjenkins((const uint8_t *)oid, len);
	if (nl > 256 || len > 2 * NKV_KEY_MAX)
		return 0;
	memcpy(buf, ns, nl);
	buf[nl] = 0x1f;
	memcpy(buf + nl + 1, oid, len);
	return nkv_rjenkins(buf, nl + 1 + len);
}

/* RADOS lists in hobject order: bit-reversed hash first, then name. */
static uint32_t nkv_rados_rev32(uint32_t x)
{
	x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
	x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
	x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
	x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
	return (x >> 16) | (x << 16);
}

/* A key's place in RADOS' listing order: its object's bit-reversed hash,
 * then the object name; hex is order-preserving, so the key's bytes
 * (shorter first on a tie) order as the names do. */
struct nkv_rados_pos {
	uint32_t rhash;
	uint8_t klen;
	uint8_t key[NKV_KEY_MAX];
};

static void nkv_rados_pos_of(const struct nkv_be_rados *rb, const uint8_t *key,
			     uint8_t klen, struct nkv_rados_pos *p)
{
	char oid[2 * NKV_KEY_MAX + 1];
	size_t len = nkv_rados_key_to_oid(key, klen, oid);

	p->rhash = nkv_rados_rev32(nkv_rados_obj_hash(rb->ns, oid, len));
	p->klen = klen;
	memcpy(p->key, key, klen);
}

/* <0, 0, >0 as a sorts before, with, after b in RADOS' listing order. */
static int nkv_rados_pos_cmp(const struct nkv_rados_pos *a, const struct nkv_rados_pos *b)
{
	int c;

	if (a->rhash != b->rhash)
		return a->rhash < b->rhash ? -1 : 1;
	c = memcmp(a->key, b->key, a->klen < b->klen ? a->klen : b->klen);
	if (c)
		return c;
	return a->klen < b->klen ? -1 : a->klen > b->klen;
}

static int nkv_rados_pos_qcmp(const void *a, const void *b)
{
	return nkv_rados_pos_cmp(a, b);
}

/*
 * The volatile tier's live keys at or after the start, in RADOS order:
 * at most max of them (the most a page can hold), kept by sorting and
 * cutting whenever twice that many are collected.
 */
struct nkv_rados_vkeys {
	const struct nkv_be_rados *rb;
	const struct nkv_rados_pos *from;
	struct nkv_rados_pos *v;
	size_t n, max, next;
};

static void nkv_rados_vkeys_cut(struct nkv_rados_vkeys *vk)
{
	qsort(vk->v, vk->n, sizeof(*vk->v), nkv_rados_pos_qcmp);
	if (vk->n > vk->max)
		vk->n = vk->max;
}

static int nkv_rados_vkeys_add(void *arg, const uint8_t *key, uint8_t klen)
{
	struct nkv_rados_vkeys *vk = arg;
	struct nkv_rados_pos *p = &vk->v[vk->n];

	nkv_rados_pos_of(vk->rb, key, klen, p);
	if (vk->from && nkv_rados_pos_cmp(p, vk->from) < 0)
		return 0;
	if (++vk->n == 2 * vk->max)
		nkv_rados_vkeys_cut(vk);
	return 0;
}

static int nkv_rados_vkeys_get(struct nkv_be_rados *rb, const struct nkv_be_op *op,
			       const struct nkv_rados_pos *from, struct nkv_rados_vkeys *vk)
{
	uint64_t fit = (op->len - NKV_LIST_HDR_SIZE) / nkv_list_entry_size(1);
	uint64_t live = rb->tier->ops->keys_used(rb->tier);

	*vk = (struct nkv_rados_vkeys){ .rb = rb, .from = from };
	vk->max = (size_t)(fit < live ? fit : live);
	if (!vk->max)
		return 0;
	/* Room for 2 * max, plus the one being judged. */
	vk->v = malloc((2 * vk->max + 1) * sizeof(*vk->v));
	if (!vk->v)
		return -ENOMEM;
	nkv_be_mem_walk(rb->tier, nkv_rados_vkeys_add, vk);
	nkv_rados_vkeys_cut(vk);
	return 0;
}

/* A List being built into the op's buffer (nkv_be_list_add): the bytes
 * used, the last key, the tier's keys still to merge, and the cursor to
 * remember for the last key (where the batch that returned it began). */
struct nkv_rados_list_out {
	struct nkv_be_op *op;
	uint64_t deadline_ms;	/* no batch starts at or after it */
	uint64_t used;
	uint32_t count;
	uint32_t fresh;		/* entries other than the start key */
	uint8_t last_key[NKV_KEY_MAX];
	uint8_t last_klen;
	struct nkv_rados_vkeys vk;
	rados_object_list_cursor resume;
};

/* 0, 1 when the entry does not fit (the List ends), or -EFAULT: the
 * client's page vanished (the List ends too). */
static int nkv_rados_list_put(struct nkv_rados_list_out *o, const uint8_t *key, uint8_t klen)
{
	if (o->op->len - o->used < nkv_list_entry_size(klen))
		return 1;
	if (nkv_be_list_add(o->op, key, klen))
		return -EFAULT;	/* it fits (checked): a fault */
	o->used += nkv_list_entry_size(klen);
	o->count++;
	o->fresh += klen != o->op->klen || memcmp(key, o->op->key, klen);
	memcpy(o->last_key, key, klen);
	o->last_klen = klen;
	return 0;
}

/* The tier's keys before p (all of them when p is NULL); one equal to p
 * (a key caught in both tiers by racing Stores) is listed once, by RADOS. */
static int nkv_rados_list_tier(struct nkv_rados_list_out *o, const struct nkv_rados_pos *p)
{
	struct nkv_rados_vkeys *vk = &o->vk;
	const struct nkv_rados_pos *k;
	int c, rv;

	while (vk->next < vk->n) {
		k = &vk->v[vk->next];
		c = p ? nkv_rados_pos_cmp(k, p) : -1;
		if (c > 0)
			break;
		if (c < 0 && (rv = nkv_rados_list_put(o, k->key, k->klen)))
			return rv;
		vk->next++;
	}
	return 0;
}

static int nkv_rados_cursor_find(struct nkv_be_rados *rb, const struct nkv_be_op *op)
{
	int i;

	for (i = 0; i < NKV_RADOS_CURSORS; i++)
		if (rb->cursors[i].cur && rb->cursors[i].klen == op->klen &&
		    !memcmp(rb->cursors[i].key, op->key, op->klen))
			return i;
	return -1;
}

/* Remember "a List from key K may scan from cur" (takes cur), evicting
 * the LRU. */
static void nkv_rados_cursor_save(struct nkv_be_rados *rb, const uint8_t *key,
				  uint8_t klen, rados_object_list_cursor cur)
{
	int i, victim = 0;

	for (i = 0; i < NKV_RADOS_CURSORS; i++) {
		if (!rb->cursors[i].cur) {
			victim = i;
			break;
		}
		if (rb->cursors[i].used < rb->cursors[victim].used)
			victim = i;
	}
	if (rb->cursors[victim].cur)
		rados_object_list_cursor_free(rb->io, rb->cursors[victim].cur);
	rb->cursors[victim].cur = cur;
	rb->cursors[victim].klen = klen;
	memcpy(rb->cursors[victim].key, key, klen);
	rb->cursors[victim].used = ++rb->cursor_clock;
}

/* Objects to ask librados for: a whole batch while seeking the start,
 * then no more than entries of the shortest key could fit (the next
 * page rescans the batch its first key came from). */
static size_t nkv_rados_list_want(const struct nkv_rados_list_out *o)
{
	uint64_t n = (o->op->len - o->used) / nkv_list_entry_size(1);

	if (!o->count || !n)
		n = o->count ? 1 : NKV_RADOS_LIST_BATCH;
	return n > NKV_RADOS_LIST_BATCH ? NKV_RADOS_LIST_BATCH : (size_t)n;
}

/* The batch that began at cur returned a key: cur is where a List from
 * that key may scan from (it holds nothing after the key it skips). */
static void nkv_rados_list_mark(struct nkv_be_rados *rb, struct nkv_rados_list_out *o,
				rados_object_list_cursor *cur, uint32_t count_before)
{
	if (o->count == count_before)
		return;
	if (o->resume)
		rados_object_list_cursor_free(rb->io, o->resume);
	o->resume = *cur;
	*cur = NULL;
}

/*
 * One batch from *cur (moved past it): each of our keys at or after
 * from, the tier's keys before each merged in. Returns the objects
 * fetched (0: the end), -ENOSPC when the page is full, or a negative
 * errno.
 */
static int nkv_rados_list_batch(struct nkv_be_rados *rb, rados_object_list_cursor *cur,
				rados_object_list_cursor end, const struct nkv_rados_pos *from,
				struct nkv_rados_list_out *o)
{
	rados_object_list_item items[NKV_RADOS_LIST_BATCH];
	rados_object_list_cursor next;
	uint32_t before = o->count;
	struct nkv_rados_pos p;
	uint8_t key[NKV_KEY_MAX];
	int n, i, klen, rv = 0;

	/* librados writes the next position into an existing cursor. */
	next = rados_object_list_begin(rb->io);
	if (!next)
		return -ENOENT;
	n = rados_object_list(rb->io, *cur, end, nkv_rados_list_want(o), NULL, 0, items, &next);
	nkv_rados_health_note(&rb->conn->health, n);
	if (n < 0) {
		rados_object_list_cursor_free(rb->io, next);
		return n;
	}
	for (i = 0; i < n && !rv; i++) {
		klen = nkv_rados_oid_to_key(items[i].oid, items[i].oid_length, key);
		if (klen < 0)
			continue;	/* not ours: not hex of 1..255 bytes */
		nkv_rados_pos_of(rb, key, (uint8_t)klen, &p);
		if (from && nkv_rados_pos_cmp(&p, from) < 0)
			continue;
		rv = nkv_rados_list_tier(o, &p);
		if (!rv)
			rv = nkv_rados_list_put(o, key, (uint8_t)klen);
	}
	rados_object_list_free((size_t)n, items);
	nkv_rados_list_mark(rb, o, cur, before);
	if (*cur)
		rados_object_list_cursor_free(rb->io, *cur);
	*cur = next;
	if (rv)
		return rv > 0 ? -ENOSPC : rv;
	return n;
}

/* Fill o from cur (taken): RADOS' objects, then the tier's keys after
 * the last of them; remember where a List from the last key may scan. */
static int nkv_rados_list_fill(struct nkv_be_rados *rb, rados_object_list_cursor cur,
			       const struct nkv_rados_pos *from, struct nkv_rados_list_out *o)
{
	rados_object_list_cursor end = rados_object_list_end(rb->io);
	uint32_t before;
	int rv = 1;

	while (rv > 0 && !rados_object_list_is_end(rb->io, cur)) {
		if (nkv_rados_now_ms() >= o->deadline_ms) {
			/* Out of time: the page so far, if a client can page on from it. */
			rv = o->fresh ? -ENOSPC : -ETIMEDOUT;
			break;
		}
		rv = nkv_rados_list_batch(rb, &cur, end, from, o);
	}
	rados_object_list_cursor_free(rb->io, end);
	if (rv >= 0) {
		before = o->count;
		rv = nkv_rados_list_tier(o, NULL);
		nkv_rados_list_mark(rb, o, &cur, before);
		rv = rv > 0 ? -ENOSPC : rv;
	}
	if (cur)
		rados_object_list_cursor_free(rb->io, cur);
	if ((rv >= 0 || rv == -ENOSPC) && o->resume && o->count) {
		nkv_rados_cursor_save(rb, o->last_key, o->last_klen, o->resume);
		o->resume = NULL;
	}
	if (o->resume)
		rados_object_list_cursor_free(rb->io, o->resume);
	return rv == -ENOSPC ? 0 : rv < 0 ? rv : 0;
}

/*
 * Keys at or after the start key K in RADOS' order (bit-reversed
 * rjenkins hash, then name), K itself included when it exists. Every
 * object before K's position is skipped, so a K deleted or never listed
 * positions exactly; a K remembered from an earlier List only starts
 * the scan later (where the batch that returned K began), never changes
 * what it returns. The tier's live keys are merged in at their places.
 */
static int nkv_rados_list(struct nkv_be_rados *rb, struct nkv_rados_req *r)
{
	struct nkv_be_op *op = r->op;
	struct nkv_rados_list_out o = {
		.op = op, .used = NKV_LIST_HDR_SIZE,
		.deadline_ms = r->t_submit_ms + (uint64_t)rb->op_timeout_s * 1000u,
	};
	struct nkv_rados_pos from, *fp = NULL;
	rados_object_list_cursor cur;
	int slot, rv;

	if (op->klen) {
		nkv_rados_pos_of(rb, op->key, op->klen, &from);
		fp = &from;
	}
	if (nkv_rados_vkeys_get(rb, op, fp, &o.vk) < 0)
		return -ENOMEM;
	slot = op->klen ? nkv_rados_cursor_find(rb, op) : -1;
	if (slot >= 0) {
		/* Ours now; the List that ends this one saves a new one. */
		cur = rb->cursors[slot].cur;
		rb->cursors[slot].cur = NULL;
	} else {
		cur = rados_object_list_begin(rb->io);
	}
	rv = cur ? nkv_rados_list_fill(rb, cur, fp, &o) : -ENOENT;
	free(o.vk.v);
	return rv;
}

void *nkv_rados_lister(void *arg)
{
	struct nkv_be_rados *rb = arg;
	struct nkv_rados_req *r;
	int rv;

	pthread_mutex_lock(&rb->lock);
	for (;;) {
		while (!rb->list_head && !rb->stopping)
			pthread_cond_wait(&rb->list_cond, &rb->lock);
		r = rb->list_head;
		if (!r)
			break;
		rb->list_head = r->next;
		if (!rb->list_head)
			rb->list_tail = NULL;
		pthread_mutex_unlock(&rb->lock);
		/* One that waited an op timeout for its turn has no time left. */
		if (nkv_rados_now_ms() - r->t_submit_ms >= (uint64_t)rb->op_timeout_s * 1000u)
			rv = -ETIMEDOUT;
		else
			rv = nkv_rados_list(rb, r);
		/* A listing error is never "key does not exist". */
		r->op->status = nkv_rados_status(rv == -ENOENT ? -EIO : rv);
		nkv_rados_finish(r, false);
		pthread_mutex_lock(&rb->lock);
	}
	pthread_mutex_unlock(&rb->lock);
	return NULL;
}
