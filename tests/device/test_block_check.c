/* SPDX-License-Identifier: MIT */
/*
 * The cpu engine's checks of the block barrier: nkv_block.h's submit and
 * wait pass NKV_CPU_CHECK (random thread order across the waves of a
 * block, random yields and sleeps in thread 0's polls) under many seeds,
 * and every way a thread can miss a block barrier stops the block with a
 * message naming the call sites and the thread.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "fake_ctrl.h"

static char diag[512];

static int launch(uint32_t mode, uint64_t seed, uint32_t waves, uint32_t wave, uint32_t block,
		  nkv_cpu_fn fn, void *arg)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), mode, waves, wave, 0, seed, diag, sizeof(diag) };

	cfg.block_size = block;
	diag[0] = 0;
	return nkv_cpu_launch(&cfg, fn, arg);
}

/* Blocks of 2..4 waves of 8..32 lanes, the last wave partial, some
 * threads without a command, queues deep enough or chunking (depth 64
 * for up to 128 threads: 128 CIDs), completions in order, reversed or
 * shuffled. */
Test(block_check, submit_and_wait_pass_many_seeds, .timeout = 120)
{
	static struct test_qp tq;
	static struct fake_ctrl ctrl;
	uint64_t seed;

	for (seed = 1; seed <= 24; seed++) {
		uint32_t waves = 2 + (uint32_t)(seed % 3), wave = 8u << (seed % 3);
		uint32_t block = waves * wave - (uint32_t)(seed % 5);
		uint32_t threads = block - (uint32_t)(seed % 7), depth = seed & 1 ? 128 : 64;
		struct block_run r = { &tq, threads, 3, 0, 0, 0, 0 };
		int rc;

		cr_assert_eq(test_qp_init(&tq, depth, depth, 0, 2000000000ull), 0);
		fake_start(&ctrl, &tq, (int)(seed % 3), threads < 15u ? threads : 15u);
		rc = launch(NKV_CPU_CHECK, seed, waves, wave, block, block_lane, &r);
		fake_stop(&ctrl);
		cr_expect_eq(rc, 0, "seed %llu: %s", (unsigned long long)seed, diag);
		cr_expect_eq(r.errs, 0, "seed %llu: last error %d", (unsigned long long)seed,
			     r.last_err);
		cr_expect_eq(r.wrong, 0, "seed %llu", (unsigned long long)seed);
		cr_expect_eq(r.ok, (uint64_t)threads * 3u, "seed %llu", (unsigned long long)seed);
		cr_expect_eq(ctrl.cid_reuse, 0, "seed %llu", (unsigned long long)seed);
		cr_expect_eq(ctrl.bad_delta, 0, "seed %llu", (unsigned long long)seed);
		cr_expect_eq(tq.qp.inflight, 0);
		cr_expect_eq(tq.qp.cids_held, 0);
		cr_expect_eq(tq.qp.sq_doorbells, ctrl.sq_writes, "device-counted doorbells");
		if (threads <= tq.qp.credit_limit)
			cr_expect_eq(ctrl.sq_writes, 3u, "seed %llu: one doorbell per batch",
				     (unsigned long long)seed);
		test_qp_free(&tq);
	}
}

/* Misuse, named. Each case also runs on the plain fibers engine: the
 * checks hold in every mode but real threads (which abort). */
static int site_a, site_b;

static void returns_early(void *arg)
{
	(void)arg;
	if (nkv_cpu_block_thread() == 37)
		return;
	site_a = __LINE__ + 1;
	nkv_cpu_block_barrier();
}

static void two_barriers(void *arg)
{
	(void)arg;
	if (nkv_cpu_block_thread() == 40) {
		site_b = __LINE__ + 1;
		nkv_cpu_block_barrier();
	} else {
		site_a = __LINE__ + 1;
		nkv_cpu_block_count(1);
	}
}

/* Lane 0 of wave 1 votes with its wave while the rest of the block,
 * its wave included, is at the block barrier. */
static void ballot_against_barrier(void *arg)
{
	(void)arg;
	if (nkv_cpu_block_thread() == 32) {
		site_b = __LINE__ + 1;
		nkv_cpu_ballot(nkv_cpu_entry_mask(), 1);
	} else {
		site_a = __LINE__ + 1;
		nkv_cpu_block_barrier();
	}
}

