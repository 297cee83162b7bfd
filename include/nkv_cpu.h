/* SPDX-License-Identifier: MIT */
/*
 * nkv_cpu.h - the cpu engine: runs wave functions written for nkv_dev.h on
 * N waves x W lanes of the host CPU, the waves grouped in blocks (a
 * block of one wave unless cfg.block_size says more).
 *
 * Default mode (NKV_CPU_FIBERS): one OS thread per block; its lanes are
 * cooperative fibers (fixed stacks with a guard page) that switch only at
 * collective points (ballot, broadcast, barrier, block barrier), so a
 * 64-lane wave on 2 cores costs no scheduler time. NKV_CPU_THREADS runs
 * every lane as a real thread (collectives through a mutex/condvar) for
 * race hunting with small waves (<= NKV_CPU_THREADS_MAX_WAVE lanes). NKV_CPU_CHECK is the
 * fibers mode made adversarial, to find what a GPU with independent
 * thread scheduling (every NVIDIA GPU since Volta) does to code that only
 * works in lockstep: lanes run in a seeded random order, poll loops yield
 * and sleep at random, nkv_cpu_activemask() returns an arbitrary subset of
 * the lanes, and every collective is checked (below).
 *
 * Collectives take the mask of the lanes that take part, as CUDA's *_sync
 * intrinsics do: every lane of the mask must call the same collective
 * (same call site, same mask, same source lane), and the collective
 * completes when all of them have arrived. A lane outside the mask, a
 * mask lane that returned or waits in another collective, or a source
 * lane outside the mask is a protocol error: on fibers the block stops and
 * nkv_cpu_launch() returns -EPROTO with a message naming both call sites
 * (in struct nkv_cpu_cfg.diag, or on stderr when there is none); on real
 * threads it prints it and aborts.
 *
 * The block barrier (nkv_cpu_block_barrier, nkv_cpu_block_count; CUDA's
 * __syncthreads) is the same rule over a whole block: every thread of it
 * calls the same barrier (same call site). A thread that returned while
 * others wait there, or waits at another barrier, or in a wave collective
 * with a lane that is at the block barrier, is a protocol error named the
 * same way (the waiting thread's call site, and the other thread's).
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
	NKV_CPU_CHECK = 2,	/* fibers, adversarial order, checked collectives */
};

/* The lane threads' scheduling class (nkv_cpu_cfg.sched). */
enum nkv_cpu_sched {
	NKV_CPU_SCHED_NORMAL = 0,	/* inherited from the launching thread */
	/*
	 * SCHED_IDLE: a lane polling for a completion gives its CPU at once
	 * to any other thread that wakes there (a storage daemon on the same
	 * cores, the controller's own threads); other busy work starves it.
	 */
	NKV_CPU_SCHED_IDLE = 1,
};

#define NKV_CPU_MAX_WAVE 64u		/* lanes per wave (a 64-bit ballot) */
#define NKV_CPU_THREADS_MAX_WAVE 8u	/* lanes per wave in NKV_CPU_THREADS */
#define NKV_CPU_MAX_WAVES 1024u
#define NKV_CPU_MAX_BLOCK 1024u		/* threads per block, as on GPUs */
#define NKV_CPU_MAX_BLOCK_WAVES 32u	/* waves per block (1024 / 32) */
#define NKV_CPU_DEFAULT_STACK (64u * 1024u)

/*
 * Launch parameters; @size = sizeof(struct nkv_cpu_cfg) so it can grow
 * (fields past a smaller @size take their zero defaults). The environment
 * variable NKV_CPU_CHECK=SEED turns every NKV_CPU_FIBERS launch into an
 * NKV_CPU_CHECK launch with that seed.
 */
struct nkv_cpu_cfg {
	uint32_t size;
	uint32_t mode;		/* enum nkv_cpu_mode */
	uint32_t waves;		/* 1..NKV_CPU_MAX_WAVES */
	uint32_t wave_size;	/* 1..64 (fibers, check), 1..8 (threads) */
	size_t stack_size;	/* fiber stack bytes, 0 = default; >= 16 KiB */
	uint64_t seed;		/* NKV_CPU_CHECK: the run's random choices */
	char *diag;		/* NULL, or where a protocol error is described */
	size_t diag_len;
	uint32_t sched;		/* enum nkv_cpu_sched */
	uint32_t pad0;		/* ignored (the padding of callers from before
				 * block_size, whose size ends here) */
	/*
	 * Threads per block, 1..NKV_CPU_MAX_BLOCK; 0: wave_size (every wave a
	 * block of its own). A block is ceil(block_size / wave_size) <=
	 * NKV_CPU_MAX_BLOCK_WAVES consecutive waves, the last one partial
	 * when wave_size does not divide block_size (as a GPU's last warp of
	 * a block of 1023 threads has 31 lanes); waves must be a multiple.
	 */
	uint32_t block_size;
};

