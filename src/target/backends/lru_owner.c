/* SPDX-License-Identifier: MIT */
/*
 * lru_owner.c - --evict lru's choice in a namespace shared by tenants
 * (lru.h's nkv_lru_victim; docs/target.md "Tenants"): the least recently
 * used key of the tenant furthest over its share, so one tenant's
 * refresh loop cannot push out another's keys within its share; the
 * least recently used key of anyone when nobody is over. mem and rocksdb
 * evict through it.
 */
#include "lru.h"
#include "target/core/backend.h"

struct nkv_lru_owner {
	struct nkv_be *be;
	uint64_t owner;
};

static int nkv_lru_owned(void *arg, const uint8_t *key, uint8_t klen)
{
	const struct nkv_lru_owner *v = arg;
	uint64_t o;

	return nkv_be_owner_of(v->be, key, klen, &o) && o == v->owner;
}

uint8_t nkv_lru_victim(struct nkv_lru *l, struct nkv_be *be, uint8_t *key, const uint8_t *skip,
		       uint8_t sklen)
{
	struct nkv_lru_owner v = { be, 0 };
	uint8_t klen = 0;

	if (nkv_be_owner_victim(be, &v.owner))
		klen = nkv_lru_oldest_if(l, key, skip, sklen, nkv_lru_owned, &v);
	return klen ? klen : nkv_lru_oldest(l, key, skip, sklen);
}
