/* SPDX-License-Identifier: MIT */
/*
 * test_kvmap.c - the mem backend's ordered map: a randomized model check
 * against a plain sorted array, edge cases, cursors across changes, and a
 * million-key smoke run (200k under ASan) asserting order and contents.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/backends/kvmap.h"

#if defined(__SANITIZE_ADDRESS__)
#define NKV_TEST_BIG_KEYS 200000u
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NKV_TEST_BIG_KEYS 200000u
#endif
#endif
#ifndef NKV_TEST_BIG_KEYS
#define NKV_TEST_BIG_KEYS 1000000u
#endif

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The reference: entries sorted by an independent statement of the order. */
struct ref_ent {
	uint8_t len;
	uint8_t k[NKV_KEY_MAX];
	uintptr_t v;
};

struct ref {
	struct ref_ent *e;
	size_t n;
};

/* Byte by byte; a prefix sorts first. */
static int ref_cmp(const uint8_t *a, uint8_t al, const uint8_t *b, uint8_t bl)
{
	unsigned i;

	for (i = 0; i < al && i < bl; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return al < bl ? -1 : al > bl;
}

static size_t ref_lb(const struct ref *r, const uint8_t *k, uint8_t kl)
{
	size_t i;

	for (i = 0; i < r->n && ref_cmp(r->e[i].k, r->e[i].len, k, kl) < 0; i++)
		;
	return i;
}

static int ref_has(const struct ref *r, size_t i, const uint8_t *k, uint8_t kl)
{
	return i < r->n && !ref_cmp(r->e[i].k, r->e[i].len, k, kl);
}

static int sign(int x)
{
	return (x > 0) - (x < 0);
}

static void *V(uintptr_t v)
{
	return (void *)v;
}

Test(kvmap, order_matches_docs)
{
	cr_assert_lt(nkv_kvmap_cmp((const uint8_t *)"b", 1, (const uint8_t *)"b\0", 2), 0);
	cr_assert_lt(nkv_kvmap_cmp((const uint8_t *)"b\0", 2, (const uint8_t *)"ba", 2), 0);
	cr_assert_lt(nkv_kvmap_cmp((const uint8_t *)"ba", 2, (const uint8_t *)"c", 1), 0);
	cr_assert_gt(nkv_kvmap_cmp((const uint8_t *)"a", 1, NULL, 0), 0);
	cr_assert_eq(nkv_kvmap_cmp((const uint8_t *)"\xff", 1, (const uint8_t *)"\xff", 1), 0);
	cr_assert_gt(nkv_kvmap_cmp((const uint8_t *)"\x80", 1, (const uint8_t *)"\x7f\xff", 2), 0,
		     "bytes compare unsigned");
}

Test(kvmap, empty_and_bad_input)
{
	struct nkv_kvmap m;
	struct nkv_kvmap_cursor c;
	uint8_t k[17] = "abc";

	nkv_kvmap_init(&m);
	cr_assert_null(nkv_kvmap_find(&m, k, 3));
	cr_assert_null(nkv_kvmap_delete(&m, k, 3));
	cr_assert_eq(nkv_kvmap_seek(&m, &c, NULL, 0), 0);
	cr_assert_eq(nkv_kvmap_next(&c), 0);
	cr_assert_eq(nkv_kvmap_check(&m), 0);
	cr_assert_eq(nkv_kvmap_insert(&m, k, 0, V(1), NULL), -EINVAL);
	cr_assert_eq(nkv_kvmap_insert(&m, k, 3, NULL, NULL), -EINVAL);
	cr_assert_eq(nkv_kvmap_insert(&m, NULL, 3, V(1), NULL), -EINVAL);
	cr_assert_eq(nkv_kvmap_insert(&m, NULL, 17, V(1), NULL), -EINVAL);
	cr_assert_eq(nkv_kvmap_seek(&m, &c, NULL, 17), -EINVAL);
	cr_assert_eq(m.count, 0);
	cr_assert_eq(nkv_kvmap_insert(&m, k, 3, V(7), NULL), 0);
	cr_assert_null(nkv_kvmap_find(&m, k, 0));
	cr_assert_null(nkv_kvmap_find(&m, k, 17));
	cr_assert_null(nkv_kvmap_delete(&m, k, 17));
	cr_assert_eq(nkv_kvmap_seek(&m, &c, (const uint8_t *)"abd", 3), 0, "seek past the end");
	cr_assert_null(c.val);
	cr_assert_eq(nkv_kvmap_delete(&m, k, 3), V(7));
	cr_assert_eq(m.count, 0);
	cr_assert_null(m.root, "the last delete frees the root");
	nkv_kvmap_fini(&m, NULL);
}

Test(kvmap, replace_returns_old)
{
	struct nkv_kvmap m;
	void *old = NULL;

	nkv_kvmap_init(&m);
	cr_assert_eq(nkv_kvmap_insert(&m, (const uint8_t *)"k", 1, V(1), &old), 0);
	cr_assert_null(old);
	cr_assert_eq(nkv_kvmap_insert(&m, (const uint8_t *)"k", 1, V(2), &old), 1);
	cr_assert_eq(old, V(1));
	cr_assert_eq(nkv_kvmap_find(&m, (const uint8_t *)"k", 1), V(2));
	cr_assert_eq(m.count, 1);
	cr_assert_null(nkv_kvmap_slot(&m, (const uint8_t *)"j", 1));
	cr_assert_null(nkv_kvmap_slot(&m, (const uint8_t *)"k", 0));
	void **slot = nkv_kvmap_slot(&m, (const uint8_t *)"k", 1);

	cr_assert_not_null(slot);
	cr_assert_eq(*slot, V(2));
	*slot = V(3);
	cr_assert_eq(nkv_kvmap_find(&m, (const uint8_t *)"k", 1), V(3));
	nkv_kvmap_fini(&m, NULL);
}

/* Keys "k%05u" for i < n, value i + 1. */
static void fill_seq(struct nkv_kvmap *m, unsigned n)
{
	char k[16];
	unsigned i;

	for (i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "k%05u", i);
		cr_assert_eq(nkv_kvmap_insert(m, (const uint8_t *)k, 6, V(i + 1), NULL), 0);
	}
}

