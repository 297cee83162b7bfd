/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "delay_be.h"
#include "wrap_be.h"

#define DELAY_MAX 4096

struct delay_rec {
	struct nkv_be_op *op;
	void (*done)(struct nkv_be_op *op);
	void *ctx;
	unsigned long seq;
};

struct delay_be {
	struct wrap_be w;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thr;
	struct delay_rec held[DELAY_MAX];
	unsigned n;
	unsigned batch;
	unsigned hold_us;
	unsigned long seq;
	unsigned long last_done;
	unsigned long reordered;
	unsigned busy;		/* forwarded, not yet completed */
	unsigned pass;		/* ops still to forward unheld */
	int near;		/* say each held op's completion is near */
	int stop;
	unsigned rng;
};

static void delay_done(struct nkv_be_op *op)
{
	struct delay_rec *r = op->ctx;

	/* Give the op back its owner's callback before completing it. */
	op->done = r->done;
	op->ctx = r->ctx;
	free(r);
	op->done(op);
}

/* Forward one held op, picked at random (the lock is held, and dropped
 * while the inner backend takes it). */
static void delay_release_one(struct delay_be *d)
{
	struct delay_rec r, *h;
	unsigned i;

	d->rng = d->rng * 1103515245u + 12345u;
	i = (d->rng >> 8) % d->n;
	r = d->held[i];
	d->held[i] = d->held[--d->n];
	if (r.seq < d->last_done)
		d->reordered++;
	d->last_done = r.seq;
	pthread_mutex_unlock(&d->lock);
	h = malloc(sizeof(*h));
	if (h) {
		*h = r;
		r.op->done = delay_done;
		r.op->ctx = h;
	}
	if (!h || d->w.inner->ops->submit(d->w.inner, r.op)) {
		r.op->done = r.done;
		r.op->ctx = r.ctx;
		free(h);
		r.op->status = NKV_STATUS(0, NKV_SC_INTERNAL);
		r.op->done(r.op);
	}
	pthread_mutex_lock(&d->lock);
}

/* Gather ops until batch are held or hold_us pass from the first,
 * then release every op held, in random order. Releasing them all at
 * once matters for long holds: one at a time, each after another
 * hold_us, a batch of 32 held 1.5 s would take 48 s. */
static void *delay_thread(void *arg)
{
	struct delay_be *d = arg;
	struct timespec ts;

	pthread_mutex_lock(&d->lock);
	while (!d->stop || d->n) {
		if (!d->n && !d->stop) {
			pthread_cond_wait(&d->cond, &d->lock);
			continue;
		}
		if (d->n < d->batch && !d->stop) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += d->hold_us / 1000000u;
			ts.tv_nsec += (long)(d->hold_us % 1000000u) * 1000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			if (pthread_cond_timedwait(&d->cond, &d->lock, &ts) == 0 &&
			    d->n < d->batch)
				continue;	/* woken early (a stop): look again */
		}
		while (d->n)
			delay_release_one(d);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

static int delay_submit(struct nkv_be *be, struct nkv_be_op *op)
{
	struct delay_be *d = (struct delay_be *)be;
	int rc = 0;

	pthread_mutex_lock(&d->lock);
	if (d->pass) {
		d->pass--;
		pthread_mutex_unlock(&d->lock);
		return d->w.inner->ops->submit(d->w.inner, op);
	}
	if (d->n == DELAY_MAX) {
		rc = -11;
	} else {
		if (d->near)
			nkv_be_wait_near(op);
		d->held[d->n++] = (struct delay_rec){ op, op->done, op->ctx, ++d->seq };
		if (d->n == 1 || d->n >= d->batch)	/* the hold starts, or ends */
			pthread_cond_signal(&d->cond);
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}

static void delay_destroy(struct nkv_be *be)
{
	struct delay_be *d = (struct delay_be *)be;

	pthread_mutex_lock(&d->lock);
	d->stop = 1;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thr, NULL);
	d->w.inner->ops->destroy(d->w.inner);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
	free(d);
}

static const struct nkv_be_ops delay_ops = {
	.name = "delay",
	.submit = delay_submit,
	.bytes_used = wrap_be_bytes_used,
	.keys_used = wrap_be_keys_used,
	.destroy = delay_destroy,
};

struct nkv_be *delay_be_create(struct nkv_be *inner, unsigned batch,
			       unsigned hold_us)
{
	struct delay_be *d = calloc(1, sizeof(*d));

	if (!d) {
		inner->ops->destroy(inner);
		return NULL;
	}
	wrap_be_init(&d->w, inner, &delay_ops);
	d->batch = batch ? batch : 1;
	d->hold_us = hold_us ? hold_us : 200;
	d->rng = 12345;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	pthread_create(&d->thr, NULL, delay_thread, d);
	return &d->w.be;
}

void delay_be_pass(struct nkv_be *be, unsigned n)
{
	struct delay_be *d = (struct delay_be *)be;

	pthread_mutex_lock(&d->lock);
	d->pass = n;
	pthread_mutex_unlock(&d->lock);
}

void delay_be_near(struct nkv_be *be, int on)
{
	struct delay_be *d = (struct delay_be *)be;

	pthread_mutex_lock(&d->lock);
	d->near = on;
	pthread_mutex_unlock(&d->lock);
}

unsigned long delay_be_reordered(struct nkv_be *be)
{
	struct delay_be *d = (struct delay_be *)be;
	unsigned long v;

	pthread_mutex_lock(&d->lock);
	v = d->reordered;
	pthread_mutex_unlock(&d->lock);
	return v;
}
