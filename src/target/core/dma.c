/* SPDX-License-Identifier: MIT */
/*
 * dma.c - nkv-target's DMA space: registered client memory and PRP walks.
 *
 * Regions live in an array sorted by IOVA, so a lookup is a binary search.
 * The transport maps and unmaps from its own thread while the poll thread
 * resolves PRPs, hence the rwlock: lookups share it, map/unmap take it
 * exclusively.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dma.h"
#include "memguard.h"
#include "nkv_wire.h"

struct nkv_dma_region {
	uint64_t iova;
	uint64_t len;
	uint8_t *ptr;
	uint32_t prot;
};

struct nkv_dma {
	pthread_rwlock_t lock;
	int faulted;		/* a PRP list page vanished (atomic) */
	int nmsg;		/* NKV_DMA_MSG regions (atomic reads) */
	struct nkv_dma_region *r;
	size_t n;
	size_t cap;
};

struct nkv_dma *nkv_dma_create(void)
{
	struct nkv_dma *dma = calloc(1, sizeof(*dma));

	if (!dma)
		return NULL;
	if (pthread_rwlock_init(&dma->lock, NULL)) {
		free(dma);
		return NULL;
	}
	return dma;
}

void nkv_dma_destroy(struct nkv_dma *dma)
{
	if (!dma)
		return;
	pthread_rwlock_destroy(&dma->lock);
	free(dma->r);
	free(dma);
}

