/* SPDX-License-Identifier: MIT */
/*
 * nkv_kvcache.h - a KV-cache tier in device code: prefix lookups,
 * content-addressed Stores and Retrieves of many keys into pages, each
 * with a per-entry outcome in an array the caller owns. Built on
 * nkv_dev.h's submit/wait pair (a wave) and nkv_block.h's (a block);
 * nothing here touches the queue pair but through them, so their
 * contracts hold unchanged: one wave (or one block) owns a queue pair,
 * several batches may be in flight on it and be waited in any order.
 *
 * In one hand (docs/kv-cache.md):
 *   struct nkv_kvc_list l = nkv_kvc_list_of(keys, 16, n, pages, 65536);
 *   hit = nkv_wave_kvc_prefix(w, qp, nkv_wave_slot(w, 0), l, out);
 *   t = nkv_wave_kvc_submit(w, qp, NKV_KV_RETRIEVE, l, first, n);
 *   ... compute while the controller moves the values ...
 *   ok = nkv_wave_kvc_wait(w, qp, t, NKV_KV_RETRIEVE, l, first, n, out);
 *
 * The page pool is the queue pair's value slots (nkv_qpair_opts.slots
 * pages of slot_size bytes, registered once when the queue pair is
 * made): a page index is a slot index, and the host built each page's
 * data pointers (PRPs, or one SGL Data Block) with a page of head room
 * below it, where a key over 16 bytes is written in head form, so the
 * command's data is the key head then the page, one run of controller
 * addresses.
 *
 * Or the engine's own cache, in registered memory regions (nkv_mr.h),
 * described once by a struct nkv_kvc_layout: a list made with
 * nkv_kvc_list_cache() names cache blocks instead of pages, and each
 * entry's value is that block's K and V, of every layer (one command per
 * block, 2 x layers runs) or of one layer (one per block and layer, 2
 * runs), moved straight to or from their places: no slot, no copy.
 *
 * Who may call what: nkv_kvc_*() (pure): any thread, host or device.
 * nkv_wave_kvc_*(): collective over a wave context, as nkv_wave_*();
 * nkv_block_kvc_*(): collective over a block, as nkv_block_*(). Every
 * lane (thread) passes the same list, first, n and opcode.
 */
#ifndef NKV_KVCACHE_H
#define NKV_KVCACHE_H

#include "nkv_block.h"
#include "nkv_mr.h"

/* What became of one entry. */
enum nkv_kvc_outcome {
	NKV_KVC_OK = 0,		/* done: stored, present, or retrieved whole */
	NKV_KVC_ABSENT = 1,	/* Key Does Not Exist (87h) */
	NKV_KVC_EXISTS = 2,	/* content-addressed Store: Key Exists (89h),
				 * the same content is already there: success */
	NKV_KVC_SHORT = 3,	/* Retrieve answered success with a DW0 other
				 * than the size the caller expects: never ok */
	NKV_KVC_ERROR = 4,	/* err != 0 (not run), or another NVMe status */
};

/* One entry's outcome, and what it came from. */
struct nkv_kvc_entry {
	uint32_t outcome;	/* enum nkv_kvc_outcome */
	uint32_t dw0;		/* CQE DW0 (Retrieve: the stored size) */
	uint16_t status;	/* NVMe status unchanged (0 when err != 0) */
	uint16_t rsvd;
	int32_t err;		/* 0 or an NKV_E* code: the command did not run */
};
NKV_ASSERT_SIZE(struct nkv_kvc_entry, 16);
NKV_ASSERT_OFF(struct nkv_kvc_entry, outcome, 0);
NKV_ASSERT_OFF(struct nkv_kvc_entry, dw0, 4);
NKV_ASSERT_OFF(struct nkv_kvc_entry, status, 8);
NKV_ASSERT_OFF(struct nkv_kvc_entry, err, 12);

