/* SPDX-License-Identifier: MIT */
/*
 * cpu-engine waves over the host library's queue pairs against an
 * in-process nkv-target over vfio-user: every memory mode 0x0-0xF, several
 * queue pairs (one wave each), both doorbell styles (two client
 * processes at once: test_host_procs.c). Values 1 B..1 MiB log-uniform, LFSR patterns checked byte for
 * byte; Store, Retrieve, Exist, List, Delete, then Exist says 87h.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>

#include "host_util.h"
#include "nkv_cpu.h"
#include "nkv_dev.h"
#include "wave_util.h"

static void check_result(const struct wu_run *r, const struct wu_result *res)
{
	uint64_t want = (uint64_t)r->keys * r->nqp;

	cr_expect_eq(res->errs, 0, "device errors: %llu (last %d)",
		     (unsigned long long)res->errs, res->last_err);
	cr_expect_eq(res->bad, 0, "bad results: %llu (key %ld, status %#x)",
		     (unsigned long long)res->bad, res->first_bad, res->last_status);
	cr_expect_eq(res->ok, 5 * want, "ok %llu of %llu", (unsigned long long)res->ok,
		     (unsigned long long)(5 * want));
	cr_expect_eq(res->missing, want, "87h after Delete, counted");
	cr_expect_eq(res->listed, want, "List saw %llu of %llu own keys",
		     (unsigned long long)res->listed, (unsigned long long)want);
}

/* Connect in mode, run a full cycle on nqp queue pairs, check. */
static void mode_run(struct tl_server *s, uint32_t mode, uint32_t nqp, uint32_t wave,
		     uint32_t keys, uint32_t salt)
{
	struct wu_run r = { .nqp = nqp, .keys = keys, .salt = salt, .max_size = 1u << 20,
			    .wave = wave, .mode = NKV_CPU_FIBERS };
	struct nkv_ctrl_info in;
	struct nkv_ctrl *c = NULL;
	struct wu_result res;
	char err[256] = "";
	uint32_t q;

	cr_assert_eq(ht_connect(s, mode, nqp, &c, err, sizeof(err)), 0, "mode %#x: %s", mode, err);
	cr_assert_eq(nkv_ctrl_get_info(c, &in), 0);
	cr_expect_eq(in.memory_mode, mode);
	cr_expect_eq(in.vram_is_emulated, mode != 0, "mode %#x", mode);
	cr_assert_eq(wu_qpairs(c, &r, 0), 0, "mode %#x", mode);
	cr_assert_eq(wu_full_cycle(&r, &res), 0);
	check_result(&r, &res);
	for (q = 0; q < nqp; q++) {
		struct nkv_qpair_stats st;

		cr_assert_eq(nkv_qpair_get_stats(r.qp[q], &st), 0);
		if (!in.doorbells_mapped) {
			/* Every SQE device code published reached the controller. */
			cr_expect_geq(st.fwd_submitted, (uint64_t)keys * 5,
				      "mode %#x qp %u: %llu submitted", mode, q,
				      (unsigned long long)st.fwd_submitted);
			cr_expect_eq(st.fwd_submitted, st.fwd_completed);
			cr_expect_leq(st.sq_doorbells, st.fwd_submitted);
		}
		cr_expect_eq(nkv_dev_qp_failed(nkv_qpair_dev(r.qp[q])), 0);
	}
	wu_qpairs_free(&r);
	nkv_ctrl_close(c);
}

static void server(struct tl_server *s, int no_sparse)
{
	struct ht_server_opts o = { .no_sparse = no_sparse, .max_ioq = 8 };

	cr_assert_eq(ht_server_start(s, &o), 0);
}

/* The full key set in the two modes that matter most. */
Test(host_waves, mode_0x0_full)
{
	alarm(120);	/* a hang becomes a crash, not a stuck suite */
	struct tl_server s;

	server(&s, 0);
	mode_run(&s, 0x0, 4, 64, 500, 1);
	tl_server_stop(&s);
}

Test(host_waves, mode_0x8_full)
{
	alarm(120);	/* a hang becomes a crash, not a stuck suite */
	struct tl_server s;

	server(&s, 0);
	mode_run(&s, 0x8, 2, 32, 1000, 2);
	tl_server_stop(&s);
}

/* Every other mode with a smaller key set and varied wave widths. */
Test(host_waves, every_mode)
{
	alarm(120);	/* a hang becomes a crash, not a stuck suite */
	struct tl_server s;
	uint32_t m;

	server(&s, 0);
	for (m = 0x1; m <= 0xf; m++)
		if (m != 0x8)
			mode_run(&s, m, 2, 8u << (m % 4), 96, 16 + m);
	tl_server_stop(&s);
}

/* Doorbells only by message: the forwarder carries every device doorbell. */
Test(host_waves, forwarded_doorbells)
{
	alarm(120);	/* a hang becomes a crash, not a stuck suite */
	struct tl_server s;

	server(&s, 1);
	mode_run(&s, 0x0, 2, 16, 200, 40);
	mode_run(&s, 0x8, 2, 64, 200, 41);
	mode_run(&s, 0xf, 1, 32, 100, 42);
	tl_server_stop(&s);
}

/* Mapped doorbells but bit 0x4: device code writes the shadow, the
 * forwarder copies to the mapped page. */
Test(host_waves, shadow_over_mapped_page)
{
	alarm(120);	/* a hang becomes a crash, not a stuck suite */
	struct tl_server s;
	struct nkv_ctrl_info in;
	struct nkv_ctrl *c;

	server(&s, 0);
	cr_assert_eq(ht_connect(&s, NKV_MEM_DB, 1, &c, NULL, 0), 0);
	cr_assert_eq(nkv_ctrl_get_info(c, &in), 0);
	cr_expect_eq(in.doorbells_mapped, 0, "0x4 always forwards");
	nkv_ctrl_close(c);
	mode_run(&s, NKV_MEM_DB, 1, 16, 100, 43);
	tl_server_stop(&s);
}
