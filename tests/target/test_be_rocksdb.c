/* SPDX-License-Identifier: MIT */
/* The rocksdb backend on its own, on a temporary directory: options,
 * durability across reopen, List, TTL on a set clock, ephemeral values,
 * column families, capacity and --evict lru. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "target/backends/mem.h"
#include "target/backends/registry.h"
#include "target/backends/rocksdb.h"
#include "target/core/core.h"

#include "be_op.h"

TestSuite(be_rocksdb, .timeout = 60);

static char err[256];
static char dir[64];

static const uint16_t absent = NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS);
static const uint16_t full = NKV_STATUS(0, NKV_SC_CAPACITY_EXCEEDED);

static uint64_t now_ms = 1000000;	/* atomic */

static uint64_t test_clock(void)
{
	return __atomic_load_n(&now_ms, __ATOMIC_RELAXED);
}

static void clock_at(uint64_t ms)
{
	__atomic_store_n(&now_ms, ms, __ATOMIC_RELAXED);
}

static void rm_dir(void)
{
	char cmd[128];

	if (!dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/nkv-rocks-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	nkv_be_clock_set(test_clock);
	clock_at(1000000);
}

static void teardown(void)
{
	rm_dir();
	nkv_be_clock_set(NULL);
}

/* A namespace named name on dir, with extra options (name, value pairs). */
static struct nkv_be *open_ns(const char *name, uint64_t cap, const char *evict)
{
	struct nkv_be_param p[3] = { { "db", dir }, { "evict", evict } };
	struct nkv_be_conf c = { sizeof(c), .ns_name = name, .capacity = cap,
				 .max_value = 4u << 20, .params = p, .nparams = evict ? 2 : 1 };
	struct nkv_be *be = nkv_be_create("rocksdb", &c, err, sizeof(err));

	cr_assert_not_null(be, "%s", err);
	return be;
}

/* A value of len bytes derived from seed. */
static uint8_t *pattern(size_t len, unsigned seed)
{
	uint8_t *p = malloc(len);
	size_t i;

	cr_assert_not_null(p);
	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 12));
	return p;
}

Test(be_rocksdb, options_are_checked)
{
	struct nkv_be_param p[2] = { { "sync", "sometimes" } };
	struct nkv_be_conf c = { sizeof(c), .params = p, .nparams = 1 };

	cr_assert_eq(nkv_be_conf_check("rocksdb", &c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "--db DIR is required"), "%s", err);
	p[1] = (struct nkv_be_param){ "db", "/tmp/x" };
	c.nparams = 2;
	cr_assert_eq(nkv_be_conf_check("rocksdb", &c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "--sync sometimes"), "%s", err);
	p[0] = (struct nkv_be_param){ "compression", "brotli" };
	cr_assert_eq(nkv_be_conf_check("rocksdb", &c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "--compression brotli"), "%s", err);
	p[0] = (struct nkv_be_param){ "evict", "fifo" };
	cr_assert_eq(nkv_be_conf_check("rocksdb", &c, err, sizeof(err)), -EINVAL);
	p[0] = (struct nkv_be_param){ "compression", "zstd" };
	cr_assert_eq(nkv_be_conf_check("rocksdb", &c, err, sizeof(err)), 0, "%s", err);
	errno = 0;
	cr_assert_null(nkv_be_create("rocksdb", &(struct nkv_be_conf){ sizeof(c) }, err,
				     sizeof(err)));
	cr_assert_eq(errno, EINVAL);
}

