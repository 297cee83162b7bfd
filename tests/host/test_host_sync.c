/* SPDX-License-Identifier: MIT */
/*
 * The synchronous API against an in-process nkv-target over vfio-user:
 * values of every size class verified byte for byte, Exist/Delete/List,
 * missing keys (87h) counted and not fatal, Store options, truncated
 * Retrieve, refusals before submission, counters, status names.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host_util.h"
#include "nkv_dev.h"
#include "nkv_list.h"
#include "target/core/ctrl.h"

static struct tl_server srv;
static struct nkv_ctrl *ctrl;
static struct nkv_qpair *qp;

static void up_with(int no_sparse, uint32_t mode, uint32_t dstrd)
{
	struct ht_server_opts o = { .no_sparse = no_sparse, .dstrd = dstrd };
	char err[256] = "";

	cr_assert_eq(ht_server_start(&srv, &o), 0);
	cr_assert_eq(ht_connect(&srv, mode, 2, &ctrl, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nkv_qpair_create(ctrl, NULL, &qp), 0);
}

static void down(void)
{
	nkv_qpair_destroy(qp);
	nkv_ctrl_close(ctrl);
	tl_server_stop(&srv);
}

static void up(int no_sparse, uint32_t mode) { up_with(no_sparse, mode, 0); }
static void setup(void) { up(0, 0); }
static void setup_fwd(void) { up(1, 0); }
/* Doorbells a cache line apart (CAP.DSTRD 4, nkv-target's default). */
static void setup_stride(void) { up_with(0, 0, NKV_TGT_DSTRD_LINE); }
static void setup_stride_fwd(void) { up_with(1, 0, NKV_TGT_DSTRD_LINE); }

static void roundtrip(uint32_t n, uint32_t salt)
{
	static uint8_t buf[1u << 20];
	struct nkv_result r;
	uint8_t key[16];
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint32_t kl = ht_key(i, salt, key), len = ht_size(i, salt, 1u << 20);

		ht_fill(buf, len, i ^ salt);
		cr_assert_eq(nkv_store(qp, key, kl, buf, len, 0, &r), 0);
		cr_assert_eq(r.status, 0, "store %u: %s", i, nkv_status_str(r.status));
	}
	for (i = 0; i < n; i++) {
		uint32_t kl = ht_key(i, salt, key), len = ht_size(i, salt, 1u << 20);

		memset(buf, 0, len);
		cr_assert_eq(nkv_retrieve(qp, key, kl, buf, sizeof(buf), &r), 0);
		cr_assert_eq(r.status, 0);
		cr_assert_eq(r.dw0, len, "key %u: size %u, want %u", i, r.dw0, len);
		{ long off = ht_check(buf, len, i ^ salt); cr_assert_eq(off, -1, "key %u (%u bytes) differs at %ld", i, len, off); }
		cr_assert_eq(nkv_exist(qp, key, kl, &r), 0);
		cr_assert_eq(r.status, 0);
	}
}

Test(host_sync, info_after_connect, .init = setup, .fini = down)
{
	struct nkv_ctrl_info in;

	cr_assert_eq(nkv_ctrl_get_info(ctrl, &in), 0);
	cr_expect_eq(in.csi, 1, "the KV namespace");
	cr_expect_eq(in.nsid, 1);
	cr_expect_eq(in.max_key, 16);
	cr_expect_eq(in.max_value, 1u << 20);
	cr_expect_eq(in.max_xfer, 1u << 20, "MDTS 8 with 4 KiB pages");
	cr_expect_eq(in.io_queues, 2);
	cr_expect_eq(in.doorbells_mapped, 1);
	cr_expect_eq(in.vram_is_emulated, 0);
	cr_expect_eq(in.mqes, 1024);
	cr_expect_str_eq(in.transport, "vfio-user");
	cr_expect_str_eq(in.model, "nkv-host-test");
}

Test(host_sync, roundtrip_sizes, .init = setup, .fini = down) { roundtrip(150, 1); }

/* Two queue pairs on a controller whose doorbells are 64 bytes apart,
 * written in the mapped page or through the forwarder: every value comes
 * back (a client that took them 4 bytes apart would ring the wrong
 * queue's doorbells, or none). */
static void roundtrip_two_queues(void)
{
	struct nkv_qpair *qp2;
	struct nkv_result r;
	uint8_t key[16], v[64];
	uint32_t i, kl;

	cr_assert_eq(nkv_qpair_create(ctrl, NULL, &qp2), 0);
	for (i = 0; i < 32; i++) {
		kl = ht_key(i, 7, key);
		ht_fill(v, sizeof(v), i);
		cr_assert_eq(nkv_store(i & 1 ? qp2 : qp, key, kl, v, sizeof(v), 0, &r), 0);
		cr_assert_eq(r.status, 0);
	}
	for (i = 0; i < 32; i++) {
		kl = ht_key(i, 7, key);
		memset(v, 0, sizeof(v));
		cr_assert_eq(nkv_retrieve(i & 1 ? qp : qp2, key, kl, v, sizeof(v), &r), 0);
		cr_assert_eq(r.status, 0);
		cr_assert_eq(ht_check(v, sizeof(v), i), -1, "key %u", i);
	}
	nkv_qpair_destroy(qp2);
}

