/* SPDX-License-Identifier: MIT */
/*
 * Block batches with every lane a real thread (NKV_CPU_THREADS): the
 * block barrier, thread 0's reservation and reaping and the controller
 * race for real, so TSan sees them.
 */
#include <criterion/criterion.h>

#include "fake_ctrl.h"

static struct fake_ctrl ctrl;
static struct test_qp tq;

static void threaded(uint32_t waves, uint32_t wave, uint32_t block, uint32_t threads,
		     uint32_t depth, uint32_t rounds)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), NKV_CPU_THREADS, waves, wave, 0 };
	struct block_run r = { &tq, threads, rounds, 0, 0, 0, 0 };

	cfg.block_size = block;
	cr_assert_eq(test_qp_init(&tq, depth, depth, 0, 2000000000ull), 0);
	fake_start(&ctrl, &tq, FAKE_SHUFFLED, 1);
	cr_assert_eq(nkv_cpu_launch(&cfg, block_lane, &r), 0);
	fake_stop(&ctrl);
	cr_expect_eq(r.errs, 0, "last err %d", r.last_err);
	cr_expect_eq(r.wrong, 0);
	cr_expect_eq(r.ok, (uint64_t)threads * rounds);
	cr_expect_eq(ctrl.submitted, (uint64_t)threads * rounds);
	cr_expect_eq(ctrl.overrun, 0);
	cr_expect_eq(ctrl.bad_delta, 0);
	cr_expect_eq(ctrl.cid_reuse, 0);
	cr_expect_eq(tq.qp.cids_held, 0);
	if (threads <= tq.qp.credit_limit)
		cr_expect_eq(ctrl.sq_writes, rounds, "one doorbell per batch");
	test_qp_free(&tq);
}

Test(block_threads, four_waves_of_eight) { threaded(4, 8, 32, 32, 64, 60); }
Test(block_threads, partial_last_wave) { threaded(3, 8, 21, 19, 32, 60); }
Test(block_threads, small_queue_chunks) { threaded(4, 4, 16, 16, 8, 40); }
