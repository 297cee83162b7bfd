/* SPDX-License-Identifier: MIT */
/*
 * Block batches (nkv_block.h) on the cpu engine against the real target
 * (an in-process nkv-target over vfio-user, the host library's queue
 * pairs): a block of 1024 threads Stores, Retrieves (4 KiB LFSR values,
 * checked byte for byte), tests and Deletes 1023 keys with ONE SQ tail
 * doorbell per op at queue depth 1024, counted at the doorbell itself; a
 * 1024-command block goes in as 1023 + 1; two blocks of 4 waves each own
 * a queue pair, with values in the (emulated) device arena, also under
 * the checking mode.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_util.h"
#include "nkv_block.h"
#include "nkv_cpu.h"
#include "nkv_host.h"

#define VLEN 4096u

enum hb_op { HB_STORE, HB_RETRIEVE, HB_EXIST, HB_DELETE, HB_GONE };

struct hb_job {
	struct nkv_dev_qp *qp[2];
	uint32_t commands;	/* threads with a command, per block */
	enum hb_op op;
	uint64_t ok, bad, errs;	/* atomics */
	int last_err;
	uint32_t last_status;
	/* SQ tail doorbell writes per queue pair, seen at the store itself */
	uint64_t sq_writes[2];
};

static uint32_t hb_seed(uint32_t blk, uint32_t i)
{
	return (blk + 1u) << 24 ^ i * 2654435761u;
}

/* Thread @i's command of block @blk, through its own slot. */
static struct nkv_prep hb_prep(const struct hb_job *j, struct nkv_dev_qp *qp, uint32_t blk,
			       uint32_t i, uint32_t slot)
{
	uint8_t key[16];
	uint32_t kl = ht_key(i, 0x40 + blk, key);

	switch (j->op) {
	case HB_STORE:
		ht_fill(nkv_dev_value(qp, slot), VLEN, hb_seed(blk, i));
		return nkv_dev_store(qp, slot, key, kl, 0, VLEN);
	case HB_RETRIEVE:
		memset(nkv_dev_value(qp, slot), 0, VLEN);
		return nkv_dev_retrieve(qp, slot, key, kl);
	case HB_DELETE:
		return nkv_dev_delete(qp, slot, key, kl);
	default:
		return nkv_dev_exist(qp, slot, key, kl);
	}
}

static int hb_good(const struct hb_job *j, struct nkv_dev_qp *qp, uint32_t blk, uint32_t i,
		   uint32_t slot, const struct nkv_dev_result *r)
{
	if (j->op == HB_GONE)
		return r->status == NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS);
	if (r->status)
		return 0;
	return j->op != HB_RETRIEVE ||
	       (r->dw0 == VLEN && ht_check(nkv_dev_value(qp, slot), VLEN, hb_seed(blk, i)) == -1);
}

static void hb_lane(void *arg)
{
	struct hb_job *j = arg;
	NKV_BLOCK_SHARED(sh);
	const struct nkv_block b = nkv_block_enter(sh);
	uint32_t blk = nkv_cpu_block_id(), slot = nkv_block_slot(b, 0);
	struct nkv_dev_qp *qp = j->qp[blk];
	int have = b.thread < j->commands;
	struct nkv_dev_result r =
		nkv_block_exec(b, qp, have,
			       have ? hb_prep(j, qp, blk, b.thread, slot) : nkv_prep_err(0));

	if (!have)
		return;
	if (r.err) {
		__atomic_fetch_add(&j->errs, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&j->last_err, r.err, __ATOMIC_RELAXED);
	} else if (hb_good(j, qp, blk, b.thread, slot, &r)) {
		__atomic_fetch_add(&j->ok, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_fetch_add(&j->bad, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&j->last_status, r.status | (r.err ? 0 : 0x10000u),
				 __ATOMIC_RELAXED);
	}
}

/* Counts the device's SQ tail writes of each queue pair (blocks run on
 * threads of their own: atomics). */
static void hb_hook(void *ctx, volatile uint32_t *addr, uint32_t v)
{
	struct hb_job *j = ctx;
	int q;

	(void)v;
	for (q = 0; q < 2; q++)
		if (j->qp[q] && (uintptr_t)addr == j->qp[q]->sq_db_addr)
			__atomic_fetch_add(&j->sq_writes[q], 1, __ATOMIC_RELAXED);
}

/* One op from @nblocks blocks of @waves x 32 threads (@block threads);
 * expects every command's outcome and @doorbells SQ writes per queue
 * pair. */
static void hb_op(struct hb_job *j, enum hb_op op, uint32_t mode, uint32_t nblocks,
		  uint32_t waves, uint32_t block, uint64_t doorbells)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), mode, waves * nblocks, 32, 0, 11 };
	char diag[512] = "";
	uint32_t q;

	cfg.block_size = block;
	cfg.diag = diag;
	cfg.diag_len = sizeof(diag);
	j->op = op;
	j->ok = j->bad = j->errs = 0;
	j->sq_writes[0] = j->sq_writes[1] = 0;
	nkv_cpu_set_mmio_hook(hb_hook, j);
	cr_assert_eq(nkv_cpu_launch(&cfg, hb_lane, j), 0, "op %d: %s", op, diag);
	nkv_cpu_set_mmio_hook(NULL, NULL);
	cr_expect_eq(j->errs, 0, "op %d: %llu errors (last %d)", op, (unsigned long long)j->errs,
		     j->last_err);
	cr_expect_eq(j->bad, 0, "op %d: %llu bad (last status %#x)", op,
		     (unsigned long long)j->bad, j->last_status);
	cr_expect_eq(j->ok, (uint64_t)j->commands * nblocks, "op %d", op);
	for (q = 0; q < nblocks; q++)
		cr_expect_eq(j->sq_writes[q], doorbells, "op %d qp %u: %llu SQ doorbells", op, q,
			     (unsigned long long)j->sq_writes[q]);
}

