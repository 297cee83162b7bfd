/* SPDX-License-Identifier: MIT */
/* The mem backend on its own: options, order, capacity, worker, threads. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "target/backends/kvmap.h"
#include "target/backends/mem.h"
#include "target/backends/registry.h"
#include "target/core/core.h"

#include "be_op.h"

TestSuite(be_mem, .timeout = 20);

static char err[160];

/* The mem type's create: registry.c (and with it librados) is not linked
 * here. A missing or older conf is the registry's to refuse
 * (test_registry). */
static struct nkv_be *mem_create(const struct nkv_be_conf *c)
{
	return nkv_be_type_mem.create(c, err, sizeof(err));
}

/* Linked with -Wl,--wrap=malloc (src/target/part.mk): counts the mallocs
 * of this binary's own objects (be_mem.c, kvmap.c, valloc.c, this file). */
void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);
static unsigned long mallocs;	/* atomic */
void *__wrap_malloc(size_t n)
{
	__atomic_add_fetch(&mallocs, 1, __ATOMIC_RELAXED);
	return __real_malloc(n);
}

Test(be_mem, options)
{
	struct nkv_be_conf o = { sizeof(o), .nvm = 1, .block_size = 100 };
	struct nkv_be *be;

	errno = 0;
	cr_assert_null(mem_create(&o));
	cr_assert_eq(errno, EINVAL);
	cr_assert(strstr(err, "mem backend: block size is not a power of two"), "%s", err);
	o.block_size = 4096;
	o.capacity = 1 << 16;
	be = mem_create(&o);
	cr_assert_not_null(be, "%s", err);
	cr_assert_eq(be->csi, NKV_CSI_NVM);
	cr_assert_eq(be->capacity, 16);
	cr_assert_eq(be->block_size, 4096);
	be->ops->destroy(be);
	o = (struct nkv_be_conf){ sizeof(o) };
	be = mem_create(&o);
	cr_assert_eq(be->csi, NKV_CSI_KV);
	cr_assert_eq(be->max_value, 1u << 20);
	cr_assert_eq(be->capacity, 64ull << 20);
	cr_assert_str_eq(be->ops->name, "mem");
	be->ops->destroy(be);
	/* A default capacity holds two values of the largest size. */
	o.max_value = 64u << 20;
	be = mem_create(&o);
	cr_assert_not_null(be, "%s", err);
	cr_assert_eq(be->max_value, 64u << 20);
	cr_assert_eq(be->capacity, 2 * nkv_be_mem_key_cost(64u << 20));
	be->ops->destroy(be);
}

/* What a key costs, its value's header and its share of the index
 * included: at most 1.10x a power-of-two value from 4 KiB to 64 MiB; any
 * other value at most an eighth more plus the header's 32-byte block
 * (above 32 KiB less than a page more), and up to 232 bytes (sharing a
 * block with the 24-byte header) less than 40 bytes more. */
Test(be_mem, value_cost_bounds)
{
	const uint64_t idx = nkv_kvmap_key_bytes();
	static const uint64_t odd[] = { 4097, (1u << 20) - 100, (2u << 20) + 4097, (64u << 20) - 1 };
	uint64_t len;
	unsigned k;

	for (k = 12; k <= 26; k++)
		cr_assert_leq(nkv_be_mem_key_cost(1ull << k) * 100, (1ull << k) * 110, "2^%u: %llu",
			      k, (unsigned long long)nkv_be_mem_key_cost(1ull << k));
	for (k = 8; k <= 26; k++)
		cr_assert_eq(nkv_be_mem_key_cost(1ull << k), (1ull << k) + 32 + idx, "2^%u exact", k);
	for (len = 1; len <= (64u << 20); len += len < 70000 ? 1 : 65519) {
		uint64_t v = nkv_be_mem_key_cost(len) - idx;

		if (len <= 232)
			cr_assert_lt(v - len, 40, "len %llu", (unsigned long long)len);
		else
			cr_assert_leq(v - len, len / 8 + 32, "len %llu", (unsigned long long)len);
		if (len > (32u << 10))
			cr_assert_lt(v - len, 4096 + 32);
	}
	for (k = 0; k < sizeof(odd) / sizeof(odd[0]); k++)
		cr_assert_lt((nkv_be_mem_key_cost(odd[k]) - idx) * 100, odd[k] * 114, "%llu",
			     (unsigned long long)odd[k]);
}

