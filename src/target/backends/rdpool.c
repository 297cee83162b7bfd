/* SPDX-License-Identifier: MIT */
/*
 * rdpool.c - threads that run a backend's slow reads (rdpool.h): one
 * FIFO of items under a mutex, a condition the idle threads wait on.
 * An item costs tens of microseconds, so one lock per push and per take
 * is noise beside it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "rdpool.h"

struct nkv_rdpool {
	void (*run)(void *arg, void *item);
	void *arg;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	void **q;		/* a ring of cap items, len from head */
	size_t head, len, cap;
	int stop;
	unsigned nthr;
	pthread_t thr[NKV_RDPOOL_MAX];
};

static void *nkv_rdpool_main(void *a)
{
	struct nkv_rdpool *p = a;
	void *item;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->len && !p->stop)
			pthread_cond_wait(&p->cond, &p->lock);
		if (!p->len)
			break;	/* stopping, and everything pushed has run */
		item = p->q[p->head];
		p->head = (p->head + 1) % p->cap;
		p->len--;
		pthread_mutex_unlock(&p->lock);
		p->run(p->arg, item);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Double the ring, keeping its order (under the lock). */
static int nkv_rdpool_grow(struct nkv_rdpool *p)
{
	size_t cap = p->cap ? p->cap * 2 : 64, i;
	void **q = malloc(cap * sizeof(*q));

	if (!q)
		return -ENOMEM;
	for (i = 0; i < p->len; i++)
		q[i] = p->q[(p->head + i) % p->cap];
	free(p->q);
	p->q = q;
	p->head = 0;
	p->cap = cap;
	return 0;
}

int nkv_rdpool_push(struct nkv_rdpool *p, void *item)
{
	int rc = 0;

	pthread_mutex_lock(&p->lock);
	if (p->len == p->cap)
		rc = nkv_rdpool_grow(p);
	if (!rc) {
		p->q[(p->head + p->len) % p->cap] = item;
		p->len++;
		pthread_cond_signal(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
	return rc;
}

struct nkv_rdpool *nkv_rdpool_create(unsigned n, void (*run)(void *arg, void *item), void *arg)
{
	struct nkv_rdpool *p;

	if (!n || n > NKV_RDPOOL_MAX || !run) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->run = run;
	p->arg = arg;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	for (p->nthr = 0; p->nthr < n; p->nthr++) {
		if (pthread_create(&p->thr[p->nthr], NULL, nkv_rdpool_main, p)) {
			nkv_rdpool_destroy(p);
			errno = EAGAIN;
			return NULL;
		}
	}
	return p;
}

void nkv_rdpool_destroy(struct nkv_rdpool *p)
{
	unsigned i;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < p->nthr; i++)
		pthread_join(p->thr[i], NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p->q);
	free(p);
}
