/* SPDX-License-Identifier: MIT */
/*
 * test_rdpool.c - the backends' read pool: every item pushed runs once,
 * on the pool's threads, side by side; destroy runs what is still queued
 * before it returns; bad arguments are refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "target/backends/rdpool.h"

#define N 5000

struct seen {
	unsigned runs[N];	/* atomic: how often item i ran */
	int inside, most;	/* atomic: items running now, the most at once */
	pthread_t main_thr;
	int on_main;		/* atomic */
	unsigned slow_us;
};

static void run_item(void *arg, void *item)
{
	struct seen *s = arg;
	unsigned i = (unsigned)(uintptr_t)item;
	int in = __atomic_add_fetch(&s->inside, 1, __ATOMIC_ACQ_REL), m;

	m = __atomic_load_n(&s->most, __ATOMIC_RELAXED);
	while (in > m && !__atomic_compare_exchange_n(&s->most, &m, in, 0, __ATOMIC_RELAXED,
						      __ATOMIC_RELAXED))
		;
	if (pthread_equal(pthread_self(), s->main_thr))
		__atomic_store_n(&s->on_main, 1, __ATOMIC_RELAXED);
	if (s->slow_us)
		usleep(s->slow_us);
	__atomic_add_fetch(&s->runs[i], 1, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&s->inside, 1, __ATOMIC_ACQ_REL);
}

/* n items through a pool of threads, items sleeping slow_us each,
 * destroyed right after the pushes; each item ran exactly once. The
 * caller frees what it returns. */
static struct seen *run_pool(unsigned threads, unsigned n, unsigned slow_us)
{
	struct seen *s = calloc(1, sizeof(*s));
	struct nkv_rdpool *p;
	unsigned i;

	cr_assert_not_null(s);
	s->main_thr = pthread_self();
	s->slow_us = slow_us;
	p = nkv_rdpool_create(threads, run_item, s);
	cr_assert_not_null(p);
	for (i = 0; i < n; i++)
		cr_assert_eq(nkv_rdpool_push(p, (void *)(uintptr_t)i), 0);
	nkv_rdpool_destroy(p);
	for (i = 0; i < n; i++)
		cr_assert_eq(s->runs[i], 1u, "item %u ran %u times", i, s->runs[i]);
	return s;
}

Test(rdpool, every_item_runs_once_off_the_pushing_thread)
{
	struct seen *s = run_pool(3, N, 0);	/* past the ring's first sizes */

	cr_assert_eq(s->on_main, 0);
	free(s);
}

/* Items that sleep: two threads run two at once, and destroy right after
 * the pushes still runs every one. */
Test(rdpool, threads_run_side_by_side_and_destroy_drains)
{
	struct seen *s = run_pool(2, 20, 2000);

	cr_assert_eq(s->most, 2, "at most 2 at once, and 2 were (%d)", s->most);
	free(s);
}

Test(rdpool, bad_arguments)
{
	int x = 0;

	errno = 0;
	cr_assert_null(nkv_rdpool_create(0, run_item, &x));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(nkv_rdpool_create(NKV_RDPOOL_MAX + 1, run_item, &x));
	cr_assert_null(nkv_rdpool_create(1, NULL, &x));
	nkv_rdpool_destroy(NULL);
}
