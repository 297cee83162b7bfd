/* SPDX-License-Identifier: MIT */
/*
 * rocksdb.c - the RocksDB backend (see rocksdb.h): the shared database
 * per directory, the worker and its group commit, the op path, the type.
 *
 * A Retrieve or Exist is served on the submitting thread (the core's poll
 * thread: no hand-off, no wake-up), beside the worker, when no write of
 * its key is in flight (the write filter below); else, and every write
 * and List, it goes to the namespace's one worker thread, which runs its
 * queue in arrival order. Writes go into the open WriteBatch and their
 * effect on bytes and keys used is counted at once (undone when the
 * batch fails); reads there are served from the database at once. An op
 * on a key the open batch already writes, and every List, Touch and
 * ephemeral Store, first writes the batch out, so nothing is ever read
 * around a write not yet made. When the queue is empty the batch goes
 * out with one synced write and its ops complete.
 */
#include <errno.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "kvmap.h"
#include "target/core/pidlock.h"
#include "lru.h"
#include "rdpool.h"
#include "rocksdb_owner.h"
#include "mem.h"
#include "registry.h"
#include "rocksdb.h"

#define NKV_ROCKS_BATCH 128			/* ops per WriteBatch at most */
#define NKV_ROCKS_BATCH_BYTES (64ull << 20)	/* or this many value bytes */
#define NKV_ROCKS_SWEEP_MS 1000
#define NKV_ROCKS_SWEEP_BATCH 1024
#define NKV_ROCKS_DEF_CAPACITY (1ull << 30)
#define NKV_ROCKS_DEF_BLOB_MIN (64u << 10)
#define NKV_ROCKS_DISK_RESERVE (4ull << 20)	/* Deletes, MANIFEST, LOG */
#define NKV_ROCKS_FLT 1024			/* buckets of the write filter */
#define NKV_ROCKS_READERS 2			/* --readers default: the pool's threads */
#define NKV_ROCKS_READ_POOL_MIN (64u << 10)	/* Retrieves of this much go there */
#define NKV_ROCKS_DEF_SYNC_APART (16ull << 20)	/* --sync-apart default (nkv_rocks_write) */
#define NKV_ROCKS_FLUSH_THREADS 2		/* RocksDB's max_background_flushes */

/* ---- the meta record: 16 bytes, little-endian ----
 *
 * The value family holds it in front of every value, so a Retrieve reads
 * one record, whole. The meta family holds it alone for the keys that
 * need it there (format 2): a key with a TTL (a touch rewrites only that
 * copy, so where the record says the key has a TTL, ttl_s != 0, the meta
 * family's expiry is the one that counts and the sweep finds the key
 * without reading values) and a value of NKV_ROCKS_META_MIN bytes or
 * more (counted at open without landing on it: see nkv_rocks_recount).
 * A small value without TTL is one record, as plain RocksDB writes it.
 * Format 1 wrote the meta family for every key; such a database opens
 * as it is (the extra records are read like format 2's), and a key
 * stored again loses the record it no longer needs. */

struct nkv_rocks_meta {
	uint64_t expire_ms;	/* wall clock ms; 0: no TTL */
	uint32_t ttl_s;		/* the TTL it was stored or touched with */
	uint32_t size;		/* the value's length */
};
#define NKV_ROCKS_META_LEN 16
#define NKV_ROCKS_META_MIN (64u << 10)	/* values from this size keep a meta record */

