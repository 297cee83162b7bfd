/* SPDX-License-Identifier: MIT */
/* ctrl_show.c - see ctrl_show.h. */
#include <errno.h>
#include <string.h>

#include "tools/ctrl_show.h"

/* "TTL, ephemeral, touch", "size query", ... or "none" for an empty set. */
static void nkv_tool_opts(const struct nkv_ns_ext *e, char *buf, size_t len)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} names[] = {
		{ NKV_STORE_TTL, "TTL" },
		{ NKV_STORE_EPHEMERAL, "ephemeral" },
		{ NKV_STORE_TOUCH, "touch" },
	};
	size_t i, n = 0;

	buf[0] = 0;
	for (i = 0; i < sizeof(names) / sizeof(names[0]) && n < len; i++)
		if (e->store_opts & names[i].bit)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", names[i].name);
	if (e->size_query && n < len)
		n += (size_t)snprintf(buf + n, len - n, "%ssize query", n ? ", " : "");
	if (!n)
		snprintf(buf, len, "none");
}

void nkv_tool_show_ext(FILE *f, const struct nkv_ns_ext *e, int rc)
{
	char opts[96];

	if (rc) {
		fprintf(f, "%-18s not advertised (%s)\n", "vendor options",
			rc == -ENODEV ? "not a KV namespace" : strerror(-rc));
		return;
	}
	fprintf(f, "%-18s %s\n", "read-only", e->read_only ? "yes: Store and Delete are refused" : "no");
	if (!e->advertised) {
		fprintf(f, "%-18s not advertised\n", "vendor options");
		return;
	}
	nkv_tool_opts(e, opts, sizeof(opts));
	fprintf(f, "%-18s %s\n", "vendor options", opts);
	if (e->store_opts & NKV_STORE_TTL) {
		if (e->max_ttl)
			fprintf(f, "%-18s %u s\n", "longest TTL", e->max_ttl);
		else
			fprintf(f, "%-18s any\n", "longest TTL");
	}
	fprintf(f, "%-18s %s\n", "exec", e->exec ? "yes: op-IDs the allowlist binds (docs/exec.md)"
						   : "no");
}

void nkv_tool_show_caps(FILE *f, struct nkv_ctrl *c, const struct nkv_ctrl_info *i)
{
	struct nkv_ns_ext e = { .size = sizeof(e) };
	int rc = nkv_ctrl_ns_ext(c, 0, &e);

	if (i->csi == NKV_CSI_KV) {
		fprintf(f, "%-18s %u B\n", "largest key", i->max_key);
		fprintf(f, "%-18s %u B\n", "largest value", i->max_value);
	}
	if (i->max_xfer)
		fprintf(f, "%-18s %u B per command\n", "MDTS", i->max_xfer);
	else
		fprintf(f, "%-18s no limit\n", "MDTS");
	/* SGLS bits 1:0: 00b none, 01b any alignment, 10b dword-aligned
	 * only, 11b reserved. nkv's slots send SGLs only where any alignment
	 * goes (a key's head is byte-aligned); commands on memory regions
	 * send dword-aligned ones where every piece is (docs/host.md). */
	switch (i->sgls & NKV_SGLS_SUPPORT_MASK) {
	case NKV_SGLS_SUPPORTED:
		fprintf(f, "%-18s supported (SGLS %#x)\n", "SGLs", i->sgls);
		break;
	case NKV_SGLS_DWORD_ALIGNED:
		fprintf(f, "%-18s supported, dword-aligned only (SGLS %#x): nkv's slots send "
			"PRPs, region commands dword-aligned SGLs\n", "SGLs", i->sgls);
		break;
	case 0:
		fprintf(f, "%-18s not supported (SGLS %#x): PRPs\n", "SGLs", i->sgls);
		break;
	default:
		fprintf(f, "%-18s reserved value 11b (SGLS %#x): nkv sends PRPs\n", "SGLs", i->sgls);
	}
	nkv_tool_show_ext(f, &e, rc);
}
