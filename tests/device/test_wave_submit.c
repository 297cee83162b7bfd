/* SPDX-License-Identifier: MIT */
/*
 * Wave-batched submission on the cpu engine (fiber lanes) against the
 * in-test controller: one SQ doorbell write per batch, tails right across
 * ring wrap, a full queue waits for the reported SQ head, out-of-order
 * completions reach their lanes, CIDs never reused in flight, a poll
 * timeout fails the queue pair instead of hanging.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "fake_ctrl.h"
#include "device/bench_kernels.h"
#include "device/wave_kernels.h"

static struct fake_ctrl ctrl;
static struct test_qp tq;

static int launch(uint32_t mode, uint32_t wave, nkv_cpu_fn fn, void *arg)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), mode, 1, wave, 0 };

	return nkv_cpu_launch(&cfg, fn, arg);
}

static void batched(uint32_t lanes, uint32_t rounds, int order)
{
	struct batch_run r = { &tq, lanes, rounds, 0, 0, 0, 0 };

	cr_assert_eq(test_qp_init(&tq, 128, 128, 4, 2000000000ull), 0);
	fake_start(&ctrl, &tq, order, lanes);
	cr_assert_eq(launch(NKV_CPU_FIBERS, 64, batch_lane, &r), 0);
	fake_stop(&ctrl);
	cr_expect_eq(r.errs, 0, "lane errors: %llu (last %d)", (unsigned long long)r.errs, r.last_err);
	cr_expect_eq(r.wrong, 0, "results routed to the wrong lane: %llu", (unsigned long long)r.wrong);
	cr_expect_eq(r.ok, (uint64_t)lanes * rounds);
	/* Batch <= credits (127): exactly one SQ tail write per batch. */
	cr_expect_eq(ctrl.sq_writes, rounds, "doorbell writes %llu for %u batches",
		     (unsigned long long)ctrl.sq_writes, rounds);
	cr_expect_eq(ctrl.submitted, (uint64_t)lanes * rounds);
	cr_expect_eq(ctrl.last_tail, (lanes * rounds) % 128u, "tail across wrap");
	cr_expect_eq(tq.qp.sq_tail, (lanes * rounds) % 128u);
	cr_expect_eq(ctrl.bad_delta, 0);
	cr_expect_eq(ctrl.overrun, 0);
	cr_expect_eq(ctrl.cid_reuse, 0, "CID reused while in flight");
	cr_expect_eq(tq.qp.inflight, 0);
	cr_expect_eq(tq.qp.cids_held, 0);
	cr_expect_eq(nkv_dev_qp_failed(&tq.qp), NKV_QP_OK);
	test_qp_free(&tq);
}

Test(wave_submit, batch_of_1) { batched(1, 300, FAKE_IN_ORDER); }
Test(wave_submit, batch_of_8) { batched(8, 100, FAKE_REVERSED); }
Test(wave_submit, batch_of_32) { batched(32, 40, FAKE_SHUFFLED); }
Test(wave_submit, batch_of_64) { batched(64, 20, FAKE_SHUFFLED); }

/* SQ depth 8: a 64-lane batch goes in as chunks of at most 7; slots are
 * reused only after the controller reported them fetched. */
Test(wave_submit, full_queue_waits_for_sq_head)
{
	struct batch_run r = { &tq, 64, 6, 0, 0, 0, 0 };

	cr_assert_eq(test_qp_init(&tq, 8, 64, 0, 2000000000ull), 0);
	fake_start(&ctrl, &tq, FAKE_REVERSED, 3);
	cr_assert_eq(launch(NKV_CPU_FIBERS, 64, batch_lane, &r), 0);
	fake_stop(&ctrl);
	cr_expect_eq(r.errs, 0, "last err %d", r.last_err);
	cr_expect_eq(r.wrong, 0);
	cr_expect_eq(r.ok, 64u * 6u);
	cr_expect_geq(ctrl.sq_writes, 6u * 10u, "64 SQEs need >= 10 chunks of <= 7");
	cr_expect_eq(ctrl.submitted, 64u * 6u);
	cr_expect_eq(ctrl.bad_delta, 0, "a chunk larger than the credits");
	cr_expect_eq(ctrl.overrun, 0, "SQ tail passed the reported SQ head");
	cr_expect_eq(ctrl.cid_reuse, 0);
	test_qp_free(&tq);
}

