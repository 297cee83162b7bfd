/* SPDX-License-Identifier: MIT */
/* fake_ctrl.c - the in-test controller thread (see fake_ctrl.h). */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_ctrl.h"
#include "host/prep.h"
#include "host/qpair_check.h"

static void *zalloc(size_t n)
{
	void *p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);

	if (p)
		memset(p, 0, n);
	return p;
}

int test_qp_init(struct test_qp *t, uint32_t sqd, uint32_t cqd, uint32_t nslots,
		 uint64_t budget)
{
	uint32_t cids = (sqd > cqd ? sqd : cqd) * 2u, i;

	memset(t, 0, sizeof(*t));
	t->sq = zalloc(sizeof(*t->sq) * sqd);
	t->cq = zalloc(sizeof(*t->cq) * cqd);
	t->db = zalloc(64);
	t->bitmap = zalloc(8 * ((cids + 63) / 64));
	t->cpl = zalloc(sizeof(*t->cpl) * cids);
	t->slots = zalloc(sizeof(*t->slots) * (nslots ? nslots : 1));
	t->values = zalloc((size_t)4096 * (nslots ? nslots : 1));
	if (!t->sq || !t->cq || !t->db || !t->bitmap || !t->cpl || !t->slots || !t->values)
		return -1;
	for (i = 0; i < nslots; i++) {
		t->slots[i].addr = (uintptr_t)(t->values + 4096 * i);
		t->slots[i].prp1 = 0x100000000ull + 4096ull * i;
		t->slots[i].size = 4096;
	}
	t->qp.sq_addr = (uintptr_t)t->sq;
	t->qp.cq_addr = (uintptr_t)t->cq;
	t->qp.sq_db_addr = (uintptr_t)&t->db[0];
	t->qp.cq_db_addr = (uintptr_t)&t->db[1];
	t->qp.cid_bitmap_addr = (uintptr_t)t->bitmap;
	t->qp.cpl_addr = (uintptr_t)t->cpl;
	t->qp.slots_addr = (uintptr_t)t->slots;
	t->qp.poll_budget = budget;
	t->qp.sq_depth = sqd;
	t->qp.cq_depth = cqd;
	t->qp.db_stride = 4;
	t->qp.qid = 1;
	t->qp.nsid = 1;
	t->qp.cid_count = cids;
	t->qp.nr_slots = nslots;
	t->qp.credit_limit = nkv_dev_credit_limit(sqd, cqd);
	t->qp.cq_phase = 1;
	return nkv_dev_qp_check(&t->qp);
}

void test_qp_free(struct test_qp *t)
{
	free(t->sq);
	free(t->cq);
	free(t->db);
	free(t->bitmap);
	free(t->cpl);
	free(t->slots);
	free(t->values);
}

static void fetch(struct fake_ctrl *c, uint32_t tail)
{
	struct test_qp *t = c->t;

	while (c->sq_head != tail && c->npend < 1024) {
		uint64_t *src = (uint64_t *)&t->sq[c->sq_head];
		struct nkv_sqe *s = &c->pend[c->npend++];
		uint64_t *dst = (uint64_t *)s;
		int i;

		for (i = 0; i < 8; i++)
			dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
		if (c->cid_busy[nkv_sqe_cid(s)]++)
			__atomic_fetch_add(&c->cid_reuse, 1, __ATOMIC_RELAXED);
		c->sq_head = (c->sq_head + 1) % t->qp.sq_depth;
		__atomic_fetch_add(&c->fetched, 1, __ATOMIC_RELAXED);
	}
}

static uint32_t pick(struct fake_ctrl *c)
{
	if (c->order == FAKE_IN_ORDER)
		return 0;
	if (c->order == FAKE_REVERSED)
		return c->npend - 1;
	c->seed = c->seed * 1103515245u + 12345u;
	return (c->seed >> 8) % c->npend;
}

/* Post one CQE: DW0-DW2 first, then DW3 (phase) with release. */
static void post(struct fake_ctrl *c, uint32_t idx)
{
	struct test_qp *t = c->t;
	struct nkv_sqe s = c->pend[idx];
	struct nkv_cqe *e = &t->cq[c->cq_tail];
	uint16_t cid = nkv_sqe_cid(&s);

	memmove(&c->pend[idx], &c->pend[idx + 1], (c->npend - idx - 1) * sizeof(s));
	c->npend--;
	c->cid_busy[cid]--;
	__atomic_store_n(&c->reported, __atomic_load_n(&c->fetched, __ATOMIC_RELAXED),
			 __ATOMIC_RELEASE);
	__atomic_store_n(&e->dw0, fake_dw0(&s), __ATOMIC_RELAXED);
	__atomic_store_n(&e->dw1, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->dw2, nkv_cqe_dw2((uint16_t)c->sq_head, 1), __ATOMIC_RELAXED);
	__atomic_store_n(&e->dw3, nkv_cqe_dw3(cid, c->phase, fake_status(&s)), __ATOMIC_RELEASE);
	if (++c->cq_tail == t->qp.cq_depth) {
		c->cq_tail = 0;
		c->phase ^= 1;
	}
	__atomic_fetch_add(&c->posted, 1, __ATOMIC_RELAXED);
}