Test(kvmap, cursor_survives_changes)
{
	struct nkv_kvmap m;
	struct nkv_kvmap_cursor c;

	nkv_kvmap_init(&m);
	fill_seq(&m, 2000);	/* several levels */
	cr_assert_eq(nkv_kvmap_check(&m), 0);
	cr_assert_eq(nkv_kvmap_seek(&m, &c, (const uint8_t *)"k00100", 6), 1);
	cr_assert_eq(c.val, V(101));
	/* Delete the cursor's right neighbour: next skips to the one after. */
	cr_assert_eq(nkv_kvmap_delete(&m, (const uint8_t *)"k00101", 6), V(102));
	cr_assert_eq(nkv_kvmap_next(&c), 1);
	cr_assert_eq(c.val, V(103));
	cr_assert_eq(memcmp(c.key, "k00102", 6), 0);
	/* Delete the cursor's own key: next is its successor. */
	cr_assert_eq(nkv_kvmap_delete(&m, (const uint8_t *)"k00102", 6), V(103));
	cr_assert_eq(nkv_kvmap_next(&c), 1);
	cr_assert_eq(c.val, V(104));
	/* Insert just after the cursor: next sees it. */
	cr_assert_eq(nkv_kvmap_insert(&m, (const uint8_t *)"k00103\0", 7, V(9999), NULL), 0);
	cr_assert_eq(nkv_kvmap_next(&c), 1);
	cr_assert_eq(c.val, V(9999));
	cr_assert_eq(c.klen, 7);
	/* Delete the left neighbour: next is unaffected. */
	cr_assert_eq(nkv_kvmap_delete(&m, (const uint8_t *)"k00103", 6), V(104));
	cr_assert_eq(nkv_kvmap_next(&c), 1);
	cr_assert_eq(c.val, V(105));
	/* Delete everything after the cursor: next reaches the end. */
	for (unsigned i = 105; i < 2000; i++) {
		char k[16];

		snprintf(k, sizeof(k), "k%05u", i);
		cr_assert_not_null(nkv_kvmap_delete(&m, (const uint8_t *)k, 6));
	}
	cr_assert_eq(nkv_kvmap_check(&m), 0);
	cr_assert_eq(nkv_kvmap_next(&c), 0);
	cr_assert_eq(nkv_kvmap_next(&c), 0, "stays at the end");
	nkv_kvmap_fini(&m, NULL);
}

