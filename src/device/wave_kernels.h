/* SPDX-License-Identifier: MIT */
/*
 * wave_kernels.h - kernel bodies written once for every engine: the cpu
 * engine calls them from its lanes, wave_kernels_hip.cpp and
 * wave_kernels_cuda.cu wrap them in __global__ functions.
 *
 * One wave owns @qp (see nkv_dev.h); lane i of the wave handles key
 * first + i of the argument block, through value slot (key index %
 * nr_slots), and writes its result to out[key index].
 */
#ifndef NKV_DEVICE_WAVE_KERNELS_H
#define NKV_DEVICE_WAVE_KERNELS_H

#include "nkv_dev.h"

struct nkv_wk_key {
	uint8_t key[NKV_KEY_MAX];
	uint32_t len;
};

struct nkv_wk_args {
	uint64_t keys_addr;	/* struct nkv_wk_key[count] */
	uint64_t out_addr;	/* struct nkv_wk_out[count] */
	uint32_t count;
	uint32_t first;		/* key index of lane 0 */
	uint32_t opc;		/* NKV_KV_STORE / RETRIEVE / DELETE / EXIST */
	uint32_t nsid;
	uint32_t opts;		/* Store options */
	uint32_t value_size;	/* Store: bytes of the slot to store */
};

struct nkv_wk_out {
	int32_t err;		/* nkv_dev.h error code, 0 when the command ran */
	uint16_t status;	/* NVMe status */
	uint16_t cid;
	uint32_t dw0;		/* Retrieve: stored value length */
};

/* One lane's SQE for key @i, by value; the builders validate the key. */
NKV_DEV struct nkv_prep nkv_wk_prep(const struct nkv_dev_qp *qp, const struct nkv_wk_args *a,
				    const struct nkv_wk_key *k, uint32_t i)
{
	uint32_t slot = qp->nr_slots ? i % qp->nr_slots : 0;

	switch (a->opc) {
	case NKV_KV_STORE:
		return nkv_sqe_store_slot(qp, slot, a->nsid, k->key, k->len, a->opts,
					  a->value_size);
	case NKV_KV_RETRIEVE:
		return nkv_sqe_retrieve_slot(qp, slot, a->nsid, k->key, k->len);
	case NKV_KV_DELETE:
		return nkv_sqe_delete(a->nsid, k->key, k->len);
	case NKV_KV_EXIST:
		return nkv_sqe_exist(a->nsid, k->key, k->len);
	default:
		return nkv_prep_err(NKV_EINVAL);
	}
}

/* The kernel body: call it at kernel entry (it makes the wave context
 * there), one wave per queue pair: one KV command per lane, one doorbell
 * per batch (or per chunk when credits are short), results routed by CID. */
NKV_DEV void nkv_wk_kv_batch(struct nkv_dev_qp *qp, const struct nkv_wk_args *a)
{
	const struct nkv_wave w = nkv_wave_enter();
	const struct nkv_wk_key *keys = NKV_DEV_PTR(const struct nkv_wk_key, a->keys_addr);
	struct nkv_wk_out *out = NKV_DEV_PTR(struct nkv_wk_out, a->out_addr);
	uint32_t i = a->first + w.lane;
	struct nkv_dev_result res = { 0, 0, 0 };
	struct nkv_prep p = nkv_prep_err(0);
	int have = i < a->count, err, wres;

	if (have)
		p = nkv_wk_prep(qp, a, &keys[i], i);
	err = p.err;
	/* Every lane of the wave takes part, with or without an SQE. */
	wres = nkv_wave_exec(w, qp, have && !err, p.sqe, &res);
	err = err ? err : wres;
	if (i < a->count) {
		out[i].err = err;
		out[i].status = res.status;
		out[i].cid = res.cid;
		out[i].dw0 = res.dw0;
	}
}

#endif /* NKV_DEVICE_WAVE_KERNELS_H */
