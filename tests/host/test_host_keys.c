/* SPDX-License-Identifier: MIT */
/*
 * Keys of 1..255 bytes through the synchronous API (the device builders
 * under it) against an in-process nkv-target over vfio-user: every
 * command with keys of 1, 16, 17, 32 and 255 bytes, inline and in head
 * form (every key, NKV_QPAIR_KEY_HEAD), over PRPs and SGL1, with values
 * in host memory and in the device arena; a key over the controller's
 * KML refused before anything is sent, with one line naming the limit.
 *
 * What needs the controller's side is guarded by what Identify says:
 * head form by its KML (> 16: it takes keys in head form), SGL by SGLS
 * bits 1:0 = 01b. A test the controller cannot serve is skipped, and
 * says why: it is not a pass.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "big_util.h"
#include "host_util.h"
#include "nkv_dev.h"
#include "nkv_list.h"

static struct tl_server srv;
static struct nkv_ctrl *ctrl;
static struct nkv_qpair *qp;
static struct nkv_ctrl_info info;

static void up(uint32_t mode)
{
	struct ht_server_opts o = { 0 };
	char err[256] = "";

	cr_assert_eq(ht_server_start(&srv, &o), 0);
	cr_assert_eq(ht_connect(&srv, mode, 2, &ctrl, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nkv_ctrl_get_info(ctrl, &info), 0);
}

static void setup(void) { up(0); }
static void setup_vram(void) { up(NKV_MEM_ALL); }

static void down(void)
{
	nkv_qpair_destroy(qp);
	qp = NULL;
	nkv_ctrl_close(ctrl);
	tl_server_stop(&srv);
}

/* A queue pair with @flags; says whether it sends SGLs as asked. */
static void qp_with(uint32_t flags, uint32_t want_sgl)
{
	struct nkv_qpair_opts o = { .size = sizeof(o), .depth = 16, .slot_size = 16384,
				    .flags = flags };
	struct nkv_qpair_info qi = { .size = sizeof(qi) };

	cr_assert_eq(nkv_qpair_create(ctrl, &o, &qp), 0);
	cr_assert_eq(nkv_qpair_get_info(qp, &qi), 0);
	cr_assert_eq(qi.sgl, want_sgl, "value slots send %s", qi.sgl ? "SGLs" : "PRPs");
	cr_assert_eq(qi.key_head, !!(flags & NKV_QPAIR_KEY_HEAD));
}

static int takes_head(void) { return info.max_key > NKV_KEY_INLINE_MAX; }
static int takes_sgl(void) { return (info.sgls & NKV_SGLS_SUPPORT_MASK) == NKV_SGLS_SUPPORTED; }

static void need(int head, int sgl)
{
	if (head && !takes_head())
		cr_skip_test("the controller reports KML %u: no keys in head form (SKIP, not a pass)",
			     info.max_key);
	if (sgl && !takes_sgl())
		cr_skip_test("the controller reports SGLS %#x: no SGLs (SKIP, not a pass)",
			     info.sgls);
}

/* Key of @klen bytes for round @salt: every byte position matters. */
static void key_of(uint8_t *key, uint32_t klen, uint32_t salt)
{
	uint32_t i;

	for (i = 0; i < klen; i++)
		key[i] = (uint8_t)(i * 31 + klen * 7 + salt);
}

/* Every command with one key of @klen bytes; values that stay in one
 * page and that cross into the next ones. */
