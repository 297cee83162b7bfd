// SPDX-License-Identifier: MIT
/*
 * rados.c - the RADOS backend: one NVMe KV namespace on one RADOS
 * namespace, through librados' asynchronous API. This file: the op path,
 * the type and its create; List in rados_list.c, the volatile tier (TTL'd
 * and ephemeral values, in memory) in rados_tier.c, the shared cluster
 * connections in rados_conn.c (rados_int.h between them).
 *
 * Durable Store/Retrieve/Delete/Exist become one guarded RADOS operation
 * each, so the KV options need no read-then-write race window. List runs on a
 * per-backend worker thread, because librados' object listing is
 * synchronous and the core's poll thread must never block.
 */
#include "mem.h"
#include "rados_int.h"
#include "registry.h"

#include <errno.h>
#include <pthread.h>
#include <rados/librados.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NKV_RADOS_DEF_OP_TIMEOUT 5u	/* s; docs/ceph.md: why not Ceph's 0 (never) */
#define NKV_RADOS_DEF_MOUNT_TIMEOUT 10u
#define NKV_RADOS_DEF_MAX_VALUE (1u << 20)
#define NKV_RADOS_DEF_INFLIGHT 128u
#define NKV_RADOS_CAPACITY (1ull << 40)	/* NSZE: the pool's quotas bound it */

uint64_t nkv_rados_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void nkv_rados_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */

size_t nkv_rados_key_to_oid(const uint8_t *key, uint32_t klen, char *buf)
{
	static const char hex[] = "0123456789abcdef";
	uint32_t i;

	if (klen > NKV_KEY_MAX)
		klen = NKV_KEY_MAX;
	for (i = 0; i < klen; i++) {
		buf[2 * i] = hex[key[i] >> 4];
		buf[2 * i + 1] = hex[key[i] & 0xf];
	}
	buf[2 * klen] = '\0';
	return 2 * (size_t)klen;
}

static int nkv_rados_nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;	/* uppercase too: only one spelling maps to a key */
}