/* Values up to 64 MiB in a namespace that holds two: stored and read
 * back byte for byte, a third refused (the namespace is full), then
 * overwritten with other sizes and deleted and stored again many times:
 * every Store finds room in what the last ones freed, and NUSE stays the
 * exact sum of what the keys cost. */
Test(be_mem, big_values_return_their_memory)
{
	const uint64_t max = 64u << 20;
	static const uint64_t sizes[] = { (48u << 20) + 1, (33u << 20) - 100, 64u << 20, 2u << 20 };
	struct nkv_be_conf o = { sizeof(o), .capacity = 2 * nkv_be_mem_key_cost(max),
				 .max_value = (uint32_t)max };
	struct nkv_be *be = mem_create(&o);
	uint8_t *v = malloc(max + 64), *r = malloc(max);	/* values start at v + 0..8 */
	uint32_t dw0;
	uint64_t i;

	cr_assert_not_null(be, "%s", err);
	cr_assert(v && r);
	for (i = 0; i < max / 8 + 8; i++)
		((uint64_t *)v)[i] = i * 0x9e3779b97f4a7c15ull;
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "a", 0, v, max, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "b", 0, v + 8, max, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "c", 0, v, max, NULL),
		     NKV_STATUS(0, NKV_SC_CAPACITY_EXCEEDED), "a third is one too many");
	cr_assert_eq(be->ops->bytes_used(be), 2 * nkv_be_mem_key_cost(max));
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "b", 0, r, max, &dw0), 0);
	cr_assert_eq(dw0, max);
	cr_assert_eq(memcmp(r, v + 8, max), 0);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t n = sizes[i];

		cr_assert_eq(be_op_run(be, NKV_KV_STORE, "a", 0, v + i, n, NULL), 0, "overwrite %llu",
			     (unsigned long long)n);
		cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "a", 0, r, max, &dw0), 0);
		cr_assert_eq(dw0, n);
		cr_assert_eq(memcmp(r, v + i, n), 0, "value of %llu B", (unsigned long long)n);
		cr_assert_eq(be->ops->bytes_used(be),
			     nkv_be_mem_key_cost(n) + nkv_be_mem_key_cost(max));
	}
	for (i = 0; i < 8; i++) {
		cr_assert_eq(be_op_run(be, NKV_KV_DELETE, "b", 0, NULL, 0, NULL), 0);
		cr_assert_eq(be_op_run(be, NKV_KV_STORE, "b", 0, v, max, NULL), 0, "round %llu",
			     (unsigned long long)i);
	}
	cr_assert_eq(be_op_run(be, NKV_KV_DELETE, "a", 0, NULL, 0, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_DELETE, "b", 0, NULL, 0, NULL), 0);
	cr_assert_eq(be->ops->bytes_used(be), 0);
	be->ops->destroy(be);
	free(v);
	free(r);
}

Test(be_mem, list_order_and_accounting_worker)
{
	struct nkv_be_conf o = { sizeof(o), .worker = 1 };
	struct nkv_be *be = mem_create(&o);
	static const char *keys[] = { "c", "ba", "b", "a", "bb", "b\x01" };
	static const char *sorted[] = { "a", "b", "b\x01", "ba", "bb", "c" };
	uint8_t buf[256];
	uint32_t dw0, off = 4, i, count;

	for (i = 0; i < 6; i++)
		cr_assert_eq(be_op_run(be, NKV_KV_STORE, keys[i], 0, "12345", 5, NULL), 0);
	cr_assert_eq(be->ops->keys_used(be), 6);
	cr_assert_eq(be->ops->bytes_used(be), 6 * nkv_be_mem_key_cost(5));
	cr_assert_eq(be_op_run(be, NKV_KV_LIST, "", 0, buf, sizeof(buf), &dw0), 0);
	memcpy(&count, buf, 4);
	cr_assert_eq(count, 6);
	cr_assert_eq(dw0, 6);
	for (i = 0; i < 6; i++) {
		uint16_t kl;

		memcpy(&kl, buf + off, 2);
		cr_assert_eq(kl, strlen(sorted[i]));
		cr_assert_eq(memcmp(buf + off + 2, sorted[i], kl), 0, "entry %u", i);
		off += nkv_list_entry_size(kl);
	}
	cr_assert_eq(be_op_run(be, NKV_KV_DELETE, "ba", 0, NULL, 0, NULL), 0);
	cr_assert_eq(be->ops->bytes_used(be), 5 * nkv_be_mem_key_cost(5));
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "ba", 0, buf, 8, NULL),
		     NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS));
	cr_assert_eq(be_op_run(be, 0x55, "a", 0, NULL, 0, NULL), NKV_STATUS(0, NKV_SC_INVALID_OPCODE));
	be->ops->destroy(be);
}

