/* SPDX-License-Identifier: MIT */
/* vfu_util.h - test helpers: the vfio-user suites' in-process nkv-target
 * (server.h), and a tiny NVMe driver over the vfio-user transport (admin +
 * one I/O pair). */
#ifndef NKV_TEST_VFU_UTIL_H
#define NKV_TEST_VFU_UTIL_H

#include <stdint.h>

#include "host/doorbell_fwd.h"
#include "host/transport.h"
#include "server.h"

/* Serve namespace 1 (KV, mem) to four clients of four I/O queue pairs
 * each. 0 or a negative errno. Stop with tl_server_stop. */
int vt_server_start(struct tl_server *s, int no_sparse);
/* The same, with tweak(opts) called last (limits, log file). */
int vt_server_start_with(struct tl_server *s, int no_sparse,
			 void (*tweak)(struct nkv_vfu_server_opts *o));
int vt_raw_connect(const char *path);
/* Threads of process @pid (0: this one) at SCHED_IDLE, or -errno. */
int vt_idle_threads(int pid);

struct vt_nvme {
	const struct nkv_transport_ops *ops;
	struct nkv_tr *tr;
	struct nkv_dmamem mem;		/* 64 pages of memfd */
	volatile uint32_t *db;		/* real doorbells or the shadow page */
	uint32_t dstrd;			/* CAP.DSTRD: doorbell i at db[i << dstrd] */
	uint32_t *shadow;
	struct nkv_dbfwd_tr fwd_tr;
	struct nkv_dbfwd *fwd;
	uint32_t sq_tail[2], cq_head[2], phase[2];
	uint16_t cid;
};

#define VT_ASQ 0
#define VT_ACQ 1
#define VT_IOSQ 2
#define VT_IOCQ 3
#define VT_DATA 8		/* data pages from here */
#define VT_QD 32

/* Open, map memory, enable the controller, create I/O queue pair 1. */
int vt_nvme_up(struct vt_nvme *n, const char *path);
/* The same with other DMA memory: VT_MEM_UNSEALED (no seals: the test may
 * truncate it), VT_MEM_HUGETLB (a sealed hugetlb memfd of 2 huge pages). */
#define VT_MEM_UNSEALED 0x1u
#define VT_MEM_HUGETLB 0x2u
int vt_nvme_up_mem(struct vt_nvme *n, const char *path, unsigned flags);
/* Pages of DMA memory vt_nvme_up_mem maps for flags. */
unsigned vt_mem_pages(unsigned flags);
void vt_nvme_down(struct vt_nvme *n);
void *vt_page(struct vt_nvme *n, unsigned page);
uint64_t vt_iova(struct vt_nvme *n, unsigned page);
/* Submit one SQE on qid and wait (bounded) for its CQE. Returns the status
 * (0 ok), or -1 on timeout. dw0 gets CQE DW0. */
int vt_cmd(struct vt_nvme *n, uint16_t qid, struct nkv_sqe *sqe, uint32_t *dw0);
/* Submit only (no wait). */
void vt_submit(struct vt_nvme *n, uint16_t qid, struct nkv_sqe *sqe);
void vt_kv_sqe(struct nkv_sqe *s, uint8_t opc, const char *key, uint64_t prp, uint32_t len);
/* Every KV command byte for byte: Store (1 B to 4 pages, PRP lists
 * included), Exist, Retrieve (whole and short), List, Delete, on keys
 * tag0..tag4 (tag: at most 14 bytes). 0, or -1 with the reason in why. */
int vt_every_op(struct vt_nvme *n, const char *tag, char *why, size_t whylen);

#endif
