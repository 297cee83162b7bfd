/* SPDX-License-Identifier: MIT */
/*
 * Completion reaping: a producer thread posts CQEs the way a controller
 * does (DW0-DW2, then DW3 with the phase, release) while nkv_qp_reap()
 * reaps on this thread; no reaped entry may carry a stale DW0. Also the
 * wrap / phase flip, one CQ head doorbell per reaped batch, bad CQEs.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "fake_ctrl.h"

#define CQD 8u
#define N 200000u

static struct test_qp tq;
static uint64_t cq_db_writes;

static void count_db(void *ctx, volatile uint32_t *addr, uint32_t v)
{
	(void)v;
	if (addr == ctx)
		cq_db_writes++;
}

static uint32_t dw0_of(uint32_t seq) { return seq * 2654435761u + 1u; }

static void *producer(void *p)
{
	struct test_qp *t = p;
	uint32_t seq, tail = 0, phase = 1;

	for (seq = 0; seq < N; seq++) {
		struct nkv_cqe *e = &t->cq[tail];
		uint64_t spins = 0;

		/* Wait for room: the reaper's CQ head doorbell. */
		while ((tail + 1) % CQD == __atomic_load_n(&t->db[1], __ATOMIC_ACQUIRE))
			if (++spins > 2000000000ull)
				return NULL;
		__atomic_store_n(&e->dw0, dw0_of(seq), __ATOMIC_RELAXED);
		__atomic_store_n(&e->dw1, seq, __ATOMIC_RELAXED);
		__atomic_store_n(&e->dw2, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&e->dw3, nkv_cqe_dw3((uint16_t)(seq % (2 * CQD)), phase, 0),
				 __ATOMIC_RELEASE);
		if (++tail == CQD) {
			tail = 0;
			phase ^= 1;
		}
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* All CIDs held, "in flight" forever: the reaper only files results. */
static void setup(void)
{
	cr_assert_eq(test_qp_init(&tq, 2, CQD, 0, 1000), 0);
	tq.bitmap[0] = (1ull << (2 * CQD)) - 1;	/* 16 CIDs (what test_qp_init sized), all held */
	tq.qp.cid_count = 4 * CQD;
	tq.qp.inflight = 0x7fffffff;
}

Test(cqe, concurrent_no_stale_dw0)
{
	pthread_t th;
	uint32_t seen = 0, stale = 0, batches = 0;
	double deadline;

	setup();
	cq_db_writes = 0;
	nkv_cpu_set_mmio_hook(count_db, &tq.db[1]);
	pthread_create(&th, NULL, producer, &tq);
	deadline = now() + 20.0;
	while (seen < N && now() < deadline) {
		uint32_t before = tq.qp.cq_head;
		int r = nkv_qp_reap(&tq.qp, CQD);
		int i;

		cr_assert_geq(r, 0, "reap %d at seen %u: failed %u cq_head %u dw3 %#x dw2 %#x done %u", r, seen, tq.qp.failed, tq.qp.cq_head, tq.cq[tq.qp.cq_head].dw3, tq.cq[tq.qp.cq_head].dw2, tq.cpl[nkv_cqe_cid(tq.cq[tq.qp.cq_head].dw3)].done);
		if (r)
			batches++;
		for (i = 0; i < r; i++) {
			uint32_t seq = seen + i;
			struct nkv_dev_cpl *c = &tq.cpl[seq % (2 * CQD)];

			cr_assert_eq(c->done, 1u);
			stale += c->dw0 != dw0_of(seq);
			c->done = 0;
		}
		(void)before;
		seen += r;
	}
	pthread_join(th, NULL);
	nkv_cpu_set_mmio_hook(NULL, NULL);
	cr_expect_eq(seen, N, "reaped %u of %u", seen, N);
	cr_expect_eq(stale, 0, "%u entries reaped with a stale DW0", stale);
	cr_expect_eq(cq_db_writes, batches, "one CQ head doorbell per reaped batch");
	cr_expect_eq(tq.qp.cq_head, N % CQD);
	cr_expect_eq(tq.qp.cq_phase, (N / CQD) % 2 ? 0u : 1u);
	test_qp_free(&tq);
}

/* Copy a 16-byte CQE with two 64-bit loads, DW0-1 first, no ordering:
 * exactly the copy that can pair a stale DW0 with a fresh phase (DW3). */
