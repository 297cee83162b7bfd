/* SPDX-License-Identifier: MIT */
/*
 * Block batches (nkv_block.h) on the cpu engine's fibers against the
 * in-test controller: every thread of a block of several waves packs one
 * SQE and the block rings ONE SQ doorbell per batch (1023 commands at
 * depth 1024), out-of-order completions reach their threads, a block
 * wider than the credit limit goes in in full-queue chunks, several
 * batches in flight are waited in any order, a builder error stays its
 * thread's, a timeout fails the queue pair.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "fake_ctrl.h"
#include "device/block_kernels.h"

static struct fake_ctrl ctrl;
static struct test_qp tq;
static char diag[512];

/* @waves waves of @wave lanes in blocks of @block threads. */
static int launch(uint32_t waves, uint32_t wave, uint32_t block, nkv_cpu_fn fn, void *arg)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), NKV_CPU_FIBERS, waves, wave, 0, 0, diag,
				   sizeof(diag) };

	cfg.block_size = block;
	diag[0] = 0;
	return nkv_cpu_launch(&cfg, fn, arg);
}

/* @rounds batches of @threads Retrieves from one block of @waves x @wave
 * lanes (@block threads), queue depth @depth, the controller completing
 * once @hold are pending, in @order. */
static void block_batches(uint32_t waves, uint32_t wave, uint32_t block, uint32_t threads,
			  uint32_t depth, uint32_t rounds, int order, uint32_t hold)
{
	struct block_run r = { &tq, threads, rounds, 0, 0, 0, 0 };

	cr_assert_eq(test_qp_init(&tq, depth, depth, 0, 2000000000ull), 0);
	fake_start(&ctrl, &tq, order, hold);
	cr_assert_eq(launch(waves, wave, block, block_lane, &r), 0, "%s", diag);
	fake_stop(&ctrl);
	cr_expect_eq(r.errs, 0, "thread errors: %llu (last %d)", (unsigned long long)r.errs,
		     r.last_err);
	cr_expect_eq(r.wrong, 0, "results routed to the wrong thread: %llu",
		     (unsigned long long)r.wrong);
	cr_expect_eq(r.ok, (uint64_t)threads * rounds);
	cr_expect_eq(ctrl.submitted, (uint64_t)threads * rounds);
	cr_expect_eq(ctrl.bad_delta, 0, "a doorbell for nothing or past the credits");
	cr_expect_eq(ctrl.overrun, 0, "SQ tail passed the reported SQ head");
	cr_expect_eq(ctrl.cid_reuse, 0, "CID reused while in flight");
	cr_expect_eq(tq.qp.commands, (uint64_t)threads * rounds);
	cr_expect_eq(tq.qp.sq_doorbells, ctrl.sq_writes, "device-counted doorbells");
	cr_expect_eq(tq.qp.inflight, 0);
	cr_expect_eq(tq.qp.cids_held, 0);
	cr_expect_eq(nkv_dev_qp_failed(&tq.qp), NKV_QP_OK);
	if (threads <= tq.qp.credit_limit) {
		cr_expect_eq(ctrl.sq_writes, rounds, "doorbell writes %llu for %u batches",
			     (unsigned long long)ctrl.sq_writes, rounds);
		cr_expect_eq(ctrl.last_tail, (threads * rounds) % depth, "tail across wrap");
	}
	test_qp_free(&tq);
}

/* 4 waves x 32 lanes: 128 commands, one doorbell per batch, completions
 * shuffled once all 128 are in. */
Test(block_submit, four_waves_one_doorbell)
{
	block_batches(4, 32, 128, 128, 256, 12, FAKE_SHUFFLED, 128);
}

/* A GPU block of 1023 threads: 32 waves, the last of 31 lanes; queue
 * depth 1024, so 1023 commands (the credit limit) in one doorbell. */
Test(block_submit, block_of_1023_one_doorbell, .timeout = 60)
{
	block_batches(32, 32, 1023, 1023, 1024, 3, FAKE_SHUFFLED, 1023);
}

