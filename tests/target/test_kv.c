/* SPDX-License-Identifier: MIT */
/* KV commands (and NVM Read/Write) through I/O queues. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "tgt_host.h"

static struct h H;

#define SC(sc) NKV_STATUS(NKV_SCT_GENERIC, sc)

static void setup(void)
{
	h_init(&H, NULL, NULL);
	cr_assert_eq(h_enable(&H, 16), NKV_CSTS_RDY);
	cr_assert_eq(h_create_qpair(&H, 1, 64), 0);
}

static void teardown(void)
{
	h_fini(&H);
}

TestSuite(kv, .init = setup, .fini = teardown, .timeout = 30);

Test(kv, store_retrieve_overwrite)
{
	char buf[64];
	uint32_t dw0;

	cr_assert_eq(h_store(&H, 1, "gpukey01", 8, "hello", 5, 0), 0);
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(h_retrieve(&H, 1, "gpukey01", 8, buf, 64, &dw0), 0);
	cr_assert_eq(dw0, 5);
	cr_assert_str_eq(buf, "hello");
	cr_assert_eq(h_store(&H, 1, "gpukey01", 8, "bye", 3, 0), 0);
	cr_assert_eq(h_retrieve(&H, 1, "gpukey01", 8, buf, 64, &dw0), 0);
	cr_assert_eq(dw0, 3);
	cr_assert_eq(memcmp(buf, "bye", 3), 0);
	cr_assert_eq(h_retrieve(&H, 1, "gpukey0", 7, buf, 64, &dw0),
		     SC(NKV_SC_KV_KEY_NOT_EXISTS), "a prefix is another key");
	cr_assert_eq(h_retrieve(&H, 1, "gpukey01\0", 9, buf, 64, &dw0),
		     SC(NKV_SC_KV_KEY_NOT_EXISTS), "length is part of the key");
}

Test(kv, store_options)
{
	cr_assert_eq(h_store(&H, 1, "k", 1, "v", 1, NKV_STORE_MUST_EXIST),
		     SC(NKV_SC_KV_KEY_NOT_EXISTS));
	cr_assert_eq(h_store(&H, 1, "k", 1, "v", 1, NKV_STORE_MUST_NOT_EXIST), 0);
	cr_assert_eq(h_store(&H, 1, "k", 1, "w", 1, NKV_STORE_MUST_NOT_EXIST),
		     SC(NKV_SC_KV_KEY_EXISTS));
	cr_assert_eq(h_store(&H, 1, "k", 1, "w", 1, NKV_STORE_MUST_EXIST), 0);
	cr_assert_eq(h_store(&H, 1, "k", 1, "x", 1,
			     NKV_STORE_MUST_EXIST | NKV_STORE_MUST_NOT_EXIST),
		     SC(NKV_SC_INVALID_FIELD));
	cr_assert_eq(h_store(&H, 1, "k", 1, "y", 1, NKV_STORE_NO_COMPRESS), 0);
}

Test(kv, retrieve_truncates)
{
	uint8_t val[1000], buf[1000];
	uint32_t dw0, i;

	for (i = 0; i < sizeof(val); i++)
		val[i] = (uint8_t)(i * 7);
	cr_assert_eq(h_store(&H, 1, "big", 3, val, 1000, 0), 0);
	memset(buf, 0xee, sizeof(buf));
	cr_assert_eq(h_retrieve(&H, 1, "big", 3, buf, 100, &dw0), 0);
	cr_assert_eq(dw0, 1000, "the full stored size");
	cr_assert_eq(memcmp(buf, val, 100), 0);
	/* A buffer of 0 bytes asks for the size (test_kv_opts.c). */
	cr_assert_eq(h_retrieve(&H, 1, "big", 3, NULL, 0, &dw0), 0);
	cr_assert_eq(dw0, 1000);
}

Test(kv, delete_exist)
{
	struct nkv_sqe s;

	cr_assert_eq(h_store(&H, 1, "d", 1, "1", 1, 0), 0);
	h_kv(&s, NKV_KV_EXIST, 1, "d", 1, 0, 0);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	h_kv(&s, NKV_KV_DELETE, 1, "d", 1, 0, 0);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	h_kv(&s, NKV_KV_DELETE, 1, "d", 1, 0, 0);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_KV_KEY_NOT_EXISTS));
	h_kv(&s, NKV_KV_EXIST, 1, "d", 1, 0, 0);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_KV_KEY_NOT_EXISTS));
}

Test(kv, key_and_value_sizes)
{
	static const uint8_t ops[] = { NKV_KV_RETRIEVE, NKV_KV_DELETE, NKV_KV_EXIST };
	uint8_t *big = calloc(1, (1 << 20) + 1);
	struct nkv_sqe s;
	unsigned i;

	/* KL 0: the key is at the head of the data; a head claiming 0 bytes. */
	cr_assert_eq(h_store(&H, 1, "k", 0, "\0\0v", 3, 0), SC(NKV_SC_KV_INVALID_KEY_SIZE));
	cr_assert_eq(h_store(&H, 1, "0123456789abcdefg", 17, "v", 1, 0),
		     SC(NKV_SC_KV_INVALID_KEY_SIZE));
	cr_assert_eq(h_store(&H, 1, "0123456789abcdef", 16, "v", 1, 0), 0);
	for (i = 0; i < sizeof(ops); i++) {
		h_kv(&s, ops[i], 1, "k", 0, 16, 0);
		s.prp1 = h_alloc(&H, 4096);	/* zeroed: a head claiming 0 */
		cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_KV_INVALID_KEY_SIZE));
		h_kv(&s, ops[i], 1, "0123456789abcdefg", 200, 16, 0);
		s.prp1 = H_IOVA;
		cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_KV_INVALID_KEY_SIZE));
	}
	h_kv(&s, NKV_KV_LIST, 1, "0123456789abcdefg", 17, 64, 0);
	s.prp1 = H_IOVA;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_KV_INVALID_KEY_SIZE));
	cr_assert_eq(h_store(&H, 1, "k", 1, "v", 0, 0), SC(NKV_SC_KV_INVALID_VALUE_SIZE));
	cr_assert_eq(h_store(&H, 1, "k", 1, big, (1 << 20) + 1, 0),
		     SC(NKV_SC_KV_INVALID_VALUE_SIZE));
	free(big);
}