int nkv_rados_oid_to_key(const char *oid, size_t len, uint8_t key[NKV_KEY_MAX])
{
	size_t i;

	if (len < 2 || len > 2 * NKV_KEY_MAX || (len & 1))
		return -1;
	for (i = 0; i < len / 2; i++) {
		int hi = nkv_rados_nibble(oid[2 * i]);
		int lo = nkv_rados_nibble(oid[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		key[i] = (uint8_t)(hi << 4 | lo);
	}
	return (int)(len / 2);
}

/* ------------------------------------------------------------------ */
/* Status mapping and completion                                       */
/* ------------------------------------------------------------------ */

uint16_t nkv_rados_status(int rv)
{
	uint8_t sc;

	if (rv >= 0)
		return 0;
	switch (-rv) {
	case ENOENT: sc = NKV_SC_KV_KEY_NOT_EXISTS; break;
	case EEXIST: sc = NKV_SC_KV_KEY_EXISTS; break;
	case EFBIG:
	case E2BIG: sc = NKV_SC_KV_INVALID_VALUE_SIZE; break;
	case ENOSPC:
	case EDQUOT: sc = NKV_SC_CAPACITY_EXCEEDED; break;
	case EFAULT: sc = NKV_SC_DATA_XFER_ERROR; break;	/* client page vanished */
	default: sc = NKV_SC_KV_UNRECOVERED_ERROR; break;	/* ETIMEDOUT too */
	}
	return NKV_STATUS(NKV_SCT_GENERIC, sc);
}

static int nkv_rados_issue(struct nkv_rados_req *r);

static void nkv_rados_req_free(struct nkv_rados_req *r)
{
	if (r->wop)
		rados_release_write_op(r->wop);
	if (r->rop)
		rados_release_read_op(r->rop);
	if (r->comp)
		rados_aio_release(r->comp);
	free(r->bounce);
	free(r);
}

/*
 * The first waiting op that still has time for its RADOS op; the ones
 * that waited a whole op timeout for a slot go onto *late, to be answered
 * 88h unissued: every command ends within the cmd_timeout_ms the backend
 * advertises, one op timeout waiting here and one on RADOS (docs/ceph.md,
 * "How long a command may take"). Caller holds rb->lock.
 */
static struct nkv_rados_req *nkv_rados_next_waiter(struct nkv_be_rados *rb,
						   struct nkv_rados_req **late)
{
	uint64_t now = nkv_rados_now_ms(), limit = (uint64_t)rb->op_timeout_s * 1000u;
	struct nkv_rados_req *w;

	while ((w = rb->wait_head)) {
		rb->wait_head = w->next;
		if (!rb->wait_head)
			rb->wait_tail = NULL;
		w->next = NULL;
		if (now - w->t_submit_ms < limit)
			return w;
		w->next = *late;
		*late = w;
	}
	return NULL;
}

/*
 * Hand op back to the core, then let a waiting op take the freed slot.
 * done() goes first and outside our lock: the core may submit again from
 * it, and we hold no lock the core knows about.
 */
void nkv_rados_finish(struct nkv_rados_req *r, bool was_issued)
{
	struct nkv_be_rados *rb = r->rb;
	struct nkv_be_op *op = r->op;
	struct nkv_rados_req *w = NULL, *late = NULL, *next;

	nkv_rados_req_free(r);
	op->done(op);
	pthread_mutex_lock(&rb->lock);
	if (was_issued) {
		rb->inflight--;
		w = nkv_rados_next_waiter(rb, &late);
		if (w)
			rb->inflight++;
	}
	rb->queued--;
	if (!rb->queued)
		pthread_cond_broadcast(&rb->idle);
	pthread_mutex_unlock(&rb->lock);
	for (; late; late = next) {
		next = late->next;
		late->op->status = NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_UNRECOVERED_ERROR);
		nkv_rados_finish(late, false);
	}
	if (w && nkv_rados_issue(w) < 0)
		nkv_rados_finish(w, true);
}

/*
 * librados reads and writes a buffer in its own threads, which the
 * target does not own and cannot guard: it gets client memory directly
 * only when the core offers it (nkv_be_direct: one segment whose pages
 * cannot vanish). Otherwise a Store is copied into a bounce buffer on the
 * submitting thread, and a Retrieve is read into one and copied out from
 * the completion callback, both through the core's guarded helpers.
 */
static void nkv_rados_account(struct nkv_rados_req *r)
{
	struct nkv_be_rados *rb = r->rb;
	struct nkv_be_op *op = r->op;

	if (op->opc == NKV_KV_STORE) {
		__atomic_add_fetch(&rb->bytes_est, (int64_t)op->len, __ATOMIC_RELAXED);
		/* An overwrite is only known as one when the host said so (a
		 * key that was volatile is new to RADOS: r->opts lacks it). */
		if (!(r->opts & NKV_STORE_MUST_EXIST))
			__atomic_add_fetch(&rb->keys_est, 1, __ATOMIC_RELAXED);
	} else if (op->opc == NKV_KV_DELETE) {
		nkv_rados_forget_one(rb);
	}
}

void nkv_rados_forget_one(struct nkv_be_rados *rb)
{
	int64_t keys = __atomic_load_n(&rb->keys_est, __ATOMIC_RELAXED);
	int64_t bytes = __atomic_load_n(&rb->bytes_est, __ATOMIC_RELAXED);

	/* The removed size is unknown: take the average one off. */
	__atomic_sub_fetch(&rb->bytes_est, keys > 0 ? bytes / keys : 0, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&rb->keys_est, 1, __ATOMIC_RELAXED);
}

/* librados' completion callback (a librados finisher thread). */
static void nkv_rados_complete(rados_completion_t c, void *arg)
{
	struct nkv_rados_req *r = arg;
	struct nkv_be_op *op = r->op;
	int rv = rados_aio_get_return_value(c);

	nkv_rados_health_note(&r->rb->conn->health, rv);
	if (r->kind != NKV_RADOS_PLAIN) {
		nkv_rados_tier_complete(r, rv);
		nkv_rados_finish(r, true);
		return;
	}
	op->status = nkv_rados_status(rv);
	if (op->opc == NKV_KV_RETRIEVE && rv >= 0) {
		op->dw0 = r->size > UINT32_MAX ? UINT32_MAX : (uint32_t)r->size;
		if (r->bounce)
			op->status = nkv_be_copy_out(op, r->bounce, r->bytes_read);
		else
			nkv_be_produced(op, r->bytes_read);
	}
	if (rv >= 0)
		nkv_rados_account(r);
	/* Only now: until RADOS has the value the volatile one is the key's. */
	if (rv >= 0 && r->drop_tier)
		nkv_be_mem_remove(r->rb->tier, op->key, op->klen);
	nkv_rados_finish(r, true);
}

/* ------------------------------------------------------------------ */
/* Store, Retrieve, Delete, Exist                                      */
/* ------------------------------------------------------------------ */

/* A Store's owner (issue 48), persisted with its value: the xattr
 * NKV_RADOS_OWNER_XATTR holds the tenant id as 16 hex digits, set in the
 * same write op as the value, so owner and value change together. */
#define NKV_RADOS_OWNER_XATTR "nkv.owner"

static int nkv_rados_prep_store(struct nkv_rados_req *r)
{
	struct nkv_be_op *op = r->op;
	const char *buf = r->bounce ? r->bounce : nkv_be_direct(op);

	/* A plain Store without an owner is one write_full: librados' own
	 * call for it costs the OSD less than a compound write op (measured
	 * in docs/ceph.md). */
	if (!(r->opts & (NKV_STORE_MUST_EXIST | NKV_STORE_MUST_NOT_EXIST)) && !op->owner)
		return rados_aio_write_full(r->rb->io, r->oid, r->comp, buf, op->len);
	r->wop = rados_create_write_op();
	if (!r->wop)
		return -ENOMEM;
	if (r->opts & NKV_STORE_MUST_EXIST)
		rados_write_op_assert_exists(r->wop);
	if (r->opts & NKV_STORE_MUST_NOT_EXIST)
		rados_write_op_create(r->wop, LIBRADOS_CREATE_EXCLUSIVE, NULL);
	rados_write_op_write_full(r->wop, buf, op->len);
	if (op->owner) {
		snprintf(r->owner, sizeof(r->owner), "%016llx", (unsigned long long)op->owner);
		rados_write_op_setxattr(r->wop, NKV_RADOS_OWNER_XATTR, r->owner, 16);
	}
	return rados_aio_write_op_operate(r->wop, r->rb->io, r->comp, r->oid, NULL, 0);
}

static int nkv_rados_prep_retrieve(struct nkv_rados_req *r)
{
	struct nkv_be_op *op = r->op;
	char *buf;

	r->rop = rados_create_read_op();
	if (!r->rop)
		return -ENOMEM;
	rados_read_op_stat(r->rop, &r->size, &r->mtime, &r->stat_rv);
	/* A read of length 0 means "everything" to RADOS: stat only then. */
	if (op->len) {
		buf = nkv_be_direct(op);
		if (!buf) {
			r->bounce = malloc(op->len);
			if (!r->bounce)
				return -ENOMEM;
			buf = r->bounce;
		}
		rados_read_op_read(r->rop, 0, op->len, buf, &r->bytes_read, &r->read_rv);
	}
	return rados_aio_read_op_operate(r->rop, r->rb->io, r->comp, r->oid, 0);
}

static int nkv_rados_prep_delete(struct nkv_rados_req *r)
{
	r->wop = rados_create_write_op();
	if (!r->wop)
		return -ENOMEM;
	rados_write_op_remove(r->wop);
	return rados_aio_write_op_operate(r->wop, r->rb->io, r->comp, r->oid, NULL, 0);
}

static int nkv_rados_prep_exist(struct nkv_rados_req *r)
{
	r->rop = rados_create_read_op();
	if (!r->rop)
		return -ENOMEM;
	rados_read_op_stat(r->rop, &r->size, &r->mtime, &r->stat_rv);
	return rados_aio_read_op_operate(r->rop, r->rb->io, r->comp, r->oid, 0);
}

/* Start r on librados. On a negative return, r->op->status is set and
 * the caller finishes r (the completion will never fire). */
static int nkv_rados_issue(struct nkv_rados_req *r)
{
	struct nkv_be_op *op = r->op;
	int rv;

	rv = rados_aio_create_completion2(r, nkv_rados_complete, &r->comp);
	if (rv < 0)
		goto fail;
	if (r->kind != NKV_RADOS_PLAIN)
		rv = nkv_rados_prep_tier(r);
	else switch (op->opc) {
	case NKV_KV_STORE: rv = nkv_rados_prep_store(r); break;
	case NKV_KV_RETRIEVE: rv = nkv_rados_prep_retrieve(r); break;
	case NKV_KV_DELETE: rv = nkv_rados_prep_delete(r); break;
	case NKV_KV_EXIST: rv = nkv_rados_prep_exist(r); break;
	default:
		op->status = NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_INVALID_OPCODE);
		return -EOPNOTSUPP;
	}
	if (rv >= 0)
		return 0;
fail:
	op->status = nkv_rados_status(rv);
	return rv;
}