/* CQ smaller than SQ: the CQ depth bounds what is in flight. */
Test(wave_submit, cq_depth_limits_inflight)
{
	struct batch_run r = { &tq, 16, 10, 0, 0, 0, 0 };

	cr_assert_eq(test_qp_init(&tq, 64, 4, 0, 2000000000ull), 0);
	cr_assert_eq(tq.qp.credit_limit, 3u);
	fake_start(&ctrl, &tq, FAKE_SHUFFLED, 1);
	cr_assert_eq(launch(NKV_CPU_FIBERS, 16, batch_lane, &r), 0);
	fake_stop(&ctrl);
	cr_expect_eq(r.ok, 160u, "errs %llu last %d", (unsigned long long)r.errs, r.last_err);
	cr_expect_eq(ctrl.bad_delta, 0);
	cr_expect_eq(ctrl.cid_reuse, 0);
}

/* A controller that never answers: bounded poll, timeout, failed qp. */
Test(wave_submit, poll_timeout_fails_qp)
{
	struct batch_run r = { &tq, 8, 1, 0, 0, 0, 0 };
	struct batch_run again = { &tq, 8, 1, 0, 0, 0, 0 };

	cr_assert_eq(test_qp_init(&tq, 16, 16, 0, 5000), 0);
	fake_start(&ctrl, &tq, FAKE_IN_ORDER, 1);
	ctrl.mute = 1;
	cr_assert_eq(launch(NKV_CPU_FIBERS, 64, batch_lane, &r), 0);
	cr_expect_eq(r.errs, 8);
	cr_expect_eq(r.last_err, NKV_ETIMEDOUT);
	cr_expect_eq(nkv_dev_qp_failed(&tq.qp), NKV_QP_FAILED_TIMEOUT);
	/* Every later call fails at once. */
	cr_assert_eq(launch(NKV_CPU_FIBERS, 64, batch_lane, &again), 0);
	cr_expect_eq(again.errs, 8);
	cr_expect_eq(again.last_err, NKV_EIO);
	cr_expect_eq(ctrl.sq_writes, 1, "no doorbell on a failed queue pair");
	fake_stop(&ctrl);
	test_qp_free(&tq);
}

/* The kernel body the GPU wrappers use, on fibers: Store through slots. */
struct kb_arg {
	struct nkv_dev_qp *qp;
	struct nkv_wk_args a;
};

static void kb_lane(void *p)
{
	struct kb_arg *k = p;

	nkv_wk_kv_batch(k->qp, &k->a);
}

Test(wave_submit, kernel_body_store_batch)
{
	struct nkv_wk_key keys[40];
	struct nkv_wk_out out[40];
	struct kb_arg k;
	uint32_t i;

	memset(keys, 0, sizeof(keys));
	memset(out, 0xff, sizeof(out));
	for (i = 0; i < 40; i++) {
		keys[i].len = 1 + i % 16;
		memset(keys[i].key, 'a' + i % 26, keys[i].len);
	}
	keys[7].len = 17;	/* rejected by prep, lane still converges */
	cr_assert_eq(test_qp_init(&tq, 32, 32, 8, 2000000000ull), 0);
	k.qp = &tq.qp;
	memset(&k.a, 0, sizeof(k.a));
	k.a.keys_addr = (uintptr_t)keys;
	k.a.out_addr = (uintptr_t)out;
	k.a.count = 40;
	k.a.opc = NKV_KV_STORE;
	k.a.value_size = 4096;
	fake_start(&ctrl, &tq, FAKE_SHUFFLED, 1);
	cr_assert_eq(launch(NKV_CPU_FIBERS, 64, kb_lane, &k), 0);
	fake_stop(&ctrl);
	for (i = 0; i < 40; i++) {
		if (i == 7) {
			cr_expect_eq(out[i].err, NKV_EINVAL);
			continue;
		}
		cr_expect_eq(out[i].err, 0, "key %u err %d", i, out[i].err);
		cr_expect_eq(out[i].dw0, 4096u * 3u + NKV_KV_STORE);
	}
	cr_expect_eq(ctrl.sq_writes, 2, "39 SQEs, credit 31: two chunks");
}

