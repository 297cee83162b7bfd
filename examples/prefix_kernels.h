/* SPDX-License-Identifier: MIT */
/*
 * prefix_kernels.h - the prefix_cache example's kernel body, written once
 * for the cpu engine (prefix_cache_cpu.c) and for hipcc and nvcc
 * (prefix_cache_gpu.cu). One wave owns the queue pair; its value slots
 * are the page pool, one page per (layer, block) value; or, with
 * --dest region, the engine's own cache in a registered region, laid out
 * as vLLM's ([2, blocks, block_size, kv_heads, head_dim] per layer), a
 * page being a cache block whose K and V move straight to and from their
 * places (nkv_kvc_list_cache, no slots). Every op works on
 * the blocks first .. first + count - 1 of a request, all layers:
 *   PC_CLEAR   zero their pages
 *   PC_FILL    write their values (the stand-in for computing a block)
 *   PC_STORE   content-addressed Stores, layer L-1 first and layer 0
 *              last: a block whose layer-0 key exists has every layer
 *   PC_LOOKUP  the prefix lookup over the blocks' layer-0 keys
 *   PC_LOAD    Retrieve every layer of the blocks, a batch of a wave's
 *              width at a time, the next two batches in flight while
 *              the stand-in compute of this one runs (compute_ns each)
 *   PC_CHECK   count the pages that do not hold their key's value
 * nkv_kvcache.h does the commands and reports each entry's outcome.
 */
#ifndef NKV_EXAMPLES_PREFIX_KERNELS_H
#define NKV_EXAMPLES_PREFIX_KERNELS_H

#include "nkv_kvcache.h"

enum pc_op { PC_CLEAR, PC_FILL, PC_STORE, PC_LOOKUP, PC_LOAD, PC_CHECK };

/* What a launch reports (the leader writes it). */
struct pc_res {
	uint64_t t_ns;		/* the op, start to end (the leader's clock) */
	uint64_t compute_ns;	/* PC_LOAD: of which the stand-in compute */
	uint32_t count;		/* LOOKUP: leading blocks present; STORE, LOAD:
				 * entries done; CHECK: bad pages */
	uint32_t rsvd;
};

/* What the host hands the wave; addresses as uint64_t so host and GPU
 * layouts agree. Arrays are [layer][block] of the request. */
struct pc_args {
	uint64_t keys;		/* uint8_t[layers][blocks][klen] */
	uint64_t pages;		/* uint32_t[layers][blocks]: the value's page */
	uint64_t out;		/* struct nkv_kvc_entry[layers][blocks] */
	uint64_t res;		/* struct pc_res */
	uint64_t compute_ns;	/* PC_LOAD: stand-in compute per batch */
	uint32_t klen;
	uint32_t blocks;	/* of the request */
	uint32_t layers;
	uint32_t layer_bytes;	/* one value: a layer of a block, K and V */
	uint32_t first;		/* the op's blocks */
	uint32_t count;
	uint32_t op;		/* enum pc_op */
	uint32_t rsvd;
	uint64_t lay;		/* struct nkv_kvc_layout of the engine's cache
				 * (--dest region), or 0: pages are slots */
};

/* Layer @l's list of the op's blocks. */
NKV_DEV struct nkv_kvc_list pc_list(const struct pc_args *a, uint32_t l)
{
	uint64_t at = (uint64_t)l * a->blocks + a->first;
	const uint8_t *keys = NKV_DEV_PTR(const uint8_t, a->keys) + at * a->klen;
	const uint32_t *pages = NKV_DEV_PTR(const uint32_t, a->pages) + at;

	/* The cache: (layer, block) at global index at, whose command
	 * memory no other entry of the batches in flight shares. */
	if (a->lay)
		return nkv_kvc_list_cache(keys, a->klen, a->count, pages,
					  NKV_DEV_PTR(const struct nkv_kvc_layout, a->lay), l,
					  (uint32_t)at);
	return nkv_kvc_list_of(keys, a->klen, a->count, pages, a->layer_bytes);
}