static void complete(struct fake_ctrl *c)
{
	struct test_qp *t = c->t;
	uint32_t d = t->qp.cq_depth;
	uint32_t head = __atomic_load_n(&t->db[1], __ATOMIC_ACQUIRE);
	uint32_t room = d - 1 - (c->cq_tail + d - head) % d;

	while (room-- && c->npend)
		post(c, pick(c));
}

static void *ctrl_main(void *p)
{
	struct fake_ctrl *c = p;
	uint64_t idle = 0;

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		uint32_t tail = __atomic_load_n(&c->t->db[0], __ATOMIC_ACQUIRE);
		uint32_t before = c->npend;

		fetch(c, tail);
		idle = c->npend == before ? idle + 1 : 0;
		if (!c->mute && c->npend && (c->npend >= c->hold || idle > 200))
			complete(c);
		if (idle > 100)
			sched_yield();
	}
	return NULL;
}

/* The counting shadow of the SQ tail doorbell. */
static void hook(void *ctx, volatile uint32_t *addr, uint32_t v)
{
	struct fake_ctrl *c = ctx;
	uint32_t d = c->t->qp.sq_depth, delta;

	if (addr != &c->t->db[0])
		return;
	delta = (v + d - c->last_tail) % d;
	if (delta == 0 || delta > c->t->qp.credit_limit)
		c->bad_delta++;
	c->last_tail = v;
	c->sq_writes++;
	c->submitted += delta;
	if (c->submitted - __atomic_load_n(&c->reported, __ATOMIC_ACQUIRE) > d - 1)
		c->overrun++;
}

void fake_start(struct fake_ctrl *c, struct test_qp *t, int order, uint32_t hold)
{
	memset(c, 0, sizeof(*c));
	c->t = t;
	c->order = order;
	c->hold = hold ? hold : 1;
	c->phase = 1;
	c->seed = 12345;
	nkv_cpu_set_mmio_hook(hook, c);
	pthread_create(&c->th, NULL, ctrl_main, c);
}

void fake_stop(struct fake_ctrl *c)
{
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
	pthread_join(c->th, NULL);
	nkv_cpu_set_mmio_hook(NULL, NULL);
}

/* A Retrieve of key @idx (thread @t) with an explicit PRP, and what one
 * result says about it. */
static struct nkv_prep key_prep(uint32_t idx, uint32_t t)
{
	uint8_t key[8] = { (uint8_t)idx, (uint8_t)(idx >> 8), 'k', 'e', 'y', 0, (uint8_t)(t >> 8),
			   (uint8_t)t };

	return nkv_sqe_retrieve(1, key, 8, 100 + idx, 0x1000, 0);
}

static void tally(uint64_t *ok, uint64_t *wrong, uint64_t *errs, int *last_err,
		  const struct nkv_prep *p, const struct nkv_dev_result *res)
{
	if (res->err) {
		__atomic_fetch_add(errs, 1, __ATOMIC_RELAXED);
		__atomic_store_n(last_err, res->err, __ATOMIC_RELAXED);
	} else if (res->dw0 == fake_dw0(&p->sqe) && res->status == fake_status(&p->sqe)) {
		__atomic_fetch_add(ok, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_fetch_add(wrong, 1, __ATOMIC_RELAXED);
	}
}

void block_lane(void *arg)
{
	struct block_run *r = arg;
	NKV_BLOCK_SHARED(sh);
	const struct nkv_block b = nkv_block_enter(sh);
	uint32_t round;

	for (round = 0; round < r->rounds; round++) {
		struct nkv_prep p = key_prep(round * r->threads + b.thread, b.thread);
		int have = b.thread < r->threads;
		struct nkv_dev_result res = nkv_block_exec(b, &r->t->qp, have, p);

		if (have)
			tally(&r->ok, &r->wrong, &r->errs, &r->last_err, &p, &res);
	}
}

void batch_lane(void *arg)
{
	struct batch_run *r = arg;
	const struct nkv_wave w = nkv_wave_enter();
	uint32_t lane = w.lane, round;

	for (round = 0; round < r->rounds; round++) {
		struct nkv_prep p = key_prep(round * r->lanes + lane, lane);
		int have = lane < r->lanes && !p.err;
		struct nkv_dev_result res = nkv_wave_exec(w, &r->t->qp, have, p);

		if (have)
			tally(&r->ok, &r->wrong, &r->errs, &r->last_err, &p, &res);
	}
}
