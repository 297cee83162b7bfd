/* SPDX-License-Identifier: MIT */
/* The cpu engine: launch checks, ballot / broadcast / barrier on fibers
 * and real threads, lanes leaving early, blocks of waves (the block
 * barrier, its count, shared variables). */
#include <criterion/criterion.h>
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <time.h>

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

/* The engine's threads nap to the microsecond (Linux's default 50 us
 * timer slack stretched a wait's naps, sized to an eighth of the wait,
 * 2-3x); the launching thread keeps its own slack. */
struct slack_seen {
	uint32_t lanes, other;
};

static void slack_lane(void *a)
{
	struct slack_seen *s = a;

	__atomic_fetch_add(&s->lanes, 1, __ATOMIC_RELAXED);
	if (prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0) != 1000)
		__atomic_fetch_add(&s->other, 1, __ATOMIC_RELAXED);
}

static void run_slack(uint32_t mode)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), mode, 2, 4, 0 };
	struct slack_seen s = { 0, 0 };

	cr_assert_eq(prctl(PR_SET_TIMERSLACK, 20000UL, 0, 0, 0), 0);	/* ours: 20 us */
	cr_assert_eq(nkv_cpu_launch(&cfg, slack_lane, &s), 0);
	cr_expect_eq(s.lanes, 8);
	cr_expect_eq(s.other, 0, "%u of 8 lanes without a 1 us timer slack", s.other);
	cr_expect_eq(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), 20000);
}

Test(cpu_engine, naps_have_1us_slack_fibers) { run_slack(NKV_CPU_FIBERS); }
Test(cpu_engine, naps_have_1us_slack_threads) { run_slack(NKV_CPU_THREADS); }

/* Blocks of several waves: thread identity, the block barrier and its
 * count across waves, shared variables (one per block and declaration
 * site), a partial last wave; fibers, threads and the checking mode. */
struct blk {
	uint32_t waves, wave_size, block;
	uint64_t bad;
	uint64_t threads;
	void *shared[4];
};

/* Is @p the one shared pointer of block @id so far? */
static int same_shared(struct blk *c, uint32_t id, void *p)
{
	void *want = NULL;

	return __atomic_compare_exchange_n(&c->shared[id], &want, p, 0, __ATOMIC_RELAXED,
					   __ATOMIC_RELAXED) || want == p;
}

static void blk_lane(void *p)
{
	struct blk *c = p;
	uint32_t t = nkv_cpu_block_thread(), n = nkv_cpu_block_size(), id = nkv_cpu_block_id();
	uint32_t bw = (c->block + c->wave_size - 1) / c->wave_size, i, u, want;
	uint32_t wib = nkv_cpu_wave_id() % bw, lanes;
	uint32_t *cells = nkv_cpu_block_shared(NKV_CPU_MAX_BLOCK * sizeof(uint32_t), NKV_CPU_SITE);
	uint32_t *other = nkv_cpu_block_shared(sizeof(uint32_t), NKV_CPU_SITE);
	int bad;

	__atomic_fetch_add(&c->threads, 1, __ATOMIC_RELAXED);
	lanes = c->block - wib * c->wave_size < c->wave_size ? c->block - wib * c->wave_size
							      : c->wave_size;
	bad = n != c->block || t != wib * c->wave_size + nkv_cpu_lane_id() ||
	      nkv_cpu_block_id() != nkv_cpu_wave_id() / bw || nkv_cpu_wave_size() != c->wave_size ||
	      (uint32_t)__builtin_popcountll(nkv_cpu_entry_mask()) != lanes ||
	      !same_shared(c, id, cells) || other == cells || ((uintptr_t)cells & 63);
	for (i = 0; i < 8; i++) {
		cells[t] = t * 1000 + i;
		nkv_cpu_block_barrier();
		/* Every thread's store is visible after the barrier. */
		bad |= cells[(t + 1) % n] != ((t + 1) % n) * 1000 + i;
		for (u = 0, want = 0; u < n; u++)
			want += (u + i) % 3 == 0;
		bad |= nkv_cpu_block_count((t + i) % 3 == 0) != want;
	}
	if (bad)
		__atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED);
}

static void run_blocks(uint32_t mode, uint32_t waves, uint32_t ws, uint32_t block)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), mode, waves, ws, 0, 3 };
	struct blk c = { waves, ws, block, 0, 0, { NULL } };
	uint32_t bw = (block + ws - 1) / ws;

	cfg.block_size = block;
	cr_assert_eq(nkv_cpu_launch(&cfg, blk_lane, &c), 0);
	cr_expect_eq(c.bad, 0, "%llu threads saw something wrong", (unsigned long long)c.bad);
	cr_expect_eq(c.threads, (uint64_t)waves / bw * block);
	cr_expect(waves / bw < 2 || c.shared[0] != c.shared[1], "blocks share a variable");
}

