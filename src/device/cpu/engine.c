/* SPDX-License-Identifier: MIT */
/*
 * engine.c - the cpu engine: launch, lane identity, wave collectives and
 * the block barrier.
 *
 * A collective is per lane: each lane of the mask records what it called
 * (kind, mask, source lane, call site, input) and waits; the lane that
 * completes the set computes the result for all of them. So collectives
 * over disjoint masks may be in flight at once, as on a GPU, and a lane
 * that calls something else than the rest of its mask is caught the
 * moment both have arrived. The block barrier is the same with the
 * block's every thread as the set. Fibers wait by yielding to the
 * block's scheduler, real-thread lanes on the block's condition variable.
 */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "device/cpu/engine.h"

__thread struct nkv_cpu_lane *nkv_cpu_cur;

enum coll_kind {
	COLL_BALLOT = 1,
	COLL_BCAST,
	COLL_BARRIER,
	COLL_BLOCK,		/* the block barrier (its count form too) */
};

static const char *const coll_name[] = { "?", "ballot", "broadcast", "barrier",
					 "block barrier" };

static int threads_mode(const struct nkv_cpu_run *r)
{
	return r->cfg.mode == NKV_CPU_THREADS;
}

static void lock(struct nkv_cpu_block *b)
{
	if (threads_mode(b->run))
		pthread_mutex_lock(&b->mu);
}

static void unlock(struct nkv_cpu_block *b)
{
	if (threads_mode(b->run))
		pthread_mutex_unlock(&b->mu);
}

