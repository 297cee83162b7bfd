/* SPDX-License-Identifier: MIT */
/* The rocksdb backend on its own, on a temporary directory: options,
 * durability across reopen, List, TTL on a set clock, ephemeral values,
 * column families, capacity and --evict lru. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <rocksdb/c.h>

#include "target/backends/mem.h"
#include "target/backends/registry.h"
#include "target/backends/rocksdb.h"
#include "target/core/core.h"

#include "be_op.h"
#include "tgt_host.h"

TestSuite(be_rocksdb, .timeout = 60);

#if defined(__SANITIZE_THREAD__)
/* librocksdb is not built with TSan: the ordering its own atomics give
 * (a memtable entry published before a reader finds it) is invisible,
 * so its memcpy and memcmp calls look like races with each other. The
 * calls it makes are not checked; every access of ours still is. */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
	return "called_from_lib:librocksdb.so\n";
}
#endif

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
	p[0] = (struct nkv_be_param){ "readers", "9" };
	cr_assert_eq(nkv_be_conf_check("rocksdb", &c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "--readers 9: want 0 to 8"), "%s", err);
	p[0] = (struct nkv_be_param){ "sync-apart", "16M" };
	cr_assert_eq(nkv_be_conf_check("rocksdb", &c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "--sync-apart 16M: want bytes"), "%s", err);
	p[0] = (struct nkv_be_param){ "sync-apart", "-1" };
	cr_assert_eq(nkv_be_conf_check("rocksdb", &c, err, sizeof(err)), -EINVAL);
	p[0] = (struct nkv_be_param){ "readers", "-1" };
	cr_assert_eq(nkv_be_conf_check("rocksdb", &c, err, sizeof(err)), -EINVAL);
	p[0] = (struct nkv_be_param){ "readers", "2x" };
	cr_assert_eq(nkv_be_conf_check("rocksdb", &c, err, sizeof(err)), -EINVAL);
	p[0] = (struct nkv_be_param){ "readers", "" };
	cr_assert_eq(nkv_be_conf_check("rocksdb", &c, err, sizeof(err)), -EINVAL);
	p[0] = (struct nkv_be_param){ "readers", "0" };
	cr_assert_eq(nkv_be_conf_check("rocksdb", &c, err, sizeof(err)), 0, "%s", err);
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

/* dir's database opened by hand, every family ("default", "gpukv",
 * "gpukv:meta", made when missing): to write a format-1 database and to
 * look at the records the backend wrote. */
struct raw_db {
	rocksdb_t *db;
	rocksdb_options_t *o;
	rocksdb_column_family_handle_t *cf[3];	/* default, values, meta */
};

static void raw_open(struct raw_db *r)
{
	const char *names[3] = { "default", "gpukv", "gpukv:meta" };
	const rocksdb_options_t *co[3];
	char *e = NULL;
	int i;

	r->o = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(r->o, 1);
	rocksdb_options_set_create_missing_column_families(r->o, 1);
	for (i = 0; i < 3; i++)
		co[i] = r->o;
	r->db = rocksdb_open_column_families(r->o, dir, 3, names, co, r->cf, &e);
	cr_assert_null(e, "%s", e);
}

static void raw_close(struct raw_db *r)
{
	int i;

	for (i = 0; i < 3; i++)
		rocksdb_column_family_handle_destroy(r->cf[i]);
	rocksdb_close(r->db);
	rocksdb_options_destroy(r->o);
}

/* The keys of family f, joined with ','. */
static void raw_keys(struct raw_db *r, int f, char *out, size_t outlen)
{
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(r->db, ro, r->cf[f]);
	size_t o = 0, kl;
	const char *k;

	out[0] = 0;
	for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		k = rocksdb_iter_key(it, &kl);
		o += (size_t)snprintf(out + o, outlen - o, "%s%.*s", o ? "," : "", (int)kl, k);
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
}

/* A format-1 record pair: 16-byte meta (no TTL) in front of the value,
 * and alone in the meta family. */
