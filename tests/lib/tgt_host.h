/* SPDX-License-Identifier: MIT */
/*
 * tgt_host.h - a test acting as nkv-target's host, in-process: SQEs written to
 * registered memory, doorbells rung by plain stores to the doorbell page,
 * the controller polled by the test thread (or a poller thread).
 */
#ifndef NKV_TEST_TGT_HOST_H
#define NKV_TEST_TGT_HOST_H

#include <stdint.h>

#include "nkv_wire.h"
#include "target/core/backend.h"
#include "target/backends/mem.h"
#include "target/backends/registry.h"
#include "target/core/ctrl.h"
#include "target/core/dma.h"
#include "target/core/stats.h"

#define H_IOVA 0x10000000ull	/* arena's IOVA: deliberately not its address */
#define H_ARENA (48u << 20)
#define H_MAXQ 64

struct h_q {
	uint32_t size;
	struct nkv_sqe *sq;
	struct nkv_cqe *cq;
	uint64_t sq_iova, cq_iova;
	uint32_t sq_tail, cq_head, phase;
	uint16_t cid;
};

struct h {
	struct nkv_dma *dma;
	struct nkv_subsys *ss;
	struct nkv_tgt_ctrl *c;
	uint32_t *db;
	uint8_t *mem;
	uint64_t bump;
	int threaded;		/* a poller thread polls: reap only waits */
	struct h_q q[H_MAXQ + 1];
};

/* A mem backend of conf, made by the mem type's create (registry.c is
 * not linked here); fails the test with the reason if it cannot be. */
struct nkv_be *h_mem(const struct nkv_be_conf *conf);
/* Controller with ns 1 = KV mem (kv conf, NULL: defaults) and
 * ns 2 = NVM mem (1 MiB, 512-byte blocks); not enabled. */
void h_init(struct h *h, const struct nkv_tgt_ctrl_opts *co,
	    const struct nkv_be_conf *kv);
/* The same with ns 1 = be (owned by the subsystem from now on). */
void h_init_be(struct h *h, const struct nkv_tgt_ctrl_opts *co, struct nkv_be *be);
void h_fini(struct h *h);
uint64_t h_alloc(struct h *h, uint64_t len);	/* page aligned, zeroed */
void *h_ptr(struct h *h, uint64_t iova);
/* Registers, CC.EN = 1, admin queues of n entries; returns CSTS. */
uint32_t h_enable(struct h *h, uint32_t n);
uint32_t h_cc(void);		/* a valid CC with EN = 1 */
void h_submit(struct h *h, uint16_t qid, struct nkv_sqe *s);
/* Wait (polling the controller unless threaded) for one CQE; returns
 * 0 or -1 on timeout. */
int h_reap(struct h *h, uint16_t qid, struct nkv_cqe *e);
/* Submit + reap; returns the status (without phase) or 0xffff on timeout. */
uint16_t h_cmd(struct h *h, uint16_t qid, struct nkv_sqe *s, struct nkv_cqe *e);
uint16_t h_create_qpair(struct h *h, uint16_t qid, uint32_t entries);
/* Fill prp1/prp2 (building PRP lists in the arena) for data at iova. */
void h_prp(struct h *h, struct nkv_sqe *s, uint64_t iova, uint64_t len);
/* A KV SQE; data (len bytes at iova) optional. */
void h_kv(struct nkv_sqe *s, uint8_t opc, uint32_t nsid, const void *key,
	  uint32_t klen, uint32_t cdw10, uint32_t options);
uint16_t h_store(struct h *h, uint16_t qid, const void *key, uint32_t klen,
		 const void *val, uint32_t len, uint32_t options);
uint16_t h_retrieve(struct h *h, uint16_t qid, const void *key, uint32_t klen,
		    void *val, uint32_t buflen, uint32_t *dw0);
/* How h_kvx describes a command's data. */
enum h_dp {
	H_DP_PRP,	/* PRPs; a head ends where a page ends, the data
			 * after it page aligned (the host's slot layout) */
	H_DP_SGL_DB,	/* SGL1 = one Data Block, 16 bytes longer than the data */
	H_DP_SGL_SEG,	/* SGL1 = Segment: lists of two Data Blocks chained by
			 * Segments, the last list a Last Segment's; every
			 * piece in a page of its own, the first 3 bytes (a
			 * head's length and first key byte: a split head) */
	H_DP_SGL_LAST,	/* SGL1 = Last Segment: one list of scattered pieces */
};
#define H_KEY_INLINE 0
#define H_KEY_HEAD 1
/*
 * A KV command on ns 1 with the key inline (H_KEY_INLINE) or in head
 * form (H_KEY_HEAD: KL = 0, [u16 klen][key] first in the buffer; a List
 * sets NKV_LIST_KEY_HEAD), its data described as dp says. data: Store's
 * value (len bytes in), Retrieve's / List's buffer (len bytes out, from
 * after the head); Exist / Delete: none (len 0). Returns the status;
 * *dw0 (may be NULL) gets DW0.
 */
uint16_t h_kvx(struct h *h, uint16_t qid, uint8_t opc, const void *key, uint32_t klen,
	       int form, enum h_dp dp, void *data, uint32_t len, uint32_t *dw0);
/* SGL1 of s as a Data Block of len bytes at iova (PSDT = SGL). */
void h_sgl_db(struct nkv_sqe *s, uint64_t iova, uint32_t len);

/* Admin Identify into a fresh 4 KiB buffer; returns the status. */
uint16_t h_identify(struct h *h, uint8_t cns, uint32_t nsid, uint8_t csi,
		    void *out4k);

#endif
