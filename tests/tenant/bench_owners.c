/* SPDX-License-Identifier: MIT */
/*
 * bench_owners.c - what keeping owners costs the mem backend per op
 * (issue 48, src/target/tenant/owners.c): Stores of new keys, Stores
 * that replace, Retrieves and Deletes of N keys of 64 bytes, on a
 * namespace without tenants (be->tenants NULL: each hook one branch) and
 * on one attached to tenants (every key in the owner map, as nkv-target
 * runs), the two interleaved round after round in one process so the
 * machine's noise falls on both. Not a test: `make bench-owners`, then
 * build/bench/bench_owners [N [ROUNDS [VALUE_BYTES]]] (default 100000 5
 * 64). Prints the median ns/op of each and their ratio.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "target/backends/registry.h"
#include "target/core/core.h"
#include "target/tenant/tenant.h"

static uint8_t val[65536];
static uint32_t vlen = 64;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void done(struct nkv_be_op *op)
{
	(void)op;
}

/* One op, completed inline by mem: its status. */
static uint16_t run(struct nkv_be *be, uint8_t opc, uint32_t i, uint64_t owner)
{
	struct nkv_tgt_cmd cmd;
	struct iovec iov = { val, vlen };

	memset(&cmd.op, 0, sizeof(cmd.op));
	cmd.op.opc = opc;
	cmd.op.klen = (uint8_t)snprintf((char *)cmd.op.key, sizeof(cmd.op.key), "k%08x", i);
	cmd.op.len = opc == NKV_KV_DELETE ? 0 : vlen;
	cmd.op.owner = owner;
	cmd.op.done = done;
	cmd.iov = &iov;
	cmd.iovcnt = 1;
	cmd.produced = 0;
	cmd.list = 0;
	cmd.fault = 0;
	cmd.stable = 1;
	cmd.msg_out = 0;
	nkv_tgt_data_start(&cmd, 0);
	be->ops->submit(be, &cmd.op);
	return cmd.op.status;
}

static const uint8_t ops[4] = { NKV_KV_STORE, NKV_KV_STORE, NKV_KV_RETRIEVE, NKV_KV_DELETE };
static const char *const names[4] = { "store (new key)", "store (replace)", "retrieve", "delete" };

/* One round on be: ns/op of each phase into ns[]. */
static void round_of(struct nkv_be *be, uint32_t n, uint64_t owner, double ns[4])
{
	uint64_t t;
	uint32_t i, p;

	for (p = 0; p < 4; p++) {
		t = now_ns();
		for (i = 0; i < n; i++)
			if (run(be, ops[p], i, owner))
				fprintf(stderr, "op %u key %u failed\n", p, i);
		ns[p] = (double)(now_ns() - t) / n;
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	uint32_t n = argc > 1 ? (uint32_t)atoi(argv[1]) : 100000;
	unsigned rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 5, r, p, k;
	struct nkv_be_conf c = { sizeof(c), .capacity = 4ull << 30 };
	struct nkv_tenants *t = nkv_tenants_create();
	double (*ns)[2][4] = calloc(rounds, sizeof(*ns)), col[64];
	char err[256];
	struct nkv_be *be[2];

	if (argc > 3)
		vlen = (uint32_t)atoi(argv[3]);
	if (!t || !ns || rounds > 64 || !vlen || vlen > sizeof(val))
		return 1;
	for (k = 0; k < 2; k++) {
		be[k] = nkv_be_create("mem", &c, err, sizeof(err));
		if (!be[k]) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
	}
	be[1]->tenants = t;	/* as the core attaches it */
	be[1]->tenant_nsid = 1;
	for (r = 0; r < rounds; r++)
		for (k = 0; k < 2; k++)
			round_of(be[k], n, k ? nkv_tenant_uid(0) : 0, ns[r][k]);
	printf("mem backend, %u keys, values of %u B, %u rounds interleaved; median ns/op\n", n,
	       vlen, rounds);
	printf("%-18s %12s %12s %8s\n", "op", "no tenants", "tenants", "ratio");
	for (p = 0; p < 4; p++) {
		double m[2];

		for (k = 0; k < 2; k++) {
			for (r = 0; r < rounds; r++)
				col[r] = ns[r][k][p];
			qsort(col, rounds, sizeof(col[0]), cmp);
			m[k] = col[rounds / 2];
		}
		printf("%-18s %12.1f %12.1f %8.2f\n", names[p], m[0], m[1], m[1] / m[0]);
	}
	for (k = 0; k < 2; k++)
		be[k]->ops->destroy(be[k]);
	nkv_tenants_destroy(t);
	free(ns);
	return 0;
}
