/* SPDX-License-Identifier: MIT */
/*
 * pool.c - the Exec workers: the core hands a call over (exec_if.h) and
 * goes back to polling; a worker checks the allowlist, gets the module
 * (cache, or read and checked against its digest), reads the value
 * through the namespace's backend into a buffer of its own, runs the
 * sandbox, writes the output into the command's buffer and completes
 * the op. A slow module holds one worker, never a poll thread; every
 * refusal is one log line naming namespace, op-ID, status and why.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "exec.h"
#include "target/core/exec_if.h"

#define NKV_EXEC_MAX_WORKERS 16u
#define NKV_EXEC_QUEUE_MAX 4096u	/* calls waiting; more: Internal Error */
#define NKV_EXEC_READ_GUESS (64u << 10)	/* first buffer for a value */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct nkv_tgt_exec_call *head, *tail;
	uint32_t queued;
	int stop;
	unsigned nthr;
	pthread_t thr[NKV_EXEC_MAX_WORKERS];
	struct nkv_exec_stats st;
} nkv_exec_pool = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER };

static void nkv_exec_add(uint64_t *c, uint64_t n)
{
	__atomic_add_fetch(c, n, __ATOMIC_RELAXED);
}

static void nkv_exec_count(uint64_t *c)
{
	nkv_exec_add(c, 1);
}

/*
 * The whole value of key: lent by the backend where it can (*loan, read
 * in place: the mem backend's values of 64 KiB and more), else copied
 * into b, grown to the size the backend reports and read again (a
 * concurrent Store may change the size between two reads: each read is
 * one whole value, old or new). *val: where its bytes are.
 */
static uint16_t nkv_exec_read(struct nkv_be *be, const struct nkv_be_op *like,
			      const uint8_t *key, uint32_t klen, struct nkv_exec_buf *b,
			      struct nkv_tgt_loan *loan, const uint8_t **val, size_t *len)
{
	uint64_t size = 0;
	int tries;

	if (nkv_exec_buf_grow(b, NKV_EXEC_READ_GUESS, 0))
		return NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_INTERNAL);
	for (tries = 0; tries < 8; tries++) {
		uint16_t st = nkv_tgt_be_read(be, like, key, klen, b->p, b->cap, &size, loan);

		if (st)
			return st;
		if (size <= b->cap) {
			*val = loan && loan->p ? loan->p : b->p;
			*len = size;
			return 0;
		}
		if (loan && loan->p)
			loan->release(loan->ctx);	/* a prefix: ask again for all */
		if (nkv_exec_buf_grow(b, size, 0))
			return NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_INTERNAL);
	}
	return NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_UNRECOVERED_ERROR);
}

static uint16_t nkv_exec_cs(int sc)
{
	return NKV_STATUS(NKV_SCT_CMD_SPECIFIC, (uint8_t)sc);
}

/* The entry's module, from the cache or read and checked. */
static uint16_t nkv_exec_module_of(const struct nkv_tgt_exec_call *call,
				   const struct nkv_exec_entry *e, struct nkv_exec_module **m,
				   char *why, size_t len)
{
	struct nkv_exec_buf src = { 0 };
	const uint8_t *p = NULL;
	size_t n = 0;
	uint16_t st;
	int sc;

	*m = nkv_exec_cache_get(e->digest);
	if (*m)
		return 0;
	st = nkv_exec_read(call->be, call->op, e->key, e->klen, &src, NULL, &p, &n);
	if (st) {
		free(src.p);
		if (st != NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS)) {
			snprintf(why, len, "reading the module failed");
			return st;
		}
		snprintf(why, len, "no module stored under its key");
		return nkv_exec_cs(NKV_SC_EXEC_DIGEST);
	}
	sc = nkv_exec_cache_add(e->digest, p, n, m, why, len);
	free(src.p);
	return sc ? nkv_exec_cs(sc) : 0;
}

/* The sandbox's result straight into the command's buffer, cut to the
 * output cap (DW0 still says the whole length). */
