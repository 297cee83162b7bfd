/* SPDX-License-Identifier: MIT */
/*
 * kv_kernels.h - the examples' kernel bodies, written once: the *_gpu.cu
 * examples wrap them in __global__ functions for hipcc and nvcc, the
 * *_cpu.c ones run them on the cpu engine (nkv_cpu.h). Only nkv_dev.h is used, the
 * device hot path: prep an SQE per lane, submit the wave's batch with one
 * SQ tail doorbell, reap the completions, each lane takes its own.
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
	uint32_t nsid;		/* the KV namespace (nkv_ctrl_info.nsid) */
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
	int32_t err;		/* nkv_dev.h error (the command did not run) or 0 */
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
					uint32_t count, uint32_t nsid, uint32_t seed)
{
	struct ex_args a;

	a.keys = (uint64_t)(uintptr_t)keys;
	a.out = (uint64_t)(uintptr_t)out;
	a.count = count;
	a.nsid = nsid;
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

/* The error that happened first (prep before submit). */
NKV_HD int ex_first_err(int first, int then)
{
	return first ? first : then;
}

/* Lane's value buffer: slot = lane, so the B lanes of a batch never
 * share one (the host creates the queue pair with >= wave size slots). */
NKV_DEV uint32_t *ex_slot(const struct nkv_dev_qp *qp)
{
	return NKV_DEV_PTR(uint32_t, nkv_dev_slot_get(qp, nkv_arch_lane_id())->addr);
}

/*
 * Example 1, the wavefront batch: lane l of batch b handles key
 * b * wave_size + l. Store: the lane writes its value into its slot, packs
 * a Store SQE; Retrieve: packs a Retrieve SQE into its slot, then checks
 * the bytes. nkv_wave_exec() = submit (one doorbell for the whole batch)
 * + wait (one lane reaps for all, results routed by CID).
 */
NKV_DEV void ex_batch(struct nkv_dev_qp *qp, const struct ex_args *a, int store)
{
	const struct nkv_wave wv = nkv_wave_enter();	/* kernel entry: converged */
	const struct ex_key *keys = NKV_DEV_PTR(const struct ex_key, a->keys);
	struct ex_out *out = NKV_DEV_PTR(struct ex_out, a->out);
	uint32_t lane = wv.lane, w = nkv_arch_popc64(wv.mask), base, j;

	/* Every lane runs the same number of rounds: stay converged. */
	for (base = 0; base < a->count; base += w) {
		uint32_t i = base + lane, *v = ex_slot(qp);
		struct nkv_dev_result r = { 0, 0, 0 };
		struct nkv_prep p = nkv_prep_err(0);	/* the SQE, by value */
		int have = i < a->count, err;

		if (have && store)
			for (j = 0; j < a->value_size / 4u; j++)
				v[j] = ex_pattern(a->seed, i, j);
		if (have)
			p = store ? nkv_sqe_store_slot(qp, lane, a->nsid, keys[i].bytes, keys[i].len,
						       0, a->value_size)
				  : nkv_sqe_retrieve_slot(qp, lane, a->nsid, keys[i].bytes,
							  keys[i].len);
		err = p.err;
		/* Collective: lanes without a (valid) SQE take part with have = 0. */
		err = ex_first_err(err, nkv_wave_exec(wv, qp, have && !err, p.sqe, &r));
		if (!have)
			continue;
		out[i].err = err;
		out[i].status = r.status;
		out[i].len = r.dw0;
		out[i].want = a->value_size;
		out[i].bad_at = !store && !err && !r.status ? ex_verify(v, r.dw0, a, i) : EX_BYTES_OK;
		out[i].bad = out[i].bad_at != EX_BYTES_OK;
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
	uint32_t lane = wv.lane, w = nkv_arch_popc64(wv.mask), base, j;

	for (base = 0; base < a->count; base += w) {
		uint32_t i = base + lane, *v = ex_slot(qp);
		struct nkv_dev_result r = { 0, 0, 0 };
		struct nkv_prep p = nkv_prep_err(0);
		int have = i < a->count, err, hit;

		if (have)
			p = nkv_sqe_exist(a->nsid, keys[i].bytes, keys[i].len);
		err = p.err;
		err = ex_first_err(err, nkv_wave_exec(wv, qp, have && !err, p.sqe, &r));
		hit = have && !err && r.status == 0;
		if (hit) {
			p = nkv_sqe_retrieve_slot(qp, lane, a->nsid, keys[i].bytes, keys[i].len);
			err = p.err;
		}
		/* Misses keep the Exist status (87h) in r: no Retrieve for them. */
		err = ex_first_err(err, nkv_wave_exec(wv, qp, hit && !err, p.sqe, &r));
		if (!have)
			continue;
		out[i].err = err;
		out[i].status = r.status;
		out[i].hit = (uint16_t)hit;
		out[i].len = hit ? r.dw0 : a->value_size;
		out[i].want = a->value_size;
		for (j = 0; !hit && j < a->value_size / 4u; j++)
			v[j] = ex_pattern(a->seed, i, j);	/* the miss path */
		out[i].bad_at = ex_verify(v, out[i].len, a, i);
		out[i].bad = out[i].bad_at != EX_BYTES_OK;
	}
}

#endif /* NKV_EXAMPLES_KV_KERNELS_H */
