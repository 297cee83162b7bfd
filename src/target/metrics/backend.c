/* SPDX-License-Identifier: MIT */
/*
 * backend.c - the backends' own figures (nkv_be_ops.metrics: a RADOS
 * cluster lost and back, RocksDB's stalls and compactions) as
 * nkv_backend_* series. Each namespace's figures are gathered first,
 * then written a family at a time, as the text format wants.
 */
#include <stdio.h>
#include <string.h>

#include "target/metrics/target.h"

#define NKV_METRICS_BE_MAX 16	/* figures one backend gives */

void nkv_metrics_backends(struct nkv_metrics_buf *b, const struct nkv_rpc_ns *ns, unsigned n)
{
	static struct nkv_be_metric m[NKV_TGT_MAX_NS][NKV_METRICS_BE_MAX];
	static unsigned cnt[NKV_TGT_MAX_NS];
	char name[128], lb[256], id[16];
	unsigned i, j, k, l;

	for (i = 0; i < n; i++)
		cnt[i] = ns[i].be->ops->metrics ?
			 ns[i].be->ops->metrics(ns[i].be, m[i], NKV_METRICS_BE_MAX) : 0;
	for (i = 0; i < n; i++)
		for (j = 0; j < cnt[i]; j++) {
			int seen = 0;

			/* Written already with an earlier namespace's family? */
			for (k = 0; k < i && !seen; k++)
				for (l = 0; l < cnt[k] && !seen; l++)
					seen = !strcmp(m[k][l].name, m[i][j].name);
			if (seen)
				continue;
			snprintf(name, sizeof(name), "nkv_backend_%s", m[i][j].name);
			nkv_metrics_family(b, name, m[i][j].counter ? "counter" : "gauge",
					   m[i][j].help);
			for (k = i; k < n; k++)
				for (l = 0; l < cnt[k]; l++) {
					if (strcmp(m[k][l].name, m[i][j].name))
						continue;
					snprintf(id, sizeof(id), "%u", ns[k].nsid);
					lb[0] = 0;
					nkv_metrics_label(lb, sizeof(lb), "nsid", id);
					nkv_metrics_label(lb, sizeof(lb), "name", ns[k].name);
					nkv_metrics_label(lb, sizeof(lb), "backend",
							  ns[k].be->ops->name);
					nkv_metrics_sample(b, name, lb, m[k][l].value);
				}
		}
}
