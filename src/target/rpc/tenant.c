/* SPDX-License-Identifier: MIT */
/*
 * tenant.c - access_set, access_default_set, access_list, quota_set and
 * metering_get: the tenants' rules and figures (target/tenant/tenant.h,
 * docs/target.md "Tenants"). Rules apply to each client's next command;
 * a change to who may see a namespace is also announced as a namespace
 * change (Namespace Attribute Changed), so clients read their lists again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/core/ns.h"
#include "target/rpc/target.h"
#include "target/tenant/tenant.h"

static struct nkv_tenants *nkv_rpc_tenants(struct nkv_rpc_call *call)
{
	const struct nkv_rpc_target *t = call->ctx;

	return nkv_subsys_tenants(t->ss);
}

/* uid, gid or hostnqn, exactly one, into *s: 0, or -1 with call failed. */
static int nkv_rpc_subject(struct nkv_rpc_call *call, struct nkv_tenant_subject *s)
{
	struct json_object *v;
	uint64_t uid = 0, gid = 0;
	int hu, hg, hn;

	memset(s, 0, sizeof(*s));
	hu = nkv_rpc_param_u64(call, "uid", 0, UINT32_MAX, &uid);
	hg = hu < 0 ? -1 : nkv_rpc_param_u64(call, "gid", 0, UINT32_MAX, &gid);
	if (hg < 0)
		return -1;
	hn = json_object_object_get_ex(call->params, "hostnqn", &v);
	if (hu + hg + hn != 1) {
		nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "give one of 'uid', 'gid' or 'hostnqn'");
		return -1;
	}
	s->by = hu ? NKV_TENANT_BY_UID : hg ? NKV_TENANT_BY_GID : NKV_TENANT_BY_NQN;
	s->id = (uint32_t)(hu ? uid : gid);
	if (!hn)
		return 0;
	if (!*json_object_get_string(v) || strlen(json_object_get_string(v)) >= sizeof(s->nqn)) {
		nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "param 'hostnqn' must be 1..%zu characters",
			      sizeof(s->nqn) - 1);
		return -1;
	}
	snprintf(s->nqn, sizeof(s->nqn), "%s", json_object_get_string(v));
	return 0;
}

static int nkv_rpc_access(struct nkv_rpc_call *call, enum nkv_access *a)
{
	struct json_object *v;

	json_object_object_get_ex(call->params, "access", &v);
	if (nkv_access_parse(json_object_get_string(v), a)) {
		nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "param 'access' must be rw, ro or none");
		return -1;
	}
	return 0;
}

static struct json_object *nkv_rpc_subject_json(const struct nkv_tenant_subject *s)
{
	struct json_object *o = json_object_new_object();

	if (s->by == NKV_TENANT_BY_NQN)
		json_object_object_add(o, "hostnqn", json_object_new_string(s->nqn));
	else
		json_object_object_add(o, s->by == NKV_TENANT_BY_UID ? "uid" : "gid",
				       json_object_new_uint64(s->id));
	return o;
}

static void nkv_rpc_access_set(struct nkv_rpc_call *call)
{
	const struct nkv_rpc_target *t = call->ctx;
	struct nkv_tenant_subject s;
	enum nkv_access a;
	uint64_t nsid;
	int rc;

	if (nkv_rpc_param_u64(call, "nsid", 1, NKV_TGT_MAX_NS, &nsid) < 0 ||
	    nkv_rpc_subject(call, &s) || nkv_rpc_access(call, &a))
		return;
	rc = nkv_access_set(nkv_rpc_tenants(call), (uint32_t)nsid, &s, a);
	if (rc) {
		nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "nsid %llu holds %d rules already",
			      (unsigned long long)nsid, NKV_TENANT_RULES);
		return;
	}
	nkv_tgt_ns_changed(t->ss, (uint32_t)nsid);
	call->result = nkv_rpc_subject_json(&s);
	json_object_object_add(call->result, "nsid", json_object_new_uint64(nsid));
	json_object_object_add(call->result, "access", json_object_new_string(nkv_access_name(a)));
}

static void nkv_rpc_access_default_set(struct nkv_rpc_call *call)
{
	const struct nkv_rpc_target *t = call->ctx;
	enum nkv_access a;
	uint64_t nsid;

	if (nkv_rpc_param_u64(call, "nsid", 1, NKV_TGT_MAX_NS, &nsid) < 0 ||
	    nkv_rpc_access(call, &a))
		return;
	nkv_access_default_set(nkv_rpc_tenants(call), (uint32_t)nsid, a);
	nkv_tgt_ns_changed(t->ss, (uint32_t)nsid);
	call->result = json_object_new_object();
	json_object_object_add(call->result, "nsid", json_object_new_uint64(nsid));
	json_object_object_add(call->result, "access", json_object_new_string(nkv_access_name(a)));
}

/* One namespace's rules; NULL when it has none and its default is rw. */
static struct json_object *nkv_rpc_access_ns(struct nkv_tenants *tn, uint32_t nsid)
{
	struct nkv_access_rule r[NKV_TENANT_RULES];
	struct json_object *o, *arr, *ro;
	enum nkv_access def;
	unsigned n = nkv_access_rules(tn, nsid, &def, r, NKV_TENANT_RULES), i;

