/* SPDX-License-Identifier: MIT */
/*
 * kvmap.c - the ordered key map (see kvmap.h) as a B+ tree.
 *
 * Why a B+ tree: a key's first 16 bytes sit in the node (longer keys
 * point at the rest), so a node of 32 keys is a few cache lines that a binary search walks with ~5 compares; a million keys
 * sit under 4-5 levels (a red-black tree would chase ~20 pointers, each a
 * likely cache miss, and a skip list more). Values live only in the
 * leaves, which are chained left to right, so List is a seek plus a walk
 * along the chain with no parent pointers and no stack.
 *
 * Structure: inner node with n children holds n - 1 separators; every
 * key under child i is >= key[i - 1] and < key[i]. Every node but the
 * root holds between FAN/2 and FAN entries (children in inner nodes).
 *
 * Both insert and delete work top-down in one descent, without
 * recursion: insert splits any full node before stepping into it (so a
 * split never has to travel back up, and an allocation failure leaves a
 * valid tree); delete tops up any minimal node before stepping into it by
 * borrowing one entry from a sibling or merging with it (so removal never
 * underflows and delete never allocates). Only fini() and check() recurse,
 * as deep as the tree is tall.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kvmap.h"

#define NKV_KVMAP_FAN 32u
#define NKV_KVMAP_MIN (NKV_KVMAP_FAN / 2)

/*
 * A key as two integers, its zero-padded bytes 0-7 and 8-15 read
 * big-endian, and its length. Comparing hi, then lo, then len orders keys
 * exactly as nkv_kvmap_cmp does (bytes past the shorter key's end compare
 * against zeros, and only equal padded bytes leave the length to
 * decide), so a lookup's ~15 compares are integer compares: as bytes
 * they were memcmp calls, about half of the mem backend's time beside
 * its value copies.
 *
 * A key over 16 bytes also points at all its bytes (b): when both keys
 * are that long and their first 16 bytes are equal, bytes 16.. decide
 * before the length. A key of 16 bytes or less never looks there, so it
 * pays one branch. A stored long key's bytes are one allocation with a
 * reference count (struct nkv_kvmap_long), shared by the leaf entry and
 * any separators copied from it, freed when the last one goes; a probe's
 * b is the caller's bytes and never counted.
 */
struct nkv_kvmap_key {
	uint64_t hi, lo;
	const uint8_t *b;	/* len > 16: the whole key; else NULL */
	uint8_t len;
};

struct nkv_kvmap_long {
	uint64_t ref;		/* the leaf entry and separators holding it */
	uint8_t b[];
};

struct nkv_kvmap_leaf {
	unsigned n;
	struct nkv_kvmap_leaf *next;
	struct nkv_kvmap_key key[NKV_KVMAP_FAN];
	void *val[NKV_KVMAP_FAN];
};

struct nkv_kvmap_inner {
	unsigned n;			/* children */
	struct nkv_kvmap_key key[NKV_KVMAP_FAN - 1];
	void *child[NKV_KVMAP_FAN];	/* leaves at level 1, inner nodes above */
};

/* Bytes one long key's allocation takes, with malloc's header. */
static size_t nkv_kvmap_long_alloc(size_t klen)
{
	return (sizeof(struct nkv_kvmap_long) + klen + 16 + 15) & ~(size_t)15;
}

size_t nkv_kvmap_key_bytes(void)
{
	size_t leaf = sizeof(struct nkv_kvmap_leaf) + 16, inner = sizeof(struct nkv_kvmap_inner) + 16;
	/* A separator may keep a deleted long key's bytes alive: at most
	 * one per separator, fewer than one separator per MIN - 1 keys. */
	size_t stale = nkv_kvmap_long_alloc(NKV_KEY_MAX);

	return (leaf + NKV_KVMAP_MIN - 1) / NKV_KVMAP_MIN +
	       (inner + NKV_KVMAP_MIN * NKV_KVMAP_MIN - 1) / (NKV_KVMAP_MIN * NKV_KVMAP_MIN) +
	       (stale + NKV_KVMAP_MIN - 2) / (NKV_KVMAP_MIN - 1);
}

