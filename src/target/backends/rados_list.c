// SPDX-License-Identifier: MIT
/*
 * rados_list.c - the RADOS backend's List: RADOS' hash order, remembered
 * resume cursors, and the worker thread List runs on (librados' object
 * listing is synchronous and the core's poll thread must never block).
 */
#include <errno.h>
#include <pthread.h>
#include <rados/librados.h>
#include <stdbool.h>
#include <string.h>

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

struct nkv_rados_pos {
	uint32_t rhash;
	char oid[2 * NKV_KEY_MAX + 1];
	size_t len;
};

static void nkv_rados_pos_of(const struct nkv_be_rados *rb, const char *oid,
			     size_t len, struct nkv_rados_pos *p)
{
	p->rhash = nkv_rados_rev32(nkv_rados_obj_hash(rb->ns, oid, len));
	memcpy(p->oid, oid, len);
	p->oid[len] = '\0';
	p->len = len;
}

/* <0, 0, >0 as a sorts before, with, after b in RADOS' listing order. */
static int nkv_rados_pos_cmp(const struct nkv_rados_pos *a, const struct nkv_rados_pos *b)
{
	size_t n = a->len < b->len ? a->len : b->len;
	int c;

	if (a->rhash != b->rhash)
		return a->rhash < b->rhash ? -1 : 1;
	c = memcmp(a->oid, b->oid, n);
	if (c)
		return c;
	return a->len < b->len ? -1 : a->len > b->len;
}

/* A List being built into the op's buffer (nkv_be_list_add): how much of
 * it is used, to ask librados for no more than fits, and the last key. */
struct nkv_rados_list_out {
	struct nkv_be_op *op;
	uint64_t used;
	uint32_t count;
	uint8_t last_key[NKV_KEY_MAX];
	uint8_t last_klen;
};

