/* SPDX-License-Identifier: MIT */
/*
 * exec.c - exec_allow, exec_deny, exec_list: the Exec allowlist
 * (target/exec/exec.h, docs/exec.md) through the control socket. An
 * entry takes effect with the next Exec; a module already cached by its
 * digest stays cached (the digest is its identity).
 */
#include <errno.h>
#include <string.h>

#include "target/exec/exec.h"
#include "target/rpc/target.h"

/* A hex string param into out: its bytes, or -1 with call failed. */
static int nkv_rpc_exec_hex(struct nkv_rpc_call *call, const char *name, uint8_t *out,
			    size_t max)
{
	struct json_object *v;
	int n;

	json_object_object_get_ex(call->params, name, &v);
	n = nkv_exec_unhex(json_object_get_string(v), out, max);
	if (n <= 0) {
		nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "param '%s' must be hex, 1..%zu bytes",
			      name, max);
		return -1;
	}
	return n;
}

static int nkv_rpc_exec_ids(struct nkv_rpc_call *call, uint64_t *nsid, uint64_t *op_id)
{
	if (nkv_rpc_param_u64(call, "nsid", 1, UINT32_MAX, nsid) < 0 ||
	    nkv_rpc_param_u64(call, "op_id", 0, UINT32_MAX, op_id) < 0)
		return -1;
	return 0;
}

static struct json_object *nkv_rpc_exec_json(const struct nkv_exec_entry *e)
{
	struct json_object *o = json_object_new_object();
	char hex[2 * NKV_KEY_MAX + 1];

	json_object_object_add(o, "nsid", json_object_new_uint64(e->nsid));
	json_object_object_add(o, "op_id", json_object_new_uint64(e->op_id));
	nkv_exec_hex(e->digest, sizeof(e->digest), hex);
	json_object_object_add(o, "digest", json_object_new_string(hex));
	nkv_exec_hex(e->key, e->klen, hex);
	json_object_object_add(o, "key", json_object_new_string(hex));
	json_object_object_add(o, "max_instructions", json_object_new_uint64(e->caps.max_instructions));
	json_object_object_add(o, "max_memory", json_object_new_uint64(e->caps.max_memory));
	json_object_object_add(o, "max_output", json_object_new_uint64(e->caps.max_output));
	json_object_object_add(o, "max_wall_ms", json_object_new_uint64(e->caps.max_wall_ms));
	return o;
}

/* The caps params into e (absent: the defaults). 0, or -1 with call failed. */
static int nkv_rpc_exec_caps(struct nkv_rpc_call *call, struct nkv_exec_caps *c)
{
	uint64_t out = 0, wall = 0;

	if (nkv_rpc_param_u64(call, "max_instructions", 1, UINT64_MAX >> 1,
			      &c->max_instructions) < 0 ||
	    nkv_rpc_param_u64(call, "max_memory", 1, NKV_EXEC_MAX_MEMORY, &c->max_memory) < 0 ||
	    nkv_rpc_param_u64(call, "max_output", 1, UINT32_MAX, &out) < 0 ||
	    nkv_rpc_param_u64(call, "max_wall_ms", 1, NKV_EXEC_MAX_WALL_MS, &wall) < 0)
		return -1;
	c->max_output = (uint32_t)out;
	c->max_wall_ms = (uint32_t)wall;
	nkv_exec_caps_fill(c);
	return 0;
}

static void nkv_rpc_exec_allow(struct nkv_rpc_call *call)
{
	struct nkv_exec_entry e;
	uint64_t nsid = 0, op_id = 0;
	int n, rc;

	memset(&e, 0, sizeof(e));
	if (nkv_rpc_exec_ids(call, &nsid, &op_id) || nkv_rpc_exec_caps(call, &e.caps))
		return;
	n = nkv_rpc_exec_hex(call, "digest", e.digest, sizeof(e.digest));
	if (n < 0)
		return;
	if (n != NKV_EXEC_DIGEST_LEN) {
		nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "param 'digest' must be a SHA-256: "
			      "64 hex digits");
		return;
	}
	n = nkv_rpc_exec_hex(call, "key", e.key, sizeof(e.key));
	if (n < 0)
		return;
	e.klen = (uint32_t)n;
	e.nsid = (uint32_t)nsid;
	e.op_id = (uint32_t)op_id;
	rc = nkv_exec_allow(&e);
	if (rc) {
		nkv_rpc_error(call, rc == -ENOSPC ? NKV_RPC_ERR_UNSUPPORTED : NKV_RPC_INVALID_PARAMS,
			      "exec_allow: %s", strerror(-rc));
		return;
	}
	nkv_be_log(NKV_BE_LOG_INFO, "event=exec_allow nsid=%u op_id=%u", e.nsid, e.op_id);
	nkv_exec_lookup(e.nsid, e.op_id, &e);
	call->result = nkv_rpc_exec_json(&e);
}

