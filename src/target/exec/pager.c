/* SPDX-License-Identifier: MIT */
/*
 * pager.c - a value read in ranges as its module touches it, where the
 * backend serves ranges (backend.h read_range: RADOS). A TP-rank slice
 * of a 32 MiB block then reads its 4 MiB from the store, not 32.
 *
 * The value's bytes live in the worker's buffer at their own offsets;
 * a bitmap says which NKV_EXEC_PAGE pages have come. Each miss is one
 * backend read of the missing pages it covers, grown by a readahead
 * that doubles while the module reads on from where its last range
 * ended (a digest over the whole value costs ~log2 reads, not one per
 * page); a slice's ranges, a layer apart, read their pages only.
 * Every read after the first asserts the value's version: a concurrent
 * Store ends the paged run with -ESTALE, and the worker runs the module
 * again on one whole read (pool.c), so a module still sees one value.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "target/core/backend.h"

#define NKV_EXEC_PAGE (64u << 10)
#define NKV_EXEC_FIRST (256u << 10)	/* the probe: a small value in one read */
#define NKV_EXEC_RA_MAX (8u << 20)

int nkv_exec_buf_grow(struct nkv_exec_buf *b, uint64_t cap, uint64_t keep)
{
	uint8_t *p;

	if (cap <= b->cap)
		return 0;
	p = malloc(cap);
	if (!p)
		return -1;
	if (keep)
		memcpy(p, b->p, keep < b->cap ? keep : b->cap);
	free(b->p);
	b->p = p;
	b->cap = cap;
	return 0;
}

void nkv_exec_buf_trim(struct nkv_exec_buf *b)
{
	if (b->cap <= NKV_EXEC_KEEP)
		return;
	free(b->p);
	b->p = NULL;
	b->cap = 0;
}

static void nkv_exec_pager_mark(struct nkv_exec_pager *pg, uint64_t from, uint64_t to)
{
	uint64_t i;

	for (i = from; i < to; i++)
		pg->have[i / 64] |= 1ull << (i % 64);
}

static int nkv_exec_pager_has(const struct nkv_exec_pager *pg, uint64_t page)
{
	return (int)(pg->have[page / 64] >> (page % 64) & 1);
}

int nkv_exec_pager_open(struct nkv_exec_pager *pg, struct nkv_be *be, const uint8_t *key,
			uint32_t klen, struct nkv_exec_buf *b)
{
	uint64_t got = 0, pages;
	int rc;

	memset(pg, 0, sizeof(*pg));
	pg->be = be;
	pg->key = key;
	pg->klen = klen;
	pg->b = b;
	if (nkv_exec_buf_grow(b, NKV_EXEC_FIRST, 0))
		return -ENOMEM;
	rc = be->ops->read_range(be, key, klen, 0, NKV_EXEC_FIRST, b->p, &got, &pg->len,
				 &pg->version);
	if (rc)
		return rc;
	pg->reads = 1;
	pg->bytes = got;
	if (got >= pg->len) {
		pg->whole = 1;	/* it all came with the probe */
		return 0;
	}
	if (got != NKV_EXEC_FIRST || nkv_exec_buf_grow(b, pg->len, got))
		return got != NKV_EXEC_FIRST ? -ESTALE : -ENOMEM;
	pages = (pg->len + NKV_EXEC_PAGE - 1) / NKV_EXEC_PAGE;
	pg->have = calloc((pages + 63) / 64, sizeof(*pg->have));
	if (!pg->have)
		return -ENOMEM;
	nkv_exec_pager_mark(pg, 0, NKV_EXEC_FIRST / NKV_EXEC_PAGE);
	return 0;
}

int nkv_exec_pager_fetch(void *ctx, uint64_t off, uint64_t len)
{
	struct nkv_exec_pager *pg = ctx;
	uint64_t first, last, end, want, got = 0, size = 0, ver = pg->version;
	int seq, rc;

	if (pg->whole || !len || off >= pg->len)
		return 0;
	if (len > pg->len - off)
		len = pg->len - off;
	/* Reading on: from where the module's last range ended, or less than
	 * a page past it (it would touch every page anyway). */
	seq = off >= pg->next_off && off - pg->next_off < NKV_EXEC_PAGE;
	pg->next_off = off + len;
	first = off / NKV_EXEC_PAGE;
	last = (off + len - 1) / NKV_EXEC_PAGE;
	while (first <= last && nkv_exec_pager_has(pg, first))
		first++;
	if (first > last)
		return 0;
	/* The readahead doubles while the module reads on. */
	if (seq)
		pg->ra = pg->ra ? (pg->ra * 2 < NKV_EXEC_RA_MAX ? pg->ra * 2 : NKV_EXEC_RA_MAX)
				: NKV_EXEC_FIRST;
	else
		pg->ra = 0;
	end = (last + 1) * NKV_EXEC_PAGE;
	if (end < first * NKV_EXEC_PAGE + pg->ra)
		end = first * NKV_EXEC_PAGE + pg->ra;
	if (end > pg->len)
		end = pg->len;
	want = end - first * NKV_EXEC_PAGE;
	rc = pg->be->ops->read_range(pg->be, pg->key, pg->klen, first * NKV_EXEC_PAGE, want,
				     pg->b->p + first * NKV_EXEC_PAGE, &got, &size, &ver);
	if (!rc && (got != want || size != pg->len))
		rc = -ESTALE;	/* not the value the first read saw */
	if (rc)
		return rc;
	pg->reads++;
	pg->bytes += got;
	nkv_exec_pager_mark(pg, first, (end + NKV_EXEC_PAGE - 1) / NKV_EXEC_PAGE);
	return 0;
}

void nkv_exec_pager_close(struct nkv_exec_pager *pg)
{
	free(pg->have);
	pg->have = NULL;
}
