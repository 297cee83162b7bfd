/* SPDX-License-Identifier: MIT */
/*
 * nkv_arch_cuda.h - nkv_dev.h primitives for NVIDIA GPUs under nvcc.
 *
 * Warp collectives take the mask of the lanes that take part (struct
 * nkv_wave in nkv_dev.h), never __activemask(): under independent thread
 * scheduling (every NVIDIA GPU since Volta) lanes that left a loop at
 * different iterations are not reconverged by __activemask(), and each
 * arriving group would see only itself. Every collective calls
 * __syncwarp(mask) first, so all lanes of the mask meet before it.
 *
 * Scopes match who looks: system scope (fences, cuda::atomic_ref with
 * thread_scope_system) only for what the controller or the host reads or
 * writes; device scope for state only the GPU touches. On PCIe an atomic
 * on host memory is not atomic with respect to the host or the
 * controller (cudaDevAttrHostNativeAtomicSupported is 0), so nothing
 * shared with them is updated with an atomic RMW. Warp size 32.
 */
#ifndef NKV_ARCH_CUDA_H
#define NKV_ARCH_CUDA_H

#include <cuda/atomic>

#include "nkv_wire.h"

#define NKV_DEV __device__ static inline

template <typename T> using nkv_sys_ref = cuda::atomic_ref<T, cuda::thread_scope_system>;
template <typename T> using nkv_dev_ref = cuda::atomic_ref<T, cuda::thread_scope_device>;

/* This thread's lane in its warp (%laneid). */
NKV_DEV uint32_t nkv_arch_lane_id(void)
{
	uint32_t id;

	asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));
	return id;
}
/* Lanes per warp. */
NKV_DEV uint32_t nkv_arch_wave_size(void) { return (uint32_t)warpSize; }
/* This thread's index in its block (x fastest, as warps are formed),
 * and the block's threads. */
