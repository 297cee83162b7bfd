/* SPDX-License-Identifier: MIT */
/*
 * tenant_int.h - the tenants' tables, shared by tenant/'s files only.
 *
 * Each namespace has its own mutex over its rules, its tenants and its
 * key -> owner map, so Stores in two namespaces never wait for each
 * other here. A tenant entry, once made, lives as long as the tables
 * (a controller keeps a pointer to it for the bytes it moves).
 */
#ifndef NKV_TGT_TENANT_INT_H
#define NKV_TGT_TENANT_INT_H

#include <pthread.h>

#include "target/core/backend.h"
#include "target/tenant/tenant.h"

struct nkv_tenant_quota {
	struct nkv_tenant_subject s;
	uint64_t bytes, keys;
};

struct nkv_tenant_acct {
	uint64_t id;
	uint32_t gid;			/* its connection's, for gid rules */
	int has_gid;
	char nqn[256];
	uint64_t quota_bytes, quota_keys;	/* resolved from the rules; 0: none */
	uint64_t bytes[2];		/* owned: [0] durable, [1] TTL'd */
	uint64_t keys;
	double bs[2];			/* byte-seconds up to t_ms */
	uint64_t t_ms;			/* nkv_be_now_ms() of the last integration */
	uint64_t bytes_in, bytes_out;	/* atomic */
	uint64_t denied, over_quota, evicted;
};

/* One key's owner and what it costs (the backend's figure). */
struct nkv_owner_key {
	struct nkv_owner_key *next;
	struct nkv_tenant_acct *a;
	uint64_t cost;
	uint32_t hash;
	uint8_t ttl;
	uint8_t klen;
	uint8_t key[];
};

struct nkv_tenant_ns {
	pthread_mutex_t lock;
	enum nkv_access def;
	struct nkv_access_rule *rules;
	unsigned nrules;
	struct nkv_tenant_quota *quotas;
	unsigned nquotas;		/* atomic store (admit reads it unlocked) */
	struct nkv_tenant_acct **acct;
	unsigned nacct;
	struct nkv_owner_key **b;	/* key -> owner, chained */
	size_t nb, nkeys;
	uint64_t log_last_ms;		/* access_denied lines: one a second */
	uint64_t log_quiet;		/* refusals not logged since */
};

struct nkv_tenants {
	uint64_t gen;			/* first: nkv_tenants_gen() reads it */
	struct nkv_tenant_ns ns[NKV_TENANT_NS_MAX + 1];
};

/* nsid's table, or NULL when out of range. */
struct nkv_tenant_ns *nkv_tenant_ns(struct nkv_tenants *t, uint32_t nsid);
/* The entry of tenant id in n (made when absent; NULL past
 * NKV_TENANT_MAX or out of memory); under n->lock. who: its identity
 * when the core makes it (gid, NQN), NULL from a backend. */
struct nkv_tenant_acct *nkv_tenant_acct_of(struct nkv_tenant_ns *n, uint64_t id,
					   const struct nkv_tenant_who *who);
/* Does s name who (or entry a)? */
int nkv_tenant_subject_match(const struct nkv_tenant_subject *s, const struct nkv_tenant_acct *a);
/* Integrate a's byte-seconds up to now; under n->lock. */
void nkv_tenant_tick(struct nkv_tenant_acct *a, uint64_t now_ms);
/* a's quota from n's rules (uid or NQN first, then gid); under n->lock. */
void nkv_tenant_quota_resolve(struct nkv_tenant_ns *n, struct nkv_tenant_acct *a);

#endif /* NKV_TGT_TENANT_INT_H */