/* Word @w of page @page of layer @l: a slot's, or in the cache the
 * block's K (the first half of the value) then its V. */
NKV_DEV uint32_t *pc_word_at(struct nkv_dev_qp *qp, const struct pc_args *a, uint32_t l,
			     uint32_t page, uint32_t w)
{
	const struct nkv_kvc_layout *lay = NKV_DEV_PTR(const struct nkv_kvc_layout, a->lay);
	const struct nkv_dev_base *b;
	uint32_t half = a->layer_bytes / 8u;

	if (!a->lay)
		return (uint32_t *)nkv_dev_value(qp, page) + w;
	b = NKV_DEV_PTR(const struct nkv_dev_base, lay->base_addr) + 2u * l + (w >= half);
	return NKV_DEV_PTR(uint32_t, NKV_DEV_PTR(const struct nkv_dev_mr, b->mr)->addr + b->off +
					     (uint64_t)page * lay->block_stride) +
	       (w >= half ? w - half : w);
}

NKV_DEV struct nkv_kvc_entry *pc_out(const struct pc_args *a, uint32_t l)
{
	return NKV_DEV_PTR(struct nkv_kvc_entry, a->out) + (uint64_t)l * a->blocks + a->first;
}

/* Word @w of the value under @key: content-derived, so every process
 * that computes the same block writes the same bytes. */
NKV_HD uint32_t pc_word(const uint8_t *key, uint32_t w)
{
	uint32_t x = ((uint32_t)key[0] | (uint32_t)key[1] << 8 | (uint32_t)key[2] << 16 |
		      (uint32_t)key[3] << 24) ^ (w * 0x9e3779b9u) ^ key[4];

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x ^ w;
}

/* What a lane does to one page: 0 clear, 1 fill, 2 check (1 = bad). */
NKV_DEV uint32_t pc_page(struct nkv_dev_qp *qp, const struct pc_args *a, uint32_t l, uint32_t b,
			 uint32_t what)
{
	struct nkv_kvc_list li = pc_list(a, l);
	uint32_t page = nkv_kvc_page(li, b);
	const uint8_t *k = nkv_kvc_key(li, b);
	uint32_t w;

	for (w = 0; w < a->layer_bytes / 4u; w++) {
		uint32_t *v = pc_word_at(qp, a, l, page, w);

		if (what == 2u && *v != pc_word(k, w))
			return 1;
		if (what < 2u)
			*v = what ? pc_word(k, w) : 0u;
	}
	return 0;
}

/* Collective: clear, fill or check every page of the op, a page per
 * lane at a time; the pages found bad (check). */
NKV_DEV uint32_t pc_pages(struct nkv_wave wv, struct nkv_dev_qp *qp, const struct pc_args *a,
			  uint32_t what)
{
	uint32_t width = nkv_wave_width(wv), n = a->layers * a->count, base, bad = 0;

	for (base = 0; base < n; base += width) {
		uint32_t i = base + nkv_wave_rank(wv);
		int b = i < n && pc_page(qp, a, i / a->count, i % a->count, what);

		bad += nkv_arch_popc64(nkv_arch_ballot(wv.mask, b));
	}
	return bad;
}

/* Collective: the stand-in compute, @ns of the leader's clock (a shared
 * deadline: lanes that run one after another, as the cpu engine's fibers
 * do, do not add up). */
NKV_DEV void pc_compute(struct nkv_wave wv, uint64_t ns)
{
	uint64_t end = nkv_arch_bcast(wv.mask, nkv_arch_clock_ns(), wv.leader) + ns;

	while (ns && nkv_arch_clock_ns() < end)
		;
	nkv_arch_wave_barrier(wv.mask);
}

/* Collective: submit batch @u of the load (none past @units): layer
 * u / chunks, blocks (u % chunks) * width and up. */
