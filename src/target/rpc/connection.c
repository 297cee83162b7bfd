/* SPDX-License-Identifier: MIT */
/*
 * connection.c - connection_list and connection_close: the vfio-user
 * clients and the NVMe/TCP connections, each through its server's control
 * side (vfio-user/server.h, tcp/server.h), which hands the request to the
 * thread that owns the connection.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/rpc/target.h"

/* How long a listing waits for a connection busy with a message. */
#define NKV_RPC_CONN_WAIT_MS 1000
#define NKV_RPC_CONN_MAX 1024

static void nkv_rpc_put_u64(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

/* One connection; counters (stats_get) or not (connection_list). */
static struct json_object *nkv_rpc_conn_json(const struct nkv_vfu_conn_info *i, int counters)
{
	struct json_object *o = json_object_new_object();
	char tenant[32];

	nkv_rpc_put_u64(o, "id", i->id);
	json_object_object_add(o, "transport", json_object_new_string("vfio-user"));
	nkv_rpc_put_u64(o, "age_ms", i->age_ms);
	if (i->has_cred) {	/* the peer's, at connect: its tenant (docs/target.md) */
		nkv_rpc_put_u64(o, "pid", (uint64_t)i->pid);
		nkv_rpc_put_u64(o, "uid", i->uid);
		nkv_rpc_put_u64(o, "gid", i->gid);
		snprintf(tenant, sizeof(tenant), "uid:%u", i->uid);
		json_object_object_add(o, "tenant", json_object_new_string(tenant));
	}
	json_object_object_add(o, "fresh", json_object_new_boolean(i->fresh));
	if (!i->fresh)		/* busy past the wait: nothing more is known */
		return o;
	nkv_rpc_put_u64(o, "idle_ms", i->idle_ms);
	json_object_object_add(o, "negotiated", json_object_new_boolean(i->negotiated));
	json_object_object_add(o, "enabled", json_object_new_boolean(i->enabled));
	json_object_object_add(o, "failed", i->failed ? json_object_new_string(i->failed) : NULL);
	nkv_rpc_put_u64(o, "dma_maps", i->dma_maps);
	nkv_rpc_put_u64(o, "dma_bytes", i->dma_bytes);
	if (!counters)
		return o;
	nkv_rpc_put_u64(o, "commands", i->commands);
	nkv_rpc_put_u64(o, "bytes", i->bytes);
	nkv_rpc_put_u64(o, "errors", i->errors);
	nkv_rpc_put_u64(o, "sq_doorbells", i->sq_doorbells);
	nkv_rpc_put_u64(o, "cq_doorbells", i->cq_doorbells);
	nkv_rpc_put_u64(o, "bad_doorbells", i->bad_doorbells);
	return o;
}

/* An NVMe/TCP connection. */
static struct json_object *nkv_rpc_tcp_conn_json(const struct nkv_tcp_conn_info *i)
{
	struct json_object *o = json_object_new_object();

	nkv_rpc_put_u64(o, "id", i->id);
	json_object_object_add(o, "transport", json_object_new_string("tcp"));
	nkv_rpc_put_u64(o, "age_ms", i->age_ms);
	json_object_object_add(o, "peer", json_object_new_string(i->peer));
	json_object_object_add(o, "connected", json_object_new_boolean(i->connected));
	if (i->connected) {
		nkv_rpc_put_u64(o, "cntlid", i->cntlid);
		nkv_rpc_put_u64(o, "qid", i->qid);
		json_object_object_add(o, "hostnqn", json_object_new_string(i->hostnqn));
	}
	nkv_rpc_put_u64(o, "inflight", i->inflight);
	json_object_object_add(o, "header_digest", json_object_new_boolean(i->hdgst));
	json_object_object_add(o, "data_digest", json_object_new_boolean(i->ddgst));
	return o;
}

static void nkv_rpc_vfu_conns(const struct nkv_rpc_target *t, struct json_object *arr,
			      int counters)
{
	struct nkv_vfu_conn_info *info = calloc(NKV_RPC_CONN_MAX, sizeof(*info));
	int n, i;

	if (!info || !t->vfu) {
		free(info);
		return;
	}
	n = nkv_vfu_server_conns(t->vfu, info, NKV_RPC_CONN_MAX, NKV_RPC_CONN_WAIT_MS);
	for (i = 0; i < n && i < NKV_RPC_CONN_MAX; i++)
		json_object_array_add(arr, nkv_rpc_conn_json(&info[i], counters));
	free(info);
}

static void nkv_rpc_tcp_conns(const struct nkv_rpc_target *t, struct json_object *arr)
{
	struct nkv_tcp_conn_info *info = calloc(NKV_RPC_CONN_MAX, sizeof(*info));
	int n, i;

	if (!info || !t->tcp) {
		free(info);
		return;
	}
	n = nkv_tcp_server_conns(t->tcp, info, NKV_RPC_CONN_MAX, NKV_RPC_CONN_WAIT_MS);
	for (i = 0; i < n && i < NKV_RPC_CONN_MAX; i++)
		json_object_array_add(arr, nkv_rpc_tcp_conn_json(&info[i]));
	free(info);
}

struct json_object *nkv_rpc_conns_json(const struct nkv_rpc_target *t, int counters)
{
	struct json_object *arr = json_object_new_array();

	if (!arr)
		return NULL;
	nkv_rpc_vfu_conns(t, arr, counters);
	nkv_rpc_tcp_conns(t, arr);
	return arr;
}

static void nkv_rpc_connection_list(struct nkv_rpc_call *call)
{
	call->result = nkv_rpc_conns_json(call->ctx, 0);
	if (!call->result)
		nkv_rpc_error(call, NKV_RPC_INTERNAL_ERROR, "out of memory");
}

/* The transport param: 1 tcp, 0 vfio-user, -1 with call failed. Absent:
 * vfio-user where the target listens on it, else tcp. */
static int nkv_rpc_close_transport(struct nkv_rpc_call *call, const struct nkv_rpc_target *t)
{
	struct json_object *v;
	const char *name;

	if (!json_object_object_get_ex(call->params, "transport", &v))
		return t->vfu ? 0 : 1;
	name = json_object_get_string(v);
	if (!strcmp(name, "tcp") && t->tcp)
		return 1;
	if (!strcmp(name, "vfio-user") && t->vfu)
		return 0;
	nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "param 'transport': \"%s\" is not a "
		      "transport this target listens on (%s%s%s)", name, t->vfu ? "vfio-user" : "",
		      t->vfu && t->tcp ? ", " : "", t->tcp ? "tcp" : "");
	return -1;
}

