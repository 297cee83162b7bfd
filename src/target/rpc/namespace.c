/* SPDX-License-Identifier: MIT */
/*
 * namespace.c - namespace_list, namespace_set, namespace_add (a backend
 * created and attached while controllers serve, core/ns.h), and
 * namespace_remove (detached once its commands in flight finish, closed).
 *
 * The table's entries never move: a backend may keep pointers into its
 * entry (rados keeps conf->ns_name). A removed one is cleared (nsid 0)
 * and reused by the next add.
 *
 * A backend's counters (keys_used, bytes_used, evictions) may be read
 * from any thread (backend.h: SIGUSR1's stats line reads them from
 * main's); its limits change only through namespace_set (set_limits).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/core/ns.h"
#include "target/rpc/target.h"

unsigned nkv_rpc_ns_snapshot(struct nkv_rpc_target *t, struct nkv_rpc_ns *out)
{
	unsigned i, n;

	pthread_mutex_lock(&t->lock);
	for (i = n = 0; i < t->nns; i++) {
		if (!t->ns[i].nsid)
			continue;	/* removed */
		out[n] = (struct nkv_rpc_ns){ .nsid = t->ns[i].nsid, .be = t->ns[i].be };
		memcpy(out[n++].name, t->ns[i].name, sizeof(out[i].name));
	}
	pthread_mutex_unlock(&t->lock);
	return n;
}

void nkv_rpc_target_free(struct nkv_rpc_target *t)
{
	unsigned i, j;

	for (i = 0; i < t->nns; i++)
		for (j = 0; j < 2 * NKV_RPC_NS_PARAMS; j++)
			free(t->ns[i].strings[j]);
}

const struct nkv_rpc_ns *nkv_rpc_ns_find(const struct nkv_rpc_target *t, uint32_t nsid)
{
	unsigned i;

	for (i = 0; i < t->nns; i++)
		if (t->ns[i].nsid == nsid)
			return &t->ns[i];
	return NULL;
}

static void nkv_rpc_add_u64(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

struct json_object *nkv_rpc_ns_json(const struct nkv_rpc_ns *ns)
{
	struct json_object *o = json_object_new_object();
	struct nkv_be *be = ns->be;
	int kv = be->csi != NKV_CSI_NVM;

	nkv_rpc_add_u64(o, "nsid", ns->nsid);
	json_object_object_add(o, "name", json_object_new_string(ns->name));
	json_object_object_add(o, "backend", json_object_new_string(be->ops->name));
	json_object_object_add(o, "csi", json_object_new_string(kv ? "kv" : "nvm"));
	json_object_object_add(o, "read_only", json_object_new_boolean(be->read_only));
	nkv_rpc_add_u64(o, "keys", be->ops->keys_used(be));
	nkv_rpc_add_u64(o, "bytes", be->ops->bytes_used(be));
	nkv_rpc_add_u64(o, "evictions", be->ops->evictions ? be->ops->evictions(be) : 0);
	/* as the backend reports them: bytes (KV) or blocks (NVM) */
	nkv_rpc_add_u64(o, "capacity", be->capacity);
	if (kv) {
		nkv_rpc_add_u64(o, "max_value", be->max_value);
		nkv_rpc_add_u64(o, "max_keys", be->max_keys);
		json_object_object_add(o, "evict", json_object_new_string(be->evict ? "lru"
										    : "none"));
	} else {
		nkv_rpc_add_u64(o, "block_size", be->block_size);
	}
	return o;
}

static void nkv_rpc_namespace_list(struct nkv_rpc_call *call)
{
	const struct nkv_rpc_target *t = call->ctx;
	struct json_object *arr = json_object_new_array();
	unsigned i;

	for (i = 0; i < t->nns; i++)
		if (t->ns[i].nsid)
			json_object_array_add(arr, nkv_rpc_ns_json(&t->ns[i]));
	call->result = arr;
}

/* The namespace params' nsid names, or NULL with call failed. */
static const struct nkv_rpc_ns *nkv_rpc_ns_param(struct nkv_rpc_call *call)
{
	const struct nkv_rpc_ns *ns;
	uint64_t nsid;

	if (nkv_rpc_param_u64(call, "nsid", 1, UINT32_MAX, &nsid) < 0)
		return NULL;
	ns = nkv_rpc_ns_find(call->ctx, (uint32_t)nsid);
	if (!ns)
		nkv_rpc_error(call, NKV_RPC_ERR_NOT_FOUND, "no namespace %llu (namespace_list "
			      "lists them)", (unsigned long long)nsid);
	return ns;
}

/* namespace_set's params into l: 0, or -1 with call failed. */
static int nkv_rpc_limits_param(struct nkv_rpc_call *call, struct nkv_be_limits *l)
{
	struct json_object *ev;
	uint64_t v;
	int rc;

	*l = (struct nkv_be_limits){ .evict = -1 };
	rc = nkv_rpc_param_u64(call, "capacity", 1, UINT64_MAX, &l->capacity);
	if (rc >= 0)
		rc = nkv_rpc_param_u64(call, "max_keys", 0, UINT32_MAX, &v);
	if (rc < 0)
		return -1;
	if (rc > 0) {
		l->set_max_keys = 1;
		l->max_keys = (uint32_t)v;
	}
	if (json_object_object_get_ex(call->params, "evict", &ev)) {
		const char *e = json_object_get_string(ev);

		if (strcmp(e, "lru") && strcmp(e, "none")) {
			nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "evict: \"%s\" is neither "
				      "\"lru\" nor \"none\"", e);
			return -1;
		}
		l->evict = !strcmp(e, "lru");
	}
	if (!l->capacity && !l->set_max_keys && l->evict < 0) {
		nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "nothing to set: give capacity, "
			      "max_keys or evict");
		return -1;
	}
	return 0;
}

