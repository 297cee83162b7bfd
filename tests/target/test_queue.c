/* SPDX-License-Identifier: MIT */
/* Queue processing: out-of-order completion, CQ-full hold-back, phase
 * wrap, many queue pairs, arbitration, SQ deletion, DMA busy, trace,
 * the poll policy (idle sleep, trim), a poller thread. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "delay_be.h"
#include "tgt_host.h"
#include "nvmf/fabrics.h"
#include "target/core/poller.h"

static struct h H;

#define SC(sc) NKV_STATUS(NKV_SCT_GENERIC, sc)

static void fini(void)
{
	h_fini(&H);
}

TestSuite(queue, .fini = fini, .timeout = 30);

static struct nkv_be *mem_kv(int worker)
{
	struct nkv_be_conf c = { sizeof(c), .worker = worker };

	return h_mem(&c);
}

static void up(struct nkv_be *be, uint32_t admin)
{
	if (be)
		h_init_be(&H, NULL, be);
	else
		h_init(&H, NULL, NULL);
	cr_assert_eq(h_enable(&H, admin), NKV_CSTS_RDY);
}

/* Store key "q<qid>-<i>" with value = the key, no reaping. */
static void submit_store(uint16_t qid, uint32_t i, uint64_t iova)
{
	char key[16];
	int kl = snprintf(key, sizeof(key), "q%u-%u", qid, i);
	struct nkv_sqe s;

	memcpy(h_ptr(&H, iova), key, (size_t)kl);
	h_kv(&s, NKV_KV_STORE, 1, key, (uint32_t)kl, (uint32_t)kl, 0);
	s.prp1 = iova;
	h_submit(&H, qid, &s);
}

Test(queue, out_of_order_completions)
{
	struct nkv_be *d = delay_be_create(mem_kv(0), 16, 300);
	uint8_t seen[64] = { 0 };
	uint64_t bufs = 0;
	uint32_t i;

	up(d, 16);
	cr_assert_eq(h_create_qpair(&H, 1, 64), 0);
	bufs = h_alloc(&H, 48 * 4096);
	for (i = 0; i < 48; i++)
		submit_store(1, i, bufs + i * 4096);
	for (i = 0; i < 48; i++) {
		struct nkv_cqe e;

		cr_assert_eq(h_reap(&H, 1, &e), 0);
		cr_assert_eq(nkv_cqe_status(e.dw3), 0);
		cr_assert_lt(nkv_cqe_cid(e.dw3), 48);
		cr_assert_eq(seen[nkv_cqe_cid(e.dw3)]++, 0, "each CID once");
		cr_assert_eq(nkv_cqe_sqid(e.dw2), 1);
		cr_assert_leq(nkv_cqe_sqhd(e.dw2), 48);
	}
	cr_assert_gt(delay_be_reordered(d), 0, "the backend did reorder");
	for (i = 0; i < 48; i++) {
		char key[16], val[16];
		int kl = snprintf(key, sizeof(key), "q1-%u", i);
		uint32_t dw0;

		cr_assert_eq(h_retrieve(&H, 1, key, (uint32_t)kl, val, 16, &dw0), 0);
		cr_assert_eq(dw0, (uint32_t)kl);
		cr_assert_eq(memcmp(val, key, (size_t)kl), 0);
	}
	cr_assert_eq(nkv_tgt_ctrl_inflight(H.c), 0);
}

/* 100 commands in flight at once leave 100 command objects cached; the
 * poller's decision to sleep gives all but NKV_TGT_CMD_KEEP back (they
 * used to stay for the controller's life: up to 274 MB per connection). */
