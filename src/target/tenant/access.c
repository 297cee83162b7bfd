/* SPDX-License-Identifier: MIT */
/*
 * access.c - access rules per namespace and refusals (tenant.h).
 *
 * Resolution: a uid rule for who's uid, else an NQN rule for its host
 * NQN, else a gid rule for its gid, else the namespace's default (rw
 * unless set). A rule set again replaces the one before.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "target/tenant/tenant_int.h"

const char *nkv_access_name(enum nkv_access a)
{
	return a == NKV_ACCESS_RO ? "ro" : a == NKV_ACCESS_NONE ? "none" : "rw";
}

int nkv_access_parse(const char *s, enum nkv_access *a)
{
	if (!strcmp(s, "rw"))
		*a = NKV_ACCESS_RW;
	else if (!strcmp(s, "ro"))
		*a = NKV_ACCESS_RO;
	else if (!strcmp(s, "none"))
		*a = NKV_ACCESS_NONE;
	else
		return -EINVAL;
	return 0;
}

static int nkv_subject_eq(const struct nkv_tenant_subject *x, const struct nkv_tenant_subject *y)
{
	return x->by == y->by && (x->by == NKV_TENANT_BY_NQN ? !strcmp(x->nqn, y->nqn) : x->id == y->id);
}

static int nkv_subject_ok(const struct nkv_tenant_subject *s)
{
	if (s->by == NKV_TENANT_BY_NQN)
		return s->nqn[0] && memchr(s->nqn, 0, sizeof(s->nqn));
	return s->by == NKV_TENANT_BY_UID || s->by == NKV_TENANT_BY_GID;
}

/* Rules changed: poll threads recompute their view at their next command. */
static void nkv_access_bump(struct nkv_tenants *t)
{
	__atomic_add_fetch(&t->gen, 1, __ATOMIC_RELEASE);
}

int nkv_access_set(struct nkv_tenants *t, uint32_t nsid, const struct nkv_tenant_subject *s,
		   enum nkv_access a)
{
	struct nkv_tenant_ns *n = nkv_tenant_ns(t, nsid);
	struct nkv_access_rule *grown;
	unsigned i;
	int rc = 0;

	if (!n || !s || !nkv_subject_ok(s) || a > NKV_ACCESS_NONE)
		return -EINVAL;
	pthread_mutex_lock(&n->lock);
	for (i = 0; i < n->nrules && !nkv_subject_eq(&n->rules[i].s, s); i++)
		;
	if (i == n->nrules) {
		grown = n->nrules == NKV_TENANT_RULES ? NULL
			: realloc(n->rules, (n->nrules + 1) * sizeof(*grown));
		if (grown) {
			n->rules = grown;
			n->rules[n->nrules++].s = *s;
		} else {
			rc = -ENOSPC;
		}
	}
	if (!rc)
		n->rules[i].access = a;
	pthread_mutex_unlock(&n->lock);
	if (!rc)
		nkv_access_bump(t);
	return rc;
}

int nkv_access_default_set(struct nkv_tenants *t, uint32_t nsid, enum nkv_access a)
{
	struct nkv_tenant_ns *n = nkv_tenant_ns(t, nsid);

	if (!n || a > NKV_ACCESS_NONE)
		return -EINVAL;
	pthread_mutex_lock(&n->lock);
	n->def = a;
	pthread_mutex_unlock(&n->lock);
	nkv_access_bump(t);
	return 0;
}

/* The first rule of kind by that names who; -1 when none. */
static int nkv_access_find(const struct nkv_tenant_ns *n, enum nkv_tenant_key by,
			   const struct nkv_tenant_who *who)
{
	const struct nkv_tenant_subject *s;
	unsigned i;

	for (i = 0; i < n->nrules; i++) {
		s = &n->rules[i].s;
		if (s->by != by)
			continue;
		if ((by == NKV_TENANT_BY_UID && who->has_cred && s->id == who->uid) ||
		    (by == NKV_TENANT_BY_GID && who->has_cred && s->id == who->gid) ||
		    (by == NKV_TENANT_BY_NQN && who->hostnqn[0] && !strcmp(s->nqn, who->hostnqn)))
			return (int)n->rules[i].access;
	}
	return -1;
}

enum nkv_access nkv_access_of(struct nkv_tenants *t, uint32_t nsid,
			      const struct nkv_tenant_who *who)
{
	static const enum nkv_tenant_key order[] = {
		NKV_TENANT_BY_UID, NKV_TENANT_BY_NQN, NKV_TENANT_BY_GID,
	};
	struct nkv_tenant_ns *n = nkv_tenant_ns(t, nsid);
	enum nkv_access a;
	unsigned i;
	int r = -1;

	if (!n)
		return NKV_ACCESS_RW;	/* no such namespace: the core answers */
	pthread_mutex_lock(&n->lock);
	for (i = 0; i < 3 && r < 0; i++)
		r = nkv_access_find(n, order[i], who);
	a = r < 0 ? n->def : (enum nkv_access)r;
	pthread_mutex_unlock(&n->lock);
	return a;
}

void nkv_access_denied(struct nkv_tenants *t, uint32_t nsid, const struct nkv_tenant_who *who)
{
	struct nkv_tenant_ns *n = nkv_tenant_ns(t, nsid);
	struct nkv_tenant_acct *a;
	uint64_t now = nkv_be_now_ms(), quiet = 0, count = 0;
	int say = 0;
	char name[64];

	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	a = nkv_tenant_acct_of(n, who->id, who);
	if (a)
		count = ++a->denied;
	if (!n->log_last_ms || now - n->log_last_ms >= 1000) {
		say = 1;
		quiet = n->log_quiet;
		n->log_quiet = 0;
		n->log_last_ms = now ? now : 1;
	} else {
		n->log_quiet++;
	}
	pthread_mutex_unlock(&n->lock);
	if (!say)
		return;
	nkv_tenant_name(who->id, name, sizeof(name));
	nkv_be_log(NKV_BE_LOG_WARN, "event=access_denied nsid=%u tenant=%s%s%s denied=%llu "
		   "unlogged=%llu", nsid, name, who->hostnqn[0] ? " hostnqn=" : "", who->hostnqn,
		   (unsigned long long)count, (unsigned long long)quiet);
}

unsigned nkv_access_rules(struct nkv_tenants *t, uint32_t nsid, enum nkv_access *def,
			  struct nkv_access_rule *out, unsigned max)
{
	struct nkv_tenant_ns *n = nkv_tenant_ns(t, nsid);
	unsigned i, cnt;

	if (!n)
		return 0;
	pthread_mutex_lock(&n->lock);
	*def = n->def;
	cnt = n->nrules;
	for (i = 0; i < cnt && i < max; i++)
		out[i] = n->rules[i];
	pthread_mutex_unlock(&n->lock);
	return cnt;
}
