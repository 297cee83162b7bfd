/* SPDX-License-Identifier: MIT */
/*
 * mem.h - nkv-target's embedded memory backend.
 *
 * KV flavour: a map of keys (1..255 bytes) to values, kept sorted by key
 * bytes, a shorter key first when one is a prefix of the other (plain
 * lexicographic order over (bytes, length)). List walks that order and
 * seeks its start key in a B+ tree (kvmap.h). Capacity counts what each
 * key really costs (nkv_be_mem_key_cost: value, allocation, index), so
 * a flood of tiny values is bounded like large ones; it is one pool per
 * namespace, shared first come first served by every client.
 * NVM flavour: a zero-filled block array for Read/Write rehearsals.
 *
 * Created through the registry as type "mem" (nkv_be_type_mem in
 * registry.h, from a struct nkv_be_conf; no options of its own); code
 * built without the registry calls nkv_be_type_mem.create directly.
 * Zero conf fields: capacity 64 MiB (a KV namespace: or room for two
 * values of max_value when that is more), max_value 1 MiB, block_size
 * 4096, max_keys no limit.
 *
 * Memory: a value of up to 232 bytes shares a block with its 24-byte
 * header (size, TTL, expiry); a larger value has an extent of its own
 * (valloc.h): a power of two from 256 B on takes exactly its size, any
 * other size less than an eighth more (above 32 KiB less than a page
 * more), each plus the header's 32-byte block. With the key's share of
 * the index (nkv_be_mem_key_cost) a power-of-two value from 4 KiB to
 * 64 MiB costs at most 1.04x its size (under 1.02x from 8 KiB).
 *
 * Store options: all of NKV_STORE_VENDOR_MASK (be->store_opts). A TTL'd
 * key is absent from the moment nkv_be_now_ms() reaches its expiry (every
 * op, List included); a read that meets one removes it, and a sweep
 * thread per KV namespace removes the rest every NKV_MEM_SWEEP_MS (mem.c)
 * while TTL'd keys exist, so bytes and keys used come back without a
 * reader. Touch keeps the value and restarts the key's TTL (a new one
 * when NKV_STORE_TTL is set too); a plain Store leaves a key without
 * TTL. Ephemeral changes nothing: mem is never durable.
 *
 * Threading: submit() may be called from any thread; ops complete inline
 * (inside submit) or, with conf.worker = 1, in order from a worker thread.
 */
#ifndef NKV_TGT_BACKENDS_MEM_H
#define NKV_TGT_BACKENDS_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "target/core/backend.h"

/* Bytes a KV key (of up to 16 bytes) whose value is len bytes is charged
 * against capacity (and reported as used): the blocks its header and
 * value take in the namespace's allocator, exactly, plus the key's
 * bounded share of the index. A longer key costs nkv_kvmap_long_bytes()
 * more (kvmap.h). */
uint64_t nkv_be_mem_key_cost(uint64_t len);

/*
 * A mem KV backend as another backend's volatile tier (rados keeps its
 * TTL'd and ephemeral values in one; rocksdb will too). Made through
 * the registry as usual, never given to the core; these run an op on
 * the calling thread and return its status (op->dw0 set as for submit;
 * op->done is not called). Store reads the value with nkv_be_copy_in()
 * from op, so op is the core's op of the command being served.
 */
uint16_t nkv_be_mem_run(struct nkv_be *be, struct nkv_be_op *op);
/* 1 when key is stored and not expired, else 0. */
int nkv_be_mem_has(struct nkv_be *be, const uint8_t *key, uint8_t klen);
/* Remove key if stored (expired or not): 1 removed, 0 absent. */
int nkv_be_mem_remove(struct nkv_be *be, const uint8_t *key, uint8_t klen);
/* Call fn for every live (unexpired) key, in byte order, under the
 * backend's read lock (fn must not call back into it); fn's non-zero
 * return stops the walk and is returned. */
int nkv_be_mem_walk(struct nkv_be *be,
		    int (*fn)(void *arg, const uint8_t *key, uint8_t klen), void *arg);
/* Remove expired keys now (the sweep thread does this every
 * NKV_MEM_SWEEP_MS); returns how many. For tests under a set clock. */
size_t nkv_be_mem_sweep(struct nkv_be *be);
/* Bytes free for values before Capacity Exceeded (a caller checks room
 * before it gives up a durable copy). */
uint64_t nkv_be_mem_room(struct nkv_be *be);

#endif /* NKV_TGT_BACKENDS_MEM_H */
