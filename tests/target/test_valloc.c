/* SPDX-License-Identifier: MIT */
/* The mem backend's value allocator: size classes, reuse, the end of the
 * reservation, and pages populated ahead of the allocation front. */
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include <criterion/criterion.h>

#include "target/backends/valloc.h"

TestSuite(valloc, .timeout = 20);

Test(valloc, classes_round_up_at_most_a_quarter)
{
	uint64_t len, prev = 0;

	for (len = 1; len <= (4u << 20); len += len < 4096 ? 1 : 509) {
		uint64_t b = nkv_valloc_block(len);

		cr_assert_geq(b, len);
		cr_assert_geq(b, prev, "monotone");
		cr_assert(len <= 16 || b - len < len / 4 + 16, "len %llu block %llu",
			  (unsigned long long)len, (unsigned long long)b);
		cr_assert_eq(b % 16, 0);
		prev = b;
	}
}

Test(valloc, reuse_and_end_of_reservation)
{
	struct nkv_valloc *a = nkv_valloc_create(1 << 20, 4096);
	struct nkv_valloc_stats st;
	void *p, *q;
	int n = 0;

	cr_assert_not_null(a);
	p = nkv_valloc_get(a, 100);
	cr_assert_not_null(p);
	memset(p, 0xab, 100);
	nkv_valloc_put(a, p, 100);
	q = nkv_valloc_get(a, 110);	/* the same class (112) */
	cr_assert_eq(q, p, "a freed block is reused");
	nkv_valloc_stats(a, &st);
	cr_assert_geq(st.reserved, 2u << 20);
	while (nkv_valloc_get(a, 4096))
		n++;
	nkv_valloc_stats(a, &st);
	cr_assert_gt(n, 400);
	cr_assert_leq(st.front, st.reserved);
	cr_assert_lt(st.reserved - st.front, 4096, "NULL only once the reservation is used up");
	cr_assert_null(nkv_valloc_get(a, 4096));
	nkv_valloc_destroy(a);
}

/* The helper faults in the pages past the front (where runs come from)
 * and below the top (where small blocks' slabs come from) before a Store
 * needs them (MADV_POPULATE_WRITE, Linux 5.14+). */
Test(valloc, pages_ahead_of_the_front_are_resident)
{
	struct nkv_valloc *a = nkv_valloc_create(64 << 20, 1 << 20);
	struct nkv_valloc_stats st;
	unsigned char vec[512];
	uint8_t *p, *q;
	int i, tries;

	cr_assert_not_null(a);
	p = nkv_valloc_get(a, 64 << 10);	/* a run, at the front */
	q = nkv_valloc_get(a, 4096);		/* a slab's first block, at the top */
	cr_assert_not_null(p);
	cr_assert_not_null(q);
	for (tries = 0; tries < 200; tries++) {
		nkv_valloc_stats(a, &st);
		if (st.faulted && st.top_faulted >= (2u << 20))
			break;
		usleep(5000);
	}
	if (!st.faulted) {
		nkv_valloc_destroy(a);
		cr_skip_test("MADV_POPULATE_WRITE unsupported on this kernel: no prefault");
	}
	cr_assert_geq(st.faulted, 2u << 20);
	cr_assert_eq(mincore(p, sizeof(vec) * 4096, vec), 0);
	for (i = 0; i < (int)sizeof(vec); i++)
		cr_assert(vec[i] & 1, "page %d past the front is resident", i);
	/* The top is the reservation's end; q's slab is the last 16 KiB. */
	cr_assert_geq(st.top_faulted, 2u << 20);
	cr_assert_eq(mincore(q + (16 << 10) - sizeof(vec) * 4096, sizeof(vec) * 4096, vec), 0);
	for (i = 0; i < (int)sizeof(vec); i++)
		cr_assert(vec[i] & 1, "page %d below the top is resident", i);
	nkv_valloc_destroy(a);
}

/* Every class boundary: a class's size is its own block, one byte more
 * is the next class; a power of two is a class of its own. */
