/* SPDX-License-Identifier: MIT */
/*
 * owners.c - key -> owner in a shared namespace, per-owner bytes and
 * keys, quotas and the share eviction goes by (tenant.h, backend.h's
 * nkv_be_owner_*).
 *
 * A key's owner is the tenant whose Store created or last replaced it;
 * the backend tells this file of each change under its own write lock,
 * with the figure it charges the key against capacity, so what a tenant
 * owns is counted exactly as capacity is. A tenant's share of a full
 * namespace is its quota's bytes where it has one, else an equal part
 * of the capacity among the tenants that own keys there; eviction takes
 * from the tenant furthest over its share, so one tenant's refresh loop
 * cannot push out another's keys that sit within its share.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "target/tenant/tenant_int.h"

#define NKV_OWNERS_MIN_BUCKETS 1024u

void nkv_tenant_quota_resolve(struct nkv_tenant_ns *n, struct nkv_tenant_acct *a)
{
	static const enum nkv_tenant_key order[] = {
		NKV_TENANT_BY_UID, NKV_TENANT_BY_NQN, NKV_TENANT_BY_GID,
	};
	unsigned i, k;

	a->quota_bytes = a->quota_keys = 0;
	for (k = 0; k < 3; k++)
		for (i = 0; i < n->nquotas; i++)
			if (n->quotas[i].s.by == order[k] && nkv_tenant_subject_match(&n->quotas[i].s, a)) {
				a->quota_bytes = n->quotas[i].bytes;
				a->quota_keys = n->quotas[i].keys;
				return;
			}
}

int nkv_quota_set(struct nkv_tenants *t, uint32_t nsid, const struct nkv_tenant_subject *s,
		  uint64_t bytes, uint64_t keys)
{
	struct nkv_tenant_ns *n = nkv_tenant_ns(t, nsid);
	struct nkv_tenant_quota *grown;
	unsigned i;
	int rc = 0;

	if (!n || !s || (s->by == NKV_TENANT_BY_NQN && !s->nqn[0]) ||
	    s->by < NKV_TENANT_BY_UID || s->by > NKV_TENANT_BY_NQN)
		return -EINVAL;
	pthread_mutex_lock(&n->lock);
	for (i = 0; i < n->nquotas; i++)
		if (n->quotas[i].s.by == s->by &&
		    (s->by == NKV_TENANT_BY_NQN ? !strcmp(n->quotas[i].s.nqn, s->nqn)
						: n->quotas[i].s.id == s->id))
			break;
	if (i == n->nquotas) {
		grown = n->nquotas == NKV_TENANT_RULES ? NULL
			: realloc(n->quotas, (n->nquotas + 1) * sizeof(*grown));
		if (grown) {
			n->quotas = grown;
			n->quotas[n->nquotas].s = *s;
			n->quotas[n->nquotas].bytes = n->quotas[n->nquotas].keys = 0;
			__atomic_store_n(&n->nquotas, n->nquotas + 1, __ATOMIC_RELAXED);
		} else {
			rc = -ENOSPC;
		}
	}
	if (!rc) {
		n->quotas[i].bytes = bytes;
		n->quotas[i].keys = keys;
		for (i = 0; i < n->nacct; i++)
			nkv_tenant_quota_resolve(n, n->acct[i]);
	}
	pthread_mutex_unlock(&n->lock);
	return rc;
}

struct nkv_tenant_acct *nkv_tenant_enter(struct nkv_tenants *t, uint32_t nsid,
					 const struct nkv_tenant_who *who)
{
	struct nkv_tenant_ns *n = nkv_tenant_ns(t, nsid);
	struct nkv_tenant_acct *a;

	if (!n)
		return NULL;
	pthread_mutex_lock(&n->lock);
	a = nkv_tenant_acct_of(n, who->id, who);
	pthread_mutex_unlock(&n->lock);
	return a;
}

/* ---- the key map (under n->lock) ---- */

static struct nkv_owner_key **nkv_owner_slot(struct nkv_tenant_ns *n, const uint8_t *key,
					     uint8_t klen, uint32_t h)
{
	struct nkv_owner_key **s = &n->b[h & (n->nb - 1)];

	while (*s && ((*s)->hash != h || (*s)->klen != klen || memcmp((*s)->key, key, klen)))
		s = &(*s)->next;
	return s;
}

