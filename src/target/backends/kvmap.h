/* SPDX-License-Identifier: MIT */
/*
 * kvmap.h - an ordered map from KV keys (1..255 bytes) to pointers, the
 * index behind nkv-target's mem backend.
 *
 * Order: key bytes compared with memcmp over the shorter length, a shorter
 * key first when it is a prefix of the longer one ("b" < "b\0" < "ba" <
 * "c"), i.e. the List order of docs/target.md. A key of length 0 sorts
 * before every key, so seeking it starts at the beginning.
 *
 * Every operation is O(log n) (a B+ tree, see kvmap.c); none allocates
 * except an insert that splits nodes. Not thread-safe: the caller locks
 * (the mem backend holds its rwlock: shared for find and cursors, exclusive for
 * insert and delete).
 */
#ifndef NKV_TGT_KVMAP_H
#define NKV_TGT_KVMAP_H

#include <stddef.h>
#include <stdint.h>

#include "nkv_wire.h"

/* Embed in the owner; zero it with nkv_kvmap_init(). Read only count. */
struct nkv_kvmap {
	void *root;		/* a leaf when height is 0; NULL when empty */
	unsigned height;	/* inner levels above the leaves */
	size_t count;		/* keys stored */
	uint64_t gen;		/* bumped by every change (cursors re-seek) */
};

/*
 * A position in the map. seek/next fill key, klen and val; they stay
 * valid copies even when the map changes afterwards. After a change,
 * next() re-seeks to the first key above the copy, so deleting the
 * cursor's own key or a neighbour while iterating is safe (the cursor
 * then sees the map as it is now).
 */
struct nkv_kvmap_cursor {
	const struct nkv_kvmap *map;
	const void *leaf;	/* NULL: at the end */
	unsigned idx;
	uint64_t gen;
	uint8_t klen;
	uint8_t key[NKV_KEY_MAX];	/* the first klen bytes */
	void *val;
};

void nkv_kvmap_init(struct nkv_kvmap *m);
/* Free every node; free_val (may be NULL) gets each stored value. */
void nkv_kvmap_fini(struct nkv_kvmap *m, void (*free_val)(void *val));

/* The value stored under the key, or NULL. */
void *nkv_kvmap_find(const struct nkv_kvmap *m, const uint8_t *key, uint8_t klen);

/* Where the key's value is stored (replace it in place, one descent
 * instead of find + insert), or NULL. Valid until the next insert or
 * delete; the new value must not be NULL. */
void **nkv_kvmap_slot(struct nkv_kvmap *m, const uint8_t *key, uint8_t klen);

/*
 * Insert or replace. val must not be NULL; klen 1..255.
 * 0: inserted; 1: replaced (*old gets the previous value when old is not
 * NULL); -EINVAL: bad key or NULL val; -ENOMEM: a node split or a long
 * key's copy could not be allocated (the map holds the same keys and is
 * still valid).
 */
int nkv_kvmap_insert(struct nkv_kvmap *m, const uint8_t *key, uint8_t klen, void *val,
		     void **old);

/* Remove the key; its value, or NULL when absent. Never allocates. */
void *nkv_kvmap_delete(struct nkv_kvmap *m, const uint8_t *key, uint8_t klen);

/* Position c at the first key >= (key, klen); klen 0 = the first key.
 * 1: at an entry (c->key, c->klen, c->val set); 0: past the end. */
int nkv_kvmap_seek(const struct nkv_kvmap *m, struct nkv_kvmap_cursor *c, const uint8_t *key,
		   uint8_t klen);
/* Step to the next key. 1: at an entry; 0: past the end. */
int nkv_kvmap_next(struct nkv_kvmap_cursor *c);

/* Index bytes one key may cost at most: every node but the root is at
 * least half full, so a key's share of its leaf and of the inner nodes
 * above (with their allocation headers) is bounded by this. */
size_t nkv_kvmap_key_bytes(void);
/* Bytes a key of klen bytes costs beyond that: 0 up to 16 bytes; a
 * longer key's bytes are an allocation of their own. */
size_t nkv_kvmap_long_bytes(size_t klen);

/* The key order (negative, 0, positive), exported for callers and tests. */
int nkv_kvmap_cmp(const uint8_t *a, uint8_t al, const uint8_t *b, uint8_t bl);

/* Check every structural invariant (order, separators, fill, leaf chain,
 * count). 0, or a negative number naming the first broken rule. For
 * tests; O(n). */
int nkv_kvmap_check(const struct nkv_kvmap *m);

#endif /* NKV_TGT_KVMAP_H */
