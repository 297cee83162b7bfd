/* SPDX-License-Identifier: MIT */
/*
 * nkv_cpu.h - the cpu engine: runs wave functions written for nkv_dev.h on
 * N waves x W lanes of the host CPU.
 *
 * Default mode (NKV_CPU_FIBERS): one OS thread per wave; its lanes are
 * cooperative fibers (ucontext, fixed stacks with a guard page) that switch
 * only at wave-collective points (ballot, broadcast, barrier), so a 64-lane
 * wave on 2 cores costs no scheduler time. NKV_CPU_THREADS runs every lane
 * as a real thread (collectives through a mutex/condvar barrier) for race
 * hunting with small waves (<= NKV_CPU_THREADS_MAX_WAVE lanes).
 *
 * Lanes that return from the function become inactive: later collectives
 * complete without them and ballots leave their bit clear, as on a GPU.
 * Collectives must be reached uniformly by all active lanes of a wave.
 */
#ifndef NKV_CPU_H
#define NKV_CPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum nkv_cpu_mode {
	NKV_CPU_FIBERS = 0,
	NKV_CPU_THREADS = 1,
};

#define NKV_CPU_MAX_WAVE 64u		/* lanes per wave (a 64-bit ballot) */
#define NKV_CPU_THREADS_MAX_WAVE 8u	/* lanes per wave in NKV_CPU_THREADS */
#define NKV_CPU_MAX_WAVES 1024u
#define NKV_CPU_DEFAULT_STACK (64u * 1024u)

/* Launch parameters; @size = sizeof(struct nkv_cpu_cfg) so it can grow. */
struct nkv_cpu_cfg {
	uint32_t size;
	uint32_t mode;		/* enum nkv_cpu_mode */
	uint32_t waves;		/* 1..NKV_CPU_MAX_WAVES */
	uint32_t wave_size;	/* 1..64 (fibers), 1..8 (threads) */
	size_t stack_size;	/* fiber stack bytes, 0 = default; >= 16 KiB */
};

typedef void (*nkv_cpu_fn)(void *arg);

/*
 * Run @fn(@arg) on every lane of every wave and return when all have
 * returned. Returns 0, -EINVAL for bad parameters (NULL, zero or too many
 * waves/lanes, a too small stack, an unknown mode), -EDEADLK when called
 * from inside a lane, or -ENOMEM / -EAGAIN when resources run out.
 * Any thread may call it; launches from different threads are independent.
 */
int nkv_cpu_launch(const struct nkv_cpu_cfg *cfg, nkv_cpu_fn fn, void *arg);

/*
 * Called from a lane (outside a launch they describe a one-lane wave:
 * lane 0 of wave 0 of size 1, and collectives return at once).
 */
uint32_t nkv_cpu_lane_id(void);
uint32_t nkv_cpu_wave_id(void);
uint32_t nkv_cpu_wave_size(void);
/* Collective: bit i set when active lane i passed a non-zero @pred. */
uint64_t nkv_cpu_ballot(int pred);
/* Collective: every lane gets @v of lane @src (0 if @src is inactive). */
uint64_t nkv_cpu_bcast(uint64_t v, uint32_t src);
/* Collective: returns once every active lane of the wave has arrived. */
void nkv_cpu_barrier(void);
/* Called by a spinning poller on its @n-th poll: a CPU pause, and a
 * sched_yield() every 64 polls so an oversubscribed controller thread runs. */
void nkv_cpu_poll_pause(uint64_t n);

/*
 * Doorbell (MMIO) stores from device code on the cpu engine go through
 * here: the store itself (release, volatile), then the hook if one is set.
 * The hook is a test and tracing seam (e.g. count SQ tail writes exactly);
 * set it while no launch runs. Any lane may store; the hook must be
 * thread-safe in NKV_CPU_THREADS mode.
 */
typedef void (*nkv_cpu_mmio_hook)(void *ctx, volatile uint32_t *addr, uint32_t v);
void nkv_cpu_set_mmio_hook(nkv_cpu_mmio_hook hook, void *ctx);
void nkv_cpu_mmio_store(volatile uint32_t *addr, uint32_t v);

#ifdef __cplusplus
}
#endif

#endif /* NKV_CPU_H */