static struct nkv_owner_key *nkv_owner_find(struct nkv_tenant_ns *n, const uint8_t *key,
					    uint8_t klen)
{
	return n->nb ? *nkv_owner_slot(n, key, klen, nkv_be_key_hash(key, klen)) : NULL;
}

/* Double the buckets (from none to the first ones); a failed
 * allocation keeps the longer chains, or refuses the first key. */
static int nkv_owner_grow(struct nkv_tenant_ns *n)
{
	size_t nb = n->nb ? n->nb * 2 : NKV_OWNERS_MIN_BUCKETS, i;
	struct nkv_owner_key **b = calloc(nb, sizeof(*b)), *k, *next;

	if (!b)
		return n->nb ? 0 : -ENOMEM;
	for (i = 0; i < n->nb; i++)
		for (k = n->b[i]; k; k = next) {
			next = k->next;
			k->next = b[k->hash & (nb - 1)];
			b[k->hash & (nb - 1)] = k;
		}
	free(n->b);
	n->b = b;
	n->nb = nb;
	return 0;
}

static void nkv_owner_charge(struct nkv_tenant_acct *a, uint64_t cost, int ttl, int sign)
{
	nkv_tenant_tick(a, nkv_be_now_ms());
	if (sign > 0) {
		a->bytes[!!ttl] += cost;
		a->keys++;
	} else {
		a->bytes[!!ttl] -= cost;
		a->keys--;
	}
}

static struct nkv_tenant_ns *nkv_be_tns(struct nkv_be *be)
{
	return be ? nkv_tenant_ns(be->tenants, be->tenant_nsid) : NULL;
}

/* ---- backend.h ---- */

uint16_t nkv_be_owner_admit(struct nkv_be *be, uint64_t owner, const uint8_t *key, uint8_t klen,
			    uint64_t cost)
{
	struct nkv_tenant_ns *n = nkv_be_tns(be);
	struct nkv_tenant_acct *a;
	struct nkv_owner_key *k;
	uint64_t bytes, keys;
	uint16_t st = 0;

	/* No quota in the namespace (read unlocked: one set meanwhile
	 * applies from the next Store): nothing to check, no lock taken. */
	if (!n || !__atomic_load_n(&n->nquotas, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&n->lock);
	a = nkv_tenant_acct_of(n, owner, NULL);
	if (a && (a->quota_bytes || a->quota_keys)) {
		k = nkv_owner_find(n, key, klen);
		bytes = a->bytes[0] + a->bytes[1] + cost - (k && k->a == a ? k->cost : 0);
		keys = a->keys + !(k && k->a == a);
		if ((a->quota_bytes && bytes > a->quota_bytes) ||
		    (a->quota_keys && keys > a->quota_keys)) {
			a->over_quota++;
			st = NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_CAPACITY_EXCEEDED);
		}
	}
	pthread_mutex_unlock(&n->lock);
	return st;
}