Test(queue, idle_returns_command_objects)
{
	struct nkv_be *d = delay_be_create(mem_kv(0), 128, 200000);
	struct nkv_tgt_poller p;
	uint64_t bufs;
	uint32_t i;

	up(d, 16);
	cr_assert_eq(h_create_qpair(&H, 1, 128), 0);
	bufs = h_alloc(&H, 100 * 4096);
	for (i = 0; i < 100; i++)
		submit_store(1, i, bufs + i * 4096);
	for (i = 0; i < 100; i++) {
		struct nkv_cqe e;

		cr_assert_eq(h_reap(&H, 1, &e), 0);
		cr_assert_eq(nkv_cqe_status(e.dw3), 0);
	}
	/* Held together by the delaying backend (however slow this machine
	 * is, more than the objects kept). */
	cr_assert_gt(nkv_tgt_ctrl_trim(H.c, UINT32_MAX), NKV_TGT_CMD_KEEP, "the burst's objects cached");
	nkv_tgt_poller_init(&p, 0);
	do
		nkv_tgt_poller_pass(&p, H.c);
	while (nkv_tgt_poller_next(&p, H.c) != NKV_TGT_POLL_SLEEP);
	cr_assert_eq(nkv_tgt_ctrl_trim(H.c, UINT32_MAX), NKV_TGT_CMD_KEEP);
	/* And the controller still works, reusing or allocating. */
	cr_assert_eq(h_store(&H, 1, "after", 5, "v", 1, 0), 0);
}

Test(queue, cq_full_holds_back)
{
	struct nkv_sqe s;
	uint32_t i, posted = 0;
	struct nkv_cqe *cq;
	uint16_t last_sqhd = 0;

	up(NULL, 16);
	/* CQ of 4 under an SQ of 16. */
	H.q[1].size = 4;
	{
		struct nkv_sqe c = { 0 };
		uint64_t cqm = h_alloc(&H, 4096), sqm = h_alloc(&H, 16 * 64);

		c.cdw0 = NKV_ADM_CREATE_CQ;
		c.prp1 = cqm;
		c.cdw10 = nkv_queue_cdw10(1, 4);
		c.cdw11 = NKV_QUEUE_PC;
		cr_assert_eq(h_cmd(&H, 0, &c, NULL), 0);
		memset(&c, 0, sizeof(c));
		c.cdw0 = NKV_ADM_CREATE_SQ;
		c.prp1 = sqm;
		c.cdw10 = nkv_queue_cdw10(1, 16);
		c.cdw11 = nkv_create_sq_cdw11(1);
		cr_assert_eq(h_cmd(&H, 0, &c, NULL), 0);
		H.q[1] = (struct h_q){ .size = 16, .sq = h_ptr(&H, sqm),
			.cq = h_ptr(&H, cqm), .phase = 1 };
	}
	cq = H.q[1].cq;
	for (i = 0; i < 12; i++) {
		h_kv(&s, NKV_KV_EXIST, 1, "x", 1, 0, 0);
		h_submit(&H, 1, &s);
	}
	for (i = 0; i < 100; i++)
		nkv_tgt_ctrl_poll(H.c);
	for (i = 0; i < 4; i++)
		posted += nkv_cqe_phase(cq[i].dw3);
	cr_assert_eq(posted, 3, "one slot always stays free");
	cr_assert_eq(cq[3].dw3, 0);
	cr_assert_gt(nkv_tgt_ctrl_inflight(H.c), 0);
	/* Reap with the real 4-entry ring: every result arrives in order of
	 * posting, none lost, the SQ head reported moves forward. */
	H.q[1].size = 4;
	for (i = 0; i < 12; i++) {
		struct nkv_cqe e;

		cr_assert_eq(h_reap(&H, 1, &e), 0, "cqe %u", i);
		cr_assert_eq(nkv_cqe_status(e.dw3), SC(NKV_SC_KV_KEY_NOT_EXISTS));
		cr_assert_eq(nkv_cqe_cid(e.dw3), i);
		cr_assert_geq(nkv_cqe_sqhd(e.dw2), last_sqhd);
		last_sqhd = nkv_cqe_sqhd(e.dw2);
	}
	cr_assert_eq(last_sqhd, 12);
	cr_assert_eq(nkv_tgt_ctrl_inflight(H.c), 0);
}

Test(queue, phase_wraps_on_long_runs)
{
	struct nkv_tgt_qstats st;
	struct nkv_sqe s;
	uint32_t i, j, n = 0;

	up(NULL, 4);
	cr_assert_eq(h_create_qpair(&H, 1, 8), 0);
	cr_assert_eq(h_store(&H, 1, "w", 1, "v", 1, 0), 0);
	for (i = 0; i < 700; i++) {
		uint32_t batch = 1 + i % 7;

		for (j = 0; j < batch; j++) {
			h_kv(&s, NKV_KV_EXIST, 1, "w", 1, 0, 0);
			h_submit(&H, 1, &s);
		}
		for (j = 0; j < batch; j++) {
			struct nkv_cqe e;

			cr_assert_eq(h_reap(&H, 1, &e), 0);
			cr_assert_eq(nkv_cqe_status(e.dw3), 0);
			cr_assert_eq(nkv_cqe_sqhd(e.dw2), H.q[1].sq_tail);
			n++;
		}
	}
	cr_assert_eq(nkv_tgt_ctrl_stats(H.c, 1, &st), 0);
	cr_assert_eq(st.commands, n + 1);
	cr_assert_eq(st.errors, 0);
	/* Many admin commands wrap the 4-entry admin queue too. */
	for (i = 0; i < 50; i++) {
		uint8_t id[4096];

		cr_assert_eq(h_identify(&H, NKV_CNS_CTRL, 0, 0, id), 0);
	}
}

