/* SPDX-License-Identifier: MIT */
/*
 * backend.h - the interface between nkv-target's controller core and the
 * stores behind its namespaces (mem, rados, ...).
 *
 * One backend instance serves one namespace. The core hands it operations
 * whose keys, options and data buffers are already validated and resolved
 * to local memory; the backend completes each one exactly once by calling
 * op->done(op), from any thread and at any later time. The core moves the
 * completion to its poll thread through a hand-off queue, so a backend may
 * keep any number of operations in flight and never touches a queue pair.
 */
#ifndef NKV_TGT_BACKEND_H
#define NKV_TGT_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "nkv_wire.h"

struct nkv_be;

/* One operation. Filled by the core; the backend writes status and dw0. */
struct nkv_be_op {
	uint8_t opc;		/* NKV_KV_* on a KV namespace, NKV_NVM_* on an NVM one */
	uint8_t klen;		/* 1..16 (0 only for List: from the beginning) */
	uint8_t key[NKV_KEY_MAX];	/* unused bytes are zero */
	uint32_t options;	/* CDW11 bits as sent (NKV_STORE_*) */
	/*
	 * Data: Store = the value (len bytes); Retrieve = the host buffer
	 * (len bytes, fill at most that, report the full size in dw0);
	 * List = the host buffer for the List payload (count + entries, whole
	 * entries only); NVM Read/Write = the blocks. Segments are the
	 * client's registered memory, valid until done() is called.
	 */
	const struct iovec *iov;
	int iovcnt;
	uint64_t len;
	/*
	 * Every segment lies in memory whose pages cannot vanish (a sealed,
	 * non-hugetlb shmem region): threads the target does not own (a
	 * client library's callbacks) may touch it. Otherwise only the
	 * target's own threads may, through memguard.h, and a backend whose
	 * library works in its own threads bounces through op->out.
	 */
	uint8_t stable;
	uint64_t slba;		/* NVM Read/Write only */

	/* Results, set by the backend before done(). */
	uint16_t status;	/* NKV_STATUS(sct, sc); 0 = success */
	uint32_t dw0;		/* Retrieve: full stored value size */
	/* Set (with status Data Transfer Error) when a page of the client's
	 * vanished under a copy (memguard.h): the core then drops the client. */
	uint8_t fault;
	/* Retrieve / List data the backend left in its own buffer (malloc'd;
	 * the core owns it after done()): the core copies out_len bytes into
	 * the segments on its poll thread, through memguard, and frees it. */
	void *out;
	uint64_t out_len;

	void (*done)(struct nkv_be_op *op);
	void *ctx;		/* the core's */
};

struct nkv_be_ops {
	const char *name;
	/* Start op; complete it later through op->done(). Returns 0, or a
	 * negative errno when it cannot even be queued (then done() is not
	 * called and the core fails the command with an internal error). */
	int (*submit)(struct nkv_be *be, struct nkv_be_op *op);
	/* Bytes and keys stored now (Identify NUSE, capacity checks). */
	uint64_t (*bytes_used)(struct nkv_be *be);
	uint64_t (*keys_used)(struct nkv_be *be);
	/* Wait for every submitted op to complete, then free everything. */
	void (*destroy)(struct nkv_be *be);
};

/* Every backend embeds this first; the core reads limits from it. */
struct nkv_be {
	const struct nkv_be_ops *ops;
	uint8_t csi;		/* NKV_CSI_KV or NKV_CSI_NVM */
	uint32_t max_value;	/* KV: largest value accepted (Identify MVL) */
	uint32_t max_keys;	/* KV: 0 = no limit reported */
	uint64_t capacity;	/* bytes (KV) or blocks (NVM) */
	uint32_t block_size;	/* NVM only */
};

static inline int nkv_be_submit(struct nkv_be *be, struct nkv_be_op *op)
{
	return be->ops->submit(be, op);
}

#endif /* NKV_TGT_BACKEND_H */