Test(kv, unused_key_bytes_ignored)
{
	struct nkv_sqe s;
	uint64_t iova = h_alloc(&H, 16);

	memcpy(h_ptr(&H, iova), "val", 3);
	h_kv(&s, NKV_KV_STORE, 1, "abcdefgh", 8, 3, 0);
	s.cdw11 = 3;		/* key "abc", garbage after it */
	s.cdw15 = 0xdeadbeef;
	s.prp1 = iova;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	h_kv(&s, NKV_KV_EXIST, 1, "abc", 3, 0, 0);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
}

Test(kv, namespaces_and_opcodes)
{
	struct nkv_sqe s;

	h_kv(&s, NKV_KV_EXIST, 0, "k", 1, 0, 0);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_INVALID_NS));
	h_kv(&s, NKV_KV_EXIST, 5, "k", 1, 0, 0);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_INVALID_NS));
	h_kv(&s, NKV_KV_EXIST, 0xffffffff, "k", 1, 0, 0);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_INVALID_NS));
	h_kv(&s, NKV_NVM_FLUSH, 1, "k", 1, 0, 0);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_INVALID_OPCODE));
	h_kv(&s, 0x7e, 1, "k", 1, 0, 0);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_INVALID_OPCODE));
	h_kv(&s, NKV_KV_EXIST, 2, "k", 1, 0, 0);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_INVALID_OPCODE),
		     "KV opcode on the NVM namespace");
	h_kv(&s, NKV_KV_EXIST, 1, "k", 1, 0, 0);
	s.cdw0 |= 1u << 15;	/* SGL */
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_INVALID_FIELD));
}

/* The shortest value whose key costs more than room. */
static uint32_t kv_over(uint64_t room)
{
	uint32_t len = 0;

	while (nkv_be_mem_key_cost(len) <= room)
		len++;
	return len;
}

/* Capacity counts each key's real cost (nkv_be_mem_key_cost: value,
 * allocation, index), not only its value bytes; max_keys on its own. */
Test(kv, capacity_bytes_and_keys)
{
	uint64_t one = nkv_be_mem_key_cost(1);
	struct nkv_be_conf kv = { sizeof(kv), .max_keys = 3 };
	struct h h2;
	struct nkv_sqe s;
	static uint8_t v[4096];

	kv.capacity = nkv_be_mem_key_cost(60) + nkv_be_mem_key_cost(40) + 2 * one;
	h_init(&h2, NULL, &kv);
	cr_assert_eq(h_enable(&h2, 16), NKV_CSTS_RDY);
	cr_assert_eq(h_create_qpair(&h2, 1, 16), 0);
	cr_assert_eq(h_store(&h2, 1, "a", 1, v, 60, 0), 0);
	cr_assert_eq(h_store(&h2, 1, "b", 1, v, kv_over(kv.capacity - nkv_be_mem_key_cost(60)), 0),
		     SC(NKV_SC_CAPACITY_EXCEEDED));
	cr_assert_eq(h_store(&h2, 1, "b", 1, v, 40, 0), 0);
	cr_assert_eq(h_store(&h2, 1, "a", 1, v, kv_over(kv.capacity - nkv_be_mem_key_cost(40)), 0),
		     SC(NKV_SC_CAPACITY_EXCEEDED));
	cr_assert_eq(h_store(&h2, 1, "a", 1, v, 10, 0), 0, "replacing frees the old");
	cr_assert_eq(h_store(&h2, 1, "c", 1, v, 1, 0), 0);
	cr_assert_eq(h_store(&h2, 1, "d", 1, v, 1, 0), SC(NKV_SC_CAPACITY_EXCEEDED), "max_keys");
	h_kv(&s, NKV_KV_DELETE, 1, "c", 1, 0, 0);
	cr_assert_eq(h_cmd(&h2, 1, &s, NULL), 0);
	cr_assert_eq(h_store(&h2, 1, "d", 1, v, 1, 0), 0);
	h_fini(&h2);
}

/* PRPs for a value at iova with the PRP list starting list_room entries
 * before a page end, so lists of more entries chain. */
static void prp_chained(struct nkv_sqe *s, uint64_t iova, uint64_t len,
			unsigned list_room)
{
	uint64_t left = len - (4096 - (iova & 4095)), page = (iova | 4095) + 1;
	uint64_t lp = h_alloc(&H, 8192) + 4096 - list_room * 8;
	uint64_t *l = h_ptr(&H, lp);
	unsigned room = list_room;

	s->prp1 = iova;
	s->prp2 = lp;
	while (left) {
		if (room == 1 && left > 4096) {
			uint64_t next = h_alloc(&H, 4096);

			*l = next;
			l = h_ptr(&H, next);
			room = 512;
			continue;
		}
		*l++ = page;
		room--;
		page += 4096;
		left = left > 4096 ? left - 4096 : 0;
	}
}