Test(queue, many_queue_pairs)
{
	enum { NQ = 32, PER = 10 };
	struct nkv_tgt_qstats st;
	uint64_t bufs;
	uint32_t q, i;

	up(delay_be_create(mem_kv(1), 8, 200), 16);
	for (q = 1; q <= NQ; q++)
		cr_assert_eq(h_create_qpair(&H, (uint16_t)q, 16), 0);
	bufs = h_alloc(&H, NQ * PER * 64);
	for (i = 0; i < PER; i++)
		for (q = 1; q <= NQ; q++)
			submit_store((uint16_t)q, i, bufs + ((q - 1) * PER + i) * 64);
	for (q = 1; q <= NQ; q++)
		for (i = 0; i < PER; i++) {
			struct nkv_cqe e;

			cr_assert_eq(h_reap(&H, (uint16_t)q, &e), 0);
			cr_assert_eq(nkv_cqe_status(e.dw3), 0);
			cr_assert_eq(nkv_cqe_sqid(e.dw2), q);
		}
	for (q = 1; q <= NQ; q++) {
		cr_assert_eq(nkv_tgt_ctrl_stats(H.c, (uint16_t)q, &st), 0);
		cr_assert_eq(st.commands, PER);
		cr_assert_gt(st.bytes, 0);
	}
	cr_assert_eq(nkv_tgt_ctrl_inflight(H.c), 0);
}

Test(queue, round_robin_does_not_starve)
{
	struct nkv_sqe s;
	uint32_t i;

	up(NULL, 16);
	cr_assert_eq(h_create_qpair(&H, 1, 256), 0);
	cr_assert_eq(h_create_qpair(&H, 2, 16), 0);
	for (i = 0; i < 250; i++) {
		h_kv(&s, NKV_KV_EXIST, 1, "a", 1, 0, 0);
		h_submit(&H, 1, &s);
	}
	h_kv(&s, NKV_KV_EXIST, 1, "b", 1, 0, 0);
	h_submit(&H, 2, &s);
	nkv_tgt_ctrl_poll(H.c);
	cr_assert_eq(nkv_cqe_phase(H.q[2].cq[0].dw3), 1,
		     "queue 2 served in the first pass");
	cr_assert_eq(nkv_cqe_phase(H.q[1].cq[100].dw3), 0,
		     "queue 1 limited to a burst per pass");
}

Test(queue, sq_delete_drops_inflight)
{
	struct nkv_be *d = delay_be_create(mem_kv(0), 64, 20000);
	struct nkv_sqe s = { 0 };
	uint32_t i;

	up(d, 16);
	cr_assert_eq(h_create_qpair(&H, 1, 16), 0);
	for (i = 0; i < 8; i++) {
		h_kv(&s, NKV_KV_EXIST, 1, "x", 1, 0, 0);
		h_submit(&H, 1, &s);
	}
	nkv_tgt_ctrl_poll(H.c);
	cr_assert_eq(nkv_tgt_ctrl_inflight(H.c), 8, "held by the backend");
	memset(&s, 0, sizeof(s));
	s.cdw0 = NKV_ADM_DELETE_SQ;
	s.cdw10 = 1;
	cr_assert_eq(h_cmd(&H, 0, &s, NULL), 0);
	s.cdw0 = NKV_ADM_DELETE_CQ;
	cr_assert_eq(h_cmd(&H, 0, &s, NULL), 0);
	for (i = 0; i < 5000 && nkv_tgt_ctrl_inflight(H.c); i++) {
		struct timespec ts = { 0, 100000 };

		nkv_tgt_ctrl_poll(H.c);
		nanosleep(&ts, NULL);
	}
	cr_assert_eq(nkv_tgt_ctrl_inflight(H.c), 0);
	for (i = 0; i < 16; i++)
		cr_assert_eq(H.q[1].cq[i].dw3, 0, "nothing posted to a deleted CQ");
	/* The queue id is reusable at once. */
	cr_assert_eq(h_create_qpair(&H, 1, 16), 0);
	h_kv(&s, NKV_KV_EXIST, 1, "x", 1, 0, 0);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_KV_KEY_NOT_EXISTS));
}

