/* SPDX-License-Identifier: MIT */
/*
 * namespace.c - namespace_list, namespace_set, and namespace_add and
 * namespace_remove, which wait for Asynchronous Event Requests (issue
 * 46's second part) and say so.
 *
 * A backend's counters (keys_used, bytes_used, evictions) may be read
 * from any thread (backend.h: SIGUSR1's stats line reads them from
 * main's); its limits are fixed at create.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "target/rpc/target.h"

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

/*
 * No backend can change its limits while it serves: mem and rocksdb
 * size their maps and counters at create, rados its tiers. Refused,
 * naming what was asked, until a backend gains a way.
 */
static void nkv_rpc_namespace_set(struct nkv_rpc_call *call)
{
	static const char *const keys[] = { "capacity", "max_keys", "evict" };
	const struct nkv_rpc_ns *ns = nkv_rpc_ns_param(call);
	char asked[64] = "";
	unsigned i;

	if (!ns)
		return;
	for (i = 0; i < 3; i++)
		if (json_object_object_get_ex(call->params, keys[i], NULL))
			snprintf(asked + strlen(asked), sizeof(asked) - strlen(asked), "%s%s",
				 *asked ? ", " : "", keys[i]);
	if (!*asked) {
		nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "nothing to set: give capacity, "
			      "max_keys or evict");
		return;
	}
	nkv_rpc_error(call, NKV_RPC_ERR_UNSUPPORTED, "namespace %u: backend %s cannot change %s "
		      "while running (set at start: --capacity, --max-keys, --evict)", ns->nsid,
		      ns->be->ops->name, asked);
}

static void nkv_rpc_namespace_later(struct nkv_rpc_call *call)
{
	nkv_rpc_error(call, NKV_RPC_ERR_UNSUPPORTED, "not yet: namespaces added and removed "
		      "live need Asynchronous Event Request support (issue 46 part 2); "
		      "--ns-map sets them at start");
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

static const struct nkv_rpc_param nkv_rpc_ns_add_params[] = {
	{ "nsid", json_type_int, 1, "1..32" },
	{ "name", json_type_string, 1, "as --ns-map NAME" },
	{ "backend", json_type_string, 0, "a registered backend; default --backend" },
	{ "read_only", json_type_boolean, 0, "Store and Delete refused" },
	{ NULL, json_type_null, 0, NULL },
};

int nkv_rpc_namespace_register(void)
{
	int rc = nkv_rpc_register("namespace_list", "every namespace: backend, limits, counters",
				  NULL, nkv_rpc_namespace_list);

	if (!rc)
		rc = nkv_rpc_register("namespace_set", "change a namespace's limits (no backend "
				      "can yet: refused, naming them)", nkv_rpc_ns_set_params,
				      nkv_rpc_namespace_set);
	if (!rc)
		rc = nkv_rpc_register("namespace_add", "not yet (issue 46 part 2)",
				      nkv_rpc_ns_add_params, nkv_rpc_namespace_later);
	if (!rc)
		rc = nkv_rpc_register("namespace_remove", "not yet (issue 46 part 2)",
				      nkv_rpc_nsid_param, nkv_rpc_namespace_later);
	return rc;
}
