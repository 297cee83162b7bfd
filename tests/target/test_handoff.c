/* SPDX-License-Identifier: MIT */
/*
 * handoff.c's batching for backends: an SQ burst's ops left for the
 * backend's poll (nkv_be_poll_later), and a run of completions from a
 * backend thread that wakes the sleeping poll thread once
 * (nkv_be_done_hold).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tgt_host.h"
#include "wrap_be.h"
#include "target/core/core.h"

static struct h H;

static void fini(void)
{
	h_fini(&H);
}

TestSuite(handoff, .fini = fini, .timeout = 30);

/*
 * In front of the mem backend: an op the core lets it leave for later is
 * kept until poll, which passes the kept ones on (keep_all: every op is
 * kept, for the test to pass on itself).
 */
#define LATER_MAX 64
struct later_be {
	struct wrap_be w;
	struct nkv_be_op *kept[LATER_MAX];
	unsigned nkept;
	int keep_all;
	unsigned later, polls, most, not_submitter;
	pthread_t submitter;
};

static int later_submit(struct nkv_be *be, struct nkv_be_op *op)
{
	struct later_be *l = (struct later_be *)be;

	if (l->nkept < LATER_MAX && (l->keep_all || nkv_be_poll_later(be))) {
		l->later += !l->keep_all;
		l->submitter = pthread_self();
		l->kept[l->nkept++] = op;
		return 0;
	}
	return l->w.inner->ops->submit(l->w.inner, op);
}

/* Pass the kept ops on to the mem backend (it completes them inside). */
static void later_pass(struct later_be *l)
{
	unsigned i, n = l->nkept;

	for (i = 0; i < n; i++)
		cr_assert_eq(l->w.inner->ops->submit(l->w.inner, l->kept[i]), 0);
	l->nkept = 0;
}

static void later_poll(struct nkv_be *be)
{
	struct later_be *l = (struct later_be *)be;
	unsigned n = l->nkept;

	l->polls++;
	l->not_submitter += n && !pthread_equal(pthread_self(), l->submitter);
	if (n > l->most)
		l->most = n;
	later_pass(l);
}

static const struct nkv_be_ops later_ops = {
	.name = "later",
	.submit = later_submit,
	.bytes_used = wrap_be_bytes_used,
	.keys_used = wrap_be_keys_used,
	.destroy = wrap_be_destroy,
	.poll = later_poll,
};

static struct later_be *later_up(int keep_all)
{
	struct nkv_be_conf c = { sizeof(c) };
	struct later_be *l = calloc(1, sizeof(*l));

	cr_assert(l);
	wrap_be_init(&l->w, h_mem(&c), &later_ops);
	l->keep_all = keep_all;
	h_init_be(&H, NULL, &l->w.be);
	cr_assert_eq(h_enable(&H, 16), NKV_CSTS_RDY);
	cr_assert_eq(h_create_qpair(&H, 1, 64), 0);
	return l;
}

/* n Stores on queue 1, one doorbell each, not reaped. */
static void stores(unsigned n)
{
	uint64_t buf = h_alloc(&H, 4096);
	unsigned i;

	for (i = 0; i < n; i++) {
		char key[16];
		int kl = snprintf(key, sizeof(key), "b-%u", i);
		struct nkv_sqe s;

		memcpy(h_ptr(&H, buf), "value", 5);
		h_kv(&s, NKV_KV_STORE, 1, key, (uint32_t)kl, 5, 0);
		s.prp1 = buf;
		h_submit(&H, 1, &s);
	}
}

static void reap_ok(unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		struct nkv_cqe e;

		cr_assert_eq(h_reap(&H, 1, &e), 0, "completion %u of %u", i + 1, n);
		cr_assert_eq(nkv_cqe_status(e.dw3), 0);
	}
}

/* The 8 commands one pass finds on the SQ: all submitted, then one poll,
 * on the thread that submitted them, before their completions post. */
Test(handoff, burst_polls_the_backend_once_after_its_submits)
{
	struct later_be *l = later_up(0);

	stores(8);
	cr_assert_gt(nkv_tgt_ctrl_poll(H.c), 0);
	cr_assert_eq(l->later, 8, "every op of the burst left for later");
	cr_assert_eq(l->polls, 1, "one poll for the burst");
	cr_assert_eq(l->most, 8, "the poll saw the whole burst");
	cr_assert_eq(l->not_submitter, 0);
	cr_assert_eq(l->nkept, 0, "nothing left after the burst");
	reap_ok(8);
	stores(3);
	reap_ok(3);
	cr_assert_eq(l->polls, 2);
	cr_assert_eq(l->later, 11);
}

/* Outside a poll thread's burst (a direct caller, another thread) an op
 * cannot be left for later: nothing would poll for it. */