/* Index of the first region whose end lies above iova. */
static size_t nkv_dma_lower(const struct nkv_dma *dma, uint64_t iova)
{
	size_t lo = 0, hi = dma->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct nkv_dma_region *r = &dma->r[mid];

		if (r->iova + r->len <= iova)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int nkv_dma_map(struct nkv_dma *dma, uint64_t iova, uint64_t len, void *ptr,
		uint32_t prot)
{
	size_t i;
	int rc = 0;

	if (!len || iova + len < iova || !ptr ||
	    (uintptr_t)ptr + len < (uintptr_t)ptr)
		return -EINVAL;
	pthread_rwlock_wrlock(&dma->lock);
	i = nkv_dma_lower(dma, iova);
	if (i < dma->n && dma->r[i].iova < iova + len) {
		rc = -EEXIST;
		goto out;
	}
	if (dma->n == dma->cap) {
		size_t cap = dma->cap ? dma->cap * 2 : 16;
		struct nkv_dma_region *nr = realloc(dma->r, cap * sizeof(*nr));

		if (!nr) {
			rc = -ENOMEM;
			goto out;
		}
		dma->r = nr;
		dma->cap = cap;
	}
	memmove(&dma->r[i + 1], &dma->r[i], (dma->n - i) * sizeof(dma->r[0]));
	dma->r[i] = (struct nkv_dma_region){ iova, len, ptr, prot };
	dma->n++;
	if (prot & NKV_DMA_MSG)
		__atomic_add_fetch(&dma->nmsg, 1, __ATOMIC_RELAXED);
out:
	pthread_rwlock_unlock(&dma->lock);
	return rc;
}

int nkv_dma_unmap(struct nkv_dma *dma, uint64_t iova, uint64_t len)
{
	size_t i;
	int rc = -ENOENT;

	pthread_rwlock_wrlock(&dma->lock);
	i = nkv_dma_lower(dma, iova);
	if (i < dma->n && dma->r[i].iova == iova && dma->r[i].len == len) {
		if (dma->r[i].prot & NKV_DMA_MSG)
			__atomic_sub_fetch(&dma->nmsg, 1, __ATOMIC_RELAXED);
		memmove(&dma->r[i], &dma->r[i + 1],
			(dma->n - i - 1) * sizeof(dma->r[0]));
		dma->n--;
		rc = 0;
	}
	pthread_rwlock_unlock(&dma->lock);
	return rc;
}

/* Caller holds the lock (either mode). */
static void *nkv_dma_ptr_attr(struct nkv_dma *dma, uint64_t iova, uint64_t len,
			      uint32_t prot, uint32_t *attr)
{
	size_t i = nkv_dma_lower(dma, iova);
	const struct nkv_dma_region *r;

	if (i >= dma->n || iova + len < iova)
		return NULL;
	r = &dma->r[i];
	if (iova < r->iova || iova + len > r->iova + r->len ||
	    (r->prot & prot) != prot)
		return NULL;
	*attr = r->prot;
	return r->ptr + (iova - r->iova);
}

/* Accesses other than data segments (queues, PRP lists) never reach a
 * message-only region: the controller reads those in place. */
static void *nkv_dma_ptr_locked(struct nkv_dma *dma, uint64_t iova,
				uint64_t len, uint32_t prot, uint32_t *attr)
{
	void *p = nkv_dma_ptr_attr(dma, iova, len, prot, attr);

	return p && prot && (*attr & NKV_DMA_MSG) ? NULL : p;
}

void *nkv_dma_ptr_stable(struct nkv_dma *dma, uint64_t iova, uint64_t len,
			 uint32_t prot, int *stable)
{
	uint32_t attr = 0;
	void *p;

	pthread_rwlock_rdlock(&dma->lock);
	p = nkv_dma_ptr_locked(dma, iova, len, prot, &attr);
	pthread_rwlock_unlock(&dma->lock);
	*stable = p && (attr & NKV_DMA_STABLE);
	return p;
}

void *nkv_dma_ptr(struct nkv_dma *dma, uint64_t iova, uint64_t len,
		  uint32_t prot)
{
	int stable;

	return nkv_dma_ptr_stable(dma, iova, len, prot, &stable);
}

/* State of one walk (PRPs or an SGL). */
struct nkv_prp_walk {
	struct nkv_dma *dma;
	uint32_t ps;
	uint32_t prot;
	struct nkv_dma_segs *s;
	int n;
	uint64_t left;
	uint32_t attr;		/* AND of the segments' region attributes */
	uint64_t len;		/* the whole transfer */
	int ndata;		/* SGL: Data Block descriptors seen */
	int nlist;		/* SGL: segment lists seen */
};

static int nkv_prp_err(uint8_t sc)
{
	return -(int)NKV_STATUS(NKV_SCT_GENERIC, sc);
}

/* Room for one more segment: the array grows fourfold on the heap, so a
 * scattered 64 MiB command reallocates a few times, not per page. */
static int nkv_prp_grow(struct nkv_dma_segs *s)
{
	int cap = s->cap > s->max / 4 ? s->max : s->cap * 4;
	struct iovec *v;

	if (s->cap >= s->max)
		return nkv_prp_err(NKV_SC_INVALID_FIELD);
	v = s->heap ? realloc(s->iov, (size_t)cap * sizeof(*v)) : malloc((size_t)cap * sizeof(*v));
	if (!v)
		return nkv_prp_err(NKV_SC_INTERNAL);
	if (!s->heap)
		memcpy(v, s->iov, (size_t)s->cap * sizeof(*v));
	s->iov = v;
	s->cap = cap;
	s->heap = 1;
	return 0;
}

/* Add one data segment, merging with the previous one when contiguous. */
static int nkv_prp_add(struct nkv_prp_walk *w, uint64_t iova, uint64_t len)
{
	uint32_t attr = 0;
	/* A key head in front of the data is read even when the rest is
	 * written: its bytes need read access too. */
	uint32_t prot = w->prot | (w->len - w->left < w->s->rd_head ? NKV_DMA_READ : 0);
	uint8_t *p = nkv_dma_ptr_attr(w->dma, iova, len, prot, &attr);

	if (!p)
		return nkv_prp_err(NKV_SC_DATA_XFER_ERROR);
	if (w->n && (uint8_t *)w->s->iov[w->n - 1].iov_base +
			    w->s->iov[w->n - 1].iov_len == p) {
		w->s->iov[w->n - 1].iov_len += len;
	} else {
		int rc = w->n == w->s->cap ? nkv_prp_grow(w->s) : 0;

		if (rc)
			return rc;
		w->s->iov[w->n].iov_base = p;
		w->s->iov[w->n].iov_len = len;
		w->n++;
	}
	w->attr &= attr;
	w->left -= len;
	return 0;
}

/* A page-aligned entry (PRP2 or a list entry) for the next data page. */
static int nkv_prp_page(struct nkv_prp_walk *w, uint64_t e)
{
	if (e & (w->ps - 1))
		return nkv_prp_err(NKV_SC_PRP_OFFSET_INVALID);
	return nkv_prp_add(w, e, w->left < w->ps ? w->left : w->ps);
}

/*
 * Walk PRP lists starting at list pointer lp. Each list page holds entries
 * up to its end; when more data remains than entries in the page, the last
 * entry chains to the next list page. The walk ends when the data does, so
 * a cyclic chain cannot loop for ever.
 */
static int nkv_prp_list(struct nkv_prp_walk *w, uint64_t lp)
{
	if (lp & 3)
		return nkv_prp_err(NKV_SC_PRP_OFFSET_INVALID);
	while (w->left) {
		uint64_t nent = (w->ps - (lp & (w->ps - 1))) / 8;
		uint64_t need = (w->left + w->ps - 1) / w->ps;
		const uint8_t *page;
		uint32_t attr = 0;
		uint64_t i, e;
		int rc;

		if (!nent)
			return nkv_prp_err(NKV_SC_PRP_OFFSET_INVALID);
		page = nkv_dma_ptr_locked(w->dma, lp, nent * 8, NKV_DMA_READ, &attr);
		if (!page)
			return nkv_prp_err(NKV_SC_DATA_XFER_ERROR);
		for (i = 0; i < nent && w->left; i++) {
			if (nkv_guard_copy(&e, page + i * 8, 8)) {
				__atomic_store_n(&w->dma->faulted, 1, __ATOMIC_RELAXED);
				return nkv_prp_err(NKV_SC_DATA_XFER_ERROR);
			}
			if (i == nent - 1 && need > 1)
				break;	/* chain entry */
			rc = nkv_prp_page(w, e);
			if (rc)
				return rc;
			need--;
		}
		if (!w->left)
			break;
		if (e & (w->ps - 1))
			return nkv_prp_err(NKV_SC_PRP_OFFSET_INVALID);
		lp = e;
	}
	return 0;
}

int nkv_dma_prp_to_iov(struct nkv_dma *dma, uint64_t prp1, uint64_t prp2,
		       uint64_t len, uint32_t page_size, uint32_t prot,
		       struct nkv_dma_segs *segs, int *stable)
{
	struct nkv_prp_walk w = { dma, page_size, prot, segs, 0, len, ~0u, len, 0, 0 };
	uint64_t off = prp1 & (page_size - 1);
	uint64_t first;
	int rc;

	if (stable)
		*stable = 1;	/* no data: nothing to touch */
	if (!len)
		return 0;
	if (!page_size || (page_size & (page_size - 1)) || segs->cap < 1)
		return nkv_prp_err(NKV_SC_INVALID_FIELD);
	/* PRP1 of a command in key-head form points into the head, which is
	 * as long as its key: byte aligned (the host's slot layout). */
	if ((prp1 & 3) && !segs->rd_head)
		return nkv_prp_err(NKV_SC_PRP_OFFSET_INVALID);
	first = page_size - off < len ? page_size - off : len;
	pthread_rwlock_rdlock(&dma->lock);
	rc = nkv_prp_add(&w, prp1, first);
	if (!rc && w.left) {
		if (w.left <= page_size)
			rc = nkv_prp_page(&w, prp2);
		else
			rc = nkv_prp_list(&w, prp2);
	}
	pthread_rwlock_unlock(&dma->lock);
	if (stable)
		*stable = !rc && (w.attr & NKV_DMA_STABLE);
	return rc ? rc : w.n;
}

/* One Data Block: the bytes of it the transfer still needs (an SGL may
 * describe more than the transfer). Every Data Block counts against the
 * bound, so a list of empty ones cannot run long. */
static int nkv_sgl_data(struct nkv_prp_walk *w, const struct nkv_sgl_desc *d)
{
	uint64_t n = d->len < w->left ? d->len : w->left;

	if (++w->ndata > w->s->max)
		return nkv_prp_err(NKV_SC_SGL_COUNT_INVALID);
	return n ? nkv_prp_add(w, d->addr, n) : 0;
}

/* Descriptors nkv-target takes: Data Block, Segment, Last Segment, each
 * with an address (subtype 0); no Bit Bucket, no keyed or offset forms. */
static int nkv_sgl_type_ok(uint8_t id)
{
	uint32_t t = nkv_sgl_type(id);

	return !nkv_sgl_subtype(id) &&
	       (t == NKV_SGL_DATA_BLOCK || t == NKV_SGL_SEGMENT || t == NKV_SGL_LAST_SEGMENT);
}

/*
 * Walk one segment list that @d (a Segment or Last Segment) points to:
 * its Data Blocks in order; the last entry of a Segment's list may chain
 * (*next) to the next list. Lists are read where they lie in registered
 * memory, one descriptor at a time under memguard.
 */
static int nkv_sgl_list(struct nkv_prp_walk *w, const struct nkv_sgl_desc *d,
			struct nkv_sgl_desc *next, int *chained)
{
	uint32_t nent = d->len / sizeof(*d), i, attr = 0;
	const uint8_t *list;
	int rc;

	if (!d->len || d->len % sizeof(*d))
		return nkv_prp_err(NKV_SC_SGL_DATA_LEN_INVALID);
	if (++w->nlist > w->s->max)
		return nkv_prp_err(NKV_SC_SGL_COUNT_INVALID);
	list = nkv_dma_ptr_locked(w->dma, d->addr, d->len, NKV_DMA_READ, &attr);
	if (!list)
		return nkv_prp_err(NKV_SC_DATA_XFER_ERROR);
	*chained = 0;
	for (i = 0; i < nent && w->left; i++) {
		struct nkv_sgl_desc e;

		if (nkv_guard_copy(&e, list + (size_t)i * sizeof(e), sizeof(e))) {
			__atomic_store_n(&w->dma->faulted, 1, __ATOMIC_RELAXED);
			return nkv_prp_err(NKV_SC_DATA_XFER_ERROR);
		}
		if (!nkv_sgl_type_ok(e.id))
			return nkv_prp_err(NKV_SC_SGL_TYPE_INVALID);
		if (nkv_sgl_type(e.id) != NKV_SGL_DATA_BLOCK) {
			/* A list pointer only ends a Segment's list. */
			if (nkv_sgl_type(d->id) != NKV_SGL_SEGMENT || i != nent - 1)
				return nkv_prp_err(NKV_SC_SGL_TYPE_INVALID);
			*next = e;
			*chained = 1;
			return 0;
		}
		rc = nkv_sgl_data(w, &e);
		if (rc)
			return rc;
	}
	return 0;
}

int nkv_dma_sgl_to_iov(struct nkv_dma *dma, const struct nkv_sgl_desc *sgl1, uint64_t len,
		       uint32_t prot, struct nkv_dma_segs *segs, int *stable)
{
	struct nkv_prp_walk w = { dma, 0, prot, segs, 0, len, ~0u, len, 0, 0 };
	struct nkv_sgl_desc d = *sgl1;
	int rc, chained = 1;

	if (stable)
		*stable = 1;
	if (!len)
		return 0;
	if (segs->cap < 1)
		return nkv_prp_err(NKV_SC_INVALID_FIELD);
	if (!nkv_sgl_type_ok(d.id))
		return nkv_prp_err(NKV_SC_SGL_TYPE_INVALID);
	pthread_rwlock_rdlock(&dma->lock);
	if (nkv_sgl_type(d.id) == NKV_SGL_DATA_BLOCK) {
		rc = nkv_sgl_data(&w, &d);
		chained = 0;
	} else {
		/* Each list is bounded and counted: a cyclic chain ends. */
		for (rc = 0; !rc && chained && w.left;)
			rc = nkv_sgl_list(&w, &d, &d, &chained);
	}
	if (!rc && w.left)
		rc = nkv_prp_err(NKV_SC_SGL_DATA_LEN_INVALID);
	pthread_rwlock_unlock(&dma->lock);
	if (stable)
		*stable = !rc && (w.attr & NKV_DMA_STABLE);
	return rc ? rc : w.n;
}

int nkv_dma_msg_range(struct nkv_dma *dma, const void *ptr, uint64_t len,
		      uint64_t *iova, uint64_t *run)
{
	uintptr_t p = (uintptr_t)ptr;
	int rc = -ENOENT;
	size_t i;

	pthread_rwlock_rdlock(&dma->lock);
	for (i = 0; i < dma->n; i++) {
		const struct nkv_dma_region *r = &dma->r[i];
		uintptr_t b = (uintptr_t)r->ptr;

		if (p < b || p - b >= r->len)
			continue;
		*iova = r->iova + (p - b);
		*run = r->len - (p - b) < len ? r->len - (p - b) : len;
		rc = !!(r->prot & NKV_DMA_MSG);
		break;
	}
	pthread_rwlock_unlock(&dma->lock);
	return rc;
}

int nkv_dma_has_msg(struct nkv_dma *dma)
{
	return __atomic_load_n(&dma->nmsg, __ATOMIC_RELAXED) != 0;
}

int nkv_dma_faulted(struct nkv_dma *dma)
{
	return __atomic_load_n(&dma->faulted, __ATOMIC_RELAXED);
}