static void raw_put_v1(struct raw_db *r, const char *key, const uint8_t *val, uint32_t len)
{
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	uint8_t *rec = calloc(1, 16 + (size_t)len);
	char *e = NULL;
	int i;

	cr_assert_not_null(rec);
	for (i = 0; i < 4; i++)
		rec[12 + i] = (uint8_t)(len >> (8 * i));
	memcpy(rec + 16, val, len);
	rocksdb_put_cf(r->db, wo, r->cf[1], key, strlen(key), (const char *)rec, 16 + (size_t)len,
		       &e);
	cr_assert_null(e, "%s", e);
	rocksdb_put_cf(r->db, wo, r->cf[2], key, strlen(key), (const char *)rec, 16, &e);
	cr_assert_null(e, "%s", e);
	free(rec);
	rocksdb_writeoptions_destroy(wo);
}

/* Format 2: a small value without TTL is one record; a TTL or a value of
 * 64 KiB or more keeps its meta record; a key stored again drops the
 * record it no longer needs. The key index (sizes for the counts, the
 * keys for List) is rebuilt at open from both families, exactly. */
Test(be_rocksdb, one_record_per_small_key_and_the_index_rebuilt, .init = setup,
     .fini = teardown)
{
	uint8_t *small = pattern(4096, 3), *big = pattern(2u << 20, 4), *got = malloc(2u << 20);
	struct nkv_be *be = open_ns("gpukv", 1ull << 30, NULL);
	uint64_t bytes, keys;
	struct raw_db raw;
	char out[256];
	uint32_t dw0;

	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "a", 0, big, 128u << 10, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "a", 0, small, 4096, NULL), 0, "large to small");
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "b", 0, big, 100u << 10, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "ba", 0, small, 4096, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "c", 0, big, 2u << 20, NULL), 0);
	cr_assert_eq(be_op_run_ttl(be, NKV_KV_STORE, "ca", NKV_STORE_TTL, 3600, small, 10, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "d", 0, small, 7, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "b", 0, small, 5, NULL), 0, "large to small");
	cr_assert_eq(be_op_run(be, NKV_KV_DELETE, "d", 0, NULL, 0, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "d", NKV_STORE_MUST_EXIST, small, 7, NULL), absent);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "ba", NKV_STORE_MUST_NOT_EXIST, small, 7, NULL),
		     NKV_STATUS(0, NKV_SC_KV_KEY_EXISTS));
	keys = be->ops->keys_used(be);
	bytes = nkv_be_rocks_key_cost(1, 4096) + nkv_be_rocks_key_cost(1, 5) +
		nkv_be_rocks_key_cost(2, 4096) + nkv_be_rocks_key_cost(1, 2u << 20) +
		nkv_be_rocks_key_cost(2, 10);
	cr_assert_eq(keys, 5);
	cr_assert_eq(be->ops->bytes_used(be), bytes);
	be->ops->destroy(be);

	raw_open(&raw);
	raw_keys(&raw, 1, out, sizeof(out));
	cr_assert_str_eq(out, "a,b,ba,c,ca");
	raw_keys(&raw, 2, out, sizeof(out));
	cr_assert_str_eq(out, "c,ca", "meta records for the large value and the TTL alone");
	raw_close(&raw);

	be = open_ns("gpukv", 1ull << 30, NULL);
	cr_assert_eq(be->ops->keys_used(be), keys, "recounted at open");
	cr_assert_eq(be->ops->bytes_used(be), bytes);
	be_list_keys(be, "", out, sizeof(out));
	cr_assert_str_eq(out, "a,b,ba,c,ca");
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "c", 0, got, 2u << 20, &dw0), 0);
	cr_assert_eq(dw0, 2u << 20);
	cr_assert_eq(memcmp(got, big, 2u << 20), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "ba", 0, NULL, 0, &dw0), 0, "size query");
	cr_assert_eq(dw0, 4096);
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "b", 0, NULL, 0, NULL), 0, "no meta record");
	cr_assert_eq(be_op_run(be, NKV_KV_EXIST, "d", 0, NULL, 0, NULL), absent);
	cr_assert_eq(be_op_run(be, NKV_KV_DELETE, "c", 0, NULL, 0, NULL), 0);
	cr_assert_eq(be->ops->keys_used(be), keys - 1);
	be->ops->destroy(be);
	free(small);
	free(big);
	free(got);
}

/* A database of format 1 (a meta record for every key) opens as it is:
 * counted, listed and read; a key stored again loses its meta record. */
