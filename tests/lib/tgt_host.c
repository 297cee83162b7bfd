/* SPDX-License-Identifier: MIT */
/* tgt_host.c - see tgt_host.h. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "tgt_host.h"

struct nkv_be *h_mem(const struct nkv_be_conf *conf)
{
	char err[160];
	struct nkv_be *be = nkv_be_type_mem.create(conf, err, sizeof(err));

	cr_assert(be, "mem backend: %s", err);
	return be;
}

void h_init(struct h *h, const struct nkv_tgt_ctrl_opts *co,
	    const struct nkv_be_conf *kv)
{
	struct nkv_be_conf kd = { sizeof(kd) };

	h_init_be(h, co, h_mem(kv ? kv : &kd));
}

void h_init_be(struct h *h, const struct nkv_tgt_ctrl_opts *co, struct nkv_be *be)
{
	struct nkv_be_conf nd = { sizeof(nd), .nvm = 1, .capacity = 1 << 20,
				  .block_size = 512 };
	struct nkv_tgt_ctrl_opts cd = { sizeof(cd) };

	memset(h, 0, sizeof(*h));
	h->mem = aligned_alloc(4096, H_ARENA);
	cr_assert(h->mem);
	memset(h->mem, 0, H_ARENA);
	h->db = aligned_alloc(4096, 4096 * 2);
	memset(h->db, 0, 8192);
	h->dma = nkv_dma_create();
	cr_assert_eq(nkv_dma_map(h->dma, H_IOVA, H_ARENA, h->mem,
				 NKV_DMA_READ | NKV_DMA_WRITE), 0);
	h->ss = nkv_subsys_create(NULL);
	cr_assert(h->ss);
	cr_assert_eq(nkv_subsys_add_ns(h->ss, 1, be), 0);
	cr_assert_eq(nkv_subsys_add_ns(h->ss, 2, h_mem(&nd)), 0);
	h->c = nkv_tgt_ctrl_create(h->ss, h->dma, h->db, co ? co : &cd);
	cr_assert(h->c);
	h->bump = 0;
}

void h_fini(struct h *h)
{
	nkv_tgt_ctrl_destroy(h->c);
	nkv_subsys_destroy(h->ss);
	nkv_dma_destroy(h->dma);
	free(h->mem);
	free(h->db);
}

uint64_t h_alloc(struct h *h, uint64_t len)
{
	uint64_t iova = H_IOVA + h->bump;

	h->bump += (len + 4095) & ~4095ull;
	cr_assert(h->bump <= H_ARENA, "test arena exhausted");
	memset(h_ptr(h, iova), 0, len);
	return iova;
}

void *h_ptr(struct h *h, uint64_t iova)
{
	return h->mem + (iova - H_IOVA);
}

uint32_t h_cc(void)
{
	return 1u | (NKV_CC_CSS_IOCS << NKV_CC_CSS_SHIFT) |
	       (6u << NKV_CC_IOSQES_SHIFT) | (4u << NKV_CC_IOCQES_SHIFT);
}

uint32_t h_enable(struct h *h, uint32_t n)
{
	struct h_q *q = &h->q[0];

	memset(q, 0, sizeof(*q));
	q->size = n;
	q->sq_iova = h_alloc(h, n * 64);
	q->cq_iova = h_alloc(h, n * 16);
	q->sq = h_ptr(h, q->sq_iova);
	q->cq = h_ptr(h, q->cq_iova);
	q->phase = 1;
	nkv_tgt_ctrl_reg_write(h->c, NKV_REG_AQA, nkv_aqa(n, n), 4);
	nkv_tgt_ctrl_reg_write(h->c, NKV_REG_ASQ, q->sq_iova, 8);
	nkv_tgt_ctrl_reg_write(h->c, NKV_REG_ACQ, q->cq_iova, 8);
	nkv_tgt_ctrl_reg_write(h->c, NKV_REG_CC, h_cc(), 4);
	return (uint32_t)nkv_tgt_ctrl_reg_read(h->c, NKV_REG_CSTS, 4);
}

void h_submit(struct h *h, uint16_t qid, struct nkv_sqe *s)
{
	struct h_q *q = &h->q[qid];

	s->cdw0 = (s->cdw0 & 0xffffu) | ((uint32_t)q->cid++ << 16);
	memcpy(&q->sq[q->sq_tail], s, sizeof(*s));
	q->sq_tail = (q->sq_tail + 1) % q->size;
	/* Release: the SQE before the tail, as a real host must. */
	__atomic_store_n(&h->db[2u * qid], q->sq_tail, __ATOMIC_RELEASE);
}

