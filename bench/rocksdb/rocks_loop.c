/* SPDX-License-Identifier: MIT */
/*
 * rocks_loop - the plain RocksDB reference for nkv-target's rocksdb
 * backend (bench/compare.py's rocksdb part): one process, the backend's
 * options (compression none, BlobDB from --blob-min, parallelism 2) on a
 * database directory of its own, keys in batches of --batch:
 *
 *   put  one WriteBatch of --batch Puts, one rocksdb_write with sync
 *        (--sync always) or without (--sync none): the backend's group
 *        commit of a batch of Stores, minus the meta record in front of
 *        each value (and beside it for TTL'd or 64 KiB+ values) and the
 *        backend's key index; with --prefill every key is put once
 *        first, not timed, as nkv-bench --fill once stores its keys
 *        before its timed Stores (so both time overwrites, with the same
 *        data written before the clock starts);
 *   get  --batch rocksdb_get_pinned + copy out of the value, as the
 *        backend's Retrieve does, one after another on this thread
 *        (the backend reads 64 KiB+ values on its 2 read threads).
 *
 * --via backend sends each batch through nkv-target's rocksdb backend
 * itself (src/target/backends/rocksdb.c, made through the registry with
 * the same options) in this process: --batch Stores or Retrieves
 * submitted, then waited for (Stores complete from its worker thread,
 * Retrieves inside submit or, 64 KiB and up, from its read threads),
 * with no queue pair, transport or poll thread in between.
 * nkv-bench's figure over this one is what the NVMe-KV hop
 * costs; this one over the plain loop, what the backend adds to RocksDB.
 *
 * Each batch is timed (submit to last completion, as nkv-bench times a
 * batch); prints one JSON line: ops, wall_ns, iops, latency_ns p50/p99.
 * get stores its keys first (not timed), in the same process, so they are
 * where nkv-target's Retrieves find theirs. A measuring aid.
 */
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loop_util.h"
#include "target/backends/registry.h"
#include "target/core/core.h"

struct loop_conf {
	const char *db, *op;
	size_t size;
	unsigned batch, keys, iters;
	int sync, via_backend, prefill;
	uint64_t blob_min;
};

/* --via backend: the backend, and a batch's ops as the core holds them. */
struct loop_be {
	struct nkv_be *be;
	struct nkv_tgt_cmd *cmd;
	struct iovec *iov;
	unsigned left;		/* ops of the batch not yet done (under m) */
	unsigned failed;
	pthread_mutex_t m;
	pthread_cond_t c;
};

/* What a batch runs against: the database, or the backend (lb.be). */
struct loop_ref {
	rocksdb_t *db;
	rocksdb_writeoptions_t *wo;
	rocksdb_readoptions_t *ro;
	struct loop_be lb;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: rocks_loop --db DIR --op put|get --size BYTES [--batch N] [--keys N]\n"
		   "                  [--iters N] [--sync always|none] [--blob-min BYTES]\n"
		   "                  [--via rocksdb|backend] [--prefill]\n"
		   "--via backend: through nkv-target's rocksdb backend in this process\n"
		   "--prefill: put every key once first, not timed (nkv-bench --fill once)\n");
}

static int parse(int argc, char **argv, struct loop_conf *c)
{
	int i;

	*c = (struct loop_conf){ .batch = 1, .keys = 1024, .iters = 1, .sync = 1,
				 .blob_min = 64u << 10 };
	for (i = 1; i < argc; i += 2) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(k, "--prefill")) {	/* a flag: no value */
			c->prefill = 1;
			i--;
			continue;
		}
		if (!v)
			return -1;
		if (loop_opt(k, v, &c->op, &c->size, &c->batch, &c->keys, &c->iters))
			continue;
		if (!strcmp(k, "--db"))
			c->db = v;
		else if (!strcmp(k, "--sync") && (!strcmp(v, "always") || !strcmp(v, "none")))
			c->sync = !strcmp(v, "always");
		else if (!strcmp(k, "--blob-min"))
			c->blob_min = strtoull(v, NULL, 0);
		else if (!strcmp(k, "--via") && (!strcmp(v, "rocksdb") || !strcmp(v, "backend")))
			c->via_backend = !strcmp(v, "backend");
		else
			return -1;
	}
	if (i != argc || !c->db || !loop_opts_ok(c->op, c->size, c->batch, c->keys, c->iters))
		return -1;
	return 0;
}

