/* SPDX-License-Identifier: MIT */
/*
 * rocksdb_owner.c - keys' owners in the rocksdb backend (rocksdb_owner.h).
 */
#include "rocksdb_owner.h"

void nkv_rocks_owner_put(struct nkv_be *be, rocksdb_writebatch_t *wb,
			 rocksdb_column_family_handle_t *cf, const uint8_t *key, uint8_t klen,
			 uint64_t owner)
{
	uint8_t v[NKV_ROCKS_OWNER_LEN];
	unsigned i;

	if (!owner) {
		nkv_rocks_owner_del(be, wb, cf, key, klen);
		return;
	}
	for (i = 0; i < sizeof(v); i++)
		v[i] = (uint8_t)(owner >> (8 * i));
	rocksdb_writebatch_put_cf(wb, cf, (const char *)key, klen, (const char *)v, sizeof(v));
}

void nkv_rocks_owner_del(struct nkv_be *be, rocksdb_writebatch_t *wb,
			 rocksdb_column_family_handle_t *cf, const uint8_t *key, uint8_t klen)
{
	uint64_t had = 0;

	/* Only a key that has a record: no tombstone per Store of none. */
	if (nkv_be_owner_of(be, key, klen, &had) && had)
		rocksdb_writebatch_delete_cf(wb, cf, (const char *)key, klen);
}

void nkv_rocks_owner_each(rocksdb_t *db, rocksdb_readoptions_t *ro,
			  rocksdb_column_family_handle_t *cf,
			  void (*fn)(void *arg, const uint8_t *key, uint8_t klen, uint64_t owner),
			  void *arg)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(db, ro, cf);
	const char *k, *v;
	size_t kl, vl;
	uint64_t owner;
	unsigned i;

	for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		k = rocksdb_iter_key(it, &kl);
		v = rocksdb_iter_value(it, &vl);
		if (kl < 1 || kl > NKV_KEY_MAX || vl != NKV_ROCKS_OWNER_LEN)
			continue;
		for (owner = 0, i = 0; i < NKV_ROCKS_OWNER_LEN; i++)
			owner |= (uint64_t)(uint8_t)v[i] << (8 * i);
		fn(arg, (const uint8_t *)k, (uint8_t)kl, owner);
	}
	rocksdb_iter_destroy(it);
}
