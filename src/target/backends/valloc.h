/* SPDX-License-Identifier: MIT */
/*
 * valloc.h - the mem backend's value allocator, one per KV namespace.
 *
 * A Store used to malloc its value on the connection thread that also
 * polls the controller; under memory pressure heap growth (brk/mmap take
 * the process's mmap lock for writing, and stall every other thread's page
 * faults) and first-touch faults held that thread, and others, for
 * seconds. Here the namespace reserves its address space once, at create
 * (no later brk or mmap), carves blocks out of it in size classes, and a
 * helper thread faults pages in ahead of the allocation front, so a Store
 * on a poll thread takes a lock for a few instructions and writes to
 * memory that is already there.
 *
 * Threading: get/put from any thread (one short mutex).
 */
#ifndef NKV_TGT_VALLOC_H
#define NKV_TGT_VALLOC_H

#include <stdint.h>

struct nkv_valloc;

/* Address space for capacity bytes of blocks (reserved twice over, so
 * that blocks freed in one size class and wanted in another seldom run it
 * out), blocks up to max_block bytes. NULL and errno on failure. */
struct nkv_valloc *nkv_valloc_create(uint64_t capacity, uint64_t max_block);
void nkv_valloc_destroy(struct nkv_valloc *a);

/* The block size a request of len bytes takes (its size class). */
uint64_t nkv_valloc_block(uint64_t len);
/* A block of at least len bytes, or NULL when the reservation is used up. */
void *nkv_valloc_get(struct nkv_valloc *a, uint64_t len);
/* Give back a block that nkv_valloc_get(a, len) returned. */
void nkv_valloc_put(struct nkv_valloc *a, void *p, uint64_t len);

struct nkv_valloc_stats {
	uint64_t reserved;	/* bytes of address space */
	uint64_t front;		/* bytes ever carved (the allocation front) */
	uint64_t faulted;	/* bytes faulted in ahead by the helper */
	uint64_t caught_up;	/* gets that found the front past the faulted part */
};
void nkv_valloc_stats(struct nkv_valloc *a, struct nkv_valloc_stats *st);

#endif /* NKV_TGT_VALLOC_H */
