/* SPDX-License-Identifier: MIT */
/*
 * block_kernels.h - block-batch kernel bodies, written once for every
 * engine: the cpu engine calls them from the lanes of a block
 * (nkv_cpu_cfg.block_size), wave_kernels_hip.cpp and wave_kernels_cuda.cu
 * wrap them in __global__ functions.
 *
 * One block owns @qp (nkv_block.h); thread i of the block handles key
 * first + i of the argument block (nkv_wk_args, wave_kernels.h), through
 * value slot (key index % nr_slots), and writes its result to out[key
 * index]. The batch is min(count - first, block size) commands, rung
 * with one doorbell when it fits the queue's credit limit.
 */
#ifndef NKV_DEVICE_BLOCK_KERNELS_H
#define NKV_DEVICE_BLOCK_KERNELS_H

#include "nkv_block.h"
#include "device/wave_kernels.h"

/* The kernel body: call it at kernel entry, from every thread of the
 * block (it declares the block's shared struct and makes the block
 * context there). */
NKV_DEV void nkv_wk_kv_block(struct nkv_dev_qp *qp, const struct nkv_wk_args *a)
{
	NKV_BLOCK_SHARED(sh);
	const struct nkv_block b = nkv_block_enter(sh);
	const struct nkv_wk_key *keys = NKV_DEV_PTR(const struct nkv_wk_key, a->keys_addr);
	struct nkv_wk_out *out = NKV_DEV_PTR(struct nkv_wk_out, a->out_addr);
	uint32_t i = a->first + b.thread;
	int have = i < a->count;
	/* Every thread of the block takes part, with or without an SQE. */
	struct nkv_dev_result r =
		nkv_block_exec(b, qp, have, have ? nkv_wk_prep(qp, a, &keys[i], i) : nkv_prep_err(0));

	if (have) {
		out[i].err = r.err;
		out[i].status = r.status;
		out[i].cid = r.cid;
		out[i].dw0 = r.dw0;
	}
}

#endif /* NKV_DEVICE_BLOCK_KERNELS_H */
