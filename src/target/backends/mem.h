/* SPDX-License-Identifier: MIT */
/*
 * be_mem.h - nkv-target's embedded memory backend.
 *
 * KV flavour: a map of keys (1..16 bytes) to values, kept sorted by key
 * bytes, a shorter key first when one is a prefix of the other (plain
 * lexicographic order over (bytes, length)). List walks that order and
 * seeks its start key in a B+ tree (kvmap.h). Capacity counts what each
 * key really costs (nkv_be_mem_key_cost: value, allocation, index), so
 * a flood of tiny values is bounded like large ones; it is one pool per
 * namespace, shared first come first served by every client.
 * NVM flavour: a zero-filled block array for Read/Write rehearsals.
 *
 * Threading: submit() may be called from any thread; ops complete inline
 * (inside submit) or, with .worker = 1, in order from a worker thread.
 */
#ifndef NKV_TGT_BACKENDS_MEM_H
#define NKV_TGT_BACKENDS_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

struct nkv_be_mem_opts {
	size_t size;		/* sizeof(struct nkv_be_mem_opts) */
	int nvm;		/* 0: KV namespace; 1: NVM block namespace */
	uint64_t capacity;	/* bytes; 0: 64 MiB */
	uint32_t max_keys;	/* KV: 0 = no limit */
	uint32_t max_value;	/* KV: 0 = 1 MiB */
	uint32_t block_size;	/* NVM: 0 = 4096 */
	int worker;		/* complete from a worker thread, not inline */
};

/* Bytes a KV key whose value is len bytes is charged against capacity
 * (and reported as used): the value's allocation as the C library rounds
 * it, plus the key's bounded share of the index. */
uint64_t nkv_be_mem_key_cost(uint64_t len);

/* NULL on bad options (-EINVAL) or no memory; errno says which. */
struct nkv_be *nkv_be_mem_create(const struct nkv_be_mem_opts *o);

#endif /* NKV_TGT_BACKENDS_MEM_H */