size_t nkv_kvmap_long_bytes(size_t klen)
{
	return klen > NKV_KEY_INLINE_MAX ? nkv_kvmap_long_alloc(klen) : 0;
}

int nkv_kvmap_cmp(const uint8_t *a, uint8_t al, const uint8_t *b, uint8_t bl)
{
	uint8_t n = al < bl ? al : bl;
	int r = n ? memcmp(a, b, n) : 0;

	return r ? r : (int)al - (int)bl;
}

static uint64_t nkv_kvmap_be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static void nkv_kvmap_put_be64(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	memcpy(p, &v, sizeof(v));
}

/* A probe for the key (its bytes stay the caller's). */
static struct nkv_kvmap_key nkv_kvmap_key_of(const uint8_t *k, uint8_t kl)
{
	uint8_t b[NKV_KEY_INLINE_MAX] = { 0 };
	struct nkv_kvmap_key p;

	if (kl)
		memcpy(b, k, kl < NKV_KEY_INLINE_MAX ? kl : NKV_KEY_INLINE_MAX);
	p.hi = nkv_kvmap_be64(b);
	p.lo = nkv_kvmap_be64(b + 8);
	p.b = kl > NKV_KEY_INLINE_MAX ? k : NULL;
	p.len = kl;
	return p;
}

static struct nkv_kvmap_long *nkv_kvmap_long_of(const struct nkv_kvmap_key *k)
{
	return (struct nkv_kvmap_long *)(k->b - offsetof(struct nkv_kvmap_long, b));
}

/* One more holder of a stored key's bytes (a separator copied from it). */
static void nkv_kvmap_ref(const struct nkv_kvmap_key *k)
{
	if (k->b)
		nkv_kvmap_long_of(k)->ref++;
}

/* One holder fewer; the last frees the bytes. */
static void nkv_kvmap_unref(const struct nkv_kvmap_key *k)
{
	if (k->b && !--nkv_kvmap_long_of(k)->ref)
		free(nkv_kvmap_long_of(k));
}

/* Make probe p a stored key: a long key's bytes copied into a counted
 * allocation. 0 or -ENOMEM. */
static int nkv_kvmap_own(struct nkv_kvmap_key *p)
{
	struct nkv_kvmap_long *x;

	if (!p->b)
		return 0;
	x = malloc(sizeof(*x) + p->len);
	if (!x)
		return -ENOMEM;
	x->ref = 1;
	memcpy(x->b, p->b, p->len);
	p->b = x->b;
	return 0;
}

/* The key's bytes (zero-padded to NKV_KEY_INLINE_MAX when shorter). */
static void nkv_kvmap_key_bytes_of(const struct nkv_kvmap_key *k, uint8_t b[NKV_KEY_MAX])
{
	if (k->b) {
		memcpy(b, k->b, k->len);
		return;
	}
	nkv_kvmap_put_be64(b, k->hi);
	nkv_kvmap_put_be64(b + 8, k->lo);
}

/* Key order as integers: <0, 0 or >0. */
static int nkv_kvmap_pcmp(const struct nkv_kvmap_key *a, const struct nkv_kvmap_key *p)
{
	if (a->hi != p->hi)
		return a->hi < p->hi ? -1 : 1;
	if (a->lo != p->lo)
		return a->lo < p->lo ? -1 : 1;
	if (a->b && p->b) {
		uint8_t n = (a->len < p->len ? a->len : p->len) - NKV_KEY_INLINE_MAX;
		int r = memcmp(a->b + NKV_KEY_INLINE_MAX, p->b + NKV_KEY_INLINE_MAX, n);

		if (r)
			return r;
	}
	return (int)a->len - (int)p->len;
}

