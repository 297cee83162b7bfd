/* SPDX-License-Identifier: MIT */
/*
 * qpair.c - I/O queue pairs: memory by the memory mode, value slots with
 * host-built PRP lists, creation and deletion over the admin queue, the
 * device-visible descriptor (struct nkv_dev_qp) and its reset.
 *
 * The descriptor, CID bitmap, completion table and slot table are plain
 * host memory here: the host builds and resets them, and the cpu engine
 * reads them directly. A queue pair for device code (nkv_qpair_create_dev)
 * gets device copies of them too (qpair_gpu.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"
#include "host/qpair_check.h"

static size_t nkv_h_round(size_t v)
{
	return (v + NKV_PAGE_SIZE - 1) & ~(size_t)(NKV_PAGE_SIZE - 1);
}

uint32_t nkv_h_xfer_limit(const struct nkv_ctrl *c)
{
	uint32_t lim = c->info.max_xfer ? c->info.max_xfer : 0xffffffffu;

	if (c->info.csi == NKV_CSI_KV && c->info.max_value && c->info.max_value < lim)
		lim = c->info.max_value;
	return lim;
}

int nkv_h_value_fits(const struct nkv_ctrl *c, const char *what, uint64_t len)
{
	uint32_t lim = nkv_h_xfer_limit(c);

	if (len <= lim)
		return 0;
	nkv_h_log("%s of %llu bytes is larger than the controller's limit of %u bytes (%s)", what,
		  (unsigned long long)len, lim, c->info.max_xfer == lim ? "MDTS" : "max value");
	return -EMSGSIZE;
}

/* Admin create/delete of queue qid; 0, the NVMe status (> 0) or -errno. */
static int nkv_h_queue_cmd(struct nkv_ctrl *c, uint8_t opc, uint16_t qid,
			   uint32_t depth, uint32_t cdw11, uint64_t prp1)
{
	struct nkv_sqe s;
	uint16_t st = 0;
	int rc;

	memset(&s, 0, sizeof(s));
	s.cdw0 = opc;
	s.prp1 = prp1;
	s.cdw10 = depth ? nkv_queue_cdw10(qid, depth) : qid;
	s.cdw11 = cdw11;
	rc = nkv_h_admin(c, &s, &st, NULL);
	return rc ? rc : st;
}

static int nkv_h_queues_create(struct nkv_qpair *q)
{
	struct nkv_ctrl *c = q->c;
	uint32_t d = q->dev->sq_depth;
	int rc;

	rc = nkv_h_queue_cmd(c, NKV_ADM_CREATE_CQ, q->qid, d, NKV_QUEUE_PC, q->cq.m.iova[0]);
	if (!rc) {
		rc = nkv_h_queue_cmd(c, NKV_ADM_CREATE_SQ, q->qid, d,
				     nkv_create_sq_cdw11(q->qid), q->sq.m.iova[0]);
		if (rc)
			nkv_h_queue_cmd(c, NKV_ADM_DELETE_CQ, q->qid, 0, 0, 0);
	}
	if (rc > 0) {
		nkv_h_log("creating queue pair %u failed: status %#x (%s)", q->qid, rc,
			  nkv_status_str((uint16_t)rc));
		rc = -EIO;
	}
	return rc;
}

static int nkv_h_queues_delete(struct nkv_qpair *q)
{
	int a = nkv_h_queue_cmd(q->c, NKV_ADM_DELETE_SQ, q->qid, 0, 0, 0);
	int b = a < 0 ? a : nkv_h_queue_cmd(q->c, NKV_ADM_DELETE_CQ, q->qid, 0, 0, 0);

	return a < 0 ? a : b < 0 ? b : 0;
}

/* PRP1/PRP2 of the run of npages data pages from data page first, its
 * list in list pages lfirst.. of lists. */
static int nkv_h_run_prps(struct nkv_h_buf *data, size_t first, size_t npages,
			  struct nkv_h_buf *lists, size_t lfirst, uint64_t *prp1, uint64_t *prp2)
{
	size_t nl = nkv_h_prp_list_pages(npages), i;
	/* 33 list pages for a 64 MiB slot: on the heap, not the stack. */
	uint64_t **lva = calloc(nl + 1, sizeof(*lva)), *liova = calloc(nl + 1, sizeof(*liova));
	int rc = lva && liova ? 0 : -ENOMEM;