Test(kvmap, delete_all_shrinks)
{
	struct nkv_kvmap m;
	unsigned i, peak;

	nkv_kvmap_init(&m);
	fill_seq(&m, 50000);
	peak = m.height;
	cr_assert_geq(peak, 2);
	for (i = 0; i < 50000; i++) {
		char k[16];

		snprintf(k, sizeof(k), "k%05u", (i * 7919u) % 50000u);	/* a permutation */
		cr_assert_eq(nkv_kvmap_delete(&m, (const uint8_t *)k, 6), V((i * 7919u) % 50000u + 1));
		if (i % 4999 == 0)
			cr_assert_eq(nkv_kvmap_check(&m), 0, "after %u deletes", i);
	}
	cr_assert_eq(m.count, 0);
	cr_assert_eq(m.height, 0);
	cr_assert_null(m.root);
	nkv_kvmap_fini(&m, NULL);
}

/*
 * Keys from a pool built so prefixes abound: short keys over a 3-symbol
 * alphabet including 0x00 and 0xff, plus extensions of earlier keys, up
 * to maxlen bytes (over 16: long keys sharing their first 16 bytes, and
 * short keys that are their prefixes).
 */
#define POOL 3000u
static struct ref_ent pool[POOL];

static void make_pool_len(uint64_t *s, unsigned maxlen)
{
	static const uint8_t sym[] = { 0x00, 'a', 0xff };
	unsigned i, j;

	for (i = 0; i < POOL; i++) {
		struct ref_ent *p = &pool[i];
		uint64_t r = splitmix(s);

		memset(p, 0, sizeof(*p));
		if (i > 16 && (r & 3) == 0) {
			/* An extension or a prefix of an earlier key. */
			const struct ref_ent *q = &pool[(r >> 8) % i];

			*p = *q;
			if (q->len < maxlen && (r & 4))
				p->k[p->len++] = sym[(r >> 40) % 3];
			else if (q->len > 1)
				p->len = (uint8_t)(1 + (r >> 40) % (q->len - 1));
		} else {
			p->len = (uint8_t)(1 + (r >> 4) % maxlen);
			for (j = 0; j < p->len; j++)
				p->k[j] = sym[(splitmix(s) >> 20) % 3];
		}
	}
}

static void make_pool(uint64_t *s)
{
	make_pool_len(s, NKV_KEY_INLINE_MAX);
}

static void ref_insert(struct ref *r, const struct ref_ent *k, uintptr_t v)
{
	size_t i = ref_lb(r, k->k, k->len);

	if (ref_has(r, i, k->k, k->len)) {
		r->e[i].v = v;
		return;
	}
	memmove(&r->e[i + 1], &r->e[i], (r->n - i) * sizeof(r->e[0]));
	r->e[i] = *k;
	r->e[i].v = v;
	r->n++;
}

/* Walk from a seek for up to @steps keys, comparing with the reference. */
static void check_walk(const struct nkv_kvmap *m, const struct ref *r, const struct ref_ent *k,
		       unsigned steps)
{
	struct nkv_kvmap_cursor c;
	size_t i = k ? ref_lb(r, k->k, k->len) : 0;
	int more = nkv_kvmap_seek(m, &c, k ? k->k : NULL, k ? k->len : 0);
	unsigned s;

	for (s = 0; s < steps; s++, i++) {
		cr_assert_eq(more, i < r->n, "cursor at %zu of %zu: more %d", i, r->n, more);
		if (!more)
			return;
		cr_assert_eq(c.klen, r->e[i].len);
		cr_assert_eq(memcmp(c.key, r->e[i].k, c.klen), 0, "key %zu differs", i);
		cr_assert_eq(c.val, V(r->e[i].v));
		more = nkv_kvmap_next(&c);
	}
}

