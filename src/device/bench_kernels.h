/* SPDX-License-Identifier: MIT */
/*
 * bench_kernels.h - nkv-bench's kernel body, written once: the cpu engine
 * runs it from its lanes (bench/run.c), bench/gpu_launch.h wraps it in a
 * __global__ function for nvcc and hipcc (nkv-bench --engine gpu).
 *
 * One wave owns @qp (nkv_dev.h). The wave walks its keys in batches of
 * a->batch lanes: lane l of batch b handles key b * batch + l through
 * value slot nkv_wave_slot(w, 0), so a batch is one doorbell and B completions. The leader
 * (lane 0) times each batch from just before the submit until every lane of the
 * batch holds its completion (nkv_wave_exec returns converged), and
 * bumps a progress word the host may read while the kernel runs.
 * Counters are per lane (no atomics on the hot path); the host sums them.
 *
 * Values are a xorshift32 stream (a linear-feedback shift register
 * generator) seeded by the run's seed and the key's global index: a
 * Store fills the slot with it (outside the timed region), a Retrieve
 * compares the slot with it byte for byte (also outside).
 */
#ifndef NKV_DEVICE_BENCH_KERNELS_H
#define NKV_DEVICE_BENCH_KERNELS_H

#include "nkv_block.h"
#include "nkv_list.h"
#include "nkv_mr.h"

#if !defined(__HIPCC__) && !defined(__CUDACC__)
#include <time.h>
#endif

/* A key: up to 16 bytes and its length (same layout as nkv_wk_key). */
struct nkv_bk_key {
	uint8_t key[NKV_KEY_MAX];	/* 1..255 bytes: longer than 16 go in head form */
	uint32_t len;
};

#define NKV_BK_EXEC_IN_MAX 64u	/* bytes of Exec input the arguments carry */
#define NKV_BK_VERIFY 0x1u	/* Retrieve/List: check what came back */
#define NKV_BK_FILL 0x2u	/* Store: write the pattern into the slot */

/* Per-wave arguments, written by the host before launch. */
struct nkv_bk_args {
	uint64_t keys_addr;	/* struct nkv_bk_key[count]: this wave's keys */
	uint64_t lat_addr;	/* uint64_t[iterations * batches]: ticks per batch */
	uint64_t lanes_addr;	/* struct nkv_bk_lane[batch]: counters per lane */
	uint64_t progress_addr;	/* uint32_t: batches done (relaxed) */
	uint32_t count;		/* keys of this wave */
	uint32_t key_base;	/* global index of keys[0] (pattern seed) */
	uint32_t opc;		/* NKV_KV_STORE / RETRIEVE / DELETE / EXIST / LIST */
	uint32_t batch;		/* lanes per doorbell, <= wave size, <= nr_slots */
	uint32_t iterations;
	uint32_t value_size;	/* Store: bytes; Retrieve: expected stored size */
	uint32_t seed;
	uint32_t flags;		/* NKV_BK_* */
	uint32_t ttl_s;		/* Store: a TTL of this many seconds; 0: none
				 * (wave batches only: nkv_bk_run_block) */
	uint32_t scatter;	/* --dest region: runs per value; 0: slots */
	uint64_t runs_addr;	/* --dest region: struct nkv_dev_iov[slots *
				 * scatter], each slot's runs in a region (the
				 * queue pair has no slots) */
	uint32_t op_id;		/* Exec: CDW13 */
	uint32_t exec_ilen;	/* Exec: input bytes in exec_in */
	uint8_t exec_in[NKV_BK_EXEC_IN_MAX];
};

NKV_STATIC_ASSERT(offsetof(struct nkv_bk_args, exec_in) % 4 == 0,
		  "exec_in is copied a word at a time");

/* What one lane saw. by_status: generic statuses 80h..8Fh. */
struct nkv_bk_lane {
	uint64_t commands;	/* completions received */
	uint64_t ok;		/* status 0 */
	uint64_t bytes;		/* value / List bytes moved */
	uint64_t dev_errors;	/* nkv_dev.h errors: the command did not run */
	uint64_t verify_fail;	/* value or List payload not as expected */
	uint64_t other_status;	/* non-zero statuses outside 80h..8Fh */
	uint64_t by_status[16];
	int32_t last_dev_error;
	/* The first verify failure this lane saw: which key, and whether the
	 * length (bad_off -1: the stored length was bad_len) or the content
	 * (first differing byte bad_off) was wrong; for a List, the entry
	 * bad_entry at byte bad_off where its payload stops parsing (bad_len:
	 * DW0). */
	int32_t bad_off;
	uint64_t len_fail;	/* verify failures that were a length */
	uint32_t bad_idx;	/* global key index, valid when verify_fail */
	uint32_t bad_len;
	uint32_t bad_entry;
	uint64_t lost;		/* dev_errors of commands sent that never
				 * completed (timed out, the controller gone) */
	uint32_t first_other;	/* the first status outside 80h..8Fh */
};