static uint16_t nkv_exec_emit(void *ctx, const void *p, size_t n)
{
	struct nkv_tgt_exec_call *call = ctx;

	return nkv_be_copy_out(call->op, p, n < call->out_cap ? n : call->out_cap);
}

static __thread struct nkv_exec_buf nkv_exec_val;	/* a worker's */

/* Run call: its status; the output written into the command's buffer. */
/*
 * The value for r: in ranges as the module reads it where the backend
 * serves ranges (pager.c; not when whole is set), else whole (lent or
 * copied). 0, or the status to answer with.
 */
static uint16_t nkv_exec_value(struct nkv_tgt_exec_call *call, struct nkv_exec_run *r,
			       struct nkv_exec_pager *pg, struct nkv_tgt_loan *loan, int whole)
{
	struct nkv_be *be = call->be;
	const uint8_t *val = NULL;
	size_t vlen = 0;
	uint16_t st;
	int rc;

	r->fetch = NULL;
	r->fetch_ctx = NULL;
	r->fetch_status = 0;
	if (!whole && be->ops->read_range) {
		rc = nkv_exec_pager_open(pg, be, call->op->key, call->op->klen, &nkv_exec_val);
		if (!rc) {
			r->value = nkv_exec_val.p;
			r->value_len = pg->len;
			if (!pg->whole) {
				r->fetch = nkv_exec_pager_fetch;
				r->fetch_ctx = pg;
				nkv_exec_count(&nkv_exec_pool.st.paged);
			}
			return 0;
		}
		nkv_exec_pager_close(pg);
		if (rc > 0)
			return (uint16_t)rc;
		if (rc != -EOPNOTSUPP && rc != -ESTALE)
			return NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_INTERNAL);
	}
	st = nkv_exec_read(be, call->op, call->op->key, call->op->klen, &nkv_exec_val, loan, &val,
			   &vlen);
	if (st)
		return st;
	nkv_exec_add(&nkv_exec_pool.st.value_bytes, vlen);
	r->value = val;
	r->value_len = vlen;
	return 0;
}

/* One run of the module on the value (paged or whole): the sandbox's
 * verdict, r->fetch_status saying whether the value's reads ended it. */
static int nkv_exec_attempt(struct nkv_tgt_exec_call *call, struct nkv_exec_run *r,
			    int whole, uint16_t *st)
{
	struct nkv_tgt_loan loan = { NULL, NULL, NULL };
	struct nkv_exec_pager pg = { 0 };
	int sc;

	*st = nkv_exec_value(call, r, &pg, &loan, whole);
	if (*st)
		return 0;
	sc = nkv_exec_sandbox_run(r);
	if (loan.p)
		loan.release(loan.ctx);	/* the module is done with the value */
	nkv_exec_add(&nkv_exec_pool.st.value_bytes, pg.bytes);
	nkv_exec_pager_close(&pg);
	return sc;
}

/* Run call: its status; the output written into the command's buffer. */
static uint16_t nkv_exec_do(struct nkv_tgt_exec_call *call, struct nkv_exec_run *r,
			    char *why, size_t len)
{
	struct nkv_exec_entry e;
	struct nkv_exec_module *m;
	uint16_t st;
	int sc;

	if (nkv_exec_lookup(call->nsid, call->op_id, &e)) {
		snprintf(why, len, "no allowlist entry");
		return nkv_exec_cs(NKV_SC_EXEC_NOT_ALLOWED);
	}
	st = nkv_exec_module_of(call, &e, &m, why, len);
	if (st)
		return st;
	r->code = nkv_exec_module_code(m, &r->code_len);
	r->in = call->in;
	r->in_len = call->in_len;
	r->caps = e.caps;
	r->emit = nkv_exec_emit;
	r->emit_ctx = call;
	sc = nkv_exec_attempt(call, r, 0, &st);
	if (!st && r->fetch_status == -ESTALE) {
		/* A Store came between two ranges: once more, on one whole read. */
		nkv_exec_count(&nkv_exec_pool.st.reread);
		r->emit_status = 0;
		sc = nkv_exec_attempt(call, r, 1, &st);
	}
	nkv_exec_module_put(m);
	nkv_exec_buf_trim(&nkv_exec_val);
	if (!st && r->fetch_status)
		st = r->fetch_status > 0 ? (uint16_t)r->fetch_status
					 : NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_INTERNAL);
	if (st) {
		snprintf(why, len, "reading the value failed");
		return st;
	}
	if (sc)
		snprintf(why, len, "%s", r->msg);
	if (!sc && r->emit_status)
		snprintf(why, len, "writing the output failed");
	return sc ? nkv_exec_cs(sc) : r->emit_status;
}

