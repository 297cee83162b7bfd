/* SPDX-License-Identifier: MIT */
/* kvc_util.c - see kvc_util.h. */
#include <string.h>

#include "host_util.h"
#include "kvc_util.h"

void kc_keys(struct kc_job *j, uint32_t klen, uint32_t salt)
{
	uint32_t i, b;

	for (i = 0; i < KC_N; i++) {
		uint8_t *k = j->keys + i * klen;

		for (b = 0; b < klen; b++)
			k[b] = (uint8_t)((i * 131u + b * 7u + salt * 29u) ^ (b * salt));
		k[0] = (uint8_t)i;
		k[1] = (uint8_t)salt;
		j->pages[i] = i;
	}
	j->l = nkv_kvc_list_of(j->keys, klen, KC_N, j->pages, KC_VLEN);
}

int kc_qpair(struct nkv_ctrl *c, struct nkv_qpair **q)
{
	struct nkv_qpair_opts o = { .size = sizeof(o) };

	o.depth = 128;
	o.slots = KC_N;
	o.slot_size = KC_VLEN;
	return nkv_qpair_create(c, &o, q);
}

/* Key i's value: a pattern seeded by an FNV-1a of its bytes. */
static uint32_t kc_seed(const struct kc_job *j, uint32_t i)
{
	const uint8_t *k = nkv_kvc_key(j->l, i);
	uint32_t h = 2166136261u, b;

	for (b = 0; b < j->l.klen; b++)
		h = (h ^ k[b]) * 16777619u;
	return h;
}

void kc_fill(struct nkv_qpair *q, const struct kc_job *j, uint32_t first, uint32_t n, int junk)
{
	uint32_t i;

	for (i = first; i < first + n; i++)
		ht_fill(nkv_qpair_slot(q, j->pages[i], NULL), KC_VLEN, kc_seed(j, i) ^ (junk ? 0x5a5a : 0));
}

long kc_check(struct nkv_qpair *q, const struct kc_job *j, uint32_t i)
{
	return ht_check(nkv_qpair_slot(q, j->pages[i], NULL), KC_VLEN, kc_seed(j, i));
}

void kc_clear(struct nkv_qpair *q)
{
	uint32_t i;

	for (i = 0; i < KC_N; i++)
		memset(nkv_qpair_slot(q, i, NULL), 0, KC_VLEN);
}

/* Three batches of a wave's (block's) width in flight at once, waited in
 * j->order: KC_OOO. */
static uint32_t kc_wave_ooo(struct nkv_wave w, struct kc_job *j)
{
	uint32_t width = nkv_wave_width(w), k, done = 0;
	struct nkv_ticket t[3];

	for (k = 0; k < 3; k++)
		t[k] = nkv_wave_kvc_submit(w, j->qp, NKV_KV_RETRIEVE, j->l, k * width, width);
	for (k = 0; k < 3; k++)
		done += nkv_wave_kvc_wait(w, j->qp, t[j->order[k]], NKV_KV_RETRIEVE, j->l,
					  j->order[k] * width, width, j->out);
	return done;
}

static uint32_t kc_block_ooo(struct nkv_block b, struct kc_job *j)
{
	uint32_t k, done = 0;
	struct nkv_ticket t[3];

	for (k = 0; k < 3; k++)
		t[k] = nkv_block_kvc_submit(b, j->qp, NKV_KV_RETRIEVE, j->l, k * b.size, b.size);
	for (k = 0; k < 3; k++)
		done += nkv_block_kvc_wait(b, j->qp, t[j->order[k]], NKV_KV_RETRIEVE, j->l,
					   j->order[k] * b.size, b.size, j->out);
	return done;
}

static uint8_t kc_opc(const struct kc_job *j)
{
	return j->op == KC_STORE ? NKV_KV_STORE : NKV_KV_RETRIEVE;
}

static void kc_wave(struct kc_job *j)
{
	const struct nkv_wave w = nkv_wave_enter();
	uint32_t r;

	if (j->op == KC_PREFIX)
		r = nkv_wave_kvc_prefix(w, j->qp, nkv_wave_slot(w, 0), j->l, j->out);
	else if (j->op == KC_OOO)
		r = kc_wave_ooo(w, j);
	else
		r = nkv_wave_kvc_all(w, j->qp, kc_opc(j), j->l, j->out);
	if (w.lane == w.leader)
		j->ret = r;
}

static void kc_block(struct kc_job *j)
{
	NKV_BLOCK_SHARED(sh);
	const struct nkv_block b = nkv_block_enter(sh);
	uint32_t r;

	if (j->op == KC_PREFIX)
		r = nkv_block_kvc_prefix(b, j->qp, nkv_block_slot(b, 0), j->l, j->out);
	else if (j->op == KC_OOO)
		r = kc_block_ooo(b, j);
	else
		r = nkv_block_kvc_all(b, j->qp, kc_opc(j), j->l, j->out);
	if (b.thread == 0)
		j->ret = r;
}

static void kc_lane(void *arg)
{
	struct kc_job *j = arg;

	if (j->block)
		kc_block(j);
	else
		kc_wave(j);
}

int kc_run(struct kc_job *j, enum kc_op op)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), NKV_CPU_FIBERS, 1, j->wave, 0 };

	if (j->block) {
		cfg.waves = j->block / j->wave;
		cfg.block_size = j->block;
	}
	j->op = op;
	j->ret = 0xffffffffu;
	memset(j->out, 0xff, sizeof(j->out));
	return nkv_cpu_launch(&cfg, kc_lane, j);
}

uint32_t kc_count(const struct kc_job *j, uint32_t from, uint32_t to, uint32_t want)
{
	uint32_t i, n = 0;

	for (i = from; i < to; i++)
		n += j->out[i].outcome == want;
	return n;
}