static void model_step(struct nkv_kvmap *m, struct ref *r, uint64_t *s, unsigned step)
{
	uint64_t x = splitmix(s);
	const struct ref_ent *k = &pool[(x >> 8) % POOL];
	size_t i = ref_lb(r, k->k, k->len);
	int has = ref_has(r, i, k->k, k->len);
	void *old = NULL, **slot;

	switch (x % 8) {
	case 0: case 1:			/* insert or replace */
		cr_assert_eq(nkv_kvmap_insert(m, k->k, k->len, V(step + 1), &old), has);
		cr_assert_eq(old, has ? V(r->e[i].v) : NULL);
		ref_insert(r, k, step + 1);
		break;
	case 2:				/* replace in place through the slot */
		slot = nkv_kvmap_slot(m, k->k, k->len);
		cr_assert_eq(slot != NULL, has);
		if (has) {
			cr_assert_eq(*slot, V(r->e[i].v));
			*slot = V(step + 1);
			r->e[i].v = step + 1;
		}
		break;
	case 3: case 4:			/* delete */
		cr_assert_eq(nkv_kvmap_delete(m, k->k, k->len), has ? V(r->e[i].v) : NULL);
		if (has) {
			memmove(&r->e[i], &r->e[i + 1], (r->n - i - 1) * sizeof(r->e[0]));
			r->n--;
		}
		break;
	case 5: case 6:			/* find */
		cr_assert_eq(nkv_kvmap_find(m, k->k, k->len), has ? V(r->e[i].v) : NULL);
		break;
	default:			/* seek + a short walk, or from the start */
		check_walk(m, r, (x >> 40) % 16 ? k : NULL, 1 + (unsigned)((x >> 50) % 40));
		break;
	}
	cr_assert_eq(m->count, r->n, "step %u", step);
}

Test(kvmap, cmp_matches_reference)
{
	uint64_t s = 42;
	unsigned i;

	make_pool(&s);
	for (i = 0; i < 100000; i++) {
		const struct ref_ent *a = &pool[splitmix(&s) % POOL], *b = &pool[splitmix(&s) % POOL];

		cr_assert_eq(sign(nkv_kvmap_cmp(a->k, a->len, b->k, b->len)),
			     ref_cmp(a->k, a->len, b->k, b->len));
	}
}

static void model_check(unsigned maxlen)
{
	struct nkv_kvmap m;
	struct ref r = { calloc(POOL, sizeof(struct ref_ent)), 0 };
	uint64_t s = 0x6b766d6170ull;	/* fixed seed: failures reproduce */
	unsigned step, ops = 60000, peak_h = 0;

	cr_assert_not_null(r.e);
	make_pool_len(&s, maxlen);
	nkv_kvmap_init(&m);
	for (step = 0; step < ops; step++) {
		model_step(&m, &r, &s, step);
		if (m.height > peak_h)
			peak_h = m.height;
		if (step % 997 == 0) {
			cr_assert_eq(nkv_kvmap_check(&m), 0, "invariants at step %u", step);
			check_walk(&m, &r, NULL, (unsigned)r.n + 1);
		}
	}
	cr_assert_geq(peak_h, 2, "the run must exercise inner splits and merges");
	cr_assert_eq(nkv_kvmap_check(&m), 0);
	check_walk(&m, &r, NULL, (unsigned)r.n + 1);
	nkv_kvmap_fini(&m, NULL);
	free(r.e);
}

Test(kvmap, model_check_random, .timeout = 60)
{
	model_check(NKV_KEY_INLINE_MAX);
}

/* Keys to 40 bytes: the order past byte 16, separators that share a
 * long key's bytes while it is deleted and reinserted (ASan sees a
 * count gone wrong as a use after free or a leak). */
Test(kvmap, model_check_long_keys, .timeout = 60)
{
	model_check(40);
}

Test(kvmap, cmp_matches_reference_long)
{
	uint64_t s = 7;
	unsigned i;

	make_pool_len(&s, NKV_KEY_MAX);
	for (i = 0; i < 100000; i++) {
		const struct ref_ent *a = &pool[splitmix(&s) % POOL], *b = &pool[splitmix(&s) % POOL];

		cr_assert_eq(sign(nkv_kvmap_cmp(a->k, a->len, b->k, b->len)),
			     ref_cmp(a->k, a->len, b->k, b->len));
	}
}