/* 32 full waves, the block's last thread without a command. */
Test(block_submit, block_of_1024_with_1023_commands, .timeout = 60)
{
	block_batches(32, 32, 1024, 1023, 1024, 2, FAKE_REVERSED, 1023);
}

/* Waves of 64 (AMD CDNA): 4 of them, 200 commands of 256 threads. */
Test(block_submit, wave64_block_partial_batch)
{
	block_batches(4, 64, 256, 200, 512, 6, FAKE_REVERSED, 200);
}

/* Depth 64 (credit 63) under a block of 128: chunks of at most 63, the
 * slots reused only after the controller reported them fetched. (The
 * fake's queue pair has 2 x depth CIDs; every command of a batch holds
 * one until its wait.) */
Test(block_submit, wider_than_the_credit_limit_goes_in_chunks)
{
	block_batches(4, 32, 128, 128, 64, 5, FAKE_REVERSED, 7);
	cr_expect_geq(ctrl.sq_writes, 5u * 3u, "128 SQEs need >= 3 chunks of <= 63");
}

/* A CQ smaller than the SQ bounds what is in flight. */
Test(block_submit, cq_depth_limits_the_chunks)
{
	struct block_run r = { &tq, 96, 4, 0, 0, 0, 0 };

	cr_assert_eq(test_qp_init(&tq, 128, 8, 0, 2000000000ull), 0);
	fake_start(&ctrl, &tq, FAKE_SHUFFLED, 1);
	cr_assert_eq(launch(3, 32, 96, block_lane, &r), 0, "%s", diag);
	fake_stop(&ctrl);
	cr_expect_eq(r.ok, 96u * 4u, "errs %llu last %d", (unsigned long long)r.errs, r.last_err);
	cr_expect_eq(ctrl.bad_delta, 0);
	cr_expect_eq(ctrl.cid_reuse, 0);
	test_qp_free(&tq);
}

/* Three batches in flight per block, waited last first: each thread's
 * slots from nkv_block_slot(b, k), each result its own command's (the
 * fake answers DW0 = size * 3 + opcode, 87h for an odd first key byte). */
struct flight_run {
	uint32_t ok[3], wrong[3];
	uint32_t same_slot;
};

static void flight_check(struct flight_run *f, int k, const struct nkv_prep *p,
			 struct nkv_ticket t, struct nkv_dev_result r)
{
	int good = !r.err && r.cid == t.cid && r.dw0 == fake_dw0(&p->sqe) &&
		   r.status == fake_status(&p->sqe);

	__atomic_fetch_add(good ? &f->ok[k] : &f->wrong[k], 1, __ATOMIC_RELAXED);
}

static void flight_lane(void *arg)
{
	struct flight_run *f = arg;
	NKV_BLOCK_SHARED(sh);
	const struct nkv_block b = nkv_block_enter(sh);
	struct nkv_dev_qp *qp = &tq.qp;
	struct nkv_prep p[3];
	struct nkv_ticket t[3];
	struct nkv_dev_result r[3];
	int k;

	for (k = 0; k < 3; k++) {
		uint8_t key[4] = { (uint8_t)('a' + k), (uint8_t)b.thread, (uint8_t)(b.thread >> 8),
				   'x' };

		p[k] = nkv_dev_store(qp, nkv_block_slot(b, (uint32_t)k), key, 4, 0,
				     100u * (uint32_t)(k + 1) + b.thread);
		t[k] = nkv_block_submit(b, qp, 1, p[k]);
	}
	r[2] = nkv_block_wait(b, qp, t[2]);
	r[0] = nkv_block_wait(b, qp, t[0]);
	r[1] = nkv_block_wait(b, qp, t[1]);
	for (k = 0; k < 3; k++)
		flight_check(f, k, &p[k], t[k], r[k]);
	if (p[0].sqe.prp1 == p[1].sqe.prp1 || p[1].sqe.prp1 == p[2].sqe.prp1)
		__atomic_fetch_add(&f->same_slot, 1, __ATOMIC_RELAXED);
}

