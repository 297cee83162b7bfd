/* SPDX-License-Identifier: MIT */
/*
 * valloc.c - the mem backend's value allocator (see valloc.h).
 *
 * Size classes: multiples of 16 up to 256 bytes, then four per power of
 * two (at most 25 % rounding). A class's free blocks form a list through
 * their first word; new blocks come from a bump front in the reservation.
 * The helper thread keeps NKV_VALLOC_AHEAD bytes (an eighth of a small
 * reservation) past the front populated
 * with MADV_POPULATE_WRITE, which faults pages in without touching their
 * contents, so it may run beside Stores writing just below it. Kernels
 * before 5.14 lack it: the helper then stops and pages fault on first
 * touch, as with malloc (still no heap growth).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "valloc.h"

#define NKV_VALLOC_CLASSES 128
#define NKV_VALLOC_AHEAD (8ull << 20)	/* populated ahead of the front */
#define NKV_VALLOC_PAGE 4096ull

struct nkv_valloc {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* the helper waits here */
	uint8_t *base;
	uint64_t size;			/* reserved */
	uint64_t ahead;			/* populated past the front */
	uint64_t front;			/* under lock */
	uint64_t faulted;		/* under lock */
	uint64_t caught_up;		/* under lock */
	int stop;			/* under lock */
	pthread_t helper;
	void *free[NKV_VALLOC_CLASSES];	/* under lock */
};

/* floor(log2(v)), v > 0 */
static unsigned nkv_valloc_log2(uint64_t v)
{
	return 63u - (unsigned)__builtin_clzll(v);
}

static unsigned nkv_valloc_class(uint64_t len, uint64_t *size)
{
	unsigned k;
	uint64_t step;

	if (len <= 256) {
		*size = len <= 16 ? 16 : (len + 15) & ~15ull;
		return (unsigned)(*size / 16 - 1);
	}
	k = nkv_valloc_log2(len - 1);		/* len in (2^k, 2^(k+1)] */
	step = (1ull << k) / 4;
	*size = (len + step - 1) / step * step;	/* 5..8 steps */
	return 16 + (k - 8) * 4 + (unsigned)(*size / step - 5);
}

uint64_t nkv_valloc_block(uint64_t len)
{
	uint64_t size;

	nkv_valloc_class(len, &size);
	return size;
}

/* Populate [faulted, front + AHEAD) outside the lock, one step at a time. */
static void *nkv_valloc_helper(void *arg)
{
	struct nkv_valloc *a = arg;

	pthread_mutex_lock(&a->lock);
	while (!a->stop) {
		uint64_t want = a->front + a->ahead, from = a->faulted;

		if (want > a->size)
			want = a->size;
		if (from >= want) {
			pthread_cond_wait(&a->cond, &a->lock);
			continue;
		}
		pthread_mutex_unlock(&a->lock);
		if (madvise(a->base + from, want - from, MADV_POPULATE_WRITE)) {
			pthread_mutex_lock(&a->lock);
			break;		/* not supported here: fault on touch */
		}
		pthread_mutex_lock(&a->lock);
		a->faulted = want;
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

struct nkv_valloc *nkv_valloc_create(uint64_t capacity, uint64_t max_block)
{
	struct nkv_valloc *a = calloc(1, sizeof(*a));
	uint64_t size = 2 * (capacity + nkv_valloc_block(max_block));
	int rc;

	if (!a)
		return NULL;
	size = (size + NKV_VALLOC_PAGE - 1) & ~(NKV_VALLOC_PAGE - 1);
	/* Address space only: pages cost nothing until faulted in. */
	a->base = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (a->base == MAP_FAILED) {
		free(a);
		return NULL;
	}
	a->size = size;
	/* A small namespace needs no 8 MiB lead: an eighth of it will do. */
	a->ahead = size / 8 < NKV_VALLOC_AHEAD ? (size / 8 + NKV_VALLOC_PAGE - 1) & ~(NKV_VALLOC_PAGE - 1)
					       : NKV_VALLOC_AHEAD;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->cond, NULL);
	rc = pthread_create(&a->helper, NULL, nkv_valloc_helper, a);
	if (rc) {
		munmap(a->base, size);
		pthread_cond_destroy(&a->cond);
		pthread_mutex_destroy(&a->lock);
		free(a);
		errno = rc;
		return NULL;
	}
	return a;
}

void nkv_valloc_destroy(struct nkv_valloc *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = 1;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->helper, NULL);
	munmap(a->base, a->size);
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

void *nkv_valloc_get(struct nkv_valloc *a, uint64_t len)
{
	uint64_t size;
	unsigned c = nkv_valloc_class(len, &size);
	void *p = NULL;

	if (c >= NKV_VALLOC_CLASSES)
		return NULL;
	pthread_mutex_lock(&a->lock);
	if (a->free[c]) {
		p = a->free[c];
		a->free[c] = *(void **)p;
	} else if (size <= a->size - a->front) {
		p = a->base + a->front;
		a->front += size;
		if (a->front > a->faulted)
			a->caught_up++;
		/* Wake the helper once half its lead is used. */
		if (a->front + a->ahead / 2 > a->faulted)
			pthread_cond_signal(&a->cond);
	}
	pthread_mutex_unlock(&a->lock);
	return p;
}

void nkv_valloc_put(struct nkv_valloc *a, void *p, uint64_t len)
{
	uint64_t size;
	unsigned c = nkv_valloc_class(len, &size);

	if (!p)
		return;
	pthread_mutex_lock(&a->lock);
	*(void **)p = a->free[c];
	a->free[c] = p;
	pthread_mutex_unlock(&a->lock);
}

void nkv_valloc_stats(struct nkv_valloc *a, struct nkv_valloc_stats *st)
{
	pthread_mutex_lock(&a->lock);
	st->reserved = a->size;
	st->front = a->front;
	st->faulted = a->faulted;
	st->caught_up = a->caught_up;
	pthread_mutex_unlock(&a->lock);
}