Test(host_sync, doorbell_stride_mapped, .init = setup_stride, .fini = down)
{
	roundtrip_two_queues();
	roundtrip(20, 3);
}

Test(host_sync, doorbell_stride_forwarded, .init = setup_stride_fwd, .fini = down)
{
	roundtrip_two_queues();
}
Test(host_sync, roundtrip_forwarded, .init = setup_fwd, .fini = down)
{
	struct nkv_ctrl_info in;
	struct nkv_qpair_stats st;

	cr_assert_eq(nkv_ctrl_get_info(ctrl, &in), 0);
	cr_expect_eq(in.doorbells_mapped, 0);
	roundtrip(60, 2);
	cr_assert_eq(nkv_qpair_get_stats(qp, &st), 0);
	cr_expect_eq(st.commands, 180);
	/* Every command's doorbells went through the forwarder. */
	cr_expect_eq(st.fwd_submitted, 180);
	cr_expect_geq(st.sq_doorbells, 1);
	cr_expect_leq(st.sq_doorbells, 180);
	cr_expect_eq(st.fwd_completed, 180);
}

Test(host_sync, missing_keys_counted, .init = setup, .fini = down)
{
	struct nkv_qpair_stats st;
	struct nkv_result r;
	uint8_t buf[16];
	int i;

	for (i = 0; i < 5; i++) {
		cr_assert_eq(nkv_retrieve(qp, "nope", 4, buf, sizeof(buf), &r), 0);
		cr_expect_eq(r.status, 0x87, "status %#x", r.status);
	}
	cr_assert_eq(nkv_exist(qp, "nope", 4, &r), 0);
	cr_expect_eq(r.status, 0x87);
	cr_assert_eq(nkv_delete(qp, "nope", 4, &r), 0);
	cr_expect_eq(r.status, 0x87);
	/* Not fatal: the queue pair goes on. */
	cr_assert_eq(nkv_store(qp, "yes", 3, "v", 1, 0, &r), 0);
	cr_expect_eq(r.status, 0);
	cr_assert_eq(nkv_qpair_get_stats(qp, &st), 0);
	cr_expect_eq(st.commands, 8);
	cr_expect_eq(st.errors, 7);
	cr_expect_eq(st.by_status[7], 7);
	cr_expect_eq(st.sq_doorbells, 8);
	cr_expect_eq(st.cq_doorbells, 8);
	cr_expect_eq(st.bytes, 1);
	cr_expect_str_eq(nkv_status_str(0x87), "Key Does Not Exist");
	cr_expect_str_eq(nkv_status_str(0x4089), "Key Exists", "DNR ignored");
}

Test(host_sync, store_options, .init = setup, .fini = down)
{
	struct nkv_result r;

	cr_assert_eq(nkv_store(qp, "opt", 3, "a", 1, NKV_STORE_MUST_EXIST, &r), 0);
	cr_expect_eq(r.status, 0x87);
	cr_assert_eq(nkv_store(qp, "opt", 3, "a", 1, NKV_STORE_MUST_NOT_EXIST, &r), 0);
	cr_expect_eq(r.status, 0);
	cr_assert_eq(nkv_store(qp, "opt", 3, "b", 1, NKV_STORE_MUST_NOT_EXIST, &r), 0);
	cr_expect_eq(r.status, 0x89);
	cr_assert_eq(nkv_store(qp, "opt", 3, "cc", 2, NKV_STORE_MUST_EXIST | NKV_STORE_NO_COMPRESS, &r), 0);
	cr_expect_eq(r.status, 0);
	cr_expect_eq(nkv_store(qp, "opt", 3, "x", 1, NKV_STORE_MUST_EXIST | NKV_STORE_MUST_NOT_EXIST, &r),
		     -EINVAL);
	cr_expect_eq(nkv_store(qp, "opt", 3, "x", 1, 1u << 12, &r), -EINVAL);
}

