/* SPDX-License-Identifier: MIT */
/*
 * target.h - nkv-target's own methods on the control socket (rpc.h):
 * what they are handed, and one call that registers them all.
 *
 *   namespace.c   namespace_list, namespace_set, namespace_add/remove
 *   connection.c  connection_list, connection_close
 *   stats.c       stats_get
 *   settings.c    log_level_set, target_set
 *   tenant.c      access_set, access_default_set, access_list, quota_set,
 *                 metering_get
 *   exec.c        exec_allow, exec_deny, exec_list (the Exec room's allowlist)
 *   methods.c     nkv_rpc_target_register: one line per file above
 */
#ifndef NKV_TGT_RPC_TARGET_H
#define NKV_TGT_RPC_TARGET_H

#include <pthread.h>
#include <stdint.h>

#include "target/backends/registry.h"
#include "target/core/ctrl.h"
#include "target/rpc/rpc.h"
#include "target/tcp/server.h"
#include "target/vfio-user/server.h"

#define NKV_RPC_NS_PARAMS 16	/* backend options one namespace_add may give */

/* One namespace served; never removed before the target stops (removal
 * is issue 46's second part), so an entry stays where it is. */
struct nkv_rpc_ns {
	uint32_t nsid;
	char name[64];		/* --ns-map NAME; "" for the NVM one */
	struct nkv_be *be;	/* the subsystem's */
	/* namespace_add's backend options, kept while the backend lives (a
	 * backend may keep pointers into its conf) */
	struct nkv_be_param params[NKV_RPC_NS_PARAMS];
	char *strings[2 * NKV_RPC_NS_PARAMS];
};

/* nkv_rpc_server_opts.ctx of nkv-target's server. */
struct nkv_rpc_target {
	struct nkv_vfu_server *vfu;	/* NULL: no vfio-user listener */
	struct nkv_tcp_server *tcp;	/* NULL: no NVMe/TCP listener */
	struct nkv_subsys *ss;
	/* What namespace_add creates unless told: nkv-target's --backend and
	 * its --capacity, --max-value, --max-keys. */
	const char *backend;
	uint64_t capacity;
	uint32_t max_value;
	uint32_t max_keys;
	/* The namespaces: appended by namespace_add on the RPC thread under
	 * lock; other threads (SIGUSR1's stats line) read them under it. */
	pthread_mutex_t lock;
	struct nkv_rpc_ns ns[NKV_TGT_MAX_NS];
	unsigned nns;
};

/* Copy t's namespaces (nsid, name, be) into out: how many. Any thread. */
unsigned nkv_rpc_ns_snapshot(struct nkv_rpc_target *t, struct nkv_rpc_ns *out);
/* Free what namespace_add kept (after the subsystem is destroyed). */
void nkv_rpc_target_free(struct nkv_rpc_target *t);

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
int nkv_rpc_tenant_register(void);
int nkv_rpc_exec_register(void);	/* exec.c: exec_allow, exec_deny, exec_list */

/* The namespace nsid of t, or NULL. */
const struct nkv_rpc_ns *nkv_rpc_ns_find(const struct nkv_rpc_target *t, uint32_t nsid);
/* A namespace's counters as JSON (namespace_list, stats_get). */
struct json_object *nkv_rpc_ns_json(const struct nkv_rpc_ns *ns);
/* The vfio-user connections as a JSON array, with their queue counters
 * or not (stats_get, connection_list); NULL: no memory. */
struct json_object *nkv_rpc_conns_json(const struct nkv_rpc_target *t, int counters);

#endif /* NKV_TGT_RPC_TARGET_H */