int h_reap(struct h *h, uint16_t qid, struct nkv_cqe *e)
{
	struct h_q *q = &h->q[qid];
	struct nkv_cqe *slot = &q->cq[q->cq_head];
	struct timespec ts = { 0, 20000 };
	long i;

	for (i = 0; i < 2000000; i++) {
		uint32_t dw3 = __atomic_load_n(&slot->dw3, __ATOMIC_ACQUIRE);

		if (nkv_cqe_phase(dw3) == q->phase) {
			e->dw0 = slot->dw0;
			e->dw1 = slot->dw1;
			e->dw2 = slot->dw2;
			e->dw3 = dw3;
			if (++q->cq_head == q->size) {
				q->cq_head = 0;
				q->phase ^= 1;
			}
			__atomic_store_n(&h->db[2u * qid + 1], q->cq_head,
					 __ATOMIC_RELEASE);
			return 0;
		}
		if (h->threaded)
			nanosleep(&ts, NULL);
		else if (!nkv_tgt_ctrl_poll(h->c) && i > 1000)
			nanosleep(&ts, NULL);
		if (h->threaded && i > 250000)
			break;	/* ~5+ s */
	}
	return -1;
}

uint16_t h_cmd(struct h *h, uint16_t qid, struct nkv_sqe *s, struct nkv_cqe *e)
{
	struct nkv_cqe tmp;

	if (!e)
		e = &tmp;
	h_submit(h, qid, s);
	if (h_reap(h, qid, e))
		return 0xffff;
	return nkv_cqe_status(e->dw3);
}

uint16_t h_create_qpair(struct h *h, uint16_t qid, uint32_t entries)
{
	struct h_q *q = &h->q[qid];
	struct nkv_sqe s;
	uint16_t st;

	memset(q, 0, sizeof(*q));
	q->size = entries;
	q->phase = 1;
	q->sq_iova = h_alloc(h, entries * 64);
	q->cq_iova = h_alloc(h, entries * 16);
	q->sq = h_ptr(h, q->sq_iova);
	q->cq = h_ptr(h, q->cq_iova);
	memset(&s, 0, sizeof(s));
	s.cdw0 = NKV_ADM_CREATE_CQ;
	s.prp1 = q->cq_iova;
	s.cdw10 = nkv_queue_cdw10(qid, entries);
	s.cdw11 = NKV_QUEUE_PC;
	st = h_cmd(h, 0, &s, NULL);
	if (st)
		return st;
	memset(&s, 0, sizeof(s));
	s.cdw0 = NKV_ADM_CREATE_SQ;
	s.prp1 = q->sq_iova;
	s.cdw10 = nkv_queue_cdw10(qid, entries);
	s.cdw11 = nkv_create_sq_cdw11(qid);
	return h_cmd(h, 0, &s, NULL);
}

void h_prp(struct h *h, struct nkv_sqe *s, uint64_t iova, uint64_t len)
{
	uint64_t first = 4096 - (iova & 4095), left, page, lp, *list;
	uint32_t i;

	s->prp1 = iova;
	s->prp2 = 0;
	if (len <= first)
		return;
	left = len - first;
	page = iova + first;
	if (left <= 4096) {
		s->prp2 = page;
		return;
	}
	lp = h_alloc(h, 4096);
	s->prp2 = lp;
	list = h_ptr(h, lp);
	for (i = 0; left; i++) {
		if (i == 511 && left > 4096) {	/* chain to a new list page */
			uint64_t next = h_alloc(h, 4096);

			list[511] = next;
			list = h_ptr(h, next);
			i = (uint32_t)-1;
			continue;
		}
		list[i] = page;
		page += 4096;
		left = left > 4096 ? left - 4096 : 0;
	}
}

void h_kv(struct nkv_sqe *s, uint8_t opc, uint32_t nsid, const void *key,
	  uint32_t klen, uint32_t cdw10, uint32_t options)
{
	uint8_t k[16] = { 0 };

	memset(s, 0, sizeof(*s));
	memcpy(k, key, klen > 16 ? 16 : klen);
	s->cdw0 = opc;
	s->nsid = nsid;
	memcpy(&s->cdw2, k, 4);
	memcpy(&s->cdw3, k + 4, 4);
	memcpy(&s->cdw14, k + 8, 4);
	memcpy(&s->cdw15, k + 12, 4);
	s->cdw10 = cdw10;
	s->cdw11 = (klen & 0xff) | options;
}

