/* SPDX-License-Identifier: MIT */
/*
 * A controller that is gone, or stalled, as the host library's watch
 * (src/host/watch.c) and the synchronous API's wait (src/host/sync.c)
 * see it: nkv-target (a forked process) SIGKILLed while device code on
 * the cpu engine waits in a wave and in a block batch, and while a sync
 * call waits: every wait ends with (NKV_)ENOTCONN and the queue pair says
 * NKV_QP_FAILED_GONE, long before its 10 s timeout. A SIGSTOPped target:
 * the sync call waits out its timeout (-ETIMEDOUT) at a few percent of a
 * core at most. Registers that read CSTS.CFS or all-ones (a pcie
 * controller's way to fail or vanish; a test transport over vfio-user
 * gives them here): the same as a closed connection. Times and CPU use
 * are printed; bounds are generous ("ends within"), the figures that
 * matter are in docs/host.md.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host/host.h"
#include "host_util.h"
#include "nkv_block.h"
#include "nkv_cpu.h"

#define GONE_TIMEOUT_MS 10000u	/* the queue pairs' own wait: the default's size */
#define GONE_HOLD_US 5000000u	/* the backend holds every op this long */
#define GONE_LANES 32u

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A forked nkv-target whose backend holds every op @hold_us, a
 * controller, one queue pair of depth 128 with 64 slots of 4 KiB. */
static void gone_setup(struct tl_server *s, unsigned hold_us, struct nkv_ctrl **c,
		       struct nkv_qpair **q)
{
	struct ht_server_opts so = { .delay_hold_us = hold_us };
	struct nkv_qpair_opts qo = { .size = sizeof(qo), .depth = 128, .slots = 64,
				     .timeout_ms = GONE_TIMEOUT_MS };
	char err[256] = "";

	cr_assert_eq(ht_server_fork(s, &so), 0);
	cr_assert_eq(ht_connect(s, 0, 1, c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nkv_qpair_create(*c, &qo, q), 0);
}

/* SIGKILLs the target @after_ms into a wait and notes when. */
struct killer {
	struct tl_server *s;
	unsigned after_ms;
	double at;
	pthread_t th;
};

static void *killer_main(void *arg)
{
	struct killer *k = arg;

	usleep(k->after_ms * 1000u);
	k->at = now_s();
	tl_server_kill(k->s);
	return NULL;
}

static void killer_start(struct killer *k, struct tl_server *s, unsigned after_ms)
{
	k->s = s;
	k->after_ms = after_ms;
	k->at = 0;
	cr_assert_eq(pthread_create(&k->th, NULL, killer_main, k), 0);
}

/* Seconds from the kill to @end; the killer is joined. */
static double killer_join(struct killer *k, double end)
{
	pthread_join(k->th, NULL);
	return end - k->at;
}

/* ---- device code: a wave, a block batch ---- */

struct gone_job {
	struct nkv_dev_qp *qp;
	int err[64];
};

static void gone_wave_lane(void *arg)
{
	struct gone_job *j = arg;
	const struct nkv_wave w = nkv_wave_enter();
	char key[16];
	int n = snprintf(key, sizeof(key), "wave%u", w.lane);

	j->err[w.lane] = nkv_wave_store(w, j->qp, 1, nkv_wave_slot(w, 0), key, (uint32_t)n, 0,
					100).err;
}

static void gone_block_lane(void *arg)
{
	struct gone_job *j = arg;
	NKV_BLOCK_SHARED(sh);
	const struct nkv_block b = nkv_block_enter(sh);
	uint32_t slot = nkv_block_slot(b, 0);
	char key[16];
	int n = snprintf(key, sizeof(key), "block%u", b.thread);

	j->err[b.thread] = nkv_block_exec(b, j->qp, 1,
					  nkv_dev_store(j->qp, slot, key, (uint32_t)n, 0, 100)).err;
}

/* Device code waits on a batch the target holds; the target is killed
 * 300 ms in. Every thread must get NKV_ENOTCONN well before the 10 s
 * timeout, and the queue pair say why. */
static void gone_device(const char *what, nkv_cpu_fn fn, uint32_t waves, uint32_t block)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), NKV_CPU_FIBERS, waves, GONE_LANES, 0 };
	struct gone_job j;
	struct killer k;
	struct tl_server s;
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	double dt, t0;
	uint32_t i, n = waves * GONE_LANES;

	alarm(30);	/* a hang becomes a crash, not a stuck suite */
	cfg.block_size = block;
	gone_setup(&s, GONE_HOLD_US, &c, &q);
	memset(&j, 0, sizeof(j));
	j.qp = nkv_qpair_dev(q);
	killer_start(&k, &s, 300);
	cr_assert_eq(nkv_cpu_launch(&cfg, fn, &j), 0);
	dt = killer_join(&k, now_s());
	printf("%s: %u threads ended %.1f ms after the target was killed (timeout %u ms)\n",
	       what, n, dt * 1e3, GONE_TIMEOUT_MS);
	for (i = 0; i < n; i++)
		cr_expect_eq(j.err[i], NKV_ENOTCONN, "%s thread %u: %d", what, i, j.err[i]);
	cr_expect_lt(dt, 2.0, "%s: the wait ended %.3f s after the kill", what, dt);
	cr_expect_eq(nkv_qpair_failed(q), NKV_QP_FAILED_GONE, "%s: %s", what,
		     nkv_qp_state_str(nkv_qpair_failed(q)));
	cr_expect_eq(nkv_dev_qp_failed(nkv_qpair_dev(q)), NKV_QP_FAILED_GONE, "device code adopted it");
	t0 = now_s();
	nkv_ctrl_close(c);
	cr_expect_lt(now_s() - t0, 2.0, "close is bounded");
}

