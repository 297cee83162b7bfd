/* SPDX-License-Identifier: MIT */
/*
 * target.c - nkv-target's own series: each namespace's contents (its
 * backend's counts), its commands, errors, bytes and latencies (the
 * core's, core/metrics.h), and the vfio-user transport's connections.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "target/core/metrics.h"
#include "target/core/ns.h"
#include "target/metrics/target.h"
#include "target/tcp/server.h"

/* Labels naming a namespace: nsid, name (its --ns-map NAME), backend. */
static void nkv_metrics_ns_labels(const struct nkv_rpc_ns *ns, char *lb, size_t len)
{
	char id[16];

	snprintf(id, sizeof(id), "%u", ns->nsid);
	lb[0] = 0;
	nkv_metrics_label(lb, len, "nsid", id);
	nkv_metrics_label(lb, len, "name", ns->name);
	nkv_metrics_label(lb, len, "backend", ns->be->ops->name);
}

enum { NKV_M_KEYS, NKV_M_BYTES, NKV_M_CAP, NKV_M_EVICT, NKV_M_MAXKEYS };

static const struct {
	const char *name, *type, *help;
} nkv_metrics_ns_series[] = {
	[NKV_M_KEYS] = { "nkv_namespace_keys", "gauge", "Keys stored (KV namespaces)." },
	[NKV_M_BYTES] = { "nkv_namespace_used_bytes", "gauge",
			  "Bytes used, each key's real cost counted (KV namespaces)." },
	[NKV_M_CAP] = { "nkv_namespace_capacity_bytes", "gauge",
			"Capacity in bytes (NVM: blocks times block size)." },
	[NKV_M_EVICT] = { "nkv_namespace_evictions_total", "counter",
			  "Keys deleted to make room (--evict lru)." },
	[NKV_M_MAXKEYS] = { "nkv_namespace_max_keys", "gauge", "Most keys stored; 0: no limit." },
};

static double nkv_metrics_ns_value(const struct nkv_be *be, unsigned s)
{
	struct nkv_be *b = (struct nkv_be *)be;

	switch (s) {
	case NKV_M_KEYS: return be->csi == NKV_CSI_KV ? (double)be->ops->keys_used(b) : 0;
	case NKV_M_BYTES: return (double)be->ops->bytes_used(b);
	case NKV_M_CAP: return be->csi == NKV_CSI_NVM ?
			(double)be->capacity * be->block_size : (double)be->capacity;
	case NKV_M_EVICT: return be->ops->evictions ? (double)be->ops->evictions(b) : 0;
	default: return be->max_keys;
	}
}

static void nkv_metrics_ns_state(struct nkv_metrics_buf *b, const struct nkv_rpc_ns *ns,
				 unsigned n)
{
	char lb[256];
	unsigned s, i;

	for (s = 0; s < sizeof(nkv_metrics_ns_series) / sizeof(nkv_metrics_ns_series[0]); s++) {
		nkv_metrics_family(b, nkv_metrics_ns_series[s].name, nkv_metrics_ns_series[s].type,
				   nkv_metrics_ns_series[s].help);
		for (i = 0; i < n; i++) {
			nkv_metrics_ns_labels(&ns[i], lb, sizeof(lb));
			nkv_metrics_sample(b, nkv_metrics_ns_series[s].name, lb,
					   nkv_metrics_ns_value(ns[i].be, s));
		}
	}
}

/* The opcodes a namespace of csi answers (its commands_total lines). */
static int nkv_metrics_op_of(uint8_t csi, unsigned op)
{
	if (op == NKV_TGT_MOP_OTHER)
		return 1;
	return csi == NKV_CSI_NVM ? op >= NKV_TGT_MOP_READ : op < NKV_TGT_MOP_READ;
}

