/* SPDX-License-Identifier: MIT */
/*
 * engine.c - the cpu engine: launch, lane identity and wave collectives.
 *
 * A collective is per lane: each lane of the mask records what it called
 * (kind, mask, source lane, call site, input) and waits; the lane that
 * completes the set computes the result for all of them. So collectives
 * over disjoint masks may be in flight at once, as on a GPU, and a lane
 * that calls something else than the rest of its mask is caught the
 * moment both have arrived. Fibers wait by yielding to the wave's
 * scheduler, real-thread lanes on a condition variable.
 */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device/cpu/engine.h"

__thread struct nkv_cpu_lane *nkv_cpu_cur;

enum coll_kind {
	COLL_BALLOT = 1,
	COLL_BCAST,
	COLL_BARRIER,
};

static const char *const coll_name[] = { "?", "ballot", "broadcast", "barrier" };

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

/* splitmix64: small, seedable, good enough to pick interleavings. */
uint64_t nkv_cpu_rand(struct nkv_cpu_wave *w)
{
	uint64_t z = (w->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void nkv_cpu_violation(struct nkv_cpu_wave *w, const char *fmt, ...)
{
	struct nkv_cpu_run *r = w->run;
	char msg[sizeof(r->diag)];
	int n;
	va_list ap;

	n = snprintf(msg, sizeof(msg), "wave %u: ", w->id);
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	/* A caller with a diag buffer reports it; otherwise say it here. */
	if (!r->cfg.diag || threads_mode(w))
		fprintf(stderr, "nkv cpu engine: %s\n", msg);
	if (threads_mode(w))
		abort();	/* real threads cannot be stopped where they stand */
	pthread_mutex_lock(&r->diag_mu);
	if (!r->proto_err) {
		r->proto_err = 1;
		memcpy(r->diag, msg, sizeof(msg));
	}
	pthread_mutex_unlock(&r->diag_mu);
	w->stopped = 1;
}

/* Fibers: a lane that hit a protocol error never runs again. */
static void park_forever(struct nkv_cpu_lane *l)
{
	for (;;)
		nkv_fiber_yield(l);
}

static int same_call(const struct nkv_cpu_lane *a, const struct nkv_cpu_lane *b)
{
	return a->c_kind == b->c_kind && a->c_mask == b->c_mask && a->c_src == b->c_src &&
	       (a->c_site == b->c_site || !strcmp(a->c_site, b->c_site));
}

static void describe(char *buf, size_t len, const struct nkv_cpu_lane *l)
{
	snprintf(buf, len, "lane %u in %s at %s (mask %#llx)", l->id, coll_name[l->c_kind],
		 l->c_site, (unsigned long long)l->c_mask);
}

/*
 * The common case without a scan: pending lanes are consistent with
 * every pending lane they relate to (each call was checked on arrival,
 * and a group leaves pending together), and a lane's mask holds itself.
 * So when the first pending lane of my mask made my call, all pending
 * lanes of my mask did (same_call is an equivalence, their masks equal
 * mine); a pending lane outside my mask made another call, so none may
 * wait for me. 1 = no violation is possible; 0 = look lane by lane.
 */
static int coll_clean(const struct nkv_cpu_wave *w, const struct nkv_cpu_lane *l)
{
	uint64_t self = 1ull << l->id, in = l->c_mask & w->pend & ~self;
	uint64_t out = w->pend & ~l->c_mask;

	if (l->c_mask & w->exited & ~self)
		return 0;
	if (in && !same_call(l, &w->lanes[__builtin_ctzll(in)]))
		return 0;
	for (; out; out &= out - 1)
		if (w->lanes[__builtin_ctzll(out)].c_mask & self)
			return 0;
	return 1;
}

/* Is the call @l just recorded consistent with the wave? 0, or it
 * reported a violation (fibers: the wave is now stopped). */
static int coll_check(struct nkv_cpu_wave *w, const struct nkv_cpu_lane *l)
{
	char a[160], b[160];
	uint64_t bits;
	uint32_t j;

	/* The lane is described only for a report: every collective of every
	 * lane passes here, and an snprintf per call was a fifth of a
	 * batch-32 wave's time. */
	if (!(l->c_mask >> l->id & 1)) {
		describe(a, sizeof(a), l);
		nkv_cpu_violation(w, "%s: the mask leaves the caller out", a);
		return -1;
	}
	if (l->c_mask & ~w->all) {
		describe(a, sizeof(a), l);
		nkv_cpu_violation(w, "%s: the mask names lanes the wave does not have (%#llx)",
				  a, (unsigned long long)w->all);
		return -1;
	}
	if (l->c_kind == COLL_BCAST && !(l->c_mask >> l->c_src & 1)) {
		describe(a, sizeof(a), l);
		nkv_cpu_violation(w, "%s: source lane %u is not in the mask", a, l->c_src);
		return -1;
	}
	if (coll_clean(w, l))
		return 0;
	/* Only lanes that can fail a check below: exited ones of my mask and
	 * pending ones (a scan of every lane struct, each ~1 KiB apart, was a
	 * quarter of a batch-32 wave's time). Same order, same reports. */
	for (bits = ((l->c_mask & w->exited) | w->pend) & ~(1ull << l->id); bits;
	     bits &= bits - 1) {
		const struct nkv_cpu_lane *o;
		int mine, theirs;

		j = (uint32_t)__builtin_ctzll(bits);
		o = &w->lanes[j];
		mine = l->c_mask >> j & 1;
		theirs = o->pending && (o->c_mask >> l->id & 1);
		if (!mine && !theirs)
			continue;
		if (mine && (w->exited >> j & 1)) {
			describe(a, sizeof(a), l);
			nkv_cpu_violation(w, "%s waits for lane %u, which returned", a, j);
			return -1;
		}
		if (o->pending && !same_call(l, o)) {
			describe(a, sizeof(a), l);
			describe(b, sizeof(b), o);
			nkv_cpu_violation(w, "%s and %s: lanes of one mask in different collectives",
					  a, b);
			return -1;
		}
	}
	return 0;
}

/* Every lane of @mask has arrived: compute the result, release them. */
static void coll_complete(struct nkv_cpu_wave *w, uint64_t mask)
{
	const struct nkv_cpu_lane *first = &w->lanes[__builtin_ctzll(mask)];
	uint64_t r = 0;
	uint32_t i;

	if (first->c_kind == COLL_BALLOT) {
		for (i = 0; i < w->size; i++)
			if ((mask >> i & 1) && w->lanes[i].c_in)
				r |= 1ull << i;
	} else if (first->c_kind == COLL_BCAST) {
		r = w->lanes[first->c_src].c_in;
	}
	for (i = 0; i < w->size; i++) {
		if (mask >> i & 1) {
			w->lanes[i].c_out = r;
			w->lanes[i].pending = 0;
		}
	}
	w->pend &= ~mask;
	if (threads_mode(w))
		pthread_cond_broadcast(&w->cv);
}

static int coll_ready(const struct nkv_cpu_wave *w, uint64_t mask)
{
	return !(mask & ~w->pend);
}

/*
 * A collective of the calling lane alone (a batch of one), on fibers with
 * no other lane waiting: nothing to meet and nothing to check against
 * (only a lane waiting for this one could disagree), so the result comes
 * without recording the call. A batch-1 command makes eight collectives;
 * the full path was a visible part of its round trip.
 */
static uint64_t coll_self(uint32_t kind, uint64_t v, uint32_t id)
{
	if (kind == COLL_BALLOT)
		return v ? 1ull << id : 0;
	return kind == COLL_BCAST ? v : 0;
}

/* Outside a launch the caller is lane 0 of a one-lane wave. */
static uint64_t coll_alone(uint32_t kind, uint64_t mask, uint64_t v, uint32_t src)
{
	if (mask != 1 || (kind == COLL_BCAST && src != 0)) {
		fprintf(stderr, "nkv cpu engine: %s outside a launch with mask %#llx\n",
			coll_name[kind], (unsigned long long)mask);
		abort();
	}
	return coll_self(kind, v, 0);
}

static uint64_t collective(uint32_t kind, uint64_t mask, uint64_t v, uint32_t src,
			   const char *site)
{
	struct nkv_cpu_lane *l = nkv_cpu_cur;
	struct nkv_cpu_wave *w;
	uint64_t r;

	if (!l)
		return coll_alone(kind, mask, v, src);
	w = l->w;
	if (mask == 1ull << l->id && !threads_mode(w) && !w->pend && !nkv_cpu_checking(w) &&
	    (kind != COLL_BCAST || src == l->id))
		return coll_self(kind, v, l->id);
	lock(w);
	l->c_kind = kind;
	l->c_mask = mask;
	l->c_src = kind == COLL_BCAST ? src : 0;
	l->c_in = v;
	l->c_site = site;
	l->pending = 1;
	w->pend |= 1ull << l->id;
	if (coll_check(w, l)) {
		unlock(w);
		park_forever(l);
	}
	if (coll_ready(w, mask))
		coll_complete(w, mask);
	while (l->pending) {
		if (threads_mode(w))
			pthread_cond_wait(&w->cv, &w->mu);
		else
			nkv_fiber_yield(l);
	}
	r = l->c_out;
	unlock(w);
	return r;
}

void nkv_cpu_lane_exit(struct nkv_cpu_lane *l)
{
	struct nkv_cpu_wave *w = l->w;
	char a[160];
	uint32_t j;

	lock(w);
	w->exited |= 1ull << l->id;
	for (j = 0; j < w->size && !w->stopped; j++) {
		const struct nkv_cpu_lane *o = &w->lanes[j];

		if (o->pending && (o->c_mask >> l->id & 1)) {
			describe(a, sizeof(a), o);
			nkv_cpu_violation(w, "%s waits for lane %u, which returned", a, l->id);
		}
	}
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

uint64_t nkv_cpu_entry_mask(void)
{
	return nkv_cpu_cur ? nkv_cpu_cur->w->all : 1;
}

uint64_t nkv_cpu_activemask(void)
{
	struct nkv_cpu_lane *l = nkv_cpu_cur;
	uint64_t alive;

	if (!l)
		return 1;
	alive = l->w->all & ~l->w->exited;
	if (nkv_cpu_checking(l->w))
		alive &= nkv_cpu_rand(l->w);
	return alive | 1ull << l->id;
}

uint64_t nkv_cpu_ballot_at(uint64_t mask, int pred, const char *site)
{
	return collective(COLL_BALLOT, mask, pred != 0, 0, site);
}

uint64_t nkv_cpu_bcast_at(uint64_t mask, uint64_t v, uint32_t src, const char *site)
{
	return collective(COLL_BCAST, mask, v, src, site);
}

void nkv_cpu_barrier_at(uint64_t mask, const char *site)
{
	collective(COLL_BARRIER, mask, 0, 0, site);
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
	if (!c || !fn || c->size < offsetof(struct nkv_cpu_cfg, seed))
		return -EINVAL;
	if (c->waves == 0 || c->waves > NKV_CPU_MAX_WAVES || c->wave_size == 0)
		return -EINVAL;
	if (c->size >= offsetof(struct nkv_cpu_cfg, sched) + sizeof(c->sched) &&
	    c->sched > NKV_CPU_SCHED_IDLE)
		return -EINVAL;
	if (c->mode == NKV_CPU_FIBERS || c->mode == NKV_CPU_CHECK)
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
	w->all = w->size == 64 ? ~0ull : (1ull << w->size) - 1ull;
	w->rng = r->cfg.seed ^ (uint64_t)(id + 1u) * 0xd1b54a32d192ed03ull;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	for (i = 0; i < w->size; i++) {
		w->lanes[i].w = w;
		w->lanes[i].id = i;
		if (threads_mode(w))
			continue;
		err = nkv_fiber_init(&w->lanes[i], stack_size(&r->cfg));
		if (err)
			return err;
	}
	return 0;
}

/*
 * The scheduling class the launch asked for, set from here on a thread
 * still waiting at the gate (glibc's thread attributes take no SCHED_IDLE).
 */
static int thread_sched(const struct nkv_cpu_run *r, pthread_t th)
{
	struct sched_param sp = { .sched_priority = 0 };

	if (r->cfg.sched != NKV_CPU_SCHED_IDLE)
		return 0;
	return -pthread_setschedparam(th, SCHED_IDLE, &sp);
}

static int start_wave(struct nkv_cpu_run *r, struct nkv_cpu_wave *w)
{
	uint32_t j;
	int err;

	if (!threads_mode(w)) {
		err = pthread_create(&w->th, NULL, wave_thread, w);
		if (err)
			return -err;
		w->started = 1;
		return thread_sched(r, w->th);
	}
	for (j = 0; j < w->size; j++) {
		err = pthread_create(&w->lanes[j].th, NULL, lane_thread, &w->lanes[j]);
		if (err)
			return -err;
		w->lanes[j].started = 1;
		err = thread_sched(r, w->lanes[j].th);
		if (err)
			return err;
	}
	return 0;
}

static int start_threads(struct nkv_cpu_run *r)
{
	uint32_t i;
	int err = 0;

	for (i = 0; i < r->cfg.waves && !err; i++)
		err = start_wave(r, &r->waves[i]);
	return err;
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

/* NKV_CPU_CHECK=SEED: check every fibers launch, e.g. a whole suite. */
static void check_env(struct nkv_cpu_cfg *c)
{
	const char *e = getenv("NKV_CPU_CHECK");

	if (c->mode == NKV_CPU_FIBERS && e && *e) {
		c->mode = NKV_CPU_CHECK;
		c->seed = strtoull(e, NULL, 0);
	}
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
	memcpy(&r.cfg, cfg, cfg->size < sizeof(r.cfg) ? cfg->size : sizeof(r.cfg));
	check_env(&r.cfg);
	r.fn = fn;
	r.arg = arg;
	pthread_mutex_init(&r.diag_mu, NULL);
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
	pthread_mutex_destroy(&r.diag_mu);
	if (!err && r.proto_err) {
		err = -EPROTO;
		if (r.cfg.diag && r.cfg.diag_len)
			snprintf(r.cfg.diag, r.cfg.diag_len, "%s", r.diag);
	}
	return err;
}

/* NKV_CPU_CHECK: now and then let the other lanes run, or sleep a few
 * microseconds, so a loop that only works in lockstep shows it. */
static void check_pause(struct nkv_cpu_lane *l)
{
	uint64_t x = nkv_cpu_rand(l->w);

	if ((x & 7) == 0) {
		nkv_fiber_yield(l);
	} else if ((x & 63) == 1) {
		struct timespec ts = { 0, (long)(1000 + (x >> 8) % 50000) };

		nanosleep(&ts, NULL);
	}
}

/*
 * A wait spins for its first NKV_CPU_SPIN_NS: a controller on another
 * core answers within a few microseconds, and a system call on every
 * 64th poll from the start (as before) put the poller in the kernel when
 * the completion came. After that, sched_yield() every 64 polls, so a
 * controller thread or a backend's daemons sharing this core run. It
 * never sleeps: measured against RADOS on a 2-vCPU VM, napping (10 us
 * naps, or Linux-style hybrid polling that sleeps half the average
 * service time) lost 15-30 % of the IOPS that yielding kept, because a
 * sleeping thread's wake-up crosses an idle virtual CPU
 * (docs/bench.md). The clock is read every 64 polls only; a wait's
 * first 63 polls never read it. @n == 0 starts a new wait.
 */
#define NKV_CPU_SPIN_NS 20000ull

static __thread uint64_t pause_t0;	/* this wait's clock at poll 63 */
static __thread int pause_yield;	/* this wait is past its spin */

uint64_t nkv_cpu_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pause_step(uint64_t n)
{
	if (n == 0)
		pause_yield = 0;
	if ((n & 63) != 63)
		return;
	if (pause_yield) {
		sched_yield();
		return;
	}
	if (n == 63)
		pause_t0 = nkv_cpu_clock_ns();
	else if (nkv_cpu_clock_ns() - pause_t0 >= NKV_CPU_SPIN_NS)
		pause_yield = 1;
}

void nkv_cpu_poll_pause(uint64_t n)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
	if (nkv_cpu_cur && nkv_cpu_checking(nkv_cpu_cur->w))
		check_pause(nkv_cpu_cur);
	else
		pause_step(n);
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
