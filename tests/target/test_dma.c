/* SPDX-License-Identifier: MIT */
/* DMA space: registration, bounds, PRP walks (legal and illegal). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "nkv_wire.h"
#include "target/core/dma.h"

#define PS 4096u
#define ERR(sc) (-(int)NKV_STATUS(NKV_SCT_GENERIC, (sc)))

static struct nkv_dma *dma;
static uint8_t *mem;		/* 64 pages at IOVA 0x100000 */
static struct iovec iov[300];

static void setup(void)
{
	dma = nkv_dma_create();
	mem = aligned_alloc(PS, 64 * PS);
	memset(mem, 0, 64 * PS);
	cr_assert_eq(nkv_dma_map(dma, 0x100000, 64 * PS, mem,
				 NKV_DMA_READ | NKV_DMA_WRITE), 0);
}

static void teardown(void)
{
	nkv_dma_destroy(dma);
	free(mem);
}

TestSuite(dma, .init = setup, .fini = teardown, .timeout = 10);

/* A walk into iov, at most max segments (a fixed array). */
static int prp_st(uint64_t p1, uint64_t p2, uint64_t len, int max, int *st)
{
	struct nkv_dma_segs s = { iov, max, max, 0 };

	return nkv_dma_prp_to_iov(dma, p1, p2, len, PS, NKV_DMA_WRITE, &s, st);
}

static int prp(uint64_t p1, uint64_t p2, uint64_t len, int max)
{
	return prp_st(p1, p2, len, max, NULL);
}

Test(dma, map_rules)
{
	uint8_t b[64];

	cr_assert_eq(nkv_dma_map(dma, 0x100000 + PS, 16, b, NKV_DMA_READ), -EEXIST);
	cr_assert_eq(nkv_dma_map(dma, 0xff000, 0x1001, b, NKV_DMA_READ), -EEXIST);
	cr_assert_eq(nkv_dma_map(dma, 0, 0, b, NKV_DMA_READ), -EINVAL);
	cr_assert_eq(nkv_dma_map(dma, ~0ull - 8, 64, b, NKV_DMA_READ), -EINVAL);
	cr_assert_eq(nkv_dma_map(dma, 0x1000, 64, b, NKV_DMA_READ), 0);
	cr_assert_eq(nkv_dma_unmap(dma, 0x1000, 32), -ENOENT);
	cr_assert_eq(nkv_dma_unmap(dma, 0x2000, 64), -ENOENT);
	cr_assert_eq(nkv_dma_unmap(dma, 0x1000, 64), 0);
	cr_assert_null(nkv_dma_ptr(dma, 0x1000, 1, 0));
}

Test(dma, ptr_bounds_and_prot)
{
	uint8_t *ro = malloc(100);

	cr_assert_eq(nkv_dma_map(dma, 0x5000000, 100, ro, NKV_DMA_READ), 0);
	cr_assert_eq(nkv_dma_ptr(dma, 0x5000000, 100, NKV_DMA_READ), ro);
	cr_assert_eq(nkv_dma_ptr(dma, 0x5000000 + 99, 1, NKV_DMA_READ), ro + 99);
	cr_assert_null(nkv_dma_ptr(dma, 0x5000000 + 99, 2, NKV_DMA_READ));
	cr_assert_null(nkv_dma_ptr(dma, 0x5000000 - 1, 2, NKV_DMA_READ));
	cr_assert_null(nkv_dma_ptr(dma, 0x5000000, 1, NKV_DMA_WRITE));
	cr_assert_null(nkv_dma_ptr(dma, ~0ull, 2, 0));
	cr_assert_eq(nkv_dma_ptr(dma, 0x100000 + 63 * PS, PS, NKV_DMA_WRITE),
		     mem + 63 * PS);
	cr_assert_null(nkv_dma_ptr(dma, 0x100000 + 63 * PS, PS + 1, NKV_DMA_WRITE));
	nkv_dma_unmap(dma, 0x5000000, 100);
	free(ro);
}

