/* SPDX-License-Identifier: MIT */
/*
 * backend.h - the interface between nkv-target's controller core and the
 * stores behind its namespaces (mem, rados, ...).
 *
 * One backend instance serves one namespace. The core hands it operations
 * whose keys, options and sizes are already validated (the core answers
 * everything else itself); the backend completes each one exactly once by
 * calling op->done(op), from any thread and at any later time. The core
 * moves the completion to its poll thread through a hand-off queue, so a
 * backend may keep any number of operations in flight and never touches
 * a queue pair.
 *
 * A backend never touches the client's memory itself: it moves data with
 * the helpers below, which the core implements. They may be called from
 * any thread (a library's own included) until done() is called.
 */
#ifndef NKV_TGT_BACKEND_H
#define NKV_TGT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "nkv_wire.h"

struct nkv_be;
struct nkv_tenants;

/* One operation. Filled by the core; the backend writes status and dw0. */
struct nkv_be_op {
	uint8_t opc;		/* NKV_KV_* on a KV namespace, NKV_NVM_* on an NVM one */
	uint8_t klen;		/* 1..255 (0 only for List: from the beginning) */
	uint8_t key[NKV_KEY_MAX];	/* unused bytes are zero; the same key
					 * whether it came inline or in head form */
	uint32_t options;	/* Store: CDW11 bits as sent (NKV_STORE_*, the
				 * vendor ones only where the backend's
				 * store_opts has them); 0 for the others */
	uint32_t ttl_s;		/* Store with NKV_STORE_TTL: CDW12, 1.. seconds */
	/*
	 * Bytes of data: Store = the value (1..max_value; 0 with
	 * NKV_STORE_TOUCH); Retrieve = the host buffer (fill at most that,
	 * report the full size in dw0; 0 = a size query, nothing moved);
	 * List = the host buffer for the payload; NVM Read/Write = the
	 * blocks.
	 */
	uint64_t len;
	uint64_t slba;		/* NVM Read/Write only */
	/* Exec forwarded (struct nkv_be exec_fwd): len is the output cap;
	 * the output goes out with nkv_be_copy_out (or nkv_be_direct) from
	 * byte 0, dw0 its true length. The input is the core's until done(). */
	uint32_t exec_op_id;
	uint32_t exec_ilen;
	const uint8_t *exec_in;

	/* Results, set by the backend before done(). */
	uint16_t status;	/* NKV_STATUS(sct, sc); 0 = success */
	uint32_t dw0;		/* Retrieve: full stored value size (List: the core's) */

	void (*done)(struct nkv_be_op *op);
	void *ctx;		/* the core's */
	/* The core's, for its latency histograms (core/metrics.h): when the
	 * command was fetched and submitted, CLOCK_MONOTONIC ns; 0 while
	 * metrics are off. A backend never reads them. */
	uint64_t t_fetch_ns;
	uint64_t t_submit_ns;
	/* The tenant whose command this is (src/target/tenant/tenant.h: a
	 * peer uid or a host NQN as a stable id; 0: none), set by the core
	 * from the client's identity. A Store that creates or replaces its
	 * key makes it the key's owner (nkv_be_owner_* below). */
	uint64_t owner;
};

/*
 * The op's data (Store value, NVM Write blocks), first len bytes, into
 * dst. 0, or an NVMe status for the backend to answer with: Data Transfer
 * Error when a page of the client's vanished (the core then drops the
 * client).
 */
uint16_t nkv_be_copy_in(struct nkv_be_op *op, void *dst, uint64_t len);

/* len bytes of src into the start of the op's buffer (Retrieve value,
 * NVM Read blocks; len <= op->len), recorded as the bytes it produced.
 * 0, or an NVMe status as nkv_be_copy_in(). */
uint16_t nkv_be_copy_out(struct nkv_be_op *op, const void *src, uint64_t len);

/*
 * Instead of nkv_be_copy_out (a Retrieve's value, len <= op->len): let
 * the transport send len bytes straight from src, with no copy, where it
 * sends from memory of its own choosing (NVMe/TCP's C2HData). 0: lent,
 * recorded as the bytes produced; release(ctx) follows once the bytes
 * are out or will never go (any thread, possibly after done()), and src
 * must not change or go away until then (lend.h keeps a removed entry).
 * -EOPNOTSUPP: the transport writes into the client's memory
 * (vfio-user) or takes no loan: copy as usual.
 */