Test(be_rocksdb, format_1_database_opens, .init = setup, .fini = teardown)
{
	uint8_t *small = pattern(4096, 5), *big = pattern(100u << 10, 6), *got = malloc(100u << 10);
	uint64_t bytes = nkv_be_rocks_key_cost(1, 4096) + nkv_be_rocks_key_cost(1, 100u << 10) +
			 nkv_be_rocks_key_cost(1, 9);
	struct raw_db raw;
	struct nkv_be *be;
	char out[256];
	uint32_t dw0;

	raw_open(&raw);
	raw_put_v1(&raw, "x", small, 4096);
	raw_put_v1(&raw, "y", big, 100u << 10);
	raw_put_v1(&raw, "z", small, 9);
	raw_close(&raw);

	be = open_ns("gpukv", 1ull << 30, NULL);
	cr_assert_eq(be->ops->keys_used(be), 3);
	cr_assert_eq(be->ops->bytes_used(be), bytes);
	be_list_keys(be, "", out, sizeof(out));
	cr_assert_str_eq(out, "x,y,z");
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "y", 0, got, 100u << 10, &dw0), 0);
	cr_assert_eq(dw0, 100u << 10);
	cr_assert_eq(memcmp(got, big, 100u << 10), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "x", 0, small, 10, NULL), 0);
	bytes += nkv_be_rocks_key_cost(1, 10) - nkv_be_rocks_key_cost(1, 4096);
	cr_assert_eq(be->ops->bytes_used(be), bytes);
	be->ops->destroy(be);

	raw_open(&raw);
	raw_keys(&raw, 2, out, sizeof(out));
	cr_assert_str_eq(out, "y,z", "x stored again: one record");
	raw_close(&raw);
	be = open_ns("gpukv", 1ull << 30, NULL);
	cr_assert_eq(be->ops->keys_used(be), 3);
	cr_assert_eq(be->ops->bytes_used(be), bytes);
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "x", 0, got, 10, &dw0), 0);
	cr_assert_eq(dw0, 10);
	cr_assert_eq(memcmp(got, small, 10), 0);
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
	snprintf(want, sizeof(want), "db=%s column_family=a sync=always sync_apart=16777216 "
		 "compression=none blob_min=65536 evict=lru readers=2", dir);
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

/* ---- reads racing writes of the same key ---- */

#define RACE_VERSIONS 2000
#define RACE_READERS 2
#define RACE_BUF (128u << 10)

struct race {
	struct nkv_be *be;
	uint64_t written;	/* atomic: versions stored so far */
	int stop;		/* atomic */
	char why[160];		/* the first wrong read (under lock) */
	pthread_mutex_t lock;
	uint64_t reads;		/* atomic */
};

/* Version v of key "race": 4 KiB and a bit, or 96 KiB and a bit (a blob
 * file), its version in its first 8 bytes and every byte derived from v. */
static uint32_t race_len(uint64_t v)
{
	return v % 3 ? 4096 + (uint32_t)(v % 61) : (96u << 10) + (uint32_t)v;
}

static void race_fill(uint8_t *p, uint64_t v)
{
	uint32_t i, n = race_len(v);

	memcpy(p, &v, 8);
	for (i = 8; i < n; i++)
		p[i] = (uint8_t)(i * 131 + v * 7 + (i >> 9));
}

static void race_fail(struct race *rc, const char *what, uint64_t v, uint32_t a, uint32_t b)
{
	pthread_mutex_lock(&rc->lock);
	if (!rc->why[0])
		snprintf(rc->why, sizeof(rc->why), "%s (version %llu: %u, %u)", what,
			 (unsigned long long)v, a, b);
	pthread_mutex_unlock(&rc->lock);
	__atomic_store_n(&rc->stop, 1, __ATOMIC_RELAXED);
}

/* Wait for d (20 s at most, without asserting: a thread's): 0 or -1. */
static int race_wait(struct be_op *d)
{
	long i;

	for (i = 0; i < 2000000 && !__atomic_load_n(&d->done, __ATOMIC_ACQUIRE); i++)
		usleep(10);
	if (!__atomic_load_n(&d->done, __ATOMIC_ACQUIRE))
		return -1;
	nkv_tgt_data_end(&d->cmd);
	return 0;
}

static int race_run(struct race *rc, struct be_op *d)
{
	return rc->be->ops->submit(rc->be, &d->cmd.op) ? -1 : race_wait(d);
}

