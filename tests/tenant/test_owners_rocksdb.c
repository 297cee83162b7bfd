/* SPDX-License-Identifier: MIT */
/*
 * test_owners_rocksdb.c - owners in the rocksdb backend (issue 48;
 * backends/rocksdb_owner.c): persisted with the key and counted again
 * when the database opens; a database written without owners opens with
 * every key owned by none; quotas and share-first eviction as on mem.
 * The core in this process, tenants set as a vfio-user transport does.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "be_op.h"
#include "tgt_host.h"
#include "target/backends/rocksdb.h"
#include "target/core/ns.h"
#include "target/tenant/tenant.h"

#define A 1001u
#define B 2002u
#define FULL NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_CAPACITY_EXCEEDED)

static struct h H;
static struct nkv_be *BE;	/* ns 1's backend, while started */
static char dir[64];
static char err[256];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/nkv-tenant-rocks-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(owners_rocksdb, .init = setup, .fini = teardown, .timeout = 60);

static struct nkv_be *rocks(uint64_t cap, int evict)
{
	struct nkv_be_param p[2] = { { "db", dir }, { "evict", "lru" } };
	struct nkv_be_conf c = { sizeof(c), .capacity = cap, .max_value = 1u << 20, .params = p,
				 .nparams = evict ? 2 : 1 };
	struct nkv_be *be = nkv_be_create("rocksdb", &c, err, sizeof(err));

	cr_assert_not_null(be, "%s", err);
	return be;
}

/* ns 1 = rocksdb on dir; tenants from here on (the core attaches it). */
static void start(uint64_t cap, int evict)
{
	BE = rocks(cap, evict);
	h_init_be(&H, NULL, BE);
	cr_assert_eq(h_enable(&H, 16), NKV_CSTS_RDY);
	cr_assert_eq(h_create_qpair(&H, 1, 64), 0);
}

static void as(uint32_t uid)
{
	nkv_tgt_ctrl_set_peer(H.c, uid, uid);
}

static uint16_t store(const char *key, uint32_t len)
{
	static uint8_t v[8192];

	return h_store(&H, 1, key, (uint32_t)strlen(key), v, len, 0);
}

static uint16_t retrieve(const char *key)
{
	uint8_t buf[8192];

	return h_retrieve(&H, 1, key, (uint32_t)strlen(key), buf, sizeof(buf), NULL);
}

/* Tenant id's keys and bytes in ns 1 (0, 0 when unknown there). */
static void owned(uint64_t id, uint64_t *keys, uint64_t *bytes)
{
	struct nkv_tenant_usage u[16];
	unsigned n = nkv_tenant_usage(nkv_subsys_tenants(H.ss), 1, u, 16), i;

	*keys = *bytes = 0;
	for (i = 0; i < n && i < 16; i++)
		if (u[i].id == id) {
			*keys = u[i].keys;
			*bytes = u[i].bytes;
		}
}

/* The worker loads owners before its first op after the attach: a
 * Store of a key of the test's makes sure it has run. */
static void loaded(void)
{
	as(9);
	cr_assert_eq(store("probe", 1), 0);
}

Test(owners_rocksdb, owners_persist_across_a_reopen)
{
	uint64_t k, b;

	start(64u << 20, 0);
	as(A);
	cr_assert_eq(store("a1", 1000), 0);
	cr_assert_eq(store("a2", 5000), 0);
	as(B);
	cr_assert_eq(store("b1", 3000), 0);
	cr_assert_eq(store("a2", 200), 0);	/* B takes a2 over */
	as(A);
	cr_assert_eq(h_kvx(&H, 1, NKV_KV_DELETE, "a1", 2, H_KEY_INLINE, H_DP_PRP, NULL, 0, NULL), 0);
	cr_assert_eq(store("a3", 100), 0);
	h_fini(&H);

	start(64u << 20, 0);
	loaded();
	owned(nkv_tenant_uid(A), &k, &b);
	cr_assert_eq(k, 1);
	cr_assert_eq(b, nkv_be_rocks_key_cost(2, 100));
	owned(nkv_tenant_uid(B), &k, &b);
	cr_assert_eq(k, 2);
	cr_assert_eq(b, nkv_be_rocks_key_cost(2, 3000) + nkv_be_rocks_key_cost(2, 200));
	owned(0, &k, &b);
	cr_assert_eq(k, 0, "every key has its owner");
	h_fini(&H);
}

/* ns 1's rocksdb_owner_records_total (the backend's metrics). */
static double owner_records(void)
{
	return be_counter(BE, "rocksdb_owner_records_total");
}

/* A tenant rewriting a key it owns writes no owner record (the one on
 * disk names it already); a new key, or another tenant's, does; the
 * owners after a reopen are those of the last Stores all the same. */