struct thr_arg {
	struct nkv_be *be;
	int id;
};

static void *storer(void *p)
{
	struct thr_arg *a = p;
	char key[16];
	int i;

	for (i = 0; i < 300; i++) {
		snprintf(key, sizeof(key), "t%d-%d", a->id, i);
		cr_assert_eq(be_op_run(a->be, NKV_KV_STORE, key, 0, key, 8, NULL), 0);
		if (i % 3 == 0)
			cr_assert_eq(be_op_run(a->be, NKV_KV_DELETE, key, 0, NULL, 0, NULL), 0);
	}
	return NULL;
}

Test(be_mem, concurrent_submitters)
{
	struct nkv_be_conf o = { sizeof(o), .worker = 1 };
	struct thr_arg a[4];
	pthread_t t[4];
	int i;

	a[0].be = mem_create(&o);
	for (i = 0; i < 4; i++) {
		a[i] = (struct thr_arg){ a[0].be, i };
		pthread_create(&t[i], NULL, storer, &a[i]);
	}
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(a[0].be->ops->keys_used(a[0].be), 4 * 200);
	cr_assert_eq(a[0].be->ops->bytes_used(a[0].be), 4 * 200 * nkv_be_mem_key_cost(8));
	a[0].be->ops->destroy(a[0].be);
}

/* A flood of 1-byte values into 1 MiB: capacity used to count only the
 * value bytes (a million keys, ~71 MB of heap); each key's real cost now
 * counts, so the heap the keys take stays near the capacity. */
Test(be_mem, tiny_value_flood_is_bounded_by_real_cost)
{
	struct nkv_be_conf o = { sizeof(o), .capacity = 1 << 20 };
	struct nkv_be *be = mem_create(&o);
	struct mallinfo2 before = mallinfo2(), after;
	uint32_t i = 0;
	char key[16];

	cr_assert_not_null(be);
	for (;; i++) {
		snprintf(key, sizeof(key), "k%u", i);
		if (be_op_run(be, NKV_KV_STORE, key, 0, "x", 1, NULL))
			break;
	}
	after = mallinfo2();
	cr_assert_lt(i, (1u << 20) / 64, "%u keys in 1 MiB", i);
	cr_assert_leq(be->ops->bytes_used(be), 1u << 20);
	/* mallinfo2 is glibc's; a sanitizer's allocator reports nothing. */
	if (after.uordblks > before.uordblks)
		cr_assert_leq(after.uordblks - before.uordblks, be->ops->bytes_used(be),
			      "heap %zu > charged %llu", after.uordblks - before.uordblks,
			      (unsigned long long)be->ops->bytes_used(be));
	be->ops->destroy(be);
}

/* A Store's value comes from the namespace's allocator, never malloc on
 * the submitting (poll) thread: heap growth there stalled a good client's
 * commands for seconds under memory pressure. */