/* Store, Retrieve (bytes checked), Exist, Delete, Exist (87h). */
static void hb_cycle(struct hb_job *j, uint32_t mode, uint32_t nblocks, uint32_t waves,
		     uint32_t block, uint64_t doorbells)
{
	static const enum hb_op ops[] = { HB_STORE, HB_RETRIEVE, HB_EXIST, HB_DELETE, HB_GONE };
	uint32_t k;

	for (k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
		hb_op(j, ops[k], mode, nblocks, waves, block, doorbells);
}

/* A target, a controller in memory mode @mode and @n queue pairs of
 * @depth with one 4 KiB slot per thread of a block of @block. */
static void hb_setup(struct tl_server *s, struct nkv_ctrl **c, struct nkv_qpair **qp,
		     struct hb_job *j, uint32_t mode, uint32_t n, uint32_t depth, uint32_t block)
{
	struct nkv_qpair_opts o = { .size = sizeof(o) };
	char err[256] = "";
	uint32_t q;

	memset(j, 0, sizeof(*j));
	cr_assert_eq(ht_server_start(s, NULL), 0);
	cr_assert_eq(ht_connect(s, mode, n, c, err, sizeof(err)), 0, "%s", err);
	o.depth = depth;
	o.slots = block;
	o.slot_size = VLEN;
	for (q = 0; q < n; q++) {
		cr_assert_eq(nkv_qpair_create(*c, &o, &qp[q]), 0);
		j->qp[q] = nkv_qpair_dev(qp[q]);
	}
}

static void hb_teardown(struct tl_server *s, struct nkv_ctrl *c, struct nkv_qpair **qp,
			uint32_t n)
{
	uint32_t q;

	for (q = 0; q < n; q++)
		cr_expect_eq(nkv_qpair_failed(qp[q]), NKV_QP_OK);
	nkv_ctrl_close(c);
	tl_server_stop(s);
}

/* 32 waves of 32, the last thread without a command: 1023 commands,
 * the credit limit of depth 1024, in one doorbell per op. */
Test(host_block, block_of_1024_rings_once_for_1023, .timeout = 120)
{
	struct nkv_qpair *qp[1];
	struct tl_server s;
	struct nkv_qpair_stats st;
	struct nkv_ctrl *c;
	struct hb_job j;

	alarm(120);
	hb_setup(&s, &c, qp, &j, 0x0, 1, 1024, 1024);
	j.commands = 1023;
	hb_cycle(&j, NKV_CPU_FIBERS, 1, 32, 1024, 1);
	cr_assert_eq(nkv_qpair_get_stats(qp[0], &st), 0);
	cr_expect_eq(st.dev_sq_doorbells, 5, "the device counted 5 doorbells for 5 ops");
	cr_expect_eq(st.dev_commands, 5u * 1023u);
	hb_teardown(&s, c, qp, 1);
}

/* 1024 commands at depth 1024 (1023 credits): a chunk of 1023, then 1;
 * the queue pair's 1024 CIDs hold them all until the wait. */
Test(host_block, block_of_1024_commands_in_two_chunks, .timeout = 120)
{
	struct nkv_qpair *qp[1];
	struct tl_server s;
	struct nkv_ctrl *c;
	struct hb_job j;

	alarm(120);
	hb_setup(&s, &c, qp, &j, 0x0, 1, 1024, 1024);
	j.commands = 1024;
	hb_op(&j, HB_STORE, NKV_CPU_FIBERS, 1, 32, 1024, 2);
	hb_op(&j, HB_RETRIEVE, NKV_CPU_FIBERS, 1, 32, 1024, 2);
	hb_teardown(&s, c, qp, 1);
}

/* Two blocks of 4 waves x 32, one queue pair each, values in the device
 * arena (mode 0x8): one doorbell per op per queue pair; then the same
 * under the checking mode (random thread order across the block's
 * waves, random yields in thread 0's polls). */
Test(host_block, two_blocks_of_four_waves, .timeout = 120)
{
	struct nkv_qpair *qp[2];
	struct tl_server s;
	struct nkv_ctrl *c;
	struct hb_job j;

	alarm(120);
	hb_setup(&s, &c, qp, &j, 0x8, 2, 256, 128);
	j.commands = 128;
	hb_cycle(&j, NKV_CPU_FIBERS, 2, 4, 128, 1);
	j.commands = 100;
	hb_cycle(&j, NKV_CPU_CHECK, 2, 4, 128, 1);
	hb_teardown(&s, c, qp, 2);
}
