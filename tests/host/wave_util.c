/* SPDX-License-Identifier: MIT */
/* wave_util.c - see wave_util.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host_util.h"
#include "nkv_dev.h"
#include "nkv_list.h"
#include "wave_util.h"

enum wu_op { WU_STORE, WU_RETRIEVE, WU_EXIST, WU_DELETE, WU_GONE, WU_LIST };

struct wu_wave {
	struct nkv_dev_qp *qp;
	uint32_t qidx;
};

struct wu_job {
	struct wu_run *r;
	struct wu_wave w[WU_MAX_QPS];
	enum wu_op op;
	struct wu_result res;	/* updated with atomics (lanes, waves) */
};

#define WU_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)

static uint32_t wu_seed(const struct wu_run *r, uint32_t q, uint32_t i)
{
	return (r->salt << 24) ^ (q << 20) ^ (i * 2654435761u);
}

static void wu_bad(struct wu_job *j, uint32_t i, uint32_t status)
{
	WU_ADD(&j->res.bad, 1);
	j->res.last_status = status;
	j->res.first_bad = i;
}

/* One lane's SQE for key i of queue pair q through slot s. */
static struct nkv_prep wu_prep(struct wu_job *j, struct wu_wave *w, uint32_t i, uint32_t s)
{
	struct wu_run *r = j->r;
	uint32_t salt = r->salt * WU_MAX_QPS + w->qidx;
	uint8_t key[16];
	uint32_t kl = ht_key(i, salt, key), len = ht_size(i, salt, r->max_size);

	switch (j->op) {
	case WU_STORE:
		ht_fill(nkv_dev_value(w->qp, s), len, wu_seed(r, w->qidx, i));
		return nkv_dev_store(w->qp, s, key, kl, 0, len);
	case WU_RETRIEVE:
		memset(nkv_dev_value(w->qp, s), 0, len < 64 ? len : 64);
		return nkv_dev_retrieve(w->qp, s, key, kl);
	case WU_EXIST:
	case WU_GONE:
		return nkv_dev_exist(w->qp, s, key, kl);
	case WU_DELETE:
		return nkv_dev_delete(w->qp, s, key, kl);
	default:
		return nkv_prep_err(NKV_EINVAL);
	}
}

static void wu_check(struct wu_job *j, struct wu_wave *w, uint32_t i, uint32_t s,
		     const struct nkv_dev_result *res)
{
	struct wu_run *r = j->r;
	uint32_t salt = r->salt * WU_MAX_QPS + w->qidx;
	uint32_t len = ht_size(i, salt, r->max_size);
	if (j->op == WU_GONE) {
		if (res->status == NKV_SC_KV_KEY_NOT_EXISTS) {
			WU_ADD(&j->res.missing, 1);
			WU_ADD(&j->res.ok, 1);
		} else {
			wu_bad(j, i, res->status);
		}
		return;
	}
	if (res->status) {
		wu_bad(j, i, res->status);
		return;
	}
	if (j->op == WU_RETRIEVE &&
	    (res->dw0 != len || ht_check(nkv_dev_value(w->qp, s), len, wu_seed(r, w->qidx, i)) != -1)) {
		wu_bad(j, i, 0x1000 | res->status);
		return;
	}
	WU_ADD(&j->res.ok, 1);
}

/* Collective: the lanes of one wave walk the key set W keys at a time. */
static void wu_lane_kv(struct wu_job *j, struct wu_wave *w)
{
	const struct nkv_wave wv = nkv_wave_enter();
	uint32_t W = nkv_wave_width(wv), slot = nkv_wave_slot(wv, 0), base;

	for (base = 0; base < j->r->keys; base += W) {
		uint32_t i = base + nkv_wave_rank(wv);
		int have = i < j->r->keys;
		/* Every lane takes part, whether its prep worked or not. */
		struct nkv_dev_result res =
			nkv_wave_exec(wv, w->qp, have, have ? wu_prep(j, w, i, slot) : nkv_prep_err(0));

		if (res.err) {
			WU_ADD(&j->res.errs, 1);
			j->res.last_err = res.err;
		} else if (have) {
			wu_check(j, w, i, slot, &res);
		}
	}
}

/* Is key (kl bytes) one of this wave's? Keys are "k" + hex of i << 8 |
 * salt, so the salt is the first two hex digits after the 'k'. */
