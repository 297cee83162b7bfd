/* SPDX-License-Identifier: MIT */
/*
 * valloc.h - the mem backend's value allocator, one per KV namespace.
 *
 * A Store used to malloc its value on the connection thread that also
 * polls the controller; under memory pressure heap growth (brk/mmap take
 * the process's mmap lock for writing, and stall every other thread's page
 * faults) and first-touch faults held that thread, and others, for
 * seconds. Here the namespace reserves its address space once, at create
 * (no later brk or mmap), carves blocks out of it, and a helper thread
 * faults pages in ahead of where the next blocks will come from, so a
 * Store on a poll thread takes a lock for a few instructions and writes to
 * memory that is already there.
 *
 * Blocks, by the size asked for (nkv_valloc_block() says exactly):
 *  - up to 256 bytes: multiples of 16;
 *  - up to 32 KiB: eight size classes per power of two, so a power of two
 *    is a class of its own and any other size rounds up by less than an
 *    eighth;
 *  - above 32 KiB: whole pages (less than a page of rounding), so a value
 *    of 64 KiB, 2 MiB or 32 MiB takes exactly its size.
 * A freed block is reused: small ones by their class, page runs by any
 * size (free runs merge with their free neighbours).
 *
 * Threading: get/put from any thread (one short mutex).
 */
#ifndef NKV_TGT_VALLOC_H
#define NKV_TGT_VALLOC_H

#include <stdint.h>

struct nkv_valloc;

/* Blocks above this many bytes are runs of whole pages. */
#define NKV_VALLOC_SMALL_MAX (32u << 10)

/* Address space for capacity bytes of blocks (reserved twice over, so
 * that space freed in one size and wanted in another seldom runs it out),
 * blocks up to max_block bytes. NULL and errno on failure. */
struct nkv_valloc *nkv_valloc_create(uint64_t capacity, uint64_t max_block);
/* The same, with address space for max_capacity bytes (a namespace whose
 * capacity may be raised while it serves, up to that); the helper's
 * leads are sized from capacity. */
struct nkv_valloc *nkv_valloc_create_grow(uint64_t capacity, uint64_t max_capacity,
					  uint64_t max_block);
void nkv_valloc_destroy(struct nkv_valloc *a);

/* The bytes a request of len bytes takes (its block), len <= 2^62. */
uint64_t nkv_valloc_block(uint64_t len);
/* A block of nkv_valloc_block(len) bytes (page-aligned above
 * NKV_VALLOC_SMALL_MAX, 16-byte aligned below), or NULL when no free
 * space in the reservation holds one. */
void *nkv_valloc_get(struct nkv_valloc *a, uint64_t len);
/* Give back a block that nkv_valloc_get(a, len) returned. */
void nkv_valloc_put(struct nkv_valloc *a, void *p, uint64_t len);

/*
 * The reservation, in bytes. Page runs grow up from its start (the
 * front), the pages small blocks are carved from grow down from its end
 * (the top), so a small block never sits between two runs that could
 * merge. A freed run at the front moves the front back; freed pages
 * stay resident for reuse, so physical memory is the most ever carved
 * plus the helper's leads.
 */
struct nkv_valloc_stats {
	uint64_t reserved;	/* address space */
	uint64_t front;		/* carved: the runs' front plus the top */
	uint64_t top;		/* of which small blocks' pages, at the end */
	uint64_t faulted;	/* populated ahead, from the start */
	uint64_t top_faulted;	/* populated ahead, from the end */
	uint64_t caught_up;	/* gets whose pages were not populated yet */
	uint64_t live;		/* in blocks handed out: sum of their nkv_valloc_block() */
	uint64_t free;		/* in free page runs below the front */
};
void nkv_valloc_stats(struct nkv_valloc *a, struct nkv_valloc_stats *st);

/* Check the free runs' invariants (merged, binned, marked, none at the
 * front). 0, or a negative number naming the first broken rule. For
 * tests; O(reservation / 2^18 + free runs). */
int nkv_valloc_check(struct nkv_valloc *a);

#endif /* NKV_TGT_VALLOC_H */