static void nkv_rocks_put_le(uint8_t *p, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t nkv_rocks_get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	int i;

	for (i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void nkv_rocks_meta_enc(const struct nkv_rocks_meta *m, uint8_t *p)
{
	nkv_rocks_put_le(p, m->expire_ms, 8);
	nkv_rocks_put_le(p + 8, m->ttl_s, 4);
	nkv_rocks_put_le(p + 12, m->size, 4);
}

/* 0, or -1 for a record of another length (not one of ours). */
static int nkv_rocks_meta_dec(const char *p, size_t len, struct nkv_rocks_meta *m)
{
	const uint8_t *u = (const uint8_t *)p;

	if (len != NKV_ROCKS_META_LEN)
		return -1;
	m->expire_ms = nkv_rocks_get_le(u, 8);
	m->ttl_s = (uint32_t)nkv_rocks_get_le(u + 8, 4);
	m->size = (uint32_t)nkv_rocks_get_le(u + 12, 4);
	return 0;
}

uint64_t nkv_be_rocks_key_cost(uint32_t klen, uint64_t len)
{
	return len + 2ull * klen + 2 * NKV_ROCKS_META_LEN;
}

/* ---- the key index: what the database holds, per key, in memory ----
 *
 * An ordered map (kvmap.h) of every durable key to one word: its value's
 * size, whether it has a TTL and whether the meta family holds a record
 * for it. Built at open from the database, changed by the worker alone
 * as it puts writes into the batch (undone when the batch fails), so a
 * Store needs no read to know the size it replaces (capacity and key
 * counts), a Delete which records to remove, and a List its keys in
 * order. The worker's only: reads on the submitting thread never look. */

#define NKV_ROCKS_IX_ON 1u		/* set in every entry (never NULL) */
#define NKV_ROCKS_IX_TTL 2u		/* the key has a TTL (its meta record counts) */
#define NKV_ROCKS_IX_META 4u		/* the meta family holds a record */
_Static_assert(sizeof(uintptr_t) >= 8, "an index entry is a 64-bit word");

static uintptr_t nkv_rocks_ix_make(uint32_t size, int ttl, int meta)
{
	return (uintptr_t)size << 3 | NKV_ROCKS_IX_ON | (ttl ? NKV_ROCKS_IX_TTL : 0) |
	       (meta ? NKV_ROCKS_IX_META : 0);
}

static uint32_t nkv_rocks_ix_size(uintptr_t e)
{
	return (uint32_t)(e >> 3);
}

/* One database per directory, shared by its namespaces. */

struct nkv_rocks_db {
	struct nkv_rocks_db *next;
	char *path;
	int refs;
	rocksdb_t *db;
	rocksdb_options_t *opts;
	size_t ncf;
	char **names;
	rocksdb_column_family_handle_t **cfs;
};

static pthread_mutex_t nkv_rocks_dbs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nkv_rocks_db *nkv_rocks_dbs;

/* What the options say, parsed (check and create share it). */
struct nkv_rocks_conf {
	const char *path;
	int sync;
	int compression;
	uint64_t blob_min;	/* 0: no blob files */
	int evict;
	unsigned readers;	/* the read pool's threads; 0: none */
	uint64_t sync_apart;	/* --sync always: batches of this many value
				 * bytes synced apart (nkv_rocks_write); 0: none */
	const char *comp_name;	/* --compression as given, or "none" */
};

static void nkv_rocks_db_free(struct nkv_rocks_db *d)
{
	size_t i;

	for (i = 0; i < d->ncf; i++) {
		rocksdb_column_family_handle_destroy(d->cfs[i]);
		free(d->names[i]);
	}
	if (d->db)
		rocksdb_close(d->db);
	if (d->opts)
		rocksdb_options_destroy(d->opts);
	free(d->cfs);
	free(d->names);
	free(d->path);
	free(d);
}

static rocksdb_options_t *nkv_rocks_options(const struct nkv_rocks_conf *rc)
{
	rocksdb_options_t *o = rocksdb_options_create();

	rocksdb_options_set_create_if_missing(o, 1);
	rocksdb_options_set_create_missing_column_families(o, 1);
	rocksdb_options_set_compression(o, rc->compression);
	rocksdb_options_set_enable_blob_files(o, rc->blob_min != 0);
	rocksdb_options_set_min_blob_size(o, rc->blob_min);
	rocksdb_options_set_blob_compression_type(o, rc->compression);
	rocksdb_options_increase_parallelism(o, 2);
	/* Every family flushed together: RocksDB deletes a log file only
	 * once each family with data in it has flushed, and the meta and
	 * owner families, written in most batches but never full, kept
	 * every log file live when the value family flushed alone (1 GiB
	 * after 32 Stores of 32 MiB, all replayed at a restart). The price:
	 * a small table per family with data at each flush, every
	 * namespace's alike (docs/target.md, "Flushes and the log"). */
	rocksdb_options_set_atomic_flush(o, 1);
	/* Two flush threads: with more than one family each flush first
	 * syncs the closed log files (waiting for a synced write, or writing
	 * back a memtable's worth of unsynced log), which a single-family
	 * database skips; a second flush can write its blobs meanwhile, where
	 * one thread left writes stopped for it (docs/bench.md, issue 52
	 * seventh pass). Compactions keep one thread. */
	rocksdb_options_set_max_background_flushes(o, NKV_ROCKS_FLUSH_THREADS);
	return o;
}

/* Why path did not open: RocksDB's reason, and who holds the database's
 * LOCK file when another process does (an fcntl lock: /proc/locks). */
static void nkv_rocks_open_failed(const char *path, const char *e, char *err, size_t errlen)
{
	char lock[4200], comm[64];
	pid_t pid;

	snprintf(lock, sizeof(lock), "%s/LOCK", path);
	pid = nkv_lock_holder(lock);
	if (!pid || pid == getpid()) {
		snprintf(err, errlen, "rocksdb backend: cannot open %s: %s", path, e);
		return;
	}
	nkv_lock_holder_name(pid, comm, sizeof(comm));
	snprintf(err, errlen, "rocksdb backend: cannot open %s: PID %d (%s) holds %s, the "
		 "database is in use; stop it, or give another --db (%s)", path, (int)pid, comm,
		 lock, e);
}

/* Open path with every column family it has; NULL with a reason. */
static struct nkv_rocks_db *nkv_rocks_db_open(const struct nkv_rocks_conf *rc, char *err,
					      size_t errlen)
{
	struct nkv_rocks_db *d = calloc(1, sizeof(*d));
	const rocksdb_options_t **cfo = NULL;
	char *e = NULL, **names = NULL;
	size_t n = 0, i;

	if (!d || !(d->path = strdup(rc->path)))
		goto nomem;
	d->opts = nkv_rocks_options(rc);
	names = rocksdb_list_column_families(d->opts, rc->path, &n, &e);
	if (e) {	/* a new database: only the default family */
		free(e);
		e = NULL;
		n = 0;
	}
	d->ncf = n ? n : 1;
	d->names = calloc(d->ncf, sizeof(*d->names));
	d->cfs = calloc(d->ncf, sizeof(*d->cfs));
	cfo = calloc(d->ncf, sizeof(*cfo));
	if (!d->names || !d->cfs || !cfo)
		goto nomem;
	for (i = 0; i < d->ncf; i++) {
		d->names[i] = strdup(n ? names[i] : "default");
		if (!d->names[i])
			goto nomem;
		cfo[i] = d->opts;
	}
	if (names)
		rocksdb_list_column_families_destroy(names, n);
	names = NULL;
	d->db = rocksdb_open_column_families(d->opts, rc->path, (int)d->ncf,
					     (const char *const *)d->names, cfo, d->cfs, &e);
	free(cfo);
	if (e) {
		nkv_rocks_open_failed(rc->path, e, err, errlen);
		free(e);
		for (i = 0; i < d->ncf; i++)
			free(d->names[i]);
		d->ncf = 0;	/* names freed; no handles were made */
		nkv_rocks_db_free(d);
		return NULL;
	}
	return d;
nomem:
	if (names)
		rocksdb_list_column_families_destroy(names, n);
	free(cfo);
	if (d)
		nkv_rocks_db_free(d);
	snprintf(err, errlen, "rocksdb backend: %s", strerror(ENOMEM));
	return NULL;
}

/* The shared database of rc->path, opened on first use. */
static struct nkv_rocks_db *nkv_rocks_db_get(const struct nkv_rocks_conf *rc, char *err,
					     size_t errlen)
{
	struct nkv_rocks_db *d;

	pthread_mutex_lock(&nkv_rocks_dbs_lock);
	for (d = nkv_rocks_dbs; d && strcmp(d->path, rc->path); d = d->next)
		;
	if (!d) {
		d = nkv_rocks_db_open(rc, err, errlen);
		if (d) {
			d->next = nkv_rocks_dbs;
			nkv_rocks_dbs = d;
		}
	}
	if (d)
		d->refs++;
	pthread_mutex_unlock(&nkv_rocks_dbs_lock);
	return d;
}

static void nkv_rocks_db_put(struct nkv_rocks_db *d)
{
	struct nkv_rocks_db **p;

	pthread_mutex_lock(&nkv_rocks_dbs_lock);
	if (--d->refs) {
		pthread_mutex_unlock(&nkv_rocks_dbs_lock);
		return;
	}
	for (p = &nkv_rocks_dbs; *p != d; p = &(*p)->next)
		;
	*p = d->next;
	pthread_mutex_unlock(&nkv_rocks_dbs_lock);
	nkv_rocks_db_free(d);
}

/* The column family called name, created when missing; NULL with a
 * reason. */
static rocksdb_column_family_handle_t *nkv_rocks_cf(struct nkv_rocks_db *d, const char *name,
						    char *err, size_t errlen)
{
	rocksdb_column_family_handle_t *h = NULL, **cfs;
	char *e = NULL, **names;
	size_t i;

	pthread_mutex_lock(&nkv_rocks_dbs_lock);
	for (i = 0; i < d->ncf && !h; i++)
		if (!strcmp(d->names[i], name))
			h = d->cfs[i];
	if (!h) {
		cfs = realloc(d->cfs, (d->ncf + 1) * sizeof(*cfs));
		if (cfs)
			d->cfs = cfs;
		names = realloc(d->names, (d->ncf + 1) * sizeof(*names));
		if (names)
			d->names = names;
		if (cfs && names && (d->names[d->ncf] = strdup(name)))
			h = rocksdb_create_column_family(d->db, d->opts, name, &e);
		if (h) {
			d->cfs[d->ncf++] = h;
		} else {
			if (cfs && names)
				free(d->names[d->ncf]);
			snprintf(err, errlen, "rocksdb backend: cannot create column family %s: %s",
				 name, e ? e : strerror(ENOMEM));
			free(e);
		}
	}
	pthread_mutex_unlock(&nkv_rocks_dbs_lock);
	return h;
}

/* ---- the backend ---- */

struct nkv_be_rocks;
static rocksdb_column_family_handle_t *nkv_rocks_owner_cf(struct nkv_be_rocks *r, int create);

/* One write in the open batch: its op (NULL for a lazy removal) and what
 * it changed in the counts, to undo when the batch fails. */
struct nkv_rocks_pend {
	struct nkv_be_op *op;
	int64_t dbytes, dkeys, dttl;
	uintptr_t ix_old;	/* the key's index entry before (0: absent) */
	uint8_t drop_tier;	/* remove the key from the volatile tier after */
	uint8_t evicted;	/* a removal to make room (owners: rocksdb_owner.h) */
	uint8_t klen;
	uint8_t key[NKV_KEY_MAX];
};

/*
 * The write filter: per bucket of keys (a hash of the key), the Stores and
 * Deletes submitted and those completed (completed = made, in RocksDB and
 * the tier). A read whose bucket has none outstanding when it starts, and
 * no new one when it ends, read nothing a write was changing: so a read
 * on the submitting thread never sees half a write (a TTL'd value's
 * record beside its meta, a key between the tiers), and never goes
 * around a write its own client queued before it.
 */
struct nkv_rocks_flt {
	uint64_t sub;	/* atomic; under qlock */
	uint64_t done;	/* atomic; by the worker */
};

struct nkv_be_rocks {
	struct nkv_be be;
	struct nkv_rocks_db *d;
	rocksdb_column_family_handle_t *cf, *meta;
	rocksdb_column_family_handle_t *owner;	/* NAME:owner (rocksdb_owner.h); NULL
						 * until the first owner is written */
	char owner_name[300];
	int owners_load;		/* atomic: attached, owners to load */
	rocksdb_writeoptions_t *wo;
	rocksdb_writeoptions_t *wo_apart;	/* --sync always: unsynced, the log
						 * synced after (nkv_rocks_write) */
	uint64_t sync_apart;		/* --sync-apart; 0: never */
	rocksdb_readoptions_t *ro;
	rocksdb_writebatch_t *wb;
	struct nkv_be *tier;		/* ephemeral values (mem.h) */
	struct nkv_lru *lru;		/* --evict lru; NULL: 81h when full. The
					 * worker sets it; a poll thread's read
					 * loads it once (atomic) */
	struct nkv_lru *lru_off;	/* one namespace_set turned off: a poll
					 * thread may still hold it; reused */
	int evict_want;			/* atomic: namespace_set's evict (0/1) */
	struct nkv_rdpool *rd;		/* large Retrieves, beside the poll thread */
	struct nkv_kvmap ix;		/* the key index (the worker's) */
	int64_t wall_off;		/* wall clock ms - nkv_be_now_ms() at open */
	/* Counts (atomics: bytes_used reads them from the poll thread). */
	uint64_t bytes, keys, ttl_keys, evictions;
	uint64_t writes;		/* WriteBatches written (the metrics) */
	uint64_t owner_puts;		/* owner records put into them */
	uint64_t syncs_apart;		/* of the writes, logs synced apart */
	/* The worker and its queue. */
	pthread_t thr;
	pthread_mutex_t qlock;
	pthread_cond_t qcond;
	struct nkv_be_op **q;
	size_t qlen, qcap;
	int stop, started;
	uint64_t next_sweep;
	char desc[384];			/* its settings, for describe() */
	struct nkv_rocks_flt flt[NKV_ROCKS_FLT];
	/* The open batch. */
	struct nkv_rocks_pend pend[NKV_ROCKS_BATCH];
	unsigned npend;
	uint64_t pend_bytes;
	/* What nkv_rocks_disk_room() read for the open batch. */
	int disk_known;
	uint64_t disk_free, disk_mem;
};

static uint16_t nkv_rocks_st(uint8_t sc)
{
	return NKV_STATUS(NKV_SCT_GENERIC, sc);
}

/* A RocksDB error as an NVMe status: a full disk is Capacity Exceeded. */
static uint16_t nkv_rocks_err_st(const char *e)
{
	if (strstr(e, "No space") || strstr(e, "NoSpace"))
		return nkv_rocks_st(NKV_SC_CAPACITY_EXCEEDED);
	return nkv_rocks_st(NKV_SC_KV_UNRECOVERED_ERROR);
}

/* The clock expiries are kept on: wall-clock ms (they outlive a
 * restart), moving with nkv_be_now_ms() so a test's clock drives it. */
static uint64_t nkv_rocks_now(const struct nkv_be_rocks *r)
{
	return (uint64_t)((int64_t)nkv_be_now_ms() + r->wall_off);
}

static void nkv_rocks_count(struct nkv_be_rocks *r, int64_t db, int64_t dk, int64_t dt)
{
	__atomic_add_fetch(&r->bytes, (uint64_t)db, __ATOMIC_RELAXED);
	__atomic_add_fetch(&r->keys, (uint64_t)dk, __ATOMIC_RELAXED);
	__atomic_add_fetch(&r->ttl_keys, (uint64_t)dt, __ATOMIC_RELAXED);
}

static int nkv_rocks_is_write(const struct nkv_be_op *op)
{
	return op->opc == NKV_KV_STORE || op->opc == NKV_KV_DELETE;
}

/* key's index entry, or 0 when the database (with the open batch) has
 * no such key. */
static uintptr_t nkv_rocks_ix_get(const struct nkv_be_rocks *r, const uint8_t *key, uint8_t klen)
{
	return (uintptr_t)nkv_kvmap_find(&r->ix, key, klen);
}

/* Set key's entry to e (0: remove it). 0, or -ENOMEM (unchanged). */
static int nkv_rocks_ix_set(struct nkv_be_rocks *r, const uint8_t *key, uint8_t klen, uintptr_t e)
{
	if (!e) {
		nkv_kvmap_delete(&r->ix, key, klen);
		return 0;
	}
	return nkv_kvmap_insert(&r->ix, key, klen, (void *)e, NULL) < 0 ? -ENOMEM : 0;
}

/* key's bucket of the write filter. */
static struct nkv_rocks_flt *nkv_rocks_flt_of(struct nkv_be_rocks *r, const uint8_t *key,
					      uint8_t klen)
{
	return &r->flt[nkv_be_key_hash(key, klen) % NKV_ROCKS_FLT];
}

/* Complete op (its effects all made): a write leaves the filter.
 * Release: a read that sees it done sees what it made. */
static void nkv_rocks_done(struct nkv_be_rocks *r, struct nkv_be_op *op)
{
	if (nkv_rocks_is_write(op))
		__atomic_add_fetch(&nkv_rocks_flt_of(r, op->key, op->klen)->done, 1,
				   __ATOMIC_RELEASE);
	op->done(op);
}

/* key's meta record: 1 found, 0 absent, or -1 (status in *st). */
static int nkv_rocks_meta_get(struct nkv_be_rocks *r, const uint8_t *key, uint8_t klen,
			      struct nkv_rocks_meta *m, uint16_t *st)
{
	char *e = NULL;
	rocksdb_pinnableslice_t *ps = rocksdb_get_pinned_cf(r->d->db, r->ro, r->meta,
							     (const char *)key, klen, &e);
	const char *v;
	size_t len = 0;
	int found = 0;

	if (e) {
		*st = nkv_rocks_err_st(e);
		free(e);
		return -1;
	}
	if (ps) {
		v = rocksdb_pinnableslice_value(ps, &len);
		found = v && !nkv_rocks_meta_dec(v, len, m);
		rocksdb_pinnableslice_destroy(ps);
	}
	return found;
}

static int nkv_rocks_expired(const struct nkv_be_rocks *r, const struct nkv_rocks_meta *m)
{
	return m->expire_ms && nkv_rocks_now(r) >= m->expire_ms;
}

/* key's value record, pinned in *ps (the caller destroys it), its value
 * at *v: 1 found, 0 absent, or -1 (status in *st; 88h for records that
 * disagree). *m: its meta, the expiry from the meta family when the key
 * has a TTL (a touch rewrites only that). */
static int nkv_rocks_rec_get(struct nkv_be_rocks *r, const uint8_t *key, uint8_t klen,
			     struct nkv_rocks_meta *m, rocksdb_pinnableslice_t **ps,
			     const char **v, uint16_t *st)
{
	struct nkv_rocks_meta cur;
	const char *p = NULL;
	char *e = NULL;
	size_t len = 0;
	int f;

	*ps = rocksdb_get_pinned_cf(r->d->db, r->ro, r->cf, (const char *)key, klen, &e);
	if (e) {
		*st = nkv_rocks_err_st(e);
		free(e);
		return -1;
	}
	if (*ps)
		p = rocksdb_pinnableslice_value(*ps, &len);
	if (!p)
		return 0;
	*v = p + NKV_ROCKS_META_LEN;
	if (len >= NKV_ROCKS_META_LEN && !nkv_rocks_meta_dec(p, NKV_ROCKS_META_LEN, m) &&
	    m->size == len - NKV_ROCKS_META_LEN) {
		if (!m->ttl_s)
			return 1;
		f = nkv_rocks_meta_get(r, key, klen, &cur, st);
		if (f < 0)
			return -1;
		if (f && cur.size == m->size) {
			*m = cur;
			return 1;
		}
	}
	*st = nkv_rocks_st(NKV_SC_KV_UNRECOVERED_ERROR);	/* the records disagree */
	return -1;
}

/* key's meta without its value: the meta family's record, else (a small
 * value without TTL has none) the value record's head, the value not
 * copied. 1 found, 0 absent, or -1 (status in *st). */
static int nkv_rocks_head_get(struct nkv_be_rocks *r, const uint8_t *key, uint8_t klen,
			      struct nkv_rocks_meta *m, uint16_t *st)
{
	rocksdb_pinnableslice_t *ps = NULL;
	const char *v = NULL;
	int f = nkv_rocks_meta_get(r, key, klen, m, st);

	if (f)
		return f;
	f = nkv_rocks_rec_get(r, key, klen, m, &ps, &v, st);
	if (ps)
		rocksdb_pinnableslice_destroy(ps);
	return f;
}

static int nkv_rocks_pending(const struct nkv_be_rocks *r, const uint8_t *key, uint8_t klen)
{
	unsigned i;

	for (i = 0; i < r->npend; i++)
		if (r->pend[i].klen == klen && !memcmp(r->pend[i].key, key, klen))
			return 1;
	return 0;
}

/* A slot in the open batch for a write of key (the caller fills it). */
static struct nkv_rocks_pend *nkv_rocks_pend_add(struct nkv_be_rocks *r, struct nkv_be_op *op,
						 const uint8_t *key, uint8_t klen)
{
	struct nkv_rocks_pend *p = &r->pend[r->npend++];

	memset(p, 0, sizeof(*p));
	p->op = op;
	p->klen = klen;
	memcpy(p->key, key, klen);
	return p;
}

/* Write the open batch (one sync) and complete its ops. */
/* The namespace's owner family (rocksdb_owner.h), opened with the
 * database when it has one; created (create) at the first owner written,
 * so a database nobody owns keys in keeps the families it had and opens
 * in an nkv-target from before owners. NULL: none (or not creatable: the
 * owners are then kept in memory alone, logged). */
static rocksdb_column_family_handle_t *nkv_rocks_owner_cf(struct nkv_be_rocks *r, int create)
{
	char err[256];
	size_t i;

	if (r->owner || !r->owner_name[0])
		return r->owner;
	pthread_mutex_lock(&nkv_rocks_dbs_lock);
	for (i = 0; i < r->d->ncf && !r->owner; i++)
		if (!strcmp(r->d->names[i], r->owner_name))
			r->owner = r->d->cfs[i];
	pthread_mutex_unlock(&nkv_rocks_dbs_lock);
	if (!r->owner && create) {
		r->owner = nkv_rocks_cf(r->d, r->owner_name, err, sizeof(err));
		if (!r->owner) {	/* once: owners stay in memory from now on */
			nkv_be_log(NKV_BE_LOG_ERROR, "event=rocksdb_owner_family_failed %s", err);
			r->owner_name[0] = 0;
		}
	}
	return r->owner;
}

/* A write made: its key's owner as the tenants count it (owners.c). */
static void nkv_rocks_owned(struct nkv_be_rocks *r, const struct nkv_rocks_pend *p)
{
	const struct nkv_be_op *op = p->op;

	if (p->dkeys < 0)
		nkv_be_owner_gone(&r->be, p->key, p->klen, p->evicted);
	else if (op && op->opc == NKV_KV_STORE && (op->options & NKV_STORE_TOUCH) && p->dttl)
		nkv_be_owner_ttl(&r->be, p->key, p->klen, 1);
	else if (op && op->opc == NKV_KV_STORE && !(op->options & NKV_STORE_TOUCH))
		nkv_be_owner_stored(&r->be, op->owner, p->key, p->klen,
				    nkv_be_rocks_key_cost(p->klen, op->len),
				    (op->options & NKV_STORE_TTL) != 0);
}

/*
 * Write the open batch: 0, or the write's status. A batch of --sync-apart
 * value bytes or more under --sync always is written unsynced and the
 * log synced after it (RocksDB's SyncWAL): the same durability before the
 * completions, but a synced write marks every live log file as being
 * synced from before it copies and checksums its record until its sync
 * returns, and with more than one column family each flush first syncs
 * the closed log files, waiting out that mark. A batch of two 32 MiB
 * Stores held the flush thread ~120 ms that way, per flush, while writes
 * stopped for it (docs/bench.md, issue 52 seventh pass); apart, the wait
 * is the sync alone. Smaller batches stay synced writes: their mark is
 * short, and RocksDB syncs concurrent synced writes (other namespaces')
 * once for all, where each SyncWAL syncs on its own. *sync_st: the sync's
 * status where the records were written (they are in the memtable, so
 * the index keeps them).
 */
static uint16_t nkv_rocks_write(struct nkv_be_rocks *r, uint16_t *sync_st)
{
	int apart = r->wo_apart && r->pend_bytes >= r->sync_apart;
	char *e = NULL;
	uint16_t st;

	*sync_st = 0;
	rocksdb_write(r->d->db, apart ? r->wo_apart : r->wo, r->wb, &e);
	__atomic_add_fetch(&r->writes, 1, __ATOMIC_RELAXED);
	if (e) {
		st = nkv_rocks_err_st(e);
		free(e);
		return st;
	}
	if (!apart)
		return 0;
	__atomic_add_fetch(&r->syncs_apart, 1, __ATOMIC_RELAXED);
	rocksdb_flush_wal(r->d->db, 1, &e);
	if (e) {
		nkv_be_log(NKV_BE_LOG_ERROR, "event=rocksdb_log_sync_failed %s", e);
		*sync_st = nkv_rocks_err_st(e);
		free(e);
	}
	return 0;
}

static void nkv_rocks_flush(struct nkv_be_rocks *r)
{
	uint16_t st, sync_st;
	unsigned i;

	r->disk_known = 0;	/* read again for the next batch */
	if (!r->npend)
		return;
	st = nkv_rocks_write(r, &sync_st);
	rocksdb_writebatch_clear(r->wb);
	/* The index as it was, last write first (a key has one write in a
	 * batch, but a lazy removal may follow it). A removed key's entry
	 * may need a node: if that fails the key stays uncounted. */
	for (i = r->npend; st && i-- > 0;)
		if (nkv_rocks_ix_set(r, r->pend[i].key, r->pend[i].klen, r->pend[i].ix_old))
			nkv_rocks_count(r, -nkv_be_rocks_key_cost(r->pend[i].klen,
						nkv_rocks_ix_size(r->pend[i].ix_old)), -1,
					r->pend[i].ix_old & NKV_ROCKS_IX_TTL ? -1 : 0);
	nkv_be_done_hold();	/* one wake-up for the batch */
	for (i = 0; i < r->npend; i++) {
		struct nkv_rocks_pend *p = &r->pend[i];

		if (st) {
			nkv_rocks_count(r, -p->dbytes, -p->dkeys, -p->dttl);
			if (r->lru && p->dkeys > 0)
				nkv_lru_drop(r->lru, p->key, p->klen);
		} else if (p->drop_tier) {
			nkv_be_mem_remove(r->tier, p->key, p->klen);
		}
		if (!st)
			nkv_rocks_owned(r, p);
		if (p->op) {
			if (st || sync_st)
				p->op->status = st ? st : sync_st;
			nkv_rocks_done(r, p->op);
		}
	}
	nkv_be_done_release();
	r->npend = 0;
	r->pend_bytes = 0;
}

/* Put a removal of key into the batch: its records (the meta family's
 * only where the index says there is one) and its counts. A key not in
 * the index is not in the database: nothing to remove (op completes
 * with the batch all the same). */
static void nkv_rocks_batch_del(struct nkv_be_rocks *r, struct nkv_be_op *op, const uint8_t *key,
				uint8_t klen)
{
	uintptr_t e = nkv_rocks_ix_get(r, key, klen);
	struct nkv_rocks_pend *p = nkv_rocks_pend_add(r, op, key, klen);

	if (!e)
		return;
	rocksdb_writebatch_delete_cf(r->wb, r->cf, (const char *)key, klen);
	if (e & NKV_ROCKS_IX_META)
		rocksdb_writebatch_delete_cf(r->wb, r->meta, (const char *)key, klen);
	if (r->owner)
		nkv_rocks_owner_del(&r->be, r->wb, r->owner, key, klen);
	nkv_rocks_ix_set(r, key, klen, 0);
	p->ix_old = e;
	p->dbytes = -(int64_t)nkv_be_rocks_key_cost(klen, nkv_rocks_ix_size(e));
	p->dkeys = -1;
	p->dttl = e & NKV_ROCKS_IX_TTL ? -1 : 0;
	nkv_rocks_count(r, p->dbytes, p->dkeys, p->dttl);
	if (r->lru)
		nkv_lru_drop(r->lru, key, klen);
}

/* key meets its expiry: removed in the batch (no op waits on it). */
static void nkv_rocks_lazy_del(struct nkv_be_rocks *r, const uint8_t *key, uint8_t klen)
{
	if (r->npend < NKV_ROCKS_BATCH)
		nkv_rocks_batch_del(r, NULL, key, klen);
}

/* ---- the sweep ---- */

/* Remove durable keys past their expiry; how many. */
static size_t nkv_rocks_sweep(struct nkv_be_rocks *r)
{
	rocksdb_iterator_t *it;
	struct nkv_rocks_meta m;
	const char *k, *v;
	size_t kl, vl, n = 0;

	if (!__atomic_load_n(&r->ttl_keys, __ATOMIC_RELAXED))
		return 0;
	nkv_rocks_flush(r);
	it = rocksdb_create_iterator_cf(r->d->db, r->ro, r->meta);
	for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		k = rocksdb_iter_key(it, &kl);
		v = rocksdb_iter_value(it, &vl);
		if (kl < 1 || kl > NKV_KEY_MAX || nkv_rocks_meta_dec(v, vl, &m) ||
		    !nkv_rocks_expired(r, &m))
			continue;
		nkv_rocks_batch_del(r, NULL, (const uint8_t *)k, (uint8_t)kl);
		n++;
		if (r->npend == NKV_ROCKS_BATCH)
			nkv_rocks_flush(r);
	}
	rocksdb_iter_destroy(it);
	nkv_rocks_flush(r);
	return n;
}

/* ---- eviction ---- */

/* Delete the least recently used key (never key itself) into the batch:
 * 1, or 0 when there is none left to evict. */
static int nkv_rocks_evict_one(struct nkv_be_rocks *r, const uint8_t *key, uint8_t klen)
{
	uint8_t vk[NKV_KEY_MAX], vl;

	for (;;) {
		vl = nkv_lru_victim(r->lru, &r->be, vk, key, klen);	/* share first */
		if (!vl)
			return 0;
		if (nkv_rocks_pending(r, vk, vl) || r->npend == NKV_ROCKS_BATCH)
			nkv_rocks_flush(r);
		if (nkv_rocks_ix_get(r, vk, vl))
			break;
		nkv_lru_drop(r->lru, vk, vl);	/* gone already: look on */
	}
	nkv_rocks_batch_del(r, NULL, vk, vl);
	r->pend[r->npend - 1].evicted = 1;
	__atomic_add_fetch(&r->evictions, 1, __ATOMIC_RELAXED);
	return 1;
}

/* Delete least recently used keys (never key itself) until need bytes
 * fit: 0, or 81h when nothing is left to evict. */
static uint16_t nkv_rocks_evict(struct nkv_be_rocks *r, const uint8_t *key, uint8_t klen,
				uint64_t need)
{
	while (__atomic_load_n(&r->bytes, __ATOMIC_RELAXED) + r->tier->ops->bytes_used(r->tier) +
		       need > __atomic_load_n(&r->be.capacity, __ATOMIC_RELAXED))
		if (!nkv_rocks_evict_one(r, key, klen))
			return nkv_rocks_st(NKV_SC_CAPACITY_EXCEEDED);
	return 0;
}

/* Room for one more key under --max-keys (namespace_set's max_keys):
 * evict with lru, else 81h. The ephemeral tier's keys count too. */
static uint16_t nkv_rocks_key_room(struct nkv_be_rocks *r, const uint8_t *key, uint8_t klen)
{
	uint32_t max = __atomic_load_n(&r->be.max_keys, __ATOMIC_RELAXED);

	while (max && __atomic_load_n(&r->keys, __ATOMIC_RELAXED) +
			      r->tier->ops->keys_used(r->tier) >= max)
		if (!r->lru || !nkv_rocks_evict_one(r, key, klen))
			return nkv_rocks_st(NKV_SC_CAPACITY_EXCEEDED);
	return 0;
}

/* Room for a key costing need more bytes: evict, or sweep once, or 81h. */
static uint16_t nkv_rocks_room(struct nkv_be_rocks *r, const uint8_t *key, uint8_t klen,
			       uint64_t need)
{
	uint64_t cap = __atomic_load_n(&r->be.capacity, __ATOMIC_RELAXED);

	if (__atomic_load_n(&r->bytes, __ATOMIC_RELAXED) + r->tier->ops->bytes_used(r->tier) +
		    need <= cap)
		return 0;
	if (nkv_rocks_sweep(r) &&
	    __atomic_load_n(&r->bytes, __ATOMIC_RELAXED) + r->tier->ops->bytes_used(r->tier) +
			    need <= cap)
		return 0;
	return r->lru ? nkv_rocks_evict(r, key, klen, need)
		      : nkv_rocks_st(NKV_SC_CAPACITY_EXCEEDED);
}

/* Room on the disk for len more value bytes: 0, or 81h. Each value byte
 * takes room twice (its WAL record, then its flushed copy while the WAL
 * still exists), so the memtables' bytes must still fit, and a reserve
 * stays for Deletes and RocksDB's own files. Checked before RocksDB
 * meets ENOSPC: librocksdb 7.8 (Debian 12) aborts on an assertion when
 * a WAL write runs out of space (fixed upstream in 9.x). The free space
 * and the memtables are read once per batch, not per Store (a statfs
 * and two property reads): until the batch is written its Stores change
 * neither, and the open batch's bytes are counted here. */
static uint16_t nkv_rocks_disk_room(struct nkv_be_rocks *r, uint64_t len)
{
	uint64_t v;
	struct statvfs sv;

	if (!r->disk_known) {
		if (statvfs(r->d->path, &sv))
			return 0;	/* unknown: RocksDB answers */
		r->disk_free = (uint64_t)sv.f_bavail * sv.f_frsize;
		r->disk_mem = 0;
		if (!rocksdb_property_int_cf(r->d->db, r->cf, "rocksdb.cur-size-all-mem-tables", &v))
			r->disk_mem += v;
		if (!rocksdb_property_int_cf(r->d->db, r->meta, "rocksdb.cur-size-all-mem-tables",
					     &v))
			r->disk_mem += v;
		r->disk_known = 1;
	}
	return r->disk_free < 2 * (r->pend_bytes + len) + r->disk_mem + NKV_ROCKS_DISK_RESERVE
		       ? nkv_rocks_st(NKV_SC_CAPACITY_EXCEEDED)
		       : 0;
}

/* ---- the ops ---- */

/* Where op's key lives now: durable and live (*m filled; an expired
 * durable copy is reported in stale, still counted), in the volatile
 * tier, its index entry. From the index: only a key with a TTL is read
 * (its expiry, in the meta family). 0, or an error status. */
struct nkv_rocks_where {
	int durable, stale, tier;
	uintptr_t ix;
	struct nkv_rocks_meta m;
};

static uint16_t nkv_rocks_where(struct nkv_be_rocks *r, struct nkv_be_op *op,
				struct nkv_rocks_where *w)
{
	uint16_t st = 0;
	int f;

	memset(w, 0, sizeof(*w));
	w->tier = nkv_be_mem_has(r->tier, op->key, op->klen);
	w->ix = nkv_rocks_ix_get(r, op->key, op->klen);
	if (!w->ix)
		return 0;
	w->m.size = nkv_rocks_ix_size(w->ix);
	if (w->ix & NKV_ROCKS_IX_TTL) {
		f = nkv_rocks_meta_get(r, op->key, op->klen, &w->m, &st);
		if (f < 0)
			return st;
		if (!f || w->m.size != nkv_rocks_ix_size(w->ix))	/* the records disagree */
			return nkv_rocks_st(NKV_SC_KV_UNRECOVERED_ERROR);
	}
	w->stale = nkv_rocks_expired(r, &w->m);
	w->durable = !w->stale;
	return 0;
}

/* An ephemeral Store: into the tier, after the durable copy (if any) is
 * durably gone; room is checked first so that copy is never lost to a
 * full tier. MUST_* were answered by the caller over both tiers. */
static void nkv_rocks_store_eph(struct nkv_be_rocks *r, struct nkv_be_op *op,
				const struct nkv_rocks_where *w)
{
	uint32_t opts = op->options;
	uint16_t st;

	st = nkv_rocks_room(r, op->key, op->klen, nkv_be_mem_key_cost(op->len) + op->klen);
	if (!st && w->ix) {
		nkv_rocks_batch_del(r, NULL, op->key, op->klen);
		nkv_rocks_flush(r);
		if (nkv_rocks_ix_get(r, op->key, op->klen))
			st = nkv_rocks_st(NKV_SC_KV_UNRECOVERED_ERROR);	/* delete failed */
	}
	if (!st) {
		op->options &= ~(uint32_t)(NKV_STORE_MUST_EXIST | NKV_STORE_MUST_NOT_EXIST);
		st = nkv_be_mem_run(r->tier, op);
		op->options = opts;
	}
	op->status = st;
	nkv_rocks_done(r, op);
}

/* Put key's records into the batch: m in front of the value's m->size
 * bytes at val, and m alone in the meta family where the key needs it
 * (a TTL, a large value), else the removal of the one old (the index
 * entry before) had. Its index entry is set first: 0, or 06h (nothing
 * put) when the index cannot grow. */
static uint16_t nkv_rocks_batch_put(struct nkv_be_rocks *r, const uint8_t *key, uint8_t klen,
				    const struct nkv_rocks_meta *m, const void *val, uintptr_t old)
{
	uint8_t hdr[NKV_ROCKS_META_LEN];
	const char *k = (const char *)key, *part[2] = { (const char *)hdr, val };
	size_t kl = klen, plen[2] = { sizeof(hdr), m->size };
	int meta = m->expire_ms || m->size >= NKV_ROCKS_META_MIN;

	if (nkv_rocks_ix_set(r, key, klen, nkv_rocks_ix_make(m->size, m->expire_ms != 0, meta)))
		return nkv_rocks_st(NKV_SC_INTERNAL);
	nkv_rocks_meta_enc(m, hdr);
	rocksdb_writebatch_putv_cf(r->wb, r->cf, 1, &k, &kl, 2, part, plen);
	if (meta)
		rocksdb_writebatch_put_cf(r->wb, r->meta, k, kl, (const char *)hdr, sizeof(hdr));
	else if (old & NKV_ROCKS_IX_META)
		rocksdb_writebatch_delete_cf(r->wb, r->meta, k, kl);
	return 0;
}

/* op's value: the client's buffer itself where its pages cannot vanish
 * (the batch copies it), else a copy in *buf (freed by the caller). 0,
 * or a status. */
static uint16_t nkv_rocks_value(struct nkv_be_op *op, const void **val, void **buf)
{
	*buf = NULL;
	*val = nkv_be_direct(op);
	if (*val)
		return 0;
	*buf = malloc(op->len ? op->len : 1);
	*val = *buf;
	return *buf ? nkv_be_copy_in(op, *buf, op->len) : nkv_rocks_st(NKV_SC_INTERNAL);
}

/* Does the open batch hold a Store of owner's? */
static int nkv_rocks_pend_owner(const struct nkv_be_rocks *r, uint64_t owner)
{
	unsigned i;

	for (i = 0; i < r->npend; i++)
		if (r->pend[i].op && r->pend[i].op->opc == NKV_KV_STORE &&
		    r->pend[i].op->owner == owner)
			return 1;
	return 0;
}

/*
 * Does key's owner record already name op's owner, so the Store need not
 * write it again (a tenant rewriting its own key)? The owner the tenants
 * count for a durable key is the one its last written batch put on disk
 * (set after the write, loaded from the family at open); a write of key
 * earlier in the open batch (the removal of an expired or evicted copy)
 * is not on disk yet, so then it cannot tell.
 */
static int nkv_rocks_owner_kept(struct nkv_be_rocks *r, const struct nkv_be_op *op,
				const struct nkv_rocks_where *w)
{
	uint64_t had = 0;

	return op->owner && w->ix && !w->tier && !nkv_rocks_pending(r, op->key, op->klen) &&
	       nkv_be_owner_of(&r->be, op->key, op->klen, &had) && had == op->owner;
}

/* A durable Store (TTL'd or not) into the batch. */
static void nkv_rocks_store_put(struct nkv_be_rocks *r, struct nkv_be_op *op,
				const struct nkv_rocks_where *w)
{
	uint64_t cost = nkv_be_rocks_key_cost(op->klen, op->len);
	uint64_t old = w->ix ? nkv_be_rocks_key_cost(op->klen, w->m.size) : 0;
	struct nkv_rocks_meta m = { 0 };
	struct nkv_rocks_pend *p;
	const void *val = NULL;
	void *buf = NULL;
	uint16_t st;

	/* Owners count a Store once its batch is written: a tenant under a
	 * quota has its earlier ones written first, so its check is exact. */
	if (nkv_rocks_pend_owner(r, op->owner) && nkv_be_owner_limited(&r->be, op->owner))
		nkv_rocks_flush(r);
	st = nkv_be_owner_admit(&r->be, op->owner, op->key, op->klen, cost);

	if (!st && cost > old)
		st = nkv_rocks_room(r, op->key, op->klen, cost - old);
	if (!st && !w->ix && !w->tier)
		st = nkv_rocks_key_room(r, op->key, op->klen);
	if (!st)
		st = nkv_rocks_disk_room(r, cost);
	if (!st)
		st = nkv_rocks_value(op, &val, &buf);
	if (st) {
		free(buf);
		op->status = st;
		nkv_rocks_done(r, op);
		return;
	}
	if (op->options & NKV_STORE_TTL) {
		m.ttl_s = op->ttl_s;
		m.expire_ms = nkv_rocks_now(r) + (uint64_t)op->ttl_s * 1000u;
	}
	m.size = (uint32_t)op->len;
	if (r->npend == NKV_ROCKS_BATCH)
		nkv_rocks_flush(r);
	st = nkv_rocks_batch_put(r, op->key, op->klen, &m, val, w->ix);
	free(buf);
	if (st) {
		op->status = st;
		nkv_rocks_done(r, op);
		return;
	}
	if (nkv_rocks_owner_cf(r, op->owner != 0) && !nkv_rocks_owner_kept(r, op, w)) {
		nkv_rocks_owner_put(&r->be, r->wb, r->owner, op->key, op->klen, op->owner);
		if (op->owner)
			__atomic_add_fetch(&r->owner_puts, 1, __ATOMIC_RELAXED);
	}
	p = nkv_rocks_pend_add(r, op, op->key, op->klen);
	p->ix_old = w->ix;
	p->dbytes = (int64_t)cost - (int64_t)old;
	p->dkeys = old ? 0 : 1;
	p->dttl = (m.expire_ms != 0) - ((w->ix & NKV_ROCKS_IX_TTL) != 0);
	p->drop_tier = (uint8_t)w->tier;
	nkv_rocks_count(r, p->dbytes, p->dkeys, p->dttl);
	if (r->lru)
		nkv_lru_use(r->lru, op->key, op->klen);
	r->pend_bytes += op->len;
	if (r->pend_bytes >= NKV_ROCKS_BATCH_BYTES)
		nkv_rocks_flush(r);
}

/* A key without TTL gets one (touch with NKV_STORE_TTL): the value
 * record says so too, so both records are written again, the value read
 * back (the batch is empty: touch writes it out first). 0, or a status. */
static uint16_t nkv_rocks_touch_rec(struct nkv_be_rocks *r, const struct nkv_be_op *op,
				    const struct nkv_rocks_meta *m, uintptr_t ix)
{
	rocksdb_pinnableslice_t *ps = NULL;
	struct nkv_rocks_meta old;
	const char *v = NULL;
	uint16_t st = 0;
	int f = nkv_rocks_rec_get(r, op->key, op->klen, &old, &ps, &v, &st);

	if (f > 0 && old.size == m->size)
		st = nkv_rocks_batch_put(r, op->key, op->klen, m, v, ix);
	else if (f >= 0)
		st = nkv_rocks_st(NKV_SC_KV_UNRECOVERED_ERROR);	/* meta without its value */
	if (ps)
		rocksdb_pinnableslice_destroy(ps);
	return st;
}

/* Touch a durable key: its TTL restarts (a new one with NKV_STORE_TTL). */
static void nkv_rocks_touch(struct nkv_be_rocks *r, struct nkv_be_op *op,
			    const struct nkv_rocks_where *w)
{
	struct nkv_rocks_meta m = w->m;
	uint8_t hdr[NKV_ROCKS_META_LEN];
	struct nkv_rocks_pend *p;

	if (op->options & NKV_STORE_TTL)
		m.ttl_s = op->ttl_s;
	if (!m.ttl_s) {
		op->status = 0;	/* no TTL to restart */
		nkv_rocks_done(r, op);
		return;
	}
	m.expire_ms = nkv_rocks_now(r) + (uint64_t)m.ttl_s * 1000u;
	op->status = w->m.ttl_s ? 0 : nkv_rocks_touch_rec(r, op, &m, w->ix);
	if (op->status) {
		nkv_rocks_done(r, op);
		return;
	}
	if (w->m.ttl_s) {
		nkv_rocks_meta_enc(&m, hdr);
		rocksdb_writebatch_put_cf(r->wb, r->meta, (const char *)op->key, op->klen,
					  (const char *)hdr, sizeof(hdr));
	}
	p = nkv_rocks_pend_add(r, op, op->key, op->klen);
	p->ix_old = w->ix;
	p->dttl = !w->m.expire_ms;
	nkv_rocks_count(r, 0, 0, p->dttl);
}

/* The answer a Store gets before anything is written (MUST_*, touch of
 * an absent key), or 0 to go on. */
static uint16_t nkv_rocks_store_check(const struct nkv_be_op *op, const struct nkv_rocks_where *w)
{
	int exists = w->durable || w->tier;

	if ((op->options & NKV_STORE_TOUCH) && !exists)
		return nkv_rocks_st(NKV_SC_KV_KEY_NOT_EXISTS);
	if ((op->options & NKV_STORE_MUST_EXIST) && !exists)
		return nkv_rocks_st(NKV_SC_KV_KEY_NOT_EXISTS);
	if ((op->options & NKV_STORE_MUST_NOT_EXIST) && exists)
		return nkv_rocks_st(NKV_SC_KV_KEY_EXISTS);
	return 0;
}

static void nkv_rocks_store(struct nkv_be_rocks *r, struct nkv_be_op *op)
{
	struct nkv_rocks_where w;
	uint16_t st = nkv_rocks_where(r, op, &w);

	if (!st)
		st = nkv_rocks_store_check(op, &w);
	if (st) {
		op->status = st;
		nkv_rocks_done(r, op);
	} else if ((op->options & NKV_STORE_TOUCH) && w.tier) {
		op->status = nkv_be_mem_run(r->tier, op);
		nkv_rocks_done(r, op);
	} else if (op->options & NKV_STORE_TOUCH) {
		nkv_rocks_touch(r, op, &w);
	} else if (op->options & NKV_STORE_EPHEMERAL) {
		nkv_rocks_store_eph(r, op, &w);
	} else {
		nkv_rocks_store_put(r, op, &w);
	}
}

enum { NKV_ROCKS_SERVED, NKV_ROCKS_STALE, NKV_ROCKS_FAILED };

/* A Retrieve or Exist, from the tier or one RocksDB record (a TTL'd
 * value's two; a size query and Exist read the meta family's record,
 * else the value record's head, the value not copied): SERVED
 * (status, dw0 and the data set), STALE (the durable copy expired: *m
 * for its removal) or FAILED (status set: an error, records that
 * disagree). Thread-safe: the worker's and the submitting thread's. */
static int nkv_rocks_read(struct nkv_be_rocks *r, struct nkv_be_op *op, struct nkv_rocks_meta *m)
{
	rocksdb_pinnableslice_t *ps = NULL;
	int val = op->opc == NKV_KV_RETRIEVE && op->len, f, res = NKV_ROCKS_SERVED;
	const char *v = NULL;
	uint16_t st = 0;

	op->dw0 = 0;
	op->status = 0;
	if (nkv_be_mem_has(r->tier, op->key, op->klen)) {
		if (op->opc == NKV_KV_RETRIEVE)
			op->status = nkv_be_mem_run(r->tier, op);
		return NKV_ROCKS_SERVED;
	}
	f = val ? nkv_rocks_rec_get(r, op->key, op->klen, m, &ps, &v, &st)
		: nkv_rocks_head_get(r, op->key, op->klen, m, &st);
	if (f < 0) {
		op->status = st;
		res = NKV_ROCKS_FAILED;
	} else if (!f) {
		op->status = nkv_rocks_st(NKV_SC_KV_KEY_NOT_EXISTS);
	} else if (nkv_rocks_expired(r, m)) {
		res = NKV_ROCKS_STALE;
	} else if (op->opc == NKV_KV_RETRIEVE) {
		op->dw0 = m->size;
		if (val)
			op->status = nkv_be_copy_out(op, v, m->size < op->len ? m->size : op->len);
		struct nkv_lru *lru = __atomic_load_n(&r->lru, __ATOMIC_ACQUIRE);

		if (lru)
			nkv_lru_use(lru, op->key, op->klen);
	}
	if (ps)
		rocksdb_pinnableslice_destroy(ps);
	return res;
}

/* A Retrieve or Exist on the worker: an expired key is removed. */
static void nkv_rocks_read_op(struct nkv_be_rocks *r, struct nkv_be_op *op)
{
	struct nkv_rocks_meta m;

	if (nkv_rocks_read(r, op, &m) == NKV_ROCKS_STALE) {
		nkv_rocks_lazy_del(r, op->key, op->klen);
		op->status = nkv_rocks_st(NKV_SC_KV_KEY_NOT_EXISTS);
	}
	nkv_rocks_done(r, op);
}

static void nkv_rocks_delete(struct nkv_be_rocks *r, struct nkv_be_op *op)
{
	struct nkv_rocks_where w;
	uint16_t st = nkv_rocks_where(r, op, &w);

	if (!st && w.tier)
		nkv_be_mem_remove(r->tier, op->key, op->klen);
	if (!st && w.ix) {
		op->status = w.durable || w.tier ? 0 : nkv_rocks_st(NKV_SC_KV_KEY_NOT_EXISTS);
		nkv_rocks_batch_del(r, op, op->key, op->klen);
		return;	/* completes with the batch */
	}
	op->status = st ? st : w.tier ? 0 : nkv_rocks_st(NKV_SC_KV_KEY_NOT_EXISTS);
	nkv_rocks_done(r, op);
}

/* ---- List: the durable keys and the tier's, merged in byte order ---- */

struct nkv_rocks_keys {
	const uint8_t *from;
	uint8_t flen;
	size_t n, cap;
	uint8_t (*key)[NKV_KEY_MAX + 1];	/* [0]: length */
};

/* Byte order, a prefix first: RocksDB's bytewise comparator and mem's. */
static int nkv_rocks_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c ? c : (al > bl) - (al < bl);
}

