/* SPDX-License-Identifier: MIT */
/*
 * rocksdb_owner.h - keys' owners in the rocksdb backend (issue 48,
 * docs/target.md "The rocksdb backend" and "Tenants"): column family
 * NAME:owner maps key -> the owner's tenant id, 8 bytes little-endian,
 * for a key a tenant owns (none for owner 0), written in the same
 * WriteBatch as the key's records. A database from before owners has no
 * such family: it is created at open, every key then owned by none.
 *
 * Threading: the worker's, as the batch it writes into.
 */
#ifndef NKV_TGT_BACKENDS_ROCKSDB_OWNER_H
#define NKV_TGT_BACKENDS_ROCKSDB_OWNER_H

#include <stdint.h>

#include <rocksdb/c.h>

#include "target/core/backend.h"

#define NKV_ROCKS_OWNER_LEN 8

/* key is stored by owner: its owner record into wb (a removal of the
 * one it had when owner is 0). */
void nkv_rocks_owner_put(struct nkv_be *be, rocksdb_writebatch_t *wb,
			 rocksdb_column_family_handle_t *cf, const uint8_t *key, uint8_t klen,
			 uint64_t owner);
/* key is removed: its owner record too, when it has one. */
void nkv_rocks_owner_del(struct nkv_be *be, rocksdb_writebatch_t *wb,
			 rocksdb_column_family_handle_t *cf, const uint8_t *key, uint8_t klen);
/* fn(arg, key, klen, owner) for every owner record in cf; a malformed
 * one is skipped (its key then owned by none). */
void nkv_rocks_owner_each(rocksdb_t *db, rocksdb_readoptions_t *ro,
			  rocksdb_column_family_handle_t *cf,
			  void (*fn)(void *arg, const uint8_t *key, uint8_t klen, uint64_t owner),
			  void *arg);

#endif /* NKV_TGT_BACKENDS_ROCKSDB_OWNER_H */