Test(host_gone, wave_waiting_when_killed, .timeout = 40)
{
	gone_device("wave", gone_wave_lane, 1, 0);
}

Test(host_gone, block_batch_waiting_when_killed, .timeout = 40)
{
	gone_device("block of 2 waves", gone_block_lane, 2, 2 * GONE_LANES);
}

/* ---- the synchronous API ---- */

struct sync_call {
	struct nkv_qpair *q;
	int rc;
	double end;
	double cpu_s;	/* the calling thread's CPU time in the call */
};

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *sync_store_main(void *arg)
{
	struct sync_call *a = arg;
	struct nkv_result r;
	double cpu = thread_cpu_s();

	a->rc = nkv_store(a->q, "held", 4, "v", 1, 0, &r);
	a->end = now_s();
	a->cpu_s = thread_cpu_s() - cpu;
	return NULL;
}

/* A sync Store the target holds; the target is killed 300 ms in. */
Test(host_gone, sync_call_waiting_when_killed, .timeout = 40)
{
	struct sync_call a = { 0 };
	struct nkv_result r;
	struct killer k;
	struct tl_server s;
	struct nkv_ctrl *c;
	pthread_t th;
	double dt, t0;

	alarm(30);
	gone_setup(&s, GONE_HOLD_US, &c, &a.q);
	killer_start(&k, &s, 300);
	cr_assert_eq(pthread_create(&th, NULL, sync_store_main, &a), 0);
	pthread_join(th, NULL);
	dt = killer_join(&k, a.end);
	printf("sync call: %s %.1f ms after the target was killed (timeout %u ms)\n",
	       strerror(-a.rc), dt * 1e3, GONE_TIMEOUT_MS);
	cr_expect_eq(a.rc, -ENOTCONN, "%d (%s)", a.rc, strerror(-a.rc));
	cr_expect_lt(dt, 2.0, "the call ended %.3f s after the kill", dt);
	cr_expect_eq(nkv_qpair_failed(a.q), NKV_QP_FAILED_GONE, "%s",
		     nkv_qp_state_str(nkv_qpair_failed(a.q)));
	t0 = now_s();
	cr_expect_eq(nkv_retrieve(a.q, "held", 4, NULL, 0, &r), -ENOTCONN, "and every call after");
	cr_expect_lt(now_s() - t0, 0.1);
	nkv_ctrl_close(c);
}