uint16_t h_store(struct h *h, uint16_t qid, const void *key, uint32_t klen,
		 const void *val, uint32_t len, uint32_t options)
{
	uint64_t saved = h->bump, iova = h_alloc(h, len ? len : 1);
	struct nkv_sqe s;
	uint16_t st;

	memcpy(h_ptr(h, iova), val, len);
	h_kv(&s, NKV_KV_STORE, 1, key, klen, len, options);
	h_prp(h, &s, iova, len);
	st = h_cmd(h, qid, &s, NULL);
	h->bump = saved;	/* one command at a time: reuse the space */
	return st;
}

uint16_t h_retrieve(struct h *h, uint16_t qid, const void *key, uint32_t klen,
		    void *val, uint32_t buflen, uint32_t *dw0)
{
	uint64_t saved = h->bump, iova = h_alloc(h, buflen ? buflen : 1);
	struct nkv_sqe s;
	struct nkv_cqe e;
	uint16_t st;

	h_kv(&s, NKV_KV_RETRIEVE, 1, key, klen, buflen, 0);
	h_prp(h, &s, iova, buflen);
	st = h_cmd(h, qid, &s, &e);
	if (val)
		memcpy(val, h_ptr(h, iova), buflen);
	if (dw0)
		*dw0 = e.dw0;
	h->bump = saved;
	return st;
}

void h_sgl_db(struct nkv_sqe *s, uint64_t iova, uint32_t len)
{
	s->cdw0 = nkv_sqe_cdw0_psdt(s->cdw0, NKV_PSDT_SGL);
	nkv_sqe_sgl1_set(s, iova, len, NKV_SGL_DATA_BLOCK);
}

/* The pieces an SGL of dp cuts n bytes into: the first 3 bytes, then
 * chunks of @chunk; each piece in pages of its own (never contiguous
 * with the next). Returns the count; iova[] and sz[] filled. */
static unsigned h_pieces(struct h *h, uint32_t n, uint32_t chunk, uint64_t *iova,
			 uint32_t *sz, unsigned max)
{
	unsigned k = 0;
	uint32_t off = 0;

	while (off < n) {
		uint32_t m = k ? chunk : 3;

		m = m < n - off ? m : n - off;
		cr_assert_lt(k, max, "too many pieces");
		sz[k] = m;
		iova[k] = h_alloc(h, m) + (k & 1);	/* odd pieces byte-misaligned */
		off += m;
		k++;
	}
	return k;
}

static void h_desc(struct nkv_sgl_desc *d, uint64_t addr, uint32_t len, uint32_t type)
{
	memset(d, 0, sizeof(*d));
	d->addr = addr;
	d->len = len;
	d->id = nkv_sgl_id(type);
}

/* Lists of two Data Blocks each, chained; SGL1 points at the first. */
static void h_sgl_chain(struct h *h, struct nkv_sqe *s, const uint64_t *iova,
			const uint32_t *sz, unsigned n)
{
	unsigned m = (n + 1) / 2, j;
	uint64_t lists[256] = { 0 };

	cr_assert_leq(m, 256);
	for (j = 0; j < m; j++)
		lists[j] = h_alloc(h, 3 * sizeof(struct nkv_sgl_desc));
	for (j = 0; j < m; j++) {
		struct nkv_sgl_desc *l = h_ptr(h, lists[j]);
		unsigned i, e = 0;

		for (i = 2 * j; i < n && i < 2 * j + 2; i++)
			h_desc(&l[e++], iova[i], sz[i], NKV_SGL_DATA_BLOCK);
		if (j + 1 < m) {
			unsigned ne = (j + 2 < m ? 3 : (n - 2 * (j + 1)));

			h_desc(&l[e], lists[j + 1], ne * 16,
			       j + 2 < m ? NKV_SGL_SEGMENT : NKV_SGL_LAST_SEGMENT);
		}
	}
	s->cdw0 = nkv_sqe_cdw0_psdt(s->cdw0, NKV_PSDT_SGL);
	nkv_sqe_sgl1_set(s, lists[0], (m > 1 ? 3 : n) * 16,
			 m > 1 ? NKV_SGL_SEGMENT : NKV_SGL_LAST_SEGMENT);
}