Test(be_mem, store_does_not_malloc_on_the_poll_thread)
{
	struct nkv_be_conf o = { sizeof(o), .capacity = 64 << 20 };
	struct nkv_be *be = mem_create(&o);
	static uint8_t v[4096];
	uint16_t st[1000];
	unsigned long before, after;
	char key[16];
	int i;

	cr_assert_not_null(be);
	before = __atomic_load_n(&mallocs, __ATOMIC_RELAXED);
	for (i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "v%d", i);
		st[i] = be_op_run(be, NKV_KV_STORE, key, 0, v, (uint64_t)(i % 4096) + 1, NULL);
	}
	after = __atomic_load_n(&mallocs, __ATOMIC_RELAXED);
	for (i = 0; i < 1000; i++)
		cr_assert_eq(st[i], 0);
	cr_assert_eq(after - before, 0, "%lu mallocs for 1000 Stores", after - before);
	be->ops->destroy(be);
}

/* ---- TTL, touch, the sweep and the volatile-tier API, on a set clock ---- */

static uint64_t now_ms = 1000000;	/* atomic */

static uint64_t test_clock(void)
{
	return __atomic_load_n(&now_ms, __ATOMIC_RELAXED);
}

static void clock_at(uint64_t ms)
{
	__atomic_store_n(&now_ms, ms, __ATOMIC_RELAXED);
}

static struct nkv_be *ttl_create(uint64_t capacity)
{
	struct nkv_be_conf o = { sizeof(o), .capacity = capacity };
	struct nkv_be *be;

	nkv_be_clock_set(test_clock);
	clock_at(1000000);
	be = mem_create(&o);
	cr_assert_not_null(be, "%s", err);
	return be;
}

static const uint16_t absent = NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS);

Test(be_mem, ttl_key_is_absent_for_every_op_once_expired)
{
	struct nkv_be *be = ttl_create(0);
	char keys[128], v[8];
	uint32_t dw0;

	cr_assert_eq(be->store_opts, NKV_STORE_VENDOR_MASK);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "p", 0, "perm", 4, NULL), 0);
	cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, "t", NKV_STORE_TTL, 10, "ttl!", 4, NULL), 0);
	cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, "u", NKV_STORE_TTL | NKV_STORE_EPHEMERAL, 10,
			    "eph", 3, NULL), 0);
	clock_at(1000000 + 9999);	/* a millisecond before expiry: all there */
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "t", 0, NULL, 0, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "t", 0, v, sizeof(v), &dw0), 0);
	cr_assert_eq(dw0, 4);
	cr_assert_eq(memcmp(v, "ttl!", 4), 0);
	be_list_keys(be, "", keys, sizeof(keys));
	cr_assert_str_eq(keys, "p,t,u");
	clock_at(1000000 + 10000);	/* expired: absent everywhere */
	be_list_keys(be, "", keys, sizeof(keys));
	cr_assert_str_eq(keys, "p");
	be_list_keys(be, "t", keys, sizeof(keys));
	cr_assert_str_eq(keys, "");
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "t", 0, NULL, 0, NULL), absent);
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "u", 0, v, sizeof(v), &dw0), absent);
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "u", 0, NULL, 0, &dw0), absent, "size query");
	/* Both read ops removed what they found expired: the books are exact. */
	cr_assert_eq(be->ops->keys_used(be), 1);
	cr_assert_eq(be->ops->bytes_used(be), nkv_be_mem_key_cost(4));
	cr_assert_eq(be_op_run(be, NKV_KV_DELETE, "t", 0, NULL, 0, NULL), absent);
	be->ops->destroy(be);
}

Test(be_mem, delete_and_conditional_stores_see_expired_keys_as_absent)
{
	struct nkv_be *be = ttl_create(0);
	uint32_t dw0;
	char v[8];

	cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, "a", NKV_STORE_TTL, 1, "aaaa", 4, NULL), 0);
	cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, "b", NKV_STORE_TTL, 1, "bbbb", 4, NULL), 0);
	cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, "c", NKV_STORE_TTL, 1, "cccc", 4, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "a", NKV_STORE_MUST_NOT_EXIST, "x", 1, NULL),
		     NKV_STATUS(0, NKV_SC_KV_KEY_EXISTS), "live: still there");
	clock_at(1000000 + 1000);
	cr_assert_eq(be_op_run(be, NKV_KV_DELETE, "a", 0, NULL, 0, NULL), absent);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "b", NKV_STORE_MUST_EXIST, "x", 1, NULL), absent);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "c", NKV_STORE_MUST_NOT_EXIST, "new", 3, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "c", 0, v, sizeof(v), &dw0), 0);
	cr_assert_eq(dw0, 3);
	cr_assert_eq(memcmp(v, "new", 3), 0);
	/* The Delete and the refused Store removed theirs; the new c has no TTL. */
	cr_assert_eq(be->ops->keys_used(be), 1);
	cr_assert_eq(be->ops->bytes_used(be), nkv_be_mem_key_cost(3));
	clock_at(UINT64_MAX / 2);
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "c", 0, NULL, 0, NULL), 0);
	be->ops->destroy(be);
}

