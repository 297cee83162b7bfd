/* SPDX-License-Identifier: MIT */
/*
 * tenant.h - who may reach which namespace, what each tenant owns there,
 * and what it stored over time (issue 48; docs/target.md "Tenants").
 *
 *   tenant.c  identities and the per-namespace tables: rules, tenants
 *   access.c  access rules (uid, gid, host NQN -> rw/ro/none) and refusals
 *   owners.c  key -> owner, per-owner bytes/keys, quotas, fair eviction
 *   meter.c   byte-seconds stored (durable / TTL'd), bytes moved
 *   opts.c    the same rules from nkv-target's options and config file
 *
 * A tenant is who a client is: a vfio-user connection's peer uid
 * (SO_PEERCRED; its gid too, for gid rules), an NVMe/TCP association's
 * host NQN (self-asserted: NQN rules are for trusted networks). Its id
 * is stable across restarts, so an owner persisted in a record means the
 * same tenant when the target comes back: the uid or a 60-bit hash of
 * the NQN, tagged with the kind. 0 is no tenant (an embedded target,
 * a record older than owners).
 *
 * Threading: every call takes the tenants' one mutex, except
 * nkv_tenants_gen() which a poll thread reads per command: rules change
 * on the RPC thread, which bumps gen after the change; a controller
 * whose cached gen differs recomputes its view (ctrl's access cache)
 * under the mutex. A namespace without rules costs one load and a
 * compare per command.
 */
#ifndef NKV_TGT_TENANT_H
#define NKV_TGT_TENANT_H

#include <stddef.h>
#include <stdint.h>

#define NKV_TENANT_KIND_SHIFT 60
#define NKV_TENANT_UID (1ull << NKV_TENANT_KIND_SHIFT)
#define NKV_TENANT_NQN (2ull << NKV_TENANT_KIND_SHIFT)
#define NKV_TENANT_ID_MASK ((1ull << NKV_TENANT_KIND_SHIFT) - 1)

#define NKV_TENANT_NS_MAX 32		/* = NKV_TGT_MAX_NS */
#define NKV_TENANT_RULES 64		/* rules per namespace */
#define NKV_TENANT_MAX 1024		/* tenants tracked per namespace (and
					 * none, which takes those past it) */
#define NKV_TENANT_NAME 256		/* "uid:1000", or a host NQN */

/* What a rule grants. rw is 0: a zeroed table is "everyone rw". */
enum nkv_access {
	NKV_ACCESS_RW = 0,
	NKV_ACCESS_RO = 1,
	NKV_ACCESS_NONE = 2,
};

/* What a rule or a quota is keyed by. */
enum nkv_tenant_key {
	NKV_TENANT_BY_UID = 1,
	NKV_TENANT_BY_GID = 2,
	NKV_TENANT_BY_NQN = 3,
};

/* One client's identity, as its transport learnt it. */
struct nkv_tenant_who {
	uint64_t id;		/* nkv_tenant_id(); 0: none */
	int has_cred;		/* uid and gid are the peer's (vfio-user) */
	uint32_t uid;
	uint32_t gid;
	char hostnqn[256];	/* NVMe/TCP; "" otherwise */
};

/* A rule's subject: uid or gid (id), or a host NQN (nqn). */
struct nkv_tenant_subject {
	enum nkv_tenant_key by;
	uint32_t id;
	char nqn[256];
};

struct nkv_tenants;

struct nkv_tenants *nkv_tenants_create(void);
void nkv_tenants_destroy(struct nkv_tenants *t);

/* The tenant id of a uid or a host NQN; who->id from who's fields
 * (a host NQN wins over credentials: a TCP association has no peer
 * uid of meaning). */
uint64_t nkv_tenant_uid(uint32_t uid);
uint64_t nkv_tenant_nqn(const char *nqn);
void nkv_tenant_who_init(struct nkv_tenant_who *who);
/* "uid:1000", or the NQN, or "none" (id 0) into buf. */
void nkv_tenant_name(uint64_t id, char *buf, size_t len);

/* Rules changed so far: a poll thread's cached view is stale when this
 * moved. Acquire; any thread. */
static inline uint64_t nkv_tenants_gen(const struct nkv_tenants *t)
{
	return __atomic_load_n((const uint64_t *)t, __ATOMIC_ACQUIRE);
}