NKV_DEV uint32_t nkv_arch_block_thread(void)
{
	return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
NKV_DEV uint32_t nkv_arch_block_size(void) { return blockDim.x * blockDim.y * blockDim.z; }
/* The lanes of this warp that the launch created (a last, partial warp
 * has fewer), from the block shape: exact at any point, but meaningful
 * as "the lanes that take part" only at kernel entry. */
NKV_DEV uint64_t nkv_arch_entry_mask(void)
{
	uint32_t threads = nkv_arch_block_size(), tid = nkv_arch_block_thread();
	uint32_t base = tid - tid % (uint32_t)warpSize;
	uint32_t n = threads - base < (uint32_t)warpSize ? threads - base : (uint32_t)warpSize;

	return n >= 32u ? 0xffffffffull : (1ull << n) - 1ull;
}
/* Vote over @mask; every lane of it calls this (__syncwarp first). */
NKV_DEV uint64_t nkv_arch_ballot(uint64_t mask, int pred)
{
	__syncwarp((unsigned)mask);
	return __ballot_sync((unsigned)mask, pred);
}
/* Value of lane @src (in @mask) in every lane of @mask. */
NKV_DEV uint64_t nkv_arch_bcast(uint64_t mask, uint64_t v, uint32_t src)
{
	__syncwarp((unsigned)mask);
	return __shfl_sync((unsigned)mask, (unsigned long long)v, (int)src);
}
/* The lanes of @mask meet; memory ordering among them (not system scope:
 * pairs with nothing on the controller). */
NKV_DEV void nkv_arch_wave_barrier(uint64_t mask) { __syncwarp((unsigned)mask); }

/* Every thread of the block meets (__syncthreads, bar.sync 0): global and
 * shared memory accesses of any of them before it are visible to all of
 * them after it. Block scope: pairs with nothing on the controller. */
NKV_DEV void nkv_arch_block_barrier(void) { __syncthreads(); }
/* The same barrier, and how many threads passed a non-zero @pred
 * (bar.red.popc). */
NKV_DEV uint32_t nkv_arch_block_count(int pred) { return (uint32_t)__syncthreads_count(pred); }
/* Declares @name, a pointer to the block's one @type in shared memory. */
#define NKV_ARCH_SHARED(type, name) \
	__shared__ type name##_shared_; \
	type *const name = &name##_shared_

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

/* System scope: CQE words the controller writes, words the host reads. */
NKV_DEV uint32_t nkv_arch_load_acquire_u32(const uint32_t *p)
{
	return nkv_sys_ref<uint32_t>(*const_cast<uint32_t *>(p)).load(cuda::memory_order_acquire);
}
NKV_DEV uint32_t nkv_arch_load_relaxed_u32(const uint32_t *p)
{
	return nkv_sys_ref<uint32_t>(*const_cast<uint32_t *>(p)).load(cuda::memory_order_relaxed);
}
/* A plain (relaxed) store the host reads; the caller fences after it. */
NKV_DEV void nkv_arch_store_sys_u32(uint32_t *p, uint32_t v)
{
	nkv_sys_ref<uint32_t>(*p).store(v, cuda::memory_order_relaxed);
}

/* Device scope: the descriptor's state, CID bitmap, completion table. */
NKV_DEV uint32_t nkv_arch_load_dev_u32(const uint32_t *p)
{
	return nkv_dev_ref<uint32_t>(*const_cast<uint32_t *>(p)).load(cuda::memory_order_relaxed);
}
NKV_DEV void nkv_arch_store_dev_u32(uint32_t *p, uint32_t v)
{
	nkv_dev_ref<uint32_t>(*p).store(v, cuda::memory_order_relaxed);
}
NKV_DEV uint64_t nkv_arch_load_dev_u64(const uint64_t *p)
{
	return nkv_dev_ref<uint64_t>(*const_cast<uint64_t *>(p)).load(cuda::memory_order_relaxed);
}
NKV_DEV uint32_t nkv_arch_fetch_add_dev_u32(uint32_t *p, uint32_t v)
{
	return nkv_dev_ref<uint32_t>(*p).fetch_add(v, cuda::memory_order_relaxed);
}
NKV_DEV uint64_t nkv_arch_fetch_or_dev_u64(uint64_t *p, uint64_t v)
{
	return nkv_dev_ref<uint64_t>(*p).fetch_or(v, cuda::memory_order_relaxed);
}
NKV_DEV uint64_t nkv_arch_fetch_and_dev_u64(uint64_t *p, uint64_t v)
{
	return nkv_dev_ref<uint64_t>(*p).fetch_and(v, cuda::memory_order_relaxed);
}

/* Nanoseconds (%globaltimer), for wall-clock poll deadlines. */
NKV_DEV uint64_t nkv_arch_clock_ns(void)
{
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* 32-bit doorbell after a release fence: volatile (st.volatile), once. */
NKV_DEV void nkv_arch_mmio_store_u32(volatile uint32_t *p, uint32_t v) { *p = v; }

/* Publish a 64-byte SQE as four 16-byte stores (st.global.v4.u32) built
 * from the fields, so the entry stays in registers (no local memory). */
NKV_DEV void nkv_arch_store_sqe(struct nkv_sqe *dst, const struct nkv_sqe *s)
{
	uint4 *d = (uint4 *)(void *)dst;

	d[0] = make_uint4(s->cdw0, s->nsid, s->cdw2, s->cdw3);
	d[1] = make_uint4((uint32_t)s->mptr, (uint32_t)(s->mptr >> 32), (uint32_t)s->prp1,
			  (uint32_t)(s->prp1 >> 32));
	d[2] = make_uint4((uint32_t)s->prp2, (uint32_t)(s->prp2 >> 32), s->cdw10, s->cdw11);
	d[3] = make_uint4(s->cdw12, s->cdw13, s->cdw14, s->cdw15);
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