Test(dma, prp_single_and_two_pages)
{
	cr_assert_eq(prp(0x100000, 0, 0, 4), 0);
	cr_assert_eq(prp(0x100010, 0, 100, 4), 1);
	cr_assert_eq(iov[0].iov_base, mem + 0x10);
	cr_assert_eq(iov[0].iov_len, 100);
	/* Offset PRP1 crossing into PRP2: two pages, not contiguous here. */
	cr_assert_eq(prp(0x100000 + PS - 8, 0x100000 + 5 * PS, 24, 4), 2);
	cr_assert_eq(iov[0].iov_len, 8);
	cr_assert_eq(iov[1].iov_base, mem + 5 * PS);
	cr_assert_eq(iov[1].iov_len, 16);
	/* Contiguous pages merge into one segment. */
	cr_assert_eq(prp(0x100000, 0x100000 + PS, 2 * PS, 4), 1);
	cr_assert_eq(iov[0].iov_len, 2 * PS);
}

/* Write a list of page entries at list page index lp. */
static void list_at(unsigned lp, unsigned n, const unsigned *pages)
{
	uint64_t *l = (uint64_t *)(mem + lp * PS);
	unsigned i;

	for (i = 0; i < n; i++)
		l[i] = 0x100000 + (uint64_t)pages[i] * PS;
}

Test(dma, prp_list)
{
	unsigned pages[] = { 10, 12, 14 };

	list_at(1, 3, pages);
	cr_assert_eq(prp(0x100000 + 8 * PS + 512, 0x100000 + PS, 3 * PS + 100, 8), 4);
	cr_assert_eq(iov[0].iov_base, mem + 8 * PS + 512);
	cr_assert_eq(iov[0].iov_len, PS - 512);
	cr_assert_eq(iov[1].iov_base, mem + 10 * PS);
	cr_assert_eq(iov[3].iov_base, mem + 14 * PS);
	cr_assert_eq(iov[3].iov_len, 612);
}

Test(dma, prp_list_with_offset_pointer)
{
	uint64_t *l = (uint64_t *)(mem + 2 * PS + PS - 16);

	/* Two entries fit before the list page's end. */
	l[0] = 0x100000 + 20 * PS;
	l[1] = 0x100000 + 30 * PS;
	cr_assert_eq(prp(0x100000, 0x100000 + 3 * PS - 16, 3 * PS, 8), 3);
	cr_assert_eq(iov[2].iov_base, mem + 30 * PS);
}

Test(dma, prp_chained_list)
{
	uint64_t *l = (uint64_t *)(mem + 2 * PS);
	uint64_t *l2 = (uint64_t *)(mem + 3 * PS);

	/* List pointer 8 bytes before page end: one slot = chain pointer. */
	l[511] = 0x100000 + 3 * PS;
	l2[0] = 0x100000 + 40 * PS;
	l2[1] = 0x100000 + 42 * PS;
	cr_assert_eq(prp(0x100000, 0x100000 + 2 * PS + 511 * 8, 3 * PS, 8), 3);
	cr_assert_eq(iov[1].iov_base, mem + 40 * PS);
	cr_assert_eq(iov[2].iov_base, mem + 42 * PS);
}

