/* SPDX-License-Identifier: MIT */
/*
 * lend.h - a backend's stored values lent to a transport (backend.h's
 * nkv_be_lend): a Retrieve's C2HData leaves from the value itself, with
 * no copy into a transfer buffer, so an entry removed or replaced while
 * lent must live on until its last borrower is done with it.
 *
 * The table counts borrowers per entry (a list: at most the commands in
 * flight are lent at once). An owner about to free an entry asks
 * nkv_lend_retire() first: 1 means the entry is lent and the last
 * release frees it through free_fn; 0 means free it now. With nothing
 * lent that is one atomic load, so an owner's removals pay nothing.
 *
 * Threading: any thread. An owner lends only entries it holds (under its
 * own lock, so an entry cannot be retired before it is taken) and
 * retires only entries it has removed from its index.
 */
#ifndef NKV_TGT_BACKENDS_LEND_H
#define NKV_TGT_BACKENDS_LEND_H

#include <stdint.h>

struct nkv_lend;

/* free_fn(owner, ent) frees a retired entry once nothing borrows it. */
struct nkv_lend *nkv_lend_create(void (*free_fn)(void *owner, void *ent), void *owner);
/* Wait for every borrower to release (they are sends in flight: each
 * ends once sent or once its connection ends), then free the table. */
void nkv_lend_destroy(struct nkv_lend *l);

/* A borrow of ent: the token nkv_lend_release() takes (the release
 * callback's ctx), or NULL when out of memory (copy instead). */
void *nkv_lend_take(struct nkv_lend *l, void *ent);
/* The borrow ends (any thread): a retired entry with no borrower left is
 * freed here. */
void nkv_lend_release(void *token);
/* ent leaves its owner: 1 when borrowed (freed by the last release), 0
 * when the owner frees it now. */
int nkv_lend_retire(struct nkv_lend *l, void *ent);
/* Entries lent now (for tests). */
uint32_t nkv_lend_count(struct nkv_lend *l);

#endif /* NKV_TGT_BACKENDS_LEND_H */
