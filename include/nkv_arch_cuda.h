/* SPDX-License-Identifier: MIT */
/*
 * nkv_arch_cuda.h - nkv_dev.h primitives for NVIDIA GPUs under nvcc.
 *
 * System-scope ordering through libcu++ (cuda::atomic_ref and
 * cuda::atomic_thread_fence with thread_scope_system); warp collectives
 * with the *_sync intrinsics over the lanes active at the call (callers
 * are converged, see nkv_dev.h). Warp size 32. No protocol logic here.
 */
#ifndef NKV_ARCH_CUDA_H
#define NKV_ARCH_CUDA_H

#include <cuda/atomic>

#include "nkv_wire.h"

#define NKV_DEV __device__ static inline

template <typename T> using nkv_sys_ref = cuda::atomic_ref<T, cuda::thread_scope_system>;

/* This thread's lane in its warp (%laneid). */
NKV_DEV uint32_t nkv_arch_lane_id(void)
{
	uint32_t id;

	asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));
	return id;
}
/* Lanes per warp. */
NKV_DEV uint32_t nkv_arch_wave_size(void) { return (uint32_t)warpSize; }
/* Vote over the active lanes; __ballot_sync also converges them. */
NKV_DEV uint64_t nkv_arch_ballot(int pred) { return __ballot_sync(__activemask(), pred); }
/* Value of lane @src in every active lane. */
NKV_DEV uint64_t nkv_arch_bcast(uint64_t v, uint32_t src)
{
	return __shfl_sync(__activemask(), (unsigned long long)v, (int)src);
}
/* Active lanes meet; memory ordering among them (not system scope). */
NKV_DEV void nkv_arch_wave_barrier(void) { __syncwarp(__activemask()); }

/* Acquire at system scope: later loads after the phase load; pairs with
 * the controller's release of the CQE. */
NKV_DEV void nkv_arch_fence_acquire(void)
{
	cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_system);
}
/* Release at system scope (fence.acq_rel.sys): SQE stores before the
 * doorbell; pairs with the controller's SQE fetch after the doorbell. */
NKV_DEV void nkv_arch_fence_release(void)
{
	cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_system);
}
/* Full system-scope fence (membar.sys). */
NKV_DEV void nkv_arch_fence_full(void) { __threadfence_system(); }

NKV_DEV uint32_t nkv_arch_load_acquire_u32(const uint32_t *p)
{
	return nkv_sys_ref<uint32_t>(*const_cast<uint32_t *>(p)).load(cuda::memory_order_acquire);
}
NKV_DEV uint32_t nkv_arch_load_relaxed_u32(const uint32_t *p)
{
	return nkv_sys_ref<uint32_t>(*const_cast<uint32_t *>(p)).load(cuda::memory_order_relaxed);
}
NKV_DEV uint64_t nkv_arch_load_relaxed_u64(const uint64_t *p)
{
	return nkv_sys_ref<uint64_t>(*const_cast<uint64_t *>(p)).load(cuda::memory_order_relaxed);
}
/* Release store: pairs with an acquire load by another agent. */
NKV_DEV void nkv_arch_store_release_u32(uint32_t *p, uint32_t v)
{
	nkv_sys_ref<uint32_t>(*p).store(v, cuda::memory_order_release);
}
NKV_DEV void nkv_arch_store_relaxed_u32(uint32_t *p, uint32_t v)
{
	nkv_sys_ref<uint32_t>(*p).store(v, cuda::memory_order_relaxed);
}
/* RMWs on the CID bitmap / counters shared by the owning warp's lanes. */
NKV_DEV uint32_t nkv_arch_fetch_add_u32(uint32_t *p, uint32_t v)
{
	return nkv_sys_ref<uint32_t>(*p).fetch_add(v, cuda::memory_order_acq_rel);
}
NKV_DEV uint64_t nkv_arch_fetch_or_u64(uint64_t *p, uint64_t v)
{
	return nkv_sys_ref<uint64_t>(*p).fetch_or(v, cuda::memory_order_acq_rel);
}
NKV_DEV uint64_t nkv_arch_fetch_and_u64(uint64_t *p, uint64_t v)
{
	return nkv_sys_ref<uint64_t>(*p).fetch_and(v, cuda::memory_order_acq_rel);
}

/* 32-bit doorbell after a release fence: volatile (st.volatile), once. */
NKV_DEV void nkv_arch_mmio_store_u32(volatile uint32_t *p, uint32_t v) { *p = v; }

/* Publish a 64-byte SQE as four 16-byte stores (st.global.v4.u32). */
NKV_DEV void nkv_arch_store_sqe(struct nkv_sqe *dst, const struct nkv_sqe *src)
{
	const uint4 *s = (const uint4 *)(const void *)src;
	uint4 *d = (uint4 *)(void *)dst;

	d[0] = s[0];
	d[1] = s[1];
	d[2] = s[2];
	d[3] = s[3];
}

/* One 16-byte volatile load of a CQE (ld.volatile.v4.u32); may be torn,
 * nkv_dev.h re-reads after an acquire fence. */
NKV_DEV void nkv_arch_load_cqe(struct nkv_cqe *dst, const struct nkv_cqe *src)
{
	uint32_t a, b, c, d;

	asm volatile("ld.volatile.v4.u32 {%0, %1, %2, %3}, [%4];"
		     : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "l"(src) : "memory");
	dst->dw0 = a;
	dst->dw1 = b;
	dst->dw2 = c;
	dst->dw3 = d;
}

/* Back off between empty polls. Orders nothing. */
NKV_DEV void nkv_arch_poll_pause(uint64_t n)
{
	(void)n;
	__nanosleep(100);
}

NKV_DEV uint32_t nkv_arch_popc64(uint64_t m) { return (uint32_t)__popcll(m); }
NKV_DEV uint32_t nkv_arch_ffs64(uint64_t m) { return m ? (uint32_t)(__ffsll((long long)m) - 1) : 64u; }

#endif /* NKV_ARCH_CUDA_H */