/* ---- access.c ---- */

/* Set (or replace) subject's access to nsid; a gid rule applies where
 * no uid rule does, a default where neither (nor an NQN rule) does.
 * 0; -EINVAL; -ENOSPC past NKV_TENANT_RULES. */
int nkv_access_set(struct nkv_tenants *t, uint32_t nsid, const struct nkv_tenant_subject *s,
		   enum nkv_access a);
int nkv_access_default_set(struct nkv_tenants *t, uint32_t nsid, enum nkv_access a);
/* who's access to nsid now. */
enum nkv_access nkv_access_of(struct nkv_tenants *t, uint32_t nsid,
			      const struct nkv_tenant_who *who);
const char *nkv_access_name(enum nkv_access a);
/* "rw", "ro", "none": 0 and *a; -EINVAL. */
int nkv_access_parse(const char *s, enum nkv_access *a);

/* A command refused for access (Invalid Namespace): counted per (nsid,
 * tenant), logged at most once a second (event=access_denied, with the
 * refusals not logged since). */
void nkv_access_denied(struct nkv_tenants *t, uint32_t nsid, const struct nkv_tenant_who *who);

/* One rule as access_list and the config dump show it. */
struct nkv_access_rule {
	struct nkv_tenant_subject s;
	enum nkv_access access;
};
/* nsid's default and up to max of its rules into out: how many rules. */
unsigned nkv_access_rules(struct nkv_tenants *t, uint32_t nsid, enum nkv_access *def,
			  struct nkv_access_rule *out, unsigned max);

/* ---- owners.c ---- */

/* A tenant's quota in nsid (0 = no limit, each of bytes and keys);
 * applies to the tenants it matches from their next Store. 0; -EINVAL;
 * -ENOSPC. */
int nkv_quota_set(struct nkv_tenants *t, uint32_t nsid, const struct nkv_tenant_subject *s,
		  uint64_t bytes, uint64_t keys);
/* Make who known in nsid (its quota resolved from the rules) and return
 * its entry, which lives as long as t (NULL: past NKV_TENANT_MAX or no
 * memory): the core calls it before who's first command there, so a
 * backend finds the owner of an op, and keeps it for the bytes moved. */
struct nkv_tenant_acct;
struct nkv_tenant_acct *nkv_tenant_enter(struct nkv_tenants *t, uint32_t nsid,
					 const struct nkv_tenant_who *who);

/* ---- meter.c ---- */

/* One tenant of one namespace, as metering_get and the metrics show it. */
struct nkv_tenant_usage {
	uint64_t id;
	char name[NKV_TENANT_NAME];
	uint64_t bytes;			/* owned now (both tiers) */
	uint64_t keys;
	uint64_t quota_bytes, quota_keys;	/* 0: none */
	double byte_seconds[2];		/* [0] durable, [1] TTL'd */
	uint64_t bytes_in, bytes_out;	/* moved by its commands, host -> target and back */
	uint64_t denied;		/* commands refused for access */
	uint64_t over_quota;		/* Stores answered 81h for its quota */
	uint64_t evicted;		/* its keys evicted to make room */
};
/* nsid's tenants up to max into out, byte-seconds integrated to now
 * (nkv_be_now_ms()): how many there are. */
unsigned nkv_tenant_usage(struct nkv_tenants *t, uint32_t nsid, struct nkv_tenant_usage *out,
			  unsigned max);
/* Bytes moved by a command (the core, on success): two relaxed atomic
 * adds, any thread. a NULL: nothing. */
void nkv_tenant_moved(struct nkv_tenant_acct *a, uint64_t in, uint64_t out);
/* Forget what nsid stored (its namespace was removed): keys and bytes
 * to 0, integrated up to now. Counters stay. */
void nkv_tenant_ns_reset(struct nkv_tenants *t, uint32_t nsid);

/* ---- opts.c ---- */

/* nkv-target's --access, --access-default or --quota (opt without the
 * dashes) of value "nsid=1 uid=1000 access=ro" (the RPC params' keys,
 * blank-separated): applied to t, or only checked when t is NULL. 0, or
 * -EINVAL with err said (-ENOSPC: too many rules). */
int nkv_tenant_opt(struct nkv_tenants *t, const char *opt, const char *value, char *err,
		   size_t len);

#endif /* NKV_TGT_TENANT_H */