int nkv_be_lend(struct nkv_be_op *op, const void *src, uint64_t len,
		void (*release)(void *ctx), void *ctx);
/* Whether nkv_be_lend() would take a loan for op (a backend asks before
 * it prepares one). */
int nkv_be_lendable(const struct nkv_be_op *op);

/*
 * Append one whole List entry for key (klen 1..255). 0, 1 when the entry
 * does not fit (the List ends there), or -EFAULT when a page of the
 * client's vanished (the List ends; the core answers Data Transfer
 * Error). The core writes the payload's header and sets DW0 to the
 * count of keys when the op completes.
 */
int nkv_be_list_add(struct nkv_be_op *op, const uint8_t *key, uint32_t klen);

/*
 * The whole buffer as one pointer, for a library that reads or writes it
 * in threads of its own (no recovery point there): only when it is one
 * contiguous segment whose pages cannot vanish (sealed shmem); else NULL
 * (copy through a buffer of the backend's own). Data a backend writes
 * there it reports with nkv_be_produced().
 */
void *nkv_be_direct(struct nkv_be_op *op);
void nkv_be_produced(struct nkv_be_op *op, uint64_t n);

/*
 * Inside submit: whether the op may be left for later, for be->ops->poll
 * to start once the poll thread has submitted the rest of its burst (a
 * burst's ops then reach the backend's own thread with one wake-up, not
 * one each). 1: poll will be called on this thread before the burst's
 * completions are posted; 0: no burst (a capsule, a direct caller, a
 * full list): serve op as usual.
 */
int nkv_be_poll_later(struct nkv_be *be);

/*
 * Inside submit: op's completion comes soon, from a thread of the
 * backend's own doing the work in this process (the rocksdb worker's
 * write), and no other thread of the backend needs a core for it. The
 * poll thread then stays awake (spinning, yielding) until it comes,
 * instead of sleeping after a few microseconds and being woken, which on
 * a VM costs tens of microseconds a batch (poller.h). Not for a backend
 * that waits on other processes (RADOS: its daemons need the cores) or
 * runs the op on a pool of threads. Outside a controller's submit:
 * nothing.
 */
void nkv_be_wait_near(struct nkv_be_op *op);

/*
 * Around a run of done() calls on a thread of the backend's own (a
 * batch's completions): the poll threads they go to are woken once, at
 * the release, not at each done(). Woken at the first, a poll thread on
 * the same core takes the core, posts one completion, and is woken again
 * for the next. Holds nest; release on the thread that held.
 */
void nkv_be_done_hold(void);
void nkv_be_done_release(void);

/* One figure of a backend's own for the metrics endpoint (docs/metrics.md):
 * shown as nkv_backend_NAME{nsid,name,backend}. */
struct nkv_be_metric {
	const char *name;	/* "rados_cluster_up"; a counter's ends in _total */
	const char *help;	/* one sentence */
	int counter;		/* 1: a counter, 0: a gauge */
	double value;
};

/* What the control socket's namespace_set changes (docs/rpc.md). */
struct nkv_be_limits {
	uint64_t capacity;	/* bytes; 0: unchanged */
	uint32_t max_keys;	/* 0: no limit (when set_max_keys) */
	int set_max_keys;	/* 1: max_keys is to be set */
	int evict;		/* -1: unchanged; 0: none (81h when full); 1: lru */
};

