// SPDX-License-Identifier: MIT
/*
 * test_faults - issue 35's table of faults: each fault (a row) against
 * each client (a column) that can meet it, with what the client must
 * give (exit status or return code, a stable part of the first line it
 * says, the longest it may take to give up), measured and printed one
 * line per cell (fault_table.h), so the CI log holds the table. The
 * same table is docs/host.md's "Faults"; the stopped cluster's row is in
 * tests/rados/test_rados_e2e.c, where a cluster runs.
 *
 * Clients: nkv-bench --engine cpu and two examples (batch_store_retrieve,
 * first_retrieve), real processes built next to this test; the sync API
 * and device code (a 32-lane wave on the cpu engine) in this process.
 * The controller: nkv-target, forked (so it can be killed or stopped),
 * with a backend that holds each op 3 s (the batch is surely in flight
 * when the fault comes), raises CSTS.CFS on the 33rd command (cfs_be.h),
 * or lies (liar_be.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fault_table.h"
#include "host_util.h"
#include "nkv_cpu.h"
#include "nkv_dev.h"
#include "nkv_list.h"

#define FT_HOLD_US 3000000u	/* kill, stop: each op held this long */
#define FT_FAULT_MS 500u	/* kill, stop: this long after the client starts */
#define FT_CFS_AFTER 32u	/* CFS on the 33rd command: a wave's second batch */
#define FT_LANES 32u
#define FT_RUN_MS 60000u	/* a program that runs longer is killed */

enum ft_fault { FT_KILL, FT_STOP, FT_CFS, FT_DW0, FT_LIST };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the controller, and the fault ---- */

struct ft_env {
	enum ft_fault f;
	struct tl_server s;
	pthread_t th;
	int timed;		/* kill or stop from a thread */
};

static void *ft_fault_main(void *arg)
{
	struct ft_env *e = arg;

	usleep(FT_FAULT_MS * 1000u);
	if (e->f == FT_KILL)
		tl_server_kill(&e->s);
	else
		kill(e->s.pid, SIGSTOP);
	return NULL;
}

static void ft_env_start(struct ft_env *e, enum ft_fault f)
{
	struct ht_server_opts o = { 0 };

	memset(e, 0, sizeof(*e));
	e->f = f;
	e->timed = f == FT_KILL || f == FT_STOP;
	o.delay_hold_us = e->timed ? FT_HOLD_US : 0;
	o.cfs_after = f == FT_CFS ? FT_CFS_AFTER : 0;
	o.lie_retrieve = f == FT_DW0;
	o.lie_list = f == FT_LIST;
	cr_assert_eq(f == FT_DW0 || f == FT_LIST ? ht_server_start(&e->s, &o)
						 : ht_server_fork(&e->s, &o), 0);
}

/* The fault starts now (kill, stop: FT_FAULT_MS from now). */
static void ft_env_go(struct ft_env *e)
{
	if (e->timed)
		cr_assert_eq(pthread_create(&e->th, NULL, ft_fault_main, e), 0);
}

static void ft_env_join(struct ft_env *e)
{
	if (e->timed)
		pthread_join(e->th, NULL);
	e->timed = 0;
}

static void ft_env_end(struct ft_env *e)
{
	ft_env_join(e);
	tl_server_stop(&e->s);	/* a child: SIGKILL, stopped or not */
}

/* ---- nkv-bench and the examples: real processes ---- */

/* Lines every run prints, whatever happens: not the message. */
static const char *const ft_bench_report[] = {
	"nkv-bench: store, ", "nkv-bench: retrieve, ", "nkv-bench: list, ", "  ", "results: ",
	NULL
};
/* The library's note that host memory stands in for VRAM (no GPU here). */
static const char *const ft_example_report[] = { "nkv: memory-mode 0x8: no GPU", NULL };

static void ft_bench(struct ft_env *e, struct ft_cell *c)
{
	const char *args[24] = { "--engine", "cpu", "--quiet", "--target", e->s.uri,
				 "--iterations", "1", "--num-keys", "256", "--batch-size", "16" };
	size_t n = 11;
	struct tool_run r;

	if (e->f == FT_DW0 || e->f == FT_LIST)
		args[8] = e->f == FT_DW0 ? "32" : "16";	/* --num-keys */
	args[n++] = "--kv-op";
	args[n++] = e->f == FT_DW0 ? "retrieve" : e->f == FT_LIST ? "list" : "store";
	if (e->f == FT_STOP || e->f == FT_CFS) {
		args[n++] = "--timeout-ms";
		args[n++] = "1000";
	}
	args[n] = NULL;
	ft_env_go(e);
	cr_assert_eq(tool_run(&r, "nkv-bench", args, NULL, FT_RUN_MS), 0, "%s", r.out);
	ft_from_run(c, &r, ft_bench_report);
}