static rocksdb_t *open_db(const struct loop_conf *c)
{
	rocksdb_options_t *o = rocksdb_options_create();
	char *e = NULL;
	rocksdb_t *db;

	rocksdb_options_set_create_if_missing(o, 1);
	rocksdb_options_set_compression(o, rocksdb_no_compression);
	rocksdb_options_set_enable_blob_files(o, c->blob_min != 0);
	rocksdb_options_set_min_blob_size(o, c->blob_min);
	rocksdb_options_set_blob_compression_type(o, rocksdb_no_compression);
	rocksdb_options_increase_parallelism(o, 2);
	db = rocksdb_open(o, c->db, &e);
	rocksdb_options_destroy(o);
	if (e) {
		fprintf(stderr, "rocks_loop: cannot open %s: %s\n", c->db, e);
		free(e);
	}
	return db;
}

/* --via backend: nkv-target's rocksdb backend with the loop's options
 * (nkv-target's --capacity of bench/compare.py, a max value that fits). */
static int be_open(struct loop_be *lb, const struct loop_conf *c)
{
	char blob[24], err[256] = "";
	struct nkv_be_param p[3] = { { "db", c->db }, { "sync", c->sync ? "always" : "none" },
				     { "blob-min", blob } };
	struct nkv_be_conf bc = { .size = sizeof(bc), .capacity = 1ull << 30, .params = p,
				  .nparams = 3 };

	snprintf(blob, sizeof(blob), "%llu", (unsigned long long)c->blob_min);
	bc.max_value = c->size > (1u << 20) ? (uint32_t)c->size : 0;
	lb->be = nkv_be_create("rocksdb", &bc, err, sizeof(err));
	lb->cmd = calloc(c->batch, sizeof(*lb->cmd));
	lb->iov = calloc(c->batch, sizeof(*lb->iov));
	if (!lb->be || !lb->cmd || !lb->iov) {
		fprintf(stderr, "rocks_loop: nkv-target's rocksdb backend: %s\n",
			lb->be ? "out of memory" : err);
		return -1;
	}
	pthread_mutex_init(&lb->m, NULL);
	pthread_cond_init(&lb->c, NULL);
	return 0;
}

/* The backend's done(): from its worker (Stores), its read threads
 * (64 KiB+ Retrieves) or inside submit (other Retrieves). Finishes the
 * op's data as the core does. */
static void be_done(struct nkv_be_op *op)
{
	struct loop_be *lb = op->ctx;

	nkv_tgt_data_end((struct nkv_tgt_cmd *)op);
	pthread_mutex_lock(&lb->m);
	lb->failed += op->status != 0;
	if (!--lb->left)
		pthread_cond_signal(&lb->c);
	pthread_mutex_unlock(&lb->m);
}

/* One batch through the backend: all submitted, then all waited for. */
static int be_batch(struct loop_be *lb, const struct loop_conf *c, int put, unsigned first,
		    char *val, char *out)
{
	char key[32];
	unsigned i;

	pthread_mutex_lock(&lb->m);
	lb->left = c->batch;
	lb->failed = 0;
	pthread_mutex_unlock(&lb->m);
	for (i = 0; i < c->batch; i++) {
		struct nkv_tgt_cmd *cmd = &lb->cmd[i];
		int kl = snprintf(key, sizeof(key), "loop-%zu-%u", c->size, first + i);

		memset(cmd, 0, sizeof(*cmd));
		cmd->op.opc = put ? NKV_KV_STORE : NKV_KV_RETRIEVE;
		cmd->op.klen = (uint8_t)kl;
		memcpy(cmd->op.key, key, (size_t)kl);
		lb->iov[i] = (struct iovec){ put ? val : out, c->size };
		cmd->iov = &lb->iov[i];
		cmd->iovcnt = 1;
		cmd->stable = 1;	/* our own heap, as nkv-bench's sealed memfd */
		cmd->op.len = c->size;
		cmd->op.done = be_done;
		cmd->op.ctx = lb;
		nkv_tgt_data_start(cmd, 0);
		if (lb->be->ops->submit(lb->be, &cmd->op)) {
			cmd->op.status = NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_INTERNAL);
			be_done(&cmd->op);
		}
	}
	pthread_mutex_lock(&lb->m);
	while (lb->left)
		pthread_cond_wait(&lb->c, &lb->m);
	i = lb->failed;
	pthread_mutex_unlock(&lb->m);
	if (i)
		fprintf(stderr, "rocks_loop: %u of a batch failed through the backend\n", i);
	return i ? -1 : 0;
}

/* Batch b of keys [b*batch, (b+1)*batch): one synced WriteBatch, or
 * batch reads (or the same through the backend): 0, or -1 with the
 * reason on stderr. */