struct nkv_be_ops {
	const char *name;
	/* Start op; complete it later through op->done(). Returns 0, or a
	 * negative errno when it cannot even be queued (then done() is not
	 * called and the core fails the command with an internal error). */
	int (*submit)(struct nkv_be *be, struct nkv_be_op *op);
	/* Bytes and keys stored now (Identify NUSE, capacity checks). */
	uint64_t (*bytes_used)(struct nkv_be *be);
	uint64_t (*keys_used)(struct nkv_be *be);
	/* NULL, or keys deleted so far to make room (--evict lru). */
	uint64_t (*evictions)(struct nkv_be *be);
	/* NULL, or the backend's own settings as it runs with them, defaults
	 * filled in, as "name=value" words for nkv-target's start-up line
	 * ("pool=kvpool op_timeout_s=5"); the core's limits (capacity, max
	 * value, ...) are in struct nkv_be and not repeated. Always
	 * NUL-terminated, cut to len. */
	void (*describe)(struct nkv_be *be, char *buf, size_t len);
	/* NULL, or up to max of the backend's health figures into out (its
	 * store lost and back, stalls): how many. Any thread, any time. */
	unsigned (*metrics)(struct nkv_be *be, struct nkv_be_metric *out, unsigned max);
	/* NULL, or told that the core attached it as a namespace (be->tenants
	 * set, before its first op): a backend that persists owners loads
	 * them (rocksdb). */
	void (*attached)(struct nkv_be *be);
	/* Wait for every submitted op to complete, then free everything. */
	void (*destroy)(struct nkv_be *be);
	/* NULL, or start what submit left for later (nkv_be_poll_later): the
	 * poll thread calls it once it has submitted its burst, on itself. */
	void (*poll)(struct nkv_be *be);
	/* NULL, or change limits while serving: 0, or a negative errno with
	 * a one-line reason in err (nothing changed then). Stores submitted
	 * after it returns see the new limits; nothing stored is removed by
	 * it: a namespace now over its capacity answers Stores 81h, or with
	 * lru evicts as each Store needs room, until it fits. be->capacity
	 * and be->max_keys change with it (the next Identify shows them).
	 * The RPC thread; ops may be in flight on any other. */
	int (*set_limits)(struct nkv_be *be, const struct nkv_be_limits *l, char *err,
			  size_t errlen);
	/*
	 * NULL, or a part of a stored value, for an Exec module that reads a
	 * few ranges of a large one (exec/pager.c): where the store serves
	 * ranges without reading the whole value (RADOS). Up to len bytes
	 * at off into dst; *got: how many came; *size: the value's whole
	 * length; *version: the value's version, which a nonzero *version
	 * on entry must still be. Blocks (an Exec worker, never a poll
	 * thread). 0; an NVMe status (87h: no such key); -ESTALE: the value
	 * changed since *version (or went); -EOPNOTSUPP: this key is not
	 * served in ranges (rados' volatile tier): read it whole.
	 */
	int (*read_range)(struct nkv_be *be, const uint8_t *key, uint32_t klen, uint64_t off,
			  uint64_t len, void *dst, uint64_t *got, uint64_t *size,
			  uint64_t *version);
};

/* Every backend embeds this first; the core reads limits from it. */
struct nkv_be {
	const struct nkv_be_ops *ops;
	uint8_t csi;		/* NKV_CSI_KV or NKV_CSI_NVM */
	uint32_t max_value;	/* KV: largest value accepted (Identify MVL) */
	uint32_t max_keys;	/* KV: 0 = no limit reported */
	uint64_t capacity;	/* bytes (KV) or blocks (NVM) */
	uint32_t block_size;	/* NVM only */
	uint32_t store_opts;	/* KV: NKV_STORE_VENDOR_MASK bits honoured;
				 * the core answers Invalid Field for others */
	uint8_t read_only;	/* KV: the core answers Store and Delete with
				 * SCT 1h / SC 82h (set from nkv_be_conf) */
	uint8_t evict;		/* KV: 1 while --evict lru is in force (what
				 * namespace_list shows; the backend's own) */
	/* KV: 1 where the store runs Exec itself (nvmf: the remote's Exec,
	 * its allowlist deciding; set from the remote's Identify): the core
	 * submits an Exec with no allowlist row of this target's as an op
	 * (opc NKV_KV_EXEC, exec_* below), not to its Exec room. */
	uint8_t exec_fwd;
	/* KV: the longest a command may wait here before the backend
	 * completes it with a status of its own (88h when its store does not
	 * answer in time), in ms; 0: no such bound (nothing to wait for, or
	 * no timeout). Advertised in the KV Identify Namespace vendor bytes
	 * (nkv_kv_vs.cmd_timeout_ms), so a client waits longer than this and
	 * gets the status, not a timeout of its own. */
	uint32_t cmd_timeout_ms;
	/* Set by the core when it attaches the backend as namespace
	 * tenant_nsid: where owners and their quotas are kept (NULL: a
	 * backend driven on its own, and nkv_be_owner_* do nothing). */
	struct nkv_tenants *tenants;
	uint32_t tenant_nsid;
};