/* ------------------------------------------------------------------ */
/* Backend ops                                                         */
/* ------------------------------------------------------------------ */

/* A Store's value into a bounce buffer, on the submitting thread (the
 * core's poll thread). 0 or an NVMe status. */
static uint16_t nkv_rados_copy_in(struct nkv_rados_req *r)
{
	struct nkv_be_op *op = r->op;

	r->bounce = malloc(op->len ? op->len : 1);
	if (!r->bounce)
		return NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_INTERNAL);
	return nkv_be_copy_in(op, r->bounce, op->len);
}

static int nkv_rados_submit(struct nkv_be *be, struct nkv_be_op *op)
{
	struct nkv_be_rados *rb = (struct nkv_be_rados *)be;
	struct nkv_rados_req *r;
	bool now = false, served;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->rb = rb;
	r->op = op;
	r->t_submit_ms = nkv_rados_now_ms();
	nkv_rados_key_to_oid(op->key, op->klen, r->oid);
	op->status = 0;
	op->dw0 = 0;
	/* The volatile tier first: what it serves completes here. */
	served = nkv_rados_tier_serve(rb, r);
	if (!served && op->opc == NKV_KV_STORE && r->kind == NKV_RADOS_PLAIN &&
	    !nkv_be_direct(op))
		op->status = nkv_rados_copy_in(r);
	if (served || op->status) {
		pthread_mutex_lock(&rb->lock);
		rb->queued++;
		pthread_mutex_unlock(&rb->lock);
		nkv_rados_finish(r, false);
		return 0;
	}
	pthread_mutex_lock(&rb->lock);
	if (rb->stopping) {
		pthread_mutex_unlock(&rb->lock);
		nkv_rados_req_free(r);
		return -ESHUTDOWN;
	}
	rb->queued++;
	if (op->opc == NKV_KV_LIST) {
		if (rb->list_tail)
			rb->list_tail->next = r;
		else
			rb->list_head = r;
		rb->list_tail = r;
		pthread_cond_signal(&rb->list_cond);
	} else if (rb->inflight < rb->max_inflight) {
		rb->inflight++;
		now = true;
	} else {
		/* Backpressure, not an error: issued when a slot frees up. */
		if (rb->wait_tail)
			rb->wait_tail->next = r;
		else
			rb->wait_head = r;
		rb->wait_tail = r;
	}
	pthread_mutex_unlock(&rb->lock);
	if (now && nkv_rados_issue(r) < 0)
		nkv_rados_finish(r, true);
	return 0;
}

