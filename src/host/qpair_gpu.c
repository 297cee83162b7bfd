/* SPDX-License-Identifier: MIT */
/*
 * qpair_gpu.c - queue pairs for device code (nkv_qpair_create_dev).
 *
 * Only what the controller must see lives in host memory (SQ, CQ, value
 * slots, doorbells: per memory mode); it is registered with the GPU
 * runtime so kernels reach it. The queue's own bookkeeping (descriptor,
 * CID bitmap, completion table, slot table) lives in device memory:
 * every read of host memory on a command's path costs a microsecond over
 * PCIe (BRIEF section 8). The host keeps its own copies (q->dev, q->cpl,
 * ...) to build and reset them, and copies them over while no kernel runs.
 * The failure word stays in mapped host memory, so the host can see why a
 * kernel stopped while it runs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"

/* Device address of host pointer p inside a registered range. */
static uint64_t nkv_h_gpu_addr(uint64_t gpu_base, const void *host_base, const void *p)
{
	return gpu_base + (uint64_t)((const uint8_t *)p - (const uint8_t *)host_base);
}

/* The doorbell page (mapped BAR/sparse area, or the shadow page): once
 * per controller, as I/O memory when it is a PCIe BAR. */
static int nkv_h_gpu_db(struct nkv_ctrl *c)
{
	int iomem = !c->shadow_va && !strcmp(c->ops->name, "pcie");
	void *base = c->shadow_va ? (void *)c->shadow_va : (void *)c->dbmap;
	size_t len = c->shadow_va ? c->shadow.m.len : c->dbmap_len;
	int rc;

	if (c->gpu_db_host)
		return 0;
	rc = c->gpu->host_register(base, len, iomem, &c->gpu_db);
	if (rc) {
		nkv_h_log("cannot register the doorbell page with the %s runtime: %s",
			  c->gpu_caps.name, strerror(-rc));
		return rc;
	}
	c->gpu_db_host = base;
	return 0;
}

void nkv_h_gpu_db_fini(struct nkv_ctrl *c)
{
	if (c->gpu_db_host)
		c->gpu->host_unregister(c->gpu_db_host);
	c->gpu_db_host = NULL;
}

/* Register one host buffer of the queue pair; its device base in *gpu. */
static int nkv_h_gpu_reg(struct nkv_qpair *q, void *va, size_t len, uint64_t *gpu)
{
	int rc = q->c->gpu->host_register(va, len, 0, gpu);

	if (!rc)
		q->gpu_reg[q->gpu_nreg++] = va;
	return rc;
}

/* Copy the host's bookkeeping to the device copies (no kernel running). */
int nkv_h_qp_gpu_sync(struct nkv_qpair *q)
{
	const struct nkv_gpu_ops *g = q->c->gpu;
	uint32_t cids = q->dev->cid_count;
	int rc;

	rc = g->to_dev(q->gpu_bitmap, q->cid_bitmap, (cids + 63u) / 64u * 8u);
	if (!rc)
		rc = g->to_dev(q->gpu_cpl, q->cpl, (size_t)cids * sizeof(*q->cpl));
	if (!rc)
		rc = g->to_dev(q->gpu_desc, &q->gdesc, sizeof(q->gdesc));
	return rc;
}

/* The descriptor device code gets: the host's, with device addresses. */
static void nkv_h_qp_gpu_desc(struct nkv_qpair *q)
{
	struct nkv_ctrl *c = q->c;
	struct nkv_dev_qp *d = &q->gdesc;
	void *db = c->gpu_db_host;

	*d = *q->dev;
	d->sq_addr = q->gpu_sq;
	d->cq_addr = q->gpu_cq;
	d->sq_db_addr = nkv_h_gpu_addr(c->gpu_db, db, (const void *)nkv_h_db_addr(c, 2u * q->qid));
	d->cq_db_addr = nkv_h_gpu_addr(c->gpu_db, db,
				       (const void *)nkv_h_db_addr(c, 2u * q->qid + 1u));
	d->cid_bitmap_addr = q->gpu_bitmap;
	d->cpl_addr = q->gpu_cpl;
	d->slots_addr = q->gpu_slots;
	d->fail_addr = q->gpu_fail;
	d->cmd_addr = q->gpu_sq + q->cmd_page * NKV_PAGE_SIZE;
	d->cmd_pages_addr = q->gpu_cmd_pages + q->cmd_page * 8u;
}