typedef void (*nkv_cpu_fn)(void *arg);

/*
 * Run @fn(@arg) on every lane of every wave and return when all have
 * returned. Returns 0, -EINVAL for bad parameters (NULL, zero or too many
 * waves/lanes, a block too large or not dividing the waves, a too small
 * stack, an unknown mode or sched), -EPERM when the scheduling class is
 * refused, -EDEADLK when called from inside a lane, -EPROTO when a block
 * broke the collective rules (fibers and check modes; that block's lanes
 * were stopped where they stood), or -ENOMEM / -EAGAIN when resources
 * run out (-ENOMEM also for a block's shared variable, in cfg.diag).
 * Any thread may call it; launches from different threads are independent.
 */
int nkv_cpu_launch(const struct nkv_cpu_cfg *cfg, nkv_cpu_fn fn, void *arg);

/*
 * Called from a lane (outside a launch they describe a one-lane wave:
 * lane 0 of wave 0 of size 1, mask 0x1, and collectives return at once).
 */
uint32_t nkv_cpu_lane_id(void);
uint32_t nkv_cpu_wave_id(void);		/* in the launch */
uint32_t nkv_cpu_wave_size(void);	/* cfg.wave_size (a partial wave too) */
/* The block: its index in the launch, this thread's index in it (wave
 * in block * wave_size + lane), and its threads (outside a launch: 0, 0,
 * 1). */
uint32_t nkv_cpu_block_id(void);
uint32_t nkv_cpu_block_thread(void);
uint32_t nkv_cpu_block_size(void);
/* The lanes of this wave as launched: where the wave is converged by
 * construction (a lane function's first line) it is the full mask. */
uint64_t nkv_cpu_entry_mask(void);
/* A model of CUDA's __activemask(): the lanes that happen to execute
 * together with the caller. Fibers and threads: every lane still running.
 * NKV_CPU_CHECK: the caller and a seeded random subset of the others, as
 * independent thread scheduling may give. Never use it to pick a mask. */
uint64_t nkv_cpu_activemask(void);

/* The collectives; @site names the call site (use the macros below).
 * Ballot: bit i set when lane i of @mask passed a non-zero @pred.
 * Broadcast: every lane gets @v of lane @src (which must be in @mask).
 * Barrier: returns once every lane of @mask has arrived; memory written
 * by any of them before it is visible to all of them after it. */
uint64_t nkv_cpu_ballot_at(uint64_t mask, int pred, const char *site);
uint64_t nkv_cpu_bcast_at(uint64_t mask, uint64_t v, uint32_t src, const char *site);
void nkv_cpu_barrier_at(uint64_t mask, const char *site);

/* The block barrier: returns once every thread of the block has arrived
 * (at the same call site); memory written by any of them before it is
 * visible to all of them after it. The count form also returns how many
 * passed a non-zero @pred (CUDA's __syncthreads_count). */
void nkv_cpu_block_barrier_at(const char *site);
uint32_t nkv_cpu_block_count_at(int pred, const char *site);

/* A block's shared variable (a GPU's static __shared__): the first
 * thread of the block to ask for the one declared at @site gets @size
 * zeroed bytes (64-byte aligned), which every thread of the block asking
 * at @site then shares until the launch returns. Only inside a launch. */
void *nkv_cpu_block_shared(size_t size, const char *site);

#define NKV_CPU_STR2(x) #x
#define NKV_CPU_STR(x) NKV_CPU_STR2(x)
/* "file:line" of the caller, so a broken collective names where it is. */
#define NKV_CPU_SITE __FILE__ ":" NKV_CPU_STR(__LINE__)
#define nkv_cpu_ballot(mask, pred) nkv_cpu_ballot_at((mask), (pred), NKV_CPU_SITE)
#define nkv_cpu_bcast(mask, v, src) nkv_cpu_bcast_at((mask), (v), (src), NKV_CPU_SITE)
#define nkv_cpu_barrier(mask) nkv_cpu_barrier_at((mask), NKV_CPU_SITE)
#define nkv_cpu_block_barrier() nkv_cpu_block_barrier_at(NKV_CPU_SITE)
#define nkv_cpu_block_count(pred) nkv_cpu_block_count_at((pred), NKV_CPU_SITE)

/* Called by a spinning poller on its @n-th poll (0 starts a wait): a CPU
 * pause; after 20 us of waiting also a sched_yield() every 64 polls, so
 * a controller thread or a backend's daemons sharing the core run; after
 * 200 us instead a nap of 1/8 of the time waited (at most 2 ms).
 * NKV_CPU_CHECK: instead a seeded random fiber switch or short sleep. */
void nkv_cpu_poll_pause(uint64_t n);

/* Monotonic nanoseconds (CLOCK_MONOTONIC), for a poller's wall-clock
 * deadline. Any thread, any lane. */
uint64_t nkv_cpu_clock_ns(void);

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