static uint64_t nkv_rados_bytes_used(struct nkv_be *be)
{
	struct nkv_be_rados *rb = (struct nkv_be_rados *)be;
	int64_t v = __atomic_load_n(&rb->bytes_est, __ATOMIC_RELAXED);

	return (v > 0 ? (uint64_t)v : 0) + rb->tier->ops->bytes_used(rb->tier);
}

static uint64_t nkv_rados_keys_used(struct nkv_be *be)
{
	struct nkv_be_rados *rb = (struct nkv_be_rados *)be;
	int64_t v = __atomic_load_n(&rb->keys_est, __ATOMIC_RELAXED);

	return (v > 0 ? (uint64_t)v : 0) + rb->tier->ops->keys_used(rb->tier);
}

/*
 * Wait for every op (librados bounds each by rados_osd_op_timeout), then
 * free. The bound here is a safety net well past that timeout.
 */
static void nkv_rados_destroy(struct nkv_be *be)
{
	struct nkv_be_rados *rb = (struct nkv_be_rados *)be;
	struct timespec dl;
	int i;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 2 * (time_t)rb->op_timeout_s + 5;
	pthread_mutex_lock(&rb->lock);
	while (rb->queued)
		if (pthread_cond_timedwait(&rb->idle, &rb->lock, &dl) == ETIMEDOUT)
			break;
	rb->stopping = true;
	pthread_cond_signal(&rb->list_cond);
	i = (int)rb->queued;
	pthread_mutex_unlock(&rb->lock);
	pthread_join(rb->lister, NULL);
	if (i) {
		/* librados broke its own timeout: leak rather than free under it. */
		nkv_be_log(NKV_BE_LOG_ERROR, "event=backend_leaked backend=rados ns=%s "
			   "ops_in_flight=%d waited_s=%u", rb->ns, i, 2 * rb->op_timeout_s + 5);
		return;
	}
	for (i = 0; i < NKV_RADOS_CURSORS; i++)
		if (rb->cursors[i].cur)
			rados_object_list_cursor_free(rb->io, rb->cursors[i].cur);
	rb->tier->ops->destroy(rb->tier);	/* volatile values end here */
	rados_ioctx_destroy(rb->io);
	nkv_rados_conn_put(rb->conn);
	pthread_cond_destroy(&rb->list_cond);
	pthread_cond_destroy(&rb->idle);
	pthread_mutex_destroy(&rb->lock);
	free(rb->ns);
	free(rb);
}