/* One Retrieve: a whole version at least as new as the last one seen.
 * Returns the version (0 after a failure). */
static uint64_t race_read(struct race *rc, uint8_t *buf, uint64_t last)
{
	struct be_op d;
	uint64_t v = 0;
	uint32_t i, n;

	be_op_prep(&d, NKV_KV_RETRIEVE, "race", 0, 0, buf, RACE_BUF);
	if (race_run(rc, &d) || d.cmd.op.status) {
		race_fail(rc, "Retrieve failed", last, d.cmd.op.status, d.done);
		return 0;
	}
	memcpy(&v, buf, 8);
	n = race_len(v);
	if (!v || d.cmd.op.dw0 != n || v < last) {
		race_fail(rc, "size or version of another value", v, d.cmd.op.dw0, (uint32_t)last);
		return 0;
	}
	for (i = 8; i < n; i++)
		if (buf[i] != (uint8_t)(i * 131 + v * 7 + (i >> 9))) {
			race_fail(rc, "a byte of another version", v, i, buf[i]);
			return 0;
		}
	return v;
}

static void *race_reader(void *arg)
{
	struct race *rc = arg;
	uint8_t *buf = malloc(RACE_BUF);
	uint64_t last = 1;
	struct be_op d;

	while (buf && last && !__atomic_load_n(&rc->stop, __ATOMIC_RELAXED)) {
		last = race_read(rc, buf, last);
		be_op_prep(&d, NKV_KV_EXIST, "race", 0, 0, NULL, 0);
		if (last && (race_run(rc, &d) || d.cmd.op.status))
			race_fail(rc, "Exist failed", last, d.cmd.op.status, 0);
		__atomic_add_fetch(&rc->reads, 1, __ATOMIC_RELAXED);
	}
	free(buf);
	return NULL;
}

/* Version v: plain, TTL'd (value and meta records), ephemeral (the key
 * moves into the tier and back out), now and then touched with a TTL. */
static void race_write(struct race *rc, uint64_t v, uint8_t *val, uint8_t *got)
{
	static const uint32_t opt[4] = { 0, NKV_STORE_TTL, NKV_STORE_EPHEMERAL, 0 };
	uint32_t o = opt[v % 4];
	struct be_op st, rd, t;
	int sub, bad;

	race_fill(val, v);
	be_op_prep(&st, NKV_KV_STORE, "race", o, o & NKV_STORE_TTL ? 1000 : 0, val, race_len(v));
	be_op_prep(&rd, NKV_KV_RETRIEVE, "race", 0, 0, got, RACE_BUF);
	/* Not waited for in between: the Retrieve queued after the Store
	 * must see it. */
	sub = rc->be->ops->submit(rc->be, &st.cmd.op);
	bad = race_run(rc, &rd);
	if (sub || race_wait(&st) || bad || st.cmd.op.status) {
		race_fail(rc, "Store failed", v, st.cmd.op.status, 0);
		return;
	}
	if (rd.cmd.op.status || memcmp(got, &v, 8))
		race_fail(rc, "a Retrieve went around the Store before it", v, rd.cmd.op.status, 0);
	if (v % 8 == 3) {
		be_op_prep(&t, NKV_KV_STORE, "race", NKV_STORE_TOUCH | NKV_STORE_TTL, 1000, NULL, 0);
		if (race_run(rc, &t) || t.cmd.op.status)
			race_fail(rc, "touch failed", v, t.cmd.op.status, 0);
	}
	__atomic_store_n(&rc->written, v, __ATOMIC_RELAXED);
}

/* Readers on threads of their own (served there, as on the core's poll
 * threads) while one writer stores version after version of one key:
 * every Retrieve is one whole version (its bytes, its size) no older
 * than the last seen, the key never absent, and the writer's Retrieve
 * submitted right after its Store sees that Store. --sync none: many
 * versions a second, so the readers meet many writes in the making. */
