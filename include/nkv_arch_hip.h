/* SPDX-License-Identifier: MIT */
/*
 * nkv_arch_hip.h - nkv_dev.h primitives for AMD GPUs under hipcc (ROCm 5.2+).
 *
 * Queues, doorbells and value buffers another agent touches live in
 * fine-grained (host or uncached device) memory, so every access that
 * pairs with the controller is a system-scope atomic or follows a
 * system-scope fence (__HIP_MEMORY_SCOPE_SYSTEM, the "" sync scope);
 * state only the GPU touches uses agent (device) scope.
 * Wave size is warpSize: 64 on CDNA (gfx9xx), 32 on RDNA in wave32 mode.
 *
 * Collectives take the mask of the lanes that take part (struct nkv_wave
 * in nkv_dev.h). HIP 5.2 has no *_sync intrinsics: the exec mask is the
 * set of lanes that execute a collective, and AMD reconverges at
 * structured joins, so unless NDEBUG is defined every collective checks
 * that the exec mask is exactly the given mask and traps otherwise: the
 * code that would hang on NVIDIA is caught on AMD too.
 * No protocol logic lives here.
 */
#ifndef NKV_ARCH_HIP_H
#define NKV_ARCH_HIP_H

#include <hip/hip_runtime.h>

#include "nkv_wire.h"

#define NKV_DEV __device__ static inline

/* The constant-rate clock behind wall_clock64(), in MHz: 100 on the
 * gfx9 and gfx10 parts Debian's ROCm builds for (the host can read it:
 * hipDeviceAttributeWallClockRate, in kHz). Override with -D. */
#ifndef NKV_HIP_WALL_CLOCK_MHZ
#define NKV_HIP_WALL_CLOCK_MHZ 100u
#endif

/* This lane's index in its wavefront. */
NKV_DEV uint32_t nkv_arch_lane_id(void) { return __lane_id(); }
/* Lanes per wavefront (compile-time for the target: 64 or 32). */
NKV_DEV uint32_t nkv_arch_wave_size(void) { return (uint32_t)warpSize; }
/* This thread's index in its workgroup (x fastest, as wavefronts are
 * formed), and the workgroup's threads. */
