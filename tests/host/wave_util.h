/* SPDX-License-Identifier: MIT */
/*
 * wave_util.h - cpu-engine waves driving host-library queue pairs: each
 * wave owns one queue pair (nkv_qpair_dev) and runs Store / Retrieve /
 * Exist / Delete / List over a key set through the value slots, with
 * LFSR values of log-uniform sizes verified byte for byte.
 */
#ifndef NKV_TEST_WAVE_UTIL_H
#define NKV_TEST_WAVE_UTIL_H

#include <stdint.h>

#include "nkv_host.h"

#define WU_MAX_QPS 8

struct wu_result {
	uint64_t ok;		/* commands with the expected outcome */
	uint64_t bad;		/* wrong status, size or bytes */
	uint64_t errs;		/* nkv_dev.h errors */
	uint64_t missing;	/* 87h seen where expected */
	uint64_t listed;	/* own keys seen by List */
	int last_err;
	uint32_t last_status;
	long first_bad;		/* key index of the first bad result */
};

struct wu_run {
	uint32_t nqp;
	struct nkv_qpair *qp[WU_MAX_QPS];
	uint32_t keys;		/* per queue pair */
	uint32_t salt;		/* distinguishes processes */
	uint32_t max_size;	/* value sizes log-uniform in 1..max_size */
	uint32_t wave;		/* lanes per wave (8..64) */
	uint32_t mode;		/* NKV_CPU_FIBERS / THREADS */
};

/* Create nqp queue pairs with wave slots of max_size bytes. */
int wu_qpairs(struct nkv_ctrl *c, struct wu_run *r, uint64_t poll_budget);
void wu_qpairs_free(struct wu_run *r);
/* Store all, Retrieve + verify all, Exist all, List, Delete all, Exist
 * all (expect 87h). Results summed over waves in *res. 0 or launch error. */
int wu_full_cycle(struct wu_run *r, struct wu_result *res);

#endif