/*
 * The backend changes its limits (backend.h set_limits: Stores from now
 * on see them, nothing stored is removed by it); then every controller's
 * clients are told, as Identify Namespace's NSZE, NCAP and MNK changed.
 */
static void nkv_rpc_namespace_set(struct nkv_rpc_call *call)
{
	struct nkv_rpc_target *t = call->ctx;
	const struct nkv_rpc_ns *ns = nkv_rpc_ns_param(call);
	struct nkv_be_limits l;
	char err[200] = "";
	int rc;

	if (!ns || nkv_rpc_limits_param(call, &l))
		return;
	if (ns->be->csi == NKV_CSI_NVM || !ns->be->ops->set_limits) {
		nkv_rpc_error(call, NKV_RPC_ERR_UNSUPPORTED, "namespace %u: backend %s cannot "
			      "change its limits while running (%s)", ns->nsid,
			      ns->be->ops->name, ns->be->csi == NKV_CSI_NVM ? "an NVM namespace"
			      : "they are its store's: the pool's quotas, the remote's");
		return;
	}
	rc = ns->be->ops->set_limits(ns->be, &l, err, sizeof(err));
	if (rc) {
		nkv_rpc_error(call, rc == -ERANGE ? NKV_RPC_INVALID_PARAMS : NKV_RPC_ERR_BACKEND,
			      "namespace %u: %s", ns->nsid, err);
		return;
	}
	nkv_be_log(NKV_BE_LOG_INFO, "event=namespace_set nsid=%u capacity=%llu max_keys=%u "
		   "evict=%s", ns->nsid, (unsigned long long)ns->be->capacity, ns->be->max_keys,
		   ns->be->evict ? "lru" : "none");
	nkv_tgt_ns_changed(t->ss, ns->nsid);
	call->result = nkv_rpc_ns_json(ns);
}

/* Commands in flight a removal waits for: a backend answers each within
 * its own timeout (backend.h cmd_timeout_ms), well below this. */
#define NKV_RPC_NS_DRAIN_MS 30000u

static void nkv_rpc_ns_clear(struct nkv_rpc_ns *ns);

/*
 * Detach, wait for the commands in flight, close the backend, tell the
 * clients (core/ns.h); then the entry is cleared, under the lock the
 * stats line reads it with (which holds the backend itself meanwhile).
 */
static void nkv_rpc_namespace_remove(struct nkv_rpc_call *call)
{
	struct nkv_rpc_target *t = call->ctx;
	const struct nkv_rpc_ns *found = nkv_rpc_ns_param(call);
	struct nkv_rpc_ns *ns;
	uint32_t nsid;
	int rc;

	if (!found)
		return;
	ns = &t->ns[found - t->ns];
	nsid = ns->nsid;
	rc = nkv_subsys_ns_remove(t->ss, nsid, NKV_RPC_NS_DRAIN_MS);
	if (rc == -ETIMEDOUT) {
		nkv_rpc_error(call, NKV_RPC_ERR_BUSY, "namespace %u: commands in flight did not "
			      "finish within %u ms; it serves on", nsid, NKV_RPC_NS_DRAIN_MS);
		return;
	}
	if (rc) {
		nkv_rpc_error(call, NKV_RPC_ERR_NOT_FOUND, "namespace %u cannot be removed: %s",
			      nsid, strerror(-rc));
		return;
	}
	pthread_mutex_lock(&t->lock);
	nkv_rpc_ns_clear(ns);
	pthread_mutex_unlock(&t->lock);
	call->result = json_object_new_object();
	json_object_object_add(call->result, "nsid", json_object_new_uint64(nsid));
}