/*
 * An engine's paged KV cache, described once (device-visible; the host
 * or device code fills it, nothing changes it while commands use it).
 * Block b's K of layer l lies at base[2 l] + b x block_stride, its V at
 * base[2 l + 1] + b x block_stride, block_bytes each: vLLM's per-layer
 * [2, num_blocks, block_size, kv_heads, head_dim] is base[2 l] = the
 * layer's tensor, base[2 l + 1] = it + num_blocks x block_bytes,
 * block_stride = block_bytes. Bases in any registered regions.
 */
struct nkv_kvc_layout {
	uint64_t base_addr;	/* struct nkv_dev_base[2 x layers] */
	uint64_t block_stride;	/* bytes from block b to b + 1, K and V alike */
	uint32_t layers;	/* 1..NKV_IOV_MAX / 2 */
	uint32_t block_bytes;	/* one block's K (or V) of one layer */
};
NKV_ASSERT_SIZE(struct nkv_kvc_layout, 24);
NKV_ASSERT_OFF(struct nkv_kvc_layout, base_addr, 0);
NKV_ASSERT_OFF(struct nkv_kvc_layout, block_stride, 8);
NKV_ASSERT_OFF(struct nkv_kvc_layout, layers, 16);
NKV_ASSERT_OFF(struct nkv_kvc_layout, block_bytes, 20);
/* Bytes of vLLM's per-layer layout: @layers tensors of [2, @blocks,
 * @block_bytes] back to back. */
NKV_HD uint64_t nkv_kvc_vllm_bytes(uint32_t layers, uint32_t blocks, uint32_t block_bytes)
{
	return 2ull * layers * blocks * block_bytes;
}

/*
 * vLLM's per-layer layout from byte @off of region @mr (nkv_mem_dev()):
 * layer l's tensor at off + l x 2 x blocks x block_bytes, its K blocks
 * then its V blocks, block_bytes apart. Fills @base (2 x @layers entries)
 * and returns the layout, whose base_addr is @base_addr, where device
 * code reads @base (@base itself on the host and the cpu engine, a copy's
 * address in GPU memory). Any thread.
 */
NKV_HD struct nkv_kvc_layout nkv_kvc_layout_vllm(struct nkv_dev_base *base, uint64_t base_addr,
						 const struct nkv_dev_mr *mr, uint64_t off,
						 uint32_t layers, uint32_t blocks,
						 uint32_t block_bytes)
{
	uint64_t per = nkv_kvc_vllm_bytes(1, blocks, block_bytes);
	struct nkv_kvc_layout lay;
	uint32_t l;

	for (l = 0; l < layers; l++) {
		base[2u * l].mr = base[2u * l + 1u].mr = (uint64_t)(uintptr_t)mr;
		base[2u * l].off = off + l * per;
		base[2u * l + 1u].off = off + l * per + per / 2u;
	}
	lay.base_addr = base_addr;
	lay.block_stride = block_bytes;
	lay.layers = layers;
	lay.block_bytes = block_bytes;
	return lay;
}

/* A list's layer when its entries are whole blocks (every layer). */
#define NKV_KVC_ALL_LAYERS 0xffffffffu

/*
 * A list of keys of one length (content-derived keys are: a 16-byte
 * XXH3-128 or a 32-byte SHA-256), key i at keys + i * klen, and the page
 * each one's value comes from (Store) or lands in (Retrieve): pages[i],
 * or page i when pages is NULL. @size: Store, the value's bytes;
 * Retrieve, the bytes the caller expects (the transfer's length, and
 * the only DW0 that is ok). Passed by value (it lives in registers).
 * With a cache layout (@lay, nkv_kvc_list_cache()), pages[i] is a cache
 * block and entry i uses command memory (cmd0 + i) % nr_cmds of the
 * queue pair (nkv_mr.h): entries in flight at once, of any lists, need
 * distinct ones.
 */
struct nkv_kvc_list {
	const uint8_t *keys;
	const uint32_t *pages;
	uint32_t klen;		/* 1..qp->max_key */
	uint32_t count;
	uint32_t size;
	uint32_t layer;		/* with @lay: the layer moved, or NKV_KVC_ALL_LAYERS */
	const struct nkv_kvc_layout *lay;	/* NULL: pages are value slots */
	uint32_t cmd0;
	uint32_t rsvd;
};