Test(be_rocksdb, reads_racing_writes_see_whole_values, .init = setup, .fini = teardown,
     .timeout = 120)
{
	struct nkv_be_param p[2] = { { "db", dir }, { "sync", "none" } };
	struct nkv_be_conf c = { sizeof(c), .capacity = 1ull << 30, .max_value = 4u << 20,
				 .params = p, .nparams = 2 };
	struct race rc = { .be = nkv_be_create("rocksdb", &c, err, sizeof(err)) };
	uint8_t *val = malloc(RACE_BUF), *got = malloc(RACE_BUF);
	pthread_t thr[RACE_READERS];
	uint64_t v;
	int i;

	cr_assert_not_null(rc.be, "%s", err);
	pthread_mutex_init(&rc.lock, NULL);
	race_write(&rc, 1, val, got);
	cr_assert_str_empty(rc.why, "%s", rc.why);
	for (i = 0; i < RACE_READERS; i++)
		cr_assert_eq(pthread_create(&thr[i], NULL, race_reader, &rc), 0);
	for (v = 2; v <= RACE_VERSIONS && !__atomic_load_n(&rc.stop, __ATOMIC_RELAXED); v++)
		race_write(&rc, v, val, got);
	__atomic_store_n(&rc.stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < RACE_READERS; i++)
		pthread_join(thr[i], NULL);
	cr_assert_str_empty(rc.why, "%s", rc.why);
	cr_assert_eq(rc.written, RACE_VERSIONS);
	cr_assert_gt(rc.reads, RACE_VERSIONS, "the readers raced the writer");
	rc.be->ops->destroy(rc.be);
	pthread_mutex_destroy(&rc.lock);
	free(val);
	free(got);
}

/* A large Retrieve's done(): the thread it ran on. */
struct pool_op {
	struct be_op d;		/* first: done() gets &d.cmd.op */
	pthread_t by;
};

static void pool_done(struct nkv_be_op *op)
{
	struct pool_op *o = (struct pool_op *)op;

	o->by = pthread_self();
	be_op_done(op);
}

#define POOL_N 16
#define POOL_LEN (96u << 10)

/* Retrieves of 64 KiB or more run on the read threads (not inside the
 * submit of the thread that made them), each its own key's whole value;
 * a small buffer's stays on the submitting thread; a Retrieve of a key
 * whose Store is still in flight sees that Store; destroy right after a
 * burst of large Retrieves completes every one of them first. */
Test(be_rocksdb, large_retrieves_run_on_the_read_threads, .init = setup, .fini = teardown)
{
	struct nkv_be *be = open_ns("gpukv", 1ull << 30, NULL);
	struct pool_op *o = calloc(POOL_N, sizeof(*o));
	uint8_t *got = malloc((size_t)POOL_N * POOL_LEN), *val[POOL_N];
	struct be_op st;
	char key[16];
	int i, off;

	cr_assert(o && got);
	for (i = 0; i < POOL_N; i++) {
		val[i] = pattern(POOL_LEN - (size_t)i, (unsigned)i);
		snprintf(key, sizeof(key), "big%d", i);
		cr_assert_eq(be_op_run(be, NKV_KV_STORE, key, 0, val[i], POOL_LEN - i, NULL), 0);
	}
	for (i = 0; i < POOL_N; i++) {
		snprintf(key, sizeof(key), "big%d", i);
		be_op_prep(&o[i].d, NKV_KV_RETRIEVE, key, 0, 0, got + (size_t)i * POOL_LEN,
			   POOL_LEN);
		o[i].d.cmd.op.done = pool_done;
		cr_assert_eq(be->ops->submit(be, &o[i].d.cmd.op), 0);
	}
	for (i = 0; i < POOL_N; i++) {
		be_op_wait(&o[i].d);
		cr_assert_eq(o[i].d.cmd.op.status, 0);
		cr_assert_eq(o[i].d.cmd.op.dw0, POOL_LEN - i);
		cr_assert_eq(memcmp(got + (size_t)i * POOL_LEN, val[i], POOL_LEN - i), 0, "value %d", i);
		cr_assert(!pthread_equal(o[i].by, pthread_self()), "served on a read thread");
	}
	/* A small buffer: served inside submit, as before. */
	be_op_prep(&o[0].d, NKV_KV_RETRIEVE, "big0", 0, 0, got, 4096);
	o[0].d.cmd.op.done = pool_done;
	cr_assert_eq(be->ops->submit(be, &o[0].d.cmd.op), 0);
	be_op_wait(&o[0].d);
	cr_assert(pthread_equal(o[0].by, pthread_self()));
	cr_assert_eq(memcmp(got, val[0], 4096), 0);
	/* A Store in flight, then a large Retrieve of its key: the new value. */
	be_op_prep(&st, NKV_KV_STORE, "big1", 0, 0, val[2], POOL_LEN - 2);
	be_op_prep(&o[1].d, NKV_KV_RETRIEVE, "big1", 0, 0, got, POOL_LEN);
	o[1].d.cmd.op.done = pool_done;
	cr_assert_eq(be->ops->submit(be, &st.cmd.op), 0);
	cr_assert_eq(be->ops->submit(be, &o[1].d.cmd.op), 0);
	be_op_wait(&st);
	be_op_wait(&o[1].d);
	cr_assert_eq(o[1].d.cmd.op.dw0, POOL_LEN - 2);
	cr_assert_eq(memcmp(got, val[2], POOL_LEN - 2), 0, "the Store before it");
	/* A burst, then destroy at once. */
	for (i = 0; i < POOL_N; i++) {
		snprintf(key, sizeof(key), "big%d", i);
		be_op_prep(&o[i].d, NKV_KV_RETRIEVE, key, 0, 0, got + (size_t)i * POOL_LEN,
			   POOL_LEN);
		cr_assert_eq(be->ops->submit(be, &o[i].d.cmd.op), 0);
	}
	be->ops->destroy(be);
	for (i = off = 0; i < POOL_N; i++)
		off += __atomic_load_n(&o[i].d.done, __ATOMIC_ACQUIRE);
	cr_assert_eq(off, POOL_N, "every Retrieve completed before destroy returned");
	for (i = 0; i < POOL_N; i++)
		free(val[i]);
	free(o);
	free(got);
}