static int nkv_rocks_keys_add(void *arg, const uint8_t *key, uint8_t klen)
{
	struct nkv_rocks_keys *k = arg;
	void *p;

	if (nkv_rocks_cmp(key, klen, k->from, k->flen) < 0)
		return 0;
	if (k->n == k->cap) {
		p = realloc(k->key, (k->cap ? k->cap * 2 : 64) * sizeof(*k->key));
		if (!p)
			return -ENOMEM;
		k->key = p;
		k->cap = k->cap ? k->cap * 2 : 64;
	}
	k->key[k->n][0] = klen;
	memcpy(&k->key[k->n++][1], key, klen);
	return 0;
}

/* A durable key for List: live, or expired (read only for a TTL). */
static int nkv_rocks_live(struct nkv_be_rocks *r, const struct nkv_kvmap_cursor *c)
{
	struct nkv_rocks_meta m;
	uint16_t st;

	return !((uintptr_t)c->val & NKV_ROCKS_IX_TTL) ||
	       nkv_rocks_meta_get(r, c->key, c->klen, &m, &st) <= 0 || !nkv_rocks_expired(r, &m);
}

/* The index's keys from op's key, the tier's merged in (the batch is
 * written first, so the index is what the database holds). */
static void nkv_rocks_list(struct nkv_be_rocks *r, struct nkv_be_op *op)
{
	struct nkv_rocks_keys t = { .from = op->key, .flen = op->klen };
	struct nkv_kvmap_cursor c;
	size_t i = 0;
	int full = 0, at;

	nkv_rocks_flush(r);
	if (nkv_be_mem_walk(r->tier, nkv_rocks_keys_add, &t)) {
		free(t.key);
		op->status = nkv_rocks_st(NKV_SC_INTERNAL);
		nkv_rocks_done(r, op);
		return;
	}
	at = nkv_kvmap_seek(&r->ix, &c, op->key, op->klen);
	while (!full && (at || i < t.n)) {
		if (!at || (i < t.n && nkv_rocks_cmp(&t.key[i][1], t.key[i][0], c.key, c.klen) <= 0)) {
			full = nkv_be_list_add(op, &t.key[i][1], t.key[i][0]) != 0;
			i++;
			continue;
		}
		if (nkv_rocks_live(r, &c))
			full = nkv_be_list_add(op, c.key, c.klen) != 0;
		at = nkv_kvmap_next(&c);
	}
	free(t.key);
	op->status = 0;
	nkv_rocks_done(r, op);
}

