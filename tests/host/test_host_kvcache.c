/* SPDX-License-Identifier: MIT */
/*
 * nkv_kvcache.h on the cpu engine against an in-process nkv-target, at
 * the CI size (64 keys, one 4 KiB page each), in both flavours (a wave
 * of 16 lanes; a block of 2 waves x 16) and both key forms (16 bytes
 * inline, 32 bytes in head form): the prefix lookup with its first miss
 * at 0, in the middle of a batch, at a batch boundary and never; the
 * content-addressed Store twice (ok, then exists, value intact); three
 * batches in flight reaped out of order into permuted pages; the
 * outcomes a controller that lies about DW0 gets ("short", never ok).
 * Two processes racing the same Stores: test_host_kvc_procs.c.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "host_util.h"
#include "kvc_util.h"

struct kc_env {
	struct tl_server s;
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
};

static void kc_up(struct kc_env *e, int lie)
{
	struct ht_server_opts o = { .lie_retrieve = lie };
	char err[256] = "";

	cr_assert_eq(ht_server_start(&e->s, &o), 0);
	cr_assert_eq(ht_connect(&e->s, 0x0, 1, &e->c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(kc_qpair(e->c, &e->q), 0);
}

static void kc_down(struct kc_env *e)
{
	cr_expect_eq(nkv_qpair_failed(e->q), NKV_QP_OK);
	nkv_qpair_destroy(e->q);
	nkv_ctrl_close(e->c);
	tl_server_stop(&e->s);
}

/* Store keys first..first+n-1 with the synchronous API. */
static void kc_sync_store(struct kc_env *e, const struct kc_job *j, uint32_t first, uint32_t n)
{
	uint32_t i;

	kc_fill(e->q, j, first, n, 0);
	for (i = first; i < first + n; i++) {
		struct nkv_result r;

		cr_assert_eq(nkv_store(e->q, nkv_kvc_key(j->l, i), j->l.klen,
				       nkv_qpair_slot(e->q, i, NULL), KC_VLEN, 0, &r), 0);
		cr_assert_eq(r.status, 0, "key %u: %#x", i, r.status);
	}
}

/* The prefix lookup with the first @k keys present, batches of @width. */
static void kc_prefix_at(struct kc_job *j, uint32_t k, uint32_t width)
{
	uint32_t end = k < KC_N ? (k / width + 1u) * width : KC_N;

	cr_assert_eq(kc_run(j, KC_PREFIX), 0);
	cr_expect_eq(j->ret, k, "block %u klen %u: %u present, prefix said %u", j->block,
		     j->l.klen, k, j->ret);
	cr_expect_eq(kc_count(j, 0, k, NKV_KVC_OK), k, "block %u: leading entries ok", j->block);
	if (k < KC_N) {
		cr_expect_eq(j->out[k].outcome, NKV_KVC_ABSENT, "entry %u", k);
		cr_expect_eq(j->out[k].status, NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS));
		/* The rest of the missing batch was asked and is absent too. */
		cr_expect_eq(kc_count(j, k, end, NKV_KVC_ABSENT), end - k);
	}
	/* Batches after the first one with a miss were never asked. */
	cr_expect_eq(kc_count(j, end, KC_N, 0xffffffffu), KC_N - end,
		     "block %u k %u: the lookup stopped after batch %u", j->block, k, end / width);
}

/* 0, 21 (inside a batch of 16 or 32), 32 (a batch boundary), 64 (never). */
static void kc_prefix_cases(uint32_t klen)
{
	static const uint32_t ks[] = { 0, 21, 32, KC_N };
	struct kc_job *j = calloc(1, sizeof(*j));
	struct kc_env e;
	uint32_t c, have = 0;

	cr_assert(j);
	kc_up(&e, 0);
	kc_keys(j, klen, 7 + klen);
	j->qp = nkv_qpair_dev(e.q);
	j->wave = 16;
	for (c = 0; c < sizeof(ks) / sizeof(ks[0]); c++) {
		kc_sync_store(&e, j, have, ks[c] - have);
		have = ks[c];
		j->block = 0;
		kc_prefix_at(j, have, 16);
		j->block = 32;
		kc_prefix_at(j, have, 32);
	}
	kc_down(&e);
	free(j);
}

Test(host_kvcache, prefix_inline_keys, .timeout = 60)
{
	kc_prefix_cases(16);
}

Test(host_kvcache, prefix_head_form_keys, .timeout = 60)
{
	kc_prefix_cases(32);
}

/* Content-addressed: the first Store of each key is ok, the second one
 * (other bytes in its page) "exists", and the first value stays. */
static void kc_store_twice(struct kc_env *e, struct kc_job *j, uint32_t block)
{
	uint32_t i;

	j->block = block;
	kc_fill(e->q, j, 0, KC_N, 0);
	cr_assert_eq(kc_run(j, KC_STORE), 0);
	cr_expect_eq(j->ret, KC_N);
	cr_expect_eq(kc_count(j, 0, KC_N, NKV_KVC_OK), KC_N, "block %u: first Store", block);
	kc_fill(e->q, j, 0, KC_N, 1);
	cr_assert_eq(kc_run(j, KC_STORE), 0);
	cr_expect_eq(j->ret, KC_N, "exists counts as done");
	cr_expect_eq(kc_count(j, 0, KC_N, NKV_KVC_EXISTS), KC_N, "block %u: second Store", block);
	cr_expect_eq(j->out[5].status, NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_EXISTS));
	kc_clear(e->q);
	cr_assert_eq(kc_run(j, KC_RETRIEVE), 0);
	cr_expect_eq(j->ret, KC_N);
	for (i = 0; i < KC_N; i++) {
		cr_expect_eq(j->out[i].outcome, NKV_KVC_OK, "key %u", i);
		cr_expect_eq(j->out[i].dw0, KC_VLEN);
		cr_expect_eq(kc_check(e->q, j, i), -1, "key %u: the first value, intact", i);
	}
}

