/* SPDX-License-Identifier: MIT */
/*
 * sync.c - the synchronous API: one host thread drives a queue pair as a
 * one-lane wave of nkv_dev.h (outside a cpu-engine launch every
 * collective returns at once), so it runs exactly the device path: SQE
 * prep into the queue pair's own value buffer, wave submit (one SQ
 * doorbell), reap by phase (one CQ doorbell), result by CID. Only the
 * wait differs: it is bounded by time, not by a poll count, it sleeps
 * once past a short spin, and it ends as soon as the controller's watch
 * marks the queue pair gone.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "host/host.h"

/*
 * How a synchronous wait spends its time: it polls back to back for its
 * first NKV_H_SPIN_NS, so a completion that comes that fast costs no
 * sleep; then it sleeps an eighth of the time waited so far between
 * polls, NKV_H_NAP_MIN_NS to NKV_H_NAP_MAX_NS. A later completion is seen
 * at most about an eighth (plus the kernel's timer slack) late, and a
 * wait on a stalled controller wakes about 1000 times a second instead of
 * spinning a core (docs/host.md, "Waiting").
 */
#define NKV_H_SPIN_NS 20000ull
#define NKV_H_NAP_DIV 8u
#define NKV_H_NAP_MIN_NS 10000ull
#define NKV_H_NAP_MAX_NS 1000000ull

uint64_t nkv_h_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Between two empty polls of a wait that has lasted @waited ns. */
void nkv_h_sync_pause(uint64_t waited)
{
	uint64_t nap = waited / NKV_H_NAP_DIV;
	struct timespec ts = { 0, 0 };

	if (waited < NKV_H_SPIN_NS) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();	/* a spinning poller's hint to the core */
#endif
		return;
	}
	nap = nap < NKV_H_NAP_MIN_NS ? NKV_H_NAP_MIN_NS : nap;
	ts.tv_nsec = (long)(nap > NKV_H_NAP_MAX_NS ? NKV_H_NAP_MAX_NS : nap);
	nanosleep(&ts, NULL);
}

/* What a call on a failed queue pair returns: -ENOTCONN when the watch
 * found the controller gone, else -EIO; 0 while it is not failed. The
 * host-visible word holds every reason (device code mirrors its own). */
static int nkv_h_sync_failed(struct nkv_qpair *q)
{
	enum nkv_qp_state why = nkv_qpair_failed(q);

	if (why == NKV_QP_OK)
		why = (enum nkv_qp_state)nkv_dev_qp_failed(q->dev);
	return why == NKV_QP_OK ? 0 : why == NKV_QP_FAILED_GONE ? -ENOTCONN : -EIO;
}

/* Poll until the completion of cid is parked, within q->timeout_ms, or
 * until the watch (watch.c) marks the controller gone. */