Test(be_mem, plain_store_clears_a_ttl_and_ttl_store_sets_one)
{
	struct nkv_be *be = ttl_create(0);

	cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, "k", NKV_STORE_TTL, 5, "v1", 2, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k", 0, "v2", 2, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "j", 0, "v1", 2, NULL), 0);
	cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, "j", NKV_STORE_TTL, 5, "v2", 2, NULL), 0);
	clock_at(1000000 + 5000);
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "k", 0, NULL, 0, NULL), 0, "no TTL any more");
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "j", 0, NULL, 0, NULL), absent, "a TTL now");
	be->ops->destroy(be);
}

Test(be_mem, touch)
{
	struct nkv_be *be = ttl_create(0);
	const uint32_t touch = NKV_STORE_TOUCH, ttl = NKV_STORE_TTL;
	uint64_t used;
	uint32_t dw0;
	char v[8];

	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "nope", touch, NULL, 0, NULL), absent);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "perm", 0, "P", 1, NULL), 0);
	cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, "t", ttl, 10, "T", 1, NULL), 0);
	used = be->ops->bytes_used(be);
	/* Without a TTL: a key without one stays as it is... */
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "perm", touch, NULL, 0, NULL), 0);
	/* ...a TTL'd key's own TTL restarts from now. */
	clock_at(1000000 + 6000);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "t", touch, NULL, 0, NULL), 0);
	clock_at(1000000 + 15999);
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "t", 0, NULL, 0, NULL), 0, "restarted at 6 s");
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "t", 0, v, sizeof(v), &dw0), 0);
	cr_assert_eq(dw0, 1);
	cr_assert_eq(v[0], 'T', "the value stays");
	cr_assert_eq(be->ops->bytes_used(be), used);
	/* With a TTL: it becomes the key's, from now, for a key without one too. */
	cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, "t", touch | ttl, 2, NULL, 0, NULL), 0);
	cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, "perm", touch | ttl | NKV_STORE_MUST_EXIST, 3,
			    NULL, 0, NULL), 0);
	clock_at(1000000 + 17998);	/* touched at 15999 for 2 s */
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "t", 0, NULL, 0, NULL), 0);
	clock_at(1000000 + 18000);
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "t", 0, NULL, 0, NULL), absent);
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "perm", 0, NULL, 0, NULL), 0);
	/* The TTL touch gave perm restarts on a plain touch too. */
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "perm", touch, NULL, 0, NULL), 0);
	clock_at(1000000 + 20999);
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "perm", 0, NULL, 0, NULL), 0);
	clock_at(1000000 + 21000);
	/* Expired: touch finds nothing, with or without a TTL. */
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "perm", touch, NULL, 0, NULL), absent);
	cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, "t", touch | ttl, 5, NULL, 0, NULL), absent);
	cr_assert_eq(be->ops->keys_used(be), 0);
	cr_assert_eq(be->ops->bytes_used(be), 0);
	be->ops->destroy(be);
}

/* More keys than one lock hold looks at (NKV_MEM_SWEEP_SCAN) and more
 * expired ones than one removes (NKV_MEM_SWEEP_BATCH). The sweep thread
 * may beat the call to some of them (it runs on this clock too): what
 * must hold is that the expired are gone, the rest stay, and the books
 * are exact. */