NKV_DEV struct nkv_ticket pc_load_submit(struct nkv_wave wv, struct nkv_dev_qp *qp,
					 const struct pc_args *a, uint32_t u, uint32_t units,
					 uint32_t chunks)
{
	uint32_t width = nkv_wave_width(wv), v = u < units ? u : 0u;

	/* Past the last batch nothing is sent (n 0): the list is not read. */
	return nkv_wave_kvc_submit(wv, qp, NKV_KV_RETRIEVE, pc_list(a, v / chunks),
				   (v % chunks) * width, u < units ? width : 0u);
}

/* Collective: the load. Batch u is layer u / chunks, blocks chunk
 * u % chunks of a wave's width; batches u + 1 and u + 2 are in flight
 * while batch u is waited and computed, so their transfers run beside
 * the compute (one batch ahead leaves the controller idle whenever a
 * compute step ends early). The leader reports the compute time spent
 * in r->compute_ns. */
NKV_DEV uint32_t pc_load(struct nkv_wave wv, struct nkv_dev_qp *qp, const struct pc_args *a,
			 struct pc_res *r)
{
	uint32_t width = nkv_wave_width(wv), chunks = (a->count + width - 1u) / width;
	uint32_t units = a->layers * chunks, u, done = 0;
	uint64_t compute = 0;
	struct nkv_ticket t0 = pc_load_submit(wv, qp, a, 0, units, chunks);
	struct nkv_ticket t1 = pc_load_submit(wv, qp, a, 1, units, chunks);

	for (u = 0; u < units; u++) {
		struct nkv_ticket t2 = pc_load_submit(wv, qp, a, u + 2u, units, chunks);
		uint32_t l = u / chunks;
		uint64_t t;

		done += nkv_wave_kvc_wait(wv, qp, t0, NKV_KV_RETRIEVE, pc_list(a, l),
					  (u % chunks) * width, width, pc_out(a, l));
		t = nkv_arch_clock_ns();
		pc_compute(wv, a->compute_ns);
		compute += nkv_arch_clock_ns() - t;
		t0 = t1;
		t1 = t2;
	}
	/* units < 2: the tickets of batches never sent hold nothing. */
	nkv_wave_wait(wv, qp, t0);
	nkv_wave_wait(wv, qp, t1);
	if (wv.lane == wv.leader)
		r->compute_ns = compute;
	return done;
}

/* Collective: the stores, layer L-1 down to layer 0. */
NKV_DEV uint32_t pc_store(struct nkv_wave wv, struct nkv_dev_qp *qp, const struct pc_args *a)
{
	uint32_t l, done = 0;

	for (l = a->layers; l-- > 0;)
		done += nkv_wave_kvc_all(wv, qp, NKV_KV_STORE, pc_list(a, l), pc_out(a, l));
	return done;
}

/* The kernel body: one wave, every lane, at kernel entry. */
NKV_DEV void pc_run(struct nkv_dev_qp *qp, const struct pc_args *a)
{
	const struct nkv_wave wv = nkv_wave_enter();	/* kernel entry: converged */
	struct pc_res *r = NKV_DEV_PTR(struct pc_res, a->res);
	uint64_t t0 = nkv_arch_clock_ns();
	uint32_t n = 0;

	if (wv.lane == wv.leader)
		r->compute_ns = 0;

	if (a->op == PC_CLEAR || a->op == PC_FILL || a->op == PC_CHECK)
		n = pc_pages(wv, qp, a, a->op == PC_CLEAR ? 0u : a->op == PC_FILL ? 1u : 2u);
	else if (a->op == PC_STORE)
		n = pc_store(wv, qp, a);
	else if (a->op == PC_LOOKUP)
		n = nkv_wave_kvc_prefix(wv, qp, nkv_wave_slot(wv, 0), pc_list(a, 0), pc_out(a, 0));
	else if (a->op == PC_LOAD)
		n = pc_load(wv, qp, a, r);
	if (wv.lane == wv.leader) {
		r->t_ns = nkv_arch_clock_ns() - t0;
		r->count = n;
	}
}

#endif /* NKV_EXAMPLES_PREFIX_KERNELS_H */
