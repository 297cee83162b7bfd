/* SPDX-License-Identifier: MIT */
/*
 * exec.c - the Exec room's figures (target/exec/exec.h) as nkv_exec_*
 * series: calls by result, modules cached and compiled. Read at scrape
 * time from the room's own counters, as stats are kept there.
 */
#include "target/exec/exec.h"
#include "target/metrics/target.h"

static void nkv_metrics_exec(void *arg, struct nkv_metrics_buf *b)
{
	struct nkv_exec_stats st;
	uint64_t cached, compiled;
	const struct {
		const char *result;
		const uint64_t *v;
	} r[] = {
		{ "ok", &st.ok },
		{ "not_allowed", &st.not_allowed },
		{ "digest_mismatch", &st.digest },
		{ "budget_exceeded", &st.budget },
		{ "module_error", &st.module },
		{ "other", &st.other },
	};
	char labels[64];
	unsigned i;

	(void)arg;
	nkv_exec_stats(&st);
	nkv_exec_cache_stats(&cached, &compiled);
	nkv_metrics_family(b, "nkv_exec_calls_total", "counter",
			   "Exec calls completed, by result (docs/exec.md)");
	for (i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		labels[0] = 0;
		nkv_metrics_label(labels, sizeof(labels), "result", r[i].result);
		nkv_metrics_sample(b, "nkv_exec_calls_total", labels, (double)*r[i].v);
	}
	nkv_metrics_family(b, "nkv_exec_paged_calls_total", "counter",
			   "Exec calls whose value was read in ranges as the module read it");
	nkv_metrics_sample(b, "nkv_exec_paged_calls_total", "", (double)st.paged);
	nkv_metrics_family(b, "nkv_exec_rereads_total", "counter",
			   "paged Exec calls run again on one whole read (a Store came between two ranges)");
	nkv_metrics_sample(b, "nkv_exec_rereads_total", "", (double)st.reread);
	nkv_metrics_family(b, "nkv_exec_value_read_bytes_total", "counter",
			   "bytes of values Exec read from the backend");
	nkv_metrics_sample(b, "nkv_exec_value_read_bytes_total", "", (double)st.value_bytes);
	nkv_metrics_family(b, "nkv_exec_modules_cached", "gauge",
			   "modules held compiled, by digest");
	nkv_metrics_sample(b, "nkv_exec_modules_cached", "", (double)cached);
	nkv_metrics_family(b, "nkv_exec_modules_compiled_total", "counter",
			   "modules checked against their digest and compiled");
	nkv_metrics_sample(b, "nkv_exec_modules_compiled_total", "", (double)compiled);
}

int nkv_metrics_exec_register(void)
{
	return nkv_metrics_register("exec", nkv_metrics_exec, NULL);
}
