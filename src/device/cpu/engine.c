/* SPDX-License-Identifier: MIT */
/*
 * engine.c - the cpu engine: launch, lane identity and wave collectives.
 *
 * A collective is a generation counter: each active lane deposits its
 * input and waits until the generation moves; the last lane to arrive
 * computes the result and moves it. Fibers wait by yielding to the wave's
 * scheduler, real-thread lanes on a condition variable. A lane that returns
 * leaves the wave, so a collective completes without it.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cpu/engine.h"

__thread struct nkv_cpu_lane *nkv_cpu_cur;

enum coll_kind {
	COLL_BALLOT = 1,
	COLL_BCAST,
	COLL_BARRIER,
};

static int threads_mode(const struct nkv_cpu_wave *w)
{
	return w->run->cfg.mode == NKV_CPU_THREADS;
}

static void lock(struct nkv_cpu_wave *w)
{
	if (threads_mode(w))
		pthread_mutex_lock(&w->mu);
}

static void unlock(struct nkv_cpu_wave *w)
{
	if (threads_mode(w))
		pthread_mutex_unlock(&w->mu);
}

/* Last arrival (or last departure): compute the result, open the gate. */
static void coll_complete(struct nkv_cpu_wave *w)
{
	uint64_t r = 0;
	uint32_t i;

	if (w->kind == COLL_BALLOT) {
		for (i = 0; i < w->size; i++)
			if ((w->arrived_mask >> i & 1) && w->in[i])
				r |= 1ull << i;
	} else if (w->kind == COLL_BCAST) {
		r = (w->arrived_mask >> w->src & 1) ? w->in[w->src] : 0;
	}
	w->result = r;
	w->arrived = 0;
	w->arrived_mask = 0;
	w->kind = 0;
	w->gen++;
	if (threads_mode(w))
		pthread_cond_broadcast(&w->cv);
}

static uint64_t collective(uint32_t kind, uint64_t v, uint32_t src)
{
	struct nkv_cpu_lane *l = nkv_cpu_cur;
	struct nkv_cpu_wave *w;
	uint64_t r;

	if (!l)		/* plain thread: a wave of one lane */
		return kind == COLL_BALLOT ? (v != 0) : (src == 0 ? v : 0);
	w = l->w;
	lock(w);
	if (w->arrived && (w->kind != kind || (kind == COLL_BCAST && w->src != src))) {
		/* Lanes diverged: on a GPU this is undefined; say so loudly. */
		fprintf(stderr, "nkv cpu engine: wave %u lane %u: collective mismatch\n",
			w->id, l->id);
		abort();
	}
	w->kind = kind;
	w->src = src;
	w->in[l->id] = v;
	w->arrived++;
	w->arrived_mask |= 1ull << l->id;
	l->wait_gen = w->gen;
	if (w->arrived == w->alive) {
		coll_complete(w);
	} else {
		l->waiting = 1;
		while (w->gen == l->wait_gen) {
			if (threads_mode(w))
				pthread_cond_wait(&w->cv, &w->mu);
			else
				nkv_fiber_yield(l);
		}
		l->waiting = 0;
	}
	r = w->result;
	unlock(w);
	return r;
}

void nkv_cpu_lane_exit(struct nkv_cpu_lane *l)
{
	struct nkv_cpu_wave *w = l->w;

	lock(w);
	w->alive--;
	if (w->arrived && w->arrived == w->alive)
		coll_complete(w);
	unlock(w);
}

uint32_t nkv_cpu_lane_id(void)
{
	return nkv_cpu_cur ? nkv_cpu_cur->id : 0;
}

uint32_t nkv_cpu_wave_id(void)
{
	return nkv_cpu_cur ? nkv_cpu_cur->w->id : 0;
}

uint32_t nkv_cpu_wave_size(void)
{
	return nkv_cpu_cur ? nkv_cpu_cur->w->size : 1;
}

uint64_t nkv_cpu_ballot(int pred)
{
	return collective(COLL_BALLOT, pred != 0, 0);
}

uint64_t nkv_cpu_bcast(uint64_t v, uint32_t src)
{
	return collective(COLL_BCAST, v, src);
}

void nkv_cpu_barrier(void)
{
	collective(COLL_BARRIER, 0, 0);
}

/* Every thread waits here until all threads of the launch exist. */
int nkv_cpu_gate_wait(struct nkv_cpu_run *r)
{
	int g;

	pthread_mutex_lock(&r->gate_mu);
	while (r->gate == 0)
		pthread_cond_wait(&r->gate_cv, &r->gate_mu);
	g = r->gate;
	pthread_mutex_unlock(&r->gate_mu);
	return g;
}

static void gate_open(struct nkv_cpu_run *r, int g)
{
	pthread_mutex_lock(&r->gate_mu);
	r->gate = g;
	pthread_cond_broadcast(&r->gate_cv);
	pthread_mutex_unlock(&r->gate_mu);
}

static void *lane_thread(void *p)
{
	struct nkv_cpu_lane *l = p;

	if (nkv_cpu_gate_wait(l->w->run) > 0) {
		nkv_cpu_cur = l;
		l->w->run->fn(l->w->run->arg);
		nkv_cpu_lane_exit(l);
		nkv_cpu_cur = NULL;
	}
	return NULL;
}

