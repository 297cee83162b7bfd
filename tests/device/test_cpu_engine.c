/* SPDX-License-Identifier: MIT */
/* The cpu engine: launch checks, ballot / broadcast / barrier on fibers
 * and real threads, lanes leaving early. */
#include <criterion/criterion.h>
#include <errno.h>
#include <sched.h>

#include "nkv_cpu.h"

static void nop(void *a) { (void)a; }

Test(cpu_engine, bad_parameters)
{
	struct nkv_cpu_cfg c = { sizeof(c), NKV_CPU_FIBERS, 1, 64, 0 };

	cr_expect_eq(nkv_cpu_launch(NULL, nop, NULL), -EINVAL);
	cr_expect_eq(nkv_cpu_launch(&c, NULL, NULL), -EINVAL);
	c.size = 4;
	cr_expect_eq(nkv_cpu_launch(&c, nop, NULL), -EINVAL);
	c.size = sizeof(c);
	c.wave_size = 0;
	cr_expect_eq(nkv_cpu_launch(&c, nop, NULL), -EINVAL);
	c.wave_size = 65;
	cr_expect_eq(nkv_cpu_launch(&c, nop, NULL), -EINVAL);
	c.wave_size = 64;
	c.waves = 0;
	cr_expect_eq(nkv_cpu_launch(&c, nop, NULL), -EINVAL);
	c.waves = NKV_CPU_MAX_WAVES + 1;
	cr_expect_eq(nkv_cpu_launch(&c, nop, NULL), -EINVAL);
	c.waves = 1;
	c.stack_size = 100;
	cr_expect_eq(nkv_cpu_launch(&c, nop, NULL), -EINVAL);
	c.stack_size = 0;
	c.mode = 7;
	cr_expect_eq(nkv_cpu_launch(&c, nop, NULL), -EINVAL);
	c.mode = NKV_CPU_THREADS;
	c.wave_size = 9;
	cr_expect_eq(nkv_cpu_launch(&c, nop, NULL), -EINVAL);
	c.wave_size = 8;
	c.sched = NKV_CPU_SCHED_IDLE + 1;
	cr_expect_eq(nkv_cpu_launch(&c, nop, NULL), -EINVAL);
}

struct coll {
	uint32_t wave_size;
	uint64_t bad;
	uint64_t lanes;
	int nested;
};

static void coll_lane(void *p)
{
	struct coll *c = p;
	uint32_t lane = nkv_cpu_lane_id(), w = nkv_cpu_wave_size(), i;
	uint64_t all = w == 64 ? ~0ull : (1ull << w) - 1;
	struct nkv_cpu_cfg cfg = { sizeof(cfg), NKV_CPU_FIBERS, 1, 1, 0 };

	__atomic_fetch_add(&c->lanes, 1, __ATOMIC_RELAXED);
	if (w != c->wave_size || lane >= w)
		__atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED);
	if (lane == 0)
		c->nested = nkv_cpu_launch(&cfg, nop, NULL);
	for (i = 0; i < 20; i++) {
		uint64_t b = nkv_cpu_ballot(all, (lane + i) % 3 == 0);
		uint64_t want = 0;
		uint32_t l;

		for (l = 0; l < w; l++)
			want |= (uint64_t)((l + i) % 3 == 0) << l;
		if (b != (want & all))
			__atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED);
		if (nkv_cpu_bcast(all, lane * 100 + i, i % w) != (i % w) * 100 + i)
			__atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED);
		nkv_cpu_barrier(all);
	}
	/* Odd lanes leave; the rest keep voting among themselves. */
	if (lane & 1)
		return;
	for (i = 0; i < 5; i++) {
		uint64_t even = 0x5555555555555555ull & all;
		uint64_t b = nkv_cpu_ballot(even, 1);

		if (b != even)
			__atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED);
	}
}

