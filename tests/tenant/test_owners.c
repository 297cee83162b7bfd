/* SPDX-License-Identifier: MIT */
/*
 * test_owners.c - owners, quotas, share-first eviction and metering in a
 * shared namespace (src/target/tenant/owners.c, meter.c; the mem
 * backend's side in backends/mem.c), against the controller core in this
 * process; tenants are peer uids the test sets as a vfio-user transport
 * does. The backend clock is the test's (nkv_be_clock_set), so the
 * byte-seconds expected are computed here exactly.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tgt_host.h"
#include "target/core/ns.h"
#include "target/tenant/tenant.h"

static struct h H;
static struct nkv_tenants *T;
static uint64_t now_ms = 1000000;

#define SC(sc) NKV_STATUS(NKV_SCT_GENERIC, sc)
#define FULL SC(NKV_SC_CAPACITY_EXCEEDED)
#define A 1001u		/* the tenants */
#define B 2002u

static uint64_t test_clock(void)
{
	return __atomic_load_n(&now_ms, __ATOMIC_RELAXED);
}

/* ns 1 = mem of capacity bytes, --evict lru when evict. */
static void start(uint64_t capacity, int evict)
{
	struct nkv_be_param p = { "evict", "lru" };
	struct nkv_be_conf kd = { sizeof(kd), .capacity = capacity, .max_value = 4096,
				  .params = evict ? &p : NULL, .nparams = evict ? 1 : 0 };

	nkv_be_clock_set(test_clock);
	h_init(&H, NULL, &kd);
	T = nkv_subsys_tenants(H.ss);
	cr_assert_eq(h_enable(&H, 16), NKV_CSTS_RDY);
	cr_assert_eq(h_create_qpair(&H, 1, 64), 0);
}

static void teardown(void)
{
	h_fini(&H);
	nkv_be_clock_set(NULL);
}

TestSuite(owners, .fini = teardown, .timeout = 60);

static void as(uint32_t uid)
{
	nkv_tgt_ctrl_set_peer(H.c, uid, uid);
}

static uint16_t store(const char *key, uint32_t len, uint32_t opts)
{
	static uint8_t v[4096];

	return h_store(&H, 1, key, (uint32_t)strlen(key), v, len, opts);
}

static uint16_t retrieve(const char *key)
{
	uint8_t buf[4096];

	return h_retrieve(&H, 1, key, (uint32_t)strlen(key), buf, sizeof(buf), NULL);
}

static struct nkv_tenant_usage usage(uint32_t uid)
{
	struct nkv_tenant_usage u[16], none;
	unsigned n = nkv_tenant_usage(T, 1, u, 16), i;

	for (i = 0; i < n && i < 16; i++)
		if (u[i].id == nkv_tenant_uid(uid))
			return u[i];
	memset(&none, 0, sizeof(none));
	return none;
}

static void quota(uint32_t uid, uint64_t bytes, uint64_t keys)
{
	struct nkv_tenant_subject s = { .by = NKV_TENANT_BY_UID, .id = uid };

	cr_assert_eq(nkv_quota_set(T, 1, &s, bytes, keys), 0);
}

static char *key(char *buf, char who, unsigned i)
{
	snprintf(buf, 16, "%c%u", who, i);
	return buf;
}

/* What a key of a few bytes with a value of len costs (mem.h). */
static uint64_t cost(uint32_t len)
{
	return nkv_be_mem_key_cost(len);
}

Test(owners, quota_answers_81h_to_that_tenant_only)
{
	char k[16];
	unsigned i;

	start(64u << 20, 0);
	quota(A, 3 * cost(1000), 0);
	as(A);
	for (i = 0; i < 3; i++)
		cr_assert_eq(store(key(k, 'a', i), 1000, 0), 0);
	cr_assert_eq(store("a3", 1000, 0), FULL, "past its quota");
	cr_assert_eq(store("a0", 1000, 0), 0, "a replace within it");
	cr_assert_eq(store("a0", 1001, 0), 0, "a replace a little larger");
	as(B);
	cr_assert_eq(store("b0", 1000, 0), 0, "another tenant is not limited");
	cr_assert_eq(usage(A).keys, 3);
	cr_assert_eq(usage(A).over_quota, 1);
	cr_assert_eq(usage(B).over_quota, 0);
	/* A key quota too; a Delete gives room back. */
	quota(B, 0, 1);
	cr_assert_eq(store("b1", 10, 0), FULL);
	cr_assert_eq(h_kvx(&H, 1, NKV_KV_DELETE, "b0", 2, H_KEY_INLINE, H_DP_PRP, NULL, 0, NULL), 0);
	cr_assert_eq(store("b1", 10, 0), 0);
}

/* A content-addressed Store that finds the key (89h) leaves the owner;
 * a plain Store by another tenant replaces it and takes it over. */
Test(owners, owner_is_the_last_replacer)
{
	start(64u << 20, 0);
	as(B);
	cr_assert_eq(store("shared", 100, 0), 0);
	as(A);
	cr_assert_eq(store("shared", 100, NKV_STORE_MUST_NOT_EXIST), SC(NKV_SC_KV_KEY_EXISTS));
	cr_assert_eq(usage(B).keys, 1);
	cr_assert_eq(usage(A).keys, 0);
	cr_assert_eq(retrieve("shared"), 0, "keys stay namespace-wide");
	cr_assert_eq(store("shared", 200, 0), 0);
	cr_assert_eq(usage(B).keys, 0);
	cr_assert_eq(usage(A).keys, 1);
	cr_assert_eq(usage(A).bytes, cost(200));
}

/* Tenant A floods a full namespace with 10x its share while B's keys sit
 * within B's: every eviction takes A's keys, none of B's. */
