/* SPDX-License-Identifier: MIT */
/*
 * nkv_arch_cpu.h - nkv_dev.h primitives for the cpu engine (plain C/C++).
 *
 * Memory ordering uses the compiler's __atomic builtins (the C11/C++11
 * model, never x86's stronger ordering); lane identity and collectives
 * come from the cpu engine (nkv_cpu.h). "System scope" is the whole
 * process: the other agent is a controller thread or process sharing the
 * memory. No protocol logic lives here.
 */
#ifndef NKV_ARCH_CPU_H
#define NKV_ARCH_CPU_H

#include "nkv_cpu.h"
#include "nkv_wire.h"

/* NVMe is little endian and nkv_arch_store_sqe packs dword pairs. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "nkv's cpu engine needs a little-endian host"
#endif

/* Functions that run only where a lane runs (device code). */
#define NKV_DEV static inline

/* TSan does not model fences; it learns ordering from the acquire/release
 * accesses that nkv_dev.h places next to every fence, so the fence
 * builtins are kept and gcc's -Wtsan note about them is silenced here. */
#if defined(__SANITIZE_THREAD__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wtsan"
#endif

/* This lane's index in its wave. */
NKV_DEV uint32_t nkv_arch_lane_id(void) { return nkv_cpu_lane_id(); }
/* Lanes per wave of this launch (any value 1..64 on the cpu engine). */
NKV_DEV uint32_t nkv_arch_wave_size(void) { return nkv_cpu_wave_size(); }
/* The lanes of this wave as launched; call it at kernel entry only. */
NKV_DEV uint64_t nkv_arch_entry_mask(void) { return nkv_cpu_entry_mask(); }

/* This thread's index in its block (wave in block * wave size + lane),
 * and the block's threads. */
NKV_DEV uint32_t nkv_arch_block_thread(void) { return nkv_cpu_block_thread(); }
NKV_DEV uint32_t nkv_arch_block_size(void) { return nkv_cpu_block_size(); }

/* Collectives over the lanes of @mask, every one of which calls it at
 * the same site (macros, so the engine can name the site when they do
 * not). Ballot: bit i = lane i's @pred. Broadcast: @v of lane @src.
 * Barrier: all of @mask arrive; memory before it in any of them is
 * visible after it in all of them (same thread for fibers, a mutex for
 * real-thread lanes). Not a system-scope release: pairs with nothing on
 * the controller side. */
#define nkv_arch_ballot(mask, pred) nkv_cpu_ballot_at((mask), (pred), NKV_CPU_SITE)
#define nkv_arch_bcast(mask, v, src) nkv_cpu_bcast_at((mask), (v), (src), NKV_CPU_SITE)
#define nkv_arch_wave_barrier(mask) nkv_cpu_barrier_at((mask), NKV_CPU_SITE)

/* The block barrier: every thread of the block arrives (at one call
 * site); memory before it in any of them is visible after it in all of
 * them. The count form also returns how many passed a non-zero @pred.
 * Block scope: pairs with nothing on the controller side. */
#define nkv_arch_block_barrier() nkv_cpu_block_barrier_at(NKV_CPU_SITE)
#define nkv_arch_block_count(pred) nkv_cpu_block_count_at((pred), NKV_CPU_SITE)
/* Declares @name, a pointer to the block's one @type (the engine's
 * per-block variable for this declaration; a GPU's static __shared__). */
#define NKV_ARCH_SHARED(type, name) \
	type *const name = (type *)nkv_cpu_block_shared(sizeof(type), NKV_CPU_SITE)

/* Later loads stay after earlier loads (of a phase bit): pairs with the
 * controller's release before it flips the phase. */