/* A 255-byte key of pattern p whose last byte is b. */
static void long_key(uint8_t k[NKV_KEY_MAX], uint8_t p, uint8_t b)
{
	memset(k, p, NKV_KEY_MAX);
	k[NKV_KEY_MAX - 1] = b;
}

Test(kvmap, long_keys_order_delete_list)
{
	struct nkv_kvmap m;
	struct nkv_kvmap_cursor c;
	uint8_t k[NKV_KEY_MAX], k2[NKV_KEY_MAX];
	unsigned i;
	int more;

	nkv_kvmap_init(&m);
	/* 16 bytes of 'x', then keys differing only at byte 254 or in
	 * length: 16 < 17 < 32 < 254 < 255 (with last bytes 1 < 2). */
	long_key(k, 'x', 1);
	cr_assert_eq(nkv_kvmap_insert(&m, k, 16, V(16), NULL), 0);
	cr_assert_eq(nkv_kvmap_insert(&m, k, 255, V(2551), NULL), 0);
	cr_assert_eq(nkv_kvmap_insert(&m, k, 32, V(32), NULL), 0);
	cr_assert_eq(nkv_kvmap_insert(&m, k, 17, V(17), NULL), 0);
	cr_assert_eq(nkv_kvmap_insert(&m, k, 254, V(254), NULL), 0);
	long_key(k2, 'x', 2);
	cr_assert_eq(nkv_kvmap_insert(&m, k2, 255, V(2552), NULL), 0);
	cr_assert_eq(m.count, 6);
	cr_assert_eq(nkv_kvmap_find(&m, k, 255), V(2551));
	cr_assert_eq(nkv_kvmap_find(&m, k2, 255), V(2552));
	cr_assert_eq(nkv_kvmap_find(&m, k2, 254), V(254), "the same 254 bytes: the same key");
	{
		static const uintptr_t want[] = { 16, 17, 32, 254, 2551, 2552 };

		for (i = 0, more = nkv_kvmap_seek(&m, &c, NULL, 0); more > 0;
		     more = nkv_kvmap_next(&c), i++) {
			cr_assert_lt(i, 6);
			cr_assert_eq(c.val, V(want[i]), "position %u", i);
		}
		cr_assert_eq(i, 6);
	}
	/* List from a long start key: itself first, then the larger. */
	cr_assert_eq(nkv_kvmap_seek(&m, &c, k, 254), 1);
	cr_assert_eq(c.klen, 254);
	cr_assert_eq(memcmp(c.key, k, 254), 0, "the cursor holds the whole long key");
	cr_assert_eq(nkv_kvmap_next(&c), 1);
	cr_assert_eq(c.klen, 255);
	cr_assert_eq(memcmp(c.key, k, 255), 0);
	/* A start key between two long keys (k with byte 254 = 0x01, then
	 * 0x00 appended... i.e. k[0..254] + nothing: 255 bytes ending 0x01
	 * sorts before k2's 0x02). */
	k[NKV_KEY_MAX - 1] = 0x01;
	cr_assert_eq(nkv_kvmap_seek(&m, &c, k, 255), 1);
	cr_assert_eq(c.val, V(2551));
	k[NKV_KEY_MAX - 1] = 0x02;
	cr_assert_eq(nkv_kvmap_seek(&m, &c, k, 255), 1);
	cr_assert_eq(c.val, V(2552));
	k[NKV_KEY_MAX - 1] = 0x03;
	cr_assert_eq(nkv_kvmap_seek(&m, &c, k, 255), 0, "past the last key");
	/* Replace keeps one copy; delete each; a cursor over a deleted key
	 * re-seeks by its copy. */
	long_key(k, 'x', 1);
	cr_assert_eq(nkv_kvmap_insert(&m, k, 255, V(9), NULL), 1);
	cr_assert_eq(nkv_kvmap_seek(&m, &c, k, 32), 1);
	cr_assert_eq(nkv_kvmap_delete(&m, k, 32), V(32));
	cr_assert_eq(nkv_kvmap_next(&c), 1);
	cr_assert_eq(c.val, V(254), "the next key after the deleted one");
	cr_assert_eq(nkv_kvmap_delete(&m, k, 255), V(9));
	cr_assert_eq(nkv_kvmap_delete(&m, k2, 255), V(2552));
	cr_assert_null(nkv_kvmap_delete(&m, k, 255));
	cr_assert_eq(m.count, 3);
	cr_assert_eq(nkv_kvmap_check(&m), 0);
	nkv_kvmap_fini(&m, NULL);
}

