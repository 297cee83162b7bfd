/* SPDX-License-Identifier: MIT */
/*
 * The vendor Store options (TTL, ephemeral, touch), their discovery and
 * read-only namespaces, through the synchronous API against an
 * in-process nkv-target over vfio-user.
 *
 * Host side, true whatever the controller does: a vendor bit the
 * namespace does not advertise is -EOPNOTSUPP before anything is sent,
 * with one log line naming it and what is advertised; the TTL and touch
 * rules are -EINVAL; where the bits are advertised (here the queue
 * pair's descriptor says so, as device code sees it) the entry carries
 * them and CDW12.
 *
 * The tests named ttl_e2e_* need nkv-target's side of issue 32 (the nkvX
 * vendor bytes, the options served, :ro namespaces, the size query):
 * they check the whole conversation.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "big_util.h"
#include "host/qpair_check.h"
#include "host_util.h"
#include "nkv_dev.h"

static struct tl_server srv;
static struct nkv_ctrl *ctrl;
static struct nkv_qpair *qp;

static void up(const struct ht_server_opts *o)
{
	char err[256] = "";

	cr_assert_eq(ht_server_start(&srv, o), 0);
	cr_assert_eq(ht_connect(&srv, 0, 2, &ctrl, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nkv_qpair_create(ctrl, NULL, &qp), 0);
}

static void setup(void) { up(NULL); }

static void setup_none(void)
{
	struct ht_server_opts o = { .no_store_opts = 1 };

	up(&o);
}

static void setup_ro(void)
{
	struct ht_server_opts o = { .read_only = 1 };

	up(&o);
}

static void down(void)
{
	big_log_stop();
	nkv_set_trace(0);
	nkv_qpair_destroy(qp);
	nkv_ctrl_close(ctrl);
	tl_server_stop(&srv);
}

static uint64_t sent(void)
{
	struct nkv_qpair_stats st;

	cr_assert_eq(nkv_qpair_get_stats(qp, &st), 0);
	return st.commands;
}

/* The namespace in use as nkv_ctrl_ns_ext reads it. */
static struct nkv_ns_ext ext_of(uint32_t nsid)
{
	struct nkv_ns_ext e = { .size = sizeof(e) };

	cr_assert_eq(nkv_ctrl_ns_ext(ctrl, nsid, &e), 0);
	return e;
}

Test(host_opts, not_advertised_refused, .init = setup_none, .fini = down)
{
	struct nkv_ns_ext e = ext_of(0);
	struct nkv_result r;
	uint64_t before;

	cr_expect_eq(e.store_opts, 0u);
	cr_expect_eq(e.nsid, 1u);
	cr_expect_eq(nkv_qpair_dev(qp)->key_flags & NKV_STORE_VENDOR_MASK, 0u,
		     "the descriptor advertises what the namespace does");
	before = sent();
	big_log_start();
	cr_expect_eq(nkv_store(qp, "k", 1, "v", 1, NKV_STORE_EPHEMERAL, &r), -EOPNOTSUPP);
	cr_expect_neq(strstr(big_log(), "Store option ephemeral (option bit 4): not advertised by "
					"namespace 1 (it advertises none"), NULL, "%s", big_log());
	cr_expect_eq(strchr(big_log(), '\n'), big_log() + strlen(big_log()) - 1, "one line: %s",
		     big_log());
	cr_expect_eq(nkv_store_ttl(qp, "k", 1, "v", 1, NKV_STORE_TTL, 60, &r), -EOPNOTSUPP);
	cr_expect_neq(strstr(big_log(), "TTL (option bit 3)"), NULL, "%s", big_log());
	cr_expect_eq(nkv_touch(qp, "k", 1, 0, &r), -EOPNOTSUPP);
	cr_expect_neq(strstr(big_log(), "touch (option bit 5)"), NULL, "%s", big_log());
	cr_expect_eq(nkv_touch(qp, "k", 1, 30, &r), -EOPNOTSUPP);
	cr_expect_neq(strstr(big_log(), "TTL (option bit 3), touch (option bit 5)"), NULL, "%s",
		      big_log());
	/* The rules that are not about advertising stay -EINVAL. */
	cr_expect_eq(nkv_store_ttl(qp, "k", 1, "v", 1, 0, 60, &r), -EINVAL, "seconds, no TTL bit");
	cr_expect_eq(nkv_store(qp, "k", 1, "v", 1, 1u << 14, &r), -EINVAL, "option bit 6");
	cr_expect_eq(sent(), before, "nothing reached the controller");
	/* The standard options still go. */
	cr_assert_eq(nkv_store(qp, "k", 1, "v", 1, NKV_STORE_MUST_NOT_EXIST, &r), 0);
	cr_expect_eq(r.status, 0);
}