static void nkv_rpc_exec_deny(struct nkv_rpc_call *call)
{
	uint64_t nsid = 0, op_id = 0;

	if (nkv_rpc_exec_ids(call, &nsid, &op_id))
		return;
	if (nkv_exec_deny((uint32_t)nsid, (uint32_t)op_id)) {
		nkv_rpc_error(call, NKV_RPC_ERR_NOT_FOUND, "no exec entry for nsid %llu op_id %llu",
			      (unsigned long long)nsid, (unsigned long long)op_id);
		return;
	}
	nkv_be_log(NKV_BE_LOG_INFO, "event=exec_deny nsid=%llu op_id=%llu",
		   (unsigned long long)nsid, (unsigned long long)op_id);
	call->result = json_object_new_boolean(1);
}

static struct json_object *nkv_rpc_exec_counters(void)
{
	struct json_object *o = json_object_new_object();
	struct nkv_exec_stats st;
	uint64_t cached, compiled;

	nkv_exec_stats(&st);
	nkv_exec_cache_stats(&cached, &compiled);
	json_object_object_add(o, "calls", json_object_new_uint64(st.calls));
	json_object_object_add(o, "ok", json_object_new_uint64(st.ok));
	json_object_object_add(o, "not_allowed", json_object_new_uint64(st.not_allowed));
	json_object_object_add(o, "digest_mismatch", json_object_new_uint64(st.digest));
	json_object_object_add(o, "budget_exceeded", json_object_new_uint64(st.budget));
	json_object_object_add(o, "module_error", json_object_new_uint64(st.module));
	json_object_object_add(o, "paged", json_object_new_uint64(st.paged));
	json_object_object_add(o, "rereads", json_object_new_uint64(st.reread));
	json_object_object_add(o, "value_read_bytes", json_object_new_uint64(st.value_bytes));
	json_object_object_add(o, "modules_cached", json_object_new_uint64(cached));
	json_object_object_add(o, "modules_compiled", json_object_new_uint64(compiled));
	return o;
}

static void nkv_rpc_exec_list(struct nkv_rpc_call *call)
{
	static struct nkv_exec_entry rows[NKV_EXEC_MAX_ENTRIES];	/* the RPC thread's */
	struct json_object *a = json_object_new_array();
	size_t n = nkv_exec_list(rows, NKV_EXEC_MAX_ENTRIES), i;

	for (i = 0; i < n && i < NKV_EXEC_MAX_ENTRIES; i++)
		json_object_array_add(a, nkv_rpc_exec_json(&rows[i]));
	call->result = json_object_new_object();
	json_object_object_add(call->result, "entries", a);
	json_object_object_add(call->result, "stats", nkv_rpc_exec_counters());
}

static const struct nkv_rpc_param nkv_rpc_exec_allow_params[] = {
	{ "nsid", json_type_int, 1, "the namespace" },
	{ "op_id", json_type_int, 1, "the op-ID (Exec CDW13)" },
	{ "digest", json_type_string, 1, "SHA-256 of the module's bytes, hex" },
	{ "key", json_type_string, 1, "hex of the key the module is stored under, same namespace" },
	{ "max_instructions", json_type_int, 0, "Lua VM instructions per call (default 1e8)" },
	{ "max_memory", json_type_int, 0, "bytes the module may allocate (default 64 MiB)" },
	{ "max_output", json_type_int, 0, "bytes of result (default 64 MiB)" },
	{ "max_wall_ms", json_type_int, 0, "wall time per call, ms (default 1000)" },
	{ NULL, json_type_null, 0, NULL },
};

static const struct nkv_rpc_param nkv_rpc_exec_deny_params[] = {
	{ "nsid", json_type_int, 1, "the namespace" },
	{ "op_id", json_type_int, 1, "the op-ID" },
	{ NULL, json_type_null, 0, NULL },
};

int nkv_rpc_exec_register(void)
{
	int rc = nkv_rpc_register("exec_allow", "allowlist a module for Exec: (nsid, op_id) -> "
				  "(digest, key, caps)", nkv_rpc_exec_allow_params,
				  nkv_rpc_exec_allow);

	if (!rc)
		rc = nkv_rpc_register("exec_deny", "remove an Exec allowlist entry",
				      nkv_rpc_exec_deny_params, nkv_rpc_exec_deny);
	if (!rc)
		rc = nkv_rpc_register("exec_list", "the Exec allowlist and its counters", NULL,
				      nkv_rpc_exec_list);
	return rc;
}
