/* SPDX-License-Identifier: MIT */
/*
 * settings.c - log_level_set and target_set: the vfio-user server's live
 * options (server.h's nkv_vfu_server_live) and the backends' log level.
 */
#include <string.h>

#include "target/rpc/target.h"

static const char *const nkv_rpc_levels[] = { "error", "warn", "info", "debug" };

static void nkv_rpc_log_level_set(struct nkv_rpc_call *call)
{
	const struct nkv_rpc_target *t = call->ctx;
	struct json_object *v;
	struct nkv_vfu_server_live l;
	const char *name;
	int lv, was;

	json_object_object_get_ex(call->params, "level", &v);
	name = json_object_get_string(v);
	for (lv = 0; lv < 4 && strcmp(name, nkv_rpc_levels[lv]); lv++)
		;
	if (lv == 4) {
		nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "param 'level' must be error, warn, "
			      "info or debug");
		return;
	}
	was = nkv_be_log_get_level();
	if (t->vfu) {
		nkv_vfu_server_live_get(t->vfu, &l);
		was = l.log_level;
		l.log_level = lv;
		nkv_vfu_server_live_set(t->vfu, &l);
	}
	if (t->tcp)
		nkv_tcp_server_log_level_set(t->tcp, lv);
	nkv_be_log_set(lv, NULL, NULL);	/* the backends' and the RPC server's lines */
	call->result = json_object_new_object();
	json_object_object_add(call->result, "level", json_object_new_string(nkv_rpc_levels[lv]));
	json_object_object_add(call->result, "was", json_object_new_string(nkv_rpc_levels[was]));
}

static struct json_object *nkv_rpc_live_json(const struct nkv_vfu_server_live *l)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "handshake_timeout_ms", json_object_new_uint64(l->handshake_ms));
	json_object_object_add(o, "idle_timeout_ms", json_object_new_uint64(l->idle_ms));
	json_object_object_add(o, "msg_timeout_ms", json_object_new_uint64(l->msg_ms));
	json_object_object_add(o, "max_conns", json_object_new_uint64((uint64_t)l->max_conns));
	json_object_object_add(o, "poll_interval_ns", json_object_new_uint64(l->poll_interval_ns));
	return o;
}

#define NKV_RPC_MAX_MS 86400000ull	/* a day */

/* The params given into l: how many, or -1 with call failed. */
static int nkv_rpc_live_params(struct nkv_rpc_call *call, struct nkv_vfu_server_live *l)
{
	uint64_t v[5] = { l->handshake_ms, l->idle_ms, l->msg_ms, (uint64_t)l->max_conns,
			  l->poll_interval_ns };
	int n = 0, r;

	r = nkv_rpc_param_u64(call, "handshake_timeout_ms", 1, NKV_RPC_MAX_MS, &v[0]);
	n += r > 0;
	if (r >= 0 && (r = nkv_rpc_param_u64(call, "idle_timeout_ms", 1, NKV_RPC_MAX_MS, &v[1])) >= 0)
		n += r > 0;
	if (r >= 0 && (r = nkv_rpc_param_u64(call, "msg_timeout_ms", 1, NKV_RPC_MAX_MS, &v[2])) >= 0)
		n += r > 0;
	if (r >= 0 && (r = nkv_rpc_param_u64(call, "max_conns", 1, 4096, &v[3])) >= 0)
		n += r > 0;
	if (r >= 0 && (r = nkv_rpc_param_u64(call, "poll_interval_ns", 1000, 1000000000, &v[4])) >= 0)
		n += r > 0;
	if (r < 0)
		return -1;
	l->handshake_ms = (uint32_t)v[0];
	l->idle_ms = (uint32_t)v[1];
	l->msg_ms = (uint32_t)v[2];
	l->max_conns = (int)v[3];
	l->poll_interval_ns = v[4];
	return n;
}

static void nkv_rpc_target_set(struct nkv_rpc_call *call)
{
	const struct nkv_rpc_target *t = call->ctx;
	struct nkv_vfu_server_live l;
	int n;

	if (!t->vfu) {
		nkv_rpc_error(call, NKV_RPC_ERR_UNSUPPORTED, "target_set's settings are the "
			      "vfio-user server's, and this target listens on NVMe/TCP only");
		return;
	}
	nkv_vfu_server_live_get(t->vfu, &l);
	n = nkv_rpc_live_params(call, &l);
	if (n < 0)
		return;
	if (!n) {
		nkv_rpc_error(call, NKV_RPC_INVALID_PARAMS, "nothing to set (rpc_list names "
			      "target_set's params)");
		return;
	}
	/* More clients need more descriptors: raised, within the hard limit. */
	nkv_rpc_raise_nofile(NKV_TGT_FDS_BASE + NKV_RPC_MAX_CONNS +
			     (uint64_t)l.max_conns * NKV_TGT_FDS_PER_CONN);
	nkv_vfu_server_live_set(t->vfu, &l);
	nkv_vfu_server_live_get(t->vfu, &l);
	call->result = nkv_rpc_live_json(&l);
}

static const struct nkv_rpc_param nkv_rpc_level_params[] = {
	{ "level", json_type_string, 1, "error, warn, info or debug" },
	{ NULL, json_type_null, 0, NULL },
};

static const struct nkv_rpc_param nkv_rpc_target_params[] = {
	{ "handshake_timeout_ms", json_type_int, 0,
	  "VERSION within this of connecting; each unnegotiated client at its next wake-up" },
	{ "idle_timeout_ms", json_type_int, 0,
	  "a disabled controller's silence; each client at its next wake-up" },
	{ "msg_timeout_ms", json_type_int, 0, "one whole message; from the next message" },
	{ "max_conns", json_type_int, 0, "concurrent clients, 1..4096; at the next accept" },
	{ "poll_interval_ns", json_type_int, 0,
	  "idle sleep between polls, 1000..1e9; every client at its next poll" },
	{ NULL, json_type_null, 0, NULL },
};

int nkv_rpc_settings_register(void)
{
	int rc = nkv_rpc_register("log_level_set", "the target's log level", nkv_rpc_level_params,
				  nkv_rpc_log_level_set);

	if (!rc)
		rc = nkv_rpc_register("target_set", "change the vfio-user server's time limits, "
				      "max_conns, poll interval; returns them all",
				      nkv_rpc_target_params, nkv_rpc_target_set);
	return rc;
}