/* Where the namespace advertises them (the descriptor's bits 8-15, set
 * here by hand as the host sets them from Identify), Store and touch
 * carry the bits and the seconds: the trace shows the entry. */
Test(host_opts, advertised_sent, .init = setup, .fini = down)
{
	struct nkv_result r;

	nkv_qpair_dev(qp)->key_flags |= NKV_STORE_VENDOR_MASK;
	cr_expect_eq(nkv_dev_qp_check(nkv_qpair_dev(qp)), 0, "bits 8-15 are the descriptor's");
	nkv_qpair_dev(qp)->key_flags |= 1u << 14;
	cr_expect_eq(nkv_dev_qp_check(nkv_qpair_dev(qp)), NKV_EINVAL, "option bit 6 is no option");
	nkv_qpair_dev(qp)->key_flags &= ~(1u << 14);
	cr_expect_eq(nkv_qpair_reset(qp), 0, "a reset keeps (and checks) the advertised bits");
	cr_expect_eq(nkv_qpair_dev(qp)->key_flags & NKV_STORE_VENDOR_MASK, NKV_STORE_VENDOR_MASK);
	cr_assert_eq(nkv_store(qp, "t", 1, "v", 1, 0, &r), 0);
	big_log_start();
	nkv_set_trace(1);
	cr_assert_eq(nkv_store_ttl(qp, "t", 1, "vv", 2, NKV_STORE_TTL | NKV_STORE_EPHEMERAL, 3600, &r),
		     0);
	cr_expect_neq(strstr(big_log(), "cdw10 2 options 0x1800 cdw12 3600"), NULL, "%s", big_log());
	cr_assert_eq(nkv_touch(qp, "t", 1, 0, &r), 0);
	cr_expect_neq(strstr(big_log(), "cdw10 0 options 0x2000 cdw12 0"), NULL, "%s", big_log());
	cr_assert_eq(nkv_touch(qp, "t", 1, 7, &r), 0);
	cr_expect_neq(strstr(big_log(), "cdw10 0 options 0x2800 cdw12 7"), NULL, "%s", big_log());
	nkv_set_trace(0);
}

Test(host_opts, ttl_and_touch_rules, .init = setup, .fini = down)
{
	struct nkv_result r;
	uint64_t before;

	nkv_qpair_dev(qp)->key_flags |= NKV_STORE_VENDOR_MASK;
	before = sent();
	cr_expect_eq(nkv_store(qp, "k", 1, "v", 1, NKV_STORE_TTL, &r), -EINVAL, "TTL of 0 s");
	cr_expect_eq(nkv_store_ttl(qp, "k", 1, "v", 1, NKV_STORE_TTL, 0, &r), -EINVAL);
	cr_expect_eq(nkv_store_ttl(qp, "k", 1, "v", 1, NKV_STORE_EPHEMERAL, 5, &r), -EINVAL,
		     "seconds without the TTL bit");
	cr_expect_eq(nkv_store(qp, "k", 1, "v", 1, NKV_STORE_TOUCH, &r), -EINVAL, "touch, a value");
	cr_expect_eq(nkv_store(qp, "k", 1, NULL, 0, NKV_STORE_TOUCH | NKV_STORE_MUST_NOT_EXIST, &r),
		     -EINVAL);
	cr_expect_eq(nkv_store(qp, "k", 1, NULL, 0, NKV_STORE_TOUCH | NKV_STORE_EPHEMERAL, &r),
		     -EINVAL);
	cr_expect_eq(nkv_store(qp, "k", 1, "v", 1, 1u << 15, &r), -EINVAL, "option bit 7");
	cr_expect_eq(nkv_touch(qp, "k", 0, 0, &r), -EINVAL, "no key");
	cr_expect_eq(sent(), before, "nothing reached the controller");
}

Test(host_opts, ns_ext_arguments, .init = setup, .fini = down)
{
	struct nkv_ns_ext e = { .size = offsetof(struct nkv_ns_ext, cmd_timeout_ms) - 1 };

	cr_expect_eq(nkv_ctrl_ns_ext(ctrl, 0, &e), -EINVAL, "a struct smaller than the first one");
	e.size = sizeof(e);
	cr_expect_eq(nkv_ctrl_ns_ext(NULL, 0, &e), -EINVAL);
	cr_expect_eq(nkv_ctrl_ns_ext(ctrl, 0, NULL), -EINVAL);
	cr_expect_eq(nkv_ctrl_ns_ext(ctrl, 77, &e), -ENODEV, "no namespace 77");
	cr_expect_eq(ext_of(1).nsid, 1u, "the one in use, by number");
}