Test(cpu_engine, blocks_fibers_4x32) { run_blocks(NKV_CPU_FIBERS, 8, 32, 128); }
Test(cpu_engine, blocks_fibers_partial_wave) { run_blocks(NKV_CPU_FIBERS, 6, 32, 70); }
Test(cpu_engine, blocks_fibers_1023) { run_blocks(NKV_CPU_FIBERS, 32, 32, 1023); }
Test(cpu_engine, blocks_check_wave64) { run_blocks(NKV_CPU_CHECK, 4, 64, 128); }
Test(cpu_engine, blocks_threads_4x4) { run_blocks(NKV_CPU_THREADS, 8, 4, 16); }
Test(cpu_engine, blocks_threads_partial_wave) { run_blocks(NKV_CPU_THREADS, 3, 8, 22); }

Test(cpu_engine, bad_block_parameters)
{
	struct nkv_cpu_cfg c = { sizeof(c), NKV_CPU_FIBERS, 4, 32, 0 };

	c.block_size = NKV_CPU_MAX_BLOCK + 1;
	cr_expect_eq(nkv_cpu_launch(&c, nop, NULL), -EINVAL, "too many threads");
	c.block_size = 96;
	cr_expect_eq(nkv_cpu_launch(&c, nop, NULL), -EINVAL, "3 waves per block, 4 waves");
	c.wave_size = 1;
	c.waves = 33;
	c.block_size = 33;
	cr_expect_eq(nkv_cpu_launch(&c, nop, NULL), -EINVAL, "more than 32 waves per block");
	c.waves = 64;
	c.block_size = 32;
	cr_expect_eq(nkv_cpu_launch(&c, nop, NULL), 0);
	c.mode = NKV_CPU_THREADS;
	c.wave_size = 8;
	c.waves = 2;
	c.block_size = 15;
	cr_expect_eq(nkv_cpu_launch(&c, nop, NULL), 0);
}

/* A caller built before block_size (its size ends at sched) launches
 * waves that are blocks of their own, whatever lies past its size. */
static void one_wave_block(void *p)
{
	if (nkv_cpu_block_size() != 4 || nkv_cpu_block_id() != nkv_cpu_wave_id())
		__atomic_fetch_add((uint64_t *)p, 1, __ATOMIC_RELAXED);
}

Test(cpu_engine, a_cfg_from_before_blocks)
{
	struct nkv_cpu_cfg c = { offsetof(struct nkv_cpu_cfg, pad0), NKV_CPU_FIBERS, 2, 4, 0 };
	uint64_t bad = 0;

	c.pad0 = 0xdead;
	c.block_size = 8;
	cr_expect_eq(nkv_cpu_launch(&c, one_wave_block, &bad), 0);
	cr_expect_eq(bad, 0);
}

Test(cpu_engine, block_outside_a_launch)
{
	cr_expect_eq(nkv_cpu_block_id(), 0u);
	cr_expect_eq(nkv_cpu_block_thread(), 0u);
	cr_expect_eq(nkv_cpu_block_size(), 1u);
	cr_expect_eq(nkv_cpu_block_count(1), 1u);
	cr_expect_eq(nkv_cpu_block_count(0), 0u);
	nkv_cpu_block_barrier();
}

/* A wait that has lasted past 200 us naps (a backend moving megabytes):
 * over 40 ms of polls the poller's own CPU time stays a small part of
 * the wall time, where spinning and yielding would take all of an idle
 * CPU. A property of the wait, not a timing: load only lowers it. */
static uint64_t clock_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

Test(cpu_engine, a_long_wait_naps)
{
	uint64_t t0 = clock_of(CLOCK_MONOTONIC), c0 = clock_of(CLOCK_THREAD_CPUTIME_ID);
	uint64_t n = 0, wall, cpu;

	while (clock_of(CLOCK_MONOTONIC) - t0 < 40000000ull)
		nkv_cpu_poll_pause(n++);
	wall = clock_of(CLOCK_MONOTONIC) - t0;
	cpu = clock_of(CLOCK_THREAD_CPUTIME_ID) - c0;
	cr_expect_lt(cpu, wall / 2, "a 40 ms wait took %llu of %llu ns of CPU",
		     (unsigned long long)cpu, (unsigned long long)wall);
}
