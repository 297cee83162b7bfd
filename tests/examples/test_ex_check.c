/* SPDX-License-Identifier: MIT */
/*
 * The examples' own checks tell the truth: against a controller that
 * answers every Retrieve with success, length 0 and junk bytes (a test
 * backend, tests/target/liar_be.c), ex_batch marks every value bad with
 * the length named, and ex_check fails naming the key; against an honest
 * one every value passes. (They used to compare min(length, size) words:
 * none at all for length 0, so junk passed.)
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include "nkv_cpu.h"
#include "../../examples/ex_host.h"
#include "host_util.h"

#define KEYS 64u

struct lane_args {
	struct nkv_dev_qp *qp;
	struct ex_args a;
	int store;
};

static void lane(void *p)
{
	struct lane_args *l = p;

	ex_batch(l->qp, &l->a, l->store);
}

/* Store then Retrieve KEYS values through a 32-lane wave; ex_check's
 * verdict on the Retrieve, and the outputs in out. */
static int round_trip(int lie, struct ex_out *out)
{
	struct ht_server_opts so = { .lie_retrieve = lie };
	struct nkv_cpu_cfg cfg = { sizeof(cfg), NKV_CPU_FIBERS, 1, 32, 0 };
	struct ex_key *keys = ex_keys("chk", 0, KEYS);
	struct lane_args l = { 0 };
	struct nkv_qpair_opts qo;
	struct tl_server s;
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	int rc;

	cr_assert_eq(ht_server_start(&s, &so), 0);
	c = ex_connect(s.uri, 1);
	cr_assert(c && keys);
	/* Memory mode 0: values in host RAM (no arena, whose note on stderr
	 * the expected output does not hold). */
	qo = ex_qpair_opts(32, 0);
	cr_assert_eq(nkv_qpair_create(c, &qo, &q), 0);
	l.qp = nkv_qpair_dev(q);
	l.a = ex_args_of(keys, out, KEYS, 0x1234);
	l.store = 1;
	cr_assert_eq(nkv_cpu_launch(&cfg, lane, &l), 0);
	cr_assert_eq(ex_check("store", out, KEYS, NULL), 0);
	l.store = 0;
	cr_assert_eq(nkv_cpu_launch(&cfg, lane, &l), 0);
	rc = ex_check("retrieve", out, KEYS, NULL);
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	tl_server_stop(&s);
	free(keys);
	return rc;
}

Test(ex_check, a_length_of_zero_and_junk_is_caught, .init = cr_redirect_stderr)
{
	static struct ex_out out[KEYS];
	uint32_t i;

	cr_expect_eq(round_trip(1, out), EX_EXIT_FAIL, "ex_check passed a lying controller");
	for (i = 0; i < KEYS; i++) {
		cr_expect_eq(out[i].len, 0);
		cr_expect_eq(out[i].bad_at, EX_LEN_BAD, "key %u", i);
	}
	fflush(stderr);
	cr_expect_stderr_eq_str("retrieve: key 0: the controller returned length 0, not the 4096 bytes stored\n"
				"retrieve: key 1: the controller returned length 0, not the 4096 bytes stored\n"
				"retrieve: key 2: the controller returned length 0, not the 4096 bytes stored\n"
				"retrieve: key 3: the controller returned length 0, not the 4096 bytes stored\n"
				"retrieve: key 4: the controller returned length 0, not the 4096 bytes stored\n");
}

Test(ex_check, an_honest_controller_passes)
{
	static struct ex_out out[KEYS];
	uint32_t i;

	cr_expect_eq(round_trip(0, out), 0);
	for (i = 0; i < KEYS; i++)
		cr_expect_eq(out[i].bad_at, EX_BYTES_OK, "key %u", i);
}