Test(host_opts, ns_ext_of_nvm, .fini = down)
{
	struct ht_server_opts o = { .nvm_only = 1 };
	struct nkv_ns_ext e = { .size = sizeof(e) };
	char err[256] = "";

	cr_assert_eq(ht_server_start(&srv, &o), 0);
	cr_assert_eq(ht_connect(&srv, 0, 1, &ctrl, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(nkv_ctrl_ns_ext(ctrl, 0, &e), -ENODEV, "an NVM namespace has no KV extensions");
}

/* ---- with nkv-target's side of issue 32 ---- */

Test(host_opts, ttl_e2e_advertised, .init = setup, .fini = down)
{
	struct nkv_ns_ext e = ext_of(0);

	cr_expect_eq(e.advertised, 1u, "nkvX vendor bytes");
	cr_expect_eq(e.store_opts, NKV_STORE_VENDOR_MASK, "mem honours TTL, ephemeral, touch");
	cr_expect_eq(e.size_query, 1u);
	cr_expect_eq(e.read_only, 0u);
	cr_expect_eq(nkv_qpair_dev(qp)->key_flags & NKV_STORE_VENDOR_MASK, NKV_STORE_VENDOR_MASK);
}

Test(host_opts, ttl_e2e_store_touch, .init = setup, .fini = down)
{
	uint8_t buf[8];
	struct nkv_result r;

	cr_assert_eq(nkv_store_ttl(qp, "ttl", 3, "abc", 3, NKV_STORE_TTL, 3600, &r), 0);
	cr_expect_eq(r.status, 0, "%s", nkv_status_str(r.status));
	cr_assert_eq(nkv_retrieve(qp, "ttl", 3, buf, sizeof(buf), &r), 0);
	cr_expect_eq(r.status, 0);
	cr_expect_eq(r.dw0, 3u);
	cr_expect_arr_eq(buf, "abc", 3);
	cr_assert_eq(nkv_touch(qp, "ttl", 3, 0, &r), 0);
	cr_expect_eq(r.status, 0, "%s", nkv_status_str(r.status));
	cr_assert_eq(nkv_touch(qp, "ttl", 3, 60, &r), 0);
	cr_expect_eq(r.status, 0, "%s", nkv_status_str(r.status));
	cr_assert_eq(nkv_touch(qp, "none", 4, 0, &r), 0);
	cr_expect_eq(r.status, NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS), "touch of an absent key");
	cr_assert_eq(nkv_store(qp, "eph", 3, "e", 1, NKV_STORE_EPHEMERAL, &r), 0);
	cr_expect_eq(r.status, 0, "%s", nkv_status_str(r.status));
	cr_assert_eq(nkv_exist(qp, "eph", 3, &r), 0);
	cr_expect_eq(r.status, 0);
}

Test(host_opts, ttl_e2e_size_query, .init = setup, .fini = down)
{
	static uint8_t val[10000];
	struct nkv_result r;

	cr_assert_eq(nkv_store(qp, "sz", 2, val, sizeof(val), 0, &r), 0);
	cr_assert_eq(nkv_retrieve(qp, "sz", 2, NULL, 0, &r), 0);
	cr_expect_eq(r.status, 0, "%s", nkv_status_str(r.status));
	cr_expect_eq(r.dw0, sizeof(val), "DW0 = the stored size");
	cr_assert_eq(nkv_retrieve(qp, "absent", 6, NULL, 0, &r), 0);
	cr_expect_eq(r.status, NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS));
}

Test(host_opts, ttl_e2e_read_only, .init = setup_ro, .fini = down)
{
	struct nkv_result r;

	cr_expect_eq(ext_of(0).read_only, 1u);
	cr_assert_eq(nkv_store(qp, "k", 1, "v", 1, 0, &r), 0);
	cr_expect(nkv_status_read_only(r.status), "Store on a read-only namespace: %#x (%s)",
		  r.status, nkv_status_str(r.status));
	cr_expect_eq(r.status, NKV_STATUS(NKV_SCT_CMD_SPECIFIC, NKV_SC_WRITE_READ_ONLY));
	cr_expect_neq(strstr(nkv_status_str(r.status), "read-only namespace"), NULL);
	cr_assert_eq(nkv_delete(qp, "k", 1, &r), 0);
	cr_expect(nkv_status_read_only(r.status), "Delete: %#x", r.status);
	cr_assert_eq(nkv_exist(qp, "k", 1, &r), 0);
	cr_expect_eq(r.status, NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS), "reads are served");
}

/* ---- the advertised command time (issue 35) ---- */

/* The I/O wait a queue pair got, as device code reads it; the host's
 * nkv_qpair_get_info says the same. */
static uint32_t wait_ms(struct nkv_qpair *q)
{
	struct nkv_qpair_info info = { .size = sizeof(info) };

	cr_assert_eq(nkv_qpair_get_info(q, &info), 0);
	cr_expect_eq(info.timeout_ms, nkv_qpair_dev(q)->timeout_us / 1000u);
	return nkv_qpair_dev(q)->timeout_us / 1000u;
}