static void nkv_metrics_ns_cmds(struct nkv_metrics_buf *b, const struct nkv_rpc_ns *ns,
				const struct nkv_tgt_ns_metrics *m, unsigned n)
{
	char lb[320], st[16];
	unsigned i, op, e;

	nkv_metrics_family(b, "nkv_commands_total", "counter",
			   "I/O commands completed, by opcode (errors included).");
	for (i = 0; i < n; i++)
		for (op = 0; op < NKV_TGT_MOP_N; op++) {
			if (!nkv_metrics_op_of(ns[i].be->csi, op))
				continue;
			nkv_metrics_ns_labels(&ns[i], lb, sizeof(lb));
			nkv_metrics_label(lb, sizeof(lb), "op", nkv_tgt_mop_name(op));
			nkv_metrics_sample(b, "nkv_commands_total", lb, (double)m[i].cmds[op]);
		}
	nkv_metrics_family(b, "nkv_command_errors_total", "counter",
			   "I/O commands completed with a non-zero status, by opcode and status "
			   "(NKV_STATUS(sct, sc) in hex; 'other' past the first 8 seen).");
	for (i = 0; i < n; i++)
		for (op = 0; op < NKV_TGT_MOP_N; op++) {
			uint64_t named = 0;

			for (e = 0; e < NKV_TGT_MET_ERRS && m[i].err[op][e].status; e++) {
				nkv_metrics_ns_labels(&ns[i], lb, sizeof(lb));
				nkv_metrics_label(lb, sizeof(lb), "op", nkv_tgt_mop_name(op));
				snprintf(st, sizeof(st), "0x%03x", m[i].err[op][e].status);
				nkv_metrics_label(lb, sizeof(lb), "status", st);
				nkv_metrics_sample(b, "nkv_command_errors_total", lb,
						   (double)m[i].err[op][e].count);
				named += m[i].err[op][e].count;
			}
			if (m[i].errors[op] <= named)
				continue;
			nkv_metrics_ns_labels(&ns[i], lb, sizeof(lb));
			nkv_metrics_label(lb, sizeof(lb), "op", nkv_tgt_mop_name(op));
			nkv_metrics_label(lb, sizeof(lb), "status", "other");
			nkv_metrics_sample(b, "nkv_command_errors_total", lb,
					   (double)(m[i].errors[op] - named));
		}
}

static void nkv_metrics_ns_bytes(struct nkv_metrics_buf *b, const struct nkv_rpc_ns *ns,
				 const struct nkv_tgt_ns_metrics *m, unsigned n)
{
	char lb[320];
	unsigned i, dir;

	nkv_metrics_family(b, "nkv_data_bytes_total", "counter",
			   "Data moved by successful commands: direction in = host to target "
			   "(Store, Write), out = target to host (Retrieve, List, Read).");
	for (dir = 0; dir < 2; dir++)
		for (i = 0; i < n; i++) {
			nkv_metrics_ns_labels(&ns[i], lb, sizeof(lb));
			nkv_metrics_label(lb, sizeof(lb), "direction", dir ? "out" : "in");
			nkv_metrics_sample(b, "nkv_data_bytes_total", lb,
					   (double)(dir ? m[i].bytes_out : m[i].bytes_in));
		}
}

/* One histogram family, a series per namespace and opcode seen. */
static void nkv_metrics_ns_hist(struct nkv_metrics_buf *b, const struct nkv_rpc_ns *ns,
				const struct nkv_tgt_ns_metrics *m, unsigned n, int be)
{
	const char *name = be ? "nkv_backend_duration_seconds" : "nkv_command_duration_seconds";
	double le[NKV_TGT_HIST_FINITE];
	char lb[320];
	unsigned i, op;

	for (i = 0; i < NKV_TGT_HIST_FINITE; i++)
		le[i] = nkv_tgt_hist_le(i);
	nkv_metrics_family(b, name, "histogram", be ?
			   "Time from submitting a command to its backend to the backend's answer." :
			   "Time from fetching a command off its queue to its completion.");
	for (i = 0; i < n; i++)
		for (op = 0; op < NKV_TGT_MOP_N; op++) {
			const struct nkv_tgt_hist *h = be ? &m[i].be_lat[op] : &m[i].cmd_lat[op];

			/* An opcode's series from its first command on: 23
			 * lines each, kept out of the scrape until used. */
			if (!m[i].cmds[op])
				continue;
			nkv_metrics_ns_labels(&ns[i], lb, sizeof(lb));
			nkv_metrics_label(lb, sizeof(lb), "op", nkv_tgt_mop_name(op));
			nkv_metrics_histogram(b, name, lb, h->bucket, le, NKV_TGT_HIST_FINITE,
					      (double)h->sum_ns * 1e-9);
		}
}

/*
 * The scrape runs on the HTTP server's thread while namespace_remove may
 * close a backend (core/ns.h): hold each listed one for the scrape, and
 * leave out one that went (or was replaced) since the snapshot. How many
 * of the n kept, each to be released.
 */
static unsigned nkv_metrics_ns_hold(struct nkv_rpc_target *t, struct nkv_rpc_ns *ns, unsigned n)
{
	struct nkv_be *be;
	unsigned i, kept = 0;

	for (i = 0; i < n; i++) {
		be = nkv_subsys_ns_hold(t->ss, ns[i].nsid);
		if (be && be == ns[i].be)
			ns[kept++] = ns[i];
		else if (be)
			nkv_subsys_ns_release(t->ss, ns[i].nsid);
	}
	return kept;
}

