/* SPDX-License-Identifier: MIT */
/*
 * fake_ctrl.h - a tiny in-test NVMe "controller" thread for the device
 * tests: it watches the SQ tail doorbell, fetches SQEs, and posts CQEs the
 * way a controller does (DW0-DW2, then DW3 with the phase, release), in
 * order, reversed or shuffled. Not the real target (src/target/).
 */
#ifndef NKV_TEST_FAKE_CTRL_H
#define NKV_TEST_FAKE_CTRL_H

#include <pthread.h>
#include <stdint.h>

#include "nkv_block.h"
#include "nkv_dev.h"

enum fake_order { FAKE_IN_ORDER, FAKE_REVERSED, FAKE_SHUFFLED };

/* Everything a queue pair needs, in host memory. */
struct test_qp {
	struct nkv_dev_qp qp;
	struct nkv_sqe *sq;
	struct nkv_cqe *cq;
	uint32_t *db;		/* [0] SQ tail, [1] CQ head (stride 4) */
	uint64_t *bitmap;
	struct nkv_dev_cpl *cpl;
	struct nkv_dev_slot *slots;
	uint8_t *values;
};

int test_qp_init(struct test_qp *t, uint32_t sqd, uint32_t cqd, uint32_t nslots,
		 uint64_t budget);
void test_qp_free(struct test_qp *t);

struct fake_ctrl {
	struct test_qp *t;
	int order;
	uint32_t hold;		/* complete once this many are pending */
	int mute;		/* fetch but never complete (timeout tests) */
	pthread_t th;
	int stop;
	/* controller state */
	uint32_t sq_head, cq_tail, phase;
	uint32_t npend;
	struct nkv_sqe pend[1024];
	uint8_t cid_busy[65536];
	uint32_t seed;
	/* observations (atomics) */
	uint64_t fetched;
	uint64_t reported;	/* SQEs reported fetched through CQE SQHD */
	uint64_t posted;
	uint64_t cid_reuse;
	/* SQ doorbell hook */
	uint64_t sq_writes;
	uint64_t submitted;
	uint32_t last_tail;
	uint64_t overrun;	/* doorbell passed the reported SQ head */
	uint64_t bad_delta;
};

/* What the fake answers for an SQE: lanes check they got their own. */
static inline uint32_t fake_dw0(const struct nkv_sqe *s) { return s->cdw10 * 3u + nkv_sqe_opc(s); }
static inline uint16_t fake_status(const struct nkv_sqe *s)
{
	return (s->cdw2 & 1u) ? NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS) : 0;
}

void fake_start(struct fake_ctrl *c, struct test_qp *t, int order, uint32_t hold);
void fake_stop(struct fake_ctrl *c);

#endif /* NKV_TEST_FAKE_CTRL_H */

/* A lane function for nkv_cpu_launch: @rounds batches of Retrieves from
 * the lanes below @lanes (the others pass NULL), each lane checking that
 * its own result (DW0, status) came back to it. One wave. */
struct batch_run {
	struct test_qp *t;
	uint32_t lanes;
	uint32_t rounds;
	uint64_t ok;		/* atomics */
	uint64_t wrong;
	uint64_t errs;
	int last_err;
};
void batch_lane(void *arg);

/* The same with a block of waves (nkv_block.h) owning the queue pair:
 * threads below @threads of the block have a command each round. */
struct block_run {
	struct test_qp *t;
	uint32_t threads;
	uint32_t rounds;
	uint64_t ok;		/* atomics */
	uint64_t wrong;
	uint64_t errs;
	int last_err;
};
void block_lane(void *arg);