/* --readers 0: no pool; a large Retrieve is served inside submit. */
Test(be_rocksdb, readers_0_reads_on_the_submitting_thread, .init = setup, .fini = teardown)
{
	struct nkv_be_param p[2] = { { "db", dir }, { "readers", "0" } };
	struct nkv_be_conf c = { sizeof(c), .capacity = 1ull << 30, .max_value = 4u << 20,
				 .params = p, .nparams = 2 };
	struct nkv_be *be = nkv_be_create("rocksdb", &c, err, sizeof(err));
	uint8_t *val = pattern(POOL_LEN, 3), *got = malloc(POOL_LEN);
	struct pool_op o;
	char d[512];

	cr_assert_not_null(be, "%s", err);
	be->ops->describe(be, d, sizeof(d));
	cr_assert(strstr(d, " readers=0"), "%s", d);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "big", 0, val, POOL_LEN, NULL), 0);
	be_op_prep(&o.d, NKV_KV_RETRIEVE, "big", 0, 0, got, POOL_LEN);
	o.d.cmd.op.done = pool_done;
	cr_assert_eq(be->ops->submit(be, &o.d.cmd.op), 0);
	cr_assert(__atomic_load_n(&o.d.done, __ATOMIC_ACQUIRE), "done inside submit");
	be_op_wait(&o.d);
	cr_assert(pthread_equal(o.by, pthread_self()));
	cr_assert_eq(memcmp(got, val, POOL_LEN), 0);
	be->ops->destroy(be);
	free(val);
	free(got);
}

/* The backend's rocksdb_writes_total (its metrics). */
static double rocks_writes(struct nkv_be *be)
{
	return be_counter(be, "rocksdb_writes_total");
}

/*
 * A poll thread's burst of Stores (the ops one doorbell brought) wakes the
 * worker once, at the burst's end, so the burst is one WriteBatch; woken
 * at the first Store, the worker took a few and wrote them, then the rest.
 * At most 2: the worker's own 1 s sweep wake-up may fall inside a burst.
 */