static void nkv_metrics_namespaces(void *arg, struct nkv_metrics_buf *b)
{
	static struct nkv_rpc_ns ns[NKV_TGT_MAX_NS];	/* one scrape at a time */
	static struct nkv_tgt_ns_metrics m[NKV_TGT_MAX_NS];
	struct nkv_rpc_target *t = arg;
	unsigned i, n = nkv_metrics_ns_hold(t, ns, nkv_rpc_ns_snapshot(t, ns));

	for (i = 0; i < n; i++)
		nkv_tgt_metrics_ns(ns[i].nsid, &m[i]);
	nkv_metrics_ns_state(b, ns, n);
	nkv_metrics_ns_cmds(b, ns, m, n);
	nkv_metrics_ns_bytes(b, ns, m, n);
	nkv_metrics_ns_hist(b, ns, m, n, 0);
	nkv_metrics_ns_hist(b, ns, m, n, 1);
	nkv_metrics_backends(b, ns, n);
	for (i = 0; i < n; i++)
		nkv_subsys_ns_release(t->ss, ns[i].nsid);
}

static void nkv_metrics_vfu(void *arg, struct nkv_metrics_transport_stats *st)
{
	struct nkv_vfu_server_stats v;

	nkv_vfu_server_stats(arg, &v);
	st->conns = v.conns;
	st->accepted = v.accepted;
	st->refused = v.refused;
	st->closed = v.closed;
	st->dropped = v.dropped;
}

/* NVMe/TCP counts what it ends (TermReqs, Keep Alive expiries), not
 * every close: those are the accepted ones no longer open. */
static void nkv_metrics_tcp(void *arg, struct nkv_metrics_transport_stats *st)
{
	struct nkv_tcp_server_stats v;

	nkv_tcp_server_stats(arg, &v);
	st->conns = v.conns;
	st->accepted = v.accepted;
	st->refused = v.refused;
	st->closed = v.accepted >= v.conns ? v.accepted - v.conns : 0;
	st->dropped = v.terminated + v.kato_expired;
}

/* What only the vfio-user server counts: its data path's CPU time (what
 * nkv-bench reports as target_busy_ns), idle sleeps, DMA messages. */
static void nkv_metrics_vfu_own(void *arg, struct nkv_metrics_buf *b)
{
	static const struct {
		const char *name, *help;
		size_t off;
		double scale;
	} s[] = {
		{ "nkv_vfio_user_busy_seconds_total",
		  "Connection threads' time in controller passes that found work.",
		  offsetof(struct nkv_vfu_server_stats, busy_ns), 1e-9 },
		{ "nkv_vfio_user_sleeps_total", "Idle sleeps of connection threads.",
		  offsetof(struct nkv_vfu_server_stats, sleeps), 1 },
		{ "nkv_vfio_user_dma_messages_total",
		  "DMA_READ/WRITE messages sent to clients (memory without an fd).",
		  offsetof(struct nkv_vfu_server_stats, dma_msgs), 1 },
		{ "nkv_vfio_user_dma_message_bytes_total", "Bytes those messages moved.",
		  offsetof(struct nkv_vfu_server_stats, dma_bytes), 1 },
		{ "nkv_vfio_user_error_replies_total", "Error replies sent to clients.",
		  offsetof(struct nkv_vfu_server_stats, errors), 1 },
	};
	struct nkv_vfu_server_stats v;
	unsigned i;

	nkv_vfu_server_stats(arg, &v);
	for (i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		nkv_metrics_family(b, s[i].name, "counter", s[i].help);
		nkv_metrics_sample(b, s[i].name, "", (double)*(const uint64_t *)
				   ((const char *)&v + s[i].off) * s[i].scale);
	}
}

int nkv_metrics_target_register(struct nkv_rpc_target *t, struct nkv_vfu_server *vfu,
				struct nkv_tcp_server *tcp)
{
	int rc;

	nkv_tgt_metrics_enable();
	rc = nkv_metrics_register("namespaces", nkv_metrics_namespaces, t);
	if (!rc)
		rc = nkv_metrics_tenant_register(t);
	if (!rc && vfu)
		rc = nkv_metrics_transport_add("vfio-user", nkv_metrics_vfu, vfu);
	if (!rc && vfu)
		rc = nkv_metrics_register("vfio-user", nkv_metrics_vfu_own, vfu);
	if (!rc && tcp)
		rc = nkv_metrics_transport_add("tcp", nkv_metrics_tcp, tcp);
	if (!rc)
		rc = nkv_metrics_exec_register();
	if (!rc)
		rc = nkv_metrics_process_register();
	return rc;
}