static int nkv_h_sync_wait(struct nkv_qpair *q, uint16_t cid)
{
	struct nkv_dev_qp *d = q->dev;
	struct nkv_dev_cpl *t = q->cpl;
	struct nkv_ctrl *c = q->c;
	struct nkv_h_qstats *st = &c->qst[q->qid];
	uint64_t t0 = nkv_h_now_ns(), limit = (uint64_t)q->timeout_ms * 1000000ull;

	while (!__atomic_load_n(&t[cid].done, __ATOMIC_ACQUIRE)) {
		int n = nkv_qp_reap(d, d->cq_depth);
		uint64_t waited;

		if (n < 0)
			return -EIO;
		if (n > 0) {
			if (!c->fwd)
				__atomic_fetch_add(&st->cq_doorbells, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (__atomic_load_n(q->fail_word, __ATOMIC_ACQUIRE) == NKV_QP_FAILED_GONE)
			return -ENOTCONN;
		waited = nkv_h_now_ns() - t0;
		if (waited > limit) {
			nkv_qp_fail(d, NKV_QP_FAILED_TIMEOUT);
			__atomic_fetch_add(&st->timeouts, 1, __ATOMIC_RELAXED);
			nkv_h_trace("queue pair %u: CID %u: no completion in %u ms", q->qid,
				    cid, q->timeout_ms);
			return -ETIMEDOUT;
		}
		nkv_h_sync_pause(waited);
	}
	return 0;
}

/* Submit one SQE as a one-lane wave and wait for its result. */
int nkv_h_sync_exec(struct nkv_qpair *q, struct nkv_sqe *sqe, struct nkv_result *res)
{
	struct nkv_dev_qp *d = q->dev;
	struct nkv_ctrl *c = q->c;
	struct nkv_h_qstats *st = &c->qst[q->qid];
	struct nkv_wave w = nkv_wave_enter();	/* this thread: a one-lane wave */
	struct nkv_prep p = { *sqe, 0 };
	struct nkv_dev_result r;
	struct nkv_ticket t;
	uint16_t cid;
	int rc;

	rc = nkv_h_sync_failed(q);
	if (rc)
		return rc;
	t = nkv_wave_submit(w, d, 1, p);
	if (t.err)
		return t.err;
	cid = t.cid;
	if (c->fwd) {
		rc = nkv_h_db_flush(c);
		if (rc) {
			/* The forwarder's writes fail: the transport is gone. */
			nkv_qp_fail(d, NKV_QP_FAILED_GONE);
			return -ENOTCONN;
		}
	} else {
		__atomic_fetch_add(&st->sq_doorbells, 1, __ATOMIC_RELAXED);
	}
	nkv_h_trace("qp %u: opc %#x cid %u klen %u cdw10 %u options %#x cdw12 %u %s", q->qid,
		    nkv_sqe_opc(sqe), cid, sqe->cdw11 & 0xff, sqe->cdw10, sqe->cdw11 & 0xff00u,
		    sqe->cdw12, nkv_sqe_psdt(sqe) == NKV_PSDT_SGL ? "sgl" : "prp");
	rc = nkv_h_sync_wait(q, cid);
	if (rc)
		return rc;
	r = nkv_wave_wait(w, d, t);
	/* NKV_QPAIR_REPORT_SHORT: a complete answer, reported as short. */
	if (r.err && r.err != NKV_EMSGSIZE)
		return r.err;
	res->status = r.status & 0x7ff;
	res->dw0 = r.dw0;
	nkv_h_trace("qp %u: cid %u -> status %#x (%s) dw0 %u%s", q->qid, cid, res->status,
		    nkv_status_str(res->status), res->dw0, r.err ? " (short)" : "");
	return r.err;
}

/* 0 for a key of @min..max_key bytes; else -EINVAL, and a key longer
 * than the controller takes is logged with the limit. */
int nkv_h_sync_key(const struct nkv_qpair *q, const void *key, uint32_t klen,
			  uint32_t min)
{
	uint32_t max = nkv_dev_max_key(q->dev);

	if (klen > max) {
		nkv_h_log("key of %u bytes is longer than the controller's limit of %u bytes (KML)",
			  klen, max);
		return -EINVAL;
	}
	return klen >= min && (key || !klen) ? 0 : -EINVAL;
}

/* The synchronous buffer holds @len value bytes, and has its head room
 * when the key takes the head form (Exist and Delete too). */
static int nkv_h_sync_slot(struct nkv_qpair *q, uint32_t klen, uint32_t len)
{
	return nkv_h_qp_sync_room(q, len || !nkv_dev_key_head(q->dev, klen) ? len : 1);
}

/* The entry for one command through the synchronous buffer, by the same
 * builder device code uses (CID 0: the wave submit sets it). */
static int nkv_h_sync_prep(struct nkv_qpair *q, struct nkv_sqe *sqe, uint8_t opc,
			   const void *key, uint32_t klen, uint32_t opts, uint32_t cdw10,
			   uint32_t len)
{
	struct nkv_prep p = nkv_dev_kv_slot(q->dev, &q->sslot, opc, key, klen,
					    opc == NKV_KV_LIST ? 0 : 1, opts, cdw10, len);

	*sqe = p.sqe;
	return p.err;
}

int nkv_h_sync_pre(struct nkv_qpair *q, struct nkv_result *res)
{
	if (!q || !res)
		return -EINVAL;
	res->status = 0;
	res->dw0 = 0;
	if (q->on_device) {
		/* Its bookkeeping lives in device memory, for kernels only. */
		if (!q->said_device)
			nkv_h_log("queue pair %u is for device code (nkv_qpair_create_dev): the "
				  "synchronous API needs one from nkv_qpair_create", q->qid);
		q->said_device = 1;
		return -EOPNOTSUPP;
	}
	return nkv_h_sync_failed(q);
}

void nkv_h_sync_count(struct nkv_qpair *q, const struct nkv_result *res, uint64_t bytes)
{
	nkv_h_stats_result(&q->c->qst[q->qid], res->status, bytes);
}

/*
 * The vendor Store options of @opts that @q's namespace does not
 * advertise (the descriptor's key_flags bits 8-15, as device code sees
 * them): 0, or -EOPNOTSUPP with one line naming them and what is
 * advertised, before anything is sent.
 */
static int nkv_h_sync_vendor(const struct nkv_qpair *q, uint32_t opts)
{
	uint32_t adv = q->dev->key_flags & NKV_STORE_VENDOR_MASK;
	char want[96], have[96];

	if (!(opts & NKV_STORE_VENDOR_MASK & ~adv))
		return 0;
	nkv_h_log("Store option %s: not advertised by namespace %u (it advertises %s%s)",
		  nkv_h_store_opts_str(opts & ~adv, want, sizeof(want)), q->dev->nsid,
		  nkv_h_store_opts_str(adv, have, sizeof(have)),
		  q->c->ext.advertised ? "" : ": no nkvX vendor bytes in its KV Identify Namespace");
	return -EOPNOTSUPP;
}

/* Store options the controller can act on: known bits, one existence
 * condition at most, a TTL with its seconds (and seconds only with it),
 * a touch without a value, MUST_NOT_EXIST or EPHEMERAL. */
int nkv_h_sync_opts(const struct nkv_qpair *q, uint32_t opts, uint32_t ttl_s,
			   uint32_t len)
{
	if (opts & ~NKV_STORE_ALL_MASK)
		return -EINVAL;
	if (nkv_h_sync_vendor(q, opts))
		return -EOPNOTSUPP;
	if (!(opts & NKV_STORE_TTL) != !ttl_s)
		return -EINVAL;
	return nkv_dev_store_opts_ok(q->dev, opts, len) ? 0 : -EINVAL;
}

int nkv_store_ttl(struct nkv_qpair *q, const void *key, uint32_t klen,
		  const void *val, uint32_t len, uint32_t options, uint32_t ttl_s,
		  struct nkv_result *res)
{
	struct nkv_sqe sqe;
	int rc = nkv_h_sync_pre(q, res);

	if (rc)
		return rc;
	rc = nkv_h_sync_key(q, key, klen, 1);
	if (rc)
		return rc;
	if (len && !val)
		return -EINVAL;
	rc = nkv_h_sync_opts(q, options, ttl_s, len);
	if (!rc)
		rc = nkv_h_value_fits(q->c, "value", len);
	if (!rc)
		rc = nkv_h_sync_slot(q, klen, len);
	if (rc)
		return rc;
	if (len)
		memcpy((void *)(uintptr_t)q->sslot.addr, val, len);
	rc = nkv_h_sync_prep(q, &sqe, NKV_KV_STORE, key, klen, options, len, len);
	if (!rc) {
		sqe.cdw12 = ttl_s;	/* NKV_STORE_TTL's seconds; 0 without it */
		rc = nkv_h_sync_exec(q, &sqe, res);
	}
	if (!rc)
		nkv_h_sync_count(q, res, res->status ? 0 : len);
	return rc;
}

int nkv_store(struct nkv_qpair *q, const void *key, uint32_t klen,
	      const void *val, uint32_t len, uint32_t options,
	      struct nkv_result *res)
{
	return nkv_store_ttl(q, key, klen, val, len, options, 0, res);
}

int nkv_touch(struct nkv_qpair *q, const void *key, uint32_t klen, uint32_t ttl_s,
	      struct nkv_result *res)
{
	uint32_t opts = NKV_STORE_TOUCH | (ttl_s ? NKV_STORE_TTL : 0u);

	return nkv_store_ttl(q, key, klen, NULL, 0, opts, ttl_s, res);
}

/*
 * Retrieve and List: the controller fills the buffer, we copy it out. A
 * buffer larger than one command moves is asked for up to the limit; a
 * value that then turns out larger than the limit, though the caller's
 * buffer would hold it, is -EMSGSIZE (logged), not a silent prefix.
 */
static int nkv_h_sync_read(struct nkv_qpair *q, uint8_t opc, const void *key,
			   uint32_t klen, void *buf, uint32_t buflen,
			   struct nkv_result *res)
{
	uint32_t lim = nkv_h_xfer_limit(q->c), cap = buflen < lim ? buflen : lim, n;
	struct nkv_sqe sqe;
	int rc = nkv_h_sync_pre(q, res);

	if (rc)
		return rc;
	rc = nkv_h_sync_key(q, key, klen, opc == NKV_KV_LIST ? 0 : 1);
	if (rc)
		return rc;
	if (buflen && !buf)
		return -EINVAL;
	rc = nkv_h_sync_slot(q, klen, cap);
	if (!rc)
		rc = nkv_h_sync_prep(q, &sqe, opc, key, klen, 0, cap, cap);
	if (!rc)
		rc = nkv_h_sync_exec(q, &sqe, res);
	if (rc == -EMSGSIZE && cap) {
		/* Reported short (NKV_QPAIR_REPORT_SHORT): the prefix is the
		 * caller's all the same; DW0 says how long the value is. */
		memcpy(buf, (const void *)(uintptr_t)q->sslot.addr, cap);
		nkv_h_sync_count(q, res, cap);
	}
	if (rc)
		return rc;
	if (opc == NKV_KV_RETRIEVE && !res->status && res->dw0 > cap && cap < buflen) {
		nkv_h_sync_count(q, res, 0);
		return nkv_h_value_fits(q->c, "value", res->dw0);
	}
	/* Retrieve: the stored size may exceed the buffer (a prefix came). */
	n = opc == NKV_KV_LIST ? cap : (res->dw0 < cap ? res->dw0 : cap);
	/* The value pointer, in either key form: a head sits below it. */
	if (!res->status && n)
		memcpy(buf, (const void *)(uintptr_t)q->sslot.addr, n);
	nkv_h_sync_count(q, res, res->status ? 0 : n);
	return 0;
}

/* buflen 0 asks for the size alone (CDW10 = 0): DW0 = the stored length,
 * nothing moved, where the namespace advertises it (others: 85h). */
int nkv_retrieve(struct nkv_qpair *q, const void *key, uint32_t klen,
		 void *buf, uint32_t buflen, struct nkv_result *res)
{
	return nkv_h_sync_read(q, NKV_KV_RETRIEVE, key, klen, buf, buflen, res);
}

int nkv_list(struct nkv_qpair *q, const void *start, uint32_t klen,
	     void *buf, uint32_t buflen, struct nkv_result *res)
{
	return nkv_h_sync_read(q, NKV_KV_LIST, start, klen, buf, buflen, res);
}

static int nkv_h_sync_nodata(struct nkv_qpair *q, uint8_t opc, const void *key,
			     uint32_t klen, struct nkv_result *res)
{
	struct nkv_sqe sqe;
	int rc = nkv_h_sync_pre(q, res);

	if (rc)
		return rc;
	rc = nkv_h_sync_key(q, key, klen, 1);
	if (!rc)
		rc = nkv_h_sync_slot(q, klen, 0);
	if (!rc)
		rc = nkv_h_sync_prep(q, &sqe, opc, key, klen, 0, 0, 0);
	if (!rc)
		rc = nkv_h_sync_exec(q, &sqe, res);
	if (!rc)
		nkv_h_sync_count(q, res, 0);
	return rc;
}

int nkv_delete(struct nkv_qpair *q, const void *key, uint32_t klen,
	       struct nkv_result *res)
{
	return nkv_h_sync_nodata(q, NKV_KV_DELETE, key, klen, res);
}

int nkv_exist(struct nkv_qpair *q, const void *key, uint32_t klen,
	      struct nkv_result *res)
{
	return nkv_h_sync_nodata(q, NKV_KV_EXIST, key, klen, res);
}