Test(host_kvcache, content_addressed_store, .timeout = 60)
{
	struct kc_job *j = calloc(1, sizeof(*j));
	struct kc_env e;

	cr_assert(j);
	kc_up(&e, 0);
	j->qp = nkv_qpair_dev(e.q);
	j->wave = 16;
	kc_keys(j, 32, 1);
	kc_store_twice(&e, j, 0);
	kc_keys(j, 16, 2);
	kc_store_twice(&e, j, 32);
	kc_down(&e);
	free(j);
}

/* Three batches in flight, waited 2, 0, 1, values landing in pages in
 * reverse order: every page holds its own key's value. */
static void kc_ooo(struct kc_env *e, struct kc_job *j, uint32_t block)
{
	uint32_t width = block ? block : j->wave, n = 3u * width, i;

	j->block = block;
	j->order[0] = 2;
	j->order[1] = 0;
	j->order[2] = 1;
	for (i = 0; i < KC_N; i++)
		j->pages[i] = KC_N - 1u - i;
	kc_clear(e->q);
	cr_assert_eq(kc_run(j, KC_OOO), 0);
	cr_expect_eq(j->ret, n < KC_N ? n : KC_N, "block %u", block);
	for (i = 0; i < KC_N; i++) {
		if (i >= n) {
			cr_expect_eq(j->out[i].outcome, 0xffffffffu, "entry %u: past the batches", i);
			continue;
		}
		cr_expect_eq(j->out[i].outcome, NKV_KVC_OK, "block %u entry %u", block, i);
		cr_expect_eq(kc_check(e->q, j, i), -1, "block %u key %u in page %u", block, i,
			     j->pages[i]);
	}
}

Test(host_kvcache, batches_reaped_out_of_order, .timeout = 60)
{
	struct kc_job *j = calloc(1, sizeof(*j));
	struct kc_env e;

	cr_assert(j);
	kc_up(&e, 0);
	j->qp = nkv_qpair_dev(e.q);
	j->wave = 16;
	kc_keys(j, 32, 3);
	kc_sync_store(&e, j, 0, KC_N);
	kc_ooo(&e, j, 0);
	j->wave = 8;
	kc_ooo(&e, j, 16);
	kc_down(&e);
	free(j);
}

/* A controller that answers every Retrieve with success, DW0 0 and junk:
 * every entry is "short", none ok, none counted done. */
Test(host_kvcache, lying_controller_is_short, .timeout = 60)
{
	struct kc_job *j = calloc(1, sizeof(*j));
	struct kc_env e;
	uint32_t i;

	cr_assert(j);
	kc_up(&e, 1);
	j->qp = nkv_qpair_dev(e.q);
	j->wave = 16;
	kc_keys(j, 16, 4);
	kc_fill(e.q, j, 0, KC_N, 0);
	cr_assert_eq(kc_run(j, KC_STORE), 0);
	cr_expect_eq(kc_count(j, 0, KC_N, NKV_KVC_OK), KC_N);
	cr_assert_eq(kc_run(j, KC_RETRIEVE), 0);
	cr_expect_eq(j->ret, 0, "a short entry is never done");
	for (i = 0; i < KC_N; i++) {
		cr_expect_eq(j->out[i].outcome, NKV_KVC_SHORT, "entry %u", i);
		cr_expect_eq(j->out[i].status, 0);
		cr_expect_eq(j->out[i].dw0, 0);
	}
	j->block = 32;
	cr_assert_eq(kc_run(j, KC_RETRIEVE), 0);
	cr_expect_eq(kc_count(j, 0, KC_N, NKV_KVC_SHORT), KC_N, "block flavour");
	kc_down(&e);
	free(j);
}

/* An honest controller: a value of another size than expected is short
 * too (DW0 says the stored size), a missing key absent. */
Test(host_kvcache, size_mismatch_and_absent, .timeout = 60)
{
	struct kc_job *j = calloc(1, sizeof(*j));
	struct kc_env e;

	cr_assert(j);
	kc_up(&e, 0);
	j->qp = nkv_qpair_dev(e.q);
	j->wave = 16;
	kc_keys(j, 32, 5);
	kc_sync_store(&e, j, 0, KC_N / 2);
	j->l.size = KC_VLEN / 2;
	cr_assert_eq(kc_run(j, KC_RETRIEVE), 0);
	cr_expect_eq(j->ret, 0);
	cr_expect_eq(kc_count(j, 0, KC_N / 2, NKV_KVC_SHORT), KC_N / 2, "stored 4 KiB, expected 2");
	cr_expect_eq(j->out[0].dw0, KC_VLEN);
	cr_expect_eq(kc_count(j, KC_N / 2, KC_N, NKV_KVC_ABSENT), KC_N / 2);
	j->l.size = KC_VLEN + 1;
	cr_assert_eq(kc_run(j, KC_RETRIEVE), 0);
	cr_expect_eq(kc_count(j, 0, KC_N, NKV_KVC_ERROR), KC_N, "larger than a page: not sent");
	cr_expect_eq(j->out[0].err, NKV_EMSGSIZE);
	kc_down(&e);
	free(j);
}