Test(kv, one_mib_values_prp_lists_and_chains)
{
	uint32_t len = 1 << 20, dw0, i;
	uint64_t src = h_alloc(&H, len + 4096) + 512;	/* offset PRP1 */
	uint64_t dst = h_alloc(&H, len + 4096) + 1024;
	uint8_t *sp = h_ptr(&H, src), *dp = h_ptr(&H, dst);
	struct nkv_sqe s;

	for (i = 0; i < len; i++)
		sp[i] = (uint8_t)(i ^ (i >> 9));
	h_kv(&s, NKV_KV_STORE, 1, "mib", 3, len, 0);
	prp_chained(&s, src, len, 7);	/* four list pages */
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	h_kv(&s, NKV_KV_RETRIEVE, 1, "mib", 3, len, 0);
	h_prp(&H, &s, dst, len);	/* one list page */
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	cr_assert_eq(memcmp(sp, dp, len), 0);
	memset(dp, 0, len);
	h_kv(&s, NKV_KV_RETRIEVE, 1, "mib", 3, len, 0);
	prp_chained(&s, dst, len, 2);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	cr_assert_eq(memcmp(sp, dp, len), 0);
	/* Truncated Retrieve of a big value with a chained list. */
	memset(dp, 0, len);
	h_kv(&s, NKV_KV_RETRIEVE, 1, "mib", 3, 700000, 0);
	prp_chained(&s, dst, 700000, 3);
	{
		struct nkv_cqe e;

		cr_assert_eq(h_cmd(&H, 1, &s, &e), 0);
		dw0 = e.dw0;
	}
	cr_assert_eq(dw0, len);
	cr_assert_eq(memcmp(sp, dp, 700000), 0);
	cr_assert_eq(dp[700000], 0, "nothing past the host buffer");
	/* Over MDTS on a Retrieve buffer: the mem backend's 1 MiB values and
	 * a long key's head take MDTS 9 (2 MiB). */
	cr_assert_eq(nkv_subsys_mdts(H.ss), 9);
	h_kv(&s, NKV_KV_RETRIEVE, 1, "mib", 3, (2u << 20) + 4096, 0);
	h_prp(&H, &s, dst, len);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_INVALID_FIELD));
}

/* PRPs for npages pages of the buffer at base, value page k in buffer
 * page npages - 1 - k: no two are contiguous, so each is a segment of its
 * own (16,385 of them for a 64 MiB value). */
static void prp_reversed(struct h *h, struct nkv_sqe *s, uint64_t base, uint32_t npages)
{
	uint64_t *l = NULL;
	uint32_t k, room = 0;

	s->prp1 = base + (uint64_t)(npages - 1) * 4096;
	s->prp2 = npages == 2 ? base : 0;
	if (npages <= 2)
		return;
	for (k = 1; k < npages; k++) {
		if (!room || (room == 1 && k < npages - 1)) {
			uint64_t lp = h_alloc(h, 4096);

			if (l)
				*l = lp;	/* chain */
			else
				s->prp2 = lp;
			l = h_ptr(h, lp);
			room = 512;
		}
		*l++ = base + (uint64_t)(npages - 1 - k) * 4096;
		room--;
	}
}

/* Value page k of len bytes at contiguous dst against buffer page
 * npages - 1 - k of src. */
static void check_reversed(const uint8_t *src, const uint8_t *dst, uint32_t len)
{
	uint32_t npages = (len + 4095) / 4096, k;

	for (k = 0; k < npages; k++) {
		uint32_t n = len - k * 4096 < 4096 ? len - k * 4096 : 4096;

		cr_assert_eq(memcmp(dst + (size_t)k * 4096, src + (size_t)(npages - 1 - k) * 4096, n),
			     0, "%u bytes: value page %u", len, k);
	}
}

/*
 * Values up to 16 MiB through a controller whose MDTS follows them (a
 * 16 MiB max value and a long key's head: MDTS 13, 32 MiB), reported by
 * Identify; each value's pages scattered in reverse order both ways, so
 * the core holds one segment per page (on the heap past its own few),
 * byte for byte; a value over the max value answered 85h.
 */
Test(kv, big_values_scattered_pages)
{
	static const uint32_t sizes[] = { 1, 4096, 4097, (2u << 20) + 4097, 16u << 20 };
	struct nkv_be_conf kv = { sizeof(kv), .capacity = 64ull << 20, .max_value = 16u << 20 };
	uint8_t id[4096];
	struct nkv_sqe s;
	struct nkv_cqe e;
	uint64_t src, dst, mark;
	uint8_t *sp, *dp;
	struct h h2;
	size_t i, j;

	h_init(&h2, NULL, &kv);
	cr_assert_eq(h_enable(&h2, 16), NKV_CSTS_RDY);
	cr_assert_eq(h_create_qpair(&h2, 1, 16), 0);
	cr_assert_eq(h_identify(&h2, NKV_CNS_CTRL, 0, 0, id), 0);
	cr_assert_eq(((struct nkv_id_ctrl *)id)->mdts, 13);
	cr_assert_eq(h_identify(&h2, NKV_CNS_IOCS_NS, 1, NKV_CSI_KV, id), 0);
	cr_assert_eq(((struct nkv_id_ns_kv *)id)->kvf[0].mvl, 16u << 20);
	src = h_alloc(&h2, 16u << 20);
	dst = h_alloc(&h2, 16u << 20);
	sp = h_ptr(&h2, src);
	dp = h_ptr(&h2, dst);
	mark = h2.bump;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t len = sizes[i], np = (len + 4095) / 4096;

		for (j = 0; j < (size_t)np * 4096; j++)
			sp[j] = (uint8_t)(j * 7 + i + (j >> 12));
		h_kv(&s, NKV_KV_STORE, 1, "big", 3, len, 0);
		prp_reversed(&h2, &s, src, np);
		cr_assert_eq(h_cmd(&h2, 1, &s, NULL), 0, "store %u", len);
		memset(dp, 0, (size_t)np * 4096);
		h_kv(&s, NKV_KV_RETRIEVE, 1, "big", 3, len, 0);
		h_prp(&h2, &s, dst, len);
		cr_assert_eq(h_cmd(&h2, 1, &s, &e), 0);
		cr_assert_eq(e.dw0, len);
		check_reversed(sp, dp, len);
		memset(dp, 0, (size_t)np * 4096);
		h_kv(&s, NKV_KV_RETRIEVE, 1, "big", 3, len, 0);
		prp_reversed(&h2, &s, dst, np);
		cr_assert_eq(h_cmd(&h2, 1, &s, NULL), 0);
		for (j = 0; j < np; j++) {
			uint32_t n = j == 0 && len % 4096 ? len % 4096 : 4096;

			cr_assert_eq(memcmp(dp + j * 4096, sp + j * 4096, n), 0,
				     "%u bytes, both scattered: page %zu", len, j);
		}
		h2.bump = mark;	/* the lists' pages, again for the next size */
	}
	h_kv(&s, NKV_KV_STORE, 1, "big", 3, (16u << 20) + 1, 0);
	h_prp(&h2, &s, src, 16u << 20);
	cr_assert_eq(h_cmd(&h2, 1, &s, NULL), SC(NKV_SC_KV_INVALID_VALUE_SIZE),
		     "a value over the max value, within MDTS: 85h");
	h_fini(&h2);
}

