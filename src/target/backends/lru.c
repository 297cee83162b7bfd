/* SPDX-License-Identifier: MIT */
/*
 * lru.c - keys in order of last use (see lru.h): chained hash buckets
 * (doubled when the keys outnumber them) and a circular list through a
 * sentinel, most recent first.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lru.h"
#include "target/core/backend.h"

struct nkv_lru_node {
	struct nkv_lru_node *hnext;	/* the bucket's chain */
	struct nkv_lru_node *prev, *next;	/* the use order */
	uint32_t hash;
	uint8_t klen;
	uint8_t key[];
};

struct nkv_lru {
	pthread_mutex_t lock;
	struct nkv_lru_node **b;
	size_t nb, count;
	struct nkv_lru_node head;	/* head.next: most recent; head.prev: oldest */
};

#define NKV_LRU_MIN_BUCKETS 1024u

struct nkv_lru *nkv_lru_create(void)
{
	struct nkv_lru *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->b = calloc(NKV_LRU_MIN_BUCKETS, sizeof(*l->b));
	if (!l->b) {
		free(l);
		return NULL;
	}
	l->nb = NKV_LRU_MIN_BUCKETS;
	l->head.next = l->head.prev = &l->head;
	pthread_mutex_init(&l->lock, NULL);
	return l;
}

void nkv_lru_destroy(struct nkv_lru *l)
{
	struct nkv_lru_node *n, *next;

	if (!l)
		return;
	for (n = l->head.next; n != &l->head; n = next) {
		next = n->next;
		free(n);
	}
	pthread_mutex_destroy(&l->lock);
	free(l->b);
	free(l);
}

/* The slot pointing at key's node (or at the chain's NULL end). */
static struct nkv_lru_node **nkv_lru_slot(struct nkv_lru *l, const uint8_t *key, uint8_t klen,
					  uint32_t h)
{
	struct nkv_lru_node **s = &l->b[h & (l->nb - 1)];

	while (*s && ((*s)->hash != h || (*s)->klen != klen || memcmp((*s)->key, key, klen)))
		s = &(*s)->hnext;
	return s;
}

static void nkv_lru_unlink(struct nkv_lru_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
}

static void nkv_lru_front(struct nkv_lru *l, struct nkv_lru_node *n)
{
	n->prev = &l->head;
	n->next = l->head.next;
	l->head.next->prev = n;
	l->head.next = n;
}

/* Double the buckets; a failed allocation keeps the longer chains. */
static void nkv_lru_grow(struct nkv_lru *l)
{
	struct nkv_lru_node **b = calloc(l->nb * 2, sizeof(*b)), *n;

	if (!b)
		return;
	for (n = l->head.next; n != &l->head; n = n->next) {
		n->hnext = b[n->hash & (l->nb * 2 - 1)];
		b[n->hash & (l->nb * 2 - 1)] = n;
	}
	free(l->b);
	l->b = b;
	l->nb *= 2;
}

int nkv_lru_use(struct nkv_lru *l, const uint8_t *key, uint8_t klen)
{
	uint32_t h = nkv_be_key_hash(key, klen);
	struct nkv_lru_node **s, *n;

	pthread_mutex_lock(&l->lock);
	s = nkv_lru_slot(l, key, klen, h);
	n = *s;
	if (n) {
		nkv_lru_unlink(n);
	} else {
		n = malloc(sizeof(*n) + klen);
		if (!n) {
			pthread_mutex_unlock(&l->lock);
			return -ENOMEM;
		}
		n->hash = h;
		n->klen = klen;
		memcpy(n->key, key, klen);
		n->hnext = NULL;
		*s = n;
		l->count++;
	}
	/* In the list before a growth rebuilds the buckets from it: a node
	 * left out would stay listed but unreachable by drop, and eviction
	 * would meet it as the oldest for ever. */
	nkv_lru_front(l, n);
	if (l->count > l->nb)
		nkv_lru_grow(l);
	pthread_mutex_unlock(&l->lock);
	return 0;
}

void nkv_lru_drop(struct nkv_lru *l, const uint8_t *key, uint8_t klen)
{
	struct nkv_lru_node **s, *n;

	pthread_mutex_lock(&l->lock);
	s = nkv_lru_slot(l, key, klen, nkv_be_key_hash(key, klen));
	n = *s;
	if (n) {
		*s = n->hnext;
		nkv_lru_unlink(n);
		l->count--;
		free(n);
	}
	pthread_mutex_unlock(&l->lock);
}

uint8_t nkv_lru_oldest(struct nkv_lru *l, uint8_t *key, const uint8_t *skip, uint8_t sklen)
{
	struct nkv_lru_node *n;
	uint8_t klen = 0;

	pthread_mutex_lock(&l->lock);
	n = l->head.prev;
	if (n != &l->head && skip && n->klen == sklen && !memcmp(n->key, skip, sklen))
		n = n->prev;
	if (n != &l->head) {
		klen = n->klen;
		memcpy(key, n->key, klen);
	}
	pthread_mutex_unlock(&l->lock);
	return klen;
}

uint8_t nkv_lru_oldest_if(struct nkv_lru *l, uint8_t *key, const uint8_t *skip, uint8_t sklen,
			  int (*ok)(void *arg, const uint8_t *key, uint8_t klen), void *arg)
{
	struct nkv_lru_node *n;
	uint8_t klen = 0;

	pthread_mutex_lock(&l->lock);
	for (n = l->head.prev; n != &l->head; n = n->prev) {
		if (skip && n->klen == sklen && !memcmp(n->key, skip, sklen))
			continue;
		if (ok(arg, n->key, n->klen)) {
			klen = n->klen;
			memcpy(key, n->key, klen);
			break;
		}
	}
	pthread_mutex_unlock(&l->lock);
	return klen;
}
