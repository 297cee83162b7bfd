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
	uint64_t wait_gen;	/* generation this lane waits to pass */
	int waiting;
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
	/* the collective in progress */
	uint32_t alive;
	uint32_t arrived;
	uint64_t arrived_mask;
	uint32_t kind;
	uint32_t src;
	uint64_t in[NKV_CPU_MAX_WAVE];
	uint64_t result;
	uint64_t gen;
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
	struct nkv_cpu_cfg cfg;
	nkv_cpu_fn fn;
	void *arg;
	struct nkv_cpu_wave *waves;
	/* start gate: 0 wait, 1 go, -1 abort (a thread failed to start) */
	pthread_mutex_t gate_mu;
	pthread_cond_t gate_cv;
	int gate;
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

#endif /* NKV_DEVICE_CPU_ENGINE_H */