/* SPDK's vfio-user default, 128 KiB (MDTS 5), below the namespace's max
 * value: a transfer above it is Invalid Field, whatever the value size
 * allows; up to it every byte moves. */
Test(kv, mdts_below_the_max_value)
{
	struct nkv_tgt_ctrl_opts co = { sizeof(co), .mdts = 5 };
	static uint8_t v[128 << 10], r[128 << 10];
	uint8_t id[4096];
	uint32_t dw0, i;
	struct nkv_sqe s;
	struct h h2;

	h_init(&h2, &co, NULL);
	cr_assert_eq(h_enable(&h2, 16), NKV_CSTS_RDY);
	cr_assert_eq(h_create_qpair(&h2, 1, 16), 0);
	cr_assert_eq(h_identify(&h2, NKV_CNS_CTRL, 0, 0, id), 0);
	cr_assert_eq(((struct nkv_id_ctrl *)id)->mdts, 5);
	for (i = 0; i < sizeof(v); i++)
		v[i] = (uint8_t)(i * 13 + (i >> 8));
	cr_assert_eq(h_store(&h2, 1, "k", 1, v, sizeof(v), 0), 0);
	cr_assert_eq(h_retrieve(&h2, 1, "k", 1, r, sizeof(r), &dw0), 0);
	cr_assert_eq(dw0, sizeof(v));
	cr_assert_eq(memcmp(v, r, sizeof(v)), 0);
	h_kv(&s, NKV_KV_STORE, 1, "k", 1, sizeof(v) + 1, 0);
	h_prp(&h2, &s, h_alloc(&h2, sizeof(v) + 1), sizeof(v) + 1);
	cr_assert_eq(h_cmd(&h2, 1, &s, NULL), SC(NKV_SC_INVALID_FIELD));
	h_kv(&s, NKV_KV_RETRIEVE, 1, "k", 1, sizeof(v) + 1, 0);
	h_prp(&h2, &s, h_alloc(&h2, sizeof(v) + 1), sizeof(v) + 1);
	cr_assert_eq(h_cmd(&h2, 1, &s, NULL), SC(NKV_SC_INVALID_FIELD));
	h_fini(&h2);
}

Test(kv, illegal_prps_refused)
{
	uint64_t buf = h_alloc(&H, 3 * 4096), lp = h_alloc(&H, 4096);
	uint64_t *l = h_ptr(&H, lp);
	struct nkv_sqe s;

	h_kv(&s, NKV_KV_STORE, 1, "p", 1, 100, 0);
	s.prp1 = 0x40000;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_DATA_XFER_ERROR));
	h_kv(&s, NKV_KV_STORE, 1, "p", 1, 100, 0);
	s.prp1 = H_IOVA + H_ARENA - 52;	/* runs past the region */
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_DATA_XFER_ERROR));
	h_kv(&s, NKV_KV_STORE, 1, "p", 1, 100, 0);
	s.prp1 = buf + 1;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_PRP_OFFSET_INVALID));
	h_kv(&s, NKV_KV_RETRIEVE, 1, "p", 1, 8192, 0);
	s.prp1 = buf;
	s.prp2 = buf + 4096 + 512;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_PRP_OFFSET_INVALID));
	l[0] = buf + 4096;
	l[1] = 0x3000;
	h_kv(&s, NKV_KV_RETRIEVE, 1, "p", 1, 3 * 4096, 0);
	s.prp1 = buf;
	s.prp2 = lp;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_DATA_XFER_ERROR));
	l[1] = buf + 8192 + 8;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_PRP_OFFSET_INVALID));
	s.prp2 = lp + 1;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_PRP_OFFSET_INVALID));
	cr_assert_eq(nkv_tgt_ctrl_inflight(H.c), 0);
}

/* Parse a List page; returns the count and appends keys to out. */
static uint32_t parse_list(const uint8_t *p, uint32_t len, uint8_t (*keys)[17],
			   uint32_t *n)
{
	uint32_t count, off = 4, i;

	memcpy(&count, p, 4);
	for (i = 0; i < count; i++) {
		uint16_t kl;

		memcpy(&kl, p + off, 2);
		cr_assert(kl >= 1 && kl <= 16);
		cr_assert_leq(off + nkv_list_entry_size(kl), len);
		keys[*n][0] = (uint8_t)kl;
		memcpy(&keys[*n][1], p + off + 2, kl);
		cr_assert_eq(nkv_list_entry_size(kl) % 4, 0);
		(*n)++;
		off += nkv_list_entry_size(kl);
	}
	return count;
}

static int key_cmp(const void *a, const void *b)
{
	const uint8_t *x = a, *y = b;
	int r = memcmp(x + 1, y + 1, x[0] < y[0] ? x[0] : y[0]);

	return r ? r : x[0] - y[0];
}

