// SPDX-License-Identifier: MIT
/*
 * rados_health.c - whether a RADOS connection's cluster answers, told in
 * the target's log: one warn line when it is lost, one when it is back,
 * never one per failed op (docs/ceph.md, "A cluster that stops").
 *
 * Every op notes its result: an op timeout or a lost session counts as
 * unanswered, any other result (a value, "no such object", "full") as an
 * answer. The connection's health thread looks once a second: a second
 * with unanswered ops and no answer is the loss; the first answer after
 * it is the return. So that an idle target notices too, the thread
 * probes whenever a second passed without an answer: a stat of an object
 * that need not exist, one at a time, at most once a second, bounded by
 * the op timeout like every op. A loss is thus logged about one op
 * timeout after the cluster stopped, a return within a second or two.
 */
#include <errno.h>
#include <pthread.h>
#include <rados/librados.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rados_int.h"
#include "target/core/backend.h"

#define NKV_RADOS_PROBE_OID "nkv.probe"	/* not hex: List never shows it */
#define NKV_RADOS_HEALTH_TICK_MS 1000u

static int64_t nkv_rados_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The cluster did not answer: librados' op timeout, or no session. */
static bool nkv_rados_unanswered(int rv)
{
	return rv == -ETIMEDOUT || rv == -ENOTCONN || rv == -ESHUTDOWN || rv == -ECONNREFUSED;
}

void nkv_rados_health_note(struct nkv_rados_health *h, int rv)
{
	if (nkv_rados_unanswered(rv)) {
		__atomic_store_n(&h->last_err, -rv, __ATOMIC_RELAXED);
		__atomic_add_fetch(&h->bad, 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_store_n(&h->last_ok_ms, nkv_rados_now_ms(), __ATOMIC_RELAXED);
	__atomic_store_n(&h->last_ok_wall_ms, nkv_rados_wall_ms(), __ATOMIC_RELAXED);
	__atomic_add_fetch(&h->ok, 1, __ATOMIC_RELAXED);
}

/* The probe's result, once it has one. */
static void nkv_rados_probe_reap(struct nkv_rados_health *h)
{
	if (!h->probe || !rados_aio_is_complete(h->probe))
		return;
	nkv_rados_health_note(h, rados_aio_get_return_value(h->probe));
	rados_aio_release(h->probe);
	h->probe = NULL;
}

static void nkv_rados_probe_start(struct nkv_rados_health *h)
{
	if (!h->probe_io || h->probe || rados_aio_create_completion2(NULL, NULL, &h->probe) < 0)
		return;
	if (rados_aio_stat(h->probe_io, NKV_RADOS_PROBE_OID, h->probe, &h->probe_size,
			   &h->probe_mtime) < 0) {
		rados_aio_release(h->probe);
		h->probe = NULL;
	}
}

static void nkv_rados_health_lost(struct nkv_rados_health *h, uint64_t bad)
{
	int64_t wall = __atomic_load_n(&h->last_ok_wall_ms, __ATOMIC_RELAXED);
	uint64_t now = nkv_rados_now_ms();

	__atomic_store_n(&h->lost, true, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->lost_events, 1, __ATOMIC_RELAXED);
	h->lost_since_ms = __atomic_load_n(&h->last_ok_ms, __ATOMIC_RELAXED);
	h->lost_ops = bad;
	nkv_be_log(NKV_BE_LOG_WARN, "event=cluster_lost backend=rados cluster=%s "
		   "since=%lld.%03lld silent_s=%.1f ops_failing=%llu error=\"%s\"", h->name,
		   (long long)(wall / 1000), (long long)(wall % 1000),
		   (double)(now - h->lost_since_ms) / 1000.0, (unsigned long long)bad,
		   strerror(__atomic_load_n(&h->last_err, __ATOMIC_RELAXED)));
}

static void nkv_rados_health_back(struct nkv_rados_health *h)
{
	__atomic_store_n(&h->lost, false, __ATOMIC_RELAXED);
	nkv_be_log(NKV_BE_LOG_WARN, "event=cluster_back backend=rados cluster=%s after_s=%.1f "
		   "ops_failed=%llu", h->name,
		   (double)(nkv_rados_now_ms() - h->lost_since_ms) / 1000.0,
		   (unsigned long long)h->lost_ops);
}

/* One look: a second with failures and no answer is a loss; an answer
 * ends one. Mixed results (a part of the cluster failing) are neither. */
static void nkv_rados_health_tick(struct nkv_rados_health *h)
{
	uint64_t ok, bad;

	nkv_rados_probe_reap(h);
	ok = __atomic_exchange_n(&h->ok, 0, __ATOMIC_RELAXED);
	bad = __atomic_exchange_n(&h->bad, 0, __ATOMIC_RELAXED);
	if (h->lost) {
		h->lost_ops += bad;
		if (ok)
			nkv_rados_health_back(h);
	} else if (bad && !ok) {
		nkv_rados_health_lost(h, bad);
	}
	if (!ok)
		nkv_rados_probe_start(h);
}

static void *nkv_rados_health_main(void *arg)
{
	struct nkv_rados_health *h = arg;
	struct timespec dl;

	pthread_mutex_lock(&h->lock);
	while (!h->stop) {
		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_sec += NKV_RADOS_HEALTH_TICK_MS / 1000u;
		if (pthread_cond_timedwait(&h->cond, &h->lock, &dl) != ETIMEDOUT)
			continue;
		pthread_mutex_unlock(&h->lock);
		nkv_rados_health_tick(h);
		pthread_mutex_lock(&h->lock);
	}
	pthread_mutex_unlock(&h->lock);
	/* librados writes the probe's results into h until it completes. */
	if (h->probe) {
		rados_aio_wait_for_complete(h->probe);
		rados_aio_release(h->probe);
		h->probe = NULL;
	}
	return NULL;
}

int nkv_rados_health_start(struct nkv_rados_conn *c, const char *pool, const char *conf,
			   const char *client)
{
	struct nkv_rados_health *h = &c->health;
	pthread_condattr_t ca;
	int rv;

	snprintf(h->name, sizeof(h->name), "%s@%s", client, conf ? conf : "default");
	h->last_ok_ms = nkv_rados_now_ms();	/* connected: it answered */
	h->last_ok_wall_ms = nkv_rados_wall_ms();
	/* No pool, no probe: the ops' results alone tell then. */
	if (rados_ioctx_create(c->cluster, pool, &h->probe_io) < 0)
		h->probe_io = NULL;
	pthread_mutex_init(&h->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->cond, &ca);
	pthread_condattr_destroy(&ca);
	rv = -pthread_create(&h->thr, NULL, nkv_rados_health_main, h);
	h->started = rv == 0;
	if (rv)
		nkv_rados_health_stop(c);
	return rv;
}

void nkv_rados_health_stop(struct nkv_rados_conn *c)
{
	struct nkv_rados_health *h = &c->health;

	if (h->started) {
		pthread_mutex_lock(&h->lock);
		h->stop = true;
		pthread_cond_signal(&h->cond);
		pthread_mutex_unlock(&h->lock);
		pthread_join(h->thr, NULL);
		h->started = false;
	}
	if (h->probe_io)
		rados_ioctx_destroy(h->probe_io);
	h->probe_io = NULL;
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->lock);
}