Test(valloc, class_boundaries)
{
	static const uint64_t at[][2] = {
		{ 1, 16 }, { 16, 16 }, { 17, 32 }, { 240, 240 }, { 256, 256 }, { 257, 288 },
		{ 288, 288 }, { 289, 320 }, { 512, 512 }, { 513, 576 }, { 4095, 4096 },
		{ 4096, 4096 }, { 4097, 4608 }, { 8192, 8192 }, { 16385, 18432 },
		{ 30720, 30720 }, { 30721, 32768 }, { 32768, 32768 }, { 32769, 36864 },
		{ 65536, 65536 }, { 65537, 69632 }, { (1 << 20) - 100, 1 << 20 },
		{ (2 << 20) + 4097, (2 << 20) + 8192 }, { 64 << 20, 64 << 20 },
	};
	uint64_t len, classes = 0;
	unsigned i;

	for (i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		cr_assert_eq(nkv_valloc_block(at[i][0]), at[i][1], "block(%llu) = %llu",
			     (unsigned long long)at[i][0],
			     (unsigned long long)nkv_valloc_block(at[i][0]));
	for (len = 1; len <= NKV_VALLOC_SMALL_MAX; len++) {
		uint64_t b = nkv_valloc_block(len);

		if (b != len)
			continue;
		classes++;
		cr_assert_gt(nkv_valloc_block(len + 1), b, "a class ends at %llu",
			     (unsigned long long)len);
	}
	cr_assert_eq(classes, 16 + 7 * 8, "16-byte steps to 256, 8 per power of two to 32 KiB");
	for (i = 4; i <= 26; i++)
		cr_assert_eq(nkv_valloc_block(1ull << i), 1ull << i, "2^%u", i);
}

/* The stated bounds for every other size: less than an eighth more above
 * 256 bytes, less than a page more above 32 KiB. */
Test(valloc, rounding_bounds)
{
	uint64_t len;

	for (len = 1; len <= (64u << 20); len += len < 70000 ? 1 : 4093) {
		uint64_t b = nkv_valloc_block(len);

		if (len <= 256)
			cr_assert_lt(b - len, 16, "len %llu", (unsigned long long)len);
		else
			cr_assert_lt((b - len) * 8, len, "len %llu block %llu",
				     (unsigned long long)len, (unsigned long long)b);
		if (len > NKV_VALLOC_SMALL_MAX) {
			cr_assert_lt(b - len, 4096);
			cr_assert_eq(b % 4096, 0);
		}
	}
}

/* What a value of every power-of-two size from 4 KiB to 64 MiB and its
 * 16-byte header (as the mem backend allocates them) take, from the
 * allocator's own accounting: blocks handed out (live) and pages carved
 * (front) at most 1.10x the value bytes. */
Test(valloc, power_of_two_values_and_headers_waste_at_most_10_percent)
{
	unsigned k;

	for (k = 12; k <= 26; k++) {
		uint64_t size = 1ull << k, n = size < (256u << 10) ? (256u << 10) / size : 1, i;
		struct nkv_valloc *a = nkv_valloc_create(2 * n * size, size);
		struct nkv_valloc_stats st;

		cr_assert_not_null(a);
		for (i = 0; i < n; i++) {
			cr_assert_not_null(nkv_valloc_get(a, 16), "header %llu", (unsigned long long)i);
			cr_assert_not_null(nkv_valloc_get(a, size), "value %llu", (unsigned long long)i);
		}
		nkv_valloc_stats(a, &st);
		cr_assert_eq(st.live, n * (size + 16), "2^%u: live %llu", k,
			     (unsigned long long)st.live);
		cr_assert_leq(st.front * 10, n * size * 11, "2^%u: %llu values carve %llu", k,
			      (unsigned long long)n, (unsigned long long)st.front);
		nkv_valloc_destroy(a);
	}
}

/* Freed runs merge with free neighbours and give the front back. */
Test(valloc, freed_runs_merge)
{
	struct nkv_valloc *a = nkv_valloc_create(64 << 20, 1 << 20);
	const uint64_t run = 400 << 10;
	struct nkv_valloc_stats st;
	uint8_t *p[4];
	int i;

	cr_assert_not_null(a);
	for (i = 0; i < 4; i++) {
		p[i] = nkv_valloc_get(a, run);
		cr_assert_eq(p[i], i ? p[i - 1] + run : p[0], "runs are carved in a row");
	}
	nkv_valloc_put(a, p[0], run);
	nkv_valloc_put(a, p[2], run);
	nkv_valloc_stats(a, &st);
	cr_assert_eq(st.free, 2 * run);
	cr_assert_eq(nkv_valloc_check(a), 0);
	nkv_valloc_put(a, p[1], run);		/* joins 0 and 2 */
	nkv_valloc_stats(a, &st);
	cr_assert_eq(st.free, 3 * run);
	cr_assert_eq(nkv_valloc_check(a), 0);
	cr_assert_eq(nkv_valloc_get(a, 3 * run), p[0], "one run of three");
	nkv_valloc_put(a, p[0], 3 * run);
	nkv_valloc_put(a, p[3], run);		/* reaches the front: all of it back */
	nkv_valloc_stats(a, &st);
	cr_assert_eq(st.free, 0);
	cr_assert_eq(st.front, 0);
	cr_assert_eq(st.live, 0);
	cr_assert_eq(nkv_valloc_check(a), 0);
	nkv_valloc_destroy(a);
}

/* Values of 32 KiB to 64 MiB stored and deleted in random order and
 * sizes, at most three at a time, in a reservation that holds eight of
 * the largest: space freed by one size serves any other (size classes
 * alone would run the reservation out within a few rounds), and the
 * front never passes what three values could scatter. */
Test(valloc, big_runs_reused_across_sizes)
{
	const uint64_t max = 64 << 20;
	struct nkv_valloc *a = nkv_valloc_create(3 * max, max);
	struct nkv_valloc_stats st;
	uint64_t len[3] = { 0 }, seed = 12345, most = 0;
	void *p[3] = { NULL };
	int i;

	cr_assert_not_null(a);
	for (i = 0; i < 3000; i++) {
		unsigned j = (unsigned)(i % 3);

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		nkv_valloc_put(a, p[j], len[j]);
		len[j] = NKV_VALLOC_SMALL_MAX + 1 + (seed >> 20) % max;
		p[j] = nkv_valloc_get(a, len[j]);
		cr_assert_not_null(p[j], "round %d: %llu B", i, (unsigned long long)len[j]);
		nkv_valloc_stats(a, &st);
		most = st.front > most ? st.front : most;
		if (i % 100 == 0)
			cr_assert_eq(nkv_valloc_check(a), 0, "round %d", i);
	}
	cr_assert_leq(most, 5 * max, "front at most %llu", (unsigned long long)most);
	for (i = 0; i < 3; i++)
		nkv_valloc_put(a, p[i], len[i]);
	nkv_valloc_stats(a, &st);
	cr_assert_eq(st.front, 0, "everything freed: the front back at the start");
	cr_assert_eq(st.live, 0);
	cr_assert_eq(nkv_valloc_check(a), 0);
	/* The same 64 MiB, over and over. */
	p[0] = nkv_valloc_get(a, max);
	for (i = 0; i < 100; i++) {
		nkv_valloc_put(a, p[0], max);
		cr_assert_eq(nkv_valloc_get(a, max), p[0]);
	}
	nkv_valloc_put(a, p[0], max);
	nkv_valloc_destroy(a);
}