Test(queue, dma_busy)
{
	struct nkv_be *d = delay_be_create(mem_kv(0), 64, 20000);
	uint8_t *other = aligned_alloc(4096, 8192);
	uint64_t buf;
	struct nkv_sqe s;
	struct nkv_cqe e;

	up(d, 16);
	cr_assert_eq(nkv_dma_map(H.dma, 0x900000000ull, 8192, other,
				 NKV_DMA_READ | NKV_DMA_WRITE), 0);
	cr_assert(nkv_tgt_ctrl_dma_busy(H.c, H.q[0].sq_iova, 64), "admin SQ");
	cr_assert_not(nkv_tgt_ctrl_dma_busy(H.c, 0x900000000ull, 8192));
	cr_assert_eq(h_create_qpair(&H, 1, 16), 0);
	buf = 0x900000000ull + 100;
	memcpy(other + 100, "data", 4);
	h_kv(&s, NKV_KV_STORE, 1, "busy", 4, 4, 0);
	s.prp1 = buf;
	h_submit(&H, 1, &s);
	nkv_tgt_ctrl_poll(H.c);
	cr_assert(nkv_tgt_ctrl_dma_busy(H.c, 0x900000000ull, 8192), "in-flight data");
	cr_assert_eq(h_reap(&H, 1, &e), 0);
	cr_assert_eq(nkv_cqe_status(e.dw3), 0);
	cr_assert_not(nkv_tgt_ctrl_dma_busy(H.c, 0x900000000ull, 8192));
	cr_assert_eq(nkv_dma_unmap(H.dma, 0x900000000ull, 8192), 0);
	free(other);
}

static int trace_lines, trace_sqe, trace_cqe, trace_db;

static void trace_cb(void *arg, const char *line)
{
	(void)arg;
	trace_lines++;
	trace_sqe += !strncmp(line, "sqe", 3);
	trace_cqe += !strncmp(line, "cqe", 3);
	trace_db += strstr(line, "doorbell") != NULL;
}

Test(queue, trace_callback)
{
	uint8_t id[4096];

	up(NULL, 16);
	nkv_tgt_ctrl_set_trace(H.c, 1, trace_cb, NULL);
	cr_assert_eq(h_identify(&H, NKV_CNS_CTRL, 0, 0, id), 0);
	cr_assert_eq(trace_sqe, 1);
	cr_assert_eq(trace_cqe, 1);
	cr_assert_geq(trace_db, 1);
	nkv_tgt_ctrl_set_trace(H.c, 0, NULL, NULL);
	trace_lines = 0;
	cr_assert_eq(h_identify(&H, NKV_CNS_CTRL, 0, 0, id), 0);
	cr_assert_eq(trace_lines, 0, "off means off");
}

