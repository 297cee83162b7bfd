/* SPDX-License-Identifier: MIT */
/*
 * The cpu engine's NKV_CPU_CHECK mode finds, without a GPU, the class of
 * bug that hung the landed code on an H100: collectives over
 * __activemask() after lanes diverged. The old pattern fails under a
 * fixed seed (and passes the plain fibers engine, which is why the mode
 * exists); nkv_dev.h's submit and wait pass under many seeds; every kind
 * of collective misuse stops the wave naming the call sites.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fake_ctrl.h"

static char diag[512];

static int launch(uint32_t mode, uint64_t seed, uint32_t wave, nkv_cpu_fn fn, void *arg)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), mode, 1, wave, 0, seed, diag, sizeof(diag) };

	diag[0] = 0;
	return nkv_cpu_launch(&cfg, fn, arg);
}

/*
 * The structure of nkv_wave_submit as landed (commit fd3f23e): a ballot
 * over the active lanes, a leader-only branch that polls, a broadcast
 * from the leader over __activemask(), lanes taking CIDs from a shared
 * word in a retry loop, then a barrier over __activemask().
 */
struct old_run {
	uint64_t cids;	/* the shared CID word */
	uint64_t done;
};

static int old_take_cid(struct old_run *r)
{
	uint64_t n;

	for (n = 0;; n++) {
		uint64_t w = __atomic_load_n(&r->cids, __ATOMIC_RELAXED), bit = ~w & (w + 1);

		if (bit && !(__atomic_fetch_or(&r->cids, bit, __ATOMIC_ACQ_REL) & bit))
			return __builtin_ctzll(bit);
		nkv_cpu_poll_pause(n);
	}
}

static void old_pattern(void *arg)
{
	struct old_run *r = arg;
	uint32_t lane = nkv_cpu_lane_id(), i;
	uint64_t want = nkv_cpu_ballot(nkv_cpu_activemask(), 1);
	uint32_t leader = (uint32_t)__builtin_ctzll(want);
	uint64_t g = 0;

	if (lane == leader) {
		for (i = 0; i < 256; i++)	/* the leader's reserve: it polls */
			nkv_cpu_poll_pause(i);
		g = 42;
	}
	g = nkv_cpu_bcast(nkv_cpu_activemask(), g, leader);
	if (g == 42 && old_take_cid(r) >= 0)
		__atomic_fetch_add(&r->done, 1, __ATOMIC_RELAXED);
	nkv_cpu_barrier(nkv_cpu_activemask());
}

Test(wave_check, old_pattern_fails_under_a_fixed_seed)
{
	struct old_run r = { 0, 0 };

	cr_expect_eq(launch(NKV_CPU_CHECK, 7, 32, old_pattern, &r), -EPROTO);
	cr_expect(strstr(diag, "test_wave_check.c:") != NULL, "names a call site: %s", diag);
	fprintf(stderr, "NKV_CPU_CHECK seed 7, old pattern: %s\n", diag);
}

/* The plain fibers engine runs lanes in lockstep-like order and gives
 * __activemask() the whole wave: the bug is invisible there. */
Test(wave_check, old_pattern_passes_the_lockstep_engine)
{
	struct old_run r = { 0, 0 };

	cr_expect_eq(launch(NKV_CPU_FIBERS, 0, 32, old_pattern, &r), 0, "%s", diag);
	cr_expect_eq(r.done, 32);
}

/* How often the checker catches it: every seed tried, reported; most
 * must fail (a seed may, by chance, hand every lane the same subset). */
Test(wave_check, old_pattern_fails_across_seeds)
{
	uint32_t seed, failed = 0;

	for (seed = 1; seed <= 50; seed++) {
		struct old_run r = { 0, 0 };

		failed += launch(NKV_CPU_CHECK, seed, 32, old_pattern, &r) == -EPROTO;
	}
	fprintf(stderr, "NKV_CPU_CHECK: old pattern stopped under %u of 50 seeds\n", failed);
	cr_expect_geq(failed, 45u, "only %u of 50 seeds caught it", failed);
}

/* nkv_dev.h's submit and wait against the in-test controller, under many
 * seeds: random lane order, random yields and sleeps in the leader's
 * polls, out-of-order completions, every batch width 1..32. */
Test(wave_check, submit_and_wait_pass_many_seeds, .timeout = 120)
{
	static struct test_qp tq;
	static struct fake_ctrl ctrl;
	uint64_t seed;

	for (seed = 1; seed <= 64; seed++) {
		uint32_t lanes = 1u + (uint32_t)(seed * 7u % 32u);
		struct batch_run r = { &tq, lanes, 6, 0, 0, 0, 0 };
		int rc;

		cr_assert_eq(test_qp_init(&tq, 16, 16, 4, 2000000000ull), 0);
		fake_start(&ctrl, &tq, (int)(seed % 3u), lanes < 15u ? lanes : 15u);
		rc = launch(NKV_CPU_CHECK, seed, 32, batch_lane, &r);
		fake_stop(&ctrl);
		cr_expect_eq(rc, 0, "seed %llu: %s", (unsigned long long)seed, diag);
		cr_expect_eq(r.errs, 0, "seed %llu: last error %d", (unsigned long long)seed,
			     r.last_err);
		cr_expect_eq(r.wrong, 0, "seed %llu", (unsigned long long)seed);
		cr_expect_eq(r.ok, (uint64_t)lanes * 6u, "seed %llu", (unsigned long long)seed);
		cr_expect_eq(ctrl.cid_reuse, 0, "seed %llu", (unsigned long long)seed);
		cr_expect_eq(tq.qp.inflight, 0);
		cr_expect_eq(tq.qp.cids_held, 0);
		cr_expect_eq(tq.qp.commands, (uint64_t)lanes * 6u, "device-counted commands");
		cr_expect_eq(tq.qp.sq_doorbells, ctrl.sq_writes, "device-counted doorbells");
		test_qp_free(&tq);
	}
}