	for (i = 0; !rc && i < nl; i++) {
		lva[i] = (uint64_t *)((uint8_t *)lists->m.va + (lfirst + i) * NKV_PAGE_SIZE);
		liova[i] = lists->m.iova[lfirst + i];
	}
	if (!rc)
		rc = nkv_h_prp_build(data->m.iova + first, npages, lva, liova, nl, prp1, prp2);
	free(lva);
	free(liova);
	return rc;
}

/* Are data pages first..first+n-1 one run of controller addresses? */
static int nkv_h_run_contiguous(const struct nkv_h_buf *data, size_t first, size_t n)
{
	size_t i;

	for (i = 1; i < n; i++)
		if (data->m.iova[first + i] != data->m.iova[first] + i * NKV_PAGE_SIZE)
			return 0;
	return 1;
}

/* Lists a slot of npages value pages needs: the inline form's (value
 * pages) and the head form's (head page + value pages). */
static size_t nkv_h_slot_list_pages(size_t npages)
{
	return nkv_h_prp_list_pages(npages) + nkv_h_prp_list_pages(npages + 1);
}

/*
 * One slot: its head page at data page first, npages value pages after
 * it (docs/host.md, "Slot layout"); both forms' PRPs, and SGL1 allowed
 * when @sgl and the pages are one run of controller addresses.
 */
static int nkv_h_slot_prps(struct nkv_h_buf *data, size_t first, size_t npages,
			   struct nkv_h_buf *lists, size_t lfirst, int sgl, struct nkv_dev_slot *s)
{
	uint64_t head_prp1;
	int rc;

	s->addr = (uint64_t)(uintptr_t)((uint8_t *)data->m.va + (first + 1) * NKV_PAGE_SIZE);
	s->page2 = npages > 1 ? data->m.iova[first + 2] : 0;
	s->head_end = data->m.iova[first] + NKV_PAGE_SIZE;
	s->flags = sgl && nkv_h_run_contiguous(data, first, npages + 1) ? NKV_DEV_SLOT_SGL : 0;
	rc = nkv_h_run_prps(data, first + 1, npages, lists, lfirst, &s->prp1, &s->prp2);
	if (!rc)
		rc = nkv_h_run_prps(data, first, npages + 1, lists,
				    lfirst + nkv_h_prp_list_pages(npages), &head_prp1, &s->head_prp2);
	return rc;
}

/* What q may send beside PRPs (NKV_DEV_DPTR_*): SGLs of any alignment,
 * dword-aligned ones (SGLS 10b), or none (or told not to). */
static uint32_t nkv_h_qp_dptr(const struct nkv_qpair *q)
{
	uint32_t s = q->c->info.sgls & NKV_SGLS_SUPPORT_MASK;

	if (q->flags & NKV_QPAIR_PRP_ONLY)
		return 0;
	return s == NKV_SGLS_SUPPORTED ? NKV_DEV_DPTR_SGL
				       : s == NKV_SGLS_DWORD_ALIGNED ? NKV_DEV_DPTR_SGL_DWORD : 0;
}

/* Do q's slots send SGLs? Only where any alignment goes: a slot's head
 * form starts at an odd byte. */
static int nkv_h_qp_sgl(const struct nkv_qpair *q)
{
	return nkv_h_qp_dptr(q) == NKV_DEV_DPTR_SGL;
}

/* nr slots of size bytes in data, each a head page then its value pages;
 * list pages in lists. */
static int nkv_h_slots_alloc(struct nkv_qpair *q, uint32_t nr, uint32_t size,
			     struct nkv_h_buf *data, struct nkv_h_buf *lists,
			     struct nkv_dev_slot *out)
{
	struct nkv_ctrl *c = q->c;
	size_t pages = nkv_h_round(size) / NKV_PAGE_SIZE, nl = nkv_h_slot_list_pages(pages);
	uint32_t i;
	int rc;

	rc = nkv_h_buf_alloc(c, nkv_h_place(c, q->mode, NKV_MEM_DATA),
			     (size_t)nr * (pages + 1) * NKV_PAGE_SIZE, data);
	if (!rc && nl)
		rc = nkv_h_buf_alloc(c, c->host, (size_t)nr * nl * NKV_PAGE_SIZE, lists);
	for (i = 0; !rc && i < nr; i++) {
		rc = nkv_h_slot_prps(data, (size_t)i * (pages + 1), pages, lists, (size_t)i * nl,
				     nkv_h_qp_sgl(q), &out[i]);
		out[i].size = size;
	}
	return rc;
}