NKV_HD struct nkv_kvc_list nkv_kvc_list_of(const uint8_t *keys, uint32_t klen, uint32_t count,
					   const uint32_t *pages, uint32_t size)
{
	struct nkv_kvc_list l;

	l.keys = keys;
	l.pages = pages;
	l.klen = klen;
	l.count = count;
	l.size = size;
	l.layer = 0;
	l.lay = 0;
	l.cmd0 = 0;
	l.rsvd = 0;
	return l;
}

/* A list over an engine's cache: entry i is cache block blocks[i] (i when
 * NULL), its K and V of layer @layer (2 x block_bytes), or of every layer
 * with NKV_KVC_ALL_LAYERS (2 x layers x block_bytes, layer 0's K first);
 * command memory from @cmd0 on. */
NKV_HD struct nkv_kvc_list nkv_kvc_list_cache(const uint8_t *keys, uint32_t klen, uint32_t count,
					      const uint32_t *blocks,
					      const struct nkv_kvc_layout *lay, uint32_t layer,
					      uint32_t cmd0)
{
	uint32_t runs = layer == NKV_KVC_ALL_LAYERS ? 2u * lay->layers : 2u;
	struct nkv_kvc_list l = nkv_kvc_list_of(keys, klen, count, blocks,
						runs * lay->block_bytes);

	l.layer = layer;
	l.lay = lay;
	l.cmd0 = cmd0;
	return l;
}

/* Key @i of @l, and its page. */
NKV_HD const uint8_t *nkv_kvc_key(struct nkv_kvc_list l, uint32_t i)
{
	return l.keys + (uint64_t)i * l.klen;
}

NKV_HD uint32_t nkv_kvc_page(struct nkv_kvc_list l, uint32_t i)
{
	return l.pages ? l.pages[i] : i;
}

/*
 * Retrieve of @want bytes into page @page: a transfer of exactly @want
 * bytes (the rest of the page is not written). NKV_EINVAL for a page
 * the queue pair does not have or @want 0 (a size query, not a
 * retrieve), NKV_EMSGSIZE for @want larger than a page.
 */
NKV_HD struct nkv_prep nkv_kvc_retrieve_prep(const struct nkv_dev_qp *qp, uint32_t page,
					     const void *key, uint32_t klen, uint32_t want)
{
	const struct nkv_dev_slot *s = nkv_dev_slot_get(qp, page);

	if (!s || !want)
		return nkv_prep_err(NKV_EINVAL);
	if (want > s->size)
		return nkv_prep_err(NKV_EMSGSIZE);
	return nkv_dev_kv_slot(qp, s, NKV_KV_RETRIEVE, key, klen, 1, 0, want, want);
}

/* Entry @i's runs in the cache: its block's K and V, of one layer or all. */
NKV_HD struct nkv_runs nkv_kvc_runs(struct nkv_kvc_list l, uint32_t i)
{
	const struct nkv_dev_base *b = NKV_DEV_PTR(const struct nkv_dev_base, l.lay->base_addr);
	int all = l.layer == NKV_KVC_ALL_LAYERS;

	return nkv_runs_pattern(all ? b : b + 2u * l.layer, all ? 2u * l.lay->layers : 2u,
				(uint64_t)nkv_kvc_page(l, i) * l.lay->block_stride,
				l.lay->block_bytes);
}

/* Entry @i's command memory on @qp. */
NKV_HD uint32_t nkv_kvc_cmd(const struct nkv_dev_qp *qp, struct nkv_kvc_list l, uint32_t i)
{
	return qp->nr_cmds ? (l.cmd0 + i) % qp->nr_cmds : 0u;
}

/* Entry @i as a command @opc on an engine's cache (content-addressed
 * Stores, as with pages). */
NKV_HD struct nkv_prep nkv_kvc_cache_prep(const struct nkv_dev_qp *qp, uint8_t opc,
					  struct nkv_kvc_list l, uint32_t i)
{
	const uint8_t *k = nkv_kvc_key(l, i);
	uint32_t cmd = nkv_kvc_cmd(qp, l, i);

