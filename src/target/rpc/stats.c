/* SPDX-License-Identifier: MIT */
/*
 * stats.c - stats_get: what SIGUSR1 logs (each namespace's keys, bytes,
 * evictions), each connection's counters, and the vfio-user, NVMe/TCP
 * and RPC servers' own, as JSON.
 */
#include "target/rpc/target.h"


static void nkv_rpc_put(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

static struct json_object *nkv_rpc_vfu_stats(struct nkv_vfu_server *vfu)
{
	struct json_object *o = json_object_new_object();
	struct nkv_vfu_server_stats st;

	nkv_vfu_server_stats(vfu, &st);
	nkv_rpc_put(o, "conns", st.conns);
	nkv_rpc_put(o, "accepted", st.accepted);
	nkv_rpc_put(o, "refused", st.refused);
	nkv_rpc_put(o, "closed", st.closed);
	nkv_rpc_put(o, "failed", st.failed);
	nkv_rpc_put(o, "dropped", st.dropped);
	nkv_rpc_put(o, "sleeps", st.sleeps);
	nkv_rpc_put(o, "dma_msgs", st.dma_msgs);
	nkv_rpc_put(o, "dma_bytes", st.dma_bytes);
	nkv_rpc_put(o, "busy_ns", st.busy_ns);
	return o;
}

static struct json_object *nkv_rpc_tcp_stats(struct nkv_tcp_server *tcp)
{
	struct json_object *o = json_object_new_object();
	struct nkv_tcp_server_stats st;

	nkv_tcp_server_stats(tcp, &st);
	nkv_rpc_put(o, "conns", st.conns);
	nkv_rpc_put(o, "assocs", st.assocs);
	nkv_rpc_put(o, "accepted", st.accepted);
	nkv_rpc_put(o, "refused", st.refused);
	nkv_rpc_put(o, "terminated", st.terminated);
	nkv_rpc_put(o, "kato_expired", st.kato_expired);
	nkv_rpc_put(o, "commands", st.commands);
	return o;
}

static struct json_object *nkv_rpc_rpc_stats(struct nkv_rpc_server *rpc)
{
	struct json_object *o = json_object_new_object();
	struct nkv_rpc_server_stats st = { 0 };

	if (rpc)
		nkv_rpc_server_stats(rpc, &st);
	nkv_rpc_put(o, "conns", st.conns);
	nkv_rpc_put(o, "accepted", st.accepted);
	nkv_rpc_put(o, "refused", st.refused);
	nkv_rpc_put(o, "requests", st.requests);
	nkv_rpc_put(o, "errors", st.errors);
	nkv_rpc_put(o, "dropped", st.dropped);
	return o;
}

/* With nsid: that namespace alone. */
static void nkv_rpc_stats_get(struct nkv_rpc_call *call)
{
	const struct nkv_rpc_target *t = call->ctx;
	struct json_object *r, *nss, *conns;
	uint64_t nsid = 0;
	unsigned i;
	int given = nkv_rpc_param_u64(call, "nsid", 1, UINT32_MAX, &nsid);

	if (given < 0)
		return;
	if (given && !nkv_rpc_ns_find(t, (uint32_t)nsid)) {
		nkv_rpc_error(call, NKV_RPC_ERR_NOT_FOUND, "no namespace %llu (namespace_list "
			      "lists them)", (unsigned long long)nsid);
		return;
	}
	r = json_object_new_object();
	nss = json_object_new_array();
	for (i = 0; i < t->nns; i++)
		if (t->ns[i].nsid && (!given || t->ns[i].nsid == nsid))
			json_object_array_add(nss, nkv_rpc_ns_json(&t->ns[i]));
	json_object_object_add(r, "namespaces", nss);
	call->result = r;
	if (given)
		return;
	conns = nkv_rpc_conns_json(t, 1);
	json_object_object_add(r, "connections", conns ? conns : json_object_new_array());
	if (t->vfu)
		json_object_object_add(r, "vfio_user", nkv_rpc_vfu_stats(t->vfu));
	if (t->tcp)
		json_object_object_add(r, "nvme_tcp", nkv_rpc_tcp_stats(t->tcp));
	json_object_object_add(r, "rpc", nkv_rpc_rpc_stats(call->server));
}

static const struct nkv_rpc_param nkv_rpc_stats_params[] = {
	{ "nsid", json_type_int, 0, "that namespace alone" },
	{ NULL, json_type_null, 0, NULL },
};

int nkv_rpc_stats_register(void)
{
	return nkv_rpc_register("stats_get", "counters: namespaces, connections, servers",
				nkv_rpc_stats_params, nkv_rpc_stats_get);
}
