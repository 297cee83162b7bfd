/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ctrl_cmds.c - nkv-target's controller core driven by a hostile
 * in-process host: arbitrary SQEs (PRPs into, across and outside the
 * registered regions, PRP lists with arbitrary entries; SGL1 descriptors
 * of any type pointing into the regions, segment lists written there by
 * memory writes; KV keys inline or as a head at the data's start),
 * doorbells with arbitrary values, register writes, memory unmapped and
 * remapped.
 *
 * Every registered region is its own heap block (ASan redzones around it)
 * and an unmapped region is poisoned, so any controller access outside
 * registered memory is a crash. The doorbell array is exactly ndb dwords.
 *
 * Input: a sequence of operations, each an opcode byte and its operands
 * (see fz_step); a short operand ends the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sanitizer/asan_interface.h>

#include "nkv_wire.h"
#include "target/backends/registry.h"
#include "target/core/ctrl.h"
#include "target/core/dma.h"
#include "target/exec/exec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_NREG 3
#define FZ_MAXQ 4
#define FZ_QE 16		/* entries per queue the helpers create */
#define FZ_POLLS 4

/* r0: queues and data, read/write; r1 read-only and r2 write-only, right
 * after r1 in IOVA space but elsewhere in memory (a PRP walk crossing
 * from one to the other must not be merged into one segment). */
static const struct {
	uint64_t iova;
	uint32_t len;
	uint32_t prot;
} fz_layout[FZ_NREG] = {
	{ 0x10000000ull, 128u << 10, NKV_DMA_READ | NKV_DMA_WRITE },
	{ 0x20000000ull, 16u << 10, NKV_DMA_READ },
	{ 0x20004000ull, 16u << 10, NKV_DMA_WRITE },
};

struct fz_q {
	int live;
	uint32_t size, tail, head, phase;
	uint64_t sq_off, cq_off;	/* in r0 */
};

struct fz {
	const uint8_t *p;
	size_t left;
	struct nkv_subsys *ss;
	struct nkv_dma *dma;
	struct nkv_tgt_ctrl *c;
	uint32_t *db;
	uint32_t ndb;
	uint8_t *mem[FZ_NREG];
	int mapped[FZ_NREG];
	struct fz_q q[FZ_MAXQ + 1];
	uint16_t cid;
};

static int fz_take(struct fz *f, void *out, size_t n)
{
	if (f->left < n)
		return -1;
	memcpy(out, f->p, n);
	f->p += n;
	f->left -= n;
	return 0;
}

/* The Exec room, once per process: op 0 of nsid 1 runs the module a
 * seed stores under "fzmod" (tests/fuzz/seeds.py), so a call gets as far
 * as the sandbox; any other is refused (C0h), its head and input parsed
 * all the same. */
static void fz_exec_once(void)
{
	static const char mod[] = "return function(v, i) return i .. v:sub(1, 8) end";
	static int done;
	struct nkv_exec_entry e = { .nsid = 1, .op_id = 0, .klen = 5 };

	if (done)
		return;
	done = 1;
	memcpy(e.key, "fzmod", 5);
	e.caps.max_wall_ms = 50;
	e.caps.max_memory = 1u << 20;
	nkv_exec_sha256(mod, sizeof(mod) - 1, e.digest);
	nkv_exec_start(1);
	nkv_exec_allow(&e);
}

static void fz_setup(struct fz *f)
{
	struct nkv_be_conf kv = { sizeof(kv), .capacity = 1u << 20, .max_value = 64u << 10 };
	struct nkv_be_conf nvm = { sizeof(nvm), .nvm = 1, .capacity = 64u << 10,
				   .block_size = 512 };
	char err[160];
	struct nkv_tgt_ctrl_opts co = { sizeof(co), .mqes = 64, .max_ioq = FZ_MAXQ, .mdts = 4 };
	int i;

	fz_exec_once();
	f->ss = nkv_subsys_create(NULL);
	/* The mem type directly: registry.c (and librados) is not linked. */
	nkv_subsys_add_ns(f->ss, 1, nkv_be_type_mem.create(&kv, err, sizeof(err)));
	nkv_subsys_add_ns(f->ss, 2, nkv_be_type_mem.create(&nvm, err, sizeof(err)));
	f->dma = nkv_dma_create();
	for (i = 0; i < FZ_NREG; i++) {
		f->mem[i] = aligned_alloc(4096, fz_layout[i].len);
		memset(f->mem[i], 0, fz_layout[i].len);
		nkv_dma_map(f->dma, fz_layout[i].iova, fz_layout[i].len, f->mem[i],
			    fz_layout[i].prot);
		f->mapped[i] = 1;
	}
	f->ndb = 2 * (FZ_MAXQ + 1);
	f->db = calloc(f->ndb, 4);
	f->c = nkv_tgt_ctrl_create(f->ss, f->dma, f->db, &co);
	if (!f->ss || !f->dma || !f->db || !f->c)
		abort();
}

static void fz_teardown(struct fz *f)
{
	int i;

	nkv_tgt_ctrl_destroy(f->c);
	nkv_subsys_destroy(f->ss);
	nkv_dma_destroy(f->dma);
	for (i = 0; i < FZ_NREG; i++) {
		ASAN_UNPOISON_MEMORY_REGION(f->mem[i], fz_layout[i].len);
		free(f->mem[i]);
	}
	free(f->db);
}

static void fz_poll(struct fz *f, unsigned n)
{
	while (n--)
		nkv_tgt_ctrl_poll(f->c);
}

/* Reap what the harness's model of queue qid says is there, then tell
 * the controller (CQ head doorbell): keeps the queues flowing. */
static void fz_reap(struct fz *f, uint16_t qid)
{
	struct fz_q *q = &f->q[qid];
	struct nkv_cqe *cq;
	int n = 0;

	if (!q->live || !f->mapped[0])
		return;
	cq = (struct nkv_cqe *)(f->mem[0] + q->cq_off);
	while (n++ < (int)q->size && nkv_cqe_phase(cq[q->head].dw3) == q->phase) {
		if (++q->head == q->size) {
			q->head = 0;
			q->phase ^= 1;
		}
	}
	__atomic_store_n(&f->db[2u * qid + 1], q->head, __ATOMIC_RELEASE);
}

static void fz_submit(struct fz *f, uint16_t qid, struct nkv_sqe *s)
{
	struct fz_q *q = &f->q[qid];

	if (!q->live || !f->mapped[0])
		return;
	s->cdw0 = (s->cdw0 & 0xffffu) | ((uint32_t)f->cid++ << 16);
	memcpy(f->mem[0] + q->sq_off + (uint64_t)q->tail * 64, s, 64);
	q->tail = (q->tail + 1) % q->size;
	__atomic_store_n(&f->db[2u * qid], q->tail, __ATOMIC_RELEASE);
	fz_poll(f, FZ_POLLS);
	fz_reap(f, qid);
}

/* Admin queue in r0 at 0 (SQ) and 0x1000 (CQ), controller enabled. */
static void fz_enable(struct fz *f, uint8_t n)
{
	struct fz_q *q = &f->q[0];
	uint32_t cc = 1u | (NKV_CC_CSS_IOCS << NKV_CC_CSS_SHIFT) |
		      (6u << NKV_CC_IOSQES_SHIFT) | (4u << NKV_CC_IOCQES_SHIFT);

	*q = (struct fz_q){ .live = 1, .size = 2 + n % (FZ_QE - 1), .phase = 1,
			    .sq_off = 0, .cq_off = 0x1000 };
	nkv_tgt_ctrl_reg_write(f->c, NKV_REG_CC, 0, 4);
	memset(f->q + 1, 0, sizeof(f->q[1]) * FZ_MAXQ);
	nkv_tgt_ctrl_reg_write(f->c, NKV_REG_AQA, nkv_aqa(q->size, q->size), 4);
	nkv_tgt_ctrl_reg_write(f->c, NKV_REG_ASQ, fz_layout[0].iova + q->sq_off, 8);
	nkv_tgt_ctrl_reg_write(f->c, NKV_REG_ACQ, fz_layout[0].iova + q->cq_off, 8);
	nkv_tgt_ctrl_reg_write(f->c, NKV_REG_CC, cc, 4);
}

/* I/O queue pair qid: SQ at 0x2000 * qid, CQ 0x1000 after it. */
static void fz_create_pair(struct fz *f, uint8_t qarg)
{
	uint16_t qid = 1 + qarg % FZ_MAXQ;
	struct fz_q *q = &f->q[qid];
	struct nkv_sqe s;

	memset(q, 0, sizeof(*q));
	q->size = FZ_QE;
	q->phase = 1;
	q->sq_off = 0x2000ull * qid;
	q->cq_off = q->sq_off + 0x1000;
	memset(&s, 0, sizeof(s));
	s.cdw0 = NKV_ADM_CREATE_CQ;
	s.prp1 = fz_layout[0].iova + q->cq_off;
	s.cdw10 = nkv_queue_cdw10(qid, FZ_QE);
	s.cdw11 = NKV_QUEUE_PC;
	fz_submit(f, 0, &s);
	memset(&s, 0, sizeof(s));
	s.cdw0 = NKV_ADM_CREATE_SQ;
	s.prp1 = fz_layout[0].iova + q->sq_off;
	s.cdw10 = nkv_queue_cdw10(qid, FZ_QE);
	s.cdw11 = nkv_create_sq_cdw11(qid);
	fz_submit(f, 0, &s);
	q->live = 1;	/* if creation failed, submissions just go unseen */
}

/* An IOVA for a PRP: raw, or somewhere in (or just past) a region. */
static uint64_t fz_iova(uint8_t sel, uint32_t off)
{
	const int r = sel % FZ_NREG;

	if (sel >= 0xf0)
		return ((uint64_t)sel << 56) | off;
	return fz_layout[r].iova + off % (fz_layout[r].len + 0x2000u);
}

static int fz_sqe(struct fz *f)
{
	struct nkv_sqe s;
	uint8_t qarg, mode, sel1, sel2;
	uint32_t o1, o2;

	if (fz_take(f, &qarg, 1) || fz_take(f, &s, sizeof(s)) || fz_take(f, &mode, 1))
		return -1;
	if (mode & 1) {		/* PRPs chosen by region, not raw */
		if (fz_take(f, &sel1, 1) || fz_take(f, &o1, 4) || fz_take(f, &sel2, 1) ||
		    fz_take(f, &o2, 4))
			return -1;
		s.prp1 = fz_iova(sel1, o1);
		s.prp2 = fz_iova(sel2, (mode & 2) ? o2 & ~4095u : o2);
		if (mode & 4) {	/* SGL1 instead: address by region, any length and id */
			s.cdw0 = nkv_sqe_cdw0_psdt(s.cdw0, NKV_PSDT_SGL);
			nkv_sqe_sgl1_set(&s, s.prp1, o2, 0);
			s.prp2 |= (uint64_t)sel2 << 56;
		}
	}
	fz_submit(f, qarg % (FZ_MAXQ + 1), &s);
	return 0;
}

static int fz_mem_write(struct fz *f)
{
	uint8_t r, len, buf[255];
	uint32_t off;

	if (fz_take(f, &r, 1) || fz_take(f, &off, 4) || fz_take(f, &len, 1) ||
	    fz_take(f, buf, len))
		return -1;
	r %= FZ_NREG;
	off %= fz_layout[r].len;
	if (len > fz_layout[r].len - off)
		len = (uint8_t)(fz_layout[r].len - off);
	if (f->mapped[r])
		memcpy(f->mem[r] + off, buf, len);
	return 0;
}

/* What a transport does: refuse while the controller uses the memory. */
static void fz_unmap(struct fz *f, uint8_t r)
{
	r %= FZ_NREG;
	if (!f->mapped[r] ||
	    nkv_tgt_ctrl_dma_busy(f->c, fz_layout[r].iova, fz_layout[r].len))
		return;
	if (nkv_dma_unmap(f->dma, fz_layout[r].iova, fz_layout[r].len))
		abort();
	f->mapped[r] = 0;
	ASAN_POISON_MEMORY_REGION(f->mem[r], fz_layout[r].len);
}

static void fz_remap(struct fz *f, uint8_t r)
{
	r %= FZ_NREG;
	if (f->mapped[r])
		return;
	ASAN_UNPOISON_MEMORY_REGION(f->mem[r], fz_layout[r].len);
	if (nkv_dma_map(f->dma, fz_layout[r].iova, fz_layout[r].len, f->mem[r],
			fz_layout[r].prot))
		abort();
	f->mapped[r] = 1;
}

/* Register access as the vfio-user transport allows it: 4 or 8 bytes,
 * naturally aligned, inside BAR0. */
static int fz_reg(struct fz *f, int write)
{
	uint16_t off;
	uint8_t sz;
	uint64_t v;
	unsigned size;

	if (fz_take(f, &off, 2) || fz_take(f, &sz, 1) || fz_take(f, &v, 8))
		return -1;
	size = (sz & 1) ? 8 : 4;
	off = (uint16_t)((off % nkv_tgt_ctrl_bar0_size(f->c)) & ~(size - 1));
	if (off + size > nkv_tgt_ctrl_bar0_size(f->c))
		return 0;
	if (write)
		nkv_tgt_ctrl_reg_write(f->c, off, v, size);
	else
		(void)nkv_tgt_ctrl_reg_read(f->c, off, size);
	return 0;
}

static int fz_step(struct fz *f)
{
	uint8_t op, a;
	uint32_t v;

	if (fz_take(f, &op, 1))
		return -1;
	switch (op % 10) {
	case 0: return fz_sqe(f);
	case 1: return fz_mem_write(f);
	case 2:	/* a doorbell store, any value */
		if (fz_take(f, &a, 1) || fz_take(f, &v, 4))
			return -1;
		__atomic_store_n(&f->db[a % f->ndb], v, __ATOMIC_RELEASE);
		return 0;
	case 3: return fz_reg(f, 1);
	case 4: return fz_reg(f, 0);
	case 5:
		if (fz_take(f, &a, 1))
			return -1;
		fz_poll(f, 1 + a % 8);
		fz_reap(f, a % (FZ_MAXQ + 1));
		return 0;
	case 6:
		if (fz_take(f, &a, 1))
			return -1;
		fz_enable(f, a);
		return 0;
	case 7:
		if (fz_take(f, &a, 1))
			return -1;
		fz_create_pair(f, a);
		return 0;
	case 8:
		if (fz_take(f, &a, 1))
			return -1;
		fz_unmap(f, a);
		return 0;
	default:
		if (fz_take(f, &a, 1))
			return -1;
		fz_remap(f, a);
		return 0;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f;
	int steps = 0;

	memset(&f, 0, sizeof(f));
	f.p = data;
	f.left = size;
	fz_setup(&f);
	while (steps++ < 512 && !fz_step(&f))
		;
	fz_poll(&f, FZ_POLLS);
	fz_teardown(&f);
	return 0;
}