static void expect_sites(const char *what)
{
	char a[64], b[64];

	snprintf(a, sizeof(a), "test_block_check.c:%d", site_a);
	snprintf(b, sizeof(b), "test_block_check.c:%d", site_b);
	cr_expect(strstr(diag, a) && strstr(diag, b), "%s: want %s and %s in: %s", what, a, b,
		  diag);
}

static void misuse(uint32_t mode, uint64_t seed)
{
	cr_expect_eq(launch(mode, seed, 2, 32, 64, returns_early, NULL), -EPROTO);
	cr_expect(strstr(diag, "thread 37 (wave 1 lane 5) returned") != NULL, "%s", diag);
	site_b = site_a;
	expect_sites("returned");
	cr_expect_eq(launch(mode, seed, 2, 32, 64, two_barriers, NULL), -EPROTO);
	cr_expect(strstr(diag, "different barriers") != NULL, "%s", diag);
	cr_expect(strstr(diag, "thread 40 (wave 1 lane 8)") != NULL, "%s", diag);
	expect_sites("two barriers");
	cr_expect_eq(launch(mode, seed, 2, 32, 64, ballot_against_barrier, NULL), -EPROTO);
	cr_expect(strstr(diag, "different collectives") != NULL, "%s", diag);
	expect_sites("ballot against the block barrier");
	fprintf(stderr, "block barrier misuse (mode %u): %s\n", mode, diag);
}

Test(block_check, a_thread_that_misses_the_barrier_is_named_fibers) { misuse(NKV_CPU_FIBERS, 0); }
Test(block_check, a_thread_that_misses_the_barrier_is_named_check) { misuse(NKV_CPU_CHECK, 5); }

/* Threads of a block kernel that skip the block's submit and wait: the
 * others wait in nkv_block.h for them, and the report says which thread
 * left. One thread alone is missed first by its own wave's ballot; a
 * whole wave, by the block barrier. Nothing is rung. */
static struct test_qp skip_tq;

static void skips_submit(void *arg)
{
	const uint32_t *skip = arg;
	NKV_BLOCK_SHARED(sh);
	const struct nkv_block b = nkv_block_enter(sh);
	uint8_t key[2] = { 'k', (uint8_t)b.thread };

	if (b.thread / skip[1] == skip[0] / skip[1])
		return;
	nkv_block_exec(b, &skip_tq.qp, 1, nkv_dev_exist(&skip_tq.qp, 0, key, 2));
}

Test(block_check, threads_that_skip_the_submit)
{
	static const uint32_t one[2] = { 70, 1 }, wave[2] = { 64, 32 };
	struct fake_ctrl ctrl;
	uint64_t seed;

	cr_assert_eq(test_qp_init(&skip_tq, 256, 256, 0, 2000000000ull), 0);
	fake_start(&ctrl, &skip_tq, FAKE_IN_ORDER, 1);
	for (seed = 0; seed < 4; seed++) {
		uint32_t mode = seed ? NKV_CPU_CHECK : NKV_CPU_FIBERS;

		cr_expect_eq(launch(mode, seed, 4, 32, 128, skips_submit, (void *)one), -EPROTO);
		cr_expect(strstr(diag, "wave 2: ") && strstr(diag, "waits for lane 6, which returned") &&
			  strstr(diag, " at include/nkv_block.h:"),
			  "seed %llu: %s", (unsigned long long)seed, diag);
		cr_expect_eq(launch(mode, seed, 4, 32, 128, skips_submit, (void *)wave), -EPROTO);
		cr_expect(strstr(diag, "(wave 2 lane ") && strstr(diag, ") returned") &&
			  strstr(diag, "in block barrier at include/nkv_block.h:"),
			  "seed %llu: %s", (unsigned long long)seed, diag);
	}
	fprintf(stderr, "a wave that skips the submit: %s\n", diag);
	fake_stop(&ctrl);
	cr_expect_eq(ctrl.sq_writes, 0, "a block that broke the rules rang nothing");
	test_qp_free(&skip_tq);
}

/* A block's shared variable exists only inside a launch. */
Test(block_check, shared_variable_outside_a_launch, .signal = SIGABRT)
{
	nkv_cpu_block_shared(64, NKV_CPU_SITE);
}