Test(be_rocksdb, a_bursts_stores_are_one_write, .init = setup, .fini = teardown)
{
	enum { N = 32 };
	struct nkv_be *be = open_ns("gpukv", 1ull << 30, NULL);
	struct be_op *o = calloc(N, sizeof(*o)), rd;
	uint8_t *val = pattern(4096, 5), got[4096], *big;
	struct h h;
	double w0;
	char key[16];
	int i;

	cr_assert(o);
	h_init(&h, NULL, NULL);	/* a controller: the burst's owner */
	w0 = rocks_writes(be);
	nkv_tgt_burst_begin(h.c);
	for (i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "burst%d", i);
		be_op_prep(&o[i], NKV_KV_STORE, key, 0, 0, val, 4096 - (uint64_t)i);
		o[i].cmd.ctrl = h.c;	/* a command of h.c's, as the core's are */
		cr_assert_eq(nkv_tgt_be_submit(h.c, be, &o[i].cmd.op), 0);
	}
	/* The worker's writes: their completions near, the poll thread
	 * stays awake for them (nkv_be_wait_near). */
	cr_assert_eq(nkv_tgt_ctrl_near(h.c), N);
	nkv_tgt_burst_end(h.c);
	for (i = 0; i < N; i++) {
		be_op_wait(&o[i]);
		cr_assert_eq(o[i].cmd.op.status, 0);
	}
	cr_assert_leq(rocks_writes(be) - w0, 2, "%.0f writes for a burst of %d Stores",
		      rocks_writes(be) - w0, N);
	/* A Retrieve of 64 KiB goes to the read pool, whose threads need
	 * cores of their own: not near. */
	big = malloc(64u << 10);
	cr_assert_not_null(big);
	be_op_prep(&rd, NKV_KV_RETRIEVE, "burst0", 0, 0, big, 64u << 10);
	rd.cmd.ctrl = h.c;
	cr_assert_eq(nkv_tgt_be_submit(h.c, be, &rd.cmd.op), 0);
	be_op_wait(&rd);
	cr_assert_eq(rd.cmd.op.status, 0);
	cr_assert_eq(nkv_tgt_ctrl_near(h.c), N, "the read pool's op is not near");
	free(big);
	for (i = 0; i < N; i += 7) {
		uint32_t dw0 = 0;

		snprintf(key, sizeof(key), "burst%d", i);
		cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, key, 0, got, sizeof(got), &dw0), 0);
		cr_assert_eq(dw0, (uint32_t)(4096 - i));
		cr_assert_eq(memcmp(got, val, dw0), 0);
	}
	/* Outside a burst (a direct caller) the worker is woken at once. */
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "alone", 0, val, 100, NULL), 0);
	be->ops->destroy(be);
	h_fini(&h);
	free(o);
	free(val);
}

/* The bytes of dir's write-ahead log files (*.log). */
static uint64_t wal_bytes(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;
	char path[400];
	uint64_t n = 0;
	size_t l;

	cr_assert_not_null(d);
	while ((e = readdir(d))) {
		l = strlen(e->d_name);
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (l > 4 && !strcmp(e->d_name + l - 4, ".log") && !stat(path, &st))
			n += (uint64_t)st.st_size;
	}
	closedir(d);
	return n;
}

/*
 * Large values have a record in the meta family too, written in every
 * batch and never enough to fill its memtable. Flushed alone, the value
 * family's memtables freed no log file (the meta family still had data
 * in each), so the log grew with every byte stored until RocksDB's own
 * bound (gigabytes) and a restart replayed it all. Flushed together, at
 * most the two memtables' worth not yet flushed stays: 192 MiB stored
 * (three 64 MiB memtables) leave less than 140 MiB of log.
 */
Test(be_rocksdb, flushes_free_the_log, .init = setup, .fini = teardown, .timeout = 120)
{
	enum { N = 48, LEN = 4u << 20 };
	struct nkv_be_param p[] = { { "db", dir }, { "sync", "none" } };
	struct nkv_be_conf c = { sizeof(c), .ns_name = "gpukv", .capacity = 1ull << 30,
				 .max_value = LEN, .params = p, .nparams = 2 };
	struct nkv_be *be = nkv_be_create("rocksdb", &c, err, sizeof(err));
	uint8_t *val = pattern(LEN, 9), *got = malloc(LEN);
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	uint32_t dw0 = 0;
	char key[16];
	int i;

	cr_assert_not_null(be, "%s", err);
	cr_assert_not_null(got);
	for (i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "wal%d", i);
		val[0] = (uint8_t)i;
		cr_assert_eq(be_op_run(be, NKV_KV_STORE, key, 0, val, LEN, NULL), 0);
	}
	/* The last flush runs in the background: give it 20 s. */
	for (i = 0; i < 400 && wal_bytes() >= 140ull << 20; i++)
		nanosleep(&ts, NULL);
	cr_assert_lt(wal_bytes(), 140ull << 20, "%llu MiB of log after %u MiB stored",
		     (unsigned long long)(wal_bytes() >> 20), (N * LEN) >> 20);
	be->ops->destroy(be);

	be = nkv_be_create("rocksdb", &c, err, sizeof(err));
	cr_assert_not_null(be, "%s", err);
	cr_assert_eq(be->ops->keys_used(be), N, "every key back after the reopen");
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "wal0", 0, got, LEN, &dw0), 0);
	cr_assert_eq(dw0, LEN);
	val[0] = 0;
	cr_assert_eq(memcmp(got, val, LEN), 0);
	be->ops->destroy(be);
	free(val);
	free(got);
}