static void nkv_rocks_exec(struct nkv_be_rocks *r, struct nkv_be_op *op)
{
	op->dw0 = 0;
	op->status = 0;
	/* Nothing is read around a write still in the batch. */
	if (nkv_rocks_pending(r, op->key, op->klen) ||
	    (op->opc == NKV_KV_STORE && (op->options & (NKV_STORE_TOUCH | NKV_STORE_EPHEMERAL))))
		nkv_rocks_flush(r);
	switch (op->opc) {
	case NKV_KV_STORE: nkv_rocks_store(r, op); break;
	case NKV_KV_RETRIEVE: nkv_rocks_read_op(r, op); break;
	case NKV_KV_DELETE: nkv_rocks_delete(r, op); break;
	case NKV_KV_EXIST: nkv_rocks_read_op(r, op); break;
	case NKV_KV_LIST: nkv_rocks_list(r, op); break;
	default:
		op->status = nkv_rocks_st(NKV_SC_INVALID_OPCODE);
		nkv_rocks_done(r, op);
	}
	if (r->npend >= NKV_ROCKS_BATCH - 1)
		nkv_rocks_flush(r);
}

/* ---- the worker ---- */

/* Take every queued op; with wait, wait for some first (or the sweep's
 * time). */
static size_t nkv_rocks_take(struct nkv_be_rocks *r, struct nkv_be_op ***ops, size_t *cap,
			     int wait)
{
	struct timespec ts;
	size_t n;

	pthread_mutex_lock(&r->qlock);
	if (wait && !r->qlen && !r->stop) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += NKV_ROCKS_SWEEP_MS / 1000;
		pthread_cond_timedwait(&r->qcond, &r->qlock, &ts);
	}
	n = r->qlen;
	if (n) {	/* swap the queue's array for ours */
		struct nkv_be_op **t = *ops;
		size_t c = *cap;

		*ops = r->q;
		*cap = r->qcap;
		r->q = t;
		r->qcap = c;
		r->qlen = 0;
	}
	pthread_mutex_unlock(&r->qlock);
	return n;
}