Test(owners, flood_at_10x_evicts_none_of_another_tenants_share)
{
	uint64_t cap = 100 * cost(1000);
	char k[16];
	unsigned i, j, nb = 40;

	start(cap, 1);
	as(B);
	for (i = 0; i < nb; i++)
		cr_assert_eq(store(key(k, 'b', i), 1000, 0), 0);
	as(A);
	for (i = 0; i < 10 * 50; i++) {	/* 10x its equal share (50 keys) */
		cr_assert_eq(store(key(k, 'a', i), 1000, 0), 0, "store %u", i);
		/* A's touch loop: its latest keys read again and again, so
		 * B's are the least recently used ones in the namespace. */
		for (j = i >= 5 ? i - 5 : 0; j <= i; j++)
			cr_assert_eq(retrieve(key(k, 'a', j)), 0, "A's key %u of %u", j, i);
	}
	as(B);
	for (i = 0; i < nb; i++)
		cr_assert_eq(retrieve(key(k, 'b', i)), 0, "B's key %u was evicted", i);
	cr_assert_eq(usage(B).evicted, 0);
	cr_assert_gt(usage(A).evicted, 400);
	cr_assert_eq(usage(B).keys, nb);
}

/* With a quota the share is the quota: A over it is refused (81h), B,
 * within its quota, keeps everything even when the namespace fills. */
Test(owners, quota_share_protects_a_hot_set)
{
	uint64_t cap = 100 * cost(1000);
	char k[16];
	unsigned i;

	start(cap, 1);
	quota(B, 30 * cost(1000), 0);
	as(B);
	for (i = 0; i < 30; i++)
		cr_assert_eq(store(key(k, 'b', i), 1000, 0), 0);
	as(A);
	for (i = 0; i < 1000; i++)
		cr_assert_eq(store(key(k, 'a', i), 1000, 0), 0);
	for (i = 0; i < 30; i++)
		cr_assert_eq(retrieve(key(k, 'b', i)), 0, "B's key %u", i);
	cr_assert_eq(usage(B).evicted, 0);
	cr_assert_eq(usage(A).keys, 70);
}

static uint16_t store_ttl(const char *key, uint32_t len, uint32_t ttl_s)
{
	uint64_t saved = H.bump, iova = h_alloc(&H, len);
	struct nkv_sqe s;
	uint16_t st;

	h_kv(&s, NKV_KV_STORE, 1, key, (uint32_t)strlen(key), len, NKV_STORE_TTL);
	s.cdw12 = ttl_s;
	h_prp(&H, &s, iova, len);
	st = h_cmd(&H, 1, &s, NULL);
	H.bump = saved;
	return st;
}

/* Byte-seconds integrate exactly on the backend clock: the test's sum,
 * within 1 % (exact but for the double's rounding). */
Test(owners, metering_matches_the_computed_byte_seconds)
{
	struct nkv_tenant_usage u;
	double want_d, want_t;

	start(64u << 20, 0);
	as(A);
	cr_assert_eq(store("d1", 1000, 0), 0);			/* t = 0 */
	now_ms += 10000;
	cr_assert_eq(store_ttl("t1", 3000, 3600), 0);		/* t = 10 s */
	now_ms += 5000;
	cr_assert_eq(store("d1", 2000, 0), 0);			/* t = 15 s: replaced */
	now_ms += 7000;
	cr_assert_eq(h_kvx(&H, 1, NKV_KV_DELETE, "d1", 2, H_KEY_INLINE, H_DP_PRP, NULL, 0, NULL),
		     0);					/* t = 22 s */
	cr_assert_eq(retrieve("t1"), 0);
	now_ms += 8000;						/* t = 30 s */
	u = usage(A);
	want_d = (double)cost(1000) * 15 + (double)cost(2000) * 7;
	want_t = (double)cost(3000) * 20;
	cr_assert_float_eq(u.byte_seconds[0], want_d, want_d / 100, "durable %f, want %f",
			   u.byte_seconds[0], want_d);
	cr_assert_float_eq(u.byte_seconds[1], want_t, want_t / 100, "ttl %f, want %f",
			   u.byte_seconds[1], want_t);
	cr_assert_eq(u.bytes, cost(3000));
	cr_assert_eq(u.bytes_in, 1000 + 3000 + 2000);
	cr_assert_eq(u.bytes_out, 3000);
	/* Another tenant stored nothing: nothing metered. */
	as(B);
	cr_assert_eq(retrieve("t1"), 0);
	cr_assert_eq(usage(B).byte_seconds[0] + usage(B).byte_seconds[1], 0);
	cr_assert_eq(usage(B).bytes_out, 3000);
}

/* Hosts claiming tenant after tenant cannot grow the tables: past
 * NKV_TENANT_MAX a newcomer's keys count as none's, still counted. */
Test(owners, tenants_past_the_table_count_as_none)
{
	struct nkv_tenant_usage *u = calloc(NKV_TENANT_MAX + 8, sizeof(*u));
	char k[16];
	unsigned i, n;

	cr_assert_not_null(u);
	start(64u << 20, 0);
	for (i = 0; i < NKV_TENANT_MAX + 5; i++) {
		as(10000 + i);
		cr_assert_eq(store(key(k, 'x', i), 10, 0), 0);
	}
	n = nkv_tenant_usage(T, 1, u, NKV_TENANT_MAX + 8);
	cr_assert_eq(n, NKV_TENANT_MAX + 1, "the table grew to %u", n);
	for (i = 0; i < n; i++)
		if (u[i].id == 0)
			cr_assert_geq(u[i].keys, 5);
	free(u);
}
