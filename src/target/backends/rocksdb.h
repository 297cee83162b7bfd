/* SPDX-License-Identifier: MIT */
/*
 * rocksdb.h - nkv-target's persistent embedded backend: one KV namespace
 * per RocksDB column family of one database directory (--db DIR), shared
 * by every namespace of the target.
 *
 * Created through the registry as type "rocksdb" (nkv_be_type_rocksdb in
 * registry.h). Its options: --db DIR (required), --sync always|none,
 * --compression none|snappy|lz4|zstd, --blob-min SIZE, --evict lru (see
 * the option table in rocksdb.c and docs/target.md).
 *
 * Layout (format 2): namespace NAME (--ns-map) is column family NAME,
 * key -> a 16-byte meta record (struct nkv_rocks_meta: expiry, TTL,
 * size) then the value bytes, beside column family "NAME:meta", key ->
 * the meta record alone, for the keys with a TTL or a value of 64 KiB or
 * more only: a small value without TTL is one record, as plain RocksDB
 * would write it. A key's records are written in one WriteBatch, so its
 * expiry is kept with its value atomically and a Retrieve reads one
 * record. A touch rewrites the meta family's record alone: for a key
 * with a TTL, its expiry there is the one that counts. ':' cannot appear
 * in an --ns-map NAME, so the two families never collide. Format 1 (a
 * meta record for every key) opens as it is.
 *
 * The key index: every durable key's size and record flags in memory
 * (kvmap.h, at most 107 bytes a key of up to 16 bytes), rebuilt at open
 * from both families, so a Store reads nothing before it writes (the
 * size it replaces, for the counts, is there) and List walks it.
 *
 * Durability: Stores, Deletes and Lists run on the namespace's worker
 * thread (the core's poll thread never waits on the disk). The Stores
 * and Deletes found queued together are one WriteBatch written with
 * sync (one WAL sync per batch, group commit) and complete only after
 * it; --sync none writes without the sync (a crash may lose what
 * completed, never tear it). Retrieve and Exist are served inside
 * submit, on the caller's thread, unless a write of their key is in
 * flight (then the worker runs them, after it).
 *
 * Store options: all of NKV_STORE_VENDOR_MASK. TTL'd values are stored
 * in RocksDB with their expiry on the wall clock (they outlive a
 * restart and expire on time after it); ephemeral values live in a mem
 * backend (mem.h's volatile tier), never written, lost at exit; an
 * ephemeral Store over a durable key deletes the durable copy first
 * (synced) so a restart never brings it back.
 *
 * Threading: submit() from any thread; reads complete inside it or on the
 * worker, writes and Lists on the worker.
 */
#ifndef NKV_TGT_BACKENDS_ROCKSDB_H
#define NKV_TGT_BACKENDS_ROCKSDB_H

#include <stdint.h>

/* Bytes a key of klen bytes whose value is len bytes is charged against
 * capacity: the value, the key twice and the 16-byte meta record twice
 * (the most a key's records take: in front of the value, and alone in
 * the meta family; format 1 wrote both for every key, and the charge
 * stayed when format 2 dropped the second for small values). */
uint64_t nkv_be_rocks_key_cost(uint32_t klen, uint64_t len);

#endif /* NKV_TGT_BACKENDS_ROCKSDB_H */