static int run_batch(struct loop_ref *r, const struct loop_conf *c, int put, unsigned first,
		     char *val, char *out)
{
	rocksdb_writebatch_t *wb;
	char key[32], *e = NULL;
	unsigned i;

	if (r->lb.be)
		return be_batch(&r->lb, c, put, first, val, out);
	wb = put ? rocksdb_writebatch_create() : NULL;

	for (i = 0; i < c->batch && !e; i++) {
		int kl = snprintf(key, sizeof(key), "loop-%zu-%u", c->size, first + i);

		if (put) {
			rocksdb_writebatch_put(wb, key, (size_t)kl, val, c->size);
		} else {
			rocksdb_pinnableslice_t *ps = rocksdb_get_pinned(r->db, r->ro, key,
									 (size_t)kl, &e);
			size_t len = 0;
			const char *v = ps ? rocksdb_pinnableslice_value(ps, &len) : NULL;

			if (!e && (!v || len != c->size))
				fprintf(stderr, "rocks_loop: %s: %s\n", key, v ? "wrong size" : "absent");
			if (!e && v && len == c->size)
				memcpy(out, v, len);
			if (ps)
				rocksdb_pinnableslice_destroy(ps);
			if (!e && (!v || len != c->size))
				return -1;
		}
	}
	if (put && !e)
		rocksdb_write(r->db, r->wo, wb, &e);
	if (wb)
		rocksdb_writebatch_destroy(wb);
	if (e) {
		fprintf(stderr, "rocks_loop: %s\n", e);
		free(e);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct loop_ref r = { 0 };
	struct loop_conf c;
	uint64_t *lat, t0, t, wall;
	unsigned nb, b, n = 0, it;
	char *val, *out;
	int put, rc = 0;
	size_t i;

	if (argc == 2 && !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (parse(argc, argv, &c)) {
		usage(stderr);
		return 2;
	}
	if (c.via_backend ? be_open(&r.lb, &c) : !(r.db = open_db(&c)))
		return 1;
	put = !strcmp(c.op, "put");
	nb = c.keys / c.batch;
	val = malloc(c.size);
	out = malloc(c.size);
	lat = calloc((size_t)nb * c.iters, sizeof(*lat));
	if (!val || !out || !lat) {
		fprintf(stderr, "rocks_loop: out of memory\n");
		return 1;
	}
	for (i = 0; i < c.size; i++)	/* filled once, as nkv-bench --fill once */
		val[i] = (char)(i * 131 + 7);
	r.wo = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(r.wo, c.sync);
	r.ro = rocksdb_readoptions_create();
	/* The keys to read, stored first in this process, as nkv-bench
	 * stores them before its Retrieves; or (--prefill) the keys to put,
	 * stored once first, as nkv-bench --fill once does before its timed
	 * Stores: the same writes before the clock starts, and the timed ones
	 * overwrite. */
	if (!put || c.prefill)
		for (b = 0; b < nb && !rc; b++)
			rc = run_batch(&r, &c, 1, b * c.batch, val, out);
	t0 = now_ns();
	for (it = 0; it < c.iters && !rc; it++)
		for (b = 0; b < nb && !rc; b++) {
			t = now_ns();
			rc = run_batch(&r, &c, put, b * c.batch, val, out);
			lat[n++] = now_ns() - t;
		}
	wall = now_ns() - t0;
	if (!rc) {
		qsort(lat, n, sizeof(*lat), cmp_u64);
		printf("{\"op\":\"%s\",\"via\":\"%s\",\"size\":%zu,\"batch\":%u,\"sync\":\"%s\","
		       "\"ops\":%llu,\"wall_ns\":%llu,\"iops\":%.1f,"
		       "\"latency_ns\":{\"p50\":%llu,\"p99\":%llu}}\n",
		       c.op, c.via_backend ? "backend" : "rocksdb", c.size, c.batch,
		       c.sync ? "always" : "none",
		       (unsigned long long)n * c.batch, (unsigned long long)wall,
		       (double)n * c.batch * 1e9 / (double)wall, (unsigned long long)lat[n / 2],
		       (unsigned long long)lat[n * 99 / 100]);
	}
	rocksdb_readoptions_destroy(r.ro);
	rocksdb_writeoptions_destroy(r.wo);
	if (r.lb.be)
		r.lb.be->ops->destroy(r.lb.be);
	if (r.db)
		rocksdb_close(r.db);
	free(r.lb.cmd);
	free(r.lb.iov);
	free(val);
	free(out);
	free(lat);
	return rc ? 1 : 0;
}