/* Spin NKV_TGT_POLL_SPIN_NS without work, then sleep the interval. */
Test(queue, poller_sleeps_when_idle)
{
	struct nkv_tgt_poller p;
	uint64_t t0 = nkv_tgt_now_ns(), ns;
	uint32_t i, checks = 0;
	int next;

	up(NULL, 16);
	nkv_tgt_poller_init(&p, 500000);
	for (i = 0; i < NKV_TGT_POLL_PASSES - 1; i++) {
		nkv_tgt_poller_pass(&p, H.c);
		cr_assert_eq(nkv_tgt_poller_next(&p, H.c), NKV_TGT_POLL_AGAIN, "busy-poll first");
	}
	do {
		nkv_tgt_poller_pass(&p, H.c);
		next = nkv_tgt_poller_next(&p, H.c);
		checks += next == NKV_TGT_POLL_CHECK;
	} while (next != NKV_TGT_POLL_SLEEP);
	cr_assert_geq(nkv_tgt_now_ns() - t0, NKV_TGT_POLL_SPIN_NS, "spun first");
	cr_assert_geq(checks, 1, "other sources looked at while spinning");
	cr_assert_eq(nkv_tgt_poller_sleep_ns(&p, H.c), 500000, "sleeps the interval");
	/* Work resets the spin. */
	__atomic_store_n(&H.db[0], 0, __ATOMIC_RELEASE);
	{
		struct nkv_sqe s = { 0 };

		s.cdw0 = NKV_ADM_ABORT;
		h_submit(&H, 0, &s);
	}
	cr_assert_gt(nkv_tgt_poller_pass(&p, H.c), 0);
	next = nkv_tgt_poller_next(&p, H.c);
	for (i = 1; i < NKV_TGT_POLL_PASSES; i++) {
		cr_assert_neq(next, NKV_TGT_POLL_SLEEP, "no sleep right after work");
		nkv_tgt_poller_pass(&p, H.c);
		next = nkv_tgt_poller_next(&p, H.c);
	}
	cr_assert_neq(next, NKV_TGT_POLL_SLEEP, "no sleep right after work");
	/* Default interval (unless this thread lost the CPU for the 1 ms
	 * after which an idle sleep grows); a disabled controller sleeps
	 * until woken. */
	t0 = nkv_tgt_now_ns();
	nkv_tgt_poller_init(&p, 0);
	ns = nkv_tgt_poller_sleep_ns(&p, H.c);
	if (nkv_tgt_now_ns() - t0 < NKV_TGT_POLL_WAIT_LONG_NS)
		cr_assert_eq(ns, NKV_TGT_POLL_INTERVAL_NS);
	nkv_tgt_ctrl_reg_write(H.c, NKV_REG_CC, 0, 4);
	cr_assert_eq(nkv_tgt_poller_sleep_ns(&p, H.c), 0);
	cr_assert_eq(nkv_tgt_poller_sleep_ns(&p, NULL), 0);
}

/* One Store on a new I/O queue, polled with a fresh poller until the
 * backend (H's, which holds it) has it. */
static void hold_one_store(struct nkv_tgt_poller *p)
{
	uint32_t i;

	cr_assert_eq(h_create_qpair(&H, 1, 16), 0);
	submit_store(1, 0, h_alloc(&H, 4096));
	nkv_tgt_poller_init(p, 0);
	for (i = 0; i < 1000 && !nkv_tgt_ctrl_inflight(H.c); i++)
		nkv_tgt_poller_pass(p, H.c);
	cr_assert_eq(nkv_tgt_ctrl_inflight(H.c), 1, "held by the backend");
}

/* Poll without work until the poller says sleep, which it must before
 * the held command completes: the ns that took. */
static uint64_t spin_until_sleep(struct nkv_tgt_poller *p)
{
	uint64_t t0 = nkv_tgt_now_ns();
	int next;

	do {
		nkv_tgt_poller_pass(p, H.c);
		next = nkv_tgt_poller_next(p, H.c);
	} while (next != NKV_TGT_POLL_SLEEP && nkv_tgt_ctrl_inflight(H.c));
	cr_assert_eq(next, NKV_TGT_POLL_SLEEP, "asleep before the backend answers");
	return nkv_tgt_now_ns() - t0;
}

/* Commands held by the backend: a sleep after NKV_TGT_POLL_WAIT_SPIN_NS
 * already (their completions wake the thread), woken by the completion. */
Test(queue, poller_sleeps_sooner_with_commands_at_backend)
{
	struct nkv_tgt_poller p;

	up(delay_be_create(mem_kv(0), 4, 500000), 16);
	hold_one_store(&p);
	cr_assert_geq(spin_until_sleep(&p), NKV_TGT_POLL_WAIT_SPIN_NS);
	cr_assert_eq(nkv_tgt_ctrl_inflight(H.c), 1, "asleep before the backend answers (0.5 s)");
	/* A short interval (libnkv's tcp: front, 1 us): the sleep grows with
	 * the wait, as the completion wakes the thread anyway. */
	p.interval_ns = 1000;
	cr_assert_geq(nkv_tgt_poller_sleep_ns(&p, H.c), 1000);
	cr_assert_leq(nkv_tgt_poller_sleep_ns(&p, H.c), NKV_TGT_POLL_WAIT_SLEEP_NS);
	usleep(50000);
	cr_assert_eq(nkv_tgt_ctrl_inflight(H.c), 1);
	cr_assert_eq(nkv_tgt_poller_sleep_ns(&p, H.c), NKV_TGT_POLL_WAIT_SLEEP_NS,
		     "50 ms into the wait: the longest sleep");
}

