/* SPDX-License-Identifier: MIT */
/*
 * lend.c - entries lent to a transport (lend.h): a list of borrowed
 * entries with their borrower counts under one mutex, and an atomic
 * count of borrows so an owner with nothing lent skips the lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "lend.h"
#include "target/core/backend.h"

struct nkv_lend_ent {
	struct nkv_lend_ent *next;
	void *ent;
	uint32_t borrows;
	int retired;
};

struct nkv_lend {
	pthread_mutex_t mu;
	pthread_cond_t idle;		/* signalled when borrows reaches 0 */
	struct nkv_lend_ent *list;
	uint64_t borrows;		/* atomic: all entries' borrows */
	void (*free_fn)(void *owner, void *ent);
	void *owner;
};

/* What a release callback gets. */
struct nkv_lend_token {
	struct nkv_lend *l;
	struct nkv_lend_ent *e;
};

struct nkv_lend *nkv_lend_create(void (*free_fn)(void *owner, void *ent), void *owner)
{
	struct nkv_lend *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->idle, NULL);
	l->free_fn = free_fn;
	l->owner = owner;
	return l;
}

void nkv_lend_destroy(struct nkv_lend *l)
{
	struct timespec ts;
	int waited = 0;

	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	while (__atomic_load_n(&l->borrows, __ATOMIC_ACQUIRE)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 5;
		if (pthread_cond_timedwait(&l->idle, &l->mu, &ts) && !waited++)
			nkv_be_log(NKV_BE_LOG_WARN, "event=lend_wait borrows=%llu reason="
				   "sends_in_flight", (unsigned long long)l->borrows);
	}
	pthread_mutex_unlock(&l->mu);
	pthread_cond_destroy(&l->idle);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

void *nkv_lend_take(struct nkv_lend *l, void *ent)
{
	struct nkv_lend_token *t = malloc(sizeof(*t));
	struct nkv_lend_ent *e;

	if (!t)
		return NULL;
	pthread_mutex_lock(&l->mu);
	for (e = l->list; e && e->ent != ent; e = e->next)
		;
	if (!e && (e = calloc(1, sizeof(*e)))) {
		e->ent = ent;
		e->next = l->list;
		l->list = e;
	}
	if (e) {
		e->borrows++;
		__atomic_add_fetch(&l->borrows, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&l->mu);
	if (!e) {
		free(t);
		return NULL;
	}
	t->l = l;
	t->e = e;
	return t;
}

void nkv_lend_release(void *token)
{
	struct nkv_lend_token *t = token;
	struct nkv_lend *l = t->l;
	struct nkv_lend_ent *e = t->e, **pp;
	void *gone = NULL;

	free(t);
	pthread_mutex_lock(&l->mu);
	if (!--e->borrows) {
		for (pp = &l->list; *pp != e; pp = &(*pp)->next)
			;
		*pp = e->next;
		if (e->retired)
			gone = e->ent;
		free(e);
	}
	pthread_mutex_unlock(&l->mu);
	/* Freed before the count drops: destroy, waiting for it, frees the
	 * owner's memory only after. */
	if (gone)
		l->free_fn(l->owner, gone);
	pthread_mutex_lock(&l->mu);
	if (!__atomic_sub_fetch(&l->borrows, 1, __ATOMIC_RELEASE))
		pthread_cond_broadcast(&l->idle);
	pthread_mutex_unlock(&l->mu);
}

int nkv_lend_retire(struct nkv_lend *l, void *ent)
{
	struct nkv_lend_ent *e;

	if (!__atomic_load_n(&l->borrows, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&l->mu);
	for (e = l->list; e && e->ent != ent; e = e->next)
		;
	if (e)
		e->retired = 1;
	pthread_mutex_unlock(&l->mu);
	return e != NULL;
}

uint32_t nkv_lend_count(struct nkv_lend *l)
{
	return (uint32_t)__atomic_load_n(&l->borrows, __ATOMIC_ACQUIRE);
}
