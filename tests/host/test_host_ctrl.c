/* SPDX-License-Identifier: MIT */
/*
 * Connect, bring-up and failure handling end to end over vfio-user: bad
 * URIs and options, nobody listening, an NVM-only controller, a paused
 * controller (admin timeout, dead afterwards), a server killed mid-run,
 * and queue pair reset after a forced device-side and sync timeout.
 * Every case finishes in bounded time.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "host_util.h"
#include "nkv_cpu.h"
#include "nkv_dev.h"
#include "host/qpair_check.h"

Test(host_ctrl, bad_uris_and_options)
{
	struct nkv_ctrl_opts o = { .size = sizeof(o) };
	struct nkv_ctrl *c = (struct nkv_ctrl *)1;
	char err[200];

	o.err = err;
	o.errlen = sizeof(err);
	cr_expect_eq(nkv_ctrl_connect("rdma:127.0.0.1", &o, &c), -EPROTONOSUPPORT);
	cr_expect_null(c);
	cr_expect_neq(err[0], 0, "a reason");
	c = (struct nkv_ctrl *)1;
	err[0] = 0;
	cr_expect_eq(nkv_ctrl_connect("tcp:127.0.0.1", &o, &c), -EINVAL, "a tcp: URI needs a port");
	cr_expect_null(c);
	cr_expect_neq(strstr(err, "port"), NULL, "%s", err);
	cr_expect_eq(nkv_ctrl_connect("no-scheme", &o, &c), -EINVAL);
	cr_expect_eq(nkv_ctrl_connect(NULL, &o, &c), -EINVAL);
	cr_expect_eq(nkv_ctrl_connect("vfio-user:/tmp/x", &o, NULL), -EINVAL);
	o.memory_mode = 0x10;
	cr_expect_eq(nkv_ctrl_connect("vfio-user:/tmp/x", &o, &c), -EINVAL);
	cr_expect_neq(strstr(err, "memory mode"), NULL, "%s", err);
	o.memory_mode = 0;
	o.size = 4;
	cr_expect_eq(nkv_ctrl_connect("vfio-user:/tmp/x", &o, &c), -EINVAL);
	/* No nkv.ko here: the pcie transport says so, nothing crashes. */
	o.size = sizeof(o);
	cr_expect_lt(nkv_ctrl_connect("pcie:/dev/nkv-none", &o, &c), 0);
	cr_expect_neq(err[0], 0);
	cr_expect_lt(nkv_ctrl_connect("pcie:0000:ff:1f.7", &o, &c), 0);
}

Test(host_ctrl, nobody_listening)
{
	alarm(10);	/* a hang becomes a crash, not a stuck suite */
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct nkv_ctrl_opts o = { .size = sizeof(o) };
	struct nkv_ctrl *c;
	char err[200] = "";
	uint64_t t0 = tl_now_ms();
	int fd;

	o.err = err;
	o.errlen = sizeof(err);
	cr_expect_eq(nkv_ctrl_connect("vfio-user:/tmp/nkv-host-test-none.sock", &o, &c), -ENOENT);
	cr_expect_neq(strstr(err, "nkv-host-test-none.sock"), NULL, "%s", err);
	/* A bound socket nobody listens on. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/nkv-host-test-nl-%d.sock", (int)getpid());
	unlink(sa.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	{
		char uri[160];

		snprintf(uri, sizeof(uri), "vfio-user:%s", sa.sun_path);
		cr_expect_eq(nkv_ctrl_connect(uri, &o, &c), -ECONNREFUSED, "%s", err);
	}
	close(fd);
	unlink(sa.sun_path);
	cr_expect_lt(tl_now_ms() - t0, 2000, "refused at once");
}

Test(host_ctrl, nvm_namespace)
{
	struct ht_server_opts so = { .nvm_only = 1, .capacity = 1u << 24 };
	struct tl_server s;
	struct nkv_ctrl_info in;
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	struct nkv_result r;
	char err[200] = "";

	cr_assert_eq(ht_server_start(&s, &so), 0);
	cr_assert_eq(ht_connect(&s, 0, 1, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nkv_ctrl_get_info(c, &in), 0);
	cr_expect_eq(in.csi, 0, "NVM when no KV namespace exists");
	cr_expect_eq(in.block_size, 4096);
	cr_expect_eq(in.capacity, (1u << 24) / 4096u);
	cr_assert_eq(nkv_qpair_create(c, NULL, &q), 0);
	/* KV on an NVM namespace: the controller's status, unchanged. */
	cr_assert_eq(nkv_store(q, "k", 1, "v", 1, 0, &r), 0);
	cr_expect_neq(r.status, 0);
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	tl_server_stop(&s);
}

