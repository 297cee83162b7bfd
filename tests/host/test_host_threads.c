/* SPDX-License-Identifier: MIT */
/*
 * Real threads as lanes (NKV_CPU_THREADS) on host-library queue pairs,
 * small enough for TSan: lanes publish SQEs concurrently, the forwarder
 * thread copies the shadow doorbells and adds to the counters, the
 * target's threads DMA into the slots.
 */
#include <criterion/criterion.h>
#include <unistd.h>

#include "host_util.h"
#include "nkv_cpu.h"
#include "nkv_dev.h"
#include "wave_util.h"

static void threads_run(int no_sparse, uint32_t mode)
{
	struct ht_server_opts so = { .no_sparse = no_sparse };
	struct wu_run r = { .nqp = 2, .keys = 48, .salt = 90 + (uint32_t)no_sparse,
			    .max_size = 65536, .wave = 4, .mode = NKV_CPU_THREADS };
	struct nkv_qpair_stats st;
	struct wu_result res;
	struct tl_server s;
	struct nkv_ctrl *c;
	char err[200] = "";

	cr_assert_eq(ht_server_fork(&s, &so), 0);
	cr_assert_eq(ht_connect(&s, mode, 2, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(wu_qpairs(c, &r, 0), 0);
	cr_assert_eq(wu_full_cycle(&r, &res), 0);
	cr_expect_eq(res.errs, 0, "last err %d", res.last_err);
	cr_expect_eq(res.bad, 0, "key %ld status %#x", res.first_bad, res.last_status);
	cr_expect_eq(res.ok, 5u * 96u);
	cr_expect_eq(res.listed, 96u);
	cr_assert_eq(nkv_qpair_get_stats(r.qp[0], &st), 0);
	if (no_sparse)
		cr_expect_eq(st.fwd_submitted, st.fwd_completed);
	wu_qpairs_free(&r);
	nkv_ctrl_close(c);
	tl_server_stop(&s);
}

Test(host_threads, mapped_doorbells) { alarm(60); threads_run(0, 0x0); }
Test(host_threads, forwarded_doorbells) { alarm(60); threads_run(1, 0xf); }