NKV_DEV uint32_t nkv_arch_block_thread(void)
{
	return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
NKV_DEV uint32_t nkv_arch_block_size(void) { return blockDim.x * blockDim.y * blockDim.z; }
/* The lanes of this wavefront that the launch created (a last, partial
 * wave has fewer), from the block shape; use it at kernel entry. */
NKV_DEV uint64_t nkv_arch_entry_mask(void)
{
	uint32_t threads = nkv_arch_block_size(), tid = nkv_arch_block_thread();
	uint32_t ws = (uint32_t)warpSize, base = tid - tid % ws;
	uint32_t n = threads - base < ws ? threads - base : ws;

	return n >= 64u ? ~0ull : (1ull << n) - 1ull;
}
/* Debug builds: the lanes executing are exactly @mask. */
NKV_DEV void nkv_arch_check_mask(uint64_t mask)
{
#ifndef NDEBUG
	if ((uint64_t)__ballot(1) != mask)
		__builtin_trap();
#else
	(void)mask;
#endif
}
/* Vote over @mask; the compiler keeps memory operations on their side
 * of it (wave_barrier is a scheduling barrier). */
NKV_DEV uint64_t nkv_arch_ballot(uint64_t mask, int pred)
{
	nkv_arch_check_mask(mask);
	__builtin_amdgcn_wave_barrier();
	return (uint64_t)__ballot(pred) & mask;
}
/* Value of lane @src in every lane of @mask (ds_bpermute); 64 bits in
 * two halves. */
NKV_DEV uint64_t nkv_arch_bcast(uint64_t mask, uint64_t v, uint32_t src)
{
	uint32_t lo, hi;

	nkv_arch_check_mask(mask);
	lo = (uint32_t)__shfl((int)(uint32_t)v, (int)src);
	hi = (uint32_t)__shfl((int)(uint32_t)(v >> 32), (int)src);
	return (uint64_t)hi << 32 | lo;
}
/* Lanes of @mask meet; their global stores before it are visible to
 * each other after it (workgroup-scope release/acquire around the
 * barrier). Not system scope: pairs with nothing on the controller. */
NKV_DEV void nkv_arch_wave_barrier(uint64_t mask)
{
	nkv_arch_check_mask(mask);
	__builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
	__builtin_amdgcn_wave_barrier();
	__builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

/* Every thread of the workgroup meets (__syncthreads: workgroup-scope
 * release, s_barrier, acquire). Debug builds first check that the whole
 * wave is here: s_barrier counts waves, so a wave whose lanes diverged
 * around it would pass it early. Workgroup scope: pairs with nothing on
 * the controller. */
NKV_DEV void nkv_arch_block_barrier(void)
{
	nkv_arch_check_mask(nkv_arch_entry_mask());
	__syncthreads();
}
/* The same barrier, and how many threads passed a non-zero @pred. ockl's
 * reduction fences only when the workgroup has several waves: the fences
 * here give one wave the same ordering. */
NKV_DEV uint32_t nkv_arch_block_count(int pred)
{
	uint32_t n;

	nkv_arch_check_mask(nkv_arch_entry_mask());
	__builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
	n = (uint32_t)__syncthreads_count(pred);
	__builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
	return n;
}
/* Declares @name, a pointer to the workgroup's one @type in LDS. */
#define NKV_ARCH_SHARED(type, name) \
	__shared__ type name##_shared_; \
	type *const name = &name##_shared_

/* Later loads stay after the phase load; system scope (invalidates L1/L2
 * lines of fine-grained memory): pairs with the controller's release. */
NKV_DEV void nkv_arch_fence_acquire(void) { __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, ""); }
/* Earlier stores reach system scope (waitcnt + L2 writeback) before later
 * ones: pairs with the controller's doorbell read / SQE fetch. */
NKV_DEV void nkv_arch_fence_release(void) { __builtin_amdgcn_fence(__ATOMIC_RELEASE, ""); }
/* Everything before, everything after, at system scope. */
NKV_DEV void nkv_arch_fence_full(void) { __threadfence_system(); }

/* System scope: CQE words the controller writes, words the host reads. */
NKV_DEV uint32_t nkv_arch_load_acquire_u32(const uint32_t *p)
{
	return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
}
NKV_DEV uint32_t nkv_arch_load_relaxed_u32(const uint32_t *p)
{
	return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}
/* A plain (relaxed) store the host reads; the caller fences after it. */
NKV_DEV void nkv_arch_store_sys_u32(uint32_t *p, uint32_t v)
{
	__hip_atomic_store(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}

/* Agent (device) scope: the descriptor's state, CID bitmap, completions. */
NKV_DEV uint32_t nkv_arch_load_dev_u32(const uint32_t *p)
{
	return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
NKV_DEV void nkv_arch_store_dev_u32(uint32_t *p, uint32_t v)
{
	__hip_atomic_store(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
NKV_DEV uint64_t nkv_arch_load_dev_u64(const uint64_t *p)
{
	return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
NKV_DEV uint32_t nkv_arch_fetch_add_dev_u32(uint32_t *p, uint32_t v)
{
	return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
NKV_DEV uint64_t nkv_arch_fetch_or_dev_u64(uint64_t *p, uint64_t v)
{
	return __hip_atomic_fetch_or(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
NKV_DEV uint64_t nkv_arch_fetch_and_dev_u64(uint64_t *p, uint64_t v)
{
	return __hip_atomic_fetch_and(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}

/* Nanoseconds from the constant-rate wall clock. */
NKV_DEV uint64_t nkv_arch_clock_ns(void)
{
#if defined(__HIP_DEVICE_COMPILE__)
	return (uint64_t)wall_clock64() * 1000u / NKV_HIP_WALL_CLOCK_MHZ;
#else
	return 0;	/* the host pass never runs device code */
#endif
}

/* 32-bit doorbell (BAR / sparse-mmap page / shadow), after a release
 * fence: a volatile store is emitted once, unmerged, and bypasses L1. */
NKV_DEV void nkv_arch_mmio_store_u32(volatile uint32_t *p, uint32_t v) { *p = v; }

typedef uint32_t nkv_u32x4 __attribute__((ext_vector_type(4)));

/* Publish a 64-byte SQE as four 16-byte stores (global_store_dwordx4)
 * built from the fields, so the entry stays in registers (no scratch);
 * made visible by the caller's system-scope release fence. */
NKV_DEV void nkv_arch_store_sqe(struct nkv_sqe *dst, const struct nkv_sqe *s)
{
	nkv_u32x4 *d = (nkv_u32x4 *)(void *)dst;
	nkv_u32x4 v0 = { s->cdw0, s->nsid, s->cdw2, s->cdw3 };
	nkv_u32x4 v1 = { (uint32_t)s->mptr, (uint32_t)(s->mptr >> 32), (uint32_t)s->prp1,
			 (uint32_t)(s->prp1 >> 32) };
	nkv_u32x4 v2 = { (uint32_t)s->prp2, (uint32_t)(s->prp2 >> 32), s->cdw10, s->cdw11 };
	nkv_u32x4 v3 = { s->cdw12, s->cdw13, s->cdw14, s->cdw15 };

	d[0] = v0;
	d[1] = v1;
	d[2] = v2;
	d[3] = v3;
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