/* A batch is one wave: nkv-bench's kernel body refuses a batch wider than
 * its wave before it touches the queue, and says why in the failure word
 * the host reads (fail_addr) as well as in the descriptor. */
struct wide_run {
	struct nkv_bk_args a;
	struct nkv_dev_qp *qp;
};

static void wide_lane(void *arg)
{
	struct wide_run *r = arg;

	nkv_bk_run(r->qp, &r->a);
}

Test(wave_submit, batch_wider_than_the_wave_is_refused)
{
	struct nkv_bk_key keys[16] = { { { 'k' }, 1 } };
	struct nkv_bk_lane lanes[16];
	uint64_t lat[4] = { 0 };
	uint32_t progress = 0, fail_word = 0;
	struct wide_run r = { { 0 }, &tq.qp };

	cr_assert_eq(test_qp_init(&tq, 64, 64, 16, 2000000000ull), 0);
	tq.qp.fail_addr = (uint64_t)(uintptr_t)&fail_word;
	fake_start(&ctrl, &tq, FAKE_IN_ORDER, 1);
	memset(lanes, 0, sizeof(lanes));
	r.a.keys_addr = (uintptr_t)keys;
	r.a.lat_addr = (uintptr_t)lat;
	r.a.lanes_addr = (uintptr_t)lanes;
	r.a.progress_addr = (uintptr_t)&progress;
	r.a.count = 16;
	r.a.opc = NKV_KV_EXIST;
	r.a.batch = 16;		/* wider than the 8-lane wave below */
	r.a.iterations = 1;
	cr_assert_eq(launch(NKV_CPU_FIBERS, 8, wide_lane, &r), 0);
	fake_stop(&ctrl);
	cr_expect_eq(nkv_dev_qp_failed(&tq.qp), NKV_QP_FAILED_ARGS);
	cr_expect_eq(fail_word, NKV_QP_FAILED_ARGS, "the host-visible word says why");
	cr_expect_eq(ctrl.sq_writes, 0, "nothing was submitted");
	cr_expect_eq(progress, 0);
	test_qp_free(&tq);
}

/* Several batches in flight on one queue pair, waited in any order: each
 * lane's slots come from nkv_wave_slot (batch k of those in flight), its
 * tickets carry the CIDs, and each result is its own command's (the fake
 * answers DW0 = size * 3 + opcode, 87h for an odd first key byte). */
struct flight_run {
	struct dev_check {
		uint32_t ok, wrong;
	} a, b;
	uint32_t same_slot;
};

static void flight_check(struct dev_check *c, const struct nkv_prep *p, struct nkv_ticket t,
			 struct nkv_dev_result r, uint16_t status)
{
	int good = !r.err && r.cid == t.cid && r.dw0 == fake_dw0(&p->sqe) && r.status == status;

	__atomic_fetch_add(good ? &c->ok : &c->wrong, 1, __ATOMIC_RELAXED);
}

static void flight_lane(void *arg)
{
	struct flight_run *f = arg;
	const struct nkv_wave w = nkv_wave_enter();
	struct nkv_dev_qp *qp = &tq.qp;
	uint8_t ka[4] = { 'a', (uint8_t)w.lane, 'x', 0 }, kb[4] = { 'b', (uint8_t)w.lane, 'y', 0 };
	struct nkv_prep pa = nkv_dev_store(qp, nkv_wave_slot(w, 0), ka, 4, 0, 100 + w.lane);
	struct nkv_prep pb = nkv_dev_store(qp, nkv_wave_slot(w, 1), kb, 4, 0, 200 + w.lane);
	struct nkv_ticket ta = nkv_wave_submit(w, qp, 1, pa);
	struct nkv_ticket tb = nkv_wave_submit(w, qp, 1, pb);
	struct nkv_dev_result rb = nkv_wave_wait(w, qp, tb);	/* the later batch first */
	struct nkv_dev_result ra = nkv_wave_wait(w, qp, ta);

	flight_check(&f->a, &pa, ta, ra, NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS));
	flight_check(&f->b, &pb, tb, rb, 0);
	if (pa.sqe.prp1 == pb.sqe.prp1)
		__atomic_fetch_add(&f->same_slot, 1, __ATOMIC_RELAXED);
}