static void nkv_exec_tally(uint16_t st)
{
	struct nkv_exec_stats *s = &nkv_exec_pool.st;

	if (!st)
		nkv_exec_count(&s->ok);
	else if (st == nkv_exec_cs(NKV_SC_EXEC_NOT_ALLOWED))
		nkv_exec_count(&s->not_allowed);
	else if (st == nkv_exec_cs(NKV_SC_EXEC_DIGEST))
		nkv_exec_count(&s->digest);
	else if (st == nkv_exec_cs(NKV_SC_EXEC_BUDGET))
		nkv_exec_count(&s->budget);
	else if (st == nkv_exec_cs(NKV_SC_EXEC_MODULE))
		nkv_exec_count(&s->module);
	else
		nkv_exec_count(&s->other);
}

/* One call, start to done(). */
static void nkv_exec_one(struct nkv_tgt_exec_call *call)
{
	struct nkv_be_op *op = call->op;
	struct nkv_exec_run r;
	char why[200] = "";
	uint16_t st;

	memset(&r, 0, sizeof(r));
	nkv_exec_count(&nkv_exec_pool.st.calls);
	st = nkv_exec_do(call, &r, why, sizeof(why));
	nkv_exec_tally(st);
	if (st)
		nkv_be_log(NKV_BE_LOG_WARN, "event=exec_failed nsid=%u op_id=%u status=0x%03x why=\"%s\"",
			   call->nsid, call->op_id, st, why);
	op->status = st;
	op->dw0 = st ? 0 : (uint32_t)r.out_len;	/* the true length, however much fit */
	free(r.out);
	free(call);
	op->done(op);
}

/* A module that computes for its whole wall cap takes a CPU for that
 * long: below the poll threads and the backends' own (nice is per thread
 * on Linux), so the data path of other clients goes first. Best effort. */
#define NKV_EXEC_NICE 10

static void *nkv_exec_worker(void *arg)
{
	struct nkv_tgt_exec_call *call;

	(void)arg;
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), NKV_EXEC_NICE))
		nkv_be_log(NKV_BE_LOG_INFO, "event=exec_nice_failed errno=%d", errno);
	pthread_mutex_lock(&nkv_exec_pool.lock);
	for (;;) {
		while (!nkv_exec_pool.head && !nkv_exec_pool.stop)
			pthread_cond_wait(&nkv_exec_pool.cond, &nkv_exec_pool.lock);
		call = nkv_exec_pool.head;
		if (!call)
			break;
		nkv_exec_pool.head = call->next;
		if (!nkv_exec_pool.head)
			nkv_exec_pool.tail = NULL;
		nkv_exec_pool.queued--;
		pthread_mutex_unlock(&nkv_exec_pool.lock);
		nkv_exec_one(call);
		pthread_mutex_lock(&nkv_exec_pool.lock);
	}
	pthread_mutex_unlock(&nkv_exec_pool.lock);
	free(nkv_exec_val.p);
	nkv_exec_val.p = NULL;
	nkv_exec_val.cap = 0;
	nkv_exec_sandbox_release();
	return NULL;
}