static void nkv_rados_describe(struct nkv_be *be, char *buf, size_t len)
{
	snprintf(buf, len, "%s", ((struct nkv_be_rados *)be)->desc);
}

/* The metrics endpoint's figures: the cluster's health (rados_health.c). */
static unsigned nkv_rados_metrics(struct nkv_be *be, struct nkv_be_metric *out, unsigned max)
{
	struct nkv_rados_health *h = &((struct nkv_be_rados *)be)->conn->health;

	if (max < 2)
		return 0;
	out[0] = (struct nkv_be_metric){ "rados_cluster_up",
					 "1 while the cluster answers; 0 from cluster_lost to "
					 "cluster_back.", 0,
					 __atomic_load_n(&h->lost, __ATOMIC_RELAXED) ? 0 : 1 };
	out[1] = (struct nkv_be_metric){ "rados_cluster_lost_total",
					 "Times the cluster was lost (cluster_lost logged).", 1,
					 (double)__atomic_load_n(&h->lost_events, __ATOMIC_RELAXED) };
	return 2;
}

static const struct nkv_be_ops nkv_rados_ops = {
	.name = "rados",
	.submit = nkv_rados_submit,
	.bytes_used = nkv_rados_bytes_used,
	.keys_used = nkv_rados_keys_used,
	.describe = nkv_rados_describe,
	.metrics = nkv_rados_metrics,
	.destroy = nkv_rados_destroy,
	.read_range = nkv_rados_read_range,
};

/* ------------------------------------------------------------------ */
/* Create                                                              */
/* ------------------------------------------------------------------ */

static int nkv_rados_open(struct nkv_be_rados *rb, const struct nkv_rados_opts *o,
			  char *err, size_t errlen)
{
	const char *pool = o->pool && *o->pool ? o->pool : NKV_RADOS_DEF_POOL;
	struct rados_pool_stat_t st;
	int rv;

	rv = rados_ioctx_create(rb->conn->cluster, pool, &rb->io);
	if (rv < 0) {
		nkv_rados_err(err, errlen, "rados: cannot open pool '%s': %s%s", pool, strerror(-rv),
			      rv == -ENOENT ? " (create it: ceph osd pool create)" : "");
		return rv;
	}
	rados_ioctx_set_namespace(rb->io, rb->ns);
	/* Pool-wide numbers from the mgr's statistics (zero without a mgr):
	 * a starting estimate only, the namespace's own share is unknown. */
	if (rados_ioctx_pool_stat(rb->io, &st) == 0) {
		rb->bytes_est = (int64_t)st.num_bytes;
		rb->keys_est = (int64_t)st.num_objects;
	}
	return 0;
}

/* The settings it runs with, defaults filled in (describe()). */
static void nkv_rados_desc(struct nkv_be_rados *rb, const struct nkv_rados_opts *o, uint32_t mnt)
{
	snprintf(rb->desc, sizeof(rb->desc),
		 "pool=%s rados_ns=%s conf=%s id=%s%s%s op_timeout_s=%u mount_timeout_s=%u "
		 "max_inflight=%u volatile_capacity=%llu",
		 o->pool && *o->pool ? o->pool : NKV_RADOS_DEF_POOL, *rb->ns ? rb->ns : "(default)",
		 o->conf ? o->conf : "(default)", o->client && *o->client ? o->client : "admin",
		 o->keyring ? " keyring=" : "", o->keyring ? o->keyring : "", rb->op_timeout_s,
		 mnt, rb->max_inflight,
		 (unsigned long long)(o->volatile_cap ? o->volatile_cap : NKV_RADOS_DEF_VOLATILE));
}

