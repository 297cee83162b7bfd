/* SPDX-License-Identifier: MIT */
/*
 * target.h - nkv-target's series (target.c, backend.c) over the
 * namespaces the control socket's table lists (rpc/target.h).
 */
#ifndef NKV_TGT_METRICS_TARGET_H
#define NKV_TGT_METRICS_TARGET_H

#include "target/metrics/metrics.h"
#include "target/rpc/target.h"

struct nkv_tcp_server;

/* Turn the core's counters on and register the namespaces', the
 * transports' (vfio-user and NVMe/TCP, each when it serves: NULL when
 * not) and the process's collectors. 0, or the first registration's
 * error. */
int nkv_metrics_target_register(struct nkv_rpc_target *t, struct nkv_vfu_server *vfu,
				struct nkv_tcp_server *tcp);

/* exec.c: the Exec room's calls by result and its module cache. */
int nkv_metrics_exec_register(void);

/* backend.c: each backend's own figures (nkv_be_ops.metrics) as
 * nkv_backend_* series, a family at a time over the n namespaces. */
void nkv_metrics_backends(struct nkv_metrics_buf *b, const struct nkv_rpc_ns *ns, unsigned n);

/* tenant.c: the tenants' collector (nkv_tenant_*, nkv_access_denied_total). */
int nkv_metrics_tenant_register(struct nkv_rpc_target *t);

#endif /* NKV_TGT_METRICS_TARGET_H */
