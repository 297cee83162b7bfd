/* SPDX-License-Identifier: MIT */
/*
 * cpu-engine waves (nkv_dev.h on nkv_cpu.h fibers) driving the real
 * controller core directly: every KV op, several waves, one queue pair
 * per wave, the controller on a poller thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "tgt_host.h"
#include "target/core/poller.h"
#include "nkv_cpu.h"
#include "nkv_dev.h"
#include "nkv_list.h"
#include "host/qpair_check.h"

#define WAVES 3
#define LANES 16
#define ROUNDS 3
#define VLEN 5000u		/* two pages: PRP1 + PRP2 */
#define SLOT 8192u

static struct h H;

struct wq {
	struct nkv_dev_qp qp;
	uint64_t *bitmap;
	struct nkv_dev_cpl *cpl;
	struct nkv_dev_slot slots[LANES];
};

static struct wq W[WAVES];
static uint64_t ok, bad;
static int stop;

#define CHECK(c)							\
	do {								\
		if (c)							\
			__atomic_fetch_add(&ok, 1, __ATOMIC_RELAXED);	\
		else							\
			__atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);	\
	} while (0)

static void wq_init(struct wq *w, uint16_t qid, uint32_t depth)
{
	uint32_t cids = depth * 2, i;

	cr_assert_eq(h_create_qpair(&H, qid, depth), 0);
	w->bitmap = calloc((cids + 63) / 64, 8);
	w->cpl = calloc(cids, sizeof(*w->cpl));
	for (i = 0; i < LANES; i++) {
		uint64_t iova = h_alloc(&H, SLOT);
		struct nkv_sqe tmp;

		h_prp(&H, &tmp, iova, SLOT);
		/* The test host's memory is contiguous: page 2 follows page 1. */
		w->slots[i] = (struct nkv_dev_slot){ .addr = (uintptr_t)h_ptr(&H, iova),
						     .prp1 = tmp.prp1, .prp2 = tmp.prp2,
						     .page2 = SLOT > NKV_PAGE_SIZE ? iova + NKV_PAGE_SIZE : 0,
						     .size = SLOT };
	}
	w->qp = (struct nkv_dev_qp){
		.sq_addr = (uintptr_t)H.q[qid].sq, .cq_addr = (uintptr_t)H.q[qid].cq,
		.sq_db_addr = (uintptr_t)&H.db[2 * qid],
		.cq_db_addr = (uintptr_t)&H.db[2 * qid + 1],
		.cid_bitmap_addr = (uintptr_t)w->bitmap, .cpl_addr = (uintptr_t)w->cpl,
		.slots_addr = (uintptr_t)w->slots, .poll_budget = 50000000,
		.sq_depth = depth, .cq_depth = depth, .db_stride = 4, .qid = qid, .nsid = 1,
		.cid_count = cids, .nr_slots = LANES,
		.credit_limit = nkv_dev_credit_limit(depth, depth), .cq_phase = 1 };
	cr_assert_eq(nkv_dev_qp_check(&w->qp), 0);
}

/* A lane's result with an error folded into a status no controller
 * sends, so one CHECK names both. */
static struct nkv_dev_result run(struct nkv_dev_result r)
{
	if (r.err)
		r.status = 0xfffe;
	return r;
}

static void lane(void *arg)
{
	const struct nkv_wave entry = nkv_wave_enter();
	uint32_t w = nkv_cpu_wave_id(), l = entry.lane, r, i;
	struct nkv_dev_qp *qp = &W[w].qp;
	uint8_t *val = NKV_DEV_PTR(uint8_t, W[w].slots[l].addr);
	struct nkv_dev_result res;
	struct nkv_list_dec d;
	uint8_t k2[16];
	uint32_t kl2 = 0;
	char key[17];
	uint32_t kl;

	(void)arg;
	for (r = 0; r < ROUNDS; r++) {
		kl = (uint32_t)snprintf(key, sizeof(key), "w%ul%02ur%u", w, l, r);
		for (i = 0; i < VLEN; i++)
			val[i] = (uint8_t)(i + l + 31 * w + r);
		CHECK(run(nkv_wave_store(entry, qp, 1, l, key, kl, 0, VLEN)).status == 0);
		res = run(nkv_wave_store(entry, qp, 1, l, key, kl, NKV_STORE_MUST_NOT_EXIST, VLEN));
		CHECK(res.status == NKV_STATUS(0, NKV_SC_KV_KEY_EXISTS));
		CHECK(run(nkv_wave_exist(entry, qp, 1, l, key, kl)).status == 0);
		memset(val, 0, SLOT);
		res = run(nkv_wave_retrieve(entry, qp, 1, l, key, kl));
		CHECK(res.status == 0 && res.dw0 == VLEN);
		CHECK(val[0] == (uint8_t)(l + 31 * w + r) &&
		      val[VLEN - 1] == (uint8_t)(VLEN - 1 + l + 31 * w + r) &&
		      val[VLEN] == 0);
		/* List from this lane's own key: it comes first. */
		res = run(nkv_wave_exec(entry, qp, 1,
					nkv_sqe_list(qp->nsid, key, kl, 256, W[w].slots[l].prp1, 0)));
		CHECK(res.status == 0);
		CHECK(nkv_list_dec_init(&d, val, 256) == 0 &&
		      nkv_list_dec_next(&d, k2, sizeof(k2), &kl2) == 1 &&
		      kl2 == kl && !memcmp(k2, key, kl));
		if (r == ROUNDS - 1)
			continue;	/* keep the last round's keys */
		CHECK(run(nkv_wave_delete(entry, qp, 1, l, key, kl)).status == 0);
		res = run(nkv_wave_exist(entry, qp, 1, l, key, kl));
		CHECK(res.status == NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS));
	}
}

static void *poll_main(void *arg)
{
	struct nkv_tgt_poller p;

	(void)arg;
	nkv_tgt_poller_init(&p, 100000);
	nkv_tgt_poller_run(&p, H.c, &stop);
	return NULL;
}

Test(cpu_waves, every_kv_op_several_waves_and_queue_pairs, .timeout = 60)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), NKV_CPU_FIBERS, WAVES, LANES, 0 };
	pthread_t thr;
	uint32_t w;

	h_init(&H, NULL, NULL);
	cr_assert_eq(h_enable(&H, 16), NKV_CSTS_RDY);
	for (w = 0; w < WAVES; w++)
		wq_init(&W[w], (uint16_t)(w + 1), 32);
	cr_assert_eq(pthread_create(&thr, NULL, poll_main, NULL), 0);
	cr_assert_eq(nkv_cpu_launch(&cfg, lane, NULL), 0);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(thr, NULL);
	cr_expect_eq(bad, 0);
	cr_expect_eq(ok, (uint64_t)WAVES * LANES * (ROUNDS * 7 + (ROUNDS - 1) * 2));
	for (w = 0; w < WAVES; w++) {
		cr_expect_eq(nkv_dev_qp_failed(&W[w].qp), 0);
		cr_expect_eq(W[w].qp.inflight, 0);
		free(W[w].bitmap);
		free(W[w].cpl);
	}
	cr_expect_eq(nkv_tgt_ctrl_inflight(H.c), 0);
	h_fini(&H);
}