/* splitmix64: small, seedable, good enough to pick interleavings. */
uint64_t nkv_cpu_rand(struct nkv_cpu_block *b)
{
	uint64_t z = (b->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Stop block @b with @err for the launch to return, and say why. */
static void vhalt(struct nkv_cpu_block *b, int err, const char *fmt, va_list ap)
{
	struct nkv_cpu_run *r = b->run;
	char msg[sizeof(r->diag)];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* A caller with a diag buffer reports it; otherwise say it here. */
	if (!r->cfg.diag || threads_mode(r))
		fprintf(stderr, "nkv cpu engine: %s\n", msg);
	if (threads_mode(r))
		abort();	/* real threads cannot be stopped where they stand */
	pthread_mutex_lock(&r->diag_mu);
	if (!r->stop_err) {
		r->stop_err = err;
		memcpy(r->diag, msg, sizeof(msg));
	}
	pthread_mutex_unlock(&r->diag_mu);
	b->stopped = 1;
}

void nkv_cpu_halt(struct nkv_cpu_block *b, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vhalt(b, err, fmt, ap);
	va_end(ap);
}

void nkv_cpu_violation(struct nkv_cpu_block *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vhalt(b, -EPROTO, fmt, ap);
	va_end(ap);
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

/* A waiting lane: its wave collective with the mask, or where in the
 * block it waits at the block barrier. */
void nkv_cpu_describe(char *buf, size_t len, const struct nkv_cpu_lane *l)
{
	if (l->c_kind == COLL_BLOCK)
		snprintf(buf, len, "thread %u (wave %u lane %u) in block barrier at %s",
			 l->thread, l->w->id, l->id, l->c_site);
	else
		snprintf(buf, len, "lane %u in %s at %s (mask %#llx)", l->id,
			 coll_name[l->c_kind], l->c_site, (unsigned long long)l->c_mask);
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
		nkv_cpu_describe(a, sizeof(a), l);
		nkv_cpu_violation(w->blk, "wave %u: %s: the mask leaves the caller out", w->id, a);
		return -1;
	}
	if (l->c_mask & ~w->all) {
		nkv_cpu_describe(a, sizeof(a), l);
		nkv_cpu_violation(w->blk,
				  "wave %u: %s: the mask names lanes the wave does not have (%#llx)",
				  w->id, a, (unsigned long long)w->all);
		return -1;
	}
	if (l->c_kind == COLL_BCAST && !(l->c_mask >> l->c_src & 1)) {
		nkv_cpu_describe(a, sizeof(a), l);
		nkv_cpu_violation(w->blk, "wave %u: %s: source lane %u is not in the mask", w->id,
				  a, l->c_src);
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
			nkv_cpu_describe(a, sizeof(a), l);
			nkv_cpu_violation(w->blk, "wave %u: %s waits for lane %u, which returned",
					  w->id, a, j);
			return -1;
		}
		if (o->pending && !same_call(l, o)) {
			nkv_cpu_describe(a, sizeof(a), l);
			nkv_cpu_describe(b, sizeof(b), o);
			nkv_cpu_violation(w->blk,
					  "wave %u: %s and %s: lanes of one mask in different collectives",
					  w->id, a, b);
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
	if (threads_mode(w->run))
		pthread_cond_broadcast(&w->blk->cv);
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

static void coll_record(struct nkv_cpu_lane *l, uint32_t kind, uint64_t mask, uint64_t v,
			uint32_t src, const char *site)
{
	l->c_kind = kind;
	l->c_mask = mask;
	l->c_src = kind == COLL_BCAST ? src : 0;
	l->c_in = v;
	l->c_site = site;
	l->pending = 1;
	l->w->pend |= 1ull << l->id;
}

/* Until the collective @l recorded completes; the lock is held. */
static uint64_t coll_wait(struct nkv_cpu_block *b, struct nkv_cpu_lane *l)
{
	while (l->pending) {
		if (threads_mode(b->run))
			pthread_cond_wait(&b->cv, &b->mu);
		else
			nkv_fiber_yield(l);
	}
	return l->c_out;
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
	if (mask == 1ull << l->id && !threads_mode(w->run) && !w->pend &&
	    !nkv_cpu_checking(w->run) && (kind != COLL_BCAST || src == l->id))
		return coll_self(kind, v, l->id);
	lock(w->blk);
	coll_record(l, kind, mask, v, src, site);
	if (coll_check(w, l)) {
		unlock(w->blk);
		park_forever(l);
	}
	if (coll_ready(w, mask))
		coll_complete(w, mask);
	r = coll_wait(w->blk, l);
	unlock(w->blk);
	return r;
}

/* "thread T (wave W lane L)" of block @b, for a report. */
static void name_thread(char *buf, size_t len, struct nkv_cpu_block *b, uint32_t t)
{
	const struct nkv_cpu_lane *o = nkv_cpu_thread(b, t);

	snprintf(buf, len, "thread %u (wave %u lane %u)", t, o->w->id, o->id);
}

/* Is thread @l's arrival at a block barrier consistent with the block?
 * 0, or it reported a violation. Every thread must come to the same
 * barrier: one that returned never will, one at another barrier waits
 * for a different meeting. (Its wave's lanes: coll_check.) */
static int block_check(struct nkv_cpu_block *b, const struct nkv_cpu_lane *l)
{
	char a[160], o[160];

	if (b->exited) {
		nkv_cpu_describe(a, sizeof(a), l);
		name_thread(o, sizeof(o), b, b->last_exit);
		nkv_cpu_violation(b, "block %u: %s: %s returned without reaching it", b->id, a, o);
		return -1;
	}
	if (b->bar_first && b->bar_first->c_site != l->c_site &&
	    strcmp(b->bar_first->c_site, l->c_site)) {
		nkv_cpu_describe(o, sizeof(o), b->bar_first);
		nkv_cpu_describe(a, sizeof(a), l);
		nkv_cpu_violation(b, "block %u: %s and %s: threads of one block at different barriers",
				  b->id, o, a);
		return -1;
	}
	return 0;
}

/* Every thread of @b is at the barrier: each gets the count, all go. */
static void block_complete(struct nkv_cpu_block *b)
{
	uint32_t t;

	for (t = 0; t < b->threads; t++) {
		struct nkv_cpu_lane *o = nkv_cpu_thread(b, t);

		o->c_out = b->bar_count;
		o->pending = 0;
		o->w->pend &= ~(1ull << o->id);
	}
	b->bar_waiting = 0;
	b->bar_count = 0;
	b->bar_first = NULL;
	if (threads_mode(b->run))
		pthread_cond_broadcast(&b->cv);
}

/* The block barrier: every thread of the block arrives at one call site;
 * returns how many passed a non-zero @pred. */
static uint32_t block_collective(int pred, const char *site)
{
	struct nkv_cpu_lane *l = nkv_cpu_cur;
	struct nkv_cpu_block *b;
	uint64_t r;

	if (!l)
		return pred != 0;	/* outside a launch: a block of one thread */
	b = l->w->blk;
	lock(b);
	coll_record(l, COLL_BLOCK, 1ull << l->id, pred != 0, 0, site);
	if (coll_check(l->w, l) || block_check(b, l)) {
		unlock(b);
		park_forever(l);
	}
	b->bar_count += pred != 0;
	if (!b->bar_waiting++)
		b->bar_first = l;
	if (b->bar_waiting == b->threads)
		block_complete(b);
	r = coll_wait(b, l);
	unlock(b);
	return (uint32_t)r;
}

void nkv_cpu_lane_exit(struct nkv_cpu_lane *l)
{
	struct nkv_cpu_wave *w = l->w;
	struct nkv_cpu_block *b = w->blk;
	char a[160], t[64];
	uint32_t j;

	lock(b);
	w->exited |= 1ull << l->id;
	b->exited++;
	b->last_exit = l->thread;
	for (j = 0; j < w->size && !b->stopped; j++) {
		const struct nkv_cpu_lane *o = &w->lanes[j];

		if (o->pending && (o->c_mask >> l->id & 1)) {
			nkv_cpu_describe(a, sizeof(a), o);
			nkv_cpu_violation(b, "wave %u: %s waits for lane %u, which returned", w->id,
					  a, l->id);
		}
	}
	if (b->bar_waiting && !b->stopped) {
		nkv_cpu_describe(a, sizeof(a), b->bar_first);
		name_thread(t, sizeof(t), b, l->thread);
		nkv_cpu_violation(b, "block %u: %s: %s returned without reaching it", b->id, a, t);
	}
	unlock(b);
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
	return nkv_cpu_cur ? nkv_cpu_cur->w->run->cfg.wave_size : 1;
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
	if (nkv_cpu_checking(l->w->run))
		alive &= nkv_cpu_rand(l->w->blk);
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

uint32_t nkv_cpu_block_id(void)
{
	return nkv_cpu_cur ? nkv_cpu_cur->w->blk->id : 0;
}

uint32_t nkv_cpu_block_thread(void)
{
	return nkv_cpu_cur ? nkv_cpu_cur->thread : 0;
}

uint32_t nkv_cpu_block_size(void)
{
	return nkv_cpu_cur ? nkv_cpu_cur->w->blk->threads : 1;
}

uint32_t nkv_cpu_block_count_at(int pred, const char *site)
{
	return block_collective(pred, site);
}

void nkv_cpu_block_barrier_at(const char *site)
{
	block_collective(0, site);
}

/* A new shared variable of @size zeroed bytes for @site, or NULL. */
static struct nkv_cpu_shared *shared_new(struct nkv_cpu_block *b, size_t size, const char *site)
{
	struct nkv_cpu_shared *s = calloc(1, sizeof(*s));
	size_t len = (size + 63) & ~(size_t)63;

	if (!s)
		return NULL;
	s->data = aligned_alloc(64, len ? len : 64);
	if (!s->data) {
		free(s);
		return NULL;
	}
	memset(s->data, 0, len ? len : 64);
	s->site = site;
	s->size = size;
	s->next = b->shared;
	b->shared = s;
	return s;
}

/* One variable per block and declaration site, as a GPU's static shared
 * memory is one per block and declaration. */
void *nkv_cpu_block_shared(size_t size, const char *site)
{
	struct nkv_cpu_lane *l = nkv_cpu_cur;
	struct nkv_cpu_shared *s;
	struct nkv_cpu_block *b;

	if (!l) {
		fprintf(stderr, "nkv cpu engine: block shared variable at %s outside a launch\n",
			site);
		abort();
	}
	b = l->w->blk;
	lock(b);
	for (s = b->shared; s && strcmp(s->site, site); s = s->next)
		;
	if (!s)
		s = shared_new(b, size, site);
	if (!s || s->size < size) {
		if (s)
			nkv_cpu_violation(b, "block %u: the shared variable at %s is %zu bytes, "
					  "not %zu", b->id, site, s->size, size);
		else
			nkv_cpu_halt(b, -ENOMEM, "block %u: no memory for the shared variable at "
				     "%s (%zu bytes)", b->id, site, size);
		unlock(b);
		park_forever(l);
	}
	unlock(b);
	return s->data;
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

/*
 * A wait's naps (pause_rest) are sized to see a completion at most an
 * eighth of the wait late; Linux's default timer slack (50 us) made the
 * 25-60 us naps of a 500 us wait 100-120 us long (perf sched, a 2-core
 * VM). The engine's own threads sleep to the microsecond, as the
 * target's poll thread does; the caller's thread keeps its slack.
 */
static void nkv_cpu_thread_start(void)
{
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
}

static void *lane_thread(void *p)
{
	struct nkv_cpu_lane *l = p;

	nkv_cpu_thread_start();
	if (nkv_cpu_gate_wait(l->w->run) > 0) {
		nkv_cpu_cur = l;
		l->w->run->fn(l->w->run->arg);
		nkv_cpu_lane_exit(l);
		nkv_cpu_cur = NULL;
	}
	return NULL;
}

static void *block_thread(void *p)
{
	struct nkv_cpu_block *b = p;

	nkv_cpu_thread_start();
	if (nkv_cpu_gate_wait(b->run) > 0)
		nkv_fiber_schedule(b);
	return NULL;
}

/* The launch's shape, from the caller's cfg (@size bytes of it, the
 * rest zero): 0 or -EINVAL. Sets the threads per block. */
static int check_cfg(struct nkv_cpu_run *r, size_t size)
{
	const struct nkv_cpu_cfg *c = &r->cfg;
	uint32_t bw;

	if (c->waves == 0 || c->waves > NKV_CPU_MAX_WAVES || c->wave_size == 0)
		return -EINVAL;
	if (size >= offsetof(struct nkv_cpu_cfg, sched) + sizeof(c->sched) &&
	    c->sched > NKV_CPU_SCHED_IDLE)
		return -EINVAL;
	if (c->mode == NKV_CPU_FIBERS || c->mode == NKV_CPU_CHECK) {
		if (c->wave_size > NKV_CPU_MAX_WAVE || (c->stack_size && c->stack_size < 16384))
			return -EINVAL;
	} else if (c->mode != NKV_CPU_THREADS || c->wave_size > NKV_CPU_THREADS_MAX_WAVE) {
		return -EINVAL;
	}
	r->block_size = c->block_size ? c->block_size : c->wave_size;
	bw = (r->block_size + c->wave_size - 1) / c->wave_size;
	if (r->block_size > NKV_CPU_MAX_BLOCK || bw > NKV_CPU_MAX_BLOCK_WAVES || c->waves % bw)
		return -EINVAL;
	r->nblocks = c->waves / bw;
	return 0;
}

static size_t stack_size(const struct nkv_cpu_cfg *c)
{
	size_t s = c->stack_size ? c->stack_size : NKV_CPU_DEFAULT_STACK;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	s *= 4;		/* instrumented frames are several times larger */
#endif
	return s;
}

static void block_setup(struct nkv_cpu_run *r, struct nkv_cpu_block *b, uint32_t id)
{
	b->run = r;
	b->id = id;
	b->nwaves = r->cfg.waves / r->nblocks;
	b->waves = r->waves + (size_t)id * b->nwaves;
	b->threads = r->block_size;
	b->lane = r->lanes + (size_t)id * b->threads;
	b->rng = r->cfg.seed ^ (uint64_t)(id + 1u) * 0xd1b54a32d192ed03ull;
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
}

/* Wave @id: the next lanes of its block; the block's last may be partial. */
static int wave_setup(struct nkv_cpu_run *r, struct nkv_cpu_wave *w, uint32_t id)
{
	struct nkv_cpu_block *b = &r->blocks[id / (r->cfg.waves / r->nblocks)];
	uint32_t first = (uint32_t)(w - b->waves) * r->cfg.wave_size, i;
	int err;

	w->run = r;
	w->blk = b;
	w->id = id;
	w->size = b->threads - first < r->cfg.wave_size ? b->threads - first : r->cfg.wave_size;
	w->all = w->size == 64 ? ~0ull : (1ull << w->size) - 1ull;
	for (i = 0; i < w->size; i++) {
		w->lanes[i].w = w;
		w->lanes[i].id = i;
		w->lanes[i].thread = first + i;
		b->lane[first + i] = &w->lanes[i];
		if (threads_mode(r))
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

/* Fibers: one OS thread runs the block; threads: one per lane. */
static int start_block(struct nkv_cpu_run *r, struct nkv_cpu_block *b)
{
	uint32_t t;
	int err;

	if (!threads_mode(r)) {
		err = pthread_create(&b->th, NULL, block_thread, b);
		if (err)
			return -err;
		b->started = 1;
		return thread_sched(r, b->th);
	}
	for (t = 0; t < b->threads; t++) {
		struct nkv_cpu_lane *l = nkv_cpu_thread(b, t);

		err = pthread_create(&l->th, NULL, lane_thread, l);
		if (err)
			return -err;
		l->started = 1;
		err = thread_sched(r, l->th);
		if (err)
			return err;
	}
	return 0;
}

static int start_threads(struct nkv_cpu_run *r)
{
	uint32_t i;
	int err = 0;

	for (i = 0; i < r->nblocks && !err; i++)
		err = start_block(r, &r->blocks[i]);
	return err;
}

static void block_free(struct nkv_cpu_block *b)
{
	struct nkv_cpu_shared *s, *next;

	for (s = b->shared; s; s = next) {
		next = s->next;
		free(s->data);
		free(s);
	}
	pthread_mutex_destroy(&b->mu);
	pthread_cond_destroy(&b->cv);
}

static void join_and_free(struct nkv_cpu_run *r)
{
	uint32_t i, j;

	for (i = 0; i < r->nblocks; i++)
		if (r->blocks[i].started)
			pthread_join(r->blocks[i].th, NULL);
	for (i = 0; i < r->cfg.waves; i++) {
		struct nkv_cpu_wave *w = &r->waves[i];

		for (j = 0; j < w->size; j++) {
			if (w->lanes[j].started)
				pthread_join(w->lanes[j].th, NULL);
			nkv_fiber_free(&w->lanes[j]);
		}
	}
	for (i = 0; i < r->nblocks; i++)
		block_free(&r->blocks[i]);
	free(r->waves);
	free(r->blocks);
	free(r->lanes);
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

/* Blocks and waves, set up to run; 0 or -ENOMEM (freed by the caller). */
static int run_setup(struct nkv_cpu_run *r)
{
	uint32_t i;
	int err = 0;

	r->waves = calloc(r->cfg.waves, sizeof(*r->waves));
	r->blocks = calloc(r->nblocks, sizeof(*r->blocks));
	r->lanes = calloc((size_t)r->nblocks * r->block_size, sizeof(*r->lanes));
	if (!r->waves || !r->blocks || !r->lanes) {
		free(r->waves);
		free(r->blocks);
		free(r->lanes);
		r->waves = NULL;
		return -ENOMEM;
	}
	for (i = 0; i < r->nblocks; i++)
		block_setup(r, &r->blocks[i], i);
	for (i = 0; i < r->cfg.waves && !err; i++)
		err = wave_setup(r, &r->waves[i], i);
	return err;
}

int nkv_cpu_launch(const struct nkv_cpu_cfg *cfg, nkv_cpu_fn fn, void *arg)
{
	struct nkv_cpu_run r;
	int err;

	if (!cfg || !fn || cfg->size < offsetof(struct nkv_cpu_cfg, seed))
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	memcpy(&r.cfg, cfg, cfg->size < sizeof(r.cfg) ? cfg->size : sizeof(r.cfg));
	err = check_cfg(&r, cfg->size);
	if (err)
		return err;
	if (nkv_cpu_cur)
		return -EDEADLK;
	check_env(&r.cfg);
	r.fn = fn;
	r.arg = arg;
	err = run_setup(&r);
	if (err == -ENOMEM && !r.waves)
		return err;
	pthread_mutex_init(&r.diag_mu, NULL);
	pthread_mutex_init(&r.gate_mu, NULL);
	pthread_cond_init(&r.gate_cv, NULL);
	if (!err)
		err = start_threads(&r);
	/* A partial start must not run anything: the gate says abort. */
	gate_open(&r, err ? -1 : 1);
	join_and_free(&r);
	pthread_mutex_destroy(&r.gate_mu);
	pthread_cond_destroy(&r.gate_cv);
	pthread_mutex_destroy(&r.diag_mu);
	if (!err && r.stop_err) {
		err = r.stop_err;
		if (r.cfg.diag && r.cfg.diag_len)
			snprintf(r.cfg.diag, r.cfg.diag_len, "%s", r.diag);
	}
	return err;
}

/* NKV_CPU_CHECK: now and then let the other lanes run, or sleep a few
 * microseconds, so a loop that only works in lockstep shows it. */
static void check_pause(struct nkv_cpu_lane *l)
{
	uint64_t x = nkv_cpu_rand(l->w->blk);

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
 * controller thread or a backend's daemons sharing this core run.
 * Short naps cost more than they give: measured against RADOS on a
 * 2-vCPU VM at 4 KiB, 10 us naps, or Linux-style hybrid polling that
 * sleeps half the average service time, lost 15-30 % of the IOPS that
 * yielding kept (a sleeping thread's wake-up crosses an idle virtual
 * CPU). A wait past NKV_CPU_NAP_AFTER_NS is another kind, though: a
 * backend moving megabytes (a batch of 2 MiB RADOS writes takes ~20 ms)
 * while a yielding poller still takes a hyperthread's share from its
 * daemons. Such a wait naps 1/NKV_CPU_NAP_DIV of the time waited so far
 * (at most NKV_CPU_NAP_MAX_NS), so its completion is seen at most that
 * fraction late: 2 MiB and 32 MiB RADOS batches went from 0.7-0.85x to
 * 0.9-1.1x of librados alone (docs/bench.md). The clock is read every
 * 64 polls only; a wait's first 63 polls never read it. @n == 0 starts
 * a new wait.
 */
#define NKV_CPU_SPIN_NS 20000ull
#define NKV_CPU_NAP_AFTER_NS 200000ull
#define NKV_CPU_NAP_DIV 8u
#define NKV_CPU_NAP_MAX_NS 2000000ull

static __thread uint64_t pause_t0;	/* this wait's clock at poll 63 */
static __thread int pause_yield;	/* this wait is past its spin */

uint64_t nkv_cpu_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Past the spin: yield, or nap after a long wait (above). */
static void pause_rest(uint64_t waited)
{
	uint64_t nap = waited / NKV_CPU_NAP_DIV;
	struct timespec ts;

	if (waited < NKV_CPU_NAP_AFTER_NS) {
		sched_yield();
		return;
	}
	if (nap > NKV_CPU_NAP_MAX_NS)
		nap = NKV_CPU_NAP_MAX_NS;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)nap;
	nanosleep(&ts, NULL);
}

static void pause_step(uint64_t n)
{
	if (n == 0)
		pause_yield = 0;
	if ((n & 63) != 63)
		return;
	if (pause_yield) {
		pause_rest(nkv_cpu_clock_ns() - pause_t0);
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
	if (nkv_cpu_cur && nkv_cpu_checking(nkv_cpu_cur->w->run))
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