static const struct nkv_rpc_param nkv_rpc_ns_add_params[] = {
	{ "nsid", json_type_int, 1, "1..32, not in use" },
	{ "name", json_type_string, 1, "as --ns-map NAME: the RADOS namespace on rados, a label on mem" },
	{ "backend", json_type_string, 0, "a registered backend; default nkv-target's --backend" },
	{ "read_only", json_type_boolean, 0, "Store and Delete refused (82h)" },
	{ "capacity", json_type_int, 0, "bytes; default nkv-target's --capacity" },
	{ "max_value", json_type_int, 0, "largest value; default --max-value, within the MDTS "
	  "controllers advertise" },
	{ "max_keys", json_type_int, 0, "most keys; default --max-keys" },
	{ "*", json_type_string, 0, "the backend's own options by name, as its --NAME VALUE "
	  "(evict, pool, db, ...)" },
	{ NULL, json_type_null, 0, NULL },
};

/* The backend options namespace_add was given (the keys its table does
 * not name), copied into ns: kept while the backend lives. 0, or -1
 * with call failed. */
static int nkv_rpc_ns_options(struct nkv_rpc_call *call, const struct nkv_rpc_param *known,
			      struct nkv_rpc_ns *ns, size_t *n)
{
	const struct nkv_rpc_param *p;

	*n = 0;
	json_object_object_foreach(call->params, key, val) {
		for (p = known; p->name && strcmp(p->name, key); p++)
			;
		if (p->name && strcmp(p->name, "*"))
			continue;	/* one of namespace_add's own */
		if (*n == NKV_RPC_NS_PARAMS) {
			nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "more than %d backend options",
				      NKV_RPC_NS_PARAMS);
			return -1;
		}
		ns->strings[2 * *n] = strdup(key);
		ns->strings[2 * *n + 1] = strdup(json_object_get_string(val));
		ns->params[*n] = (struct nkv_be_param){ ns->strings[2 * *n],
							ns->strings[2 * *n + 1] };
		(*n)++;
	}
	return 0;
}

/* The conf namespace_add asks of its backend: the target's defaults,
 * what the call gives, its options in ns. 0, or -1 with call failed. */
static int nkv_rpc_ns_conf(struct nkv_rpc_call *call, const struct nkv_rpc_target *t,
			   struct nkv_rpc_ns *ns, size_t nopts, struct nkv_be_conf *c)
{
	uint64_t cap = t->capacity, mv = t->max_value, mk = t->max_keys;
	struct json_object *v;

	if (nkv_rpc_param_u64(call, "capacity", 1, UINT64_MAX >> 4, &cap) < 0 ||
	    nkv_rpc_param_u64(call, "max_value", 1, NKV_TGT_MAX_VALUE, &mv) < 0 ||
	    nkv_rpc_param_u64(call, "max_keys", 0, UINT32_MAX, &mk) < 0)
		return -1;
	*c = (struct nkv_be_conf){ .size = sizeof(*c), .ns_name = ns->name, .nsid = ns->nsid,
				   .capacity = cap,
				   .max_value = (uint32_t)mv, .max_keys = (uint32_t)mk,
				   .params = ns->params, .nparams = nopts };
	if (json_object_object_get_ex(call->params, "read_only", &v))
		c->read_only = json_object_get_boolean(v);
	return 0;
}

/* Create the backend and attach it as ns->nsid: 0, or -1 with call failed. */
static int nkv_rpc_ns_attach(struct nkv_rpc_call *call, const struct nkv_rpc_target *t,
			     const char *type, const struct nkv_be_conf *c, struct nkv_rpc_ns *ns)
{
	char err[256] = "";
	int rc;

	if (nkv_be_conf_check(type, c, err, sizeof(err))) {
		nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "%s", err);
		return -1;
	}
	ns->be = nkv_be_create(type, c, err, sizeof(err));
	if (!ns->be) {
		nkv_rpc_error(call, NKV_RPC_ERR_BACKEND, "namespace %u: %s", ns->nsid, err);
		return -1;
	}
	rc = nkv_subsys_ns_attach(t->ss, ns->nsid, ns->be);
	if (!rc)
		return 0;
	ns->be->ops->destroy(ns->be);
	ns->be = NULL;
	if (rc == -EMSGSIZE)
		nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "max_value %u does not fit the transfer "
			      "size the running controllers advertise (MDTS %u: at most %u)",
			      c->max_value, nkv_subsys_mdts(t->ss),
			      (NKV_PAGE_SIZE << nkv_subsys_mdts(t->ss)) - NKV_TGT_KEY_HEAD);
	else
		nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "namespace %u cannot be attached: %s",
			      ns->nsid, strerror(-rc));
	return -1;
}


