/* SPDX-License-Identifier: MIT */
/*
 * lru.h - keys in order of last use, for --evict lru (mem and rocksdb).
 *
 * A hash of the keys and a list from most to least recently used: use,
 * drop and oldest are O(1) (amortised over the hash's growth). Its own
 * mutex makes every call safe from any thread; a caller may hold its own
 * locks around them (the LRU takes no other lock).
 */
#ifndef NKV_TGT_BACKENDS_LRU_H
#define NKV_TGT_BACKENDS_LRU_H

#include <stdint.h>

struct nkv_lru;

struct nkv_lru *nkv_lru_create(void);
void nkv_lru_destroy(struct nkv_lru *l);
/* key is the most recently used now (added when absent): 0 or -ENOMEM. */
int nkv_lru_use(struct nkv_lru *l, const uint8_t *key, uint8_t klen);
/* Forget key (nothing when absent). */
void nkv_lru_drop(struct nkv_lru *l, const uint8_t *key, uint8_t klen);
/* The least recently used key other than skip (NULL: none skipped) into
 * key (NKV_KEY_MAX bytes): its length, or 0 when there is none. */
uint8_t nkv_lru_oldest(struct nkv_lru *l, uint8_t *key, const uint8_t *skip, uint8_t sklen);
/* The same, among the keys ok(arg, key, klen) accepts: from the least
 * recently used on (the share eviction's keys of one owner). ok runs
 * under the LRU's lock and must not call back into it. O(keys passed). */
uint8_t nkv_lru_oldest_if(struct nkv_lru *l, uint8_t *key, const uint8_t *skip, uint8_t sklen,
			  int (*ok)(void *arg, const uint8_t *key, uint8_t klen), void *arg);

/* lru_owner.c: the key --evict lru takes from namespace be (its owners,
 * backend.h): the least recently used of the tenant furthest over its
 * share, else of anyone; its length, 0 when there is none. */
struct nkv_be;
uint8_t nkv_lru_victim(struct nkv_lru *l, struct nkv_be *be, uint8_t *key, const uint8_t *skip,
		       uint8_t sklen);

#endif /* NKV_TGT_BACKENDS_LRU_H */
