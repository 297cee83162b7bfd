/* SPDX-License-Identifier: MIT */
/*
 * kv_kernels.h - the examples' kernel bodies, written once: the *_gpu.cu
 * examples wrap them in __global__ functions for hipcc and nvcc, the
 * *_cpu.c ones run them on the cpu engine (nkv_cpu.h). Only nkv_dev.h is
 * used, the device hot path. The namespace comes with the queue pair's
 * descriptor, each lane's value buffer is nkv_dev_value(qp, slot) with
 * the slot named by nkv_wave_slot(), and every command gives each lane one
 * result (struct nkv_dev_result): err != 0 when it did not run, else the
 * NVMe status.
 *
 * The rules to keep in mind (nkv_dev.h): ONE WAVE OWNS A QUEUE PAIR. The
 * kernel makes its wave context (nkv_wave_enter()) at entry, where the
 * lanes are converged; every nkv_wave_*() call is collective over it:
 * every lane of the context reaches it, together, the same number of
 * times; a lane with nothing to send passes have = 0 and still takes part.
 */
#ifndef NKV_EXAMPLES_KV_KERNELS_H
#define NKV_EXAMPLES_KV_KERNELS_H

#include "nkv_dev.h"

/* A key as the kernels receive it. */
struct ex_key {
	uint8_t bytes[16];
	uint32_t len;		/* 1..16 */
};

/* What the host hands a wave. Addresses are uint64_t so host and GPU
 * layouts agree; the host fills them from its pointers. */
struct ex_args {
	uint64_t keys;		/* struct ex_key[count] */
	uint64_t out;		/* struct ex_out[count] */
	uint32_t count;		/* keys of this wave (any number: batched by wave size) */
	uint32_t value_size;	/* bytes per value, a multiple of 4, <= slot size */
	uint32_t seed;		/* value pattern seed */
};

/* The value size every example stores (one 4 KiB slot per value). */
#define EX_VALUE_SIZE 4096u

/* bad_at: every byte as stored / the returned length is not the value's. */
#define EX_BYTES_OK 0xffffffffu
#define EX_LEN_BAD 0xfffffffeu

/* One result per key. */
struct ex_out {
	int32_t err;		/* nkv_errno.h error (the command did not run) or 0 */
	uint16_t status;	/* NVMe status: 0, or e.g. 87h Key Does Not Exist */
	uint16_t hit;		/* cache lookup: 1 = served from the store */
	uint32_t len;		/* Retrieve: the stored value's full length (DW0) */
	uint32_t bad;		/* Retrieve: 1 = the length or the bytes are wrong */
	uint32_t bad_at;	/* EX_BYTES_OK, EX_LEN_BAD, or the first bad byte */
	uint32_t want;		/* the length the value was stored with */
};

/* Host side: the arguments of a wave whose keys and results are at keys
 * and out (device addresses on a GPU), values EX_VALUE_SIZE bytes. */
static inline struct ex_args ex_args_of(const struct ex_key *keys, struct ex_out *out,
					uint32_t count, uint32_t seed)
{
	struct ex_args a;

	a.keys = (uint64_t)(uintptr_t)keys;
	a.out = (uint64_t)(uintptr_t)out;
	a.count = count;
	a.value_size = EX_VALUE_SIZE;
	a.seed = seed;
	return a;
}