Test(kv, list_paging_thousands_of_odd_keys)
{
	enum { N = 3000 };
	static uint8_t want[N][17], got[N + 200][17];
	uint64_t iova = h_alloc(&H, 4096);
	uint32_t n = 0, i, seed = 7, pages = 0;
	uint8_t start[17] = { 0 };
	struct nkv_sqe s;

	for (i = 0; i < N; i++) {
		uint32_t kl = 1 + (i * 5) % 16, j;

		want[i][0] = (uint8_t)kl;
		for (j = 0; j < kl; j++) {
			seed = seed * 1103515245u + 12345u;
			want[i][1 + j] = (uint8_t)(seed >> 16);
		}
		/* Distinct: 1-byte keys are i / 16 (i is a multiple of 16
		 * then); longer keys start with i, big endian. */
		if (kl == 1) {
			want[i][1] = (uint8_t)(i / 16);
		} else {
			want[i][1] = (uint8_t)(i >> 8);
			want[i][2] = (uint8_t)i;
		}
		cr_assert_eq(h_store(&H, 1, &want[i][1], kl, "v", 1, 0), 0);
	}
	qsort(want, N, 17, key_cmp);
	for (i = 1; i < N; i++)
		cr_assert_neq(key_cmp(want[i - 1], want[i]), 0);
	for (;;) {
		uint32_t before = n, c;

		h_kv(&s, NKV_KV_LIST, 1, &start[1], start[0], 203, 0);	/* odd size */
		s.prp1 = iova;
		memset(h_ptr(&H, iova), 0xcc, 4096);
		cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
		c = parse_list(h_ptr(&H, iova), 203, got, &n);
		cr_assert(c >= 1);
		/* Inclusive start: drop the resume key itself. */
		if (pages && !key_cmp(got[before], start)) {
			memmove(got[before], got[before + 1], (n - before - 1) * 17);
			n--;
		}
		pages++;
		cr_assert_lt(pages, 2000, "List must make progress");
		if (c == 1 && pages > 1 && n == before)
			break;	/* only the resume key came back: end */
		memcpy(start, got[n - 1], 17);
		if (n == N) {
			/* one more call returns only the last key */
			continue;
		}
	}
	cr_assert_eq(n, N);
	for (i = 0; i < N; i++)
		cr_assert_eq(key_cmp(want[i], got[i]), 0, "key %u", i);
}

Test(kv, list_start_key_and_small_buffers)
{
	uint64_t iova = h_alloc(&H, 4096);
	uint32_t count, n = 0;
	uint8_t keys[8][17];
	struct nkv_tgt_qstats st0, st1;
	struct nkv_sqe s;
	struct nkv_cqe e;

	cr_assert_eq(h_store(&H, 1, "b", 1, "1", 1, 0), 0);
	cr_assert_eq(h_store(&H, 1, "ba", 2, "1", 1, 0), 0);
	cr_assert_eq(h_store(&H, 1, "c", 1, "1", 1, 0), 0);
	h_kv(&s, NKV_KV_LIST, 1, "b", 1, 4096, 0);
	s.prp1 = iova;
	cr_assert_eq(nkv_tgt_ctrl_stats(H.c, 1, &st0), 0);
	cr_assert_eq(h_cmd(&H, 1, &s, &e), 0);
	count = parse_list(h_ptr(&H, iova), 4096, keys, &n);
	cr_assert_eq(count, 3, "start key included");
	cr_assert_eq(e.dw0, 3, "DW0 is the count of keys returned");
	/* What moved is the payload (header, 4 + 4 + 4 bytes of entries),
	 * not the whole 4 KiB buffer: execution reports what it produced. */
	cr_assert_eq(nkv_tgt_ctrl_stats(H.c, 1, &st1), 0);
	cr_assert_eq(st1.bytes - st0.bytes, 4 + 3 * 4);
	cr_assert_eq(memcmp(&keys[0][1], "b", 1), 0);
	cr_assert_eq(keys[1][0], 2);
	h_kv(&s, NKV_KV_LIST, 1, "b\0", 2, 4096, 0);	/* successor of "b" */
	s.prp1 = iova;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	n = 0;
	cr_assert_eq(parse_list(h_ptr(&H, iova), 4096, keys, &n), 2);
	cr_assert_eq(keys[0][0], 2);
	/* Buffer for the count only: 0 entries; 7 bytes: still 0 (an entry
	 * with a 1-byte key needs 4 more). */
	h_kv(&s, NKV_KV_LIST, 1, "", 0, 4, 0);
	s.prp1 = iova;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	memcpy(&count, h_ptr(&H, iova), 4);
	cr_assert_eq(count, 0);
	h_kv(&s, NKV_KV_LIST, 1, "", 0, 8, 0);
	s.prp1 = iova;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	memcpy(&count, h_ptr(&H, iova), 4);
	cr_assert_eq(count, 1);
	h_kv(&s, NKV_KV_LIST, 1, "", 0, 3, 0);
	s.prp1 = iova;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_KV_INVALID_VALUE_SIZE));
	h_kv(&s, NKV_KV_LIST, 1, "zzz", 3, 64, 0);
	s.prp1 = iova;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	memcpy(&count, h_ptr(&H, iova), 4);
	cr_assert_eq(count, 0, "past the last key");
}

Test(kv, nvm_read_write)
{
	uint64_t w = h_alloc(&H, 8192), r = h_alloc(&H, 8192);
	struct nkv_sqe s = { 0 };
	uint32_t i;

	for (i = 0; i < 4096; i++)
		((uint8_t *)h_ptr(&H, w))[i] = (uint8_t)(i * 3);
	s.cdw0 = NKV_NVM_WRITE;
	s.nsid = 2;
	s.cdw10 = 100;
	s.cdw12 = 7;	/* 8 blocks of 512 */
	s.prp1 = w;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	s.cdw0 = NKV_NVM_READ;
	s.prp1 = r;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	cr_assert_eq(memcmp(h_ptr(&H, w), h_ptr(&H, r), 4096), 0);
	s.cdw10 = 2045;	/* 2045 + 8 > 2048 blocks */
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_LBA_OUT_OF_RANGE));
	s.cdw10 = 0xfffffff8;
	s.cdw11 = 0xffffffff;	/* would wrap */
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_LBA_OUT_OF_RANGE));
	s.cdw10 = 2040;
	s.cdw11 = 0;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0, "the last 8 blocks");
	s.cdw0 = NKV_NVM_FLUSH;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	s.cdw0 = NKV_KV_LIST;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_INVALID_OPCODE));
}

