/* SPDX-License-Identifier: MIT */
/*
 * backends/lru.c: the order of use, and every key reachable by drop
 * across the bucket array's growths (a key added as a growth happened
 * was once listed but not hashed: eviction then met it as the oldest
 * for ever, holding the namespace's lock).
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "nkv_wire.h"
#include "target/backends/lru.h"

static uint8_t key_of(unsigned i, uint8_t *k)
{
	return (uint8_t)snprintf((char *)k, 16, "k%u", i);
}

Test(lru, oldest_first_and_use_moves_to_front)
{
	struct nkv_lru *l = nkv_lru_create();
	uint8_t k[16], got[NKV_KEY_MAX], n;

	cr_assert_not_null(l);
	for (unsigned i = 0; i < 3; i++) {
		n = key_of(i, k);
		cr_assert_eq(nkv_lru_use(l, k, n), 0);
	}
	n = key_of(0, k);
	cr_assert_eq(nkv_lru_use(l, k, n), 0);	/* k0 the most recent now */
	cr_assert_eq(nkv_lru_oldest(l, got, NULL, 0), 2);
	cr_expect_eq(memcmp(got, "k1", 2), 0);
	n = key_of(1, k);
	cr_assert_eq(nkv_lru_oldest(l, got, k, n), 2, "skip k1: the next oldest");
	cr_expect_eq(memcmp(got, "k2", 2), 0);
	nkv_lru_destroy(l);
}

/* 5000 keys (four growths of the 1024 buckets), dropped oldest first as
 * eviction does: every one found, then none left. */
Test(lru, every_key_drops_across_growths)
{
	struct nkv_lru *l = nkv_lru_create();
	uint8_t k[16], got[NKV_KEY_MAX], n;
	unsigned i;

	cr_assert_not_null(l);
	for (i = 0; i < 5000; i++) {
		n = key_of(i, k);
		cr_assert_eq(nkv_lru_use(l, k, n), 0);
	}
	for (i = 0; i < 5000; i++) {
		n = nkv_lru_oldest(l, got, NULL, 0);
		key_of(i, k);
		cr_assert_eq(n, strlen((char *)k), "key %u", i);
		cr_assert_eq(memcmp(got, k, n), 0, "key %u in order", i);
		nkv_lru_drop(l, got, n);
	}
	cr_expect_eq(nkv_lru_oldest(l, got, NULL, 0), 0, "every key dropped");
	nkv_lru_destroy(l);
}