Test(be_rocksdb, values_and_counts_survive_reopen, .init = setup, .fini = teardown)
{
	uint8_t *small = pattern(4096, 1), *big = pattern(2u << 20, 2), *got = malloc(2u << 20);
	struct nkv_be *be = open_ns("gpukv", 1ull << 30, NULL);
	uint64_t bytes;
	uint32_t dw0;

	cr_assert_eq(be->store_opts, NKV_STORE_VENDOR_MASK);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "small", 0, small, 4096, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "big", 0, big, 2u << 20, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "gone", 0, small, 100, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_DELETE, "gone", 0, NULL, 0, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_DELETE, "gone", 0, NULL, 0, NULL), absent);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "small", NKV_STORE_MUST_NOT_EXIST, small, 1, NULL),
		     NKV_STATUS(0, NKV_SC_KV_KEY_EXISTS));
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "nope", NKV_STORE_MUST_EXIST, small, 1, NULL), absent);
	bytes = nkv_be_rocks_key_cost(5, 4096) + nkv_be_rocks_key_cost(3, 2u << 20);
	cr_assert_eq(be->ops->keys_used(be), 2);
	cr_assert_eq(be->ops->bytes_used(be), bytes);
	be->ops->destroy(be);

	be = open_ns("gpukv", 1ull << 30, NULL);
	cr_assert_eq(be->ops->keys_used(be), 2, "recounted at open");
	cr_assert_eq(be->ops->bytes_used(be), bytes);
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "big", 0, got, 2u << 20, &dw0), 0);
	cr_assert_eq(dw0, 2u << 20);
	cr_assert_eq(memcmp(got, big, 2u << 20), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "small", 0, got, 10, &dw0), 0, "truncated");
	cr_assert_eq(dw0, 4096);
	cr_assert_eq(memcmp(got, small, 10), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "small", 0, NULL, 0, &dw0), 0, "size query");
	cr_assert_eq(dw0, 4096);
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "gone", 0, NULL, 0, NULL), absent);
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "big", 0, NULL, 0, NULL), 0);
	be->ops->destroy(be);
	free(small);
	free(big);
	free(got);
}

Test(be_rocksdb, namespaces_are_column_families, .init = setup, .fini = teardown)
{
	struct nkv_be *a = open_ns("a", 1 << 20, NULL), *b = open_ns("b", 1 << 20, NULL);
	char keys[128], v[4];

	cr_assert_eq(be_op_run(a, NKV_KV_STORE, "k", 0, "va", 2, NULL), 0);
	cr_assert_eq(be_op_run(b, NKV_KV_STORE, "k", 0, "vbb", 3, NULL), 0);
	cr_assert_eq(be_op_run(b, NKV_KV_STORE, "l", 0, "x", 1, NULL), 0);
	be_list_keys(a, "", keys, sizeof(keys));
	cr_assert_str_eq(keys, "k");
	a->ops->destroy(a);
	b->ops->destroy(b);
	b = open_ns("b", 1 << 20, NULL);
	cr_assert_eq(b->ops->keys_used(b), 2);
	cr_assert_eq(be_op_run(b, NKV_KV_RETRIEVE, "k", 0, v, sizeof(v), NULL), 0);
	cr_assert_eq(memcmp(v, "vbb", 3), 0);
	b->ops->destroy(b);
}

/* What nkv-target's start-up line shows: the settings, defaults filled
 * in; no command time (RocksDB has no timeout of its own). */
Test(be_rocksdb, describe_settings, .init = setup, .fini = teardown)
{
	struct nkv_be *a = open_ns("a", 1 << 20, "lru");
	char d[512], want[256];

	cr_assert(a->ops->describe);
	a->ops->describe(a, d, sizeof(d));
	snprintf(want, sizeof(want), "db=%s column_family=a sync=always compression=none "
		 "blob_min=65536 evict=lru", dir);
	cr_expect_str_eq(d, want);
	cr_expect_eq(a->cmd_timeout_ms, 0u);
	a->ops->destroy(a);
}

/* List: keys >= the start key in byte order (a prefix first), the start
 * key itself included, the ephemeral tier's keys merged in. */