/* ---- keys to 255 bytes (head form) and SGL data pointers ---- */

static const enum h_dp all_dps[] = { H_DP_PRP, H_DP_SGL_DB, H_DP_SGL_SEG, H_DP_SGL_LAST };
static const uint32_t key_lens[] = { 1, 16, 17, 32, 255 };

static void key_of_len(uint8_t *k, uint32_t n, uint32_t salt)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		k[i] = (uint8_t)(i * 131 + salt * 17 + 1);
}

/* One key through every op, stored and read in the forms given. */
static void key_round(const uint8_t *k, uint32_t kl, int wform, int rform, enum h_dp dp)
{
	uint8_t v[700], got[700], list[4096];
	uint32_t dw0, i;

	for (i = 0; i < sizeof(v); i++)
		v[i] = (uint8_t)(i ^ kl ^ (uint32_t)dp);
	cr_assert_eq(h_kvx(&H, 1, NKV_KV_STORE, k, kl, wform, dp, v, sizeof(v), NULL), 0,
		     "store %u form %d dp %d", kl, wform, dp);
	memset(got, 0, sizeof(got));
	cr_assert_eq(h_kvx(&H, 1, NKV_KV_RETRIEVE, k, kl, rform, dp, got, sizeof(got), &dw0), 0,
		     "retrieve %u form %d dp %d", kl, rform, dp);
	cr_assert_eq(dw0, sizeof(v));
	cr_assert_arr_eq(got, v, sizeof(v), "value of a %u-byte key, dp %d", kl, dp);
	/* A short buffer: the first bytes, the true length in DW0. */
	cr_assert_eq(h_kvx(&H, 1, NKV_KV_RETRIEVE, k, kl, rform, dp, got, 10, &dw0), 0);
	cr_assert_eq(dw0, sizeof(v));
	cr_assert_arr_eq(got, v, 10);
	cr_assert_eq(h_kvx(&H, 1, NKV_KV_EXIST, k, kl, rform, dp, NULL, 0, NULL), 0);
	/* List from the key itself: it comes first, whole. */
	memset(list, 0xee, sizeof(list));
	cr_assert_eq(h_kvx(&H, 1, NKV_KV_LIST, k, kl, rform, dp, list, sizeof(list), &dw0), 0,
		     "list from %u form %d dp %d", kl, rform, dp);
	cr_assert_eq(dw0, 1);
	cr_assert_eq(list[4] | list[5] << 8, kl);
	cr_assert_arr_eq(list + 6, k, kl);
	cr_assert_eq(h_kvx(&H, 1, NKV_KV_DELETE, k, kl, wform, dp, NULL, 0, NULL), 0);
	cr_assert_eq(h_kvx(&H, 1, NKV_KV_EXIST, k, kl, rform, dp, NULL, 0, NULL),
		     SC(NKV_SC_KV_KEY_NOT_EXISTS));
	cr_assert_eq(h_kvx(&H, 1, NKV_KV_RETRIEVE, k, kl, rform, dp, got, 8, NULL),
		     SC(NKV_SC_KV_KEY_NOT_EXISTS));
}

/* Every op with keys of 1, 16, 17, 32 and 255 bytes, in both forms
 * where inline can carry the key (and across them: stored inline, read
 * in head form and back), over PRPs and each kind of SGL. */
Test(kv, every_op_every_key_size_every_dptr)
{
	uint8_t k[NKV_KEY_MAX];
	unsigned l, d;

	for (l = 0; l < sizeof(key_lens) / sizeof(key_lens[0]); l++) {
		uint32_t kl = key_lens[l];

		key_of_len(k, kl, l);
		for (d = 0; d < sizeof(all_dps) / sizeof(all_dps[0]); d++) {
			key_round(k, kl, H_KEY_HEAD, H_KEY_HEAD, all_dps[d]);
			if (kl > NKV_KEY_INLINE_MAX)
				continue;
			key_round(k, kl, H_KEY_INLINE, H_KEY_INLINE, all_dps[d]);
			key_round(k, kl, H_KEY_INLINE, H_KEY_HEAD, all_dps[d]);
			key_round(k, kl, H_KEY_HEAD, H_KEY_INLINE, all_dps[d]);
		}
	}
}

/* A 5-byte key in head form is the 5-byte key inline: one object. */
Test(kv, head_form_is_the_same_key)
{
	uint32_t dw0;
	char buf[8];

	cr_assert_eq(h_kvx(&H, 1, NKV_KV_STORE, "hello", 5, H_KEY_HEAD, H_DP_PRP, "v1", 2, NULL), 0);
	cr_assert_eq(h_retrieve(&H, 1, "hello", 5, buf, 8, &dw0), 0);
	cr_assert_eq(dw0, 2);
	cr_assert_eq(memcmp(buf, "v1", 2), 0);
	cr_assert_eq(h_store(&H, 1, "hello", 5, "v22", 3, 0), 0);
	cr_assert_eq(h_kvx(&H, 1, NKV_KV_RETRIEVE, "hello", 5, H_KEY_HEAD, H_DP_SGL_DB, buf, 8,
			   &dw0), 0);
	cr_assert_eq(dw0, 3, "replaced, not a second key");
	{
		uint8_t list[256];

		cr_assert_eq(h_kvx(&H, 1, NKV_KV_LIST, "", 0, H_KEY_INLINE, H_DP_PRP, list,
				   sizeof(list), &dw0), 0);
		cr_assert_eq(dw0, 1, "one key in the namespace");
	}
}

/* Long keys List in key order with their whole bytes, resumable from a
 * long start key in head form. */