static void all_ops(uint32_t klen, uint32_t salt)
{
	static const uint32_t vlens[] = { 1, 100, 4096 - 3, 5000, 16384 };
	static uint8_t val[16384], buf[16384];
	uint8_t key[NKV_KEY_MAX], k2[NKV_KEY_MAX];
	struct nkv_list_dec d;
	struct nkv_result r;
	uint32_t i, k2l;

	key_of(key, klen, salt);
	for (i = 0; i < sizeof(vlens) / sizeof(vlens[0]); i++) {
		uint32_t vl = vlens[i];

		ht_fill(val, vl, klen * 100 + i + salt);
		cr_assert_eq(nkv_store(qp, key, klen, val, vl, 0, &r), 0);
		cr_assert_eq(r.status, 0, "klen %u store %u: %s", klen, vl, nkv_status_str(r.status));
		memset(buf, 0, sizeof(buf));
		cr_assert_eq(nkv_retrieve(qp, key, klen, buf, sizeof(buf), &r), 0);
		cr_assert_eq(r.status, 0, "klen %u retrieve: %s", klen, nkv_status_str(r.status));
		cr_assert_eq(r.dw0, vl);
		cr_assert_eq(ht_check(buf, vl, klen * 100 + i + salt), -1,
			     "klen %u: value of %u bytes differs", klen, vl);
	}
	cr_assert_eq(nkv_store(qp, key, klen, val, 8, NKV_STORE_MUST_NOT_EXIST, &r), 0);
	cr_assert_eq(r.status, NKV_STATUS(0, NKV_SC_KV_KEY_EXISTS));
	cr_assert_eq(nkv_exist(qp, key, klen, &r), 0);
	cr_assert_eq(r.status, 0, "klen %u exist: %s", klen, nkv_status_str(r.status));
	/* List from the key itself: it comes first, whole. */
	cr_assert_eq(nkv_list(qp, key, klen, buf, 4096, &r), 0);
	cr_assert_eq(r.status, 0, "klen %u list: %s", klen, nkv_status_str(r.status));
	cr_assert_eq(nkv_list_dec_init(&d, buf, 4096), 0);
	cr_assert_eq(nkv_list_dec_next(&d, k2, sizeof(k2), &k2l), 1);
	cr_assert_eq(k2l, klen);
	cr_assert_arr_eq(k2, key, klen);
	cr_assert_eq(nkv_delete(qp, key, klen, &r), 0);
	cr_assert_eq(r.status, 0, "klen %u delete: %s", klen, nkv_status_str(r.status));
	cr_assert_eq(nkv_exist(qp, key, klen, &r), 0);
	cr_assert_eq(r.status, NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS));
	cr_assert_eq(nkv_retrieve(qp, key, klen, buf, 8, &r), 0);
	cr_assert_eq(r.status, NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS));
}

static void short_keys(void)
{
	all_ops(1, 1);
	all_ops(16, 2);
}

static void long_keys(void)
{
	all_ops(17, 3);
	all_ops(32, 4);
	all_ops(255, 5);
}

static void every_key(void)
{
	short_keys();
	long_keys();
}

/* Inline keys over PRPs: what every controller takes. */
Test(host_keys, inline_prp, .init = setup, .fini = down)
{
	qp_with(NKV_QPAIR_PRP_ONLY, 0);
	short_keys();
}

Test(host_keys, inline_prp_vram, .init = setup_vram, .fini = down)
{
	qp_with(NKV_QPAIR_PRP_ONLY, 0);
	short_keys();
}

Test(host_keys, long_prp, .init = setup, .fini = down)
{
	need(1, 0);
	qp_with(NKV_QPAIR_PRP_ONLY, 0);
	long_keys();
}

Test(host_keys, long_prp_vram, .init = setup_vram, .fini = down)
{
	need(1, 0);
	qp_with(NKV_QPAIR_PRP_ONLY, 0);
	long_keys();
}

Test(host_keys, head_always_prp, .init = setup, .fini = down)
{
	need(1, 0);
	qp_with(NKV_QPAIR_PRP_ONLY | NKV_QPAIR_KEY_HEAD, 0);
	every_key();
}

Test(host_keys, inline_sgl, .init = setup, .fini = down)
{
	need(0, 1);
	qp_with(0, 1);
	short_keys();
}

Test(host_keys, long_sgl, .init = setup, .fini = down)
{
	need(1, 1);
	qp_with(0, 1);
	long_keys();
}

Test(host_keys, long_sgl_vram, .init = setup_vram, .fini = down)
{
	need(1, 1);
	qp_with(0, 1);
	long_keys();
}

Test(host_keys, head_always_sgl, .init = setup, .fini = down)
{
	need(1, 1);
	qp_with(NKV_QPAIR_KEY_HEAD, 1);
	every_key();
}

/* A key in head form and the same key inline are one object. */
Test(host_keys, both_forms_one_key, .init = setup, .fini = down)
{
	struct nkv_qpair *inl;
	struct nkv_qpair_opts o = { .size = sizeof(o), .depth = 8 };
	struct nkv_result r;
	uint8_t buf[8];

	need(1, 0);
	qp_with(NKV_QPAIR_KEY_HEAD, takes_sgl());
	cr_assert_eq(nkv_qpair_create(ctrl, &o, &inl), 0);
	cr_assert_eq(nkv_store(qp, "five5", 5, "headval", 7, 0, &r), 0);
	cr_assert_eq(r.status, 0);
	cr_assert_eq(nkv_retrieve(inl, "five5", 5, buf, sizeof(buf), &r), 0);
	cr_assert_eq(r.status, 0);
	cr_assert_eq(r.dw0, 7);
	cr_assert_arr_eq(buf, "headval", 7);
	cr_assert_eq(nkv_delete(inl, "five5", 5, &r), 0);
	cr_assert_eq(nkv_exist(qp, "five5", 5, &r), 0);
	cr_assert_eq(r.status, NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS));
	nkv_qpair_destroy(inl);
}