/* Commands whose backend said their completion is near (nkv_be_wait_near,
 * the rocksdb worker's write) keep the thread awake up to
 * NKV_TGT_POLL_NEAR_SPIN_NS; then it sleeps as for any backend wait, and
 * the count goes with the completion. */
Test(queue, poller_stays_awake_for_near_completions)
{
	struct nkv_be *be = delay_be_create(mem_kv(0), 4, 300000);
	struct nkv_tgt_poller p;
	uint64_t t0;

	cr_assert_not_null(be);
	delay_be_near(be, 1);
	up(be, 16);
	hold_one_store(&p);
	cr_assert_eq(nkv_tgt_ctrl_at_work(H.c), 1, "at work");
	cr_assert_eq(nkv_tgt_ctrl_near(H.c), 1, "and near");
	cr_assert_geq(spin_until_sleep(&p), NKV_TGT_POLL_NEAR_SPIN_NS, "awake 2 ms first");
	for (t0 = nkv_tgt_now_ns(); nkv_tgt_ctrl_inflight(H.c) &&
	     nkv_tgt_now_ns() - t0 < 5000000000ull; usleep(1000))
		nkv_tgt_poller_pass(&p, H.c);
	cr_assert_eq(nkv_tgt_ctrl_inflight(H.c), 0, "completed");
	cr_assert_eq(nkv_tgt_ctrl_near(H.c), 0, "and no longer counted");
}

/* A held Asynchronous Event Request is no command at the backend: it
 * waits for an event that may never come, and no completion will wake
 * the thread. libnkv keeps one held on every controller; counted as work
 * it made the poll thread sleep 10 us after each batch and see the next
 * doorbell up to the poll interval late (4 KiB batches of 32 from the
 * cpu engine: 165 us a batch, 31 us without it; docs/bench.md). */
Test(queue, poller_held_aer_is_not_work)
{
	struct nkv_tgt_poller p;
	struct nkv_sqe s = { 0 };
	uint64_t t0;
	uint32_t i;
	int next;

	up(NULL, 16);
	s.cdw0 = NKV_ADM_ASYNC_EVENT;
	h_submit(&H, 0, &s);
	nkv_tgt_poller_init(&p, 1000);
	for (i = 0; i < 1000 && !nkv_tgt_ctrl_inflight(H.c); i++)
		nkv_tgt_poller_pass(&p, H.c);
	cr_assert_eq(nkv_tgt_ctrl_inflight(H.c), 1, "the AER is held");
	cr_assert_eq(nkv_tgt_ctrl_at_work(H.c), 0, "and not at work");
	t0 = nkv_tgt_now_ns();
	do {
		nkv_tgt_poller_pass(&p, H.c);
		next = nkv_tgt_poller_next(&p, H.c);
	} while (next != NKV_TGT_POLL_SLEEP);
	cr_assert_geq(nkv_tgt_now_ns() - t0, NKV_TGT_POLL_SPIN_NS,
		      "the idle spin (%llu ns), not the shorter one of commands at the backend",
		      (unsigned long long)NKV_TGT_POLL_SPIN_NS);
	cr_assert_eq(nkv_tgt_ctrl_inflight(H.c), 1, "still held");
}

/* Idle too, the sleep is the interval for the first
 * NKV_TGT_POLL_WAIT_LONG_NS, then grows to NKV_TGT_POLL_WAIT_SLEEP_NS: a
 * doorbell after a quiet spell is seen that much later, and an idle
 * controller at a 1 us interval (libnkv's tcp: front) no longer keeps a
 * CPU busy (101 % of one without the growth, 11 % with it, docs/bench.md). */