/*
 * The longest a command waits here before it completes with a status:
 * one op timeout for a slot in the --max-inflight window (a waiter that
 * waited that long is answered 88h unissued) and one for its RADOS op,
 * which is always one: a guarded op for MUST_EXIST / MUST_NOT_EXIST, the
 * remove or stat before a volatile value goes to the tier (then memory
 * only). A List starts no batch after one op timeout (docs/ceph.md).
 */
static uint32_t nkv_rados_cmd_timeout_ms(uint32_t op_timeout_s)
{
	uint64_t ms = 2ull * op_timeout_s * 1000u;

	return ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}

static int nkv_rados_init(struct nkv_be_rados *rb, const struct nkv_rados_opts *o)
{
	rb->be.ops = &nkv_rados_ops;
	rb->be.csi = NKV_CSI_KV;
	rb->be.max_value = o->max_value ? o->max_value : NKV_RADOS_DEF_MAX_VALUE;
	rb->be.max_keys = 0;
	rb->be.capacity = NKV_RADOS_CAPACITY;
	rb->be.store_opts = NKV_STORE_VENDOR_MASK;	/* through the volatile tier */
	rb->op_timeout_s = o->op_timeout_s ? o->op_timeout_s : NKV_RADOS_DEF_OP_TIMEOUT;
	rb->be.cmd_timeout_ms = nkv_rados_cmd_timeout_ms(rb->op_timeout_s);
	rb->max_inflight = o->max_inflight ? o->max_inflight : NKV_RADOS_DEF_INFLIGHT;
	rb->ns = strdup(o->rados_ns ? o->rados_ns : "");
	if (!rb->ns)
		return -ENOMEM;
	nkv_rados_desc(rb, o, o->mount_timeout_s ? o->mount_timeout_s : NKV_RADOS_DEF_MOUNT_TIMEOUT);
	pthread_mutex_init(&rb->lock, NULL);
	pthread_cond_init(&rb->idle, NULL);
	pthread_cond_init(&rb->list_cond, NULL);
	return 0;
}

/*
 * Connect (or share a connection) and open pool / namespace. Returns the
 * backend, or NULL with a one-line reason in err (unreachable cluster,
 * missing pool). Never blocks longer than about mount_timeout_s.
 */
static struct nkv_be *nkv_rados_new(const struct nkv_rados_opts *o, char *err, size_t errlen)
{
	struct nkv_be_rados *rb;
	uint32_t mnt;

	nkv_rados_err(err, errlen, "no error");
	rb = calloc(1, sizeof(*rb));
	if (!rb || nkv_rados_init(rb, o) < 0) {
		free(rb);
		nkv_rados_err(err, errlen, "rados: out of memory");
		return NULL;
	}
	mnt = o->mount_timeout_s ? o->mount_timeout_s : NKV_RADOS_DEF_MOUNT_TIMEOUT;
	rb->conn = nkv_rados_conn_get(o, rb->op_timeout_s, mnt, err, errlen);
	if (!rb->conn)
		goto fail;
	if (nkv_rados_open(rb, o, err, errlen) < 0)
		goto fail_conn;
	if (nkv_rados_tier_open(rb, o, err, errlen) < 0)
		goto fail_io;
	if (pthread_create(&rb->lister, NULL, nkv_rados_lister, rb)) {
		nkv_rados_err(err, errlen, "rados: cannot start the List thread");
		goto fail_tier;
	}
	return &rb->be;
fail_tier:
	rb->tier->ops->destroy(rb->tier);
fail_io:
	rados_ioctx_destroy(rb->io);
fail_conn:
	nkv_rados_conn_put(rb->conn);
fail:
	pthread_cond_destroy(&rb->list_cond);
	pthread_cond_destroy(&rb->idle);
	pthread_mutex_destroy(&rb->lock);
	free(rb->ns);
	free(rb);
	return NULL;
}

/* An integer option of the rados backend: decimal (or 0x hex), 0 for the
 * default, at most max; the message names the option as nkv-target
 * takes it. */