/* One owner record at open: its key's owner, as the index sizes it. */
static void nkv_rocks_owned_one(void *arg, const uint8_t *key, uint8_t klen, uint64_t owner)
{
	struct nkv_be_rocks *r = arg;
	uintptr_t e = nkv_rocks_ix_get(r, key, klen);

	if (e)	/* else a record left by a write that failed: the key is not there */
		nkv_be_owner_stored(&r->be, owner, key, klen,
				    nkv_be_rocks_key_cost(klen, nkv_rocks_ix_size(e)),
				    (e & NKV_ROCKS_IX_TTL) != 0);
}

/* The owners the database holds, then every other key as owned by none
 * (a database from before owners: all of them). The worker's, before
 * its first op once attached. */
static void nkv_rocks_owners_load(struct nkv_be_rocks *r)
{
	struct nkv_kvmap_cursor c;
	uint64_t o;
	uintptr_t e;
	int more;

	if (r->owner)
		nkv_rocks_owner_each(r->d->db, r->ro, r->owner, nkv_rocks_owned_one, r);
	for (more = nkv_kvmap_seek(&r->ix, &c, NULL, 0); more > 0; more = nkv_kvmap_next(&c)) {
		e = (uintptr_t)c.val;
		if (e && !nkv_be_owner_of(&r->be, c.key, c.klen, &o))
			nkv_be_owner_stored(&r->be, 0, c.key, c.klen,
					    nkv_be_rocks_key_cost(c.klen, nkv_rocks_ix_size(e)),
					    (e & NKV_ROCKS_IX_TTL) != 0);
	}
}