/* A ring of @len bytes, and @extra pages after it in the same buffer. */
static int nkv_h_ring_alloc(struct nkv_qpair *q, uint32_t bit, size_t len, size_t extra,
			    struct nkv_h_buf *b)
{
	size_t ring = nkv_h_round(len) / NKV_PAGE_SIZE;
	int rc = nkv_h_buf_alloc(q->c, nkv_h_place(q->c, q->mode, bit),
				 (ring + extra) * NKV_PAGE_SIZE, b);

	/* Queues are created physically contiguous (PC = 1): the ring's
	 * pages, whatever follows them. */
	if (!rc && !nkv_h_run_contiguous(b, 0, ring))
		rc = -ENOMEM;
	return rc;
}

static int nkv_h_qp_check_opts(struct nkv_ctrl *c, const struct nkv_qpair_opts *o,
			       int device, struct nkv_qpair_opts *r)
{
	uint32_t mqes = c->info.mqes > 65535 ? 65535 : c->info.mqes;

	*r = *o;
	if (o->size < offsetof(struct nkv_qpair_opts, poll_budget))
		return -EINVAL;
	if (!r->depth)
		r->depth = mqes < 256 ? mqes : 256;
	if (r->depth < 2 || r->depth > mqes)
		return -EINVAL;
	if (o->size < offsetof(struct nkv_qpair_opts, flags) + sizeof(uint32_t))
		r->flags = 0;
	if ((r->flags & NKV_QPAIR_NO_SLOTS) && r->slots)
		return -EINVAL;
	if (!r->slots && !(r->flags & NKV_QPAIR_NO_SLOTS))
		r->slots = r->depth - 1;
	if (!r->slot_size)
		r->slot_size = NKV_PAGE_SIZE;
	if (nkv_h_value_fits(c, "value slots: a buffer", r->slot_size))
		return -EMSGSIZE;
	if (o->size < offsetof(struct nkv_qpair_opts, timeout_ms) + sizeof(uint32_t))
		r->timeout_ms = 0;
	if (o->size < offsetof(struct nkv_qpair_opts, memory_mode) + sizeof(uint32_t))
		r->memory_mode = 0;
	if ((r->flags & ~(NKV_QPAIR_KEY_HEAD | NKV_QPAIR_PRP_ONLY | NKV_QPAIR_NO_SLOTS |
			  NKV_QPAIR_REPORT_SHORT)) ||
	    (r->memory_mode & ~(NKV_MEM_SQ | NKV_MEM_CQ | NKV_MEM_DATA)))
		return -EINVAL;
	if (device && c->gpu_rc) {
		nkv_h_log("a queue pair for device code needs a GPU: %s", c->gpu_err);
		return c->gpu_rc;
	}
	/* Host threads (the sync API, the cpu engine) read and write a host
	 * queue pair's slots: they cannot be real GPU memory. */
	if (!device && ((c->mode | r->memory_mode) & NKV_MEM_DATA) && !c->gpu_rc &&
	    !c->gpu_caps.emulated) {
		nkv_h_log("values in %s GPU memory (memory mode 0x8) are for device code: "
			  "nkv_qpair_create_dev(), not nkv_qpair_create()", c->gpu_caps.name);
		return -EOPNOTSUPP;
	}
	return 0;
}

static void nkv_h_qp_free(struct nkv_qpair *q)
{
	struct nkv_ctrl *c = q->c;

	nkv_h_qp_gpu_free(q);
	nkv_h_buf_free(c, &q->sprps);
	nkv_h_buf_free(c, &q->sdata);
	nkv_h_buf_free(c, &q->prps);
	nkv_h_buf_free(c, &q->data);
	nkv_h_buf_free(c, &q->cq);
	nkv_h_buf_free(c, &q->sq);
	free(q->dev);
	free(q->cid_bitmap);
	free(q->cpl);
	free(q->slots);
	free(q->fail_word);
	nkv_h_batch_free(q);
	free(q);
}