/* A SIGSTOPped target is there but silent: the sync call waits out its
 * own timeout, sleeping, not spinning. */
Test(host_gone, sync_call_on_stopped_target_sleeps, .timeout = 40)
{
	struct nkv_qpair_opts qo = { .size = sizeof(qo), .timeout_ms = 2000 };
	struct sync_call a = { 0 };
	struct tl_server s;
	struct nkv_ctrl *c;
	struct nkv_result r;
	struct rusage ru0, ru1;
	double t0, wall, proc;
	int st;

	alarm(30);
	cr_assert_eq(ht_server_fork(&s, NULL), 0);
	cr_assert_eq(ht_connect(&s, 0, 1, &c, NULL, 0), 0);
	cr_assert_eq(nkv_qpair_create(c, &qo, &a.q), 0);
	cr_assert_eq(nkv_store(a.q, "warm", 4, "v", 1, 0, &r), 0, "the sync buffer exists");
	kill(s.pid, SIGSTOP);
	cr_assert_eq(waitpid(s.pid, &st, WUNTRACED), s.pid);
	cr_assert(WIFSTOPPED(st));
	getrusage(RUSAGE_SELF, &ru0);
	t0 = now_s();
	sync_store_main(&a);
	wall = a.end - t0;
	getrusage(RUSAGE_SELF, &ru1);
	proc = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec + ru1.ru_stime.tv_sec -
			ru0.ru_stime.tv_sec) +
	       (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec + ru1.ru_stime.tv_usec -
			ru0.ru_stime.tv_usec) / 1e6;
	printf("sync call on a stopped target: %s after %.3f s; CPU %.1f ms in the calling "
	       "thread (%.2f %% of a core), %.1f ms in the whole process with the watch "
	       "(%.2f %%)\n", strerror(-a.rc), wall, a.cpu_s * 1e3, 100.0 * a.cpu_s / wall,
	       proc * 1e3, 100.0 * proc / wall);
	cr_expect_eq(a.rc, -ETIMEDOUT, "%d", a.rc);
	cr_expect(wall > 1.9 && wall < 6.0, "timed out after %.3f s, asked for 2 s", wall);
	cr_expect_leq(a.cpu_s, 0.05 * wall, "the wait used %.1f %% of a core",
		      100.0 * a.cpu_s / wall);
	cr_expect_leq(proc, 0.05 * wall, "the process used %.1f %% of a core", 100.0 * proc / wall);
	cr_expect_eq(nkv_qpair_failed(a.q), NKV_QP_FAILED_TIMEOUT, "alive and silent: a timeout");
	kill(s.pid, SIGCONT);
	nkv_ctrl_close(c);
	tl_server_kill(&s);
}

/* ---- registers that say the controller failed or vanished ---- */

/*
 * A pcie controller fails with CSTS.CFS, or reads all-ones once off the
 * bus. Over vfio-user the watch reads no register (each is a message), so
 * a test transport stands in for pcie: vfio-user's table with mapped
 * registers and a CSTS that the test sets (reads of it send nothing).
 */
static struct nkv_transport_ops regs_ops;
static uint32_t regs_csts = NKV_CSTS_RDY;	/* atomic */

static int regs_read(struct nkv_tr *tr, uint32_t off, unsigned size, uint64_t *v)
{
	if (off != NKV_REG_CSTS)
		return nkv_transport_vfio_user.reg_read(tr, off, size, v);
	*v = __atomic_load_n(&regs_csts, __ATOMIC_ACQUIRE);
	return 0;
}

struct regs_flip {
	uint32_t csts;
	double at;
	pthread_t th;
};

static void *regs_flip_main(void *arg)
{
	struct regs_flip *f = arg;

	usleep(300000);
	f->at = now_s();
	__atomic_store_n(&regs_csts, f->csts, __ATOMIC_RELEASE);
	return NULL;
}