/* A clock in ticks: nanoseconds on the cpu engine and CUDA's global
 * timer; the constant-rate wall clock on HIP (the host scales it). */
NKV_DEV uint64_t nkv_bk_clock(void)
{
#if defined(__HIPCC__)
#if defined(__HIP_DEVICE_COMPILE__)
	return (uint64_t)wall_clock64();
#else
	return 0;	/* the host pass never runs device code */
#endif
#elif defined(__CUDACC__)
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/* Pattern seed of key @idx: never 0 (xorshift32 would stay at 0). */
NKV_HD uint32_t nkv_bk_seed(uint32_t seed, uint32_t idx)
{
	uint32_t x = seed ^ ((idx + 1u) * 0x9e3779b9u);

	return x ? x : 0x6b657931u;
}

NKV_HD uint32_t nkv_bk_next(uint32_t x)
{
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

/* Write @len pattern bytes: word stores, the tail byte by byte. */
NKV_HD void nkv_bk_fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t x = seed, i;

	for (i = 0; i + 4u <= len; i += 4u) {
		x = nkv_bk_next(x);
		*(uint32_t *)(p + i) = x;
	}
	x = nkv_bk_next(x);
	for (; i < len; i++, x >>= 8)
		p[i] = (uint8_t)x;
}

/* Offset of the first byte differing from the pattern, or -1. */
NKV_HD int64_t nkv_bk_check(const uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t x = seed, i, j;

	for (i = 0; i + 4u <= len; i += 4u) {
		x = nkv_bk_next(x);
		if (*(const uint32_t *)(p + i) != x)
			break;
	}
	if (i + 4u <= len) {
		for (j = 0; j < 4u; j++, x >>= 8)
			if (p[i + j] != (uint8_t)x)
				return (int64_t)(i + j);
	}
	x = nkv_bk_next(x);
	for (; i < len; i++, x >>= 8)
		if (p[i] != (uint8_t)x)
			return (int64_t)i;
	return -1;
}

/* --dest region: the runs of slot @slot's value (a->scatter of them). */
NKV_HD const struct nkv_dev_iov *nkv_bk_runs(const struct nkv_bk_args *a, uint32_t slot)
{
	return NKV_DEV_PTR(const struct nkv_dev_iov, a->runs_addr) + (uint64_t)slot * a->scatter;
}

/* Where run @v lies, for device code. */
NKV_HD uint8_t *nkv_bk_run_ptr(const struct nkv_dev_iov *v)
{
	return NKV_DEV_PTR(uint8_t, NKV_DEV_PTR(const struct nkv_dev_mr, v->mr)->addr + v->off);
}

/* The pattern of nkv_bk_fill() over @n runs, as if they were one buffer:
 * every run but the last a whole number of words (run.c lays them so). */
NKV_HD void nkv_bk_fill_runs(const struct nkv_dev_iov *v, uint32_t n, uint32_t seed)
{
	uint32_t x = seed, k, i;

	for (k = 0; k + 1u < n; k++) {
		uint8_t *p = nkv_bk_run_ptr(&v[k]);

		for (i = 0; i + 4u <= v[k].len; i += 4u) {
			x = nkv_bk_next(x);
			*(uint32_t *)(p + i) = x;
		}
	}
	nkv_bk_fill(nkv_bk_run_ptr(&v[n - 1u]), v[n - 1u].len, x);
}

/* nkv_bk_check() over @n runs: the first differing byte's offset in the
 * value, or -1. */
NKV_HD int64_t nkv_bk_check_runs(const struct nkv_dev_iov *v, uint32_t n, uint32_t seed)
{
	uint32_t x = seed, k, i;
	int64_t base = 0, off;

	for (k = 0; k + 1u < n; k++) {
		const uint8_t *p = nkv_bk_run_ptr(&v[k]);

		for (i = 0; i + 4u <= v[k].len; i += 4u) {
			x = nkv_bk_next(x);
			if (*(const uint32_t *)(p + i) != x)
				return base + i;
		}
		base += v[k].len;
	}
	off = nkv_bk_check(nkv_bk_run_ptr(&v[n - 1u]), v[n - 1u].len, x);
	return off < 0 ? -1 : base + off;
}

/* The command for key @k with its value in the region's runs of slot
 * @slot (--dest region): Store and Retrieve from and into them, Exist and
 * Delete a key head (if any) in the slot's command memory. */
NKV_DEV struct nkv_prep nkv_bk_prep_region(const struct nkv_dev_qp *qp,
					   const struct nkv_bk_args *a,
					   const struct nkv_bk_key *k, uint32_t slot,
					   uint32_t ttl_s)
{
	const struct nkv_dev_iov *v = nkv_bk_runs(a, slot);

	switch (a->opc) {
	case NKV_KV_STORE:
		if (ttl_s)
			return nkv_prep_ttl(nkv_dev_store_iov(qp, slot, k->key, k->len, NKV_STORE_TTL,
							      v, a->scatter, 0),
					    ttl_s);
		return nkv_dev_store_iov(qp, slot, k->key, k->len, 0, v, a->scatter, 0);
	case NKV_KV_RETRIEVE:
		return nkv_dev_retrieve_iov(qp, slot, k->key, k->len, v, a->scatter, 0);
	case NKV_KV_DELETE:
	case NKV_KV_EXIST:
		return nkv_dev_nodata_cmd(qp, slot, (uint8_t)a->opc, k->key, k->len);
	default:
		return nkv_prep_err(NKV_EINVAL);
	}
}

/* Exec through slot @slot: the input at the slot's value, the output
 * back over the slot (its whole size, less the head). */
NKV_DEV struct nkv_prep nkv_bk_prep_exec(const struct nkv_dev_qp *qp, const struct nkv_bk_args *a,
					 const struct nkv_bk_key *k, uint32_t slot)
{
	const struct nkv_dev_slot *s = nkv_dev_slot_get(qp, slot);
	uint8_t *in = (uint8_t *)nkv_dev_value(qp, slot);
	uint32_t i;

	if (!s || !in || a->exec_ilen > NKV_BK_EXEC_IN_MAX || s->size < NKV_BK_EXEC_IN_MAX)
		return nkv_prep_err(NKV_EINVAL);
	/* All NKV_BK_EXEC_IN_MAX bytes, a word at a time, a fixed count: a
	 * loop bounded by exec_ilen cost the block kernel (1024 threads, 64
	 * registers each) a stack frame of spills (check_resources.py). */
	for (i = 0; i < NKV_BK_EXEC_IN_MAX / 4; i++)
		((uint32_t *)in)[i] = ((const uint32_t *)a->exec_in)[i];
	return nkv_dev_exec(qp, slot, k->key, k->len, a->op_id, a->exec_ilen, s->size);
}

/* This lane's SQE for key @k through slot @slot, by value; a Store with
 * a TTL of @ttl_s seconds (0: none). */
NKV_DEV struct nkv_prep nkv_bk_prep(const struct nkv_dev_qp *qp, const struct nkv_bk_args *a,
				    const struct nkv_bk_key *k, uint32_t slot, uint32_t ttl_s)
{
	if (a->runs_addr)
		return nkv_bk_prep_region(qp, a, k, slot, ttl_s);
	switch (a->opc) {
	case NKV_KV_STORE:
		if (ttl_s)
			return nkv_dev_store_ttl(qp, slot, k->key, k->len, 0, a->value_size, ttl_s);
		return nkv_dev_store(qp, slot, k->key, k->len, 0, a->value_size);
	case NKV_KV_RETRIEVE:
		return nkv_dev_retrieve(qp, slot, k->key, k->len);
	case NKV_KV_DELETE:
		return nkv_dev_delete(qp, slot, k->key, k->len);
	case NKV_KV_EXIST:
		return nkv_dev_exist(qp, slot, k->key, k->len);
	case NKV_KV_LIST:
		return nkv_dev_list(qp, slot, k->key, k->len);
	case NKV_KV_EXEC:
		return nkv_bk_prep_exec(qp, a, k, slot);
	default:
		return nkv_prep_err(NKV_EINVAL);
	}
}

/* Did what came back match? -2 yes; -1 the length differs (r->dw0);
 * else the offset of the first differing byte, or for a List the byte
 * where its payload stops parsing (entry *@entry). Only successful
 * commands. */
NKV_DEV int64_t nkv_bk_verify(const struct nkv_dev_qp *qp, const struct nkv_bk_args *a,
			      uint32_t slot, uint32_t idx, const struct nkv_dev_result *r,
			      uint32_t *entry)
{
	const struct nkv_dev_slot *s = nkv_dev_slot_get(qp, slot);
	const uint8_t *p = s ? NKV_DEV_PTR(const uint8_t, s->addr) : 0;

	if (a->opc == NKV_KV_RETRIEVE) {
		uint32_t seed = nkv_bk_seed(a->seed, a->key_base + idx);
		int64_t off;

		if (r->dw0 != a->value_size)
			return -1;
		off = a->runs_addr ? nkv_bk_check_runs(nkv_bk_runs(a, slot), a->scatter, seed)
				   : nkv_bk_check(p, r->dw0 < s->size ? r->dw0 : s->size, seed);
		return off < 0 ? -2 : off;
	}
	if (a->opc == NKV_KV_LIST) {
		uint32_t off = 0;

		return nkv_list_check_at(p, s->size, entry, &off) >= 0 ? -2 : (int64_t)off;
	}
	return -2;
}

/* Note a verify failure (@off and @entry as nkv_bk_verify says) of key
 * @idx. */
NKV_DEV void nkv_bk_verify_fail(struct nkv_bk_lane *c, uint32_t idx, int64_t off, uint32_t len,
				uint32_t entry)
{
	if (!c->verify_fail) {
		c->bad_idx = idx;
		c->bad_off = (int32_t)off;
		c->bad_len = len;
		c->bad_entry = entry;
	}
	c->verify_fail++;
	c->len_fail += off == -1;
}

/* File one lane's result into its counters. */
NKV_DEV void nkv_bk_account(const struct nkv_dev_qp *qp, const struct nkv_bk_args *a,
			    struct nkv_bk_lane *c, uint32_t slot, uint32_t idx,
			    const struct nkv_dev_result *r)
{
	const struct nkv_dev_slot *s = nkv_dev_slot_get(qp, slot);
	uint32_t size = a->runs_addr ? a->value_size : s->size;
	uint32_t sct = nkv_status_sct(r->status), sc = nkv_status_sc(r->status);

	if (r->err) {
		c->dev_errors++;
		c->lost += r->err == NKV_ETIMEDOUT || r->err == NKV_ENOTCONN;
		c->last_dev_error = r->err;
		return;
	}
	c->commands++;
	if (r->status) {
		if (sct == NKV_SCT_GENERIC && sc >= 0x80u && sc <= 0x8fu) {
			c->by_status[sc - 0x80u]++;
			return;
		}
		if (!c->other_status)
			c->first_other = r->status;
		c->other_status++;
		return;
	}
	c->ok++;
	if (a->opc == NKV_KV_STORE)
		c->bytes += a->value_size;
	else if (a->opc == NKV_KV_RETRIEVE || a->opc == NKV_KV_EXEC)
		c->bytes += r->dw0 < size ? r->dw0 : size;
	else if (a->opc == NKV_KV_LIST)
		c->bytes += size;
	if (a->flags & NKV_BK_VERIFY) {
		uint32_t entry = 0;
		int64_t off = nkv_bk_verify(qp, a, slot, idx, r, &entry);

		if (off != -2)
			nkv_bk_verify_fail(c, a->key_base + idx, off, r->dw0, entry);
	}
}

/* Thread @t's command of batch @b (a wave's lane or a block's thread):
 * with a Store, the pattern first written into its slot, and a TTL of
 * @ttl_s seconds (0: none). Pure per thread; nkv_prep_err(0) for a
 * thread without a key in the batch. */
NKV_DEV struct nkv_prep nkv_bk_batch_prep(struct nkv_dev_qp *qp, const struct nkv_bk_args *a,
					  uint32_t b, uint32_t t, uint32_t slot, uint32_t ttl_s)
{
	const struct nkv_bk_key *keys = NKV_DEV_PTR(const struct nkv_bk_key, a->keys_addr);
	uint32_t idx = b * a->batch + t;

	if (t >= a->batch || idx >= a->count)
		return nkv_prep_err(0);
	if (a->opc == NKV_KV_STORE && (a->flags & NKV_BK_FILL) && a->runs_addr)
		nkv_bk_fill_runs(nkv_bk_runs(a, slot), a->scatter,
				 nkv_bk_seed(a->seed, a->key_base + idx));
	else if (a->opc == NKV_KV_STORE && (a->flags & NKV_BK_FILL))
		nkv_bk_fill((uint8_t *)nkv_dev_value(qp, slot), a->value_size,
			    nkv_bk_seed(a->seed, a->key_base + idx));
	return nkv_bk_prep(qp, a, &keys[idx], slot, ttl_s);
}

/* The timing thread, after batch @b of pass @it (of @nb batches each):
 * its time since @t0, and the progress word the host reads while the
 * kernel runs. */
NKV_DEV void nkv_bk_batch_done(const struct nkv_bk_args *a, uint32_t it, uint32_t nb, uint32_t b,
			       uint64_t t0)
{
	uint64_t *lat = NKV_DEV_PTR(uint64_t, a->lat_addr);

	lat[(uint64_t)it * nb + b] = nkv_bk_clock() - t0;
	nkv_arch_store_sys_u32(NKV_DEV_PTR(uint32_t, a->progress_addr), it * nb + b + 1u);
}

/*
 * The kernel body: call it at kernel entry (it makes the wave context
 * there, where the launch is converged), one wave per queue pair. Runs
 * a->iterations passes over the wave's keys. A batch wider than the wave
 * fails the queue pair with NKV_QP_FAILED_ARGS at once (a batch is one
 * wave: 32 lanes on NVIDIA, 64 on AMD CDNA). Stops early, uniformly, when
 * the queue pair failed (a timeout or a bad CQE): the host sees it in
 * nkv_qpair_failed() and in the lanes' dev_errors.
 */
NKV_DEV void nkv_bk_run(struct nkv_dev_qp *qp, const struct nkv_bk_args *a)
{
	const struct nkv_wave w = nkv_wave_enter();
	struct nkv_bk_lane *lanes = NKV_DEV_PTR(struct nkv_bk_lane, a->lanes_addr);
	uint32_t lane = w.lane, slot = nkv_wave_slot(w, 0);
	uint32_t nb = (a->count + a->batch - 1u) / a->batch, it, b;

	if (a->batch == 0 || a->batch > nkv_arch_popc64(w.mask)) {
		if (lane == w.leader)
			nkv_qp_fail(qp, NKV_QP_FAILED_ARGS);
		return;
	}
	for (it = 0; it < a->iterations; it++) {
		for (b = 0; b < nb; b++) {
			uint32_t idx = b * a->batch + lane;
			int have = lane < a->batch && idx < a->count;
			struct nkv_prep p = nkv_bk_batch_prep(qp, a, b, lane, slot, a->ttl_s);
			uint64_t t0 = lane == w.leader ? nkv_bk_clock() : 0;
			struct nkv_dev_result res = nkv_wave_exec(w, qp, have, p);

			if (lane == w.leader)
				nkv_bk_batch_done(a, it, nb, b, t0);
			if (have)
				nkv_bk_account(qp, a, &lanes[lane], slot, idx, &res);
			if (nkv_arch_ballot(w.mask, nkv_dev_qp_failed(qp) != NKV_QP_OK))
				return;
		}
	}
}

/*
 * The kernel body for a batch wider than a wave: every thread of a block
 * calls it at kernel entry, one block per queue pair; thread t of batch b
 * handles key b * batch + t through value slot nkv_block_slot(b, 0), and
 * the whole batch (up to the block's size and the queue's credit limit)
 * is one SQ doorbell (nkv_block.h). Thread 0 times the batches and bumps
 * the progress word, as the wave leader does in nkv_bk_run. A batch wider
 * than the block fails the queue pair with NKV_QP_FAILED_ARGS at once.
 */
NKV_DEV void nkv_bk_run_block(struct nkv_dev_qp *qp, const struct nkv_bk_args *a)
{
	NKV_BLOCK_SHARED(sh);
	const struct nkv_block bl = nkv_block_enter(sh);
	struct nkv_bk_lane *lanes = NKV_DEV_PTR(struct nkv_bk_lane, a->lanes_addr);
	uint32_t t = bl.thread, slot = nkv_block_slot(bl, 0);
	uint32_t nb = (a->count + a->batch - 1u) / a->batch, it, b;

	if (a->batch == 0 || a->batch > bl.size) {
		if (t == 0)
			nkv_qp_fail(qp, NKV_QP_FAILED_ARGS);
		return;
	}
	for (it = 0; it < a->iterations; it++) {
		for (b = 0; b < nb; b++) {
			uint32_t idx = b * a->batch + t;
			int have = t < a->batch && idx < a->count;
			/* No TTL: a live CDW12 takes the 65th register of a
			 * 1024-thread block on sm_90 (a spill); nkv-bench
			 * refuses --ttl with block batches. */
			struct nkv_prep p = nkv_bk_batch_prep(qp, a, b, t, slot, 0u);
			uint64_t t0 = t == 0 ? nkv_bk_clock() : 0;
			struct nkv_dev_result res = nkv_block_exec(bl, qp, have, p);

			if (t == 0)
				nkv_bk_batch_done(a, it, nb, b, t0);
			if (have)
				nkv_bk_account(qp, a, &lanes[t], slot, idx, &res);
			/* Leave together: the count is the block barrier. */
			if (nkv_arch_block_count(nkv_dev_qp_failed(qp) != NKV_QP_OK))
				return;
		}
	}
}

#endif /* NKV_DEVICE_BENCH_KERNELS_H */