Test(handoff, no_later_outside_a_burst)
{
	struct later_be *l = later_up(0);

	cr_assert_eq(nkv_be_poll_later(&l->w.be), 0);
	nkv_tgt_burst_begin(H.c);	/* a burst, but not inside its submit */
	cr_assert_eq(nkv_be_poll_later(&l->w.be), 0);
	nkv_tgt_burst_end(H.c);
	cr_assert_eq(l->polls, 0);
}

/* A burst names up to 4 backends; a fifth serves its ops as usual. */
struct count_be {
	struct nkv_be be;
	int later;		/* what nkv_be_poll_later said */
	unsigned polls;
};

static int count_submit(struct nkv_be *be, struct nkv_be_op *op)
{
	(void)op;
	((struct count_be *)be)->later = nkv_be_poll_later(be);
	return 0;
}

static void count_poll(struct nkv_be *be)
{
	((struct count_be *)be)->polls++;
}

static const struct nkv_be_ops count_ops = {
	.name = "count", .submit = count_submit, .poll = count_poll,
};

Test(handoff, a_burst_names_four_backends)
{
	struct count_be b[5];
	struct nkv_be_op op;
	unsigned i;

	h_init(&H, NULL, NULL);
	memset(b, 0, sizeof(b));
	memset(&op, 0, sizeof(op));
	nkv_tgt_burst_begin(H.c);
	for (i = 0; i < 5; i++) {
		b[i].be.ops = &count_ops;
		cr_assert_eq(nkv_tgt_be_submit(H.c, &b[i].be, &op), 0);
		cr_assert_eq(nkv_tgt_be_submit(H.c, &b[i].be, &op), 0, "a second op, same list");
	}
	nkv_tgt_burst_end(H.c);
	for (i = 0; i < 5; i++) {
		cr_assert_eq(b[i].later, i < 4, "backend %u", i);
		cr_assert_eq(b[i].polls, i < 4, "backend %u", i);
	}
}

/* Completions from a backend thread while the poll thread sleeps: one
 * eventfd write at the release, none before it. */
static unsigned wake_writes(void)
{
	uint64_t v = 0;

	if (read(nkv_tgt_ctrl_wake_fd(H.c), &v, sizeof(v)) < 0) {
		cr_assert_eq(errno, EAGAIN);
		return 0;
	}
	return (unsigned)v;
}

struct pass_arg {
	struct later_be *l;
	int hold;
	unsigned before_release;
};

static void *pass_thread(void *arg)
{
	struct pass_arg *a = arg;

	if (a->hold)
		nkv_be_done_hold();
	later_pass(a->l);
	if (a->hold) {
		a->before_release = wake_writes();
		nkv_be_done_release();
	}
	return NULL;
}

static unsigned complete_from_thread(struct later_be *l, int hold, unsigned *before)
{
	struct pass_arg a = { l, hold, 0 };
	pthread_t t;
	unsigned n;

	cr_assert_eq(nkv_tgt_ctrl_sleep_begin(H.c), 1, "nothing pushed yet");
	cr_assert_eq(pthread_create(&t, NULL, pass_thread, &a), 0);
	pthread_join(t, NULL);
	n = wake_writes();
	nkv_tgt_ctrl_sleep_end(H.c);
	if (before)
		*before = a.before_release;
	return n;
}

Test(handoff, held_completions_wake_once)
{
	struct later_be *l = later_up(1);
	unsigned before = 99;

	stores(6);
	nkv_tgt_ctrl_poll(H.c);
	cr_assert_eq(l->nkept, 6, "kept by the backend");
	cr_assert_eq(complete_from_thread(l, 1, &before), 1, "one wake-up at the release");
	cr_assert_eq(before, 0, "none before it");
	reap_ok(6);
	/* Without a hold, each push finds the thread asleep. */
	stores(6);
	nkv_tgt_ctrl_poll(H.c);
	cr_assert_eq(l->nkept, 6);
	cr_assert_eq(complete_from_thread(l, 0, NULL), 6, "a wake-up per completion");
	reap_ok(6);
}

/* Holds nest: only the outermost release wakes. */
Test(handoff, holds_nest)
{
	struct later_be *l = later_up(1);

	stores(2);
	nkv_tgt_ctrl_poll(H.c);
	cr_assert_eq(nkv_tgt_ctrl_sleep_begin(H.c), 1);
	nkv_be_done_hold();
	nkv_be_done_hold();
	later_pass(l);
	nkv_be_done_release();
	cr_assert_eq(wake_writes(), 0, "the inner release wakes nobody");
	nkv_be_done_release();
	cr_assert_eq(wake_writes(), 1);
	nkv_be_done_release();	/* one too many: nothing to do */
	nkv_tgt_ctrl_sleep_end(H.c);
	reap_ok(2);
}