/* One byte over the controller's KML (and 256, over any) is refused
 * before anything is sent, with one line naming the limit. */
Test(host_keys, over_kml_refused, .init = setup, .fini = down)
{
	uint8_t key[NKV_KEY_MAX + 1], buf[8];
	struct nkv_qpair_stats st;
	struct nkv_result r;
	char want[128];
	uint32_t over;

	qp_with(NKV_QPAIR_PRP_ONLY, 0);
	over = info.max_key + 1;
	memset(key, 'q', sizeof(key));
	snprintf(want, sizeof(want),
		 "key of %u bytes is longer than the controller's limit of %u bytes", over,
		 info.max_key);
	big_log_start();
	cr_expect_eq(nkv_store(qp, key, over, "v", 1, 0, &r), -EINVAL);
	cr_expect_not_null(strstr(big_log(), want), "log: %s", big_log());
	cr_expect_eq(strchr(big_log(), '\n'), strrchr(big_log(), '\n'), "one line: %s",
		     big_log());
	cr_expect_eq(nkv_retrieve(qp, key, over, buf, 8, &r), -EINVAL);
	cr_expect_eq(nkv_exist(qp, key, over, &r), -EINVAL);
	cr_expect_eq(nkv_delete(qp, key, over, &r), -EINVAL);
	cr_expect_eq(nkv_list(qp, key, over, buf, 8, &r), -EINVAL);
	cr_expect_eq(nkv_exist(qp, key, NKV_KEY_MAX + 1, &r), -EINVAL);
	big_log_stop();
	cr_assert_eq(nkv_qpair_get_stats(qp, &st), 0);
	cr_expect_eq(st.commands, 0, "nothing was sent");
	cr_expect_eq(st.sq_doorbells, 0);
}

/* The slots as built: a head page below every value, both forms' PRPs
 * (vfio-user addresses are the host's, so the lists can be read here),
 * SGL1 only where the controller takes it. */
static void check_slots(uint32_t flags)
{
	struct nkv_qpair_opts o = { .size = sizeof(o), .depth = 4, .slots = 3,
				    .slot_size = 3 * 4096, .flags = flags };
	const struct nkv_dev_slot *s;
	const uint64_t *l;
	struct nkv_dev_qp *d;
	uint32_t i, want_sgl = takes_sgl() && !(flags & NKV_QPAIR_PRP_ONLY);

	cr_assert_eq(nkv_qpair_create(ctrl, &o, &qp), 0);
	d = nkv_qpair_dev(qp);
	cr_assert_eq(d->max_key, info.max_key);
	/* Bits 0-7 the key form; 8-15 what the namespace advertises (the
	 * in-process nkv-target: every vendor Store option). */
	cr_assert_eq(d->key_flags & 0xffu, flags & NKV_QPAIR_KEY_HEAD ? NKV_DEV_KEY_HEAD : 0);
	cr_assert_eq(d->key_flags & 0xff00u, NKV_STORE_VENDOR_MASK);
	for (i = 0; i < 3; i++) {
		s = nkv_dev_slot_get(d, i);
		cr_assert_eq((void *)(uintptr_t)s->addr, nkv_qpair_slot(qp, i, NULL));
		cr_assert_eq(s->addr % 4096, 0);
		cr_expect_eq(s->prp1, s->addr, "vfio-user: the host address");
		cr_expect_eq(s->head_end, s->prp1, "the head page runs into the value");
		cr_expect_eq(s->page2, s->prp1 + 4096);
		l = (const uint64_t *)(uintptr_t)s->prp2;
		cr_expect(l[0] == s->prp1 + 4096 && l[1] == s->prp1 + 8192, "list from page 1");
		l = (const uint64_t *)(uintptr_t)s->head_prp2;
		cr_expect(l[0] == s->prp1 && l[1] == s->prp1 + 4096 && l[2] == s->prp1 + 8192,
			  "list from page 0");
		cr_expect_eq(!!(s->flags & NKV_DEV_SLOT_SGL), want_sgl);
		if (i)
			cr_expect_eq(s->addr, nkv_dev_slot_get(d, i - 1)->addr + 4 * 4096,
				     "each slot: a head page, then its value pages");
	}
}

Test(host_keys, slot_layout, .init = setup, .fini = down) { check_slots(NKV_QPAIR_KEY_HEAD); }
Test(host_keys, slot_layout_vram, .init = setup_vram, .fini = down) { check_slots(0); }
Test(host_keys, slot_layout_prp_only, .init = setup, .fini = down)
{
	check_slots(NKV_QPAIR_PRP_ONLY);
}