Test(dma, prp_illegal)
{
	uint64_t *l = (uint64_t *)(mem + PS);
	uint8_t *small = malloc(PS + 100);
	uint8_t *al = (uint8_t *)(((uintptr_t)small + PS - 1) & ~(uintptr_t)(PS - 1));

	/* PRP1 not dword aligned. */
	cr_assert_eq(prp(0x100002, 0, 8, 4), ERR(NKV_SC_PRP_OFFSET_INVALID));
	/* PRP2 as data pointer with an offset. */
	cr_assert_eq(prp(0x100000, 0x100000 + PS + 8, 2 * PS, 4),
		     ERR(NKV_SC_PRP_OFFSET_INVALID));
	/* List pointer not dword aligned. */
	cr_assert_eq(prp(0x100000, 0x100000 + PS + 2, 3 * PS, 4),
		     ERR(NKV_SC_PRP_OFFSET_INVALID));
	/* List pointer with room for no entry. */
	cr_assert_eq(prp(0x100000, 0x100000 + 2 * PS - 4, 3 * PS, 4),
		     ERR(NKV_SC_PRP_OFFSET_INVALID));
	/* List entry misaligned. */
	l[0] = 0x100000 + 5 * PS;
	l[1] = 0x100000 + 6 * PS + 4;
	cr_assert_eq(prp(0x100000, 0x100000 + PS, 3 * PS, 4),
		     ERR(NKV_SC_PRP_OFFSET_INVALID));
	/* Entry outside registered memory. */
	l[1] = 0x900000;
	cr_assert_eq(prp(0x100000, 0x100000 + PS, 3 * PS, 4),
		     ERR(NKV_SC_DATA_XFER_ERROR));
	/* Entry running past a region's end. */
	l[1] = 0x100000 + 64 * PS;
	cr_assert_eq(prp(0x100000, 0x100000 + PS, 3 * PS, 4),
		     ERR(NKV_SC_DATA_XFER_ERROR));
	/* List pointer outside registered memory. */
	cr_assert_eq(prp(0x100000, 0x800000, 3 * PS, 4), ERR(NKV_SC_DATA_XFER_ERROR));
	/* PRP1 outside; PRP1 region too short for its part. */
	cr_assert_eq(prp(0x10, 0, 8, 4), ERR(NKV_SC_DATA_XFER_ERROR));
	cr_assert_eq(nkv_dma_map(dma, 0x7000000, 100, al, NKV_DMA_WRITE), 0);
	cr_assert_eq(prp(0x7000000, 0, 101, 4), ERR(NKV_SC_DATA_XFER_ERROR));
	cr_assert_eq(prp(0x7000000, 0, 100, 4), 1);
	/* Chain pointer misaligned. */
	l = (uint64_t *)(mem + 2 * PS);
	l[511] = 0x100000 + 3 * PS + 8;
	cr_assert_eq(prp(0x100000, 0x100000 + 2 * PS + 511 * 8, 3 * PS, 8),
		     ERR(NKV_SC_PRP_OFFSET_INVALID));
	/* More segments than the caller allows. */
	l = (uint64_t *)(mem + PS);
	l[0] = 0x100000 + 5 * PS;
	l[1] = 0x100000 + 7 * PS;
	cr_assert_eq(prp(0x100000, 0x100000 + PS, 3 * PS, 2), ERR(NKV_SC_INVALID_FIELD));
	/* Write-only region refused for a read. */
	cr_assert_null(nkv_dma_ptr(dma, 0x7000000, 4, NKV_DMA_READ));
	nkv_dma_unmap(dma, 0x7000000, 100);
	free(small);
}

Test(dma, prp_cyclic_chain_terminates)
{
	uint64_t *l = (uint64_t *)(mem + 2 * PS);
	unsigned i;

	/* A list page whose chain entry points to itself: the walk ends when
	 * the data does. 1 MiB = 256 pages, all the same 510 data pages. */
	for (i = 0; i < 511; i++)
		l[i] = 0x100000 + 10 * PS;
	l[511] = 0x100000 + 2 * PS;
	cr_assert_eq(prp(0x100000, 0x100000 + 2 * PS, 600 * PS, 300),
		     ERR(NKV_SC_INVALID_FIELD));
	cr_assert_eq(prp(0x100000, 0x100000 + 2 * PS, 200 * PS, 300), 200);
}

/* Pages in reverse order never merge: a walk that outgrows the caller's
 * array moves to a heap array, grows it, and keeps every segment; the
 * bound still holds. */