static int wu_own(const struct wu_job *j, const struct wu_wave *w, const uint8_t *k, uint32_t kl)
{
	uint32_t salt = (j->r->salt * WU_MAX_QPS + w->qidx) & 0xffu;
	uint8_t want[16];

	ht_key(0, salt, want);
	return kl >= 3 && k[0] == 'k' && k[1] == want[1] && k[2] == want[2];
}

/* Collective: lane 0 pages through List (slot 0's buffer); others wait. */
static void wu_lane_list(struct wu_job *j, struct wu_wave *w)
{
	const struct nkv_dev_slot *sl = nkv_dev_slot_get(w->qp, 0);
	uint8_t start[16] = { 0 }, k[16];
	const struct nkv_wave wv = nkv_wave_enter();
	uint32_t startlen = 0, kl, pages;
	int lead = wv.lane == wv.leader, done = 0;

	for (pages = 0; pages < 100000; pages++) {
		struct nkv_prep p = nkv_sqe_list(w->qp->nsid, start, startlen, 4096, sl->prp1, 0);
		struct nkv_dev_result res = nkv_wave_exec(wv, w->qp, lead, p);
		struct nkv_list_dec d;
		uint32_t fresh = 0;
		int err = res.err, rc;

		if (lead && !err && !res.status && !nkv_list_dec_init(&d, (void *)(uintptr_t)sl->addr, 4096)) {
			while ((rc = nkv_list_dec_next(&d, k, sizeof(k), &kl)) == 1) {
				if (startlen == kl && !memcmp(k, start, kl))
					continue;
				fresh++;
				if (wu_own(j, w, k, kl))
					WU_ADD(&j->res.listed, 1);
				memcpy(start, k, kl);
				startlen = kl;
			}
			if (rc)
				wu_bad(j, 0, 0x2000);
		} else if (lead) {
			WU_ADD(&j->res.errs, 1);
			j->res.last_err = err ? err : -(int)res.status;
		}
		done = (int)nkv_cpu_bcast(wv.mask, !fresh, wv.leader);
		if (done)
			break;
	}
}

static void wu_lane(void *arg)
{
	struct wu_job *j = arg;
	struct wu_wave *w = &j->w[nkv_cpu_wave_id()];

	if (j->op == WU_LIST)
		wu_lane_list(j, w);
	else
		wu_lane_kv(j, w);
}

int wu_qpairs(struct nkv_ctrl *c, struct wu_run *r, uint64_t poll_budget)
{
	struct nkv_qpair_opts o = { .size = sizeof(o) };
	uint32_t q;
	int rc;

	o.depth = 128;
	o.slots = r->wave;
	o.slot_size = r->max_size;
	o.poll_budget = poll_budget;
	for (q = 0; q < r->nqp; q++) {
		rc = nkv_qpair_create(c, &o, &r->qp[q]);
		if (rc)
			return rc;
	}
	return 0;
}

void wu_qpairs_free(struct wu_run *r)
{
	uint32_t q;

	for (q = 0; q < r->nqp; q++)
		nkv_qpair_destroy(r->qp[q]);
	memset(r->qp, 0, sizeof(r->qp));
}

static int wu_launch(struct wu_job *j, enum wu_op op)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), j->r->mode, j->r->nqp, j->r->wave, 0 };

	j->op = op;
	return nkv_cpu_launch(&cfg, wu_lane, j);
}

int wu_full_cycle(struct wu_run *r, struct wu_result *res)
{
	static const enum wu_op ops[] = { WU_STORE, WU_RETRIEVE, WU_EXIST, WU_LIST,
					  WU_DELETE, WU_GONE };
	struct wu_job *j = calloc(1, sizeof(*j));
	uint32_t q, k;
	int rc = 0;

	if (!j)
		return -ENOMEM;
	j->r = r;
	j->res.first_bad = -1;
	for (q = 0; q < r->nqp && !rc; q++) {
		j->w[q].qp = nkv_qpair_dev(r->qp[q]);
		j->w[q].qidx = q;
	}
	for (k = 0; !rc && k < sizeof(ops) / sizeof(ops[0]); k++)
		rc = wu_launch(j, ops[k]);
	*res = j->res;
	free(j);
	return rc;
}
