/* SPDX-License-Identifier: MIT */
/*
 * The synchronous API against an in-process nkv-target over vfio-user:
 * values of every size class verified byte for byte, Exist/Delete/List,
 * missing keys (87h) counted and not fatal, Store options, truncated
 * Retrieve, refusals before submission, counters, status names.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "big_util.h"
#include "host_util.h"
#include "nkv_dev.h"
#include "nkv_list.h"
#include "target/core/ctrl.h"
#include "target/vfio-user/server.h"

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
	cr_expect_eq(in.max_key, NKV_KEY_MAX, "nkv-target reports KML 255");
	cr_expect_eq(in.max_value, NKV_TGT_DEF_MAX_VALUE, "64 MiB, nkv-target's default");
	cr_expect_eq(in.max_xfer, 128u << 20, "MDTS 15: 64 MiB and a long key's head");
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
	/* Option bits 6 and 7 exist nowhere (3-5: test_host_opts). */
	cr_expect_eq(nkv_store(qp, "opt", 3, "x", 1, 1u << 14, &r), -EINVAL);
	cr_expect_eq(nkv_store(qp, "opt", 3, "x", 1, 1u << 15, &r), -EINVAL);
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
	/* Never touched: refused on its size. */
	uint8_t *huge = malloc(NKV_TGT_DEF_MAX_VALUE + 1);
	struct nkv_qpair_stats st;
	struct nkv_ctrl_info in;
	struct nkv_result r;
	uint8_t buf[8], lk[NKV_KEY_MAX + 1];
	uint32_t over;

	cr_assert_not_null(huge);
	cr_assert_eq(nkv_ctrl_get_info(ctrl, &in), 0);
	/* One byte past the controller's longest key (its KML). */
	over = in.max_key + 1;
	memset(lk, 'k', sizeof(lk));
	cr_expect_eq(nkv_store(qp, "k", 0, "v", 1, 0, &r), -EINVAL);
	cr_expect_eq(nkv_store(qp, lk, over, "v", 1, 0, &r), -EINVAL);
	cr_expect_eq(nkv_store(qp, NULL, 3, "v", 1, 0, &r), -EINVAL);
	cr_expect_eq(nkv_store(qp, "k", 1, NULL, 5, 0, &r), -EINVAL);
	cr_expect_eq(nkv_store(qp, "k", 1, huge, NKV_TGT_DEF_MAX_VALUE + 1, 0, &r), -EMSGSIZE);
	free(huge);
	cr_expect_eq(nkv_retrieve(qp, "k", 0, buf, 8, &r), -EINVAL);
	cr_expect_eq(nkv_retrieve(qp, "k", 1, NULL, 8, &r), -EINVAL);
	cr_expect_eq(nkv_exist(qp, lk, over, &r), -EINVAL);
	cr_expect_eq(nkv_delete(qp, "k", 0, &r), -EINVAL);
	cr_expect_eq(nkv_list(qp, lk, over, buf, 8, &r), -EINVAL);
	cr_expect_eq(nkv_retrieve(qp, lk, NKV_KEY_MAX + 1, buf, 8, &r), -EINVAL);
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
		while ((rc = nkv_list_dec_next(&d, k2, sizeof(k2), &k2l)) == 1) {
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

/* Every op at 1 B .. 64 MiB, values in host memory the target maps (its
 * fd): the sync buffer grows to each value, whose PRP lists chain. */
Test(host_sync, values_to_64_mib, .init = setup, .fini = down, .timeout = 120)
{
	struct nkv_qpair_stats st;

	big_every_op(qp, 64 * BIG_MIB);
	cr_assert_eq(nkv_qpair_get_stats(qp, &st), 0);
	cr_expect_eq(st.errors, 1 + BIG_NSIZES, "the 1-byte List, each Exist after Delete");
	cr_expect_eq(st.timeouts, 0);
}

/* Above the controller's limit (64 MiB, its max value): one error naming
 * both numbers, before anything is sent, for a value and for slots. */
Test(host_sync, over_the_limit_said_before_sending, .init = setup, .fini = down)
{
	struct nkv_qpair_opts qo = { .size = sizeof(qo), .depth = 4, .slot_size = 64 * BIG_MIB + 1 };
	uint8_t *huge = malloc(64 * BIG_MIB + 1);	/* never touched */
	struct nkv_qpair_stats st;
	struct nkv_qpair *q2 = NULL;
	struct nkv_result r;

	cr_assert_not_null(huge);
	big_log_start();
	cr_expect_eq(nkv_store(qp, "k", 1, huge, 64 * BIG_MIB + 1, 0, &r), -EMSGSIZE);
	cr_expect(strstr(big_log(), "value of 67108865 bytes is larger than the controller's limit "
			 "of 67108864 bytes (max value)"), "%s", big_log());
	cr_expect_eq(nkv_qpair_create(ctrl, &qo, &q2), -EMSGSIZE);
	cr_expect_null(q2);
	cr_expect(strstr(big_log(), "value slots: a buffer of 67108865 bytes is larger than the "
			 "controller's limit of 67108864 bytes (max value)"), "%s", big_log());
	big_log_stop();
	free(huge);
	cr_assert_eq(nkv_qpair_get_stats(qp, &st), 0);
	cr_expect_eq(st.commands, 0, "nothing was sent");
	qo.slot_size = 64 * BIG_MIB;
	cr_expect_eq(nkv_qpair_create(ctrl, &qo, &q2), 0, "slots of exactly the limit");
	nkv_qpair_destroy(q2);
}

/* A server on ss whose controllers have MDTS mdts (0: from the max
 * value), on a socket of its own; its URI in uri. */
static struct nkv_vfu_server *serve_mdts(struct nkv_subsys *ss, uint32_t mdts, char *uri,
					 size_t urilen)
{
	static int seq;
	struct nkv_tgt_embed_opts eo;
	struct nkv_vfu_server *s = NULL;
	char path[108];

	tl_server_opts(&eo);
	snprintf(path, sizeof(path), "/tmp/nkv-host-mdts-%d-%d.sock", (int)getpid(), seq++);
	snprintf(uri, urilen, "vfio-user:%s", path);
	eo.server.socket_path = path;
	eo.server.ss = ss;
	eo.server.ctrl.mdts = mdts;
	eo.server.ctrl.max_ioq = 2;
	cr_assert_eq(nkv_vfu_server_start(&eo.server, &s), 0);
	return s;
}

static struct nkv_ctrl *connect_uri(const char *uri)
{
	struct nkv_ctrl_opts co = { .size = sizeof(co), .io_queues = 1 };
	struct nkv_ctrl *c = NULL;
	char err[256] = "";

	co.err = err;
	co.errlen = sizeof(err);
	cr_assert_eq(nkv_ctrl_connect(uri, &co, &c), 0, "%s", err);
	return c;
}

/*
 * A controller with SPDK's vfio-user default, a 128 KiB MDTS (5), below
 * its namespace's 64 MiB max value, beside one on the same namespace
 * whose MDTS follows the max value. The client keeps to 128 KiB: values
 * up to it move byte for byte, a larger Store and larger slots are
 * refused with both numbers before anything is sent, a Retrieve buffer
 * is asked for up to 128 KiB, and a value stored through the other
 * controller comes back as a prefix into a small buffer but is -EMSGSIZE
 * (said) into one it would have fitted. The target never answered
 * Invalid Field: no command above its MDTS reached it.
 */
Test(host_sync, mdts_128k_controller, .timeout = 60)
{
	struct nkv_qpair_opts qo = { .size = sizeof(qo), .depth = 4, .slot_size = (128u << 10) + 1 };
	struct nkv_tgt_embed_opts eo;
	struct nkv_vfu_server *big, *small;
	struct nkv_ctrl *cb, *cs;
	struct nkv_qpair *qb, *qs, *q2 = NULL;
	struct nkv_qpair_stats st;
	struct nkv_ctrl_info in;
	struct nkv_result r;
	struct nkv_subsys *ss;
	char err[256] = "", ub[128], us[128];
	static const uint32_t sizes[] = { 1, 4096, 4097, 65537, 128u << 10 };
	uint8_t *v = malloc(BIG_MIB), *b = malloc(BIG_MIB);
	uint32_t len;
	size_t i;

	cr_assert(v && b);
	tl_server_opts(&eo);
	ss = nkv_tgt_embed_subsys(&eo, err, sizeof(err));
	cr_assert_not_null(ss, "%s", err);
	big = serve_mdts(ss, 0, ub, sizeof(ub));
	small = serve_mdts(ss, 5, us, sizeof(us));
	cb = connect_uri(ub);
	cs = connect_uri(us);
	cr_assert_eq(nkv_ctrl_get_info(cs, &in), 0);
	cr_assert_eq(in.max_xfer, 128u << 10);
	cr_assert_eq(in.max_value, NKV_TGT_DEF_MAX_VALUE);
	cr_assert_eq(nkv_qpair_create(cb, NULL, &qb), 0);
	cr_assert_eq(nkv_qpair_create(cs, NULL, &qs), 0);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		len = sizes[i];
		ht_fill(v, len, len);
		cr_assert_eq(nkv_store(qs, "v", 1, v, len, 0, &r), 0);
		cr_assert_eq(r.status, 0);
		memset(b, 0, BIG_MIB);
		cr_assert_eq(nkv_retrieve(qs, "v", 1, b, BIG_MIB, &r), 0, "a 1 MiB buffer: 128 KiB asked");
		cr_assert_eq(r.status, 0);
		cr_assert_eq(r.dw0, len);
		cr_assert_eq(ht_check(b, len, len), -1, "%u bytes", len);
	}
	big_log_start();
	cr_expect_eq(nkv_store(qs, "v", 1, v, (128u << 10) + 1, 0, &r), -EMSGSIZE);
	cr_expect(strstr(big_log(), "value of 131073 bytes is larger than the controller's limit "
			 "of 131072 bytes (MDTS)"), "%s", big_log());
	cr_expect_eq(nkv_qpair_create(cs, &qo, &q2), -EMSGSIZE);
	cr_expect(strstr(big_log(), "value slots: a buffer of 131073 bytes is larger than the "
			 "controller's limit of 131072 bytes (MDTS)"), "%s", big_log());
	/* 1 MiB stored by the other controller. */
	ht_fill(v, BIG_MIB, 99);
	cr_assert_eq(nkv_store(qb, "w", 1, v, BIG_MIB, 0, &r), 0);
	cr_assert_eq(r.status, 0);
	memset(b, 0, BIG_MIB);
	cr_expect_eq(nkv_retrieve(qs, "w", 1, b, BIG_MIB, &r), -EMSGSIZE);
	cr_expect(strstr(big_log(), "value of 1048576 bytes is larger than the controller's limit "
			 "of 131072 bytes (MDTS)"), "%s", big_log());
	cr_expect_eq(b[0], 0, "nothing copied out");
	big_log_stop();
	cr_assert_eq(nkv_retrieve(qs, "w", 1, b, 4096, &r), 0);
	cr_assert_eq(r.status, 0);
	cr_assert_eq(r.dw0, BIG_MIB, "a prefix into a small buffer, the full size in DW0");
	cr_assert_eq(ht_check(b, 4096, 99), -1);
	cr_assert_eq(nkv_qpair_get_stats(qs, &st), 0);
	cr_expect_eq(st.errors, 0, "no Invalid Field: nothing above MDTS was sent");
	nkv_qpair_destroy(qs);
	nkv_qpair_destroy(qb);
	nkv_ctrl_close(cs);
	nkv_ctrl_close(cb);
	nkv_vfu_server_stop(small);
	nkv_vfu_server_stop(big);
	nkv_subsys_destroy(ss);
	free(v);
	free(b);
}
