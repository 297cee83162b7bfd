/* SPDX-License-Identifier: MIT */
/*
 * kvc_util.h - cpu-engine runs of nkv_kvcache.h against a host-library
 * queue pair: a list of KC_N content-derived keys (16 bytes: inline; 32:
 * head form in the page's head room), one page (value slot) per key,
 * values derived from their keys (the same in every process), run by one
 * wave or one block.
 */
#ifndef NKV_TEST_KVC_UTIL_H
#define NKV_TEST_KVC_UTIL_H

#include <stdint.h>

#include "nkv_host.h"
#include "nkv_kvcache.h"

#define KC_N 64u		/* the CI size: 64 blocks */
#define KC_VLEN 4096u
#define KC_KMAX 32u

enum kc_op { KC_STORE, KC_RETRIEVE, KC_PREFIX, KC_OOO };

struct kc_job {
	struct nkv_dev_qp *qp;
	uint32_t wave;		/* lanes per wave */
	uint32_t block;		/* 0: the wave flavour; else threads per block */
	uint32_t op;		/* enum kc_op */
	uint32_t ret;		/* what the call returned (the leader's) */
	uint32_t order[3];	/* KC_OOO: the order the three batches are waited */
	struct nkv_kvc_list l;
	struct nkv_kvc_entry out[KC_N];
	uint32_t pages[KC_N];
	uint8_t keys[KC_N * KC_KMAX];
};

/* The job's KC_N keys of @klen bytes (distinct per @salt), page i each. */
void kc_keys(struct kc_job *j, uint32_t klen, uint32_t salt);
/* A queue pair of KC_N pages of KC_VLEN bytes. */
int kc_qpair(struct nkv_ctrl *c, struct nkv_qpair **q);
/* Pages of keys first..first+n-1 get their keys' values (@junk: other bytes). */
void kc_fill(struct nkv_qpair *q, const struct kc_job *j, uint32_t first, uint32_t n, int junk);
/* -1 when key i's page holds its value, else the first wrong byte. */
long kc_check(struct nkv_qpair *q, const struct kc_job *j, uint32_t i);
/* Zero every page. */
void kc_clear(struct nkv_qpair *q);
/* Run @op (out[] set to 0xff first); 0 or the launch's error. */
int kc_run(struct kc_job *j, enum kc_op op);
/* The outcomes of out[from..to-1] equal to @want. */
uint32_t kc_count(const struct kc_job *j, uint32_t from, uint32_t to, uint32_t want);

#endif