	if (!n && def == NKV_ACCESS_RW)
		return NULL;
	o = json_object_new_object();
	arr = json_object_new_array();
	json_object_object_add(o, "nsid", json_object_new_uint64(nsid));
	json_object_object_add(o, "default", json_object_new_string(nkv_access_name(def)));
	for (i = 0; i < n && i < NKV_TENANT_RULES; i++) {
		ro = nkv_rpc_subject_json(&r[i].s);
		json_object_object_add(ro, "access", json_object_new_string(nkv_access_name(r[i].access)));
		json_object_array_add(arr, ro);
	}
	json_object_object_add(o, "rules", arr);
	return o;
}

static void nkv_rpc_access_list(struct nkv_rpc_call *call)
{
	struct nkv_tenants *tn = nkv_rpc_tenants(call);
	struct json_object *arr = json_object_new_array(), *o;
	uint64_t nsid;
	int one = nkv_rpc_param_u64(call, "nsid", 1, NKV_TGT_MAX_NS, &nsid);
	uint32_t i;

	if (one < 0) {
		json_object_put(arr);
		return;
	}
	for (i = one ? (uint32_t)nsid : 1; i <= (one ? nsid : NKV_TGT_MAX_NS); i++) {
		o = nkv_rpc_access_ns(tn, i);
		if (!o && one) {	/* asked for: shown, the default rw */
			o = json_object_new_object();
			json_object_object_add(o, "nsid", json_object_new_uint64(i));
			json_object_object_add(o, "default", json_object_new_string("rw"));
			json_object_object_add(o, "rules", json_object_new_array());
		}
		if (o)
			json_object_array_add(arr, o);
	}
	call->result = json_object_new_object();
	json_object_object_add(call->result, "namespaces", arr);
}

static void nkv_rpc_quota_set(struct nkv_rpc_call *call)
{
	struct nkv_tenant_subject s;
	uint64_t nsid, bytes = 0, keys = 0;
	int rc;

	if (nkv_rpc_param_u64(call, "nsid", 1, NKV_TGT_MAX_NS, &nsid) < 0 ||
	    nkv_rpc_subject(call, &s) ||
	    nkv_rpc_param_u64(call, "bytes", 0, UINT64_MAX - 1, &bytes) < 0 ||
	    nkv_rpc_param_u64(call, "keys", 0, UINT64_MAX - 1, &keys) < 0)
		return;
	rc = nkv_quota_set(nkv_rpc_tenants(call), (uint32_t)nsid, &s, bytes, keys);
	if (rc) {
		nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "nsid %llu holds %d quotas already",
			      (unsigned long long)nsid, NKV_TENANT_RULES);
		return;
	}
	call->result = nkv_rpc_subject_json(&s);
	json_object_object_add(call->result, "nsid", json_object_new_uint64(nsid));
	json_object_object_add(call->result, "bytes", json_object_new_uint64(bytes));
	json_object_object_add(call->result, "keys", json_object_new_uint64(keys));
}

static struct json_object *nkv_rpc_tiers(const double bs[2])
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "durable", json_object_new_double(bs[0]));
	json_object_object_add(o, "ttl", json_object_new_double(bs[1]));
	return o;
}

static struct json_object *nkv_rpc_usage_json(const struct nkv_tenant_usage *u)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "tenant", json_object_new_string(u->name));
	json_object_object_add(o, "bytes", json_object_new_uint64(u->bytes));
	json_object_object_add(o, "keys", json_object_new_uint64(u->keys));
	json_object_object_add(o, "quota_bytes", json_object_new_uint64(u->quota_bytes));
	json_object_object_add(o, "quota_keys", json_object_new_uint64(u->quota_keys));
	json_object_object_add(o, "byte_seconds", nkv_rpc_tiers(u->byte_seconds));
	json_object_object_add(o, "bytes_in", json_object_new_uint64(u->bytes_in));
	json_object_object_add(o, "bytes_out", json_object_new_uint64(u->bytes_out));
	json_object_object_add(o, "denied", json_object_new_uint64(u->denied));
	json_object_object_add(o, "over_quota", json_object_new_uint64(u->over_quota));
	json_object_object_add(o, "evicted", json_object_new_uint64(u->evicted));
	return o;
}

static int nkv_rpc_usage_idle(const struct nkv_tenant_usage *u)
{
	return !u->bytes && !u->keys && !u->byte_seconds[0] && !u->byte_seconds[1] &&
	       !u->bytes_in && !u->bytes_out && !u->denied && !u->over_quota && !u->quota_bytes &&
	       !u->quota_keys;
}

/* One namespace's metering: its tenants that did anything, and the sums. */
static struct json_object *nkv_rpc_meter_ns(struct nkv_tenants *tn, uint32_t nsid,
					    struct nkv_tenant_usage *u)
{
	unsigned n = nkv_tenant_usage(tn, nsid, u, NKV_TENANT_MAX + 1), i;
	struct json_object *o = json_object_new_object(), *arr = json_object_new_array();
	double bs[2] = { 0, 0 };
	uint64_t bytes = 0;