Test(block_submit, three_batches_in_flight_any_order)
{
	struct flight_run f;
	int k;

	memset(&f, 0, sizeof(f));
	cr_assert_eq(test_qp_init(&tq, 256, 256, 3 * 64, 2000000000ull), 0);
	fake_start(&ctrl, &tq, FAKE_SHUFFLED, 1);
	cr_assert_eq(launch(2, 32, 64, flight_lane, &f), 0, "%s", diag);
	fake_stop(&ctrl);
	for (k = 0; k < 3; k++)
		cr_expect_eq(f.ok[k], 64, "batch %d: %u wrong", k, f.wrong[k]);
	cr_expect_eq(f.same_slot, 0, "two batches shared a value slot");
	cr_expect_eq(ctrl.sq_writes, 3, "one doorbell per batch");
	cr_expect_eq(ctrl.cid_reuse, 0);
	cr_expect_eq(tq.qp.inflight, 0);
	cr_expect_eq(tq.qp.cids_held, 0, "every result taken, every CID back");
	test_qp_free(&tq);
}

/* The kernel body the GPU wrappers use (nkv_wk_kv_block): Stores of 4 KiB
 * through the slots from a block of 4 x 32; one key too long (its
 * builder refuses it, the thread still takes part), the rest in one
 * doorbell. */
struct kb_arg {
	struct nkv_dev_qp *qp;
	struct nkv_wk_args a;
};

static void kb_lane(void *p)
{
	struct kb_arg *k = p;

	nkv_wk_kv_block(k->qp, &k->a);
}

Test(block_submit, kernel_body_with_a_builder_error)
{
	static struct nkv_wk_key keys[128];
	static struct nkv_wk_out out[128];
	struct kb_arg k;
	uint32_t i;

	memset(keys, 0, sizeof(keys));
	memset(out, 0xff, sizeof(out));
	for (i = 0; i < 128; i++) {
		keys[i].len = 1 + i % 16;
		memset(keys[i].key, 'a' + i % 26, keys[i].len);
		keys[i].key[0] = (uint8_t)(2 * i);	/* even: no 87h */
	}
	keys[77].len = 17;	/* refused by its builder */
	cr_assert_eq(test_qp_init(&tq, 256, 256, 128, 2000000000ull), 0);
	k.qp = &tq.qp;
	memset(&k.a, 0, sizeof(k.a));
	k.a.keys_addr = (uintptr_t)keys;
	k.a.out_addr = (uintptr_t)out;
	k.a.count = 128;
	k.a.opc = NKV_KV_STORE;
	k.a.value_size = 4096;
	fake_start(&ctrl, &tq, FAKE_SHUFFLED, 127);
	cr_assert_eq(launch(4, 32, 128, kb_lane, &k), 0, "%s", diag);
	fake_stop(&ctrl);
	for (i = 0; i < 128; i++) {
		if (i == 77) {
			cr_expect_eq(out[i].err, NKV_EINVAL);
			cr_expect_eq(out[i].cid, NKV_CID_NONE);
			continue;
		}
		cr_expect_eq(out[i].err, 0, "key %u err %d", i, out[i].err);
		cr_expect_eq(out[i].status, 0, "key %u", i);
		cr_expect_eq(out[i].dw0, 4096u * 3u + NKV_KV_STORE, "key %u", i);
	}
	cr_expect_eq(ctrl.sq_writes, 1, "127 SQEs in one doorbell");
	cr_expect_eq(ctrl.submitted, 127);
	cr_expect_eq(tq.qp.cids_held, 0);
	test_qp_free(&tq);
}

/* A controller that never answers: thread 0's bounded poll runs out,
 * every waiting thread gets NKV_ETIMEDOUT and the queue pair is failed;
 * a later block gets NKV_EIO at once and rings nothing. */