/* Give back what a failed add kept in the next free entry. */
static void nkv_rpc_ns_clear(struct nkv_rpc_ns *ns)
{
	unsigned j;

	for (j = 0; j < 2 * NKV_RPC_NS_PARAMS; j++)
		free(ns->strings[j]);
	memset(ns, 0, sizeof(*ns));
}

/* A free entry: one a removal cleared, else the next after the last (the
 * table holds NKV_TGT_MAX_NS and nsids are unique, so there is one). */
static struct nkv_rpc_ns *nkv_rpc_ns_free(struct nkv_rpc_target *t)
{
	unsigned i;

	for (i = 0; i < t->nns && t->ns[i].nsid; i++)
		;
	return &t->ns[i];
}

/*
 * The entry is filled in the table's next free slot before the backend
 * is created (its name and options must outlive the call), and counted
 * once attached. The backend is created on this thread: a rados one
 * joining its cluster holds the RPC server up to its connect timeout,
 * never a controller.
 */
static void nkv_rpc_namespace_add(struct nkv_rpc_call *call)
{
	struct nkv_rpc_target *t = call->ctx;
	struct nkv_rpc_ns *ns = nkv_rpc_ns_free(t);
	struct json_object *v;
	struct nkv_be_conf c;
	const char *type = t->backend;
	uint64_t nsid;
	size_t nopts;

	if (nkv_rpc_param_u64(call, "nsid", 1, NKV_TGT_MAX_NS, &nsid) < 0)
		return;
	if (nkv_rpc_ns_find(t, (uint32_t)nsid)) {
		nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "nsid %llu is in use",
			      (unsigned long long)nsid);
		return;
	}
	json_object_object_get_ex(call->params, "name", &v);
	if (!*json_object_get_string(v) || strlen(json_object_get_string(v)) >= sizeof(ns->name)) {
		nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "param 'name' must be 1..%zu bytes",
			      sizeof(ns->name) - 1);
		return;
	}
	if (json_object_object_get_ex(call->params, "backend", &v))
		type = json_object_get_string(v);
	ns->nsid = (uint32_t)nsid;
	snprintf(ns->name, sizeof(ns->name), "%s", json_object_get_string(
		 json_object_object_get(call->params, "name")));
	if (nkv_rpc_ns_options(call, nkv_rpc_ns_add_params, ns, &nopts) ||
	    nkv_rpc_ns_conf(call, t, ns, nopts, &c) ||
	    nkv_rpc_ns_attach(call, t, type, &c, ns)) {
		nkv_rpc_ns_clear(ns);
		return;
	}
	pthread_mutex_lock(&t->lock);
	if (ns == &t->ns[t->nns])
		t->nns++;
	pthread_mutex_unlock(&t->lock);
	call->result = nkv_rpc_ns_json(ns);
}

static const struct nkv_rpc_param nkv_rpc_nsid_param[] = {
	{ "nsid", json_type_int, 1, "the namespace (namespace_list)" },
	{ NULL, json_type_null, 0, NULL },
};

static const struct nkv_rpc_param nkv_rpc_ns_set_params[] = {
	{ "nsid", json_type_int, 1, "the namespace (namespace_list)" },
	{ "capacity", json_type_int, 0, "bytes" },
	{ "max_keys", json_type_int, 0, "most keys; 0: capacity only" },
	{ "evict", json_type_string, 0, "eviction policy: none or lru" },
	{ NULL, json_type_null, 0, NULL },
};


int nkv_rpc_namespace_register(void)
{
	int rc = nkv_rpc_register("namespace_list", "every namespace: backend, limits, counters",
				  NULL, nkv_rpc_namespace_list);

	if (!rc)
		rc = nkv_rpc_register("namespace_set", "change a namespace's capacity, max_keys "
				      "or evict while it serves (clients told: Namespace "
				      "Attribute Changed)", nkv_rpc_ns_set_params,
				      nkv_rpc_namespace_set);
	if (!rc)
		rc = nkv_rpc_register("namespace_add", "create a backend and serve it as a new "
				      "namespace (clients told: Namespace Attribute Changed)",
				      nkv_rpc_ns_add_params, nkv_rpc_namespace_add);
	if (!rc)
		rc = nkv_rpc_register("namespace_remove", "stop serving a namespace: new commands "
				      "answered Invalid Namespace, those in flight finish, the "
				      "backend closed, clients told (Namespace Attribute Changed)",
				      nkv_rpc_nsid_param, nkv_rpc_namespace_remove);
	return rc;
}
