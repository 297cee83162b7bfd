/* SPDX-License-Identifier: MIT */
/*
 * doorbell_fwd.c - the shadow doorbell forwarder (see doorbell_fwd.h).
 *
 * The scan and the writes run under one mutex, so a flush from another
 * thread and the forwarder thread never reorder two values of the same
 * doorbell. Shadow reads are acquire loads: they pair with the device
 * code's release store of the tail/head after its SQE stores / CQE
 * reads, so by the time the controller sees the new value everything
 * it covers is visible too.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/doorbell_fwd.h"
#include "host/transport.h"
#include "nkv_wire.h"

struct nkv_dbfwd {
	struct nkv_dbfwd_opts o;
	uint32_t *last;		/* values already forwarded */
	size_t n;
	pthread_t thr;
	pthread_mutex_t lock;
	int stop;		/* atomic */
	int err;		/* atomic */
	uint64_t count;		/* atomic */
};

/* One pass over the shadow page; returns how many values went out. */
static int nkv_dbfwd_pass(struct nkv_dbfwd *f)
{
	int sent = 0;
	size_t i;

	pthread_mutex_lock(&f->lock);
	for (i = 0; i < f->n && !__atomic_load_n(&f->err, __ATOMIC_RELAXED); i++) {
		uint32_t v = __atomic_load_n(&f->o.shadow[i], __ATOMIC_ACQUIRE);
		int rc;

		if (v == f->last[i])
			continue;
		rc = f->o.write(f->o.arg, NKV_REG_DBS + 4u * (uint32_t)i, v);
		if (rc) {
			__atomic_store_n(&f->err, rc, __ATOMIC_RELAXED);
			break;
		}
		f->last[i] = v;
		sent++;
		__atomic_add_fetch(&f->count, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&f->lock);
	return sent;
}

static void *nkv_dbfwd_main(void *arg)
{
	struct nkv_dbfwd *f = arg;
	struct timespec ts = { 0, (long)f->o.idle_sleep_ns };

	while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
		if (nkv_dbfwd_pass(f) == 0)
			nanosleep(&ts, NULL);
	}
	return NULL;
}

int nkv_dbfwd_start(const struct nkv_dbfwd_opts *opts, struct nkv_dbfwd **out)
{
	struct nkv_dbfwd *f;
	size_t i;

	*out = NULL;
	if (!opts || opts->size < sizeof(*opts) || !opts->shadow || !opts->write ||
	    !opts->len || (opts->len & 3))
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->o = *opts;
	if (!f->o.idle_sleep_ns)
		f->o.idle_sleep_ns = 20000;
	if (f->o.idle_sleep_ns >= 1000000000ull)
		f->o.idle_sleep_ns = 999999999ull;
	f->n = opts->len / 4;
	f->last = calloc(f->n, sizeof(*f->last));
	if (!f->last) {
		free(f);
		return -ENOMEM;
	}
	for (i = 0; i < f->n; i++)
		f->last[i] = __atomic_load_n(&opts->shadow[i], __ATOMIC_ACQUIRE);
	pthread_mutex_init(&f->lock, NULL);
	if (pthread_create(&f->thr, NULL, nkv_dbfwd_main, f)) {
		pthread_mutex_destroy(&f->lock);
		free(f->last);
		free(f);
		return -EAGAIN;
	}
	*out = f;
	return 0;
}

int nkv_dbfwd_flush(struct nkv_dbfwd *f)
{
	nkv_dbfwd_pass(f);
	return nkv_dbfwd_error(f);
}

int nkv_dbfwd_error(const struct nkv_dbfwd *f)
{
	return __atomic_load_n(&f->err, __ATOMIC_RELAXED);
}

uint64_t nkv_dbfwd_count(const struct nkv_dbfwd *f)
{
	return __atomic_load_n(&f->count, __ATOMIC_RELAXED);
}

void nkv_dbfwd_stop(struct nkv_dbfwd *f)
{
	if (!f)
		return;
	__atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
	pthread_join(f->thr, NULL);
	nkv_dbfwd_pass(f);
	pthread_mutex_destroy(&f->lock);
	free(f->last);
	free(f);
}

int nkv_dbfwd_transport_write(void *arg, uint32_t off, uint32_t val)
{
	struct nkv_dbfwd_tr *t = arg;

	return t->ops->reg_write(t->tr, off, val, 4);
}
