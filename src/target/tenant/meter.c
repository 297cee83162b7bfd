/* SPDX-License-Identifier: MIT */
/*
 * meter.c - what each tenant stored over time and moved (tenant.h).
 *
 * Byte-seconds integrate exactly: owners.c adds bytes x the time since
 * the last change before every change of a tenant's bytes (nkv_tenant_tick),
 * and a reading adds the stretch up to now, all on the backend clock
 * (nkv_be_now_ms: a test sets it). A TTL'd key counts in the TTL tier
 * until it is removed (a read that meets it expired, the sweep).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/tenant/tenant_int.h"

void nkv_tenant_moved(struct nkv_tenant_acct *a, uint64_t in, uint64_t out)
{
	if (!a)
		return;
	if (in)
		__atomic_add_fetch(&a->bytes_in, in, __ATOMIC_RELAXED);
	if (out)
		__atomic_add_fetch(&a->bytes_out, out, __ATOMIC_RELAXED);
}

static void nkv_tenant_usage_one(const struct nkv_tenant_acct *a, struct nkv_tenant_usage *u)
{
	memset(u, 0, sizeof(*u));
	u->id = a->id;
	if (a->nqn[0])
		snprintf(u->name, sizeof(u->name), "%s", a->nqn);
	else
		nkv_tenant_name(a->id, u->name, sizeof(u->name));
	u->bytes = a->bytes[0] + a->bytes[1];
	u->keys = a->keys;
	u->quota_bytes = a->quota_bytes;
	u->quota_keys = a->quota_keys;
	u->byte_seconds[0] = a->bs[0];
	u->byte_seconds[1] = a->bs[1];
	u->bytes_in = __atomic_load_n(&a->bytes_in, __ATOMIC_RELAXED);
	u->bytes_out = __atomic_load_n(&a->bytes_out, __ATOMIC_RELAXED);
	u->denied = a->denied;
	u->over_quota = a->over_quota;
	u->evicted = a->evicted;
}

unsigned nkv_tenant_usage(struct nkv_tenants *t, uint32_t nsid, struct nkv_tenant_usage *out,
			  unsigned max)
{
	struct nkv_tenant_ns *n = nkv_tenant_ns(t, nsid);
	uint64_t now = nkv_be_now_ms();
	unsigned i, cnt;

	if (!n)
		return 0;
	pthread_mutex_lock(&n->lock);
	cnt = n->nacct;
	for (i = 0; i < cnt; i++) {
		nkv_tenant_tick(n->acct[i], now);
		if (i < max)
			nkv_tenant_usage_one(n->acct[i], &out[i]);
	}
	pthread_mutex_unlock(&n->lock);
	return cnt;
}

void nkv_tenant_ns_reset(struct nkv_tenants *t, uint32_t nsid)
{
	struct nkv_tenant_ns *n = nkv_tenant_ns(t, nsid);
	struct nkv_owner_key *k, *next;
	uint64_t now = nkv_be_now_ms();
	size_t i;

	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	for (i = 0; i < n->nb; i++) {
		for (k = n->b[i]; k; k = next) {
			next = k->next;
			free(k);
		}
		n->b[i] = NULL;
	}
	n->nkeys = 0;
	for (i = 0; i < n->nacct; i++) {
		nkv_tenant_tick(n->acct[i], now);
		n->acct[i]->bytes[0] = n->acct[i]->bytes[1] = n->acct[i]->keys = 0;
	}
	pthread_mutex_unlock(&n->lock);
}