int nkv_h_qp_gpu_publish(struct nkv_qpair *q)
{
	const struct nkv_gpu_ops *g = q->c->gpu;
	struct nkv_dev_slot *slots = NULL;
	uint32_t n = q->dev->nr_slots, i, cids = q->dev->cid_count;
	int rc = nkv_h_gpu_db(q->c);

	if (!rc)
		rc = nkv_h_gpu_reg(q, q->sq.m.va, q->sq.m.len, &q->gpu_sq);
	if (!rc)
		rc = nkv_h_gpu_reg(q, q->cq.m.va, q->cq.m.len, &q->gpu_cq);
	/* Values in GPU memory already are device addresses. */
	if (!rc && q->data.m.len && nkv_h_memsrc_on_gpu(q->data.src))
		q->gpu_data = (uint64_t)(uintptr_t)q->data.m.va;
	else if (!rc && q->data.m.len)
		rc = nkv_h_gpu_reg(q, q->data.m.va, q->data.m.len, &q->gpu_data);
	if (!rc)
		rc = nkv_h_gpu_reg(q, q->fail_word, NKV_PAGE_SIZE, &q->gpu_fail);
	/* Command memory follows the SQ ring (registered above): lanes
	 * write key heads and lists there; its page addresses are read on
	 * each region command, so they go to the GPU. */
	if (!rc)
		rc = g->dev_alloc(q->sq.m.npages * 8u, &q->gpu_cmd_pages);
	if (!rc)
		rc = g->to_dev(q->gpu_cmd_pages, q->sq.m.iova, q->sq.m.npages * 8u);
	if (!rc)
		rc = g->dev_alloc((cids + 63u) / 64u * 8u, &q->gpu_bitmap);
	if (!rc)
		rc = g->dev_alloc((size_t)cids * sizeof(*q->cpl), &q->gpu_cpl);
	if (!rc)
		rc = g->dev_alloc((size_t)(n ? n : 1) * sizeof(*slots), &q->gpu_slots);
	if (!rc)
		rc = g->dev_alloc(sizeof(q->gdesc), &q->gpu_desc);
	if (!rc) {
		slots = calloc(n ? n : 1, sizeof(*slots));
		rc = slots ? 0 : -ENOMEM;
	}
	for (i = 0; !rc && i < n; i++) {
		slots[i] = q->slots[i];
		slots[i].addr = nkv_h_gpu_addr(q->gpu_data, q->data.m.va,
					       (const void *)(uintptr_t)q->slots[i].addr);
	}
	if (!rc)
		rc = g->to_dev(q->gpu_slots, slots, (size_t)n * sizeof(*slots));
	free(slots);
	if (!rc) {
		nkv_h_qp_gpu_desc(q);
		rc = nkv_h_qp_gpu_sync(q);
	}
	if (rc)
		nkv_h_log("queue pair %u: cannot hand it to device code (%s runtime): %s", q->qid,
			  q->c->gpu_caps.name, strerror(-rc));
	return rc;
}

/* Refresh the host's view of the device-kept state (counters, ring state)
 * from the device copy: no kernel may run on it meanwhile. */
int nkv_h_qp_gpu_read(struct nkv_qpair *q, struct nkv_dev_qp *d)
{
	return q->c->gpu->from_dev(d, q->gpu_desc, sizeof(*d));
}

void nkv_h_qp_gpu_free(struct nkv_qpair *q)
{
	const struct nkv_gpu_ops *g = q->c->gpu;
	int i;

	for (i = 0; i < q->gpu_nreg; i++)
		g->host_unregister(q->gpu_reg[i]);
	q->gpu_nreg = 0;
	if (q->gpu_desc)
		g->dev_free(q->gpu_desc);
	if (q->gpu_slots)
		g->dev_free(q->gpu_slots);
	if (q->gpu_cpl)
		g->dev_free(q->gpu_cpl);
	if (q->gpu_bitmap)
		g->dev_free(q->gpu_bitmap);
	if (q->gpu_cmd_pages)
		g->dev_free(q->gpu_cmd_pages);
	q->gpu_desc = q->gpu_slots = q->gpu_cpl = q->gpu_bitmap = q->gpu_cmd_pages = 0;
}