Test(be_rocksdb, list_start_rule_merges_the_tiers, .init = setup, .fini = teardown)
{
	struct nkv_be *be = open_ns("gpukv", 1 << 20, NULL);
	char keys[256];

	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "b", 0, "1", 1, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "ba", 0, "1", 1, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "d", 0, "1", 1, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "a", NKV_STORE_EPHEMERAL, "1", 1, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "c", NKV_STORE_EPHEMERAL, "1", 1, NULL), 0);
	be_list_keys(be, "", keys, sizeof(keys));
	cr_assert_str_eq(keys, "a,b,ba,c,d");
	be_list_keys(be, "b", keys, sizeof(keys));
	cr_assert_str_eq(keys, "b,ba,c,d", "the start key included");
	be_list_keys(be, "bb", keys, sizeof(keys));
	cr_assert_str_eq(keys, "c,d", "absent start: the next key on");
	be->ops->destroy(be);
}

Test(be_rocksdb, ttl_expires_on_the_clock_and_across_reopen, .init = setup, .fini = teardown)
{
	struct nkv_be *be = open_ns("gpukv", 1 << 20, NULL);
	char keys[128], v[8];

	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "p", 0, "perm", 4, NULL), 0);
	cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, "t", NKV_STORE_TTL, 10, "ttl!", 4, NULL), 0);
	cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, "u", NKV_STORE_TTL, 5, "u", 1, NULL), 0);
	be->ops->destroy(be);
	/* Reopened: the expiries are on the wall clock, which moved on by
	 * the (sub-second) reopen, so the checks keep a margin. */
	be = open_ns("gpukv", 1 << 20, NULL);	/* the TTL'd values are durable */
	cr_assert_eq(be->ops->keys_used(be), 3);
	clock_at(1000000 + 4000);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "u", NKV_STORE_TOUCH, NULL, 0, NULL), 0);
	clock_at(1000000 + 8500);
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "t", 0, v, sizeof(v), NULL), 0);
	cr_assert_eq(memcmp(v, "ttl!", 4), 0);
	be_list_keys(be, "", keys, sizeof(keys));
	cr_assert_str_eq(keys, "p,t,u", "u touched at 4 s: lives to 9 s");
	clock_at(1000000 + 10000);
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "t", 0, NULL, 0, NULL), absent);
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "t", 0, v, sizeof(v), NULL), absent);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "t", NKV_STORE_MUST_EXIST, "x", 1, NULL), absent);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "t", NKV_STORE_TOUCH, NULL, 0, NULL), absent);
	be_list_keys(be, "", keys, sizeof(keys));
	cr_assert_str_eq(keys, "p");
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "u", 0, "plain", 5, NULL), 0, "no TTL");
	clock_at(1000000 + 100000);
	be_list_keys(be, "", keys, sizeof(keys));
	cr_assert_str_eq(keys, "p,u");
	cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, "p", NKV_STORE_TOUCH | NKV_STORE_TTL, 1, NULL, 0,
			    NULL), 0);
	clock_at(1000000 + 101000);
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "p", 0, NULL, 0, NULL), absent, "touch gave it a TTL");
	cr_assert_eq(be->ops->keys_used(be), 1, "expired keys removed");
	cr_assert_eq(be->ops->bytes_used(be), nkv_be_rocks_key_cost(1, 5));
	be->ops->destroy(be);
}

/* An ephemeral Store over a durable key removes the durable copy (so a
 * restart never brings it back); ephemeral values are lost at exit. */
Test(be_rocksdb, ephemeral_is_never_written, .init = setup, .fini = teardown)
{
	struct nkv_be *be = open_ns("gpukv", 1 << 20, NULL);
	char v[8];
	uint32_t dw0;

	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k", 0, "durable", 7, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k", NKV_STORE_EPHEMERAL, "eph", 3, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "k", 0, v, sizeof(v), &dw0), 0);
	cr_assert_eq(dw0, 3);
	cr_assert_eq(memcmp(v, "eph", 3), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "e", NKV_STORE_EPHEMERAL, "e", 1, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "e", NKV_STORE_MUST_NOT_EXIST, "e", 1, NULL),
		     NKV_STATUS(0, NKV_SC_KV_KEY_EXISTS), "exists in the tier");
	/* A durable Store over a volatile key takes it out of the tier. */
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "e", 0, "dur", 3, NULL), 0);
	cr_assert_eq(be->ops->keys_used(be), 2);
	be->ops->destroy(be);
	be = open_ns("gpukv", 1 << 20, NULL);
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "k", 0, NULL, 0, NULL), absent, "no old value back");
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "e", 0, v, sizeof(v), &dw0), 0);
	cr_assert_eq(dw0, 3);
	cr_assert_eq(be->ops->keys_used(be), 1);
	be->ops->destroy(be);
}