Test(host_sync, truncated_retrieve, .init = setup, .fini = down)
{
	static uint8_t val[100000], buf[1000];
	struct nkv_result r;

	ht_fill(val, sizeof(val), 77);
	cr_assert_eq(nkv_store(qp, "big", 3, val, sizeof(val), 0, &r), 0);
	memset(buf, 0xee, sizeof(buf));
	cr_assert_eq(nkv_retrieve(qp, "big", 3, buf, 999, &r), 0);
	cr_expect_eq(r.status, 0);
	cr_expect_eq(r.dw0, sizeof(val), "DW0 = the full size");
	cr_expect_eq(memcmp(buf, val, 999), 0, "the prefix");
	cr_expect_eq(buf[999], 0xee, "nothing past the buffer");
	cr_assert_eq(nkv_retrieve(qp, "big", 3, buf, 1, &r), 0);
	cr_expect_eq(r.dw0, sizeof(val), "size probe with a 1-byte buffer");
	cr_expect_eq(buf[0], val[0]);
}

Test(host_sync, refused_before_submission, .init = setup, .fini = down)
{
	static uint8_t huge[(1u << 20) + 1];
	struct nkv_qpair_stats st;
	struct nkv_result r;
	uint8_t buf[8];

	cr_expect_eq(nkv_store(qp, "k", 0, "v", 1, 0, &r), -EINVAL);
	cr_expect_eq(nkv_store(qp, "01234567890123456", 17, "v", 1, 0, &r), -EINVAL);
	cr_expect_eq(nkv_store(qp, NULL, 3, "v", 1, 0, &r), -EINVAL);
	cr_expect_eq(nkv_store(qp, "k", 1, NULL, 5, 0, &r), -EINVAL);
	cr_expect_eq(nkv_store(qp, "k", 1, huge, sizeof(huge), 0, &r), -EMSGSIZE);
	cr_expect_eq(nkv_retrieve(qp, "k", 0, buf, 8, &r), -EINVAL);
	cr_expect_eq(nkv_retrieve(qp, "k", 1, NULL, 8, &r), -EINVAL);
	cr_expect_eq(nkv_exist(qp, "k", 17, &r), -EINVAL);
	cr_expect_eq(nkv_delete(qp, "k", 0, &r), -EINVAL);
	cr_expect_eq(nkv_list(qp, "k", 17, buf, 8, &r), -EINVAL);
	cr_expect_eq(nkv_store(NULL, "k", 1, "v", 1, 0, &r), -EINVAL);
	cr_expect_eq(nkv_store(qp, "k", 1, "v", 1, 0, NULL), -EINVAL);
	cr_assert_eq(nkv_qpair_get_stats(qp, &st), 0);
	cr_expect_eq(st.commands, 0, "nothing was sent");
	cr_expect_eq(st.sq_doorbells, 0);
	/* A key of exactly 1 and 16 bytes is fine. */
	cr_expect_eq(nkv_store(qp, "a", 1, "v", 1, 0, &r), 0);
	cr_expect_eq(r.status, 0);
	cr_expect_eq(nkv_store(qp, "0123456789abcdef", 16, "v", 1, 0, &r), 0);
	cr_expect_eq(r.status, 0);
}

Test(host_sync, list_and_delete, .init = setup, .fini = down)
{
	static uint8_t buf[65536];
	struct nkv_result r;
	struct nkv_list_dec d;
	uint8_t key[16], k2[16];
	uint32_t i, kl, seen = 0;
	int rc;

	for (i = 0; i < 300; i++) {
		kl = ht_key(i, 9, key);
		cr_assert_eq(nkv_store(qp, key, kl, &i, sizeof(i), 0, &r), 0);
		cr_assert_eq(r.status, 0);
	}
	/* Page through the whole namespace 1 KiB at a time; each page
	 * starts at the last key seen (skipped if List returns it again). */
	kl = 0;
	for (;;) {
		uint32_t fresh = 0, startlen = kl, k2l;
		uint8_t start[16];

		memcpy(start, key, 16);
		cr_assert_eq(nkv_list(qp, start, startlen, buf, 1024, &r), 0);
		cr_assert_eq(r.status, 0);
		cr_assert_geq(nkv_list_check(buf, 1024), 0);
		cr_assert_eq(nkv_list_dec_init(&d, buf, 1024), 0);
		while ((rc = nkv_list_dec_next(&d, k2, &k2l)) == 1) {
			if (startlen && k2l == startlen && !memcmp(k2, start, k2l))
				continue;
			fresh++;
			memcpy(key, k2, k2l);
			kl = k2l;
		}
		cr_assert_eq(rc, 0);
		if (!fresh)
			break;
		seen += fresh;
		cr_assert_leq(seen, 400, "List does not end");
	}
	cr_expect_eq(seen, 300, "every key listed once");
	for (i = 0; i < 300; i++) {
		kl = ht_key(i, 9, key);
		cr_assert_eq(nkv_delete(qp, key, kl, &r), 0);
		cr_assert_eq(r.status, 0);
	}
	cr_assert_eq(nkv_list(qp, NULL, 0, buf, 1024, &r), 0);
	cr_expect_eq(nkv_list_check(buf, 1024), 0, "empty after the deletes");
}