static void ft_example(struct ft_env *e, struct ft_cell *c, const char *prog)
{
	const char *args[] = { e->s.uri, NULL };
	struct tool_run r;

	ft_env_go(e);
	cr_assert_eq(tool_run(&r, prog, args, NULL, FT_RUN_MS), 0, "%s", r.out);
	ft_from_run(c, &r, ft_example_report);
}

/* ---- in this process: the sync API and a wave ---- */

static struct nkv_qpair *ft_qpair(struct ft_env *e, struct nkv_ctrl **c)
{
	struct nkv_qpair_opts qo = { .size = sizeof(qo), .depth = 128, .slots = 64,
				     .timeout_ms = e->f == FT_KILL ? 10000 : 1000 };
	struct nkv_qpair *q;
	char err[256] = "";

	cr_assert_eq(ht_connect(&e->s, 0, 1, c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nkv_qpair_create(*c, &qo, &q), 0);
	return q;
}

/* A payload's outcome as the caller's check sees it (nkv_list_check_at). */
static void ft_list_code(char *code, size_t len, const void *buf, uint32_t n)
{
	uint32_t entry = 0, off = 0;
	int k = nkv_list_check_at(buf, n, &entry, &off);

	if (k >= 0)
		snprintf(code, len, "%d keys", k);
	else
		snprintf(code, len, "%s at entry %u, byte %u", ft_nkv_err(k), entry, off);
}

/* One call of the sync API that meets the fault (CFS: the first of a run
 * of Stores that fails); its return code (and result), its time. */
static void ft_sync(struct ft_env *e, struct ft_cell *c)
{
	static char val[4096], buf[4096];
	struct nkv_ctrl *ctrl;
	struct nkv_qpair *q = ft_qpair(e, &ctrl);
	struct nkv_result r = { 0 };
	char key[16], pay[96];
	double t0 = now_s();
	int rc = 0, i;

	ft_log_reset();
	if (e->f == FT_KILL || e->f == FT_STOP) {
		ft_env_go(e);
		rc = nkv_store(q, "held", 4, "v", 1, 0, &r);
	} else if (e->f == FT_CFS) {
		for (i = 0; i < 64 && !rc; i++) {
			snprintf(key, sizeof(key), "cfs%d", i);
			t0 = now_s();
			rc = nkv_store(q, key, (uint32_t)strlen(key), "v", 1, 0, &r);
		}
	} else {
		cr_assert_eq(nkv_store(q, "abc", 3, val, sizeof(val), 0, &r), 0);
		t0 = now_s();
		rc = e->f == FT_DW0 ? nkv_retrieve(q, "abc", 3, buf, sizeof(buf), &r)
				    : nkv_list(q, NULL, 0, buf, sizeof(buf), &r);
	}
	c->secs = now_s() - t0;
	if (rc) {
		snprintf(c->code, sizeof(c->code), "%s", ft_errno(rc));
	} else if (e->f == FT_LIST) {
		ft_list_code(pay, sizeof(pay), buf, sizeof(buf));
		snprintf(c->code, sizeof(c->code), "0, status %#x, %s", r.status, pay);
	} else
		snprintf(c->code, sizeof(c->code), "0, status %#x, dw0 %u", r.status, r.dw0);
	ft_log_first(c->line, sizeof(c->line));
	ft_env_join(e);
	if (e->f != FT_DW0 && e->f != FT_LIST)
		tl_server_stop(&e->s);	/* close then sees the connection gone */
	nkv_ctrl_close(ctrl);
}

struct ft_wave {
	struct nkv_dev_qp *qp;
	enum ft_fault f;
	struct nkv_dev_result res[FT_LANES];
	char code[FT_LANES][96];
};

/* DW0 of a List is its key count: the payload is checked in the whole slot. */
static void ft_wave_list_code(char *code, size_t len, struct nkv_dev_result r, const void *v)
{
	char pay[64];

	ft_list_code(pay, sizeof(pay), v, 4096);
	snprintf(code, len, "status %#x, %s", r.status, pay);
}

/* Every lane: the command that meets the fault; the last one's result. */
static void ft_wave_lane(void *arg)
{
	struct ft_wave *a = arg;
	const struct nkv_wave w = nkv_wave_enter();
	uint32_t l = nkv_wave_rank(w), slot = nkv_wave_slot(w, 0);
	uint8_t *v = nkv_dev_value(a->qp, slot);
	struct nkv_dev_result r;
	char key[16];
	uint32_t n = (uint32_t)snprintf(key, sizeof(key), "wave%u", l);

	memset(v, (int)l, 64);
	r = nkv_wave_store(w, a->qp, 1, slot, key, n, 0, 64);
	if (a->f == FT_CFS)	/* the second batch: commands 33..64 */
		r = nkv_wave_store(w, a->qp, 1, slot, key, n, 0, 64);
	else if (a->f == FT_DW0)
		r = nkv_wave_retrieve(w, a->qp, 1, slot, key, n);
	else if (a->f == FT_LIST)
		r = nkv_wave_list(w, a->qp, 1, slot, NULL, 0);
	a->res[l] = r;
	if (r.err)
		snprintf(a->code[l], sizeof(a->code[l]), "err %s", ft_nkv_err(r.err));
	else if (a->f == FT_LIST)
		ft_wave_list_code(a->code[l], sizeof(a->code[l]), r, v);
	else
		snprintf(a->code[l], sizeof(a->code[l]), "status %#x, dw0 %u", r.status, r.dw0);
}

/* A wave of 32 lanes: every lane's result must be the same. */
static void ft_wave(struct ft_env *e, struct ft_cell *c)
{
	static struct ft_wave a;
	struct nkv_cpu_cfg cfg = { sizeof(cfg), NKV_CPU_FIBERS, 1, FT_LANES, 0 };
	struct nkv_ctrl *ctrl;
	struct nkv_qpair *q = ft_qpair(e, &ctrl);
	double t0;
	uint32_t i;

	memset(&a, 0, sizeof(a));
	a.qp = nkv_qpair_dev(q);
	a.f = e->f;
	ft_log_reset();
	ft_env_go(e);
	t0 = now_s();
	cr_assert_eq(nkv_cpu_launch(&cfg, ft_wave_lane, &a), 0);
	c->secs = now_s() - t0;
	snprintf(c->code, sizeof(c->code), "%s", a.code[0]);
	for (i = 1; i < FT_LANES; i++)
		if (strcmp(a.code[i], a.code[0]))
			snprintf(c->code, sizeof(c->code), "lanes differ: 0 %s, %u %s", a.code[0], i,
				 a.code[i]);
	ft_log_first(c->line, sizeof(c->line));
	ft_env_join(e);
	if (e->f != FT_DW0 && e->f != FT_LIST)
		tl_server_stop(&e->s);
	nkv_ctrl_close(ctrl);
}

/* ---- the table ---- */

enum ft_client { FT_BENCH, FT_SYNC, FT_WAVE, FT_EX_BATCH, FT_EX_FIRST, FT_NCLIENTS };

static const char *const ft_clients[FT_NCLIENTS] = {
	"nkv-bench --engine cpu", "sync API", "device code (32-lane wave)",
	"example batch_store_retrieve_cpu", "example first_retrieve_cpu",
};

struct ft_want {
	const char *code;
	const char *line;	/* a part of the first line; "" = none */
	double max_s;
	const char *left_out;	/* the cell does not apply: why */
};

struct ft_row {
	const char *fault;
	struct ft_want want[FT_NCLIENTS];
};

#define FT_GONE_LINE "nkv: controller gone: its connection closed; its queue pairs are failed"
#define FT_TMO_LINE "nkv-bench: FAILED: timed out: no completion within --timeout-ms 1000 ms"

/*
 * Kill and stop come 0.5 s into the run, while the first batch is held;
 * CFS on the 33rd command. Times: a program's from start to exit, an
 * in-process call's from its start. After a timeout, a program's
 * teardown (Delete SQ) waits one vfio-user message timeout (5 s) on a
 * stopped controller; the examples wait CAP.TO (3 s here) for I/O.
 * docs/host.md "Faults" is this table.
 */
static const struct ft_row ft_rows[] = {
	[FT_KILL] = { "socket closed mid-batch", {
		{ "exit 3", FT_GONE_LINE, 3.0, NULL },
		{ "-ENOTCONN", FT_GONE_LINE, 2.0, NULL },
		{ "err NKV_ENOTCONN", FT_GONE_LINE, 2.0, NULL },
		{ "exit 3", FT_GONE_LINE, 3.0, NULL },
		{ "exit 3", FT_GONE_LINE, 3.0, NULL },
	} },
	[FT_STOP] = { "controller stopped", {
		{ "exit 3", FT_TMO_LINE, 9.0, NULL },
		{ "-ETIMEDOUT", "", 2.5, NULL },
		{ "err NKV_ETIMEDOUT", "", 2.5, NULL },
		{ "exit 3", "store: key 0: did not run: no completion in time: timed out", 11.0, NULL },
		{ "exit 3", "lane  0 first-00: Store -110/0", 11.0, NULL },
	} },
	[FT_CFS] = { "CFS raised mid-run", {
		{ "exit 3", FT_TMO_LINE, 4.0, NULL },
		{ "-ETIMEDOUT", "", 2.5, NULL },
		{ "err NKV_ETIMEDOUT", "", 2.5, NULL },
		{ "exit 3", "store: key 32: did not run: no completion in time: timed out", 6.0, NULL },
		{ "exit 3", "lane  0 first-00: Store 0/0, Retrieve -110/0", 6.0, NULL },
	} },
	[FT_DW0] = { "DW0 = 0 on Retrieve", {
		{ "exit 1", "nkv-bench: FAILED: 32 values do not verify: the controller answered "
			    "DW0 = 0 for key 0 (nkvb-00) stored with 4096 bytes (the controller "
			    "misreports the value length)", 3.0, NULL },
		{ "0, status 0, dw0 0", "", 1.0, NULL },
		{ "status 0, dw0 0", "", 1.0, NULL },
		{ "exit 1", "retrieve: key 0: the controller returned length 0, not the 4096 "
			    "bytes stored", 3.0, NULL },
		{ "exit 1", "lane  0 first-00: Store 0/0, Retrieve 0/0, 0 bytes, 64 differ", 3.0,
		  NULL },
	} },
	[FT_LIST] = { "malformed List payload", {
		{ "exit 1", "nkv-bench: FAILED: 16 List payloads do not parse: the List payload "
			    "from key 0 (nkvb-00) stops parsing at entry 1, byte 12 (DW0 2)", 3.0,
		  NULL },
		{ "0, status 0, NKV_EBADMSG at entry 1, byte 12", "", 1.0, NULL },
		{ "status 0, NKV_EBADMSG at entry 1, byte 12", "", 1.0, NULL },
		{ NULL, NULL, 0, "the example sends no List" },
		{ NULL, NULL, 0, "the example sends no List" },
	} },
};

static void ft_run_cell(enum ft_fault f, enum ft_client k, struct ft_cell *c)
{
	struct ft_env e;

	ft_env_start(&e, f);
	if (k == FT_BENCH)
		ft_bench(&e, c);
	else if (k == FT_SYNC)
		ft_sync(&e, c);
	else if (k == FT_WAVE)
		ft_wave(&e, c);
	else
		ft_example(&e, c, k == FT_EX_BATCH ? "examples/batch_store_retrieve_cpu"
						   : "examples/first_retrieve_cpu");
	ft_env_end(&e);
}

static void ft_run_row(enum ft_fault f)
{
	const struct ft_row *row = &ft_rows[f];
	enum ft_client k;

	alarm(120);	/* a hang becomes a crash, not a stuck suite */
	ft_log_capture();
	for (k = 0; k < FT_NCLIENTS; k++) {
		const struct ft_want *w = &row->want[k];
		struct ft_cell c = { row->fault, ft_clients[k], w->code, w->line, w->max_s };

		if (w->left_out) {
			ft_left_out(row->fault, ft_clients[k], w->left_out);
			continue;
		}
		ft_run_cell(f, k, &c);
		cr_expect(ft_check(&c), "%s, %s: want %s '%s' <= %.1f s, got %s '%s' %.2f s",
			  c.fault, c.client, c.want_code, c.want_line, c.max_s, c.code, c.line,
			  c.secs);
	}
}

Test(faults, socket_closed_mid_batch, .timeout = 150) { ft_run_row(FT_KILL); }
Test(faults, controller_stopped, .timeout = 150) { ft_run_row(FT_STOP); }
Test(faults, cfs_raised_mid_run, .timeout = 150) { ft_run_row(FT_CFS); }
Test(faults, dw0_zero_on_retrieve, .timeout = 150) { ft_run_row(FT_DW0); }
Test(faults, malformed_list_payload, .timeout = 150) { ft_run_row(FT_LIST); }
