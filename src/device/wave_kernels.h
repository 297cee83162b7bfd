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
	uint8_t key[NKV_KEY_INLINE_MAX];
	uint32_t len;
};

struct nkv_wk_args {
	uint64_t keys_addr;	/* struct nkv_wk_key[count] */
	uint64_t out_addr;	/* struct nkv_wk_out[count] */
	uint32_t count;
	uint32_t first;		/* key index of lane 0 */
	uint32_t opc;		/* NKV_KV_STORE / RETRIEVE / DELETE / EXIST */
	uint32_t nsid;		/* 0: the queue pair's (qp->nsid); else this one */
	uint32_t opts;		/* Store options */
	uint32_t value_size;	/* Store: bytes of the slot to store */
};

struct nkv_wk_out {
	int32_t err;		/* nkv_dev.h error code, 0 when the command ran */
	uint16_t status;	/* NVMe status */
	uint16_t cid;
	uint32_t dw0;		/* Retrieve: stored value length */
};

/* One lane's SQE for key @i, by value; the builders validate the key.
 * Slots are taken round-robin by key index (the tests size them). */
NKV_DEV struct nkv_prep nkv_wk_op(const struct nkv_dev_qp *qp, const struct nkv_wk_args *a,
				  const struct nkv_wk_key *k, uint32_t slot)
{
	switch (a->opc) {
	case NKV_KV_STORE:
		return nkv_dev_store(qp, slot, k->key, k->len, a->opts, a->value_size);
	case NKV_KV_RETRIEVE:
		return nkv_dev_retrieve(qp, slot, k->key, k->len);
	case NKV_KV_DELETE:
		return nkv_dev_delete(qp, slot, k->key, k->len);
	case NKV_KV_EXIST:
		return nkv_dev_exist(qp, slot, k->key, k->len);
	default:
		return nkv_prep_err(NKV_EINVAL);
	}
}

/* The same command for another namespace: the SQE is a value, so a
 * kernel that addresses several namespaces sets its own. */
NKV_DEV struct nkv_prep nkv_wk_prep(const struct nkv_dev_qp *qp, const struct nkv_wk_args *a,
				    const struct nkv_wk_key *k, uint32_t i)
{
	struct nkv_prep p = nkv_wk_op(qp, a, k, qp->nr_slots ? i % qp->nr_slots : 0);

	if (!p.err && a->nsid)
		p.sqe.nsid = a->nsid;
	return p;
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
	int have = i < a->count;
	/* Every lane of the wave takes part, with or without an SQE. */
	struct nkv_dev_result r =
		nkv_wave_exec(w, qp, have, have ? nkv_wk_prep(qp, a, &keys[i], i) : nkv_prep_err(0));

	if (have) {
		out[i].err = r.err;
		out[i].status = r.status;
		out[i].cid = r.cid;
		out[i].dw0 = r.dw0;
	}
}

#endif /* NKV_DEVICE_WAVE_KERNELS_H */