Test(be_rocksdb, full_answers_81h_without_evict, .init = setup, .fini = teardown)
{
	uint64_t cap = 3 * nkv_be_rocks_key_cost(2, 4096);
	struct nkv_be *be = open_ns("gpukv", cap, NULL);
	uint8_t *v = pattern(4096, 3);

	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k1", 0, v, 4096, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k2", 0, v, 4096, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k3", 0, v, 4096, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k4", 0, v, 4096, NULL), full);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k3", 0, v, 4000, NULL), 0, "smaller replace fits");
	cr_assert_eq(be->ops->keys_used(be), 3);
	cr_assert_null(be->ops->evictions ? NULL : (void *)1, "evictions are reported");
	cr_assert_eq(be->ops->evictions(be), 0);
	be->ops->destroy(be);
	free(v);
}

/* --evict lru: the least recently retrieved keys make room. */
Test(be_rocksdb, evict_lru_deletes_least_recently_retrieved, .init = setup, .fini = teardown)
{
	uint64_t cap = 3 * nkv_be_rocks_key_cost(2, 4096);
	struct nkv_be *be = open_ns("gpukv", cap, "lru");
	uint8_t *v = pattern(4096, 4), got[16];

	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k1", 0, v, 4096, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k2", 0, v, 4096, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k3", 0, v, 4096, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "k1", 0, got, sizeof(got), NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "k4", 0, v, 4096, NULL), 0, "k2 evicted");
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "k2", 0, NULL, 0, NULL), absent);
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "k1", 0, NULL, 0, NULL), 0);
	cr_assert_eq(be->ops->evictions(be), 1);
	cr_assert_eq(be->ops->keys_used(be), 3);
	cr_assert_leq(be->ops->bytes_used(be), cap);
	be->ops->destroy(be);
	be = open_ns("gpukv", cap, "lru");
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "k2", 0, NULL, 0, NULL), absent, "evicted durably");
	cr_assert_eq(be->ops->keys_used(be), 3);
	be->ops->destroy(be);
	free(v);
}

/* ---- a disk that fills: --db on a 32 MiB tmpfs ---- */

#define FILL_KEYS 64

static int mounted;

/* Mount a size-MiB tmpfs on dir (remount when already there). */
static int tmpfs_mount(unsigned mib)
{
	char cmd[192];

	snprintf(cmd, sizeof(cmd), "sudo -n mount -t tmpfs -o %ssize=%um tmpfs '%s' 2>/dev/null",
		 mounted ? "remount," : "", mib, dir);
	return system(cmd);
}

static void setup_tmpfs(void)
{
	setup();
	if (tmpfs_mount(32)) {
		teardown();
		dir[0] = 0;
		cr_skip_test("disk_fills: no tmpfs to fill (sudo -n mount -t tmpfs not allowed)");
	}
	mounted = 1;
}

static void teardown_tmpfs(void)
{
	char cmd[128];

	if (mounted) {
		snprintf(cmd, sizeof(cmd), "sudo -n umount '%s'", dir);
		cr_assert_eq(system(cmd), 0, "umount %s", dir);
		mounted = 0;
	}
	if (dir[0])
		teardown();
}

/* Key i's value: every other one 2 MiB (a blob), the rest 4 KiB. */
static size_t fill_len(int i)
{
	return i % 2 ? 2u << 20 : 4096;
}

static int fill_status_ok(uint16_t st)
{
	return st == full || st == NKV_STATUS(0, NKV_SC_KV_UNRECOVERED_ERROR);
}