static void run_coll(uint32_t mode, uint32_t waves, uint32_t ws)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), mode, waves, ws, 0 };
	struct coll c = { ws, 0, 0, 0 };

	cr_assert_eq(nkv_cpu_launch(&cfg, coll_lane, &c), 0);
	cr_expect_eq(c.bad, 0);
	cr_expect_eq(c.lanes, (uint64_t)waves * ws);
	cr_expect_eq(c.nested, -EDEADLK);
}

Test(cpu_engine, fibers_64x4) { run_coll(NKV_CPU_FIBERS, 4, 64); }
Test(cpu_engine, fibers_32x2) { run_coll(NKV_CPU_FIBERS, 2, 32); }
Test(cpu_engine, fibers_1) { run_coll(NKV_CPU_FIBERS, 1, 1); }
Test(cpu_engine, threads_8x2) { run_coll(NKV_CPU_THREADS, 2, 8); }

/* Every lane of a wave in collectives of its own (a batch of one each:
 * the engine's short path on fibers): every result as if they had met.
 * (A lane alone while another waits for it in a collective of both is a
 * violation: test_wave_check.c.) */
static void alone_lane(void *p)
{
	struct coll *c = p;
	uint32_t lane = nkv_cpu_lane_id(), i;
	uint64_t self = 1ull << lane;

	for (i = 0; i < 10; i++) {
		int bad = nkv_cpu_ballot(self, i & 1) != ((i & 1) ? self : 0) ||
			  nkv_cpu_bcast(self, lane + i, lane) != lane + i;

		nkv_cpu_barrier(self);
		if (bad)
			__atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED);
	}
}

static void run_alone(uint32_t mode, uint32_t ws)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), mode, 1, ws, 0 };
	struct coll c = { ws, 0, 0, 0 };

	cr_assert_eq(nkv_cpu_launch(&cfg, alone_lane, &c), 0);
	cr_expect_eq(c.bad, 0);
}

Test(cpu_engine, lanes_alone_fibers) { run_alone(NKV_CPU_FIBERS, 8); }
Test(cpu_engine, lanes_alone_threads) { run_alone(NKV_CPU_THREADS, 4); }

Test(cpu_engine, outside_a_launch)
{
	cr_expect_eq(nkv_cpu_lane_id(), 0u);
	cr_expect_eq(nkv_cpu_wave_size(), 1u);
	cr_expect_eq(nkv_cpu_entry_mask(), 1u);
	cr_expect_eq(nkv_cpu_activemask(), 1u);
	cr_expect_eq(nkv_cpu_ballot(1, 1), 1u);
	cr_expect_eq(nkv_cpu_bcast(1, 42, 0), 42u);
}

/* The scheduling class a launch asks for is the one its lanes run at,
 * and the launching thread keeps its own. */
struct sched_seen {
	uint32_t lanes, other;
	int want;
};

static void sched_lane(void *p)
{
	struct sched_seen *s = p;

	__atomic_fetch_add(&s->lanes, 1, __ATOMIC_RELAXED);
	if (sched_getscheduler(0) != s->want)
		__atomic_fetch_add(&s->other, 1, __ATOMIC_RELAXED);
}

static void run_sched(uint32_t mode, uint32_t sched, int want)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), mode, 2, 4, 0 };
	struct sched_seen s = { 0, 0, want };

	cfg.sched = sched;
	cr_assert_eq(nkv_cpu_launch(&cfg, sched_lane, &s), 0);
	cr_expect_eq(s.lanes, 8);
	cr_expect_eq(s.other, 0, "%u of 8 lanes not at policy %d", s.other, want);
	cr_expect_eq(sched_getscheduler(0), SCHED_OTHER);
}

Test(cpu_engine, sched_idle_fibers) { run_sched(NKV_CPU_FIBERS, NKV_CPU_SCHED_IDLE, SCHED_IDLE); }
Test(cpu_engine, sched_idle_threads) { run_sched(NKV_CPU_THREADS, NKV_CPU_SCHED_IDLE, SCHED_IDLE); }
Test(cpu_engine, sched_normal) { run_sched(NKV_CPU_FIBERS, NKV_CPU_SCHED_NORMAL, SCHED_OTHER); }