Test(queue, poller_long_idle_sleeps_longer)
{
	struct nkv_tgt_poller p;
	uint64_t t0, ns;

	up(NULL, 16);
	t0 = nkv_tgt_now_ns();
	nkv_tgt_poller_init(&p, 1000);
	ns = nkv_tgt_poller_sleep_ns(&p, H.c);
	if (nkv_tgt_now_ns() - t0 < NKV_TGT_POLL_WAIT_LONG_NS)	/* not descheduled */
		cr_assert_eq(ns, 1000, "idle a moment: the interval");
	cr_assert_eq(nkv_tgt_ctrl_inflight(H.c), 0);
	usleep(20000);
	cr_assert_eq(nkv_tgt_poller_sleep_ns(&p, H.c), NKV_TGT_POLL_WAIT_SLEEP_NS,
		     "idle 20 ms: the longest sleep");
	p.interval_ns = 500000;
	cr_assert_eq(nkv_tgt_poller_sleep_ns(&p, H.c), 500000, "never below the interval");
}

struct poll_arg {
	struct nkv_tgt_poller p;
	int stop;
};

static void *poll_thread(void *arg)
{
	struct poll_arg *a = arg;

	nkv_tgt_poller_run(&a->p, H.c, &a->stop);
	return NULL;
}

/* The controller polled by its own thread, completions from the delaying
 * backend's thread and the mem worker, the host on the test thread. */
Test(queue, poller_thread_handoff)
{
	enum { NQ = 4, ROUNDS = 40, DEPTH = 12 };
	struct poll_arg a = { .stop = 0 };
	pthread_t thr;
	uint64_t bufs;
	uint32_t q, r, i, done = 0;

	up(delay_be_create(mem_kv(1), 4, 100), 16);
	for (q = 1; q <= NQ; q++)
		cr_assert_eq(h_create_qpair(&H, (uint16_t)q, 16), 0);
	bufs = h_alloc(&H, NQ * DEPTH * 64);
	nkv_tgt_poller_init(&a.p, 200000);
	H.threaded = 1;
	cr_assert_eq(pthread_create(&thr, NULL, poll_thread, &a), 0);
	for (r = 0; r < ROUNDS; r++) {
		for (q = 1; q <= NQ; q++)
			for (i = 0; i < DEPTH; i++)
				submit_store((uint16_t)q, r * DEPTH + i,
					     bufs + ((q - 1) * DEPTH + i) * 64);
		for (q = 1; q <= NQ; q++)
			for (i = 0; i < DEPTH; i++) {
				struct nkv_cqe e;

				if (h_reap(&H, (uint16_t)q, &e))
					break;
				done += nkv_cqe_status(e.dw3) == 0;
			}
	}
	__atomic_store_n(&a.stop, 1, __ATOMIC_RELEASE);
	pthread_join(thr, NULL);
	H.threaded = 0;
	cr_assert_eq(done, NQ * ROUNDS * DEPTH);
	cr_assert_eq(nkv_tgt_ctrl_inflight(H.c), 0);
}

Test(queue, shutdown_waits_for_inflight)
{
	struct nkv_be *d = delay_be_create(mem_kv(0), 64, 30000);
	struct nkv_sqe s;
	uint32_t i, csts = 0;

	up(d, 16);
	cr_assert_eq(h_create_qpair(&H, 1, 16), 0);
	h_kv(&s, NKV_KV_EXIST, 1, "x", 1, 0, 0);
	h_submit(&H, 1, &s);
	nkv_tgt_ctrl_poll(H.c);
	cr_assert_eq(nkv_tgt_ctrl_inflight(H.c), 1);
	nkv_tgt_ctrl_reg_write(H.c, NKV_REG_CC,
			       (uint32_t)NKV_SET(h_cc(), NKV_CC_SHN_SHIFT, 2, 1), 4);
	nkv_tgt_ctrl_poll(H.c);
	csts = (uint32_t)nkv_tgt_ctrl_reg_read(H.c, NKV_REG_CSTS, 4);
	cr_assert_eq(nkv_csts_shst(csts), NKV_CSTS_SHST_OCCURRING);
	for (i = 0; i < 5000 && nkv_csts_shst(csts) != NKV_CSTS_SHST_COMPLETE; i++) {
		struct timespec ts = { 0, 100000 };

		nkv_tgt_ctrl_poll(H.c);
		nanosleep(&ts, NULL);
		csts = (uint32_t)nkv_tgt_ctrl_reg_read(H.c, NKV_REG_CSTS, 4);
	}
	cr_assert_eq(nkv_csts_shst(csts), NKV_CSTS_SHST_COMPLETE);
	cr_assert_eq(nkv_cqe_phase(H.q[1].cq[0].dw3), 1, "the in-flight result posted");
}