	if (opc == NKV_KV_STORE)
		return nkv_dev_store_runs(qp, cmd, k, l.klen, NKV_STORE_MUST_NOT_EXIST,
					  nkv_kvc_runs(l, i), 0);
	if (opc == NKV_KV_RETRIEVE)
		return nkv_dev_retrieve_runs(qp, cmd, k, l.klen, nkv_kvc_runs(l, i), 0);
	if (opc == NKV_KV_EXIST)
		return nkv_dev_nodata_cmd(qp, cmd, NKV_KV_EXIST, k, l.klen);
	return nkv_prep_err(NKV_EINVAL);
}

/* A content-addressed Store of @len bytes from page @page: only if the
 * key is absent (NKV_STORE_MUST_NOT_EXIST), so a second writer of the
 * same content gets 89h and the value already there stays intact. */
NKV_HD struct nkv_prep nkv_kvc_store_prep(const struct nkv_dev_qp *qp, uint32_t page,
					  const void *key, uint32_t klen, uint32_t len)
{
	return nkv_dev_store(qp, page, key, klen, NKV_STORE_MUST_NOT_EXIST, len);
}

/* Entry @i of @l as a command @opc (NKV_KV_STORE, _RETRIEVE or _EXIST;
 * another: NKV_EINVAL); Exist writes a head-form key into page @i's head
 * room only (its data is untouched). */
NKV_HD struct nkv_prep nkv_kvc_prep(const struct nkv_dev_qp *qp, uint8_t opc,
				    struct nkv_kvc_list l, uint32_t i)
{
	const uint8_t *k = nkv_kvc_key(l, i);
	uint32_t page = nkv_kvc_page(l, i);

	if (l.lay)
		return nkv_kvc_cache_prep(qp, opc, l, i);
	if (opc == NKV_KV_STORE)
		return nkv_kvc_store_prep(qp, page, k, l.klen, l.size);
	if (opc == NKV_KV_RETRIEVE)
		return nkv_kvc_retrieve_prep(qp, page, k, l.klen, l.size);
	if (opc == NKV_KV_EXIST)
		return nkv_dev_exist(qp, page, k, l.klen);
	return nkv_prep_err(NKV_EINVAL);
}

/*
 * The outcome of a command @opc from its result @r: ERROR when it did
 * not run (r.err); ABSENT on 87h; EXISTS on 89h to a Store; ERROR on any
 * other status; for a Retrieve, SHORT when DW0 is not @want (a
 * controller that says success with a shorter, or longer, value moved
 * something other than what was asked for); else OK.
 */
NKV_HD struct nkv_kvc_entry nkv_kvc_entry_of(struct nkv_dev_result r, uint8_t opc, uint32_t want)
{
	struct nkv_kvc_entry e;

	e.dw0 = r.dw0;
	e.status = r.status;
	e.rsvd = 0;
	e.err = r.err;
	if (r.err)
		e.outcome = NKV_KVC_ERROR;
	else if (r.status == NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS))
		e.outcome = NKV_KVC_ABSENT;
	else if (opc == NKV_KV_STORE && r.status == NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_EXISTS))
		e.outcome = NKV_KVC_EXISTS;
	else if (r.status)
		e.outcome = NKV_KVC_ERROR;
	else if (opc == NKV_KV_RETRIEVE && r.dw0 != want)
		e.outcome = NKV_KVC_SHORT;
	else
		e.outcome = NKV_KVC_OK;
	return e;
}

/* The prefix lookup's Exist of entry @i: a head-form key in page @slot's
 * head room, or, on a cache list, in command memory @slot. */
NKV_HD struct nkv_prep nkv_kvc_exist_prep(const struct nkv_dev_qp *qp, uint32_t slot,
					  struct nkv_kvc_list l, uint32_t i)
{
	if (l.lay)
		return nkv_dev_nodata_cmd(qp, slot, NKV_KV_EXIST, nkv_kvc_key(l, i), l.klen);
	return nkv_dev_exist(qp, slot, nkv_kvc_key(l, i), l.klen);
}

/* Did the entry's key end up there (stored, already there, present)? */
NKV_HD int nkv_kvc_done(struct nkv_kvc_entry e)
{
	return e.outcome == NKV_KVC_OK || e.outcome == NKV_KVC_EXISTS;
}