/* Describe n bytes of buf as dp says; returns where each piece is, so
 * the caller can read them back (pieces: n_out). */
static unsigned h_describe(struct h *h, struct nkv_sqe *s, enum h_dp dp, uint32_t hl,
			   uint32_t n, uint64_t *iova, uint32_t *sz, unsigned max)
{
	unsigned k, i;

	switch (dp) {
	case H_DP_PRP:
		iova[0] = h_alloc(h, n + 4096) + 4096 - hl;
		sz[0] = n;
		h_prp(h, s, iova[0], n);
		return 1;
	case H_DP_SGL_DB:
		iova[0] = h_alloc(h, n + 16);
		sz[0] = n;
		h_sgl_db(s, iova[0], n + 16);
		return 1;
	case H_DP_SGL_SEG:
		k = h_pieces(h, n, 61, iova, sz, max);
		h_sgl_chain(h, s, iova, sz, k);
		return k;
	default: {
		struct nkv_sgl_desc *l;
		uint64_t lp;

		k = h_pieces(h, n, 1000, iova, sz, max);
		lp = h_alloc(h, k * sizeof(*l));
		l = h_ptr(h, lp);
		for (i = 0; i < k; i++)
			h_desc(&l[i], iova[i], sz[i], NKV_SGL_DATA_BLOCK);
		s->cdw0 = nkv_sqe_cdw0_psdt(s->cdw0, NKV_PSDT_SGL);
		nkv_sqe_sgl1_set(s, lp, k * 16, NKV_SGL_LAST_SEGMENT);
		return k;
	}
	}
}

uint16_t h_kvx(struct h *h, uint16_t qid, uint8_t opc, const void *key, uint32_t klen,
	       int form, enum h_dp dp, void *data, uint32_t len, uint32_t *dw0)
{
	uint32_t hl = form == H_KEY_HEAD ? nkv_key_head_size(klen) : 0, n = hl + len, i, off;
	uint64_t saved = h->bump, iova[1024];
	uint8_t *buf = calloc(1, n + 1);
	uint32_t sz[1024];
	struct nkv_sqe s;
	struct nkv_cqe e;
	unsigned k = 0;
	uint16_t st;

	cr_assert_not_null(buf);
	h_kv(&s, opc, 1, key, form == H_KEY_HEAD ? 0 : klen, len, 0);
	if (form == H_KEY_HEAD) {
		nkv_key_head_put(buf, key, klen);
		if (opc == NKV_KV_LIST)
			s.cdw11 |= NKV_LIST_KEY_HEAD;
	}
	if (opc == NKV_KV_STORE && len)
		memcpy(buf + hl, data, len);
	if (n) {
		k = h_describe(h, &s, dp, hl, n, iova, sz, 1024);
		for (i = 0, off = 0; i < k; off += sz[i++])
			memcpy(h_ptr(h, iova[i]), buf + off, sz[i]);
	} else if (dp != H_DP_PRP) {
		s.cdw0 = nkv_sqe_cdw0_psdt(s.cdw0, NKV_PSDT_SGL);	/* nothing to describe */
	}
	st = h_cmd(h, qid, &s, &e);
	if ((opc == NKV_KV_RETRIEVE || opc == NKV_KV_LIST) && data) {
		for (i = 0, off = 0; i < k; off += sz[i++])
			memcpy(buf + off, h_ptr(h, iova[i]), sz[i]);
		memcpy(data, buf + hl, len);
	}
	if (dw0)
		*dw0 = e.dw0;
	free(buf);
	h->bump = saved;
	return st;
}

uint16_t h_identify(struct h *h, uint8_t cns, uint32_t nsid, uint8_t csi,
		    void *out4k)
{
	uint64_t saved = h->bump, iova = h_alloc(h, 4096);
	struct nkv_sqe s;
	uint16_t st;

	memset(h_ptr(h, iova), 0xa5, 4096);	/* prove every byte is written */
	memset(&s, 0, sizeof(s));
	s.cdw0 = NKV_ADM_IDENTIFY;
	s.nsid = nsid;
	s.prp1 = iova;
	s.cdw10 = nkv_identify_cdw10(cns, 0);
	s.cdw11 = nkv_identify_cdw11(csi);
	st = h_cmd(h, 0, &s, NULL);
	memcpy(out4k, h_ptr(h, iova), 4096);
	h->bump = saved;
	return st;
}
