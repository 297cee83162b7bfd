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

/* The helper faults in the pages past the front before a Store needs
 * them (MADV_POPULATE_WRITE, Linux 5.14+). */
Test(valloc, pages_ahead_of_the_front_are_resident)
{
	struct nkv_valloc *a = nkv_valloc_create(64 << 20, 1 << 20);
	struct nkv_valloc_stats st;
	unsigned char vec[512];
	uint8_t *p;
	int i, tries;

	cr_assert_not_null(a);
	p = nkv_valloc_get(a, 4096);
	cr_assert_not_null(p);
	for (tries = 0; tries < 200; tries++) {
		nkv_valloc_stats(a, &st);
		if (st.faulted)
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
	nkv_valloc_destroy(a);
}
