/* SPDX-License-Identifier: MIT */
/*
 * exec_slice.c - Exec (docs/exec.md) from the synchronous API: store a
 * KV-cache block (L layers x H heads x D bytes) and three Lua modules
 * (examples/exec/), then ask the target for each tensor-parallel rank's
 * heads (slice.lua: 1/TP of the bytes come back), byte-checked against
 * the same slice of a whole Retrieve; a digest of the block (digest.lua,
 * 16 bytes back) checked against one computed here; and a module that
 * tries every forbidden thing (forbidden.lua: all refused).
 *   cc -std=c11 exec_slice.c $(pkg-config --cflags --libs nkv)
 *   ./a.out vfio-user:/tmp/nkv.sock [MODULE_DIR]
 * The target must allowlist op-IDs 1, 2, 3 of namespace 1 for the three
 * modules stored under "exec/slice.lua", "exec/digest.lua" and
 * "exec/forbidden.lua" (tests/examples/run.sh shows how: --exec-allow).
 * Exit status: 0 ok, 1 a wrong answer, 2 bad arguments, 3 no controller
 * or a call that failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkv_host.h"

enum { L = 8, H = 16, D = 4096, TP = 8 };	/* a 512 KiB block */
#define BLOCK ((uint32_t)L * H * D)
static const char *const mods[] = { "slice", "digest", "forbidden" };

static void log_line(void *ctx, const char *line)
{
	fprintf(stderr, "nkv: %s\n", line), (void)ctx;
}

/* Store dir/NAME.lua under "exec/NAME.lua": 0 or an exit status. */
static int put_module(struct nkv_qpair *q, const char *dir, const char *name)
{
	static char src[65536];
	char path[512], key[64];
	struct nkv_result r;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s.lua", dir, name);
	snprintf(key, sizeof(key), "exec/%s.lua", name);
	f = fopen(path, "rb");
	if (!f)
		return fprintf(stderr, "%s: %s\n", path, strerror(errno)), 2;
	n = fread(src, 1, sizeof(src), f);
	fclose(f);
	if (nkv_store(q, key, (uint32_t)strlen(key), src, (uint32_t)n, 0, &r) || r.status)
		return fprintf(stderr, "store %s failed\n", key), 3;
	return 0;
}

/* Run op_id; 0, or an exit status with why. */
static int exec_call(struct nkv_qpair *q, uint32_t op_id, const char *in, void *out,
		     uint32_t ocap, uint32_t *olen)
{
	int rc = nkv_exec(q, "block", 5, op_id, in, (uint32_t)strlen(in), out, ocap, olen);

	if (rc < 0)
		return fprintf(stderr, "exec op %u: %s\n", op_id, strerror(-rc)), 3;
	if (rc > 0)
		return fprintf(stderr, "exec op %u: status %#x (%s)%s\n", op_id, rc,
			       nkv_status_str((uint16_t)rc),
			       rc == 0x1c0 ? ": not allowlisted (nkv-target --exec-allow)" : ""), 1;
	return 0;
}

/* Each rank's heads, checked against the whole block's bytes. */
static int ranks(struct nkv_qpair *q, const uint8_t *whole)
{
	static uint8_t out[BLOCK / TP];
	uint32_t r, l, olen, per = H / TP;
	char in[64];
	int rc;

	for (r = 0; r < TP; r++) {
		snprintf(in, sizeof(in), "%d %d %d %d %u", L, H, D, TP, r);
		rc = exec_call(q, 1, in, out, sizeof(out), &olen);
		if (rc)
			return rc;
		for (l = 0; l < L && olen == sizeof(out); l++)
			if (memcmp(out + (size_t)l * per * D, whole + ((size_t)l * H + r * per) * D,
				   (size_t)per * D))
				break;
		if (olen != sizeof(out) || l < L)
			return fprintf(stderr, "rank %u: wrong bytes\n", r), 1;
		printf("rank %u: %u of %u bytes, byte-checked against a Retrieve: ok\n", r, olen,
		       BLOCK);
	}
	return 0;
}

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--)
		h = (h ^ *p++) * 1099511628211ull;
	return h;
}

static int digest_and_forbidden(struct nkv_qpair *q, const uint8_t *whole)
{
	char out[256], want[17];
	uint32_t olen;
	int rc = exec_call(q, 2, "", out, sizeof(out) - 1, &olen);

	if (rc)
		return rc;
	out[olen < sizeof(out) ? olen : sizeof(out) - 1] = 0;
	snprintf(want, sizeof(want), "%016" PRIx64, fnv1a(whole, BLOCK));
	if (strcmp(out, want))
		return fprintf(stderr, "digest %s, want %s\n", out, want), 1;
	printf("digest: %s (16 bytes for %u): ok\n", out, BLOCK);
	rc = exec_call(q, 3, "", out, sizeof(out) - 1, &olen);
	if (rc)
		return rc;
	out[olen < sizeof(out) ? olen : sizeof(out) - 1] = 0;
	if (olen)
		return fprintf(stderr, "forbidden things that worked: %s\n", out), 1;
	printf("forbidden: every forbidden thing refused: ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	static uint8_t block[BLOCK], whole[BLOCK];
	const char *dir = argc > 2 ? argv[2] : "examples/exec";
	struct nkv_result r;
	struct nkv_qpair *q;
	struct nkv_ctrl *c;
	uint32_t i;
	int rc;

	nkv_set_log(log_line, NULL);
	if (argc < 2)
		return fprintf(stderr, "usage: %s URI [MODULE_DIR]\n", argv[0]), 2;
	rc = nkv_ctrl_connect(argv[1], NULL, &c);
	if (rc || (rc = nkv_qpair_create(c, NULL, &q)))
		return fprintf(stderr, "cannot connect to %s: %s\n", argv[1], strerror(-rc)), 3;
	for (i = 0; i < BLOCK; i++)
		block[i] = (uint8_t)(i * 2654435761u >> 13);
	for (i = 0, rc = 0; i < 3 && !rc; i++)
		rc = put_module(q, dir, mods[i]);
	if (!rc && (nkv_store(q, "block", 5, block, BLOCK, 0, &r) || r.status ||
		    nkv_retrieve(q, "block", 5, whole, BLOCK, &r) || r.status || r.dw0 != BLOCK)) {
		fprintf(stderr, "store or retrieve of the block failed\n");
		rc = 3;
	}
	if (!rc)
		rc = ranks(q, whole);
	if (!rc)
		rc = digest_and_forbidden(q, whole);
	if (!rc)
		printf("exec slice: every answer as expected: ok\n");
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	return rc;
}
