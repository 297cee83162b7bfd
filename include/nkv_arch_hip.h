/* SPDX-License-Identifier: MIT */
/*
 * nkv_arch_hip.h - nkv_dev.h primitives for AMD GPUs under hipcc (ROCm 5.2+).
 *
 * Queues, doorbells and value buffers another agent touches live in
 * fine-grained (host or uncached device) memory, so every access that
 * pairs with the controller is a system-scope atomic or follows a
 * system-scope fence (__HIP_MEMORY_SCOPE_SYSTEM, the "" sync scope).
 * Wave size is warpSize: 64 on CDNA (gfx9xx), 32 on RDNA in wave32 mode.
 * No protocol logic lives here.
 */
#ifndef NKV_ARCH_HIP_H
#define NKV_ARCH_HIP_H

#include <hip/hip_runtime.h>

#include "nkv_wire.h"

#define NKV_DEV __device__ static inline

/* This lane's index in its wavefront. */
NKV_DEV uint32_t nkv_arch_lane_id(void) { return __lane_id(); }
/* Lanes per wavefront (compile-time for the target: 64 or 32). */
NKV_DEV uint32_t nkv_arch_wave_size(void) { return (uint32_t)warpSize; }
/* Wave-wide vote over the active lanes; the compiler keeps memory
 * operations on their side of it (wave_barrier is a scheduling barrier). */
NKV_DEV uint64_t nkv_arch_ballot(int pred)
{
	__builtin_amdgcn_wave_barrier();
	return (uint64_t)__ballot(pred);
}
/* Value of lane @src in every lane (ds_bpermute); 64 bits in two halves. */
NKV_DEV uint64_t nkv_arch_bcast(uint64_t v, uint32_t src)
{
	uint32_t lo = (uint32_t)__shfl((int)(uint32_t)v, (int)src);
	uint32_t hi = (uint32_t)__shfl((int)(uint32_t)(v >> 32), (int)src);

	return (uint64_t)hi << 32 | lo;
}
/* Lanes of the wave meet; their global stores before it are visible to
 * each other after it (workgroup-scope release/acquire around the
 * barrier). Not system scope: pairs with nothing on the controller. */
NKV_DEV void nkv_arch_wave_barrier(void)
{
	__builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
	__builtin_amdgcn_wave_barrier();
	__builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

/* Later loads stay after the phase load; system scope (invalidates L1/L2
 * lines of fine-grained memory): pairs with the controller's release. */
NKV_DEV void nkv_arch_fence_acquire(void) { __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, ""); }
/* Earlier stores reach system scope (waitcnt + L2 writeback) before later
 * ones: pairs with the controller's doorbell read / SQE fetch. */
NKV_DEV void nkv_arch_fence_release(void) { __builtin_amdgcn_fence(__ATOMIC_RELEASE, ""); }
/* Everything before, everything after, at system scope. */
NKV_DEV void nkv_arch_fence_full(void) { __threadfence_system(); }

/* System-scope atomics on fine-grained memory. */
NKV_DEV uint32_t nkv_arch_load_acquire_u32(const uint32_t *p)
{
	return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
}
NKV_DEV uint32_t nkv_arch_load_relaxed_u32(const uint32_t *p)
{
	return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}
NKV_DEV uint64_t nkv_arch_load_relaxed_u64(const uint64_t *p)
{
	return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}
/* Release store: pairs with an acquire load by another agent. */
NKV_DEV void nkv_arch_store_release_u32(uint32_t *p, uint32_t v)
{
	__hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
}
NKV_DEV void nkv_arch_store_relaxed_u32(uint32_t *p, uint32_t v)
{
	__hip_atomic_store(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}
/* RMWs on the CID bitmap / counters shared by the owning wave's lanes. */
NKV_DEV uint32_t nkv_arch_fetch_add_u32(uint32_t *p, uint32_t v)
{
	return __hip_atomic_fetch_add(p, v, __ATOMIC_ACQ_REL, __HIP_MEMORY_SCOPE_SYSTEM);
}
NKV_DEV uint64_t nkv_arch_fetch_or_u64(uint64_t *p, uint64_t v)
{
	return __hip_atomic_fetch_or(p, v, __ATOMIC_ACQ_REL, __HIP_MEMORY_SCOPE_SYSTEM);
}
NKV_DEV uint64_t nkv_arch_fetch_and_u64(uint64_t *p, uint64_t v)
{
	return __hip_atomic_fetch_and(p, v, __ATOMIC_ACQ_REL, __HIP_MEMORY_SCOPE_SYSTEM);
}

/* 32-bit doorbell (BAR / sparse-mmap page / shadow), after a release
 * fence: a volatile store is emitted once, unmerged, and bypasses L1. */
NKV_DEV void nkv_arch_mmio_store_u32(volatile uint32_t *p, uint32_t v) { *p = v; }

typedef uint32_t nkv_u32x4 __attribute__((ext_vector_type(4)));

/* Publish a 64-byte SQE as four 16-byte stores (global_store_dwordx4);
 * made visible by the caller's system-scope release fence. */
NKV_DEV void nkv_arch_store_sqe(struct nkv_sqe *dst, const struct nkv_sqe *src)
{
	const nkv_u32x4 *s = (const nkv_u32x4 *)(const void *)src;
	nkv_u32x4 *d = (nkv_u32x4 *)(void *)dst;

	d[0] = s[0];
	d[1] = s[1];
	d[2] = s[2];
	d[3] = s[3];
}

/* One 16-byte volatile load of a CQE: fast, but may be torn against the
 * controller's writes; nkv_dev.h re-reads after an acquire fence. */
NKV_DEV void nkv_arch_load_cqe(struct nkv_cqe *dst, const struct nkv_cqe *src)
{
	nkv_u32x4 v = *(const volatile nkv_u32x4 *)(const volatile void *)src;

	dst->dw0 = v.x;
	dst->dw1 = v.y;
	dst->dw2 = v.z;
	dst->dw3 = v.w;
}

/* Back off between empty polls (s_sleep ~64 clocks). Orders nothing. */
NKV_DEV void nkv_arch_poll_pause(uint64_t n)
{
	(void)n;
	__builtin_amdgcn_s_sleep(1);
}

NKV_DEV uint32_t nkv_arch_popc64(uint64_t m) { return (uint32_t)__popcll(m); }
NKV_DEV uint32_t nkv_arch_ffs64(uint64_t m) { return m ? (uint32_t)(__ffsll((unsigned long long)m) - 1) : 64u; }

#endif /* NKV_ARCH_HIP_H */
