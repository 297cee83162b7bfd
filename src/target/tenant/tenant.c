/* SPDX-License-Identifier: MIT */
/*
 * tenant.c - tenant identities and the per-namespace tables (tenant.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/tenant/tenant_int.h"

struct nkv_tenants *nkv_tenants_create(void)
{
	struct nkv_tenants *t = calloc(1, sizeof(*t));
	unsigned i;

	if (!t)
		return NULL;
	for (i = 0; i <= NKV_TENANT_NS_MAX; i++)
		pthread_mutex_init(&t->ns[i].lock, NULL);
	return t;
}

static void nkv_tenant_ns_free(struct nkv_tenant_ns *n)
{
	struct nkv_owner_key *k, *next;
	size_t i;

	for (i = 0; i < n->nb; i++)
		for (k = n->b[i]; k; k = next) {
			next = k->next;
			free(k);
		}
	for (i = 0; i < n->nacct; i++)
		free(n->acct[i]);
	free(n->b);
	free(n->acct);
	free(n->rules);
	free(n->quotas);
	pthread_mutex_destroy(&n->lock);
}

void nkv_tenants_destroy(struct nkv_tenants *t)
{
	unsigned i;

	if (!t)
		return;
	for (i = 0; i <= NKV_TENANT_NS_MAX; i++)
		nkv_tenant_ns_free(&t->ns[i]);
	free(t);
}

uint64_t nkv_tenant_uid(uint32_t uid)
{
	return NKV_TENANT_UID | uid;
}

/* FNV-1a over the NQN, 60 bits: stable across restarts, so an owner
 * persisted in a record names the same host when the target comes back. */
uint64_t nkv_tenant_nqn(const char *nqn)
{
	uint64_t h = 14695981039346656037ull;

	while (*nqn)
		h = (h ^ (uint8_t)*nqn++) * 1099511628211ull;
	return NKV_TENANT_NQN | (h & NKV_TENANT_ID_MASK) | 1;	/* never the kind alone */
}

void nkv_tenant_who_init(struct nkv_tenant_who *who)
{
	if (who->hostnqn[0])
		who->id = nkv_tenant_nqn(who->hostnqn);
	else
		who->id = who->has_cred ? nkv_tenant_uid(who->uid) : 0;
}

void nkv_tenant_name(uint64_t id, char *buf, size_t len)
{
	if (!id)
		snprintf(buf, len, "none");
	else if ((id >> NKV_TENANT_KIND_SHIFT) == 1)
		snprintf(buf, len, "uid:%u", (unsigned)(id & 0xffffffffu));
	else
		snprintf(buf, len, "nqn:%015llx", (unsigned long long)(id & NKV_TENANT_ID_MASK));
}

struct nkv_tenant_ns *nkv_tenant_ns(struct nkv_tenants *t, uint32_t nsid)
{
	return t && nsid && nsid <= NKV_TENANT_NS_MAX ? &t->ns[nsid] : NULL;
}

struct nkv_tenant_acct *nkv_tenant_acct_of(struct nkv_tenant_ns *n, uint64_t id,
					   const struct nkv_tenant_who *who)
{
	struct nkv_tenant_acct *a, **grown;
	unsigned i;

	for (i = 0; i < n->nacct; i++)
		if (n->acct[i]->id == id)
			break;
	a = i < n->nacct ? n->acct[i] : NULL;
	/* Full (hosts claiming NQN after NQN, say): a newcomer is counted as
	 * none, which keeps a slot of its own, so the table stays bounded. */
	if (!a && id && n->nacct >= NKV_TENANT_MAX)
		return nkv_tenant_acct_of(n, 0, NULL);
	if (!a) {
		if (n->nacct > NKV_TENANT_MAX)
			return NULL;
		grown = realloc(n->acct, (n->nacct + 1) * sizeof(*grown));
		if (!grown)
			return NULL;
		n->acct = grown;
		a = calloc(1, sizeof(*a));
		if (!a)
			return NULL;
		a->id = id;
		a->t_ms = nkv_be_now_ms();
		n->acct[n->nacct++] = a;
	}
	if (who && who->id == id && !a->has_gid && (who->has_cred || who->hostnqn[0])) {
		a->gid = who->gid;
		a->has_gid = who->has_cred;
		snprintf(a->nqn, sizeof(a->nqn), "%s", who->hostnqn);
		nkv_tenant_quota_resolve(n, a);
	}
	return a;
}

int nkv_tenant_subject_match(const struct nkv_tenant_subject *s, const struct nkv_tenant_acct *a)
{
	switch (s->by) {
	case NKV_TENANT_BY_UID:
		return a->id == nkv_tenant_uid(s->id);
	case NKV_TENANT_BY_GID:
		return a->has_gid && a->gid == s->id;
	case NKV_TENANT_BY_NQN:
		return a->nqn[0] && !strcmp(a->nqn, s->nqn);
	}
	return 0;
}

void nkv_tenant_tick(struct nkv_tenant_acct *a, uint64_t now_ms)
{
	double dt;

	if (now_ms <= a->t_ms)
		return;
	dt = (double)(now_ms - a->t_ms) / 1000.0;
	a->bs[0] += (double)a->bytes[0] * dt;
	a->bs[1] += (double)a->bytes[1] * dt;
	a->t_ms = now_ms;
}
