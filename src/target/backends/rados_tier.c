// SPDX-License-Identifier: MIT
/*
 * rados_tier.c - the RADOS backend's volatile tier: TTL'd and ephemeral
 * values live in a mem backend inside the rados one (mem.h's
 * volatile-tier API), never in RADOS, so they age out, count in bytes
 * and keys used, and are gone at exit. A key lives in one tier at a
 * time; this file decides, per op, which tier serves it and what RADOS
 * must do first (docs/ceph.md, "TTL, ephemeral and touch on rados").
 *
 * Ops the tier serves complete on the submitting thread (a lookup in
 * memory); anything that needs RADOS goes through librados' asynchronous
 * API, and a volatile Store reaches the tier from the completion
 * callback, so the poll thread never waits on the cluster.
 */
#include <errno.h>
#include <rados/librados.h>
#include <stdbool.h>
#include <stdio.h>

#include "kvmap.h"
#include "mem.h"
#include "rados_int.h"
#include "registry.h"

static uint16_t nkv_rados_st(uint8_t sc)
{
	return NKV_STATUS(NKV_SCT_GENERIC, sc);
}

int nkv_rados_tier_open(struct nkv_be_rados *rb, const struct nkv_rados_opts *o,
			char *err, size_t errlen)
{
	struct nkv_be_conf c = {
		.size = sizeof(c),
		.ns_name = rb->ns,
		.capacity = o->volatile_cap ? o->volatile_cap : NKV_RADOS_DEF_VOLATILE,
		.max_value = rb->be.max_value,
	};
	char why[256];

	rb->tier = nkv_be_create("mem", &c, why, sizeof(why));
	if (!rb->tier) {
		nkv_rados_err(err, errlen, "rados: volatile tier (--volatile-capacity): %s", why);
		return -ENOMEM;
	}
	return 0;
}

/* What the tier must have free before a durable value is given up for a
 * volatile one: what the mem backend will charge for it. */
static uint64_t nkv_rados_tier_cost(const struct nkv_be_op *op)
{
	return nkv_be_mem_key_cost(op->len) + nkv_kvmap_long_bytes(op->klen);
}

/*
 * A Store's tier decision. Volatile (TTL, ephemeral, touch) over a
 * volatile key: the tier alone. Durable over a volatile key: RADOS,
 * where MUST_EXIST cannot see the key, then the tier entry goes.
 * Volatile over a key not in the tier: RADOS first (evict or stat).
 */
static bool nkv_rados_tier_store(struct nkv_be_rados *rb, struct nkv_rados_req *r)
{
	struct nkv_be_op *op = r->op;
	bool vol = op->options & NKV_STORE_VENDOR_MASK;

	if (nkv_be_mem_has(rb->tier, op->key, op->klen)) {
		if (vol) {
			op->status = nkv_be_mem_run(rb->tier, op);
			return true;
		}
		if (op->options & NKV_STORE_MUST_NOT_EXIST) {
			op->status = nkv_rados_st(NKV_SC_KV_KEY_EXISTS);
			return true;
		}
		r->opts &= ~NKV_STORE_MUST_EXIST;
		r->drop_tier = true;
		return false;
	}
	if (!vol)
		return false;
	if (op->options & NKV_STORE_TOUCH) {
		r->kind = NKV_RADOS_TOUCH;
		return false;
	}
	/* Checked before the durable copy goes, so a full tier costs no data. */
	if (nkv_be_mem_room(rb->tier) < nkv_rados_tier_cost(op)) {
		op->status = nkv_rados_st(NKV_SC_CAPACITY_EXCEEDED);
		return true;
	}
	r->kind = NKV_RADOS_EVICT;
	return false;
}

bool nkv_rados_tier_serve(struct nkv_be_rados *rb, struct nkv_rados_req *r)
{
	struct nkv_be_op *op = r->op;
	uint16_t st;

	r->opts = op->options;
	switch (op->opc) {
	case NKV_KV_STORE:
		return nkv_rados_tier_store(rb, r);
	case NKV_KV_RETRIEVE:
	case NKV_KV_EXIST:
	case NKV_KV_DELETE:
		st = nkv_be_mem_run(rb->tier, op);
		if (st == nkv_rados_st(NKV_SC_KV_KEY_NOT_EXISTS))
			return false;	/* not volatile: RADOS has it or nobody */
		op->status = st;
		return true;
	default:
		return false;
	}
}

/* A volatile Store's RADOS step: with MUST_NOT_EXIST only a stat (an
 * existing durable value must survive the refusal), else the removal. */
int nkv_rados_prep_tier(struct nkv_rados_req *r)
{
	if (r->kind == NKV_RADOS_EVICT && !(r->op->options & NKV_STORE_MUST_NOT_EXIST))
		return rados_aio_remove(r->rb->io, r->oid, r->comp);
	r->rop = rados_create_read_op();
	if (!r->rop)
		return -ENOMEM;
	rados_read_op_stat(r->rop, &r->size, &r->mtime, &r->stat_rv);
	return rados_aio_read_op_operate(r->rop, r->rb->io, r->comp, r->oid, 0);
}

/* rv: the removal's (or the stat's) result. The durable copy is gone or
 * never was: the value goes into the tier (read from the client here,
 * on librados' finisher thread, which the core's copy helpers allow). */
static uint16_t nkv_rados_evict_done(struct nkv_rados_req *r, int rv)
{
	struct nkv_be_op *op = r->op;
	uint32_t opts = op->options;
	uint16_t st;

	if (rv < 0 && rv != -ENOENT)
		return nkv_rados_status(rv);
	if (rv == 0 && (opts & NKV_STORE_MUST_NOT_EXIST))
		return nkv_rados_st(NKV_SC_KV_KEY_EXISTS);
	if (rv == -ENOENT && (opts & NKV_STORE_MUST_EXIST))
		return nkv_rados_st(NKV_SC_KV_KEY_NOT_EXISTS);
	if (rv == 0)
		nkv_rados_forget_one(r->rb);
	/* Both tiers were asked: the tier must not refuse for its own view. */
	op->options &= ~NKV_STORE_MUST_EXIST;
	st = nkv_be_mem_run(r->rb->tier, op);
	op->options = opts;
	return st;
}

/* A touch of a durable key: it has no TTL to restart, and cannot get one
 * without becoming volatile (re-store it with NKV_STORE_TTL for that). */
static uint16_t nkv_rados_touch_done(struct nkv_rados_req *r, int rv)
{
	if (rv < 0)
		return nkv_rados_status(rv);
	return r->op->options & NKV_STORE_TTL ? nkv_rados_st(NKV_SC_INVALID_FIELD) : 0;
}

void nkv_rados_tier_complete(struct nkv_rados_req *r, int rv)
{
	if (r->kind == NKV_RADOS_EVICT)
		r->op->status = nkv_rados_evict_done(r, rv);
	else
		r->op->status = nkv_rados_touch_done(r, rv);
}
