/* SPDX-License-Identifier: MIT */
/*
 * engine.h - cpu engine internals shared by engine.c and fiber.c.
 */
#ifndef NKV_DEVICE_CPU_ENGINE_H
#define NKV_DEVICE_CPU_ENGINE_H

#include <pthread.h>
#include <stdint.h>
#include <ucontext.h>

#include "nkv_cpu.h"

struct nkv_cpu_wave;
struct nkv_cpu_block;
struct nkv_cpu_run;

struct nkv_cpu_lane {
	struct nkv_cpu_wave *w;
	uint32_t id;
	uint32_t thread;	/* index in the block */
	int done;
	/* The collective this lane waits in, while pending = 1. */
	int pending;
	uint32_t c_kind;
	uint32_t c_src;
	uint64_t c_mask;
	uint64_t c_in;
	uint64_t c_out;
	const char *c_site;
	/* fibers */
	void *sp;		/* saved stack pointer (ctx_switch.h) */
	ucontext_t ctx;		/* where ctx_switch.h has no assembly */
	void *map;		/* guard page + stack */
	size_t map_len;
	void *asan_fake;	/* ASan fake stack of this fiber */
	void *tsan_fiber;
	/* threads */
	pthread_t th;
	int started;
};

struct nkv_cpu_wave {
	struct nkv_cpu_run *run;
	struct nkv_cpu_block *blk;
	uint32_t id;		/* in the launch */
	uint32_t size;		/* lanes (the last wave of a block may be partial) */
	struct nkv_cpu_lane lanes[NKV_CPU_MAX_WAVE];
	uint64_t all;		/* lanes launched */
	uint64_t exited;	/* lanes whose function returned */
	uint64_t pend;		/* lanes with pending = 1 (under the block lock) */
};

/* A variable a block's threads share (nkv_cpu_block_shared). */
struct nkv_cpu_shared {
	struct nkv_cpu_shared *next;
	const char *site;
	size_t size;
	void *data;
};

/*
 * A block: waves that share a block barrier and shared variables. The
 * lock and the scheduler are the block's, so a block of one wave is
 * exactly the wave of before.
 */
struct nkv_cpu_block {
	struct nkv_cpu_run *run;
	uint32_t id;
	struct nkv_cpu_wave *waves;	/* run->waves + id * nwaves */
	struct nkv_cpu_lane **lane;	/* its threads, by index in the block */
	uint32_t nwaves;
	uint32_t threads;
	uint32_t exited;	/* threads whose function returned */
	uint32_t last_exit;	/* the latest of them (a thread index) */
	/* the block barrier in progress */
	uint32_t bar_waiting;
	uint32_t bar_count;	/* waiting threads whose predicate was set */
	struct nkv_cpu_lane *bar_first;	/* the first to arrive, for reports */
	struct nkv_cpu_shared *shared;
	int stopped;		/* a protocol error stopped the block */
	uint64_t rng;		/* NKV_CPU_CHECK: this block's random stream */
	/* threads mode: one lock for every collective of the block */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* fibers mode: the block thread's scheduler */
	pthread_t th;
	int started;
	void *sched_sp;
	ucontext_t sched;
	void *sched_asan_fake;
	const void *sched_stack;
	size_t sched_stack_len;
	void *sched_tsan_fiber;
};

struct nkv_cpu_run {
	struct nkv_cpu_cfg cfg;	/* as launched; mode CHECK if NKV_CPU_CHECK set */
	nkv_cpu_fn fn;
	void *arg;
	uint32_t block_size;	/* threads per block (cfg's, or wave_size) */
	uint32_t nblocks;
	struct nkv_cpu_wave *waves;
	struct nkv_cpu_block *blocks;
	struct nkv_cpu_lane **lanes;	/* every block's lane[] */
	/* start gate: 0 wait, 1 go, -1 abort (a thread failed to start) */
	pthread_mutex_t gate_mu;
	pthread_cond_t gate_cv;
	int gate;
	/* the first protocol error (or resource failure) of the run */
	pthread_mutex_t diag_mu;
	int stop_err;		/* 0, -EPROTO or -ENOMEM: what the launch returns */
	char diag[512];
};

/* Thread @t of block @b. */
static inline struct nkv_cpu_lane *nkv_cpu_thread(struct nkv_cpu_block *b, uint32_t t)
{
	return b->lane[t];
}

/* The lane running on this OS thread (fibers: the one switched in). */
extern __thread struct nkv_cpu_lane *nkv_cpu_cur;

/* fiber.c */
int nkv_fiber_init(struct nkv_cpu_lane *l, size_t stack);
void nkv_fiber_free(struct nkv_cpu_lane *l);
/* Scheduler side: run the block's lanes until all returned. */
void nkv_fiber_schedule(struct nkv_cpu_block *b);
/* Lane side: give the OS thread back to the scheduler. */
void nkv_fiber_yield(struct nkv_cpu_lane *l);

/* engine.c: a lane leaves its wave (fn returned). */
void nkv_cpu_lane_exit(struct nkv_cpu_lane *l);
int nkv_cpu_gate_wait(struct nkv_cpu_run *r);
/* engine.c: a block broke the collective rules (-EPROTO), or ran out
 * of something (nkv_cpu_halt's @err); fibers: the block stops. */
void nkv_cpu_violation(struct nkv_cpu_block *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void nkv_cpu_halt(struct nkv_cpu_block *b, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* engine.c: NKV_CPU_CHECK's seeded random numbers (per block). */
uint64_t nkv_cpu_rand(struct nkv_cpu_block *b);
static inline int nkv_cpu_checking(const struct nkv_cpu_run *r)
{
	return r->cfg.mode == NKV_CPU_CHECK;
}
/* engine.c: describe a waiting lane for a report. */
void nkv_cpu_describe(char *buf, size_t len, const struct nkv_cpu_lane *l);

#endif /* NKV_DEVICE_CPU_ENGINE_H */