NKV_DEV void nkv_arch_fence_acquire(void) { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
/* Earlier stores (SQE) become visible before later stores (doorbell):
 * pairs with the controller's acquire after it reads the doorbell. */
NKV_DEV void nkv_arch_fence_release(void) { __atomic_thread_fence(__ATOMIC_RELEASE); }
/* Orders everything against everything (store->load included). */
NKV_DEV void nkv_arch_fence_full(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/*
 * System scope: words another agent (the controller, the host) reads or
 * writes. On the cpu engine every scope is the process, so these and the
 * device-scope ones below compile alike; the split is for the GPUs.
 */
/* Load of a word another agent writes; acquire pairs with its release. */
NKV_DEV uint32_t nkv_arch_load_acquire_u32(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
/* Single-copy-atomic load, no ordering (ordered by explicit fences). */
NKV_DEV uint32_t nkv_arch_load_relaxed_u32(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
/* Single-copy-atomic store another agent reads, no ordering: the caller
 * fences (nkv_arch_fence_full) where the order matters. */
NKV_DEV void nkv_arch_store_sys_u32(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }

/*
 * Device scope: state only the lanes of the GPU touch (the descriptor's
 * counters, the CID bitmap, the completion table). Relaxed: collectives
 * order them among the lanes of a wave.
 */
NKV_DEV uint32_t nkv_arch_load_dev_u32(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
NKV_DEV void nkv_arch_store_dev_u32(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
NKV_DEV uint64_t nkv_arch_load_dev_u64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
NKV_DEV uint32_t nkv_arch_fetch_add_dev_u32(uint32_t *p, uint32_t v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
NKV_DEV uint64_t nkv_arch_fetch_or_dev_u64(uint64_t *p, uint64_t v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
NKV_DEV uint64_t nkv_arch_fetch_and_dev_u64(uint64_t *p, uint64_t v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }

/* Monotonic nanoseconds, for wall-clock poll deadlines. Out of line in
 * the engine: CLOCK_MONOTONIC is POSIX, which strict C11 (-std=c11, no
 * feature macro) does not declare, and a header cannot set a feature
 * macro once the application included <time.h> itself. */
NKV_DEV uint64_t nkv_arch_clock_ns(void) { return nkv_cpu_clock_ns(); }

/* 32-bit doorbell write, issued after nkv_arch_fence_release(): volatile so
 * it is neither merged nor dropped, release so the C model (and TSan)
 * sees the same order the fence gives the hardware. */
NKV_DEV void nkv_arch_mmio_store_u32(volatile uint32_t *p, uint32_t v) { nkv_cpu_mmio_store(p, v); }

/* Publish a 64-byte SQE: eight single-copy-atomic 64-bit stores (the
 * reader is another thread), built from the fields so the entry can stay
 * in registers. Made visible by the caller's release fence. */
NKV_DEV void nkv_arch_store_sqe(struct nkv_sqe *dst, const struct nkv_sqe *s)
{
	uint64_t *d = (uint64_t *)(void *)dst;

	__atomic_store_n(&d[0], (uint64_t)s->nsid << 32 | s->cdw0, __ATOMIC_RELAXED);
	__atomic_store_n(&d[1], (uint64_t)s->cdw3 << 32 | s->cdw2, __ATOMIC_RELAXED);
	__atomic_store_n(&d[2], s->mptr, __ATOMIC_RELAXED);
	__atomic_store_n(&d[3], s->prp1, __ATOMIC_RELAXED);
	__atomic_store_n(&d[4], s->prp2, __ATOMIC_RELAXED);
	__atomic_store_n(&d[5], (uint64_t)s->cdw11 << 32 | s->cdw10, __ATOMIC_RELAXED);
	__atomic_store_n(&d[6], (uint64_t)s->cdw13 << 32 | s->cdw12, __ATOMIC_RELAXED);
	__atomic_store_n(&d[7], (uint64_t)s->cdw15 << 32 | s->cdw14, __ATOMIC_RELAXED);
}

/* Spinning politely: a CPU pause, and a yield now and then so an
 * oversubscribed controller thread gets the core. Orders nothing. */
NKV_DEV void nkv_arch_poll_pause(uint64_t n) { nkv_cpu_poll_pause(n); }

/* Population count and lowest set bit of a lane mask. */
NKV_DEV uint32_t nkv_arch_popc64(uint64_t m) { return (uint32_t)__builtin_popcountll(m); }
NKV_DEV uint32_t nkv_arch_ffs64(uint64_t m) { return m ? (uint32_t)__builtin_ctzll(m) : 64u; }

#endif /* NKV_ARCH_CPU_H */
