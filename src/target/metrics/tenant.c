/* SPDX-License-Identifier: MIT */
/*
 * tenant.c - the tenants' series (docs/metrics.md, docs/target.md
 * "Tenants"): byte-seconds stored by tier, bytes moved each way, access
 * refusals, per namespace and tenant. Only tenants that did anything in
 * a namespace get lines there, so a namespace nobody uses adds none.
 */
#include <stdio.h>
#include <stdlib.h>

#include "target/metrics/target.h"
#include "target/tenant/tenant.h"

struct nkv_metrics_tns {
	uint32_t nsid;
	unsigned n;
	struct nkv_tenant_usage *u;
};

static int nkv_metrics_tenant_active(const struct nkv_tenant_usage *u)
{
	return u->bytes || u->byte_seconds[0] || u->byte_seconds[1] || u->bytes_in ||
	       u->bytes_out || u->denied;
}

static void nkv_metrics_tenant_labels(char *lb, size_t len, uint32_t nsid,
				      const struct nkv_tenant_usage *u)
{
	char id[16];

	snprintf(id, sizeof(id), "%u", nsid);
	lb[0] = 0;
	nkv_metrics_label(lb, len, "nsid", id);
	nkv_metrics_label(lb, len, "tenant", u->name);
}

enum { NKV_MT_BS, NKV_MT_MOVED, NKV_MT_DENIED };

/* One family over every namespace's active tenants. */
static void nkv_metrics_tenant_family(struct nkv_metrics_buf *b, const struct nkv_metrics_tns *t,
				      unsigned nns, unsigned which)
{
	static const char *const tier[2] = { "durable", "ttl" }, *const dir[2] = { "in", "out" };
	static const struct {
		const char *name, *help;
	} f[] = {
		[NKV_MT_BS] = { "nkv_tenant_stored_byte_seconds_total",
				"Bytes a tenant owned times the seconds it owned them, by tier "
				"(durable, ttl)." },
		[NKV_MT_MOVED] = { "nkv_tenant_moved_bytes_total",
				   "Bytes a tenant's commands moved, in (to the target) and out." },
		[NKV_MT_DENIED] = { "nkv_access_denied_total",
				    "Commands refused because the tenant may not use the namespace." },
	};
	const struct nkv_tenant_usage *u;
	char lb[512], l2[560];
	unsigned i, j, k;

	nkv_metrics_family(b, f[which].name, "counter", f[which].help);
	for (i = 0; i < nns; i++)
		for (j = 0; j < t[i].n; j++) {
			u = &t[i].u[j];
			if (!nkv_metrics_tenant_active(u))
				continue;
			nkv_metrics_tenant_labels(lb, sizeof(lb), t[i].nsid, u);
			if (which == NKV_MT_DENIED) {
				nkv_metrics_sample(b, f[which].name, lb, (double)u->denied);
				continue;
			}
			for (k = 0; k < 2; k++) {
				snprintf(l2, sizeof(l2), "%s", lb);
				nkv_metrics_label(l2, sizeof(l2), which == NKV_MT_BS ? "tier" : "direction",
						  which == NKV_MT_BS ? tier[k] : dir[k]);
				nkv_metrics_sample(b, f[which].name, l2,
						   which == NKV_MT_BS ? u->byte_seconds[k] :
						   (double)(k ? u->bytes_out : u->bytes_in));
			}
		}
}

static void nkv_metrics_tenants(void *arg, struct nkv_metrics_buf *b)
{
	struct nkv_rpc_target *rt = arg;
	struct nkv_tenants *tn = nkv_subsys_tenants(rt->ss);
	struct nkv_metrics_tns t[NKV_TGT_MAX_NS];
	struct nkv_rpc_ns ns[NKV_TGT_MAX_NS];
	unsigned n = nkv_rpc_ns_snapshot(rt, ns), i, w;

	for (i = 0; i < n; i++) {
		t[i].nsid = ns[i].nsid;
		t[i].n = nkv_tenant_usage(tn, ns[i].nsid, NULL, 0);
		t[i].u = t[i].n ? calloc(t[i].n, sizeof(*t[i].u)) : NULL;
		/* More may have come since: only those counted first are shown. */
		if (t[i].u && nkv_tenant_usage(tn, ns[i].nsid, t[i].u, t[i].n) < t[i].n)
			t[i].n = 0;	/* never fewer: entries live as long as the tables */
		if (!t[i].u)
			t[i].n = 0;
	}
	for (w = NKV_MT_BS; w <= NKV_MT_DENIED; w++)
		nkv_metrics_tenant_family(b, t, n, w);
	for (i = 0; i < n; i++)
		free(t[i].u);
}

int nkv_metrics_tenant_register(struct nkv_rpc_target *t)
{
	return nkv_metrics_register("tenants", nkv_metrics_tenants, t);
}