/* The value pattern of key i: a word per step of xorshift32. */
NKV_HD uint32_t ex_pattern(uint32_t seed, uint32_t i, uint32_t word)
{
	uint32_t x = seed ^ ((i + 1u) * 0x9e3779b9u) ^ (word * 0x85ebca6bu);

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

/* Key @i's value, written into its value buffer @v. */
NKV_DEV void ex_fill(uint32_t *v, const struct ex_args *a, uint32_t i)
{
	uint32_t j;

	for (j = 0; j < a->value_size / 4u; j++)
		v[j] = ex_pattern(a->seed, i, j);
}

/* A retrieved value of @len bytes (the CQE's DW0) against key @i's
 * pattern: EX_BYTES_OK, EX_LEN_BAD (a controller that says 0, or another
 * size, is wrong however the bytes look), or the first differing byte. */
NKV_DEV uint32_t ex_verify(const uint32_t *v, uint32_t len, const struct ex_args *a, uint32_t i)
{
	uint32_t j;

	if (len != a->value_size)
		return EX_LEN_BAD;
	for (j = 0; j < a->value_size / 4u; j++)
		if (v[j] != ex_pattern(a->seed, i, j))
			return j * 4u;
	return EX_BYTES_OK;
}

/* Key @i's outcome: @r as the lane got it and, for a Retrieve that ran
 * (err 0, status 0), whether value buffer @v holds the value whole. */
NKV_DEV void ex_record(struct ex_out *o, struct nkv_dev_result r, const uint32_t *v,
		       const struct ex_args *a, uint32_t i, int store)
{
	o->err = r.err;
	o->status = r.status;
	o->len = r.dw0;
	o->want = a->value_size;
	o->bad_at = !store && !r.err && !r.status ? ex_verify(v, r.dw0, a, i) : EX_BYTES_OK;
	o->bad = o->bad_at != EX_BYTES_OK;
}

/*
 * Example 1, the wavefront batch, one call per command: lane of rank r in
 * round b handles key b * width + r. Store: the lane writes its value into
 * its slot's buffer, then nkv_wave_store(); Retrieve: nkv_wave_retrieve()
 * into the same slot, then it checks the bytes. Each call builds the
 * lane's SQE, submits the wave's batch with one SQ doorbell, waits (one
 * lane reaps for all, results routed by CID) and gives each lane its
 * result. One batch in flight: slot nkv_wave_slot(wv, 0), so the queue
 * pair needs width slots.
 */
NKV_DEV void ex_batch(struct nkv_dev_qp *qp, const struct ex_args *a, int store)
{
	const struct nkv_wave wv = nkv_wave_enter();	/* kernel entry: converged */
	const struct ex_key *keys = NKV_DEV_PTR(const struct ex_key, a->keys);
	struct ex_out *out = NKV_DEV_PTR(struct ex_out, a->out);
	uint32_t w = nkv_wave_width(wv), slot = nkv_wave_slot(wv, 0), base;
	uint32_t *v = (uint32_t *)nkv_dev_value(qp, slot);

	/* Every lane runs the same number of rounds: stay converged. */
	for (base = 0; base < a->count; base += w) {
		uint32_t i = base + nkv_wave_rank(wv);
		int have = i < a->count;
		const struct ex_key *k = &keys[have ? i : base];	/* unread without have */
		struct nkv_dev_result r;

		if (have && store)
			ex_fill(v, a, i);
		/* @store is the same in every lane: all make the same call. */
		if (store)
			r = nkv_wave_store(wv, qp, have, slot, k->bytes, k->len, 0, a->value_size);
		else
			r = nkv_wave_retrieve(wv, qp, have, slot, k->bytes, k->len);
		if (have)
			ex_record(&out[i], r, v, a, i, store);
	}
}

/* Key @i's command through value slot @slot: a Store (its value written
 * into the slot first) or a Retrieve; none past the last key. */
NKV_DEV struct nkv_prep ex_prep(struct nkv_dev_qp *qp, const struct ex_args *a, uint32_t i,
				uint32_t slot, int store)
{
	const struct ex_key *k = NKV_DEV_PTR(const struct ex_key, a->keys) + i;

	if (i >= a->count)
		return nkv_prep_err(0);
	if (!store)
		return nkv_dev_retrieve(qp, slot, k->bytes, k->len);
	ex_fill((uint32_t *)nkv_dev_value(qp, slot), a, i);
	return nkv_dev_store(qp, slot, k->bytes, k->len, 0, a->value_size);
}

/*
 * Example 2's body, two batches in flight on one queue pair: each round
 * the wave submits batch 0 (the round's first width keys, value slot
 * nkv_wave_slot(wv, 0)) and batch 1 (the next width keys, slot
 * nkv_wave_slot(wv, 1)), one SQ doorbell each, then waits for batch 1
 * before batch 0: completions are parked per CID, so any order works. A
 * builder's error travels in the lane's ticket into its result. The
 * queue pair needs 2 * width slots.
 */
NKV_DEV void ex_batch2(struct nkv_dev_qp *qp, const struct ex_args *a, int store)
{
	const struct nkv_wave wv = nkv_wave_enter();	/* kernel entry: converged */
	struct ex_out *out = NKV_DEV_PTR(struct ex_out, a->out);
	uint32_t w = nkv_wave_width(wv), s0 = nkv_wave_slot(wv, 0), s1 = nkv_wave_slot(wv, 1);
	const uint32_t *v0 = (const uint32_t *)nkv_dev_value(qp, s0);
	const uint32_t *v1 = (const uint32_t *)nkv_dev_value(qp, s1);
	uint32_t base;

	for (base = 0; base < a->count; base += 2u * w) {
		uint32_t i0 = base + nkv_wave_rank(wv), i1 = i0 + w;
		struct nkv_ticket t0 = nkv_wave_submit(wv, qp, i0 < a->count,
						       ex_prep(qp, a, i0, s0, store));
		struct nkv_ticket t1 = nkv_wave_submit(wv, qp, i1 < a->count,
						       ex_prep(qp, a, i1, s1, store));
		struct nkv_dev_result r1 = nkv_wave_wait(wv, qp, t1);
		struct nkv_dev_result r0 = nkv_wave_wait(wv, qp, t0);

		if (i1 < a->count)
			ex_record(&out[i1], r1, v1, a, i1, store);
		if (i0 < a->count)
			ex_record(&out[i0], r0, v0, a, i0, store);
	}
}

/*
 * Example 3, a cache lookup: ask Exist for every key first (cheap: no
 * data moves), then Retrieve only the hits in a second batch; a miss
 * (87h) is a normal answer, and the lane computes its value instead
 * (here: the pattern, as if recomputed). Both batches are collective:
 * lanes that missed take part in the second one with have = 0.
 */
NKV_DEV void ex_cache_lookup(struct nkv_dev_qp *qp, const struct ex_args *a)
{
	const struct nkv_wave wv = nkv_wave_enter();	/* kernel entry: converged */
	const struct ex_key *keys = NKV_DEV_PTR(const struct ex_key, a->keys);
	struct ex_out *out = NKV_DEV_PTR(struct ex_out, a->out);
	uint32_t w = nkv_wave_width(wv), slot = nkv_wave_slot(wv, 0), base;
	uint32_t *v = (uint32_t *)nkv_dev_value(qp, slot);

	for (base = 0; base < a->count; base += w) {
		uint32_t i = base + nkv_wave_rank(wv);
		int have = i < a->count, hit;
		const struct ex_key *k = &keys[have ? i : base];	/* unread without have */
		struct nkv_dev_result r = nkv_wave_exist(wv, qp, have, slot, k->bytes, k->len);
		struct nkv_dev_result got;

		hit = have && !r.err && r.status == 0;
		got = nkv_wave_retrieve(wv, qp, hit, slot, k->bytes, k->len);
		/* Misses keep the Exist result (87h): they sent no Retrieve. */
		if (hit)
			r = got;
		if (!have)
			continue;
		out[i].err = r.err;
		out[i].status = r.status;
		out[i].hit = (uint16_t)hit;
		out[i].len = hit ? r.dw0 : a->value_size;
		out[i].want = a->value_size;
		if (!hit)
			ex_fill(v, a, i);	/* the miss path */
		out[i].bad_at = ex_verify(v, out[i].len, a, i);
		out[i].bad = out[i].bad_at != EX_BYTES_OK;
	}
}

#endif /* NKV_EXAMPLES_KV_KERNELS_H */