Test(be_mem, sweep_removes_expired_keys_and_their_cost)
{
	struct nkv_be *be = ttl_create(0);
	const uint64_t cost = nkv_be_mem_key_cost(8);
	char key[16];
	int i;

	cr_assert_eq(nkv_be_mem_sweep(be), 0, "no TTL'd keys: nothing to do");
	for (i = 0; i < 3000; i++) {
		snprintf(key, sizeof(key), "k%05d", i);
		cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, key, i % 3 ? NKV_STORE_TTL : 0,
				    i % 3 == 1 ? 1 : 100, "12345678", 8, NULL), 0);
	}
	cr_assert_eq(nkv_be_mem_sweep(be), 0, "nothing expired yet");
	cr_assert_eq(be->ops->keys_used(be), 3000);
	clock_at(1000000 + 1000);
	cr_assert_leq(nkv_be_mem_sweep(be), 1000);
	cr_assert_eq(be->ops->keys_used(be), 2000);
	cr_assert_eq(be->ops->bytes_used(be), 2000 * cost);
	cr_assert_eq(nkv_be_mem_sweep(be), 0, "once");
	clock_at(1000000 + 100000);
	cr_assert_leq(nkv_be_mem_sweep(be), 1000);
	cr_assert_eq(be->ops->keys_used(be), 1000);
	cr_assert_eq(be->ops->bytes_used(be), 1000 * cost);
	for (i = 0; i < 3000; i++) {
		snprintf(key, sizeof(key), "k%05d", i);
		cr_assert_eq(be_op_run(be, NKV_KV_EXIST, key, 0, NULL, 0, NULL), i % 3 ? absent : 0);
	}
	be->ops->destroy(be);
}

/* The thread does it unasked, within a period or two (real time). */
Test(be_mem, sweep_thread_removes_expired_keys)
{
	struct nkv_be *be = ttl_create(0);
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	int i;

	cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, "t", NKV_STORE_TTL, 1, "x", 1, NULL), 0);
	clock_at(1000000 + 1000);
	for (i = 0; i < 500 && be->ops->keys_used(be); i++)
		nanosleep(&ts, NULL);
	cr_assert_eq(be->ops->keys_used(be), 0, "not swept in 5 s");
	cr_assert_eq(be->ops->bytes_used(be), 0);
	be->ops->destroy(be);
}

/* A full namespace whose keys expired takes a new key at once. */
Test(be_mem, store_into_a_full_namespace_sweeps_first)
{
	struct nkv_be *be = ttl_create(2 * nkv_be_mem_key_cost(100));
	static uint8_t v[100];

	cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, "a", NKV_STORE_TTL, 1, v, 100, NULL), 0);
	cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, "b", NKV_STORE_TTL, 1, v, 100, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "c", 0, v, 100, NULL),
		     NKV_STATUS(0, NKV_SC_CAPACITY_EXCEEDED));
	clock_at(1000000 + 1000);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "c", 0, v, 100, NULL), 0);
	cr_assert_eq(be->ops->keys_used(be), 1);
	cr_assert_eq(be->ops->bytes_used(be), nkv_be_mem_key_cost(100));
	be->ops->destroy(be);
}

static int walk_collect(void *arg, const uint8_t *key, uint8_t klen)
{
	char *out = arg;
	size_t o = strlen(out);

	snprintf(out + o, 64 - o, "%s%.*s", o ? "," : "", klen, (const char *)key);
	return klen == 1 && key[0] == 'y' ? 7 : 0;
}

/* mem.h's volatile tier, as rados drives it: ops on the calling thread,
 * no done(). */
