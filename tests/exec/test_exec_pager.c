/* SPDX-License-Identifier: MIT */
/*
 * exec/pager.c on its own: a value read in ranges through a backend's
 * read_range, here a small in-memory store that counts its reads, can
 * change the value between two of them, and can say "not in ranges"
 * (rados' volatile tier). A small value comes whole with the first
 * read; a slice reads its pages only; a sequential reader's readahead
 * doubles; a changed value is -ESTALE; a missing key its 87h.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "target/core/backend.h"
#include "target/exec/exec.h"

struct fake {
	struct nkv_be be;
	uint8_t *val;
	uint64_t len;
	uint64_t ver;
	int reads;
	int change_at;		/* the value changes before this read (0: never) */
	int tier;		/* answer -EOPNOTSUPP */
	int absent;		/* answer 87h */
};

static int fake_read_range(struct nkv_be *be, const uint8_t *key, uint32_t klen, uint64_t off,
			   uint64_t len, void *dst, uint64_t *got, uint64_t *size,
			   uint64_t *version)
{
	struct fake *f = (struct fake *)be;

	(void)key;
	(void)klen;
	*got = 0;
	if (f->tier)
		return -EOPNOTSUPP;
	if (f->absent)
		return NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS);
	if (++f->reads == f->change_at)
		f->ver++;
	if (*version && *version != f->ver)
		return -ESTALE;
	*version = f->ver;
	*size = f->len;
	if (off < f->len) {
		*got = len < f->len - off ? len : f->len - off;
		memcpy(dst, f->val + off, *got);
	}
	return 0;
}

static const struct nkv_be_ops fake_ops = { .name = "fake", .read_range = fake_read_range };
static struct fake F;
static struct nkv_exec_buf B;
static struct nkv_exec_pager P;

static void value(uint64_t len)
{
	uint64_t i;

	memset(&F, 0, sizeof(F));
	F.be.ops = &fake_ops;
	F.ver = 7;
	F.len = len;
	F.val = malloc(len);
	cr_assert_not_null(F.val);
	for (i = 0; i < len; i++)
		F.val[i] = (uint8_t)(i * 2654435761u >> 11);
}

static void fini(void)
{
	nkv_exec_pager_close(&P);
	free(F.val);
	F.val = NULL;
	free(B.p);
	memset(&B, 0, sizeof(B));
}

static int open_(void)
{
	return nkv_exec_pager_open(&P, &F.be, (const uint8_t *)"k", 1, &B);
}

TestSuite(exec_pager, .fini = fini);

Test(exec_pager, small_value_whole_with_the_first_read)
{
	value(100 << 10);
	cr_assert_eq(open_(), 0);
	cr_assert_eq(P.whole, 1);
	cr_assert_eq(P.len, 100 << 10);
	cr_assert_eq(F.reads, 1);
	cr_assert_eq(memcmp(B.p, F.val, F.len), 0);
	cr_assert_eq(nkv_exec_pager_fetch(&P, 1000, 5000), 0);
	cr_assert_eq(F.reads, 1, "a whole value is never read again");
}

Test(exec_pager, a_slice_reads_its_pages_only)
{
	uint64_t off = (3u << 20) + 1000;

	value(4u << 20);
	cr_assert_eq(open_(), 0);
	cr_assert_eq(P.whole, 0);
	cr_assert_eq(P.version, 7);
	cr_assert_eq(nkv_exec_pager_fetch(&P, off, 16 << 10), 0);
	cr_assert_eq(memcmp(B.p + off, F.val + off, 16 << 10), 0);
	cr_assert_eq(memcmp(B.p, F.val, 256 << 10), 0, "the first read's bytes kept");
	cr_assert_eq(F.reads, 2);
	/* 16 KiB from byte 1000 of a page: one 64 KiB page. */
	cr_assert_eq(P.bytes, (256u << 10) + (64u << 10));
	cr_assert_eq(nkv_exec_pager_fetch(&P, off + 100, 1000), 0);
	cr_assert_eq(F.reads, 2, "pages that came are not read again");
	/* The last bytes: a range past the end is cut to it. */
	cr_assert_eq(nkv_exec_pager_fetch(&P, F.len - 10, 100), 0);
	cr_assert_eq(memcmp(B.p + F.len - 10, F.val + F.len - 10, 10), 0);
	cr_assert_eq(F.reads, 3);
}

Test(exec_pager, a_sequential_reader_reads_ahead)
{
	uint64_t off;

	value(32u << 20);
	cr_assert_eq(open_(), 0);
	for (off = 0; off < F.len; off += 4096)
		cr_assert_eq(nkv_exec_pager_fetch(&P, off, 4096), 0, "at %lu", (unsigned long)off);
	cr_assert_eq(memcmp(B.p, F.val, F.len), 0);
	cr_assert_eq(P.bytes, F.len, "every byte read once");
	/* 256 KiB, then 256K, 512K, 1M, ... 8M each: 7 or 8 reads, not 500. */
	cr_assert_leq(F.reads, 9, "%d reads", F.reads);
}

Test(exec_pager, ranges_a_layer_apart_read_no_more)
{
	uint64_t l;

	/* A TP rank's 16 KiB of each 128 KiB layer: one page per layer
	 * past the first read, no readahead. */
	value(4u << 20);
	cr_assert_eq(open_(), 0);
	for (l = 0; l < 32; l++)
		cr_assert_eq(nkv_exec_pager_fetch(&P, l * (128u << 10) + (48u << 10), 16u << 10), 0);
	cr_assert_eq(P.bytes, (256u << 10) + 30 * (64u << 10));
	cr_assert_eq(F.reads, 31);
	for (l = 0; l < 32; l++)
		cr_assert_eq(memcmp(B.p + l * (128u << 10) + (48u << 10),
				    F.val + l * (128u << 10) + (48u << 10), 16u << 10), 0);
}

/* One byte every 4 KiB (a sampler): every page touched, so read ahead. */
Test(exec_pager, a_sampler_reads_ahead)
{
	uint64_t off;

	value(8u << 20);
	cr_assert_eq(open_(), 0);
	for (off = 0; off < F.len; off += 4096)
		cr_assert_eq(nkv_exec_pager_fetch(&P, off, 1), 0);
	cr_assert_eq(memcmp(B.p, F.val, F.len), 0);
	cr_assert_leq(F.reads, 7, "%d reads", F.reads);
}

Test(exec_pager, a_changed_value_is_stale)
{
	value(2u << 20);
	F.change_at = 3;
	cr_assert_eq(open_(), 0);
	cr_assert_eq(nkv_exec_pager_fetch(&P, 1u << 20, 10), 0);
	cr_assert_eq(nkv_exec_pager_fetch(&P, 1500u << 10, 10), -ESTALE);
}

Test(exec_pager, a_value_shorter_than_first_said_is_stale)
{
	value(2u << 20);
	cr_assert_eq(open_(), 0);
	F.len = 1u << 20;	/* the same version, fewer bytes: never trusted */
	cr_assert_eq(nkv_exec_pager_fetch(&P, (1u << 20) + 5, 10), -ESTALE);
}

Test(exec_pager, not_in_ranges_and_absent_said)
{
	value(1u << 20);
	F.tier = 1;
	cr_assert_eq(open_(), -EOPNOTSUPP);
	nkv_exec_pager_close(&P);
	F.tier = 0;
	F.absent = 1;
	cr_assert_eq(open_(), NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS));
}