/*
 * namespace_set's evict, applied by the worker (the LRU is the worker's
 * to fill and evict from). On: every indexed key enters it (order lost,
 * as at an open). Off: it is put aside, not freed: a poll thread's
 * Retrieve may still hold it; a later on refills and reuses it.
 */
static void nkv_rocks_evict_switch(struct nkv_be_rocks *r, int on)
{
	struct nkv_kvmap_cursor c;
	struct nkv_lru *l;
	int more;

	if (!on) {
		r->lru_off = r->lru;
		__atomic_store_n(&r->lru, NULL, __ATOMIC_RELEASE);
		__atomic_store_n(&r->be.evict, 0, __ATOMIC_RELAXED);
		return;
	}
	l = r->lru_off ? r->lru_off : nkv_lru_create();
	for (more = l ? nkv_kvmap_seek(&r->ix, &c, NULL, 0) : 0; more > 0;
	     more = nkv_kvmap_next(&c))
		if (nkv_lru_use(l, c.key, c.klen))
			break;
	if (!l || more > 0) {	/* out of memory: stays off, 81h when full */
		nkv_be_log(NKV_BE_LOG_ERROR, "event=evict_failed backend=rocksdb reason=ENOMEM");
		__atomic_store_n(&r->evict_want, 0, __ATOMIC_RELEASE);
		r->lru_off = l;
		return;
	}
	r->lru_off = NULL;
	__atomic_store_n(&r->lru, l, __ATOMIC_RELEASE);
	__atomic_store_n(&r->be.evict, 1, __ATOMIC_RELAXED);
}

static void *nkv_rocks_worker(void *arg)
{
	struct nkv_be_rocks *r = arg;
	struct nkv_be_op **ops = NULL;
	size_t cap = 0, n, i;

	for (;;) {
		/* Ops queued while the last ones ran join the open batch before
		 * it is written: a poll pass's Stores are often still being
		 * queued when the worker wakes (22-28 of a batch of 32 taken at
		 * first), and a second write of the pass is a second sync. */
		n = nkv_rocks_take(r, &ops, &cap, !r->npend);
		if (__atomic_exchange_n(&r->owners_load, 0, __ATOMIC_ACQUIRE))
			nkv_rocks_owners_load(r);	/* before its first op */
		if (__atomic_load_n(&r->evict_want, __ATOMIC_ACQUIRE) != (r->lru != NULL))
			nkv_rocks_evict_switch(r, !r->lru);
		for (i = 0; i < n; i++)
			nkv_rocks_exec(r, ops[i]);
		if (n)
			continue;
		nkv_rocks_flush(r);
		if (__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE))
			break;
		if (nkv_be_now_ms() >= r->next_sweep) {
			nkv_rocks_sweep(r);
			r->next_sweep = nkv_be_now_ms() + NKV_ROCKS_SWEEP_MS;
		}
	}
	free(ops);
	return NULL;
}

/*
 * Serve a Retrieve or Exist on the submitting thread: 1 done, or 0 for
 * the worker to run it (after the writes of its key's bucket that are in
 * flight, when it must remove an expired key, or report an error).
 * Nothing it did need be undone: the worker sets status, dw0 and the
 * data again.
 */