Test(block_submit, timeout_fails_the_queue_pair)
{
	struct block_run r = { &tq, 64, 1, 0, 0, 0, 0 };
	struct block_run again = { &tq, 64, 1, 0, 0, 0, 0 };

	cr_assert_eq(test_qp_init(&tq, 128, 128, 0, 5000), 0);
	fake_start(&ctrl, &tq, FAKE_IN_ORDER, 1);
	ctrl.mute = 1;
	cr_assert_eq(launch(2, 32, 64, block_lane, &r), 0, "%s", diag);
	cr_expect_eq(r.errs, 64);
	cr_expect_eq(r.last_err, NKV_ETIMEDOUT);
	cr_expect_eq(nkv_dev_qp_failed(&tq.qp), NKV_QP_FAILED_TIMEOUT);
	cr_assert_eq(launch(2, 32, 64, block_lane, &again), 0, "%s", diag);
	cr_expect_eq(again.errs, 64);
	cr_expect_eq(again.last_err, NKV_EIO);
	cr_expect_eq(ctrl.sq_writes, 1, "no doorbell on a failed queue pair");
	fake_stop(&ctrl);
	test_qp_free(&tq);
}

/* Results not taken hold their CIDs: a third batch gets the CIDs that
 * are left, the threads it could not take learn why (NKV_ENOSPC), and
 * the queue pair stays usable. Depth 32: 64 CIDs, two batches of 24
 * leave 16 for the third. */
struct spent_run {
	int32_t err3[24];
	uint32_t ok12;
};

static void spent_lane(void *arg)
{
	struct spent_run *s = arg;
	NKV_BLOCK_SHARED(sh);
	const struct nkv_block b = nkv_block_enter(sh);
	struct nkv_dev_qp *qp = &tq.qp;
	uint8_t key[2] = { 'b', (uint8_t)b.thread };
	int have = b.thread < 24;
	struct nkv_ticket t1 = nkv_block_submit(b, qp, have, nkv_dev_exist(qp, 0, key, 2));
	struct nkv_ticket t2 = nkv_block_submit(b, qp, have, nkv_dev_exist(qp, 0, key, 2));
	struct nkv_ticket t3 = nkv_block_submit(b, qp, have, nkv_dev_exist(qp, 0, key, 2));
	struct nkv_dev_result r3 = nkv_block_wait(b, qp, t3);
	struct nkv_dev_result r1 = nkv_block_wait(b, qp, t1);
	struct nkv_dev_result r2 = nkv_block_wait(b, qp, t2);

	if (have)
		s->err3[b.thread] = r3.err;
	if (have && !r1.err && !r2.err && !r1.status && !r2.status)
		__atomic_fetch_add(&s->ok12, 1, __ATOMIC_RELAXED);
}

Test(block_submit, tickets_say_which_threads_went_in)
{
	struct spent_run s;
	uint32_t i, enospc = 0, ok = 0;

	memset(&s, 0, sizeof(s));
	cr_assert_eq(test_qp_init(&tq, 32, 32, 0, 2000000000ull), 0);
	cr_assert_eq(tq.qp.cid_count, 64u);
	fake_start(&ctrl, &tq, FAKE_IN_ORDER, 1);
	cr_assert_eq(launch(4, 8, 32, spent_lane, &s), 0, "%s", diag);
	fake_stop(&ctrl);
	cr_expect_eq(s.ok12, 24);
	for (i = 0; i < 24; i++) {
		enospc += s.err3[i] == NKV_ENOSPC;
		ok += s.err3[i] == 0;
	}
	cr_expect_eq(ok, 16, "the 16 CIDs left went in");
	cr_expect_eq(enospc, 8, "the rest were told why");
	for (i = 0; i < 16; i++)
		cr_expect_eq(s.err3[i], 0, "the first in block order went in: thread %u", i);
	cr_expect_eq(nkv_dev_qp_failed(&tq.qp), NKV_QP_OK, "backpressure is not a failure");
	cr_expect_eq(tq.qp.cids_held, 0);
	test_qp_free(&tq);
}