/* Misuse, named: each case runs on the plain fibers engine too (the
 * checks hold in every mode). */
static int site_a, site_b;

static void two_sites(void *arg)
{
	uint64_t all = nkv_cpu_entry_mask();

	(void)arg;
	if (nkv_cpu_lane_id() == 0) {
		site_a = __LINE__ + 1;
		nkv_cpu_ballot(all, 1);
	} else {
		site_b = __LINE__ + 1;
		nkv_cpu_barrier(all);
	}
}

static void early_return(void *arg)
{
	(void)arg;
	if (nkv_cpu_lane_id() == 1)
		return;
	nkv_cpu_barrier(nkv_cpu_entry_mask());
}

static void src_outside(void *arg)
{
	(void)arg;
	if (nkv_cpu_lane_id() < 2)
		nkv_cpu_bcast(0x3, 5, 2);
}

/* Collectives of a lane alone take the engine's short path; these must
 * still be reported: a source outside the one-lane mask, and a lane
 * alone while another lane waits for it in a collective of both. */
static void alone_src_outside(void *arg)
{
	(void)arg;
	nkv_cpu_bcast(0x1, 5, 1);
}

static void alone_while_waited_for(void *arg)
{
	(void)arg;
	if (nkv_cpu_lane_id() == 0)
		nkv_cpu_ballot(0x3, 1);
	else
		nkv_cpu_ballot(0x2, 1);
}

static void caller_outside(void *arg)
{
	(void)arg;
	if (nkv_cpu_lane_id() == 2)
		nkv_cpu_ballot(0x3, 1);
}

Test(wave_check, different_collectives_name_both_sites)
{
	char a[64], b[64];

	cr_expect_eq(launch(NKV_CPU_FIBERS, 0, 4, two_sites, NULL), -EPROTO);
	snprintf(a, sizeof(a), "test_wave_check.c:%d", site_a);
	snprintf(b, sizeof(b), "test_wave_check.c:%d", site_b);
	cr_expect(strstr(diag, a) && strstr(diag, b), "want %s and %s in: %s", a, b, diag);
}

Test(wave_check, a_mask_lane_that_returned)
{
	cr_expect_eq(launch(NKV_CPU_FIBERS, 0, 4, early_return, NULL), -EPROTO);
	cr_expect(strstr(diag, "returned") != NULL, "%s", diag);
}

Test(wave_check, broadcast_source_outside_the_mask)
{
	cr_expect_eq(launch(NKV_CPU_CHECK, 3, 4, src_outside, NULL), -EPROTO);
	cr_expect(strstr(diag, "source lane 2") != NULL, "%s", diag);
}

Test(wave_check, lone_lane_broadcast_source_outside_the_mask)
{
	cr_expect_eq(launch(NKV_CPU_FIBERS, 0, 1, alone_src_outside, NULL), -EPROTO);
	cr_expect(strstr(diag, "source lane 1") != NULL, "%s", diag);
}

Test(wave_check, lone_lane_while_another_waits_for_it)
{
	cr_expect_eq(launch(NKV_CPU_FIBERS, 0, 2, alone_while_waited_for, NULL), -EPROTO);
	cr_expect(strstr(diag, "different collectives") != NULL, "%s", diag);
}

Test(wave_check, caller_outside_its_mask)
{
	cr_expect_eq(launch(NKV_CPU_FIBERS, 0, 4, caller_outside, NULL), -EPROTO);
	cr_expect(strstr(diag, "leaves the caller out") != NULL, "%s", diag);
}

/*
 * The engine skips the lane-by-lane scan when the first pending lane of
 * the caller's mask made the same call (coll_clean). This misuse passes
 * that test and must still be found: lane 0 waits in a ballot over lanes
 * 0-1 while lane 1 calls one over itself alone (no pending lane in the
 * caller's mask, but a lane outside it waits for the caller).
 */
static void waits_for_a_narrower_mask(void *arg)
{
	(void)arg;
	if (nkv_cpu_lane_id() == 0)
		nkv_cpu_ballot(0x3, 1);
	else if (nkv_cpu_lane_id() == 1)
		nkv_cpu_ballot(0x2, 1);
}

Test(wave_check, a_lane_outside_the_mask_waits_for_the_caller)
{
	cr_expect_eq(launch(NKV_CPU_FIBERS, 0, 2, waits_for_a_narrower_mask, NULL), -EPROTO);
	cr_expect(strstr(diag, "different collectives") != NULL, "%s", diag);
	cr_expect(strstr(diag, "lane 1 in ballot") && strstr(diag, "lane 0 in ballot"), "%s", diag);
}