static int nkv_exec_submit(struct nkv_tgt_exec_call *call)
{
	int rc = 0;

	call->next = NULL;
	pthread_mutex_lock(&nkv_exec_pool.lock);
	if (nkv_exec_pool.stop || !nkv_exec_pool.nthr)
		rc = -ESHUTDOWN;
	else if (nkv_exec_pool.queued >= NKV_EXEC_QUEUE_MAX)
		rc = -EBUSY;
	if (!rc) {
		if (nkv_exec_pool.tail)
			nkv_exec_pool.tail->next = call;
		else
			nkv_exec_pool.head = call;
		nkv_exec_pool.tail = call;
		nkv_exec_pool.queued++;
		pthread_cond_signal(&nkv_exec_pool.cond);
	}
	pthread_mutex_unlock(&nkv_exec_pool.lock);
	if (rc)
		nkv_be_log(NKV_BE_LOG_WARN, "event=exec_queue_full nsid=%u op_id=%u rc=%d",
			   call->nsid, call->op_id, rc);
	return rc;
}

/* A row here runs the call here, even on a backend that forwards Exec. */
static int nkv_exec_owns(uint32_t nsid, uint32_t op_id)
{
	struct nkv_exec_entry e;

	return !nkv_exec_lookup(nsid, op_id, &e);
}

static const struct nkv_tgt_exec_ops nkv_exec_ops = { nkv_exec_submit, nkv_exec_owns };

int nkv_exec_start(unsigned nworkers)
{
	unsigned i;
	int rc = 0;

	if (!nworkers)
		nworkers = 2;
	if (nworkers > NKV_EXEC_MAX_WORKERS)
		return -EINVAL;
	pthread_mutex_lock(&nkv_exec_pool.lock);
	if (nkv_exec_pool.nthr)
		rc = -EALREADY;
	nkv_exec_pool.stop = 0;
	for (i = 0; !rc && i < nworkers; i++) {
		rc = -pthread_create(&nkv_exec_pool.thr[i], NULL, nkv_exec_worker, NULL);
		if (!rc)
			nkv_exec_pool.nthr++;
	}
	pthread_mutex_unlock(&nkv_exec_pool.lock);
	if (rc && rc != -EALREADY)
		nkv_exec_stop();
	if (!rc)
		nkv_tgt_exec_register(&nkv_exec_ops);
	return rc;
}

/* Workers finish what is queued (each call completes), then end. */
void nkv_exec_stop(void)
{
	unsigned i, n;

	nkv_tgt_exec_register(NULL);
	pthread_mutex_lock(&nkv_exec_pool.lock);
	nkv_exec_pool.stop = 1;
	n = nkv_exec_pool.nthr;
	pthread_cond_broadcast(&nkv_exec_pool.cond);
	pthread_mutex_unlock(&nkv_exec_pool.lock);
	for (i = 0; i < n; i++)
		pthread_join(nkv_exec_pool.thr[i], NULL);
	pthread_mutex_lock(&nkv_exec_pool.lock);
	nkv_exec_pool.nthr = 0;
	pthread_mutex_unlock(&nkv_exec_pool.lock);
}

void nkv_exec_stats(struct nkv_exec_stats *st)
{
	struct nkv_exec_stats *s = &nkv_exec_pool.st;

	st->calls = __atomic_load_n(&s->calls, __ATOMIC_RELAXED);
	st->ok = __atomic_load_n(&s->ok, __ATOMIC_RELAXED);
	st->not_allowed = __atomic_load_n(&s->not_allowed, __ATOMIC_RELAXED);
	st->digest = __atomic_load_n(&s->digest, __ATOMIC_RELAXED);
	st->budget = __atomic_load_n(&s->budget, __ATOMIC_RELAXED);
	st->paged = __atomic_load_n(&s->paged, __ATOMIC_RELAXED);
	st->reread = __atomic_load_n(&s->reread, __ATOMIC_RELAXED);
	st->value_bytes = __atomic_load_n(&s->value_bytes, __ATOMIC_RELAXED);
	st->module = __atomic_load_n(&s->module, __ATOMIC_RELAXED);
	st->other = __atomic_load_n(&s->other, __ATOMIC_RELAXED);
}