/* A wave waits on stores an in-process target holds 1.5 s; 300 ms in,
 * CSTS turns to @csts. */
static void regs_fail(uint32_t csts, int want_gone)
{
	struct ht_server_opts so = { .delay_hold_us = 1500000 };
	struct nkv_qpair_opts qo = { .size = sizeof(qo), .timeout_ms = GONE_TIMEOUT_MS };
	struct nkv_cpu_cfg cfg = { sizeof(cfg), NKV_CPU_FIBERS, 1, GONE_LANES, 0 };
	struct regs_flip f = { .csts = csts };
	struct nkv_qpair *q, *q2;
	struct tl_server s;
	struct nkv_ctrl *c;
	struct nkv_result r;
	struct gone_job j;
	double dt, t0;
	uint32_t i;

	alarm(30);
	__atomic_store_n(&regs_csts, NKV_CSTS_RDY, __ATOMIC_RELEASE);
	cr_assert_eq(ht_server_start(&s, &so), 0);
	cr_assert_eq(ht_connect(&s, 0, 1, &c, NULL, 0), 0);
	cr_assert_eq(nkv_qpair_create(c, &qo, &q), 0);
	/* The watch sees the test transport from its next start on. */
	nkv_h_watch_stop(c);
	regs_ops = nkv_transport_vfio_user;
	regs_ops.reg_read = regs_read;
	regs_ops.mapped_regs = 1;
	c->ops = &regs_ops;
	cr_assert_eq(nkv_h_watch_start(c), 0);
	memset(&j, 0, sizeof(j));
	j.qp = nkv_qpair_dev(q);
	cr_assert_eq(pthread_create(&f.th, NULL, regs_flip_main, &f), 0);
	cr_assert_eq(nkv_cpu_launch(&cfg, gone_wave_lane, &j), 0);
	pthread_join(f.th, NULL);
	dt = now_s() - f.at;
	printf("CSTS %#x: %u lanes ended %.1f ms after it was read (timeout %u ms)\n", csts,
	       GONE_LANES, dt * 1e3, GONE_TIMEOUT_MS);
	for (i = 0; i < GONE_LANES; i++)
		cr_expect_eq(j.err[i], NKV_ENOTCONN, "lane %u: %d", i, j.err[i]);
	cr_expect_lt(dt, 1.0, "the wait ended %.3f s after CSTS changed", dt);
	cr_expect_eq(nkv_qpair_failed(q), NKV_QP_FAILED_GONE);
	t0 = now_s();
	cr_expect_eq(nkv_store(q, "k", 1, "v", 1, 0, &r), -ENOTCONN);
	cr_expect_eq(nkv_qpair_create(c, &qo, &q2), -ENOTCONN, "the controller is dead");
	cr_expect_lt(now_s() - t0, 0.1);
	cr_expect_eq(__atomic_load_n(&c->gone, __ATOMIC_ACQUIRE), want_gone,
		     "all-ones: no register access any more; CFS: still reachable");
	usleep(1500000);	/* the held ops finish before the memory goes */
	nkv_ctrl_close(c);
	tl_server_stop(&s);
}

Test(host_gone, cfs_raised_mid_batch, .timeout = 40)
{
	regs_fail(NKV_CSTS_RDY | NKV_CSTS_CFS, 0);
}

Test(host_gone, registers_read_all_ones, .timeout = 40)
{
	regs_fail(0xffffffffu, 1);
}

Test(host_gone, state_names)
{
	cr_expect_str_eq(nkv_qp_state_str(NKV_QP_OK), "ok");
	cr_expect_not_null(strstr(nkv_qp_state_str(NKV_QP_FAILED_GONE), "controller gone"));
	cr_expect_not_null(strstr(nkv_qp_state_str(NKV_QP_FAILED_TIMEOUT), "timed out"));
	cr_expect_str_eq(nkv_qp_state_str((enum nkv_qp_state)99), "unknown reason");
}