/* 0, or -EFAULT: the client's page vanished (the List ends). */
static int nkv_rados_list_put(struct nkv_rados_list_out *o, const uint8_t *key, int klen)
{
	if (nkv_be_list_add(o->op, key, (uint32_t)klen))
		return -EFAULT;	/* it fits (checked): a fault */
	o->used += nkv_list_entry_size((uint32_t)klen);
	o->count++;
	memcpy(o->last_key, key, (size_t)klen);
	o->last_klen = (uint8_t)klen;
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

/* Remember "after key K, continue at cur" (takes cur), evicting the LRU. */
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

/*
 * Fetch up to want items from *cur and add every valid key after `after`
 * (NULL: all). Callers ask for no more entries than surely fit, so the
 * cursor stays exact and never points into the middle of a batch; the
 * one exception is a probe of one item when little room is left, which
 * leaves *cur where it was if that item does not fit. Returns the items
 * consumed (0: end or full), or a negative errno.
 */
static int nkv_rados_list_batch(struct nkv_be_rados *rb, rados_object_list_cursor *cur,
				rados_object_list_cursor end, size_t want,
				const struct nkv_rados_pos *after, struct nkv_rados_list_out *o)
{
	rados_object_list_item items[NKV_RADOS_LIST_BATCH];
	rados_object_list_cursor next = NULL;
	struct nkv_rados_pos p;
	uint8_t key[NKV_KEY_MAX];
	int n, i, klen, rv = 0;
	bool full = false;

	/* librados writes the next position into an existing cursor. */
	next = rados_object_list_begin(rb->io);
	if (!next)
		return -ENOENT;
	n = rados_object_list(rb->io, *cur, end, want, NULL, 0, items, &next);
	if (n < 0) {
		rados_object_list_cursor_free(rb->io, next);
		return n;
	}
	for (i = 0; i < n; i++) {
		klen = nkv_rados_oid_to_key(items[i].oid, items[i].oid_length, key);
		if (klen < 0)
			continue;	/* not ours: not hex of 1..255 bytes */
		if (after) {
			nkv_rados_pos_of(rb, items[i].oid, items[i].oid_length, &p);
			if (nkv_rados_pos_cmp(&p, after) <= 0)
				continue;
		}
		if (o->op->len - o->used < nkv_list_entry_size((uint32_t)klen)) {
			full = true;	/* only a probe of one gets here */
			break;
		}
		rv = nkv_rados_list_put(o, key, klen);
		if (rv)
			break;
	}
	rados_object_list_free((size_t)n, items);
	if (rv) {
		rados_object_list_cursor_free(rb->io, next);
		return rv;
	}
	if (full)
		n = 0;
	if (n > 0) {
		rados_object_list_cursor_free(rb->io, *cur);
		*cur = next;
	} else {
		rados_object_list_cursor_free(rb->io, next);
	}
	return n;
}

/* Entries that surely fit: sized for the longest key; else a probe of one. */
static size_t nkv_rados_list_room(const struct nkv_rados_list_out *o)
{
	uint64_t n = (o->op->len - o->used) / nkv_list_entry_size(NKV_KEY_MAX);

	if (!n && o->op->len - o->used >= nkv_list_entry_size(1))
		n = 1;
	return n > NKV_RADOS_LIST_BATCH ? NKV_RADOS_LIST_BATCH : (size_t)n;
}

/* Fill o from cur (taken), then remember where the next List resumes. */
static int nkv_rados_list_fill(struct nkv_be_rados *rb, rados_object_list_cursor cur,
			       const struct nkv_rados_pos *after, struct nkv_rados_list_out *o)
{
	rados_object_list_cursor end = rados_object_list_end(rb->io);
	size_t want;
	int rv = 0;

	while (!rados_object_list_is_end(rb->io, cur)) {
		want = nkv_rados_list_room(o);
		if (!want)
			break;
		rv = nkv_rados_list_batch(rb, &cur, end, want, after, o);
		if (rv <= 0)
			break;
	}
	rados_object_list_cursor_free(rb->io, end);
	if (rv >= 0 && o->count)
		nkv_rados_cursor_save(rb, o->last_key, o->last_klen, cur);
	else
		rados_object_list_cursor_free(rb->io, cur);
	return rv < 0 ? rv : 0;
}

/*
 * Start key K -> cursor: K remembered from an earlier List resumes at
 * the saved cursor (no rescan); otherwise the namespace is scanned from
 * its start and every object at or before K's position in RADOS' order
 * (bit-reversed rjenkins hash, then name) is skipped, so a K that was
 * deleted or never listed still gives exactly the keys after it.
 */
static int nkv_rados_list(struct nkv_be_rados *rb, struct nkv_be_op *op)
{
	struct nkv_rados_list_out o = { .op = op, .used = NKV_LIST_HDR_SIZE };
	struct nkv_rados_pos after, *ap = NULL;
	rados_object_list_cursor cur;
	char oid[2 * NKV_KEY_MAX + 1];
	int slot;

	slot = op->klen ? nkv_rados_cursor_find(rb, op) : -1;
	if (slot >= 0) {
		/* Ours now; the List that ends this one saves a new one. */
		cur = rb->cursors[slot].cur;
		rb->cursors[slot].cur = NULL;
	} else {
		cur = rados_object_list_begin(rb->io);
		if (op->klen) {
			nkv_rados_pos_of(rb, oid, nkv_rados_key_to_oid(op->key, op->klen, oid), &after);
			ap = &after;
		}
	}
	return cur ? nkv_rados_list_fill(rb, cur, ap, &o) : -ENOENT;
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
		rv = nkv_rados_list(rb, r->op);
		/* A listing error is never "key does not exist". */
		r->op->status = nkv_rados_status(rv == -ENOENT ? -EIO : rv);
		nkv_rados_finish(r, false);
		pthread_mutex_lock(&rb->lock);
	}
	pthread_mutex_unlock(&rb->lock);
	return NULL;
}