/* Every key as want says: 1 its value byte for byte, 0 absent. */
static void fill_check(struct nkv_be *be, const int *want, uint8_t *got)
{
	char key[16];
	uint32_t dw0;
	int i;

	for (i = 0; i < FILL_KEYS; i++) {
		uint8_t *v = pattern(fill_len(i), (unsigned)i);

		snprintf(key, sizeof(key), "f%02d", i);
		memset(got, 0, 2u << 20);
		if (want[i]) {
			cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, key, 0, got, 2u << 20, &dw0), 0, "%s", key);
			cr_assert_eq(dw0, fill_len(i), "%s", key);
			cr_assert_eq(memcmp(got, v, fill_len(i)), 0, "%s damaged", key);
		} else {
			cr_assert_eq(be_op_run(be, NKV_KV_EXIST, key, 0, NULL, 0, NULL), absent,
				     "%s was never acknowledged, or deleted", key);
		}
		free(v);
	}
}

/* Store key i (its pattern): the status. */
static uint16_t fill_store(struct nkv_be *be, int i)
{
	uint8_t *v = pattern(fill_len(i), (unsigned)i);
	char key[16];
	uint16_t st;

	snprintf(key, sizeof(key), "f%02d", i);
	st = be_op_run(be, NKV_KV_STORE, key, 0, v, fill_len(i), NULL);
	free(v);
	cr_assert(!st || fill_status_ok(st), "%s: status %#x", key, st);
	return st;
}

/* A file of mib MiB beside the database: room taken, to give back. */
static void filler(unsigned mib)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), mib ? "dd if=/dev/zero of='%s/filler' bs=1M count=%u status=none"
				       : "rm -f '%s/filler'", dir, mib);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* Stores until the disk is full: they fail with a status (81h, or 88h
 * when RocksDB names the error otherwise), reads go on, and every value
 * acknowledged before is intact; once room is freed Stores go on, and
 * a reopen on the disk made larger finds it all again. */
Test(be_rocksdb, disk_fills, .init = setup_tmpfs, .fini = teardown_tmpfs, .timeout = 30)
{
	struct nkv_be *be = open_ns("gpukv", 1ull << 30, NULL);
	uint8_t *got = malloc(2u << 20);
	int want[FILL_KEYS] = { 0 }, i, failed = 0, n = 0, first = -1;
	char key[16];
	uint16_t st;

	filler(8);
	for (i = 0; i < FILL_KEYS && failed < 3; i++) {	/* a few more after the first */
		want[i] = !fill_store(be, i);
		if (!want[i] && first < 0)
			first = i;
		failed += !want[i];
		n += want[i];
	}
	cr_assert_geq(failed, 1, "32 MiB never filled");
	cr_assert_geq(n, 4, "some Stores fit before the disk filled");
	fill_check(be, want, got);
	/* Deletes: what a Delete answers holds, whatever it is. */
	for (i = 0; i < 4; i += 2) {
		snprintf(key, sizeof(key), "f%02d", i);
		st = be_op_run(be, NKV_KV_DELETE, key, 0, NULL, 0, NULL);
		cr_assert(!st || fill_status_ok(st), "delete %s: status %#x", key, st);
		want[i] = want[i] && st;
	}
	fill_check(be, want, got);
	filler(0);	/* room again: the Store that failed first now fits */
	cr_assert_eq(fill_store(be, first), 0);
	want[first] = 1;
	fill_check(be, want, got);
	be->ops->destroy(be);

	cr_assert_eq(tmpfs_mount(96), 0, "remount larger");
	be = open_ns("gpukv", 1ull << 30, NULL);
	fill_check(be, want, got);
	for (n = 0, i = 0; i < FILL_KEYS; i++)
		n += want[i];
	cr_assert_eq(be->ops->keys_used(be), (uint64_t)n, "recounted");
	for (i = 0; i < FILL_KEYS && want[i]; i++)
		;
	cr_assert_eq(fill_store(be, i), 0, "f%02d fits on the larger disk", i);
	want[i] = 1;
	fill_check(be, want, got);
	be->ops->destroy(be);
	free(got);
}