/* Zero the state half of the descriptor, the CID table and the rings. */
static void nkv_h_qp_clear(struct nkv_qpair *q)
{
	struct nkv_dev_qp *d = q->dev;

	memset(q->sq.m.va, 0, q->cmd_page * NKV_PAGE_SIZE);	/* the ring, not command memory */
	memset(q->cq.m.va, 0, q->cq.m.len);
	memset(q->cid_bitmap, 0, (d->cid_count + 63u) / 64u * 8u);
	memset(q->cpl, 0, (size_t)d->cid_count * sizeof(*q->cpl));
	d->sq_tail = d->sq_head = d->cq_head = 0;
	d->cq_phase = 1;
	d->inflight = d->cids_held = 0;
	d->commands = d->sq_doorbells = d->cq_doorbells = 0;
	__atomic_store_n(&d->failed, NKV_QP_OK, __ATOMIC_RELEASE);
	__atomic_store_n(q->fail_word, NKV_QP_OK, __ATOMIC_RELEASE);
	q->gdesc.sq_tail = q->gdesc.sq_head = q->gdesc.cq_head = 0;
	q->gdesc.cq_phase = 1;
	q->gdesc.inflight = q->gdesc.cids_held = q->gdesc.failed = 0;
	q->gdesc.commands = q->gdesc.sq_doorbells = q->gdesc.cq_doorbells = 0;
	nkv_h_batch_clear(q);
}

static void nkv_h_qp_fill(struct nkv_qpair *q, const struct nkv_qpair_opts *r)
{
	struct nkv_dev_qp *d = q->dev;

	memset(d, 0, sizeof(*d));
	d->sq_addr = (uint64_t)(uintptr_t)q->sq.m.va;
	d->cq_addr = (uint64_t)(uintptr_t)q->cq.m.va;
	d->sq_db_addr = (uint64_t)(uintptr_t)nkv_h_db_addr(q->c, 2u * q->qid);
	d->cq_db_addr = (uint64_t)(uintptr_t)nkv_h_db_addr(q->c, 2u * q->qid + 1u);
	d->cid_bitmap_addr = (uint64_t)(uintptr_t)q->cid_bitmap;
	d->cpl_addr = (uint64_t)(uintptr_t)q->cpl;
	d->slots_addr = (uint64_t)(uintptr_t)q->slots;
	/* Device waits end after timeout_ms of wall clock without a
	 * completion, or after poll_budget empty polls if one is given. */
	d->poll_budget = r->poll_budget ? r->poll_budget : UINT64_MAX;
	d->timeout_us = q->timeout_ms > UINT32_MAX / 1000u ? UINT32_MAX : q->timeout_ms * 1000u;
	d->fail_addr = (uint64_t)(uintptr_t)q->fail_word;
	d->sq_depth = d->cq_depth = r->depth;
	d->db_stride = q->c->db_stride;
	d->qid = q->qid;
	d->nsid = q->c->info.nsid;
	d->cid_count = r->depth;
	d->nr_slots = r->slots;
	d->credit_limit = nkv_dev_credit_limit(r->depth, r->depth);
	d->max_key = q->c->info.csi == NKV_CSI_KV ? q->c->info.max_key : 0;
	d->key_flags = (q->flags & NKV_QPAIR_KEY_HEAD) || (q->c->flags & NKV_CTRL_KEY_HEAD)
			       ? NKV_DEV_KEY_HEAD : 0;
	/* The vendor Store options the builders may send: only advertised
	 * ones, in their CDW11 positions (bits 8-15). */
	d->key_flags |= q->c->ext.store_opts & NKV_STORE_VENDOR_MASK;
	d->cmd_addr = (uint64_t)(uintptr_t)((uint8_t *)q->sq.m.va + q->cmd_page * NKV_PAGE_SIZE);
	d->cmd_pages_addr = (uint64_t)(uintptr_t)(q->sq.m.iova + q->cmd_page);
	d->cmd_size = NKV_H_CMD_PAGES * NKV_PAGE_SIZE;
	d->nr_cmds = r->depth - 1;
	d->dptr = nkv_h_qp_dptr(q);
	d->qp_flags = q->flags & NKV_QPAIR_REPORT_SHORT ? NKV_DEV_QP_REPORT_SHORT : 0;
	nkv_h_qp_clear(q);
}

