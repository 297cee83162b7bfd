/* SPDX-License-Identifier: MIT */
/*
 * backends/lend.c: an entry retired while lent is freed by its last
 * release, once; one not lent is the owner's to free at once; destroy
 * waits for the borrows still out (a send in flight on another thread).
 */
#include <pthread.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "target/backends/lend.h"

static int FREED;
static void *LAST;

static void on_free(void *owner, void *ent)
{
	cr_assert_eq(owner, &FREED);
	__atomic_add_fetch(&FREED, 1, __ATOMIC_RELAXED);
	LAST = ent;
}

Test(lend, retired_while_lent_freed_by_the_last_release)
{
	struct nkv_lend *l = nkv_lend_create(on_free, &FREED);
	int a, b;
	void *t1, *t2;

	FREED = 0;
	cr_assert_not_null(l);
	cr_expect_eq(nkv_lend_retire(l, &b), 0, "nothing lent: the owner frees it");
	t1 = nkv_lend_take(l, &a);
	t2 = nkv_lend_take(l, &a);
	cr_assert(t1 && t2);
	cr_expect_eq(nkv_lend_count(l), 2);
	cr_expect_eq(nkv_lend_retire(l, &b), 0, "another entry: the owner's");
	cr_expect_eq(nkv_lend_retire(l, &a), 1, "lent: freed later");
	nkv_lend_release(t1);
	cr_expect_eq(FREED, 0, "one borrower left");
	nkv_lend_release(t2);
	cr_expect_eq(FREED, 1, "freed by the last release, once");
	cr_expect_eq(LAST, &a);
	cr_expect_eq(nkv_lend_count(l), 0);
	t1 = nkv_lend_take(l, &b);	/* lent and released, never retired: not freed */
	nkv_lend_release(t1);
	cr_expect_eq(FREED, 1);
	nkv_lend_destroy(l);
}

static void *late_release(void *tok)
{
	usleep(200 * 1000);
	nkv_lend_release(tok);
	return NULL;
}

Test(lend, destroy_waits_for_a_send_in_flight)
{
	struct nkv_lend *l = nkv_lend_create(on_free, &FREED);
	pthread_t t;
	int a;
	void *tok;

	FREED = 0;
	tok = nkv_lend_take(l, &a);
	cr_assert_not_null(tok);
	cr_assert_eq(nkv_lend_retire(l, &a), 1);
	cr_assert_eq(pthread_create(&t, NULL, late_release, tok), 0);
	nkv_lend_destroy(l);	/* returns only after the release freed it */
	cr_expect_eq(__atomic_load_n(&FREED, __ATOMIC_RELAXED), 1);
	pthread_join(t, NULL);
}