static void wide_copy(struct nkv_cqe *dst, const struct nkv_cqe *src)
{
	const uint64_t *s = (const uint64_t *)(const void *)src;
	uint64_t lo = __atomic_load_n(&s[0], __ATOMIC_RELAXED);
	uint64_t hi = __atomic_load_n(&s[1], __ATOMIC_RELAXED);

	dst->dw0 = (uint32_t)lo;
	dst->dw1 = (uint32_t)(lo >> 32);
	dst->dw2 = (uint32_t)hi;
	dst->dw3 = (uint32_t)(hi >> 32);
}

/* What the field bug did: trust the first wide copy. Only counted. */
static int naive_reap(struct test_qp *t, uint32_t *head, uint32_t *phase, uint32_t *seq,
		      uint32_t *torn)
{
	struct nkv_cqe c;

	wide_copy(&c, &t->cq[*head]);
	if (nkv_cqe_phase(c.dw3) != *phase)
		return 0;
	*torn += c.dw0 != dw0_of(*seq);
	(*seq)++;
	if (++*head == CQD) {
		*head = 0;
		*phase ^= 1;
	}
	__atomic_store_n(&t->db[1], *head, __ATOMIC_RELEASE);
	return 1;
}

Test(cqe, naive_reaper_for_comparison)
{
	pthread_t th;
	uint32_t head = 0, phase = 1, seq = 0, torn = 0;
	double deadline;

	setup();
	pthread_create(&th, NULL, producer, &tq);
	deadline = now() + 20.0;
	while (seq < N && now() < deadline)
		naive_reap(&tq, &head, &phase, &seq, &torn);
	pthread_join(th, NULL);
	printf("naive reaper: %u torn CQE reads in %u (not asserted)\n", torn, seq);
	cr_expect_eq(seq, N);
	test_qp_free(&tq);
}

static void post(struct test_qp *t, uint32_t idx, uint16_t cid, uint32_t phase, uint16_t sqhd)
{
	t->cq[idx].dw0 = 1000u + cid;
	t->cq[idx].dw2 = nkv_cqe_dw2(sqhd, 1);
	__atomic_store_n(&t->cq[idx].dw3, nkv_cqe_dw3(cid, phase, NKV_STATUS(0, 0x87)),
			 __ATOMIC_RELEASE);
}

Test(cqe, wrap_and_phase_flip)
{
	uint32_t i, phase = 1, idx = 0;

	cr_assert_eq(test_qp_init(&tq, 16, 4, 0, 10), 0);
	tq.bitmap[0] = 0xffff;
	tq.qp.sq_tail = 10;
	tq.qp.inflight = 10;
	for (i = 0; i < 10; i++) {
		post(&tq, idx, (uint16_t)i, phase, (uint16_t)(i + 1));
		if (++idx == 4) {
			idx = 0;
			phase ^= 1;
		}
		cr_assert_eq(nkv_qp_reap(&tq.qp, 16), 1, "entry %u", i);
		cr_expect_eq(tq.cpl[i].dw0, 1000u + i);
		cr_expect_eq(tq.cpl[i].status, NKV_STATUS(0, 0x87), "status unchanged");
		cr_expect_eq(tq.qp.sq_head, i + 1, "SQ head from the CQE");
		cr_expect_eq(tq.db[1], tq.qp.cq_head);
		cr_expect_eq(nkv_qp_reap(&tq.qp, 16), 0, "old phase is not new");
	}
	cr_expect_eq(tq.qp.cq_head, 2u);
	cr_expect_eq(tq.qp.cq_phase, 1u, "flipped twice");
	cr_expect_eq(tq.qp.inflight, 0u);
	test_qp_free(&tq);
}

Test(cqe, bad_cqe_fails_qp)
{
	cr_assert_eq(test_qp_init(&tq, 16, 4, 0, 10), 0);
	tq.bitmap[0] = 0x1;	/* only CID 0 held */
	tq.qp.sq_tail = 1;
	tq.qp.inflight = 1;
	post(&tq, 0, 5, 1, 1);	/* CID 5 is not in flight */
	cr_expect_eq(nkv_qp_reap(&tq.qp, 4), NKV_EIO);
	cr_expect_eq(nkv_dev_qp_failed(&tq.qp), NKV_QP_FAILED_BAD_CQE);
	cr_expect_eq(tq.qp.cq_head, 0u, "not consumed");
	test_qp_free(&tq);
}