static int nkv_h_qp_mem(struct nkv_qpair *q, const struct nkv_qpair_opts *r)
{
	int rc;

	/* aligned_alloc wants a size that is a multiple of the alignment. */
	q->dev = aligned_alloc(128, (sizeof(*q->dev) + 127u) & ~(size_t)127u);
	q->cid_bitmap = calloc((r->depth + 63u) / 64u, sizeof(uint64_t));
	q->cpl = calloc(r->depth, sizeof(*q->cpl));
	q->slots = calloc(r->slots ? r->slots : 1, sizeof(*q->slots));
	q->fail_word = aligned_alloc(NKV_PAGE_SIZE, NKV_PAGE_SIZE);
	if (!q->dev || !q->cid_bitmap || !q->cpl || !q->slots || !q->fail_word)
		return -ENOMEM;
	memset(q->fail_word, 0, NKV_PAGE_SIZE);
	/* Command memory (nkv_mr.h) after the SQ ring, in the same buffer: a
	 * block per command device code may have in flight and the last for
	 * the synchronous API, touched only where used. One registration
	 * less per queue pair: a vfio-user target grants each client a
	 * bounded number (nkv-target: 256). */
	q->cmd_page = nkv_h_round((size_t)r->depth * sizeof(struct nkv_sqe)) / NKV_PAGE_SIZE;
	rc = nkv_h_ring_alloc(q, NKV_MEM_SQ, (size_t)r->depth * sizeof(struct nkv_sqe),
			      (size_t)r->depth * NKV_H_CMD_PAGES, &q->sq);
	if (!rc)
		rc = nkv_h_ring_alloc(q, NKV_MEM_CQ, (size_t)r->depth * sizeof(struct nkv_cqe), 0,
				      &q->cq);
	if (!rc && r->slots)
		rc = nkv_h_slots_alloc(q, r->slots, r->slot_size, &q->data, &q->prps, q->slots);
	return rc;
}

/*
 * The synchronous API's own buffer, made on first use and grown to the
 * value in hand (a power of two, 1 MiB at least, the controller's limit at
 * most): a queue pair that moves only small values, or none through this
 * API (device code's), never holds one of 64 MiB. The old buffer goes
 * first (the transport keeps a registered buffer's address: a new one is
 * built in place). Under c->lock, as every registration.
 */