/* Many long keys, all alike in their first 16 bytes: the tree splits
 * and merges on bytes 16.. alone; fini frees every copy (ASan: leaks). */
Test(kvmap, many_long_keys_one_prefix)
{
	struct nkv_kvmap m;
	struct nkv_kvmap_cursor c;
	uint8_t k[NKV_KEY_MAX];
	unsigned i, n = 5000, seen = 0;
	int more;

	nkv_kvmap_init(&m);
	memset(k, 'p', sizeof(k));
	for (i = 0; i < n; i++) {
		k[40] = (uint8_t)(i >> 8);
		k[41] = (uint8_t)i;
		cr_assert_eq(nkv_kvmap_insert(&m, k, 42 + i % 23, V(i + 1), NULL), 0, "key %u", i);
	}
	cr_assert_eq(nkv_kvmap_check(&m), 0);
	for (more = nkv_kvmap_seek(&m, &c, NULL, 0); more > 0; more = nkv_kvmap_next(&c))
		seen++;
	cr_assert_eq(seen, m.count);
	for (i = 0; i < n; i += 3) {
		k[40] = (uint8_t)(i >> 8);
		k[41] = (uint8_t)i;
		cr_assert_eq(nkv_kvmap_delete(&m, k, 42 + i % 23), V(i + 1));
	}
	cr_assert_eq(nkv_kvmap_check(&m), 0);
	nkv_kvmap_fini(&m, NULL);
}

static void big_key(uint64_t i, uint8_t k[NKV_KEY_INLINE_MAX])
{
	uint64_t s = i, a = splitmix(&s), b = splitmix(&s);

	memcpy(k, &a, 8);
	memcpy(k + 8, &b, 8);
}

Test(kvmap, million_random_keys, .timeout = 60)
{
	const unsigned n = NKV_TEST_BIG_KEYS;
	struct nkv_kvmap m;
	struct nkv_kvmap_cursor c;
	uint8_t k[NKV_KEY_INLINE_MAX], prev[NKV_KEY_INLINE_MAX];
	unsigned i, seen = 0;
	int more;

	nkv_kvmap_init(&m);
	for (i = 0; i < n; i++) {
		big_key(i, k);
		cr_assert_eq(nkv_kvmap_insert(&m, k, NKV_KEY_INLINE_MAX, V(i + 1), NULL), 0, "key %u", i);
	}
	cr_assert_eq(m.count, n);
	for (i = 0; i < n; i++) {
		big_key(i, k);
		cr_assert_eq(nkv_kvmap_find(&m, k, NKV_KEY_INLINE_MAX), V(i + 1));
	}
	for (i = 0; i < n; i += 2) {
		big_key(i, k);
		cr_assert_eq(nkv_kvmap_delete(&m, k, NKV_KEY_INLINE_MAX), V(i + 1));
	}
	cr_assert_eq(m.count, n / 2);
	for (more = nkv_kvmap_seek(&m, &c, NULL, 0); more > 0; more = nkv_kvmap_next(&c)) {
		uintptr_t v = (uintptr_t)c.val;

		cr_assert_eq(c.klen, NKV_KEY_INLINE_MAX);
		if (seen)
			cr_assert_lt(memcmp(prev, c.key, NKV_KEY_INLINE_MAX), 0, "order at %u", seen);
		cr_assert(v >= 1 && v <= n && (v - 1) % 2 == 1, "only odd keys remain");
		big_key(v - 1, k);
		cr_assert_eq(memcmp(k, c.key, NKV_KEY_INLINE_MAX), 0, "key matches its value");
		memcpy(prev, c.key, NKV_KEY_INLINE_MAX);
		seen++;
	}
	cr_assert_eq(seen, n / 2);
	cr_assert_eq(nkv_kvmap_check(&m), 0);
	nkv_kvmap_fini(&m, NULL);
}