static int nkv_rocks_fast(struct nkv_be_rocks *r, struct nkv_be_op *op)
{
	struct nkv_rocks_flt *f = nkv_rocks_flt_of(r, op->key, op->klen);
	uint64_t sub = __atomic_load_n(&f->sub, __ATOMIC_ACQUIRE);
	struct nkv_rocks_meta m;

	if (__atomic_load_n(&f->done, __ATOMIC_ACQUIRE) != sub ||
	    nkv_rocks_read(r, op, &m) != NKV_ROCKS_SERVED)
		return 0;
	/* A write that made anything this read saw was submitted before it
	 * was made (sub++, then the queue lock's release, the worker, then
	 * RocksDB's or the tier's own release): the fence makes it seen. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&f->sub, __ATOMIC_RELAXED) != sub)
		return 0;
	op->done(op);
	return 1;
}

/* Queue op for the worker, waking it unless wake is 0 (a burst's op: the
 * burst's end wakes it once, nkv_rocks_poll): 0, or -ENOMEM. */
static int nkv_rocks_enqueue(struct nkv_be_rocks *r, struct nkv_be_op *op, int wake)
{
	struct nkv_be_op **q;
	size_t cap;

	pthread_mutex_lock(&r->qlock);
	if (r->qlen == r->qcap) {
		cap = r->qcap ? r->qcap * 2 : 256;
		q = realloc(r->q, cap * sizeof(*q));
		if (!q) {
			pthread_mutex_unlock(&r->qlock);
			return -ENOMEM;
		}
		r->q = q;
		r->qcap = cap;
	}
	r->q[r->qlen++] = op;
	if (nkv_rocks_is_write(op))
		__atomic_add_fetch(&nkv_rocks_flt_of(r, op->key, op->klen)->sub, 1,
				   __ATOMIC_RELAXED);
	if (wake)
		pthread_cond_signal(&r->qcond);
	pthread_mutex_unlock(&r->qlock);
	return 0;
}

/* A large Retrieve on a pool thread: served there as on the poll thread
 * (nkv_rocks_fast), else by the worker. */
static void nkv_rocks_rd_run(void *arg, void *item)
{
	struct nkv_be_rocks *r = arg;
	struct nkv_be_op *op = item;

	if (nkv_rocks_fast(r, op) || !nkv_rocks_enqueue(r, op, 1))
		return;
	op->status = nkv_rocks_st(NKV_SC_INTERNAL);	/* no memory to queue it */
	op->dw0 = 0;
	nkv_be_produced(op, 0);
	op->done(op);
}

/*
 * A Retrieve of 64 KiB or more goes to the read pool: its blob read,
 * RocksDB's checksum of it (Debian's librocksdb computes CRC32C in
 * software) and the copy out take tens of microseconds, and a batch's
 * large reads then run side by side instead of one after another on the
 * poll thread. Smaller reads cost less than the hand-off and stay here.
 */
static int nkv_rocks_submit(struct nkv_be *be, struct nkv_be_op *op)
{
	struct nkv_be_rocks *r = (struct nkv_be_rocks *)be;

	if (op->opc == NKV_KV_RETRIEVE && op->len >= NKV_ROCKS_READ_POOL_MIN && r->rd &&
	    !nkv_rdpool_push(r->rd, op))
		return 0;
	if ((op->opc == NKV_KV_RETRIEVE || op->opc == NKV_KV_EXIST) && nkv_rocks_fast(r, op))
		return 0;
	nkv_be_wait_near(op);	/* the worker: one thread, one write */
	return nkv_rocks_enqueue(r, op, !nkv_be_poll_later(be));
}

/*
 * A poll thread's burst has been submitted: wake the worker once for the
 * ops it queued. Woken at the first of them instead, the worker was
 * signalled again at each of the others while it gathered them, and on
 * a core it shared with the poll thread each wake-up took the core from
 * the poll thread in the middle of its burst (docs/target.md, "Durability").
 */
static void nkv_rocks_poll(struct nkv_be *be)
{
	struct nkv_be_rocks *r = (struct nkv_be_rocks *)be;

	pthread_mutex_lock(&r->qlock);
	if (r->qlen)
		pthread_cond_signal(&r->qcond);
	pthread_mutex_unlock(&r->qlock);
}

static uint64_t nkv_rocks_bytes(struct nkv_be *be)
{
	struct nkv_be_rocks *r = (struct nkv_be_rocks *)be;

	return __atomic_load_n(&r->bytes, __ATOMIC_RELAXED) + r->tier->ops->bytes_used(r->tier);
}

static uint64_t nkv_rocks_keys(struct nkv_be *be)
{
	struct nkv_be_rocks *r = (struct nkv_be_rocks *)be;

	return __atomic_load_n(&r->keys, __ATOMIC_RELAXED) + r->tier->ops->keys_used(r->tier);
}

/*
 * namespace_set. Capacity and max_keys are read by the worker at each
 * Store (atomics); evict is switched by the worker, woken here, and
 * waited for so the answer says what is in force.
 */
static int nkv_rocks_set_limits(struct nkv_be *be, const struct nkv_be_limits *l, char *err,
				size_t errlen)
{
	struct nkv_be_rocks *r = (struct nkv_be_rocks *)be;
	struct nkv_be_limits tl = { .set_max_keys = l->set_max_keys, .max_keys = l->max_keys,
				    .evict = -1 };
	int i, rc;

	if (l->set_max_keys) {	/* the ephemeral tier counts its own */
		rc = r->tier->ops->set_limits(r->tier, &tl, err, errlen);
		if (rc)
			return rc;
		__atomic_store_n(&r->be.max_keys, l->max_keys, __ATOMIC_RELAXED);
	}
	if (l->capacity)
		__atomic_store_n(&r->be.capacity, l->capacity, __ATOMIC_RELAXED);
	if (l->evict < 0)
		return 0;
	pthread_mutex_lock(&r->qlock);
	__atomic_store_n(&r->evict_want, l->evict, __ATOMIC_RELEASE);
	pthread_cond_signal(&r->qcond);
	pthread_mutex_unlock(&r->qlock);
	for (i = 0; i < 10000; i++) {	/* the worker is between ops within a batch's time */
		if ((__atomic_load_n(&r->lru, __ATOMIC_ACQUIRE) != NULL) == l->evict)
			return 0;
		if (__atomic_load_n(&r->evict_want, __ATOMIC_ACQUIRE) != l->evict)
			break;	/* it could not: out of memory */
		usleep(1000);
	}
	snprintf(err, errlen, "rocksdb backend: evict %s not in force: %s",
		 l->evict ? "lru" : "none", i < 10000 ? "no memory for the LRU" :
		 "the worker did not take it within 10 s (busy writing)");
	return i < 10000 ? -ENOMEM : -ETIMEDOUT;
}

static uint64_t nkv_rocks_evictions(struct nkv_be *be)
{
	return __atomic_load_n(&((struct nkv_be_rocks *)be)->evictions, __ATOMIC_RELAXED);
}

static void nkv_rocks_destroy(struct nkv_be *be)
{
	struct nkv_be_rocks *r = (struct nkv_be_rocks *)be;

	nkv_rdpool_destroy(r->rd);	/* first: its reads may queue for the worker */
	if (r->started) {
		pthread_mutex_lock(&r->qlock);
		__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
		pthread_cond_signal(&r->qcond);
		pthread_mutex_unlock(&r->qlock);
		pthread_join(r->thr, NULL);
	}
	pthread_mutex_destroy(&r->qlock);
	pthread_cond_destroy(&r->qcond);
	if (r->wb)
		rocksdb_writebatch_destroy(r->wb);
	if (r->wo)
		rocksdb_writeoptions_destroy(r->wo);
	if (r->wo_apart)
		rocksdb_writeoptions_destroy(r->wo_apart);
	if (r->ro)
		rocksdb_readoptions_destroy(r->ro);
	if (r->tier)
		r->tier->ops->destroy(r->tier);
	nkv_lru_destroy(r->lru);
	nkv_lru_destroy(r->lru_off);
	nkv_kvmap_fini(&r->ix, NULL);
	if (r->d)
		nkv_rocks_db_put(r->d);
	free(r->q);
	free(r);
}

static void nkv_rocks_describe(struct nkv_be *be, char *buf, size_t len)
{
	snprintf(buf, len, "%s", ((struct nkv_be_rocks *)be)->desc);
}

/* RocksDB's own properties for the metrics endpoint: whether writes are
 * stopped or slowed (a stall), and compactions and flushes under way. */
static const struct {
	const char *prop, *name, *help;
} nkv_rocks_props[] = {
	{ "rocksdb.is-write-stopped", "rocksdb_write_stopped",
	  "1 while RocksDB stops writes (a stall)." },
	{ "rocksdb.actual-delayed-write-rate", "rocksdb_delayed_write_rate_bytes",
	  "The rate RocksDB slows writes to, bytes per second; 0: not slowed." },
	{ "rocksdb.num-running-compactions", "rocksdb_running_compactions",
	  "Compactions running now." },
	{ "rocksdb.compaction-pending", "rocksdb_compaction_pending",
	  "1 while at least one compaction is pending." },
	{ "rocksdb.num-running-flushes", "rocksdb_running_flushes", "Memtable flushes running now." },
	{ "rocksdb.estimate-pending-compaction-bytes", "rocksdb_pending_compaction_bytes",
	  "Bytes RocksDB estimates compaction has to rewrite." },
};

static unsigned nkv_rocks_metrics(struct nkv_be *be, struct nkv_be_metric *out, unsigned max)
{
	struct nkv_be_rocks *r = (struct nkv_be_rocks *)be;
	unsigned i, n = 0;
	uint64_t v;

	for (i = 0; i < sizeof(nkv_rocks_props) / sizeof(nkv_rocks_props[0]) && n < max; i++)
		if (!rocksdb_property_int(r->d->db, nkv_rocks_props[i].prop, &v))
			out[n++] = (struct nkv_be_metric){ nkv_rocks_props[i].name,
							   nkv_rocks_props[i].help, 0, (double)v };
	if (n < max)	/* Stores over this: how many a write carries */
		out[n++] = (struct nkv_be_metric){
			"rocksdb_writes_total",
			"WriteBatches the worker wrote (one WAL record each, synced with --sync always).",
			1, (double)__atomic_load_n(&r->writes, __ATOMIC_RELAXED) };
	if (n < max)
		out[n++] = (struct nkv_be_metric){
			"rocksdb_owner_records_total",
			"Owner records written (a tenant's Store of a key it did not own already).",
			1, (double)__atomic_load_n(&r->owner_puts, __ATOMIC_RELAXED) };
	if (n < max)
		out[n++] = (struct nkv_be_metric){
			"rocksdb_log_syncs_apart_total",
			"Of the writes, those written unsynced and their log synced after "
			"(--sync always, batches of --sync-apart value bytes or more).",
			1, (double)__atomic_load_n(&r->syncs_apart, __ATOMIC_RELAXED) };
	return n;
}

/* The core attached it: the tier's keys are counted in the same
 * namespace, and the worker loads the owners before its first op. */
static void nkv_rocks_attached(struct nkv_be *be)
{
	struct nkv_be_rocks *r = (struct nkv_be_rocks *)be;

	r->tier->tenants = be->tenants;
	r->tier->tenant_nsid = be->tenant_nsid;
	__atomic_store_n(&r->owners_load, 1, __ATOMIC_RELEASE);
}

static const struct nkv_be_ops nkv_rocks_ops = {
	.name = "rocksdb",
	.submit = nkv_rocks_submit,
	.bytes_used = nkv_rocks_bytes,
	.keys_used = nkv_rocks_keys,
	.evictions = nkv_rocks_evictions,
	.set_limits = nkv_rocks_set_limits,
	.describe = nkv_rocks_describe,
	.metrics = nkv_rocks_metrics,
	.attached = nkv_rocks_attached,
	.destroy = nkv_rocks_destroy,
	.poll = nkv_rocks_poll,
};

/* ---- options, open, the type ---- */

/* Parse the options; -EINVAL with a reason. */
static int nkv_rocks_parse(const struct nkv_be_conf *c, struct nkv_rocks_conf *rc, char *err,
			   size_t errlen)
{
	const char *sync = nkv_be_conf_get(c, "sync"), *comp = nkv_be_conf_get(c, "compression");
	const char *blob = nkv_be_conf_get(c, "blob-min"), *ev = nkv_be_conf_get(c, "evict");
	const char *rd = nkv_be_conf_get(c, "readers"), *ap = nkv_be_conf_get(c, "sync-apart");
	char *rend = NULL, *aend = NULL;
	unsigned long nrd = NKV_ROCKS_READERS;
	static const char *const cn[] = { "none", "snappy", "lz4", "zstd" };
	static const int cv[] = { rocksdb_no_compression, rocksdb_snappy_compression,
				  rocksdb_lz4_compression, rocksdb_zstd_compression };
	char *end;
	int i;

	memset(rc, 0, sizeof(*rc));
	rc->path = nkv_be_conf_get(c, "db");
	rc->sync = !sync || !strcmp(sync, "always");
	rc->compression = -1;
	for (i = 0; i < 4; i++)
		if (!comp || !strcmp(comp, cn[i]))
			rc->compression = comp ? cv[i] : rocksdb_no_compression;
	rc->blob_min = NKV_ROCKS_DEF_BLOB_MIN;
	if (blob)
		rc->blob_min = strtoull(blob, &end, 0);
	rc->evict = ev && !strcmp(ev, "lru");
	if (rd)
		nrd = strtoul(rd, &rend, 10);
	rc->readers = (unsigned)nrd;
	rc->sync_apart = NKV_ROCKS_DEF_SYNC_APART;
	if (ap)
		rc->sync_apart = strtoull(ap, &aend, 0);
	rc->comp_name = comp ? comp : cn[0];
	if (!rc->path || !*rc->path)
		snprintf(err, errlen, "rocksdb backend: --db DIR is required");
	else if (sync && strcmp(sync, "always") && strcmp(sync, "none"))
		snprintf(err, errlen, "rocksdb backend: --sync %s: want always or none", sync);
	else if (rc->compression < 0)
		snprintf(err, errlen, "rocksdb backend: --compression %s: want none, snappy, lz4 "
			 "or zstd", comp);
	else if (blob && (!*blob || *end))
		snprintf(err, errlen, "rocksdb backend: --blob-min %s: want bytes", blob);
	else if (ap && (!*ap || *aend || *ap == '-'))
		snprintf(err, errlen, "rocksdb backend: --sync-apart %s: want bytes", ap);
	else if (rd && (!*rd || *rend || *rd == '-' || nrd > NKV_RDPOOL_MAX))
		snprintf(err, errlen, "rocksdb backend: --readers %s: want 0 to %d", rd,
			 NKV_RDPOOL_MAX);
	else if (ev && !rc->evict)
		snprintf(err, errlen, "rocksdb backend: --evict %s: the only policy is lru", ev);
	else if (c->nvm)
		snprintf(err, errlen, "rocksdb backend: KV namespaces only");
	else
		return 0;
	return -EINVAL;
}

static int nkv_rocks_check(const struct nkv_be_conf *c, char *err, size_t errlen)
{
	struct nkv_rocks_conf rc;

	return nkv_rocks_parse(c, &rc, err, errlen);
}

/* Count key (stored with m) and enter it in the index. 0, or -ENOMEM. */
static int nkv_rocks_recount_key(struct nkv_be_rocks *r, const char *k, size_t kl,
				 const struct nkv_rocks_meta *m, int meta)
{
	if (nkv_rocks_ix_set(r, (const uint8_t *)k, (uint8_t)kl,
			     nkv_rocks_ix_make(m->size, m->expire_ms != 0, meta)))
		return -ENOMEM;
	nkv_rocks_count(r, (int64_t)nkv_be_rocks_key_cost((uint32_t)kl, m->size), 1,
			m->expire_ms != 0);
	if (r->lru)
		nkv_lru_use(r->lru, (const uint8_t *)k, (uint8_t)kl);
	return 0;
}

/* The value family's keys from (from, flen) (0: the first) below the
 * key hi (NULL: to the end) not already indexed, counted from each
 * record's head. The bound stops the iterator before it lands on hi: a
 * large value's record would be read whole (a blob file read; RocksDB
 * 7.8's iterators read a blob value when they land on it). 0, or -ENOMEM. */
static int nkv_rocks_recount_gap(struct nkv_be_rocks *r, const uint8_t *from, size_t flen,
				 const uint8_t *hi, uint8_t hlen)
{
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_iterator_t *it;
	struct nkv_rocks_meta m;
	const char *k, *v;
	size_t kl, vl;
	int rc = 0;

	rocksdb_readoptions_set_fill_cache(ro, 0);
	rocksdb_readoptions_set_readahead_size(ro, 4u << 20);
	if (hi)
		rocksdb_readoptions_set_iterate_upper_bound(ro, (const char *)hi, hlen);
	it = rocksdb_create_iterator_cf(r->d->db, ro, r->cf);
	rocksdb_iter_seek(it, (const char *)from, flen);
	for (; !rc && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		k = rocksdb_iter_key(it, &kl);
		v = rocksdb_iter_value(it, &vl);
		if (kl < 1 || kl > NKV_KEY_MAX || vl < NKV_ROCKS_META_LEN ||
		    nkv_rocks_meta_dec(v, NKV_ROCKS_META_LEN, &m) ||
		    m.size != vl - NKV_ROCKS_META_LEN ||
		    nkv_rocks_ix_get(r, (const uint8_t *)k, (uint8_t)kl))
			continue;
		rc = nkv_rocks_recount_key(r, k, kl, &m, 0);
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	return rc;
}

/* The index, bytes, keys and TTL'd keys stored, from the database: the
 * meta family's records (TTL'd keys, large values, every key of a
 * format-1 database), then the value family's other keys, read between
 * the large values. 0, or -ENOMEM. */
static int nkv_rocks_recount(struct nkv_be_rocks *r)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(r->d->db, r->ro, r->meta);
	uint8_t from[NKV_KEY_MAX + 1] = { 0 };
	struct nkv_kvmap_cursor c;
	struct nkv_rocks_meta m;
	const char *k, *v;
	size_t kl, vl, flen = 0;
	int rc = 0, at;

	for (rocksdb_iter_seek_to_first(it); !rc && rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		k = rocksdb_iter_key(it, &kl);
		v = rocksdb_iter_value(it, &vl);
		if (kl >= 1 && kl <= NKV_KEY_MAX && !nkv_rocks_meta_dec(v, vl, &m))
			rc = nkv_rocks_recount_key(r, k, kl, &m, 1);
	}
	rocksdb_iter_destroy(it);
	for (at = nkv_kvmap_seek(&r->ix, &c, from, 0); !rc && at; at = nkv_kvmap_next(&c)) {
		if (nkv_rocks_ix_size((uintptr_t)c.val) < NKV_ROCKS_META_MIN)
			continue;
		rc = nkv_rocks_recount_gap(r, from, flen, c.key, c.klen);
		memcpy(from, c.key, c.klen);	/* the next gap: from the key after */
		from[c.klen] = 0;
		flen = c.klen + 1u;
	}
	return rc ? rc : nkv_rocks_recount_gap(r, from, flen, NULL, 0);
}

static int64_t nkv_rocks_wall_off(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - (int64_t)nkv_be_now_ms();
}

/* The volatile tier: a mem backend as large as the namespace. */
static struct nkv_be *nkv_rocks_tier(const struct nkv_be_conf *c, uint32_t mv, char *err,
				     size_t errlen)
{
	struct nkv_be_conf t = { .size = sizeof(t), .capacity = c->capacity, .max_value = mv,
				 .max_keys = c->max_keys };

	if (!t.capacity)
		t.capacity = NKV_ROCKS_DEF_CAPACITY;
	return nkv_be_type_mem.create(&t, err, errlen);
}

static int nkv_rocks_setup(struct nkv_be_rocks *r, const struct nkv_be_conf *c,
			   const struct nkv_rocks_conf *rc, char *err, size_t errlen)
{
	const char *name = c->ns_name ? c->ns_name : "gpukv";
	char meta[300];

	r->be.ops = &nkv_rocks_ops;
	r->be.csi = NKV_CSI_KV;
	r->be.max_value = c->max_value ? c->max_value : 1u << 20;
	r->be.max_keys = c->max_keys;
	r->be.capacity = c->capacity ? c->capacity : NKV_ROCKS_DEF_CAPACITY;
	r->be.store_opts = NKV_STORE_VENDOR_MASK;
	r->wall_off = nkv_rocks_wall_off();
	r->tier = nkv_rocks_tier(c, r->be.max_value, err, errlen);
	if (!r->tier)
		return -1;
	r->evict_want = rc->evict;
	r->be.evict = (uint8_t)rc->evict;
	if (rc->evict && !(r->lru = nkv_lru_create()))
		return -1;
	r->d = nkv_rocks_db_get(rc, err, errlen);
	if (!r->d)
		return -1;
	snprintf(meta, sizeof(meta), "%s:meta", name);
	r->cf = nkv_rocks_cf(r->d, name, err, errlen);
	r->meta = r->cf ? nkv_rocks_cf(r->d, meta, err, errlen) : NULL;
	if (!r->meta)
		return -1;
	snprintf(r->owner_name, sizeof(r->owner_name), "%s:owner", name);
	r->owner = nkv_rocks_owner_cf(r, 0);
	r->wo = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(r->wo, rc->sync);
	if (rc->sync && rc->sync_apart)
		r->wo_apart = rocksdb_writeoptions_create();
	r->sync_apart = rc->sync_apart;
	r->ro = rocksdb_readoptions_create();
	r->wb = rocksdb_writebatch_create();
	if (nkv_rocks_recount(r)) {
		snprintf(err, errlen, "rocksdb backend: %s: no memory for the key index",
			 rc->path);
		return -1;
	}
	r->next_sweep = nkv_be_now_ms() + NKV_ROCKS_SWEEP_MS;
	/* The database's own options are the first namespace's (shared). */
	snprintf(r->desc, sizeof(r->desc), "db=%s column_family=%s sync=%s sync_apart=%llu "
		 "compression=%s blob_min=%llu evict=%s readers=%u", rc->path, name,
		 rc->sync ? "always" : "none", (unsigned long long)rc->sync_apart, rc->comp_name,
		 (unsigned long long)rc->blob_min, rc->evict ? "lru" : "none", rc->readers);
	if (pthread_create(&r->thr, NULL, nkv_rocks_worker, r)) {
		snprintf(err, errlen, "rocksdb backend: cannot start its worker thread");
		return -1;
	}
	r->started = 1;
	r->rd = rc->readers ? nkv_rdpool_create(rc->readers, nkv_rocks_rd_run, r) : NULL;
	if (rc->readers && !r->rd) {
		snprintf(err, errlen, "rocksdb backend: cannot start its read threads");
		return -1;
	}
	return 0;
}

static struct nkv_be *nkv_rocks_new(const struct nkv_be_conf *c, char *err, size_t errlen)
{
	struct nkv_rocks_conf rc;
	struct nkv_be_rocks *r;
	pthread_condattr_t ca;

	if (nkv_rocks_parse(c, &rc, err, errlen)) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "rocksdb backend: %s", strerror(ENOMEM));
		errno = ENOMEM;
		return NULL;
	}
	snprintf(err, errlen, "rocksdb backend: %s", strerror(ENOMEM));
	nkv_kvmap_init(&r->ix);
	pthread_mutex_init(&r->qlock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->qcond, &ca);
	pthread_condattr_destroy(&ca);
	if (nkv_rocks_setup(r, c, &rc, err, errlen)) {
		nkv_rocks_destroy(&r->be);
		errno = EIO;
		return NULL;
	}
	return &r->be;
}