static void nkv_rpc_connection_close(struct nkv_rpc_call *call)
{
	const struct nkv_rpc_target *t = call->ctx;
	int tcp = nkv_rpc_close_transport(call, t);
	uint64_t id;

	if (tcp < 0 || nkv_rpc_param_u64(call, "id", 1, tcp ? UINT32_MAX : UINT16_MAX, &id) < 0)
		return;
	if (tcp ? nkv_tcp_server_close_conn(t->tcp, (uint32_t)id, NKV_RPC_CONN_WAIT_MS)
		: nkv_vfu_server_close_conn(t->vfu, (uint16_t)id)) {
		nkv_rpc_error(call, NKV_RPC_ERR_NOT_FOUND, "no connection %llu (connection_list "
			      "lists them)", (unsigned long long)id);
		return;
	}
	call->result = json_object_new_object();
	nkv_rpc_put_u64(call->result, "id", id);
	json_object_object_add(call->result, "transport",
			       json_object_new_string(tcp ? "tcp" : "vfio-user"));
	json_object_object_add(call->result, "closing", json_object_new_boolean(1));
}

static const struct nkv_rpc_param nkv_rpc_close_params[] = {
	{ "id", json_type_int, 1, "the connection (connection_list)" },
	{ "transport", json_type_string, 0,
	  "vfio-user or tcp (default: vfio-user where the target listens on it)" },
	{ NULL, json_type_null, 0, NULL },
};

int nkv_rpc_connection_register(void)
{
	int rc = nkv_rpc_register("connection_list", "the vfio-user clients and NVMe/TCP "
				  "connections open now", NULL,
				  nkv_rpc_connection_list);

	if (!rc)
		rc = nkv_rpc_register("connection_close", "end a client's connection as a "
				      "protocol error does", nkv_rpc_close_params,
				      nkv_rpc_connection_close);
	return rc;
}