/* ------------------------------------------------------------------ */
/* A wave                                                                */
/* ------------------------------------------------------------------ */

/*
 * Collective (every lane of @w). One batch: entries first .. first +
 * min(n, width) - 1 of @l, entry first + rank in the lane of that rank,
 * as commands @opc (nkv_kvc_prep), with one SQ doorbell. The lane's
 * ticket for nkv_wave_kvc_wait(). Entries past l.count are not sent.
 * Several batches may be in flight (their pages distinct), waited in
 * any order.
 */
NKV_DEV struct nkv_ticket nkv_wave_kvc_submit(struct nkv_wave w, struct nkv_dev_qp *qp,
					      uint8_t opc, struct nkv_kvc_list l, uint32_t first,
					      uint32_t n)
{
	uint32_t rank = nkv_wave_rank(w), i = first + rank;
	int have = rank < n && i < l.count;

	return nkv_wave_submit(w, qp, have, have ? nkv_kvc_prep(qp, opc, l, i) : nkv_prep_err(0));
}

/*
 * Collective (every lane of @w), with the same @opc, @l, @first and @n
 * as the submit that gave @tk: waits for the batch, writes each entry's
 * outcome to out[first + rank] (@out NULL: nowhere) and returns how many
 * of the batch's entries are done (nkv_kvc_done), the same in every lane.
 */
NKV_DEV uint32_t nkv_wave_kvc_wait(struct nkv_wave w, struct nkv_dev_qp *qp, struct nkv_ticket tk,
				   uint8_t opc, struct nkv_kvc_list l, uint32_t first, uint32_t n,
				   struct nkv_kvc_entry *out)
{
	uint32_t rank = nkv_wave_rank(w), i = first + rank;
	int have = rank < n && i < l.count;
	struct nkv_kvc_entry e = nkv_kvc_entry_of(nkv_wave_wait(w, qp, tk), opc, l.size);

	if (have && out)
		out[i] = e;
	return nkv_arch_popc64(nkv_arch_ballot(w.mask, have && nkv_kvc_done(e)));
}

/* Collective: @opc for every entry of @l, a batch at a time; the
 * outcomes in out[0 .. l.count - 1]; how many are done. */
NKV_DEV uint32_t nkv_wave_kvc_all(struct nkv_wave w, struct nkv_dev_qp *qp, uint8_t opc,
				  struct nkv_kvc_list l, struct nkv_kvc_entry *out)
{
	uint32_t width = nkv_wave_width(w), first, done = 0;

	for (first = 0; first < l.count; first += width)
		done += nkv_wave_kvc_wait(w, qp, nkv_wave_kvc_submit(w, qp, opc, l, first, width),
					  opc, l, first, width, out);
	return done;
}

/*
 * Collective: the prefix lookup. Exist for the keys of @l in order, a
 * wave-wide batch at a time, stopping after the first batch with an
 * entry that is not OK (absent, or an error: either way the prefix ends
 * there). Returns how many leading keys are present (l.count: all).
 * out[] gets the outcomes of the batches asked (later entries are left
 * as they were). A key over 16 bytes is written into the head room of
 * the lane's page @slot (e.g. nkv_wave_slot(w, 0)), or, on a cache list,
 * into command memory @slot; its data is not touched. l.pages and
 * l.size are not read.
 */
NKV_DEV uint32_t nkv_wave_kvc_prefix(struct nkv_wave w, struct nkv_dev_qp *qp, uint32_t slot,
				     struct nkv_kvc_list l, struct nkv_kvc_entry *out)
{
	uint32_t width = nkv_wave_width(w), rank = nkv_wave_rank(w), first;

