/* SPDX-License-Identifier: MIT */
/*
 * exec.c - --kv-op exec's module (docs/exec.md): --exec-module FILE is
 * stored under "nkv-bench/module" through the synchronous API before the
 * run, and on the embedded target allowlisted as --op-id by its SHA-256
 * (the process's allowlist, target/exec/exec.h); a --target's allowlist
 * is its owner's (exec_allow, --exec-allow).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "target/exec/exec.h"

#define NKV_BENCH_MODULE_KEY "nkv-bench/module"
#define NKV_BENCH_MODULE_MAX (1u << 20)

static int nkv_bench_read_file(const char *path, char **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	int rc = 0;

	*buf = malloc(NKV_BENCH_MODULE_MAX);
	if (!f || !*buf) {
		rc = f ? -ENOMEM : -errno;
		fprintf(stderr, "nkv-bench: --exec-module %s: %s\n", path, strerror(-rc));
	} else {
		*len = fread(*buf, 1, NKV_BENCH_MODULE_MAX, f);
		if (!*len || !feof(f)) {
			fprintf(stderr, "nkv-bench: --exec-module %s: empty or over 1 MiB\n", path);
			rc = -EINVAL;
		}
	}
	if (f)
		fclose(f);
	return rc;
}

static int nkv_bench_store_module(const char *uri, uint32_t nsid, const char *src, size_t len)
{
	struct nkv_ctrl_opts co = { .size = sizeof(co), .nsid = nsid };
	struct nkv_qpair *q = NULL;
	struct nkv_ctrl *c = NULL;
	struct nkv_result r = { 0 };
	int rc = nkv_ctrl_connect(uri, &co, &c);

	if (!rc)
		rc = nkv_qpair_create(c, NULL, &q);
	if (!rc)
		rc = nkv_store(q, NKV_BENCH_MODULE_KEY, sizeof(NKV_BENCH_MODULE_KEY) - 1, src,
			       (uint32_t)len, 0, &r);
	if (!rc && r.status)
		rc = -EIO;
	if (rc)
		fprintf(stderr, "nkv-bench: storing --exec-module failed: %s (status %#x)\n",
			strerror(-rc), r.status);
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	return rc;
}

int nkv_bench_exec_module(const struct nkv_bench_opts *o, const char *uri, int embedded)
{
	struct nkv_exec_entry e = { .nsid = o->nsid ? o->nsid : 1, .op_id = o->op_id };
	size_t len = 0;
	char *src = NULL;
	int rc;

	if (!o->exec_module)
		return 0;
	rc = nkv_bench_read_file(o->exec_module, &src, &len);
	if (!rc)
		rc = nkv_bench_store_module(uri, e.nsid, src, len);
	if (!rc && embedded) {
		nkv_exec_sha256(src, len, e.digest);
		e.klen = sizeof(NKV_BENCH_MODULE_KEY) - 1;
		memcpy(e.key, NKV_BENCH_MODULE_KEY, e.klen);
		rc = nkv_exec_allow(&e);
	}
	free(src);
	return rc;
}