Test(kv, list_long_keys_from_a_long_start)
{
	uint8_t k[NKV_KEY_MAX], list[8192];
	uint32_t dw0, off, i;

	memset(k, 'k', sizeof(k));
	for (i = 0; i < 4; i++) {
		k[200] = (uint8_t)('a' + i);
		cr_assert_eq(h_kvx(&H, 1, NKV_KV_STORE, k, 201 + i, H_KEY_HEAD, H_DP_SGL_SEG, "v", 1,
				   NULL), 0);
	}
	k[200] = 'b';	/* start: the second key (201 + 1 bytes) */
	cr_assert_eq(h_kvx(&H, 1, NKV_KV_LIST, k, 202, H_KEY_HEAD, H_DP_SGL_LAST, list,
			   sizeof(list), &dw0), 0);
	cr_assert_eq(dw0, 3);
	for (i = 0, off = 4; i < 3; i++) {
		uint32_t kl = list[off] | list[off + 1] << 8;

		cr_assert_eq(kl, 202 + i);
		cr_assert_eq(list[off + 2 + 200], 'b' + i);
		off += nkv_list_entry_size(kl);
	}
	/* A page too small for the second entry ends after the first. */
	cr_assert_eq(h_kvx(&H, 1, NKV_KV_LIST, k, 202, H_KEY_HEAD, H_DP_PRP, list,
			   4 + nkv_list_entry_size(202) + 100, &dw0), 0);
	cr_assert_eq(dw0, 1);
	/* From the beginning in head form: a head claiming 0. */
	cr_assert_eq(h_kvx(&H, 1, NKV_KV_LIST, k, 0, H_KEY_HEAD, H_DP_PRP, list, sizeof(list),
			   &dw0), 0);
	cr_assert_eq(dw0, 4);
}

/* An SQE whose data (n bytes at a fresh iova, prefilled with p) is one
 * SGL Data Block of dlen bytes. */
static uint64_t sgl_cmd(struct nkv_sqe *s, uint8_t opc, uint32_t cdw10, const void *p,
			uint32_t n, uint32_t dlen)
{
	uint64_t iova = h_alloc(&H, n + 1);

	memcpy(h_ptr(&H, iova), p, n);
	h_kv(s, opc, 1, "", 0, cdw10, 0);
	h_sgl_db(s, iova, dlen);
	return iova;
}

Test(kv, bad_heads_86h)
{
	static const uint8_t ops[] = { NKV_KV_STORE, NKV_KV_RETRIEVE, NKV_KV_EXIST,
				       NKV_KV_DELETE };
	uint8_t head[300] = { 0 };
	struct nkv_sqe s;
	unsigned i;

	for (i = 0; i < sizeof(ops); i++) {
		uint32_t data = ops[i] == NKV_KV_STORE || ops[i] == NKV_KV_RETRIEVE ? 8 : 0;

		/* Claims 0 bytes. */
		sgl_cmd(&s, ops[i], data, head, 2 + data, 2 + data);
		cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_KV_INVALID_KEY_SIZE), "op %x 0", ops[i]);
		/* Claims 256. */
		head[0] = 0;
		head[1] = 1;
		sgl_cmd(&s, ops[i], data, head, 258 + data, 258 + data);
		cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_KV_INVALID_KEY_SIZE), "op %x 256", ops[i]);
		/* Claims 40 in an SGL of 20 bytes: past the data described. */
		head[0] = 40;
		head[1] = 0;
		sgl_cmd(&s, ops[i], data, head, 20, 20);
		cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_KV_INVALID_KEY_SIZE), "op %x past", ops[i]);
		/* A one-byte SGL: not even the length. */
		sgl_cmd(&s, ops[i], data, head, 1, 1);
		cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_KV_INVALID_KEY_SIZE), "op %x 1", ops[i]);
		/* KL 17..255 inline. */
		h_kv(&s, ops[i], 1, "0123456789abcdefg", 17, data, 0);
		h_prp(&H, &s, h_alloc(&H, 64), data);
		cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_KV_INVALID_KEY_SIZE), "op %x KL17", ops[i]);
		h_kv(&s, ops[i], 1, "0123456789abcdefg", 255, data, 0);
		cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_KV_INVALID_KEY_SIZE), "op %x KL255", ops[i]);
	}
	/* A head with a valid length but data short of the value: the SGL's
	 * length is the fault (0Fh), not the key. */
	head[0] = 3;
	sgl_cmd(&s, NKV_KV_STORE, 100, head, 5 + 50, 5 + 50);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_SGL_DATA_LEN_INVALID));
}

/* A head whose length field is split across two PRP pages (PRP1 = the
 * last byte of a page): the high byte comes from the next page. */
Test(kv, head_length_split_across_prp_pages)
{
	uint64_t base = h_alloc(&H, 3 * 4096), at = base + 4095;
	uint8_t buf[2 + 20 + 5];
	struct nkv_sqe s;
	uint32_t i;

	nkv_key_head_put(buf, (const uint8_t *)"abcdefghijklmnopqrst", 20);
	memcpy(buf + 22, "value", 5);
	for (i = 0; i < sizeof(buf); i++)
		*(uint8_t *)h_ptr(&H, at + i) = buf[i];
	h_kv(&s, NKV_KV_STORE, 1, "", 0, 5, 0);
	h_prp(&H, &s, at, sizeof(buf));
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	cr_assert_eq(h_kvx(&H, 1, NKV_KV_EXIST, "abcdefghijklmnopqrst", 20, H_KEY_HEAD,
			   H_DP_SGL_SEG, NULL, 0, NULL), 0);
	/* The same with a high byte of 1 (a 276-byte claim): 86h. */
	*(uint8_t *)h_ptr(&H, at + 1) = 1;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_KV_INVALID_KEY_SIZE));
}