/*
 * Owners in a shared namespace (issue 48; tenant/owners.c). A KV backend
 * reports each key's owner and the bytes it charges the key against
 * capacity, under its own lock, so quotas and the share eviction goes by
 * count what capacity counts. Any thread; they take a lock of their own
 * (never a backend's).
 */
/* Before a Store of key by owner that would charge cost: 0, or Capacity
 * Exceeded (81h) when it would take owner past its quota (what owner
 * owns of key now is given back first). */
uint16_t nkv_be_owner_admit(struct nkv_be *be, uint64_t owner, const uint8_t *key, uint8_t klen,
			    uint64_t cost);
/* Has owner a quota here? (A backend that counts a Store only once it
 * is written writes that owner's earlier Stores out first.) */
int nkv_be_owner_limited(struct nkv_be *be, uint64_t owner);
/* key is stored now, owned by owner (a replace: the old owner loses it),
 * charged cost, with a TTL or not (the metering tier). */
void nkv_be_owner_stored(struct nkv_be *be, uint64_t owner, const uint8_t *key, uint8_t klen,
			 uint64_t cost, int ttl);
/* key is gone (deleted, expired, replaced; evicted: 1 when to make room). */
void nkv_be_owner_gone(struct nkv_be *be, const uint8_t *key, uint8_t klen, int evicted);
/* key's TTL came or went (a Touch). */
void nkv_be_owner_ttl(struct nkv_be *be, const uint8_t *key, uint8_t klen, int ttl);
/* key's owner into *owner: 1, or 0 when unknown. */
int nkv_be_owner_of(struct nkv_be *be, const uint8_t *key, uint8_t klen, uint64_t *owner);
/* The owner furthest over its share of capacity (its quota's bytes, else
 * an equal part among owners): 1 and *owner, or 0 when none is over. */
int nkv_be_owner_victim(struct nkv_be *be, uint64_t *owner);

/*
 * The clock TTLs run on: milliseconds of CLOCK_MONOTONIC, or what a test
 * set with nkv_be_clock_set() (NULL: back to the real clock). Any thread.
 */
uint64_t nkv_be_now_ms(void);
void nkv_be_clock_set(uint64_t (*now_ms)(void));

/* Levels of the target's log (the same as the vfio-user server's). */
enum nkv_be_log_level {
	NKV_BE_LOG_ERROR = 0,
	NKV_BE_LOG_WARN = 1,
	NKV_BE_LOG_INFO = 2,
	NKV_BE_LOG_DEBUG = 3,
};

/*
 * A backend's line for the target's log: "event=NAME key=value ...",
 * without a newline. Lines above the level nkv_be_log_set() chose are
 * dropped. Any thread; a backend logs events (its store lost and back),
 * never one line per op.
 */
void nkv_be_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Where backends' lines go: fn(ctx, level, line), one call at a time;
 * fn NULL: stderr as "ts=SECONDS.MICROS level=LEVEL LINE", like the
 * server's lines. Default: NKV_BE_LOG_WARN to stderr. Process-wide. */
typedef void (*nkv_be_log_fn)(void *ctx, int level, const char *line);
void nkv_be_log_set(int level, nkv_be_log_fn fn, void *ctx);
/* The level nkv_be_log_set() chose. */
int nkv_be_log_get_level(void);

/* A key's 32-bit hash, FNV-1a (keys may be anything, content hashes or
 * counters alike): the one every table kept by key uses (the LRU, the
 * owner map, rocksdb's write filter). */
static inline uint32_t nkv_be_key_hash(const uint8_t *key, uint32_t klen)
{
	uint32_t h = 2166136261u;

	while (klen--)
		h = (h ^ *key++) * 16777619u;
	return h;
}

static inline int nkv_be_submit(struct nkv_be *be, struct nkv_be_op *op)
{
	return be->ops->submit(be, op);
}

#endif /* NKV_TGT_BACKEND_H */