Test(be_mem, volatile_tier_api)
{
	struct nkv_be *be = ttl_create(1 << 20);
	struct be_op d;
	char walked[64] = "", v[8];

	cr_assert_eq(nkv_be_mem_room(be), 1 << 20);
	be_op_prep(&d, NKV_KV_STORE, "x", NKV_STORE_TTL, 2, "vx", 2);
	cr_assert_eq(nkv_be_mem_run(be, &d.cmd.op), 0);
	cr_assert_eq(d.done, 0, "run never calls done");
	be_op_prep(&d, NKV_KV_STORE, "y", NKV_STORE_EPHEMERAL, 0, "vy", 2);
	cr_assert_eq(nkv_be_mem_run(be, &d.cmd.op), 0);
	be_op_prep(&d, NKV_KV_STORE, "z", 0, 0, "vz", 2);
	cr_assert_eq(nkv_be_mem_run(be, &d.cmd.op), 0);
	cr_assert_eq(nkv_be_mem_room(be), (1 << 20) - 3 * nkv_be_mem_key_cost(2));
	be_op_prep(&d, NKV_KV_RETRIEVE, "y", 0, 0, v, sizeof(v));
	cr_assert_eq(nkv_be_mem_run(be, &d.cmd.op), 0);
	cr_assert_eq(d.cmd.op.dw0, 2);
	cr_assert_eq(memcmp(v, "vy", 2), 0);
	cr_assert(nkv_be_mem_has(be, (const uint8_t *)"x", 1));
	cr_assert_not(nkv_be_mem_has(be, (const uint8_t *)"w", 1));
	cr_assert_eq(nkv_be_mem_walk(be, walk_collect, walked), 7, "stopped at y");
	cr_assert_str_eq(walked, "x,y");
	clock_at(1000000 + 2000);
	cr_assert_not(nkv_be_mem_has(be, (const uint8_t *)"x", 1), "expired");
	walked[0] = 0;
	cr_assert_eq(nkv_be_mem_walk(be, walk_collect, walked), 7);
	cr_assert_str_eq(walked, "y");
	cr_assert_eq(nkv_be_mem_remove(be, (const uint8_t *)"y", 1), 1);
	cr_assert_eq(nkv_be_mem_remove(be, (const uint8_t *)"y", 1), 0);
	be_op_prep(&d, NKV_KV_STORE, "w", NKV_STORE_TTL, 1, "vw", 2);
	cr_assert_eq(nkv_be_mem_run(be, &d.cmd.op), 0);
	clock_at(1000000 + 3000);
	cr_assert_eq(nkv_be_mem_remove(be, (const uint8_t *)"w", 1), 1, "expired or not");
	cr_assert_eq(nkv_be_mem_sweep(be), 0, "has() removed x already");
	cr_assert_eq(nkv_be_mem_room(be), (1 << 20) - nkv_be_mem_key_cost(2));
	cr_assert_eq(be->ops->keys_used(be), 1);
	be->ops->destroy(be);
}

/* --evict lru: a Store that would exceed capacity deletes the least
 * recently stored or retrieved keys (never the one stored), counted;
 * without it, 81h. */
Test(be_mem, evict_lru_makes_room_for_a_store)
{
	struct nkv_be_param p = { "evict", "lru" };
	struct nkv_be_conf o = { sizeof(o), .capacity = 3 * nkv_be_mem_key_cost(4096),
				 .params = &p, .nparams = 1 };
	static uint8_t v[8192];
	struct nkv_be *be = mem_create(&o);
	uint8_t got[8];

	cr_assert_not_null(be, "%s", err);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k1", 0, v, 4096, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k2", 0, v, 4096, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k3", 0, v, 4096, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "k1", 0, got, sizeof(got), NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k4", 0, v, 4096, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "k2", 0, NULL, 0, NULL), NKV_STATUS(0, 0x87),
		     "least recently used");
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "k1", 0, NULL, 0, NULL), 0, "retrieved: kept");
	cr_assert_eq(be->ops->evictions(be), 1);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k5", 0, v, 8192, NULL), 0, "two make room");
	cr_assert_eq(be->ops->evictions(be), 3);
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "k5", 0, NULL, 0, NULL), 0);
	cr_assert_leq(be->ops->bytes_used(be), o.capacity);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k5", 0, v, sizeof(v), NULL), 0, "replace in place");
	be->ops->destroy(be);
	/* Without --evict: 81h, nothing evicted. */
	o.nparams = 0;
	be = mem_create(&o);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k1", 0, v, 4096, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k2", 0, v, 4096, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k3", 0, v, 4096, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k4", 0, v, 4096, NULL),
		     NKV_STATUS(0, NKV_SC_CAPACITY_EXCEEDED));
	cr_assert_eq(be->ops->evictions(be), 0);
	be->ops->destroy(be);
	p.value = "fifo";
	o.nparams = 1;
	cr_assert_null(mem_create(&o));
	cr_assert(strstr(err, "--evict fifo"), "%s", err);
}