Test(kv, sgl_errors)
{
	struct nkv_sgl_desc *l;
	struct nkv_sqe s;
	uint64_t lp;
	unsigned i;

	/* A Data Block outside registered memory: Data Transfer Error. */
	h_kv(&s, NKV_KV_STORE, 1, "k", 1, 16, 0);
	h_sgl_db(&s, 0x1000, 16);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_DATA_XFER_ERROR));
	h_sgl_db(&s, H_IOVA + H_ARENA - 8, 16);	/* runs past the region's end */
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_DATA_XFER_ERROR));
	/* A segment list outside registered memory. */
	nkv_sqe_sgl1_set(&s, 0x2000, 32, NKV_SGL_LAST_SEGMENT);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_DATA_XFER_ERROR));
	/* Bit Bucket, a reserved type, a non-zero subtype: 11h. */
	h_sgl_db(&s, h_alloc(&H, 16), 16);
	s.prp2 = (s.prp2 & ~(0xffull << 56)) | ((uint64_t)nkv_sgl_id(NKV_SGL_BIT_BUCKET) << 56);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_SGL_TYPE_INVALID));
	s.prp2 = (s.prp2 & ~(0xffull << 56)) | (0x5ull << 60);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_SGL_TYPE_INVALID));
	s.prp2 = (s.prp2 & ~(0xffull << 56)) | (0x01ull << 56);	/* Data Block, offset subtype */
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_SGL_TYPE_INVALID));
	/* Inside a list: a Segment not at its end, a Segment in a Last
	 * Segment's list, a Bit Bucket. */
	lp = h_alloc(&H, 4096);
	l = h_ptr(&H, lp);
	l[0] = (struct nkv_sgl_desc){ lp + 1024, 8, { 0 }, nkv_sgl_id(NKV_SGL_SEGMENT) };
	l[1] = (struct nkv_sgl_desc){ lp + 2048, 16, { 0 }, nkv_sgl_id(NKV_SGL_DATA_BLOCK) };
	nkv_sqe_sgl1_set(&s, lp, 32, NKV_SGL_SEGMENT);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_SGL_TYPE_INVALID));
	l[0] = (struct nkv_sgl_desc){ lp + 2048, 8, { 0 }, nkv_sgl_id(NKV_SGL_DATA_BLOCK) };
	l[1] = (struct nkv_sgl_desc){ lp + 1024, 16, { 0 }, nkv_sgl_id(NKV_SGL_LAST_SEGMENT) };
	nkv_sqe_sgl1_set(&s, lp, 32, NKV_SGL_LAST_SEGMENT);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_SGL_TYPE_INVALID));
	l[1] = (struct nkv_sgl_desc){ lp + 1024, 16, { 0 }, nkv_sgl_id(NKV_SGL_BIT_BUCKET) };
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_SGL_TYPE_INVALID));
	/* Lengths short of the transfer: 0Fh (one Data Block; a list that
	 * ends early; a list length not a multiple of 16). */
	h_sgl_db(&s, h_alloc(&H, 16), 15);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_SGL_DATA_LEN_INVALID));
	l[1] = (struct nkv_sgl_desc){ lp + 2100, 7, { 0 }, nkv_sgl_id(NKV_SGL_DATA_BLOCK) };
	nkv_sqe_sgl1_set(&s, lp, 32, NKV_SGL_LAST_SEGMENT);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_SGL_DATA_LEN_INVALID));
	nkv_sqe_sgl1_set(&s, lp, 24, NKV_SGL_LAST_SEGMENT);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_SGL_DATA_LEN_INVALID));
	/* The same two Data Blocks, 8 + 8: accepted; longer than the data
	 * (a block of 9, one byte unused): accepted too. */
	l[1].len = 8;
	nkv_sqe_sgl1_set(&s, lp, 32, NKV_SGL_LAST_SEGMENT);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	l[1].len = 9;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	/* A list pointing at itself: bounded, Invalid Number of SGL
	 * Descriptors, never a hang. */
	l[0] = (struct nkv_sgl_desc){ lp, 16, { 0 }, nkv_sgl_id(NKV_SGL_SEGMENT) };
	nkv_sqe_sgl1_set(&s, lp, 16, NKV_SGL_SEGMENT);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_SGL_COUNT_INVALID));
	/* More Data Blocks than MDTS allows (pages + 1), of one byte each. */
	for (i = 0; i < 255; i++)
		l[i] = (struct nkv_sgl_desc){ lp + 2048 + (i & 7) * 2, 0, { 0 },
					      nkv_sgl_id(NKV_SGL_DATA_BLOCK) };
	l[255] = (struct nkv_sgl_desc){ lp, 16 * 256, { 0 }, nkv_sgl_id(NKV_SGL_SEGMENT) };
	nkv_sqe_sgl1_set(&s, lp, 16 * 256, NKV_SGL_SEGMENT);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_SGL_COUNT_INVALID), "empty blocks count");
	/* PSDT 2 (SGL with a metadata SGL) is not offered. */
	h_kv(&s, NKV_KV_EXIST, 1, "k", 1, 0, 0);
	s.cdw0 = nkv_sqe_cdw0_psdt(s.cdw0, 2);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), SC(NKV_SC_INVALID_FIELD));
}

/* SGL on the NVM namespace's Read and Write (the same walk). */
Test(kv, nvm_read_write_over_sgl)
{
	uint8_t blk[1024], got[1024];
	struct nkv_sqe s;
	uint64_t w = h_alloc(&H, 1024), r = h_alloc(&H, 1024);
	unsigned i;

	for (i = 0; i < sizeof(blk); i++)
		blk[i] = (uint8_t)(i * 3);
	memcpy(h_ptr(&H, w), blk, sizeof(blk));
	memset(&s, 0, sizeof(s));
	s.cdw0 = NKV_NVM_WRITE;
	s.nsid = 2;
	s.cdw10 = 4;
	s.cdw12 = 1;	/* 2 blocks of 512 */
	h_sgl_db(&s, w, 1024);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	s.cdw0 = NKV_NVM_READ;
	h_sgl_db(&s, r, 2048);	/* longer than the data */
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	memcpy(got, h_ptr(&H, r), sizeof(got));
	cr_assert_arr_eq(got, blk, sizeof(blk));
}