static void *wave_thread(void *p)
{
	struct nkv_cpu_wave *w = p;

	if (nkv_cpu_gate_wait(w->run) > 0)
		nkv_fiber_schedule(w);
	return NULL;
}

static int check_cfg(const struct nkv_cpu_cfg *c, nkv_cpu_fn fn)
{
	if (!c || !fn || c->size < sizeof(*c))
		return -EINVAL;
	if (c->waves == 0 || c->waves > NKV_CPU_MAX_WAVES || c->wave_size == 0)
		return -EINVAL;
	if (c->mode == NKV_CPU_FIBERS)
		return c->wave_size <= NKV_CPU_MAX_WAVE &&
		       (c->stack_size == 0 || c->stack_size >= 16384) ? 0 : -EINVAL;
	if (c->mode == NKV_CPU_THREADS)
		return c->wave_size <= NKV_CPU_THREADS_MAX_WAVE ? 0 : -EINVAL;
	return -EINVAL;
}

static size_t stack_size(const struct nkv_cpu_cfg *c)
{
	size_t s = c->stack_size ? c->stack_size : NKV_CPU_DEFAULT_STACK;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	s *= 4;		/* instrumented frames are several times larger */
#endif
	return s;
}

static int wave_setup(struct nkv_cpu_run *r, struct nkv_cpu_wave *w, uint32_t id)
{
	uint32_t i;
	int err;

	w->run = r;
	w->id = id;
	w->size = r->cfg.wave_size;
	w->alive = w->size;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	for (i = 0; i < w->size; i++) {
		w->lanes[i].w = w;
		w->lanes[i].id = i;
		if (r->cfg.mode != NKV_CPU_FIBERS)
			continue;
		err = nkv_fiber_init(&w->lanes[i], stack_size(&r->cfg));
		if (err)
			return err;
	}
	return 0;
}

static int start_threads(struct nkv_cpu_run *r)
{
	uint32_t i, j;
	int err;

	for (i = 0; i < r->cfg.waves; i++) {
		struct nkv_cpu_wave *w = &r->waves[i];

		if (r->cfg.mode == NKV_CPU_FIBERS) {
			err = pthread_create(&w->th, NULL, wave_thread, w);
			if (err)
				return -err;
			w->started = 1;
			continue;
		}
		for (j = 0; j < w->size; j++) {
			err = pthread_create(&w->lanes[j].th, NULL, lane_thread,
					     &w->lanes[j]);
			if (err)
				return -err;
			w->lanes[j].started = 1;
		}
	}
	return 0;
}

static void join_and_free(struct nkv_cpu_run *r)
{
	uint32_t i, j;

	for (i = 0; i < r->cfg.waves; i++) {
		struct nkv_cpu_wave *w = &r->waves[i];

		if (w->started)
			pthread_join(w->th, NULL);
		for (j = 0; j < r->cfg.wave_size; j++) {
			if (w->lanes[j].started)
				pthread_join(w->lanes[j].th, NULL);
			nkv_fiber_free(&w->lanes[j]);
		}
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
	}
	free(r->waves);
}

int nkv_cpu_launch(const struct nkv_cpu_cfg *cfg, nkv_cpu_fn fn, void *arg)
{
	struct nkv_cpu_run r;
	uint32_t i;
	int err;

	err = check_cfg(cfg, fn);
	if (err)
		return err;
	if (nkv_cpu_cur)
		return -EDEADLK;
	memset(&r, 0, sizeof(r));
	memcpy(&r.cfg, cfg, sizeof(r.cfg));
	r.fn = fn;
	r.arg = arg;
	pthread_mutex_init(&r.gate_mu, NULL);
	pthread_cond_init(&r.gate_cv, NULL);
	r.waves = calloc(cfg->waves, sizeof(*r.waves));
	if (!r.waves)
		return -ENOMEM;
	for (i = 0; i < cfg->waves && !err; i++)
		err = wave_setup(&r, &r.waves[i], i);
	if (!err)
		err = start_threads(&r);
	/* A partial start must not run anything: the gate says abort. */
	gate_open(&r, err ? -1 : 1);
	join_and_free(&r);
	pthread_mutex_destroy(&r.gate_mu);
	pthread_cond_destroy(&r.gate_cv);
	return err;
}

void nkv_cpu_poll_pause(uint64_t n)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
	if ((n & 63) == 63)
		sched_yield();
}

static nkv_cpu_mmio_hook mmio_hook;
static void *mmio_hook_ctx;

void nkv_cpu_set_mmio_hook(nkv_cpu_mmio_hook hook, void *ctx)
{
	mmio_hook = hook;
	mmio_hook_ctx = ctx;
}

void nkv_cpu_mmio_store(volatile uint32_t *addr, uint32_t v)
{
	__atomic_store_n(addr, v, __ATOMIC_RELEASE);
	if (mmio_hook)
		mmio_hook(mmio_hook_ctx, addr, v);
}