/* The backend's rocksdb_log_syncs_apart_total (its metrics). */
static double syncs_apart(struct nkv_be *be)
{
	return be_counter(be, "rocksdb_log_syncs_apart_total");
}

/*
 * --sync always: a batch of --sync-apart value bytes or more (1 MiB here;
 * 16 MiB by default, be_rocksdb::describe_names_its_settings) is written
 * unsynced and its log synced after it, before its completions (a synced
 * write held each flush of a multi-family database until it had copied
 * and checksummed its whole record); a smaller batch is one synced write.
 * The reopen gets both kinds back. --sync none and --sync-apart 0 sync
 * nothing apart.
 */
Test(be_rocksdb, large_batches_sync_their_log_apart, .init = setup, .fini = teardown)
{
	enum { MIB = 1u << 20 };
	struct nkv_be_param p[] = { { "db", dir }, { "sync-apart", "1048576" } };
	struct nkv_be_conf c = { sizeof(c), .ns_name = "gpukv", .capacity = 1ull << 30,
				 .max_value = 2 * MIB, .params = p, .nparams = 2 };
	struct nkv_be *be = nkv_be_create("rocksdb", &c, err, sizeof(err));
	uint8_t *val = pattern(2 * MIB, 11), *got = malloc(2 * MIB);
	uint32_t dw0 = 0;
	double a0;

	cr_assert_not_null(be, "%s", err);
	cr_assert_not_null(got);
	a0 = syncs_apart(be);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "small", 0, val, 4096, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "under", 0, val, MIB - 1, NULL), 0);
	cr_assert_eq(syncs_apart(be), a0, "batches under 1 MiB: synced writes");
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "mib", 0, val, MIB, NULL), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "large", 0, val, 2 * MIB, NULL), 0);
	cr_assert_eq(syncs_apart(be), a0 + 2, "1 MiB and 2 MiB: synced apart");
	be->ops->destroy(be);

	be = open_ns("gpukv", 1ull << 30, NULL);	/* the default: 16 MiB */
	cr_assert_eq(be->ops->keys_used(be), 4);
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "large", 0, got, 2 * MIB, &dw0), 0);
	cr_assert_eq(dw0, 2 * MIB);
	cr_assert_eq(memcmp(got, val, 2 * MIB), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_RETRIEVE, "small", 0, got, 4096, &dw0), 0);
	cr_assert_eq(dw0, 4096);
	cr_assert_eq(memcmp(got, val, 4096), 0);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "large", 0, val, 2 * MIB, NULL), 0);
	cr_assert_eq(syncs_apart(be), 0, "under the default's 16 MiB");
	be->ops->destroy(be);

	p[1] = (struct nkv_be_param){ "sync", "none" };
	be = nkv_be_create("rocksdb", &c, err, sizeof(err));
	cr_assert_not_null(be, "%s", err);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "large", 0, val, 2 * MIB, NULL), 0);
	cr_assert_eq(syncs_apart(be), 0, "--sync none: nothing to sync");
	be->ops->destroy(be);

	p[1] = (struct nkv_be_param){ "sync-apart", "0" };
	be = nkv_be_create("rocksdb", &c, err, sizeof(err));
	cr_assert_not_null(be, "%s", err);
	cr_assert_eq(be_op_run(be, NKV_KV_STORE, "large", 0, val, 2 * MIB, NULL), 0);
	cr_assert_eq(syncs_apart(be), 0, "--sync-apart 0: synced writes");
	be->ops->destroy(be);
	free(val);
	free(got);
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
