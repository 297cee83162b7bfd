/* SPDX-License-Identifier: MIT */
/*
 * target.h - nkv-target's own methods on the control socket (rpc.h):
 * what they are handed, and one call that registers them all.
 *
 *   namespace.c   namespace_list, namespace_set, namespace_add/remove
 *   connection.c  connection_list, connection_close
 *   stats.c       stats_get
 *   settings.c    log_level_set, target_set
 *   methods.c     nkv_rpc_target_register: one line per file above
 */
#ifndef NKV_TGT_RPC_TARGET_H
#define NKV_TGT_RPC_TARGET_H

#include <stdint.h>

#include "target/core/backend.h"
#include "target/rpc/rpc.h"
#include "target/vfio-user/server.h"

/* One namespace served: fixed from start to stop (until namespaces come
 * and go live, issue 46's second part). */
struct nkv_rpc_ns {
	uint32_t nsid;
	const char *name;	/* --ns-map NAME; "" for the NVM one */
	struct nkv_be *be;	/* the subsystem's */
};

/* nkv_rpc_server_opts.ctx of nkv-target's server. */
struct nkv_rpc_target {
	struct nkv_vfu_server *vfu;
	const struct nkv_rpc_ns *ns;
	unsigned nns;
};

/* Descriptors a vfio-user connection may hold at once (socket, BAR0
 * memfd, its wake and kick eventfds, a DMA fd being mapped), with room:
 * what RLIMIT_NOFILE is raised for, per connection. */
#define NKV_TGT_FDS_PER_CONN 8
/* ... and for the process besides its connections (logs, backends). */
#define NKV_TGT_FDS_BASE 256

/* Register every method above. 0, or the first nkv_rpc_register error
 * (-EEXIST when called twice). */
int nkv_rpc_target_register(void);

/* Each file's part of it. */
int nkv_rpc_namespace_register(void);
int nkv_rpc_connection_register(void);
int nkv_rpc_stats_register(void);
int nkv_rpc_settings_register(void);

/* The namespace nsid of t, or NULL. */
const struct nkv_rpc_ns *nkv_rpc_ns_find(const struct nkv_rpc_target *t, uint32_t nsid);
/* A namespace's counters as JSON (namespace_list, stats_get). */
struct json_object *nkv_rpc_ns_json(const struct nkv_rpc_ns *ns);
/* The vfio-user connections as a JSON array, with their queue counters
 * or not (stats_get, connection_list); NULL: no memory. */
struct json_object *nkv_rpc_conns_json(const struct nkv_rpc_target *t, int counters);

#endif /* NKV_TGT_RPC_TARGET_H */