static const struct nkv_be_optdesc nkv_rocks_opts[] = {
	{ "db", "DIR", "the RocksDB database directory (created when missing; required);\n"
		       "each --ns-map NAME is a column family in it" },
	{ "sync", "always|none", "always (default): a Store or Delete completes once the\n"
				 "write-ahead log is synced, one sync per batch of commands;\n"
				 "none: no sync, faster, but a crash of the machine may lose\n"
				 "completed writes (never tears one)" },
	{ "sync-apart", "BYTES", "with --sync always, a batch of at least BYTES of values\n"
				 "is written unsynced and the log synced after it, before\n"
				 "its completions: a flush need not wait for its copy\n"
				 "(default 16777216; 0: every batch one synced write)" },
	{ "compression", "ALGO", "none (default: KV-cache blocks do not compress), snappy,\n"
				 "lz4 or zstd" },
	{ "blob-min", "BYTES", "values of at least BYTES go to blob files (BlobDB), not\n"
			       "the LSM tree (default 65536; 0: no blob files)" },
	{ "readers", "N", "threads that serve Retrieves of 64 KiB or more beside the\n"
			  "poll thread, a batch's large reads side by side (default 2,\n"
			  "at most 8; 0: on the poll thread)" },
	{ "evict", "lru", "when a Store would exceed --capacity, delete the least\n"
			  "recently stored or retrieved keys instead of answering 81h\n"
			  "(mem too); evictions are counted in the stats" },
	{ NULL, NULL, NULL },
};

const struct nkv_be_type nkv_be_type_rocksdb = {
	.name = "rocksdb",
	.summary = "persistent on the local disk (RocksDB), one column family per namespace",
	.opts = nkv_rocks_opts,
	.create = nkv_rocks_new,
	.check = nkv_rocks_check,
};