	for (first = 0; first < l.count; first += width) {
		uint32_t i = first + rank;
		int have = i < l.count;
		struct nkv_prep p = have ? nkv_kvc_exist_prep(qp, slot, l, i) : nkv_prep_err(0);
		struct nkv_kvc_entry e =
			nkv_kvc_entry_of(nkv_wave_exec(w, qp, have, p), NKV_KV_EXIST, 0);
		uint64_t miss = nkv_arch_ballot(w.mask, have && e.outcome != NKV_KVC_OK);

		if (have && out)
			out[i] = e;
		/* The lowest lane that missed; lanes rank in lane order. */
		if (miss)
			return first +
			       nkv_arch_popc64(w.mask & ((1ull << nkv_arch_ffs64(miss)) - 1ull));
	}
	return l.count;
}

/* ------------------------------------------------------------------ */
/* A block (nkv_block.h): batches of up to the block's size             */
/* ------------------------------------------------------------------ */

/* Collective (every thread of @b): nkv_wave_kvc_submit() for a block,
 * entry first + thread in the thread of that index, n <= b.size. */
NKV_DEV struct nkv_ticket nkv_block_kvc_submit(struct nkv_block b, struct nkv_dev_qp *qp,
					       uint8_t opc, struct nkv_kvc_list l, uint32_t first,
					       uint32_t n)
{
	uint32_t i = first + b.thread;
	int have = b.thread < n && i < l.count;

	return nkv_block_submit(b, qp, have, have ? nkv_kvc_prep(qp, opc, l, i) : nkv_prep_err(0));
}

/* Collective: nkv_wave_kvc_wait() for a block; the count is the block's. */
NKV_DEV uint32_t nkv_block_kvc_wait(struct nkv_block b, struct nkv_dev_qp *qp,
				    struct nkv_ticket tk, uint8_t opc, struct nkv_kvc_list l,
				    uint32_t first, uint32_t n, struct nkv_kvc_entry *out)
{
	uint32_t i = first + b.thread;
	int have = b.thread < n && i < l.count;
	struct nkv_kvc_entry e = nkv_kvc_entry_of(nkv_block_wait(b, qp, tk), opc, l.size);

	if (have && out)
		out[i] = e;
	return nkv_arch_block_count(have && nkv_kvc_done(e));
}

/* Collective: nkv_wave_kvc_all() for a block. */
NKV_DEV uint32_t nkv_block_kvc_all(struct nkv_block b, struct nkv_dev_qp *qp, uint8_t opc,
				   struct nkv_kvc_list l, struct nkv_kvc_entry *out)
{
	uint32_t first, done = 0;

	for (first = 0; first < l.count; first += b.size)
		done += nkv_block_kvc_wait(b, qp, nkv_block_kvc_submit(b, qp, opc, l, first, b.size),
					   opc, l, first, b.size, out);
	return done;
}

/* Collective: the lowest thread with @miss (some thread has it), by a
 * binary search of block counts: every thread computes the same bounds,
 * so the loop stays uniform; no shared memory. */
NKV_DEV uint32_t nkv_block_kvc_first(struct nkv_block b, int miss)
{
	uint32_t lo = 0, hi = b.size - 1u;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2u;

		if (nkv_arch_block_count(miss && b.thread <= mid))
			hi = mid;
		else
			lo = mid + 1u;
	}
	return lo;
}

/* Collective: nkv_wave_kvc_prefix() for a block, batches of b.size keys;
 * thread t's head-form key goes into page @slot's head room. */
NKV_DEV uint32_t nkv_block_kvc_prefix(struct nkv_block b, struct nkv_dev_qp *qp, uint32_t slot,
				      struct nkv_kvc_list l, struct nkv_kvc_entry *out)
{
	uint32_t first;

	for (first = 0; first < l.count; first += b.size) {
		uint32_t i = first + b.thread;
		int have = i < l.count, miss;
		struct nkv_prep p = have ? nkv_kvc_exist_prep(qp, slot, l, i) : nkv_prep_err(0);
		struct nkv_kvc_entry e =
			nkv_kvc_entry_of(nkv_block_exec(b, qp, have, p), NKV_KV_EXIST, 0);

		if (have && out)
			out[i] = e;
		miss = have && e.outcome != NKV_KVC_OK;
		if (nkv_arch_block_count(miss))
			return first + nkv_block_kvc_first(b, miss);
	}
	return l.count;
}

#endif /* NKV_KVCACHE_H */