Test(wave_submit, two_batches_in_flight_any_order)
{
	struct flight_run f;

	memset(&f, 0, sizeof(f));
	cr_assert_eq(test_qp_init(&tq, 32, 32, 16, 2000000000ull), 0);
	fake_start(&ctrl, &tq, FAKE_SHUFFLED, 1);
	cr_assert_eq(launch(NKV_CPU_FIBERS, 8, flight_lane, &f), 0);
	fake_stop(&ctrl);
	cr_expect_eq(f.a.ok, 8, "first batch: %u wrong", f.a.wrong);
	cr_expect_eq(f.b.ok, 8, "second batch: %u wrong", f.b.wrong);
	cr_expect_eq(f.same_slot, 0, "two batches shared a value slot");
	cr_expect_eq(ctrl.sq_writes, 2, "one doorbell per batch");
	cr_expect_eq(ctrl.cid_reuse, 0);
	cr_expect_eq(tq.qp.inflight, 0);
	cr_expect_eq(tq.qp.cids_held, 0, "every result taken, every CID back");
	test_qp_free(&tq);
}

/* Results not taken hold their CIDs: a third batch gets what is left,
 * and the lanes it could not take learn why from their own results
 * (NKV_ENOSPC), while the queue pair stays usable. */
struct spent_run {
	int32_t err3[8];
	uint16_t cid3[8];
	uint32_t ok12;
};

static void spent_lane(void *arg)
{
	struct spent_run *s = arg;
	const struct nkv_wave w = nkv_wave_enter();
	struct nkv_dev_qp *qp = &tq.qp;
	uint8_t key[2] = { 'b', (uint8_t)w.lane };
	int have = w.lane < 7;
	struct nkv_ticket t1 = nkv_wave_submit(w, qp, have, nkv_dev_exist(qp, 0, key, 2));
	struct nkv_ticket t2 = nkv_wave_submit(w, qp, have, nkv_dev_exist(qp, 0, key, 2));
	struct nkv_ticket t3 = nkv_wave_submit(w, qp, have, nkv_dev_exist(qp, 0, key, 2));
	struct nkv_dev_result r3 = nkv_wave_wait(w, qp, t3);
	struct nkv_dev_result r1 = nkv_wave_wait(w, qp, t1);
	struct nkv_dev_result r2 = nkv_wave_wait(w, qp, t2);

	s->err3[w.lane] = r3.err;
	s->cid3[w.lane] = r3.cid;
	if (have && !r1.err && !r2.err && !r1.status && !r2.status)
		__atomic_fetch_add(&s->ok12, 1, __ATOMIC_RELAXED);
}

Test(wave_submit, tickets_say_which_lanes_went_in)
{
	struct spent_run s;
	uint32_t i;

	memset(&s, 0, sizeof(s));
	/* Depth 8: 16 CIDs; two batches of 7 leave 2. */
	cr_assert_eq(test_qp_init(&tq, 8, 8, 0, 2000000000ull), 0);
	cr_assert_eq(tq.qp.cid_count, 16u);
	fake_start(&ctrl, &tq, FAKE_IN_ORDER, 1);
	cr_assert_eq(launch(NKV_CPU_FIBERS, 8, spent_lane, &s), 0);
	fake_stop(&ctrl);
	cr_expect_eq(s.ok12, 7);
	for (i = 0; i < 2; i++) {
		cr_expect_eq(s.err3[i], 0, "lane %u got one of the 2 CIDs left", i);
		cr_expect_neq(s.cid3[i], NKV_CID_NONE);
	}
	for (i = 2; i < 7; i++) {
		cr_expect_eq(s.err3[i], NKV_ENOSPC, "lane %u: %d", i, s.err3[i]);
		cr_expect_eq(s.cid3[i], NKV_CID_NONE);
	}
	cr_expect_eq(s.err3[7], 0, "a lane without a command has no error");
	cr_expect_eq(s.cid3[7], NKV_CID_NONE);
	cr_expect_eq(ctrl.sq_writes, 3);
	cr_expect_eq(nkv_dev_qp_failed(&tq.qp), NKV_QP_OK, "backpressure is not a failure");
	cr_expect_eq(tq.qp.cids_held, 0);
	test_qp_free(&tq);
}