/* A controller whose descriptor list leaves out the CSI descriptor of an
 * NVM namespace: Identify Namespace tells the command set instead. */
Test(host_ctrl, nvm_namespace_without_csi_descriptor)
{
	struct ht_server_opts so = { .nvm_only = 1, .capacity = 1u << 24,
				     .quirks = NKV_TGT_QUIRK_NO_CSI_DESC };
	struct tl_server s;
	struct nkv_ctrl_info in;
	struct nkv_ns_info ns[4];
	struct nkv_ctrl *c;
	char err[200] = "";

	cr_assert_eq(ht_server_start(&s, &so), 0);
	cr_assert_eq(ht_connect(&s, 0, 1, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nkv_ctrl_get_info(c, &in), 0);
	cr_expect_eq(in.nsid, 1);
	cr_expect_eq(in.csi, 0, "Identify Namespace should have said NVM");
	cr_expect_eq(in.block_size, 4096);
	cr_assert_eq(nkv_ctrl_namespaces(c, ns, 4), 1);
	cr_expect_eq(ns[0].csi, 0);
	nkv_ctrl_close(c);
	tl_server_stop(&s);
}

/* A controller that fails (CSTS.CFS) but goes on completing commands, as
 * the one in issue 19 did: connect says so instead of carrying on. */
Test(host_ctrl, failed_controller_refused)
{
	struct ht_server_opts so = { .quirks = NKV_TGT_QUIRK_FAIL_ON_READY };
	struct tl_server s;
	struct nkv_ctrl *c = NULL;
	char err[200] = "";

	cr_assert_eq(ht_server_start(&s, &so), 0);
	cr_expect_eq(ht_connect(&s, 0, 1, &c, err, sizeof(err)), -EIO, "%s", err);
	cr_expect_null(c);
	cr_expect(strstr(err, "CSTS 0x3") && strstr(err, "CFS"), "error names CSTS: %s", err);
	tl_server_stop(&s);
}

/* A controller that fails in use while still completing commands: the
 * admin command whose completion comes with CFS fails with -EIO (CSTS is
 * read after every completion), and the controller is dead from then on. */
Test(host_ctrl, controller_failing_in_use)
{
	struct ht_server_opts so = { .quirks = NKV_TGT_QUIRK_FAIL_ON_CREATE_SQ };
	struct tl_server s;
	struct nkv_ctrl *c = NULL;
	struct nkv_qpair *q = NULL;
	struct nkv_ns_info ns[2];
	char err[200] = "";

	cr_assert_eq(ht_server_start(&s, &so), 0);
	cr_assert_eq(ht_connect(&s, 0, 1, &c, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(nkv_qpair_create(c, NULL, &q), -EIO, "the completion came with CFS");
	cr_expect_null(q);
	cr_expect_eq(nkv_ctrl_namespaces(c, ns, 2), -ENOTCONN, "dead from then on");
	nkv_ctrl_close(c);
	tl_server_stop(&s);
}

/* Discovery lists every namespace with its own command set and limits. */
Test(host_ctrl, namespaces_listed)
{
	struct tl_server s;
	struct nkv_ns_info ns[4];
	struct nkv_ctrl_info in;
	struct nkv_ctrl *c;
	char err[200] = "";
	int n;

	cr_assert_eq(ht_server_start(&s, NULL), 0);
	cr_assert_eq(ht_connect(&s, 0, 1, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nkv_ctrl_get_info(c, &in), 0);
	n = nkv_ctrl_namespaces(c, ns, 4);
	cr_assert_eq(n, 1);
	cr_expect_eq(ns[0].nsid, in.nsid);
	cr_expect_eq(ns[0].csi, 1, "KV");
	cr_expect_eq(ns[0].max_key, NKV_KEY_MAX, "nkv-target's KML");
	cr_expect_eq(ns[0].max_value, in.max_value);
	cr_expect_eq(ns[0].capacity, in.capacity);
	/* max 0 only counts; a NULL array with room is refused. */
	cr_expect_eq(nkv_ctrl_namespaces(c, NULL, 0), 1);
	cr_expect_eq(nkv_ctrl_namespaces(c, NULL, 4), -EINVAL);
	nkv_ctrl_close(c);
	tl_server_stop(&s);
}

Test(host_ctrl, queue_limits)
{
	struct ht_server_opts so = { .max_ioq = 2, .mqes = 64 };
	struct nkv_qpair_opts qo = { .size = sizeof(qo) };
	struct tl_server s;
	struct nkv_ctrl_info in;
	struct nkv_ctrl *c;
	struct nkv_qpair *q[3];

	cr_assert_eq(ht_server_start(&s, &so), 0);
	cr_assert_eq(ht_connect(&s, 0, 8, &c, NULL, 0), 0);
	cr_assert_eq(nkv_ctrl_get_info(c, &in), 0);
	cr_expect_eq(in.io_queues, 2, "granted, not asked");
	cr_expect_eq(in.mqes, 64);
	qo.depth = 65;
	cr_expect_eq(nkv_qpair_create(c, &qo, &q[0]), -EINVAL, "deeper than CAP.MQES");
	qo.depth = 1;
	cr_expect_eq(nkv_qpair_create(c, &qo, &q[0]), -EINVAL);
	qo.depth = 0;
	qo.slot_size = (64u << 20) + 1;	/* the default max value, 64 MiB, + 1 */
	cr_expect_eq(nkv_qpair_create(c, &qo, &q[0]), -EMSGSIZE, "slot above min(MDTS, MVL)");
	qo.slot_size = 0;
	cr_assert_eq(nkv_qpair_create(c, &qo, &q[0]), 0);
	cr_expect_eq(nkv_qpair_dev(q[0])->sq_depth, 64, "default depth min(256, MQES)");
	cr_expect_eq(nkv_qpair_dev(q[0])->nr_slots, 63);
	cr_expect_eq(nkv_dev_qp_check(nkv_qpair_dev(q[0])), 0);
	cr_assert_eq(nkv_qpair_create(c, &qo, &q[1]), 0);
	cr_expect_eq(nkv_qpair_create(c, &qo, &q[2]), -EBUSY, "all granted queues in use");
	nkv_qpair_destroy(q[0]);
	cr_assert_eq(nkv_qpair_create(c, &qo, &q[2]), 0, "a freed queue id is reused");
	cr_expect_eq(nkv_qpair_dev(q[2])->qid, 1);
	nkv_ctrl_close(c);	/* destroys q[1], q[2] */
	tl_server_stop(&s);
}

/* A stopped controller process: an admin command times out, then the
 * controller is dead and every call fails at once. */
Test(host_ctrl, paused_controller)
{
	alarm(20);	/* a hang becomes a crash, not a stuck suite */
	struct nkv_ctrl_opts o = { .size = sizeof(o) };
	struct tl_server s;
	struct nkv_ctrl *c;
	struct nkv_qpair *q, *q2;
	uint64_t t0;
	char err[200] = "";
	int rc;

	/* Register reads are messages: bound them tighter than 5 s too. */
	setenv("NKV_VFU_TIMEOUT_MS", "1000", 1);
	cr_assert_eq(ht_server_fork(&s, NULL), 0);
	o.timeout_ms = 500;
	o.io_queues = 2;
	o.err = err;
	o.errlen = sizeof(err);
	cr_assert_eq(nkv_ctrl_connect(s.uri, &o, &c), 0, "%s", err);
	cr_assert_eq(nkv_qpair_create(c, NULL, &q), 0);
	kill(s.pid, SIGSTOP);
	/* Stopped for sure before the next command goes out. */
	cr_assert_eq(waitpid(s.pid, &rc, WUNTRACED), s.pid);
	cr_assert(WIFSTOPPED(rc));
	t0 = tl_now_ms();
	rc = nkv_qpair_reset(q);
	cr_expect(rc == -ETIMEDOUT || rc == -ENOTCONN, "reset against a stopped controller: %d", rc);
	cr_expect_lt(tl_now_ms() - t0, 3000);
	t0 = tl_now_ms();
	cr_expect_eq(nkv_qpair_create(c, NULL, &q2), -ENOTCONN, "dead afterwards");
	cr_expect_lt(tl_now_ms() - t0, 100);
	kill(s.pid, SIGCONT);
	t0 = tl_now_ms();
	nkv_ctrl_close(c);
	cr_expect_lt(tl_now_ms() - t0, 3000, "close is bounded");
	tl_server_kill(&s);
}

struct store_lane {
	struct nkv_dev_qp *qp;
	int err[64];
	uint16_t status[64];
};

static void store_lane_fn(void *arg)
{
	struct store_lane *a = arg;
	const struct nkv_wave w = nkv_wave_enter();
	uint32_t lane = w.lane;
	char key[16];
	int n = snprintf(key, sizeof(key), "lane%u", lane);
	struct nkv_dev_result res =
		nkv_wave_store(w, a->qp, 1, nkv_wave_slot(w, 0), key, (uint32_t)n, 0, 100);

	a->err[lane] = res.err;
	a->status[lane] = res.status;
}

static void launch_store(struct nkv_qpair *q, struct store_lane *a, uint32_t w)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), NKV_CPU_FIBERS, 1, w, 0 };

	memset(a, 0, sizeof(*a));
	a->qp = nkv_qpair_dev(q);
	cr_assert_eq(nkv_cpu_launch(&cfg, store_lane_fn, a), 0);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* poll_budget 0: device waits are bounded by wall clock alone. A backend
 * that holds every op 600 ms against a 100 ms timeout: every lane times
 * out after about 100 ms (a correctness window, not a speed figure). The
 * held ops are let finish before the server stops (a stop with ops still
 * held by the delay backend is the target's business, not this test's). */
Test(host_ctrl, device_timeout_is_wall_clock)
{
	alarm(30);
	struct ht_server_opts so = { .delay_hold_us = 600000 };
	struct nkv_qpair_opts qo = { .size = sizeof(qo), .poll_budget = 0, .timeout_ms = 100 };
	struct store_lane a;
	struct tl_server s;
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	double t0, dt;
	int i;

	cr_assert_eq(ht_server_start(&s, &so), 0);
	cr_assert_eq(ht_connect(&s, 0, 1, &c, NULL, 0), 0);
	cr_assert_eq(nkv_qpair_create(c, &qo, &q), 0);
	cr_expect_eq(nkv_qpair_dev(q)->poll_budget, UINT64_MAX, "no poll count");
	cr_expect_eq(nkv_qpair_dev(q)->timeout_us, 100000u);
	t0 = now_s();
	launch_store(q, &a, 4);
	dt = now_s() - t0;
	for (i = 0; i < 4; i++)
		cr_expect_eq(a.err[i], NKV_ETIMEDOUT, "lane %d: %d", i, a.err[i]);
	cr_expect(dt >= 0.09 && dt < 1.5, "timed out after %.3f s, asked for 0.1 s", dt);
	cr_expect_eq(nkv_qpair_failed(q), NKV_QP_FAILED_TIMEOUT);
	usleep(700000);
	nkv_ctrl_close(c);
	tl_server_stop(&s);
}

/* The server dies mid-run: calls fail in bounded time, nothing hangs. */
Test(host_ctrl, server_killed)
{
	alarm(30);	/* a hang becomes a crash, not a stuck suite */
	struct nkv_qpair_opts qo = { .size = sizeof(qo), .poll_budget = 200000 };
	struct store_lane a;
	struct tl_server s;
	struct nkv_ctrl *c;
	struct nkv_qpair *q, *q2;
	struct nkv_result r;
	uint64_t t0;
	int rc, i;

	cr_assert_eq(ht_server_fork(&s, NULL), 0);
	cr_assert_eq(ht_connect(&s, 0x8, 2, &c, NULL, 0), 0);
	cr_assert_eq(nkv_qpair_create(c, &qo, &q), 0);
	cr_assert_eq(nkv_qpair_create(c, &qo, &q2), 0);
	for (i = 0; i < 20; i++) {
		cr_assert_eq(nkv_store(q, "alive", 5, &i, sizeof(i), 0, &r), 0);
		cr_assert_eq(r.status, 0);
	}
	tl_server_kill(&s);
	t0 = tl_now_ms();
	rc = nkv_store(q, "dead", 4, "x", 1, 0, &r);
	cr_expect_eq(rc, -ENOTCONN, "store after the kill: %d", rc);
	cr_expect_lt(tl_now_ms() - t0, 2000);
	cr_expect_eq(nkv_retrieve(q, "dead", 4, &i, 4, &r), -ENOTCONN, "the queue pair stays failed");
	/* Device code on the other queue pair: the watch failed it too. */
	t0 = tl_now_ms();
	launch_store(q2, &a, 8);
	for (i = 0; i < 8; i++)
		cr_expect_eq(a.err[i], NKV_ENOTCONN, "lane %d: %d", i, a.err[i]);
	cr_expect_eq(nkv_dev_qp_failed(nkv_qpair_dev(q2)), NKV_QP_FAILED_GONE);
	cr_expect_lt(tl_now_ms() - t0, 2000);
	t0 = tl_now_ms();
	rc = nkv_qpair_reset(q2);
	cr_expect(rc == -ENOTCONN || rc == -ETIMEDOUT, "reset without a controller: %d", rc);
	cr_expect_neq(nkv_dev_qp_failed(nkv_qpair_dev(q2)), 0, "still failed");
	nkv_ctrl_close(c);
	cr_expect_lt(tl_now_ms() - t0, 5000, "reset and close are bounded");
}

/* A controller whose backend holds every op 300 ms: a tiny poll budget
 * and a short sync timeout both fail the queue pair; reset brings it
 * back and the next commands complete. */
Test(host_ctrl, reset_after_timeout)
{
	alarm(30);	/* a hang becomes a crash, not a stuck suite */
	struct ht_server_opts so = { .delay_hold_us = 300000 };
	struct nkv_qpair_opts qo = { .size = sizeof(qo), .poll_budget = 2000, .timeout_ms = 50 };
	struct nkv_qpair_stats st;
	struct store_lane a;
	struct tl_server s;
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	struct nkv_result r;
	uint32_t v = 0;
	int i;

	cr_assert_eq(ht_server_start(&s, &so), 0);
	cr_assert_eq(ht_connect(&s, 0xf, 1, &c, NULL, 0), 0);
	cr_assert_eq(nkv_qpair_create(c, &qo, &q), 0);
	/* Device side: every lane times out, the queue pair is failed. */
	launch_store(q, &a, 8);
	for (i = 0; i < 8; i++)
		cr_expect_eq(a.err[i], NKV_ETIMEDOUT, "lane %d: %d", i, a.err[i]);
	cr_expect_eq(nkv_dev_qp_failed(nkv_qpair_dev(q)), NKV_QP_FAILED_TIMEOUT);
	cr_expect_eq(nkv_qpair_failed(q), NKV_QP_FAILED_TIMEOUT, "the host-visible word");
	cr_expect_eq(nkv_store(q, "k", 1, "v", 1, 0, &r), -EIO, "failed until reset");
	cr_assert_eq(nkv_qpair_reset(q), 0);
	cr_expect_eq(nkv_dev_qp_failed(nkv_qpair_dev(q)), 0);
	cr_expect_eq(nkv_qpair_failed(q), 0);
	cr_expect_eq(nkv_qpair_dev(q)->inflight, 0);
	cr_expect_eq(nkv_qpair_dev(q)->cids_held, 0);
	cr_expect_eq(nkv_dev_qp_check(nkv_qpair_dev(q)), 0);
	/* Sync side: 50 ms against a 300 ms backend. */
	cr_expect_eq(nkv_store(q, "k", 1, "v", 1, 0, &r), -ETIMEDOUT);
	cr_assert_eq(nkv_qpair_get_stats(q, &st), 0);
	cr_expect_eq(st.timeouts, 1);
	cr_assert_eq(nkv_qpair_reset(q), 0);
	/* Patient now: the descriptor's setup half is the host's to set. */
	nkv_qpair_dev(q)->poll_budget = 1ull << 40;
	nkv_qpair_dev(q)->timeout_us = 0;
	launch_store(q, &a, 8);
	for (i = 0; i < 8; i++) {
		cr_expect_eq(a.err[i], 0, "lane %d: %d", i, a.err[i]);
		cr_expect_eq(a.status[i], 0);
	}
	cr_expect_eq(nkv_dev_qp_failed(nkv_qpair_dev(q)), 0);
	nkv_qpair_destroy(q);
	qo.timeout_ms = 5000;
	cr_assert_eq(nkv_qpair_create(c, &qo, &q), 0);
	cr_assert_eq(nkv_retrieve(q, "lane3", 5, &v, sizeof(v), &r), 0);
	cr_expect_eq(r.status, 0);
	cr_expect_eq(r.dw0, 100, "the store after the reset landed");
	nkv_ctrl_close(c);
	tl_server_stop(&s);
}