/* Key order as bytes, for the invariant checks: another way to the same
 * order than the one lookups take. */
static int nkv_kvmap_kcmp(const struct nkv_kvmap_key *a, const struct nkv_kvmap_key *b)
{
	uint8_t x[NKV_KEY_MAX], y[NKV_KEY_MAX];

	nkv_kvmap_key_bytes_of(a, x);
	nkv_kvmap_key_bytes_of(b, y);
	return nkv_kvmap_cmp(x, a->len, y, b->len);
}

/* Entries (leaf) or children (inner) of a node at @level (0 = leaf). */
static unsigned nkv_kvmap_n(const void *node, unsigned level)
{
	return level ? ((const struct nkv_kvmap_inner *)node)->n
		     : ((const struct nkv_kvmap_leaf *)node)->n;
}

/* First slot of the leaf whose key is >= the probe (n when none). */
static unsigned nkv_kvmap_leaf_lb(const struct nkv_kvmap_leaf *l, const struct nkv_kvmap_key *p)
{
	unsigned lo = 0, hi = l->n;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (nkv_kvmap_pcmp(&l->key[mid], p) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The child whose range holds the probe: the count of separators <= it. */
static unsigned nkv_kvmap_child(const struct nkv_kvmap_inner *in, const struct nkv_kvmap_key *p)
{
	unsigned lo = 0, hi = in->n - 1;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (nkv_kvmap_pcmp(&in->key[mid], p) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct nkv_kvmap_leaf *nkv_kvmap_descend(const struct nkv_kvmap *m,
							const struct nkv_kvmap_key *p)
{
	const void *node = m->root;
	unsigned h;

	for (h = m->height; h; h--) {
		const struct nkv_kvmap_inner *in = node;

		node = in->child[nkv_kvmap_child(in, p)];
	}
	return node;
}

void nkv_kvmap_init(struct nkv_kvmap *m)
{
	memset(m, 0, sizeof(*m));
}

static void nkv_kvmap_free_node(void *node, unsigned level, void (*free_val)(void *))
{
	unsigned i;

	if (!level) {
		struct nkv_kvmap_leaf *l = node;

		for (i = 0; i < l->n; i++) {
			nkv_kvmap_unref(&l->key[i]);
			if (free_val)
				free_val(l->val[i]);
		}
	} else {
		struct nkv_kvmap_inner *in = node;

		for (i = 0; i < in->n; i++)
			nkv_kvmap_free_node(in->child[i], level - 1, free_val);
		for (i = 0; i + 1 < in->n; i++)
			nkv_kvmap_unref(&in->key[i]);
	}
	free(node);
}

void nkv_kvmap_fini(struct nkv_kvmap *m, void (*free_val)(void *val))
{
	if (m->root)
		nkv_kvmap_free_node(m->root, m->height, free_val);
	nkv_kvmap_init(m);
}

void **nkv_kvmap_slot(struct nkv_kvmap *m, const uint8_t *key, uint8_t klen)
{
	struct nkv_kvmap_key p;
	struct nkv_kvmap_leaf *l;
	unsigned i;

	if (!m->root || !key || !klen)
		return NULL;
	p = nkv_kvmap_key_of(key, klen);
	l = (struct nkv_kvmap_leaf *)nkv_kvmap_descend(m, &p);
	i = nkv_kvmap_leaf_lb(l, &p);
	return i < l->n && !nkv_kvmap_pcmp(&l->key[i], &p) ? &l->val[i] : NULL;
}

void *nkv_kvmap_find(const struct nkv_kvmap *m, const uint8_t *key, uint8_t klen)
{
	void **slot = nkv_kvmap_slot((struct nkv_kvmap *)m, key, klen);

	return slot ? *slot : NULL;
}

/* ---- insert ---- */

/* Split the full child c of in (which has room) into two halves. */
static int nkv_kvmap_split(struct nkv_kvmap_inner *in, unsigned c, unsigned level)
{
	const unsigned h = NKV_KVMAP_FAN / 2;
	struct nkv_kvmap_key sep;
	void *right;

	if (!level) {
		struct nkv_kvmap_leaf *l = in->child[c], *r = calloc(1, sizeof(*r));

		if (!r)
			return -ENOMEM;
		r->n = NKV_KVMAP_FAN - h;
		memcpy(r->key, &l->key[h], r->n * sizeof(r->key[0]));
		memcpy(r->val, &l->val[h], r->n * sizeof(r->val[0]));
		l->n = h;
		r->next = l->next;
		l->next = r;
		sep = r->key[0];
		nkv_kvmap_ref(&sep);	/* the separator shares the leaf key's bytes */
		right = r;
	} else {
		struct nkv_kvmap_inner *l = in->child[c], *r = calloc(1, sizeof(*r));

		if (!r)
			return -ENOMEM;
		/* Children h.. move right; separator h - 1 moves up. */
		r->n = NKV_KVMAP_FAN - h;
		memcpy(r->child, &l->child[h], r->n * sizeof(r->child[0]));
		memcpy(r->key, &l->key[h], (r->n - 1) * sizeof(r->key[0]));
		sep = l->key[h - 1];
		l->n = h;
		right = r;
	}
	memmove(&in->key[c + 1], &in->key[c], (in->n - 1 - c) * sizeof(in->key[0]));
	memmove(&in->child[c + 2], &in->child[c + 1], (in->n - 1 - c) * sizeof(in->child[0]));
	in->key[c] = sep;
	in->child[c + 1] = right;
	in->n++;
	return 0;
}

/* A full root gets a new root above it, then is split under it. */
static int nkv_kvmap_grow(struct nkv_kvmap *m)
{
	struct nkv_kvmap_inner *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->n = 1;
	r->child[0] = m->root;
	if (nkv_kvmap_split(r, 0, m->height)) {
		free(r);
		return -ENOMEM;
	}
	m->root = r;
	m->height++;
	return 0;
}

static int nkv_kvmap_leaf_put(struct nkv_kvmap *m, struct nkv_kvmap_leaf *l,
			      const struct nkv_kvmap_key *p, void *val, void **old)
{
	unsigned i = nkv_kvmap_leaf_lb(l, p);

	if (i < l->n && !nkv_kvmap_pcmp(&l->key[i], p)) {
		if (old)
			*old = l->val[i];
		l->val[i] = val;
		nkv_kvmap_unref(p);	/* the stored key's bytes stay */
		return 1;
	}
	memmove(&l->key[i + 1], &l->key[i], (l->n - i) * sizeof(l->key[0]));
	memmove(&l->val[i + 1], &l->val[i], (l->n - i) * sizeof(l->val[0]));
	l->key[i] = *p;
	l->val[i] = val;
	l->n++;
	m->count++;
	return 0;
}

int nkv_kvmap_insert(struct nkv_kvmap *m, const uint8_t *key, uint8_t klen, void *val,
		     void **old)
{
	struct nkv_kvmap_key p;
	void *node;
	unsigned h;

	if (!key || !klen || !val)
		return -EINVAL;
	p = nkv_kvmap_key_of(key, klen);
	if (nkv_kvmap_own(&p))
		return -ENOMEM;
	m->gen++;	/* even a split alone moves entries under cursors */
	if (!m->root)
		m->root = calloc(1, sizeof(struct nkv_kvmap_leaf));
	if (!m->root ||
	    (nkv_kvmap_n(m->root, m->height) == NKV_KVMAP_FAN && nkv_kvmap_grow(m))) {
		nkv_kvmap_unref(&p);
		return -ENOMEM;
	}
	node = m->root;
	for (h = m->height; h; h--) {
		struct nkv_kvmap_inner *in = node;
		unsigned c = nkv_kvmap_child(in, &p);

		if (nkv_kvmap_n(in->child[c], h - 1) == NKV_KVMAP_FAN) {
			if (nkv_kvmap_split(in, c, h - 1)) {
				nkv_kvmap_unref(&p);
				return -ENOMEM;
			}
			if (nkv_kvmap_pcmp(&in->key[c], &p) <= 0)
				c++;
		}
		node = in->child[c];
	}
	return nkv_kvmap_leaf_put(m, node, &p, val, old);
}

/* ---- delete ---- */

/* Child c takes the last entry of its left sibling. */
static void nkv_kvmap_borrow_left(struct nkv_kvmap_inner *p, unsigned c, unsigned level)
{
	if (!level) {
		struct nkv_kvmap_leaf *l = p->child[c - 1], *x = p->child[c];

		memmove(&x->key[1], &x->key[0], x->n * sizeof(x->key[0]));
		memmove(&x->val[1], &x->val[0], x->n * sizeof(x->val[0]));
		x->key[0] = l->key[l->n - 1];
		x->val[0] = l->val[l->n - 1];
		l->n--;
		x->n++;
		nkv_kvmap_unref(&p->key[c - 1]);
		p->key[c - 1] = x->key[0];
		nkv_kvmap_ref(&p->key[c - 1]);
	} else {
		struct nkv_kvmap_inner *l = p->child[c - 1], *x = p->child[c];

		memmove(&x->key[1], &x->key[0], (x->n - 1) * sizeof(x->key[0]));
		memmove(&x->child[1], &x->child[0], x->n * sizeof(x->child[0]));
		x->key[0] = p->key[c - 1];
		x->child[0] = l->child[l->n - 1];
		p->key[c - 1] = l->key[l->n - 2];
		l->n--;
		x->n++;
	}
}

/* Child c takes the first entry of its right sibling. */
static void nkv_kvmap_borrow_right(struct nkv_kvmap_inner *p, unsigned c, unsigned level)
{
	if (!level) {
		struct nkv_kvmap_leaf *x = p->child[c], *r = p->child[c + 1];

		x->key[x->n] = r->key[0];
		x->val[x->n] = r->val[0];
		x->n++;
		r->n--;
		memmove(&r->key[0], &r->key[1], r->n * sizeof(r->key[0]));
		memmove(&r->val[0], &r->val[1], r->n * sizeof(r->val[0]));
		nkv_kvmap_unref(&p->key[c]);
		p->key[c] = r->key[0];
		nkv_kvmap_ref(&p->key[c]);
	} else {
		struct nkv_kvmap_inner *x = p->child[c], *r = p->child[c + 1];

		x->key[x->n - 1] = p->key[c];
		x->child[x->n] = r->child[0];
		x->n++;
		p->key[c] = r->key[0];
		r->n--;
		memmove(&r->key[0], &r->key[1], (r->n - 1) * sizeof(r->key[0]));
		memmove(&r->child[0], &r->child[1], r->n * sizeof(r->child[0]));
	}
}

/* Children i and i + 1 (both minimal) become one; the right one is freed. */
static void nkv_kvmap_merge(struct nkv_kvmap_inner *p, unsigned i, unsigned level)
{
	if (!level) {
		struct nkv_kvmap_leaf *l = p->child[i], *r = p->child[i + 1];

		memcpy(&l->key[l->n], r->key, r->n * sizeof(r->key[0]));
		memcpy(&l->val[l->n], r->val, r->n * sizeof(r->val[0]));
		l->n += r->n;
		l->next = r->next;
		free(r);
		nkv_kvmap_unref(&p->key[i]);	/* the separator between them goes */
	} else {
		struct nkv_kvmap_inner *l = p->child[i], *r = p->child[i + 1];

		l->key[l->n - 1] = p->key[i];
		memcpy(&l->key[l->n], r->key, (r->n - 1) * sizeof(r->key[0]));
		memcpy(&l->child[l->n], r->child, r->n * sizeof(r->child[0]));
		l->n += r->n;
		free(r);
	}
	memmove(&p->key[i], &p->key[i + 1], (p->n - 2 - i) * sizeof(p->key[0]));
	memmove(&p->child[i + 1], &p->child[i + 2], (p->n - 2 - i) * sizeof(p->child[0]));
	p->n--;
}

/* Make minimal child c of p able to lose one entry; where its range is now. */
static unsigned nkv_kvmap_refill(struct nkv_kvmap_inner *p, unsigned c, unsigned level)
{
	if (c > 0 && nkv_kvmap_n(p->child[c - 1], level) > NKV_KVMAP_MIN) {
		nkv_kvmap_borrow_left(p, c, level);
		return c;
	}
	if (c + 1 < p->n && nkv_kvmap_n(p->child[c + 1], level) > NKV_KVMAP_MIN) {
		nkv_kvmap_borrow_right(p, c, level);
		return c;
	}
	if (c > 0) {
		nkv_kvmap_merge(p, c - 1, level);
		return c - 1;
	}
	nkv_kvmap_merge(p, c, level);
	return c;
}

void *nkv_kvmap_delete(struct nkv_kvmap *m, const uint8_t *key, uint8_t klen)
{
	struct nkv_kvmap_key p;
	struct nkv_kvmap_leaf *l;
	void *node, *val;
	unsigned h, i;

	if (!m->root || !key || !klen)
		return NULL;
	p = nkv_kvmap_key_of(key, klen);
	m->gen++;
	node = m->root;
	for (h = m->height; h; h--) {
		struct nkv_kvmap_inner *in = node;
		unsigned c = nkv_kvmap_child(in, &p);

		if (nkv_kvmap_n(in->child[c], h - 1) <= NKV_KVMAP_MIN)
			c = nkv_kvmap_refill(in, c, h - 1);
		node = in->child[c];
		if (in == m->root && in->n == 1) {
			/* The root's last two children merged: drop a level. */
			m->root = node;
			m->height--;
			free(in);
		}
	}
	l = node;
	i = nkv_kvmap_leaf_lb(l, &p);
	if (i >= l->n || nkv_kvmap_pcmp(&l->key[i], &p))
		return NULL;
	val = l->val[i];
	nkv_kvmap_unref(&l->key[i]);
	l->n--;
	memmove(&l->key[i], &l->key[i + 1], (l->n - i) * sizeof(l->key[0]));
	memmove(&l->val[i], &l->val[i + 1], (l->n - i) * sizeof(l->val[0]));
	if (!--m->count) {
		free(m->root);	/* only the root leaf can empty */
		m->root = NULL;
	}
	return val;
}

/* ---- cursor ---- */

/* Settle on (leaf, idx), stepping to the next leaf past the end. */
static int nkv_kvmap_load(struct nkv_kvmap_cursor *c)
{
	const struct nkv_kvmap_leaf *l = c->leaf;

	while (l && c->idx >= l->n) {
		l = l->next;
		c->idx = 0;
	}
	c->leaf = l;
	if (!l) {
		c->klen = 0;
		c->val = NULL;
		return 0;
	}
	c->klen = l->key[c->idx].len;
	nkv_kvmap_key_bytes_of(&l->key[c->idx], c->key);
	c->val = l->val[c->idx];
	return 1;
}

int nkv_kvmap_seek(const struct nkv_kvmap *m, struct nkv_kvmap_cursor *c, const uint8_t *key,
		   uint8_t klen)
{
	c->map = m;
	c->gen = m->gen;
	c->leaf = NULL;
	c->idx = 0;
	if (klen && !key) {
		nkv_kvmap_load(c);
		return -EINVAL;
	}
	if (m->root) {
		struct nkv_kvmap_key p = nkv_kvmap_key_of(key, klen);
		const struct nkv_kvmap_leaf *l = nkv_kvmap_descend(m, &p);

		c->leaf = l;
		c->idx = nkv_kvmap_leaf_lb(l, &p);
	}
	return nkv_kvmap_load(c);
}

int nkv_kvmap_next(struct nkv_kvmap_cursor *c)
{
	uint8_t k[NKV_KEY_MAX];
	uint8_t kl = c->klen;

	if (!c->leaf)
		return 0;
	if (c->gen != c->map->gen) {
		/* The map changed under us: find our place again by key. */
		memcpy(k, c->key, kl);
		if (nkv_kvmap_seek(c->map, c, k, kl) <= 0 || nkv_kvmap_cmp(c->key, c->klen, k, kl))
			return c->leaf != NULL;
	}
	c->idx++;
	return nkv_kvmap_load(c);
}

/* ---- invariants (tests) ---- */

struct nkv_kvmap_walk {
	const struct nkv_kvmap_leaf *prev;	/* last leaf visited */
	size_t count;
};

static int nkv_kvmap_in_range(const struct nkv_kvmap_key *k, const struct nkv_kvmap_key *lo,
			      const struct nkv_kvmap_key *hi)
{
	return (!lo || nkv_kvmap_kcmp(k, lo) >= 0) && (!hi || nkv_kvmap_kcmp(k, hi) < 0);
}

static int nkv_kvmap_check_leaf(const struct nkv_kvmap_leaf *l, const struct nkv_kvmap_key *lo,
				const struct nkv_kvmap_key *hi, int root, struct nkv_kvmap_walk *w)
{
	unsigned i;

	if (l->n > NKV_KVMAP_FAN || l->n < (root ? 1 : NKV_KVMAP_MIN))
		return -2;
	for (i = 0; i < l->n; i++) {
		if (!l->key[i].len || !l->val[i] ||
		    !l->key[i].b != (l->key[i].len <= NKV_KEY_INLINE_MAX))
			return -3;
		if (!nkv_kvmap_in_range(&l->key[i], lo, hi))
			return -4;
		if (i && nkv_kvmap_kcmp(&l->key[i - 1], &l->key[i]) >= 0)
			return -5;
	}
	if (w->prev && w->prev->next != l)
		return -6;
	w->prev = l;
	w->count += l->n;
	return 0;
}

static int nkv_kvmap_check_node(const void *node, unsigned level, const struct nkv_kvmap_key *lo,
				const struct nkv_kvmap_key *hi, int root, struct nkv_kvmap_walk *w)
{
	const struct nkv_kvmap_inner *in = node;
	unsigned i;
	int rc;

	if (!level)
		return nkv_kvmap_check_leaf(node, lo, hi, root, w);
	if (in->n > NKV_KVMAP_FAN || in->n < (root ? 2 : NKV_KVMAP_MIN))
		return -7;
	for (i = 0; i + 1 < in->n; i++) {
		if (!nkv_kvmap_in_range(&in->key[i], lo, hi) ||
		    (lo && !nkv_kvmap_kcmp(&in->key[i], lo)))
			return -8;
		if (i && nkv_kvmap_kcmp(&in->key[i - 1], &in->key[i]) >= 0)
			return -9;
	}
	for (i = 0; i < in->n; i++) {
		rc = nkv_kvmap_check_node(in->child[i], level - 1, i ? &in->key[i - 1] : lo,
					  i + 1 < in->n ? &in->key[i] : hi, 0, w);
		if (rc)
			return rc;
	}
	return 0;
}

int nkv_kvmap_check(const struct nkv_kvmap *m)
{
	struct nkv_kvmap_walk w = { NULL, 0 };
	int rc;

	if (!m->root)
		return m->count || m->height ? -1 : 0;
	rc = nkv_kvmap_check_node(m->root, m->height, NULL, NULL, 1, &w);
	if (!rc && (w.prev->next || w.count != m->count))
		rc = -10;
	return rc;
}
