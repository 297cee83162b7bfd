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
struct nkv_cpu_run;

struct nkv_cpu_lane {
	struct nkv_cpu_wave *w;
	uint32_t id;
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
	uint32_t id;
	uint32_t size;
	struct nkv_cpu_lane lanes[NKV_CPU_MAX_WAVE];
	uint64_t all;		/* lanes launched */
	uint64_t exited;	/* lanes whose function returned */
	uint64_t pend;		/* lanes with pending = 1 (under the wave lock) */
	int stopped;		/* a protocol error stopped the wave */
	uint64_t rng;		/* NKV_CPU_CHECK: this wave's random stream */
	/* threads mode */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* fibers mode: the wave thread's scheduler */
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
	struct nkv_cpu_wave *waves;
	/* start gate: 0 wait, 1 go, -1 abort (a thread failed to start) */
	pthread_mutex_t gate_mu;
	pthread_cond_t gate_cv;
	int gate;
	/* the first protocol error of the run */
	pthread_mutex_t diag_mu;
	int proto_err;
	char diag[512];
};

/* The lane running on this OS thread (fibers: the one switched in). */
extern __thread struct nkv_cpu_lane *nkv_cpu_cur;

/* fiber.c */
int nkv_fiber_init(struct nkv_cpu_lane *l, size_t stack);
void nkv_fiber_free(struct nkv_cpu_lane *l);
/* Scheduler side: run lanes round robin until all returned. */
void nkv_fiber_schedule(struct nkv_cpu_wave *w);
/* Lane side: give the OS thread back to the scheduler. */
void nkv_fiber_yield(struct nkv_cpu_lane *l);

/* engine.c: a lane leaves its wave (fn returned). */
void nkv_cpu_lane_exit(struct nkv_cpu_lane *l);
int nkv_cpu_gate_wait(struct nkv_cpu_run *r);
/* engine.c: a wave broke the collective rules; fibers: the wave stops. */
void nkv_cpu_violation(struct nkv_cpu_wave *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* engine.c: NKV_CPU_CHECK's seeded random numbers (per wave). */
uint64_t nkv_cpu_rand(struct nkv_cpu_wave *w);
static inline int nkv_cpu_checking(const struct nkv_cpu_wave *w)
{
	return w->run->cfg.mode == NKV_CPU_CHECK;
}

#endif /* NKV_DEVICE_CPU_ENGINE_H */