int nkv_h_qp_sync_room(struct nkv_qpair *q, uint32_t len)
{
	struct nkv_ctrl *c = q->c;
	uint32_t lim = nkv_h_xfer_limit(c), size = 1u << 20;
	int rc;

	if (len <= q->sslot.size)
		return 0;
	while (size < len && size < (1u << 31))
		size <<= 1;
	size = size < lim ? size : lim;
	pthread_mutex_lock(&c->lock);
	rc = c->dead ? -ENOTCONN : 0;
	if (!rc) {
		nkv_h_buf_free(c, &q->sprps);
		nkv_h_buf_free(c, &q->sdata);
		memset(&q->sslot, 0, sizeof(q->sslot));
		rc = nkv_h_slots_alloc(q, 1, size, &q->sdata, &q->sprps, &q->sslot);
	}
	if (!rc) {
		nkv_h_trace("queue pair %u: synchronous API buffer now %u bytes", q->qid, size);
	} else if (rc != -ENOTCONN) {
		nkv_h_buf_free(c, &q->sprps);
		nkv_h_buf_free(c, &q->sdata);
		memset(&q->sslot, 0, sizeof(q->sslot));
		nkv_h_log("queue pair %u: no %u-byte buffer for the synchronous API: %s", q->qid,
			  size, strerror(-rc));
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static void nkv_h_qstats_reset(struct nkv_ctrl *c, uint16_t qid, uint32_t depth)
{
	struct nkv_h_qstats *s = &c->qst[qid];

	/* The forwarder may update these concurrently: atomics only. */
	__atomic_store_n(&s->depth_sq, depth, __ATOMIC_RELAXED);
	__atomic_store_n(&s->depth_cq, depth, __ATOMIC_RELAXED);
	__atomic_store_n(&s->last_sq, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->last_cq, 0, __ATOMIC_RELAXED);
}

static int nkv_h_qp_create(struct nkv_ctrl *c, const struct nkv_qpair_opts *opts, int device,
			   struct nkv_qpair **out)
{
	struct nkv_qpair_opts def = { .size = sizeof(def) }, r;
	struct nkv_qpair *q;
	uint32_t qid;
	int rc;

	if (!c || !out)
		return -EINVAL;
	*out = NULL;
	rc = nkv_h_qp_check_opts(c, opts ? opts : &def, device, &r);
	if (rc)
		return rc;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->c = c;
	q->mode = c->mode | r.memory_mode;
	q->flags = r.flags;
	pthread_mutex_lock(&c->lock);
	for (qid = 1; qid <= c->granted && c->qps[qid]; qid++)
		;
	rc = c->dead ? -ENOTCONN : qid > c->granted ? -EBUSY : 0;
	q->qid = (uint16_t)qid;
	if (!rc && q->mode != c->mode) {
		char why[256] = "";

		rc = nkv_h_place_dev(c, q->mode, why, sizeof(why));
		if (rc)
			nkv_h_log("queue pair memory-mode %#x: %s", q->mode, why);
	}
	if (!rc)
		rc = nkv_h_qp_mem(q, &r);
	if (!rc) {
		q->timeout_ms = r.timeout_ms ? nkv_h_io_timeout(c, r.timeout_ms, 0,
								"nkv_qpair_opts.timeout_ms")
					     : c->io_timeout_ms;
		q->on_device = device;
		nkv_h_qp_fill(q, &r);
		rc = nkv_dev_qp_check(q->dev) ? -EINVAL : 0;
	}
	if (!rc && q->on_device)
		rc = nkv_h_qp_gpu_publish(q);
	if (!rc)
		rc = nkv_h_queues_create(q);
	if (!rc) {
		nkv_h_qstats_reset(c, q->qid, r.depth);
		memset(&c->qst[qid], 0, offsetof(struct nkv_h_qstats, depth_sq));
		c->qps[qid] = q;
		nkv_h_trace("queue pair %u: depth %u, %u slots of %u bytes, for %s",
			    qid, r.depth, r.slots, r.slot_size,
			    q->on_device ? c->gpu_caps.name : "the host");
	}
	pthread_mutex_unlock(&c->lock);
	if (rc) {
		nkv_h_qp_free(q);
		return rc;
	}
	*out = q;
	return 0;
}

int nkv_qpair_create(struct nkv_ctrl *c, const struct nkv_qpair_opts *opts,
		     struct nkv_qpair **out)
{
	return nkv_h_qp_create(c, opts, 0, out);
}

int nkv_qpair_create_dev(struct nkv_ctrl *c, const struct nkv_qpair_opts *opts,
			 struct nkv_qpair **out, struct nkv_dev_qp **dev)
{
	int rc;

	if (!dev)
		return -EINVAL;
	*dev = NULL;
	rc = nkv_h_qp_create(c, opts, 1, out);
	if (!rc)
		*dev = nkv_qpair_dev(*out);
	return rc;
}

void nkv_qpair_destroy(struct nkv_qpair *q)
{
	struct nkv_ctrl *c;

	if (!q)
		return;
	c = q->c;
	pthread_mutex_lock(&c->lock);
	nkv_h_check_gone(c);
	/* The last doorbell values out, then the queues go. */
	if (!c->dead) {
		nkv_h_db_flush(c);
		nkv_h_queues_delete(q);
	}
	c->qps[q->qid] = NULL;
	nkv_h_qp_free(q);
	pthread_mutex_unlock(&c->lock);
}

enum nkv_qp_state nkv_qpair_failed(struct nkv_qpair *q)
{
	return q ? (enum nkv_qp_state)__atomic_load_n(q->fail_word, __ATOMIC_ACQUIRE) : NKV_QP_OK;
}

struct nkv_dev_qp *nkv_qpair_dev(struct nkv_qpair *q)
{
	if (!q)
		return NULL;
	return q->on_device ? (struct nkv_dev_qp *)(uintptr_t)q->gpu_desc : q->dev;
}

/* Where host memory of a part lives, for device code's view. */
static uint32_t nkv_h_place_of(const struct nkv_qpair *q, uint32_t bit)
{
	const struct nkv_ctrl *c = q->c;

	if (q->mode & bit)
		return c->dev && c->dev->emulated ? NKV_PLACE_EMULATED : NKV_PLACE_DEVICE;
	return q->on_device && !c->gpu_caps.emulated ? NKV_PLACE_HOST_MAPPED : NKV_PLACE_HOST;
}

int nkv_qpair_get_info(struct nkv_qpair *q, struct nkv_qpair_info *info)
{
	struct nkv_qpair_info i;

	/* Callers built before a field was added pass a smaller size. */
	if (!q || !info || info->size < offsetof(struct nkv_qpair_info, by_messages))
		return -EINVAL;
	memset(&i, 0, sizeof(i));
	i.size = info->size < sizeof(i) ? info->size : sizeof(i);
	i.qid = q->qid;
	i.depth = q->dev->sq_depth;
	i.slots = q->dev->nr_slots;
	i.slot_size = q->dev->nr_slots ? q->slots[0].size : 0;
	i.device = (uint32_t)q->on_device;
	i.memory_mode = q->mode;
	i.sq = nkv_h_place_of(q, NKV_MEM_SQ);
	i.cq = nkv_h_place_of(q, NKV_MEM_CQ);
	i.values = nkv_h_place_of(q, NKV_MEM_DATA);
	i.doorbells_mapped = q->c->info.doorbells_mapped;
	i.doorbells = i.doorbells_mapped ? (q->on_device && !q->c->gpu_caps.emulated
						    ? NKV_PLACE_HOST_MAPPED : NKV_PLACE_HOST)
					 : nkv_h_place_of(q, NKV_MEM_DB);
	if (!q->on_device)
		i.bookkeeping = NKV_PLACE_HOST;
	else
		i.bookkeeping = q->c->gpu_caps.emulated ? NKV_PLACE_EMULATED : NKV_PLACE_DEVICE;
	i.by_messages = q->c->dev_msg && (q->mode & NKV_MEM_DATA) ? NKV_MEM_DATA : 0;
	i.sgl = q->dev->nr_slots && (q->slots[0].flags & NKV_DEV_SLOT_SGL) ? 1 : 0;
	i.key_head = (q->dev->key_flags & NKV_DEV_KEY_HEAD) ? 1 : 0;
	i.timeout_ms = q->timeout_ms;
	i.cmds = q->dev->nr_cmds;
	i.dptr = q->dev->dptr;
	i.flags = q->flags;
	if (q->c->ops == &nkv_transport_tcp)
		snprintf(i.remote, sizeof(i.remote), "%s", nkv_h_tcp_desc(q->c->tr));
	memcpy(info, &i, i.size);
	return 0;
}

void *nkv_qpair_slot(struct nkv_qpair *q, uint32_t i, uint32_t *len)
{
	if (!q || i >= q->dev->nr_slots)
		return NULL;
	if (len)
		*len = q->slots[i].size;
	return (void *)(uintptr_t)q->slots[i].addr;
}

/* Device code's doorbell words of this queue back to 0, as the
 * controller's are after a create. */
static int nkv_h_qp_zero_doorbells(struct nkv_qpair *q)
{
	struct nkv_ctrl *c = q->c;

	if (!c->shadow_va)
		return 0;
	__atomic_store_n(nkv_h_db_addr(c, 2u * q->qid), 0, __ATOMIC_RELEASE);
	__atomic_store_n(nkv_h_db_addr(c, 2u * q->qid + 1u), 0, __ATOMIC_RELEASE);
	return nkv_h_db_flush(c);
}

int nkv_qpair_reset(struct nkv_qpair *q)
{
	struct nkv_ctrl *c;
	int rc;

	if (!q)
		return -EINVAL;
	c = q->c;
	pthread_mutex_lock(&c->lock);
	rc = c->dead ? -ENOTCONN : 0;
	/* Deleting the SQ makes the controller drop what it still holds of
	 * it; only then may the rings and CIDs start over. */
	if (!rc)
		rc = nkv_h_queues_delete(q);
	if (!rc)
		rc = nkv_h_qp_zero_doorbells(q);
	if (!rc) {
		nkv_h_qp_clear(q);
		nkv_h_qstats_reset(c, q->qid, q->dev->sq_depth);
		rc = nkv_h_queues_create(q);
	}
	if (!rc && nkv_dev_qp_check(q->dev))
		rc = -EINVAL;
	if (!rc && q->on_device)
		rc = nkv_h_qp_gpu_sync(q);
	if (rc) {
		/* Stays failed: device code must not use it. */
		__atomic_store_n(&q->dev->failed, NKV_QP_FAILED_INTERNAL, __ATOMIC_RELEASE);
		__atomic_store_n(q->fail_word, NKV_QP_FAILED_INTERNAL, __ATOMIC_RELEASE);
		if (q->on_device) {
			q->gdesc.failed = NKV_QP_FAILED_INTERNAL;
			nkv_h_qp_gpu_sync(q);
		}
		nkv_h_log("queue pair %u: reset failed: %s", q->qid, strerror(-rc));
	} else {
		nkv_h_trace("queue pair %u: reset", q->qid);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}