Test(dma, prp_segments_grow_on_the_heap)
{
	uint64_t *l = (uint64_t *)(mem + 2 * PS);
	struct iovec small[2];
	struct nkv_dma_segs s = { small, 2, 300, 0 };
	int i, n;

	for (i = 0; i < 40; i++)
		l[i] = 0x100000 + (uint64_t)(50 - i) * PS;
	n = nkv_dma_prp_to_iov(dma, 0x100000 + 60 * PS, 0x100000 + 2 * PS, 41 * PS, PS,
			       NKV_DMA_WRITE, &s, NULL);
	cr_assert_eq(n, 41);
	cr_assert_eq(s.heap, 1);
	cr_assert_neq(s.iov, small);
	cr_assert_geq(s.cap, 41);
	cr_expect_eq(s.iov[0].iov_base, mem + 60 * PS, "the first segment moved over");
	for (i = 0; i < 40; i++) {
		cr_expect_eq(s.iov[i + 1].iov_base, mem + (50 - i) * PS, "segment %d", i + 1);
		cr_expect_eq(s.iov[i + 1].iov_len, PS);
	}
	free(s.iov);
	s = (struct nkv_dma_segs){ small, 2, 10, 0 };
	cr_expect_eq(nkv_dma_prp_to_iov(dma, 0x100000 + 60 * PS, 0x100000 + 2 * PS, 41 * PS, PS,
					NKV_DMA_WRITE, &s, NULL), ERR(NKV_SC_INVALID_FIELD));
	cr_expect_eq(s.cap, 10, "grown up to the bound, no further");
	if (s.heap)
		free(s.iov);
}

/* A command's segments are stable only when every one of them lies in a
 * region registered NKV_DMA_STABLE. */
Test(dma, stable_only_when_every_segment_is)
{
	uint8_t *s = aligned_alloc(PS, 4 * PS);
	int st = -1;

	cr_assert_eq(nkv_dma_map(dma, 0x200000, 4 * PS, s,
				 NKV_DMA_READ | NKV_DMA_WRITE | NKV_DMA_STABLE), 0);
	cr_expect_eq(prp_st(0x200000, 0x201000, 2 * PS, 8, &st), 1);
	cr_expect_eq(st, 1);
	cr_expect_eq(prp_st(0x100000, 0x201000, 2 * PS, 8, &st), 2);
	cr_expect_eq(st, 0, "one segment in an unstable region");
	cr_expect_eq(prp_st(0x201000, 0x100000, 2 * PS, 8, &st), 2);
	cr_expect_eq(st, 0);
	cr_expect_lt(prp_st(0x300000, 0, 64, 8, &st), 0);
	cr_expect_eq(st, 0, "an error is never stable");
	free(s);
}

/* A region reachable only by messages: data segments resolve to its
 * shadow (and map back to their IOVA), queues and PRP lists never. */
Test(dma, message_only_region)
{
	uint8_t *sh = aligned_alloc(PS, 8 * PS);
	uint64_t iova = 0, run = 0;
	uint64_t *l = (uint64_t *)sh;

	cr_assert(!nkv_dma_has_msg(dma));
	cr_assert_eq(nkv_dma_map(dma, 0x900000, 8 * PS, sh,
				 NKV_DMA_READ | NKV_DMA_WRITE | NKV_DMA_MSG), 0);
	cr_assert(nkv_dma_has_msg(dma));
	cr_assert_null(nkv_dma_ptr(dma, 0x900000, 64, NKV_DMA_READ));
	cr_assert_eq(nkv_dma_ptr(dma, 0x900000, 64, 0), sh);
	cr_assert_eq(prp(0x900000 + PS, 0x900000 + 2 * PS, 2 * PS, 8), 1);
	cr_assert_eq(iov[0].iov_base, sh + PS);
	cr_assert_eq(nkv_dma_msg_range(dma, sh + PS + 8, 2 * PS, &iova, &run), 1);
	cr_assert_eq(iova, 0x900000 + PS + 8);
	cr_assert_eq(run, 2 * PS);
	cr_assert_eq(nkv_dma_msg_range(dma, mem + 5, 64 * PS, &iova, &run), 0);
	cr_assert_eq(run, 64 * PS - 5);
	cr_assert_eq(nkv_dma_msg_range(dma, &iova, 1, &iova, &run), -ENOENT);
	/* A PRP list in the message-only region: not read in place. */
	l[0] = 0x100000 + 3 * PS;
	l[1] = 0x100000 + 4 * PS;
	cr_assert_eq(prp(0x100000, 0x900000, 3 * PS, 8), ERR(NKV_SC_DATA_XFER_ERROR));
	cr_assert_eq(nkv_dma_unmap(dma, 0x900000, 8 * PS), 0);
	cr_assert(!nkv_dma_has_msg(dma));
	free(sh);
}
