/* SPDX-License-Identifier: MIT */
/*
 * The same batched protocol with every lane a real thread (NKV_CPU_THREADS)
 * so TSan sees the lanes, the leader and the controller race for real.
 */
#include <criterion/criterion.h>

#include "fake_ctrl.h"

static struct fake_ctrl ctrl;
static struct test_qp tq;

static void threaded(uint32_t wave, uint32_t lanes, uint32_t sqd, uint32_t rounds)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), NKV_CPU_THREADS, 1, wave, 0 };
	struct batch_run r = { &tq, lanes, rounds, 0, 0, 0, 0 };

	cr_assert_eq(test_qp_init(&tq, sqd, sqd, 0, 2000000000ull), 0);
	fake_start(&ctrl, &tq, FAKE_SHUFFLED, 1);
	cr_assert_eq(nkv_cpu_launch(&cfg, batch_lane, &r), 0);
	fake_stop(&ctrl);
	cr_expect_eq(r.errs, 0, "last err %d", r.last_err);
	cr_expect_eq(r.wrong, 0);
	cr_expect_eq(r.ok, (uint64_t)lanes * rounds);
	cr_expect_eq(ctrl.submitted, (uint64_t)lanes * rounds);
	cr_expect_eq(ctrl.overrun, 0);
	cr_expect_eq(ctrl.bad_delta, 0);
	cr_expect_eq(ctrl.cid_reuse, 0);
	if (lanes <= tq.qp.credit_limit)
		cr_expect_eq(ctrl.sq_writes, rounds, "one doorbell per batch");
	test_qp_free(&tq);
}

Test(wave_threads, four_lanes) { threaded(4, 4, 32, 200); }
Test(wave_threads, eight_lanes_partial_wave) { threaded(8, 6, 32, 150); }
Test(wave_threads, eight_lanes_small_queue) { threaded(8, 8, 4, 100); }