int nkv_be_owner_limited(struct nkv_be *be, uint64_t owner)
{
	struct nkv_tenant_ns *n = nkv_be_tns(be);
	struct nkv_tenant_acct *a;
	int limited;

	if (!n || !__atomic_load_n(&n->nquotas, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&n->lock);
	a = nkv_tenant_acct_of(n, owner, NULL);
	limited = a && (a->quota_bytes || a->quota_keys);
	pthread_mutex_unlock(&n->lock);
	return limited;
}

/* Take key's entry off its owner's books; under n->lock. */
static void nkv_owner_unlink(struct nkv_tenant_ns *n, const uint8_t *key, uint8_t klen,
			     int evicted)
{
	struct nkv_owner_key **s, *k;

	if (!n->nb)
		return;
	s = nkv_owner_slot(n, key, klen, nkv_be_key_hash(key, klen));
	k = *s;
	if (!k)
		return;
	*s = k->next;
	n->nkeys--;
	nkv_owner_charge(k->a, k->cost, k->ttl, -1);
	k->a->evicted += evicted != 0;
	free(k);
}

void nkv_be_owner_stored(struct nkv_be *be, uint64_t owner, const uint8_t *key, uint8_t klen,
			 uint64_t cost, int ttl)
{
	struct nkv_tenant_ns *n = nkv_be_tns(be);
	struct nkv_tenant_acct *a;
	struct nkv_owner_key *k;
	uint32_t h = nkv_be_key_hash(key, klen);

	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	a = nkv_tenant_acct_of(n, owner, NULL);
	k = n->nb ? *nkv_owner_slot(n, key, klen, h) : NULL;
	if (k && a) {	/* a replace: the entry changes hands in place */
		nkv_owner_charge(k->a, k->cost, k->ttl, -1);
		k->a = a;
		k->cost = cost;
		k->ttl = ttl != 0;
		nkv_owner_charge(a, cost, ttl, 1);
		pthread_mutex_unlock(&n->lock);
		return;
	}
	if (k)
		nkv_owner_unlink(n, key, klen, 0);
	k = a ? malloc(sizeof(*k) + klen) : NULL;
	/* Out of memory (or tenants): the key goes unowned, uncounted; it
	 * is still evictable and its bytes are still the namespace's. */
	if (k && (n->nkeys + 1 > n->nb || !n->nb) && nkv_owner_grow(n)) {
		free(k);
		k = NULL;
	}
	if (k) {
		k->a = a;
		k->cost = cost;
		k->hash = h;
		k->ttl = ttl != 0;
		k->klen = klen;
		memcpy(k->key, key, klen);
		k->next = n->b[h & (n->nb - 1)];
		n->b[h & (n->nb - 1)] = k;
		n->nkeys++;
		nkv_owner_charge(a, cost, ttl, 1);
	}
	pthread_mutex_unlock(&n->lock);
}

void nkv_be_owner_gone(struct nkv_be *be, const uint8_t *key, uint8_t klen, int evicted)
{
	struct nkv_tenant_ns *n = nkv_be_tns(be);

	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	nkv_owner_unlink(n, key, klen, evicted);
	pthread_mutex_unlock(&n->lock);
}

void nkv_be_owner_ttl(struct nkv_be *be, const uint8_t *key, uint8_t klen, int ttl)
{
	struct nkv_tenant_ns *n = nkv_be_tns(be);
	struct nkv_owner_key *k;

	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	k = nkv_owner_find(n, key, klen);
	if (k && k->ttl != (ttl != 0)) {
		nkv_owner_charge(k->a, k->cost, k->ttl, -1);
		k->ttl = ttl != 0;
		nkv_owner_charge(k->a, k->cost, k->ttl, 1);
	}
	pthread_mutex_unlock(&n->lock);
}

int nkv_be_owner_of(struct nkv_be *be, const uint8_t *key, uint8_t klen, uint64_t *owner)
{
	struct nkv_tenant_ns *n = nkv_be_tns(be);
	struct nkv_owner_key *k;

	if (!n)
		return 0;
	pthread_mutex_lock(&n->lock);
	k = nkv_owner_find(n, key, klen);
	if (k)
		*owner = k->a->id;
	pthread_mutex_unlock(&n->lock);
	return k != NULL;
}

int nkv_be_owner_victim(struct nkv_be *be, uint64_t *owner)
{
	struct nkv_tenant_ns *n = nkv_be_tns(be);
	struct nkv_tenant_acct *a;
	uint64_t owners = 0, share, used;
	int64_t over, most = 0;
	unsigned i;

	if (!n)
		return 0;
	pthread_mutex_lock(&n->lock);
	for (i = 0; i < n->nacct; i++)
		owners += n->acct[i]->keys > 0;
	for (i = 0; i < n->nacct; i++) {
		a = n->acct[i];
		used = a->bytes[0] + a->bytes[1];
		if (!a->keys)
			continue;
		share = a->quota_bytes ? a->quota_bytes
				      : __atomic_load_n(&be->capacity, __ATOMIC_RELAXED) / (owners ? owners : 1);
		over = (int64_t)used - (int64_t)share;
		if (over > most) {
			most = over;
			*owner = a->id;
		}
	}
	pthread_mutex_unlock(&n->lock);
	return most > 0;
}