	for (i = 0; i < n && i <= NKV_TENANT_MAX; i++) {
		if (nkv_rpc_usage_idle(&u[i]))
			continue;
		bs[0] += u[i].byte_seconds[0];
		bs[1] += u[i].byte_seconds[1];
		bytes += u[i].bytes;
		json_object_array_add(arr, nkv_rpc_usage_json(&u[i]));
	}
	json_object_object_add(o, "nsid", json_object_new_uint64(nsid));
	json_object_object_add(o, "bytes", json_object_new_uint64(bytes));
	json_object_object_add(o, "byte_seconds", nkv_rpc_tiers(bs));
	json_object_object_add(o, "tenants", arr);
	return o;
}

static void nkv_rpc_metering_get(struct nkv_rpc_call *call)
{
	struct nkv_rpc_target *t = call->ctx;
	struct nkv_tenant_usage *u = calloc(NKV_TENANT_MAX + 1, sizeof(*u));
	struct nkv_rpc_ns ns[NKV_TGT_MAX_NS];
	struct json_object *arr;
	uint64_t nsid;
	int one = nkv_rpc_param_u64(call, "nsid", 1, NKV_TGT_MAX_NS, &nsid);
	unsigned n, i;

	if (!u) {
		nkv_rpc_error(call, NKV_RPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	if (one < 0) {
		free(u);
		return;
	}
	if (one && !nkv_rpc_ns_find(t, (uint32_t)nsid)) {
		nkv_rpc_error(call, NKV_RPC_ERR_NOT_FOUND, "no namespace %llu",
			      (unsigned long long)nsid);
		free(u);
		return;
	}
	arr = json_object_new_array();
	n = nkv_rpc_ns_snapshot(t, ns);
	for (i = 0; i < n; i++)
		if (!one || ns[i].nsid == nsid)
			json_object_array_add(arr, nkv_rpc_meter_ns(nkv_rpc_tenants(call), ns[i].nsid, u));
	free(u);
	call->result = json_object_new_object();
	json_object_object_add(call->result, "namespaces", arr);
}

static const struct nkv_rpc_param nkv_rpc_access_set_params[] = {
	{ "nsid", json_type_int, 1, "the namespace (1..32; attached or not)" },
	{ "uid", json_type_int, 0, "a vfio-user client's uid (SO_PEERCRED)" },
	{ "gid", json_type_int, 0, "a vfio-user client's gid, where no uid rule applies" },
	{ "hostnqn", json_type_string, 0, "an NVMe/TCP host NQN (self-asserted)" },
	{ "access", json_type_string, 1, "rw, ro or none" },
	{ NULL, json_type_null, 0, NULL },
};

static const struct nkv_rpc_param nkv_rpc_access_default_params[] = {
	{ "nsid", json_type_int, 1, "the namespace (1..32)" },
	{ "access", json_type_string, 1, "rw (the default), ro or none" },
	{ NULL, json_type_null, 0, NULL },
};

static const struct nkv_rpc_param nkv_rpc_nsid_params[] = {
	{ "nsid", json_type_int, 0, "one namespace; all when absent" },
	{ NULL, json_type_null, 0, NULL },
};

static const struct nkv_rpc_param nkv_rpc_quota_params[] = {
	{ "nsid", json_type_int, 1, "the namespace (1..32)" },
	{ "uid", json_type_int, 0, "a vfio-user client's uid" },
	{ "gid", json_type_int, 0, "a gid: each member uid gets this quota" },
	{ "hostnqn", json_type_string, 0, "an NVMe/TCP host NQN" },
	{ "bytes", json_type_int, 0, "bytes it may own (as capacity counts them); 0: no limit" },
	{ "keys", json_type_int, 0, "keys it may own; 0: no limit" },
	{ NULL, json_type_null, 0, NULL },
};

int nkv_rpc_tenant_register(void)
{
	static const struct {
		const char *name, *summary;
		const struct nkv_rpc_param *params;
		nkv_rpc_handler fn;
	} m[] = {
		{ "access_set", "who may use a namespace: a uid, gid or host NQN gets rw, ro or none",
		  nkv_rpc_access_set_params, nkv_rpc_access_set },
		{ "access_default_set", "a namespace's access for whom no rule names",
		  nkv_rpc_access_default_params, nkv_rpc_access_default_set },
		{ "access_list", "the access rules of the namespaces that have any",
		  nkv_rpc_nsid_params, nkv_rpc_access_list },
		{ "quota_set", "bytes and keys a tenant may own in a shared namespace",
		  nkv_rpc_quota_params, nkv_rpc_quota_set },
		{ "metering_get", "byte-seconds stored (durable, ttl) and bytes moved, per tenant",
		  nkv_rpc_nsid_params, nkv_rpc_metering_get },
	};
	unsigned i;
	int rc = 0;

	for (i = 0; i < sizeof(m) / sizeof(m[0]) && !rc; i++)
		rc = nkv_rpc_register(m[i].name, m[i].summary, m[i].params, m[i].fn);
	return rc;
}