Test(owners_rocksdb, rewriting_ones_own_key_writes_no_owner_record)
{
	uint64_t k, b;
	double r0;
	int i;

	start(64u << 20, 0);
	loaded();
	r0 = owner_records();
	as(A);
	cr_assert_eq(store("k1", 100), 0);
	cr_assert_eq(owner_records(), r0 + 1, "a new key: its owner written");
	for (i = 0; i < 3; i++)
		cr_assert_eq(store("k1", 200 + (uint32_t)i), 0);
	cr_assert_eq(owner_records(), r0 + 1, "A rewrote its own key: no record");
	as(B);
	cr_assert_eq(store("k1", 300), 0);
	cr_assert_eq(owner_records(), r0 + 2, "B took it over: recorded");
	cr_assert_eq(store("k1", 400), 0);
	cr_assert_eq(owner_records(), r0 + 2);
	cr_assert_eq(h_kvx(&H, 1, NKV_KV_DELETE, "k1", 2, H_KEY_INLINE, H_DP_PRP, NULL, 0, NULL), 0);
	cr_assert_eq(store("k1", 500), 0);
	cr_assert_eq(owner_records(), r0 + 3, "deleted, then stored again: recorded");
	as(A);
	cr_assert_eq(store("k2", 100), 0);
	cr_assert_eq(store("k2", 100), 0);
	h_fini(&H);

	start(64u << 20, 0);
	loaded();
	owned(nkv_tenant_uid(B), &k, &b);
	cr_assert_eq(k, 1, "k1 is B's after the reopen");
	cr_assert_eq(b, nkv_be_rocks_key_cost(2, 500));
	owned(nkv_tenant_uid(A), &k, &b);
	cr_assert_eq(k, 1, "k2 is A's after the reopen");
	cr_assert_eq(b, nkv_be_rocks_key_cost(2, 100));
	h_fini(&H);
}

/* Keys written without tenants (as before owners, or by an embedded
 * target): owned by none after the open, until a tenant replaces one. */
Test(owners_rocksdb, a_database_without_owners_opens_with_owner_none)
{
	struct nkv_be *be = rocks(64u << 20, 0);
	uint8_t v[100] = { 0 };
	uint64_t k, b;

	/* Two keys through the backend alone: no core, no tenants. */
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "old0", 0, v, sizeof(v), NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "old1", 0, v, sizeof(v), NULL), 0);
	be->ops->destroy(be);
	start(64u << 20, 0);
	loaded();
	owned(0, &k, &b);
	cr_assert_eq(k, 2);
	cr_assert_eq(b, 2 * nkv_be_rocks_key_cost(4, 100));
	as(A);
	cr_assert_eq(store("old0", 10), 0);
	owned(nkv_tenant_uid(A), &k, &b);
	cr_assert_eq(k, 1);
	cr_assert_eq(retrieve("old1"), 0);
	h_fini(&H);
}

Test(owners_rocksdb, quota_and_share_first_eviction)
{
	uint64_t cap = 60 * nkv_be_rocks_key_cost(3, 4096);
	struct nkv_tenant_subject s = { .by = NKV_TENANT_BY_UID, .id = A };
	char key[16];
	unsigned i;

	start(cap, 1);
	as(B);
	for (i = 0; i < 20; i++) {
		snprintf(key, sizeof(key), "b%02u", i);
		cr_assert_eq(store(key, 4096), 0);
	}
	as(A);
	for (i = 0; i < 300; i++) {	/* 10x its share of 30 */
		snprintf(key, sizeof(key), "a%02u", i % 100);
		cr_assert_eq(store(key, 4096), 0, "store %u", i);
	}
	as(B);
	for (i = 0; i < 20; i++) {
		snprintf(key, sizeof(key), "b%02u", i);
		cr_assert_eq(retrieve(key), 0, "B's %s evicted", key);
	}
	cr_assert_eq(nkv_quota_set(nkv_subsys_tenants(H.ss), 1, &s, 0, 1), 0);
	as(A);
	cr_assert_eq(store("zz", 10), FULL, "past A's quota of 1 key");
	h_fini(&H);
}

/* Stores queued together in one batch still meet the quota exactly:
 * a batch of Stores by one tenant with a 10-key quota stores 10. */
Test(owners_rocksdb, quota_holds_within_one_batch)
{
	struct nkv_tenant_subject s = { .by = NKV_TENANT_BY_UID, .id = A };
	uint8_t v[64] = { 0 };
	struct nkv_sqe q;
	struct nkv_cqe e;
	uint64_t k, b, iova;
	unsigned i, ok = 0;

	start(64u << 20, 0);
	cr_assert_eq(nkv_quota_set(nkv_subsys_tenants(H.ss), 1, &s, 0, 10), 0);
	as(A);
	iova = h_alloc(&H, 4096);
	memcpy(h_ptr(&H, iova), v, sizeof(v));
	for (i = 0; i < 32; i++) {	/* all submitted before any is reaped */
		char key[8];

		snprintf(key, sizeof(key), "q%02u", i);
		h_kv(&q, NKV_KV_STORE, 1, key, (uint32_t)strlen(key), sizeof(v), 0);
		h_prp(&H, &q, iova, sizeof(v));
		h_submit(&H, 1, &q);
	}
	for (i = 0; i < 32; i++) {
		cr_assert_eq(h_reap(&H, 1, &e), 0);
		ok += nkv_cqe_status(e.dw3) == 0;
	}
	cr_assert_eq(ok, 10);
	owned(nkv_tenant_uid(A), &k, &b);
	cr_assert_eq(k, 10);
	h_fini(&H);
}