static void setup_cmd_time(uint32_t ms)
{
	struct ht_server_opts o = { .cmd_timeout_ms = ms };

	up(&o);
}

static void setup_5s(void) { setup_cmd_time(5000); }
static void setup_40s(void) { setup_cmd_time(40000); }

/* The suites' target has CAP.TO 3 s: a namespace that says nothing
 * keeps that; one that may take 5 s gets 5 + 2 s (the 2 s floor), one
 * that may take 40 s gets 40 + 10 s (25 %). */
Test(host_opts, io_wait_is_cap_to_without_a_command_time, .init = setup, .fini = down)
{
	cr_expect_eq(ext_of(0).cmd_timeout_ms, 0u);
	cr_expect_eq(wait_ms(qp), 3000u);
}

Test(host_opts, io_wait_follows_the_command_time, .init = setup_5s, .fini = down)
{
	cr_expect_eq(ext_of(0).cmd_timeout_ms, 5000u);
	cr_expect_eq(wait_ms(qp), 7000u, "5 s + the 2 s floor");
}

Test(host_opts, io_wait_margin_is_a_quarter_of_long_times, .init = setup_40s, .fini = down)
{
	cr_expect_eq(wait_ms(qp), 50000u, "40 s + 25 %");
}

/* A wait the application chose is kept; one shorter than the namespace
 * needs gets one log line naming it and the numbers. */
Test(host_opts, explicit_short_wait_kept_and_logged, .init = setup_5s, .fini = down)
{
	struct nkv_qpair_opts o = { .size = sizeof(o), .timeout_ms = 1000 };
	struct nkv_ctrl_opts co = { .size = sizeof(co), .io_queues = 2, .timeout_ms = 1500 };
	struct nkv_qpair *q = NULL;
	struct nkv_ctrl *c = NULL;

	nkv_qpair_destroy(qp);
	qp = NULL;
	big_log_start();
	cr_assert_eq(nkv_qpair_create(ctrl, &o, &q), 0);
	cr_expect_eq(wait_ms(q), 1000u, "kept as set");
	cr_expect_neq(strstr(big_log(), "nkv_qpair_opts.timeout_ms 1000 ms is shorter than "
				       "namespace 1 needs: it may take 5000 ms"), NULL, "%s", big_log());
	cr_expect_neq(strstr(big_log(), "would wait 7000 ms"), NULL, "%s", big_log());
	cr_expect_eq(strchr(big_log(), '\n'), big_log() + strlen(big_log()) - 1, "one line: %s",
		     big_log());
	nkv_qpair_destroy(q);
	big_log_stop();
	big_log_start();
	o.timeout_ms = 9000;
	cr_assert_eq(nkv_qpair_create(ctrl, &o, &q), 0);
	cr_expect_eq(wait_ms(q), 9000u);
	cr_expect_str_empty(big_log(), "a longer wait is not logged: %s", big_log());
	nkv_qpair_destroy(q);
	/* The controller-wide one is the application's too. */
	cr_assert_eq(nkv_ctrl_connect(srv.uri, &co, &c), 0);
	cr_assert_eq(nkv_qpair_create(c, NULL, &q), 0);
	cr_expect_eq(wait_ms(q), 1500u);
	cr_expect_neq(strstr(big_log(), "nkv_ctrl_opts.timeout_ms 1500 ms is shorter"), NULL, "%s",
		      big_log());
	nkv_ctrl_close(c);
}

/* A caller built before cmd_timeout_ms existed gets the fields it knows
 * and nothing written past them. */
Test(host_opts, ns_ext_of_an_older_caller, .init = setup_5s, .fini = down)
{
	struct nkv_ns_ext e;

	memset(&e, 0xa5, sizeof(e));
	e.size = offsetof(struct nkv_ns_ext, cmd_timeout_ms);
	cr_assert_eq(nkv_ctrl_ns_ext(ctrl, 0, &e), 0);
	cr_expect_eq(e.nsid, 1u);
	cr_expect_eq(e.cmd_timeout_ms, 0xa5a5a5a5u, "untouched");
}

/*
 * The point of it: a backend that takes 4 s, longer than CAP.TO (3 s),
 * and says so, answers a default queue pair before the library gives
 * up: the Store completes (here with success) instead of -ETIMEDOUT.
 */
Test(host_opts, slow_backend_that_says_so_answers_first, .fini = down)
{
	struct ht_server_opts so = { .cmd_timeout_ms = 4500, .delay_hold_us = 4000000 };
	struct nkv_result r;

	alarm(30);
	up(&so);
	cr_expect_eq(wait_ms(qp), 6500u);
	cr_assert_eq(nkv_store(qp, "slow", 4, "v", 1, 0, &r), 0, "no client timeout");
	cr_expect_eq(r.status, 0);
	cr_expect_eq(nkv_qpair_failed(qp), NKV_QP_OK);
}