static int nkv_rados_num(const struct nkv_be_conf *conf, const char *name, uint64_t max,
			 uint64_t *out, char *err, size_t errlen)
{
	const char *s = nkv_be_conf_get(conf, name);
	unsigned long long v;
	char *end;

	if (!s)
		return 0;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v > max) {
		nkv_rados_err(err, errlen, "bad value '%s' for --%s", s, name);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int nkv_rados_uint(const struct nkv_be_conf *conf, const char *name, uint32_t *out,
			  char *err, size_t errlen)
{
	uint64_t v = *out;
	int rv = nkv_rados_num(conf, name, UINT32_MAX, &v, err, errlen);

	*out = (uint32_t)v;
	return rv;
}

/* conf as the options of nkv_rados_new (the strings stay conf's).
 * conf->capacity and max_keys are not the backend's: the pool's quotas
 * bound it, and NSZE reports 1 TiB. */
static int nkv_rados_conf_opts(const struct nkv_be_conf *conf, struct nkv_rados_opts *o,
			       char *err, size_t errlen)
{
	if (conf->nvm) {
		nkv_rados_err(err, errlen, "rados backend: KV namespaces only, not NVM");
		return -EINVAL;
	}
	*o = (struct nkv_rados_opts){ 0 };
	o->pool = nkv_be_conf_get(conf, "pool");
	o->conf = nkv_be_conf_get(conf, "conf");
	o->client = nkv_be_conf_get(conf, "id");
	o->keyring = nkv_be_conf_get(conf, "keyring");
	o->rados_ns = conf->ns_name;
	o->max_value = conf->max_value;
	if (nkv_rados_uint(conf, "op-timeout", &o->op_timeout_s, err, errlen) ||
	    nkv_rados_uint(conf, "mount-timeout", &o->mount_timeout_s, err, errlen) ||
	    nkv_rados_uint(conf, "max-inflight", &o->max_inflight, err, errlen) ||
	    nkv_rados_num(conf, "volatile-capacity", UINT64_MAX, &o->volatile_cap,
			  err, errlen))
		return -EINVAL;
	return 0;
}

static int nkv_rados_check_conf(const struct nkv_be_conf *conf, char *err, size_t errlen)
{
	struct nkv_rados_opts o;

	return nkv_rados_conf_opts(conf, &o, err, errlen);
}

/* The options are parsed before anything connects, so a typo costs no
 * mount timeout. */
static struct nkv_be *nkv_rados_create_conf(const struct nkv_be_conf *conf, char *err, size_t errlen)
{
	struct nkv_rados_opts o;

	if (nkv_rados_conf_opts(conf, &o, err, errlen))
		return NULL;
	return nkv_rados_new(&o, err, errlen);
}

static const struct nkv_be_optdesc nkv_rados_optdesc[] = {
	{ "pool", "NAME", "pool (default kvpool)" },
	{ "conf", "PATH", "ceph.conf (default: librados' search path)" },
	{ "id", "NAME", "client name, e.g. nkv for client.nkv (default admin)" },
	{ "keyring", "PATH", "keyring (default: from the conf)" },
	{ "op-timeout", "SEC",
	  "rados_osd_op_timeout: a command fails (88h) after it,\n"
	  "though a Store may still be applied later (retry\n"
	  "with the same value, or check with Exist)\n"
	  "(default 5); a command waits at most twice this\n"
	  "(a slot, then its op), advertised to clients, which\n"
	  "wait longer; SIGTERM waits for operations in\n"
	  "flight, at most twice this (mem backend: 2 s at most)" },
	{ "mount-timeout", "SEC", "give up connecting after it (default 10)" },
	{ "max-inflight", "N", "librados operations in flight per namespace, more\n"
	  "wait in a queue (default 128)" },
	{ "volatile-capacity", "BYTES",
	  "memory per namespace for TTL'd and ephemeral values,\n"
	  "which never reach RADOS and are lost at exit\n"
	  "(default 1073741824, 1 GiB)" },
	{ NULL, NULL, NULL },
};

const struct nkv_be_type nkv_be_type_rados = {
	.name = "rados",
	.summary = "one RADOS object per key (pool = subsystem, NVMe namespace =\n"
		   "RADOS namespace named by --ns-map, object name = lowercase hex of the key)",
	.opts = nkv_rados_optdesc,
	.create = nkv_rados_create_conf,
	.check = nkv_rados_check_conf,
};
