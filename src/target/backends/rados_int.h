/* SPDX-License-Identifier: MIT */
/*
 * rados_int.h - what the RADOS backend's files share: rados.c (the op
 * path, the type and its create), rados_list.c (List), rados_conn.c
 * (shared cluster connections) and rados_health.c (whether a
 * connection's cluster answers). Not for use outside them; rados.h is
 * the public header.
 */
#ifndef NKV_TGT_BACKENDS_RADOS_INT_H
#define NKV_TGT_BACKENDS_RADOS_INT_H

#include <pthread.h>
#include <rados/librados.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "rados.h"

#define NKV_RADOS_CURSORS 8	/* remembered List positions per namespace */
#define NKV_RADOS_DEF_POOL "kvpool"
#define NKV_RADOS_DEF_VOLATILE (1ull << 30)	/* --volatile-capacity */

/*
 * Whether a connection's cluster answers (rados_health.c). Ops note their
 * results in the atomics; the connection's health thread reads them once
 * a second and owns the rest.
 */
struct nkv_rados_health {
	uint64_t ok, bad;	/* __atomic: answered / unanswered ops since
				 * the health thread last looked */
	int last_err;		/* __atomic: the last unanswered op's errno */
	uint64_t last_ok_ms;	/* __atomic: monotonic ms of the last answer */
	int64_t last_ok_wall_ms; /* __atomic: the same on the wall clock */
	/* The health thread's own. */
	pthread_t thr;
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* on CLOCK_MONOTONIC: wakes it to stop */
	bool started, stop;
	bool lost;		/* cluster_lost logged, cluster_back not yet */
	uint64_t lost_since_ms;	/* last_ok_ms when it was lost */
	uint64_t lost_ops;	/* unanswered ops since then */
	uint64_t lost_events;	/* __atomic: cluster_lost lines logged (metrics) */
	rados_ioctx_t probe_io;	/* NULL: no probe (its pool did not open) */
	rados_completion_t probe;	/* the probe in flight, or NULL */
	uint64_t probe_size;
	time_t probe_mtime;
	char name[160];		/* "client.admin@/etc/ceph/ceph.conf" */
};

struct nkv_rados_conn {
	struct nkv_rados_conn *next;
	char *id;		/* conf, client, keyring and timeouts */
	rados_t cluster;
	int refs;
	struct nkv_rados_health health;
};

struct nkv_rados_req;

struct nkv_be_rados {
	struct nkv_be be;	/* first: the core casts */
	struct nkv_rados_conn *conn;
	rados_ioctx_t io;
	char *ns;
	uint32_t op_timeout_s;
	uint32_t max_inflight;
	char desc[512];		/* its settings, for describe() */

	/* Backend-private lock: in-flight count, overflow queue, list queue. */
	pthread_mutex_t lock;
	pthread_cond_t idle;
	uint32_t inflight;	/* librados ops issued, not yet done() */
	uint32_t queued;	/* everything submitted, not yet done() */
	struct nkv_rados_req *wait_head, *wait_tail;	/* over max_inflight */

	pthread_t lister;
	pthread_cond_t list_cond;
	struct nkv_rados_req *list_head, *list_tail;
	bool stopping;

	/* List resume points; touched by the lister thread only. */
	struct {
		uint8_t klen;
		uint8_t key[NKV_KEY_MAX];
		rados_object_list_cursor cur;
		uint64_t used;
	} cursors[NKV_RADOS_CURSORS];
	uint64_t cursor_clock;

	int64_t bytes_est;	/* __atomic */
	int64_t keys_est;	/* __atomic */

	/* TTL'd and ephemeral values: a mem backend of their own (mem.h's
	 * volatile-tier API), never written to RADOS. */
	struct nkv_be *tier;
};

/* What a request does on RADOS. */
enum nkv_rados_kind {
	NKV_RADOS_PLAIN,	/* the op itself (Store, Retrieve, Delete, Exist, List) */
	NKV_RADOS_EVICT,	/* a volatile Store: remove (or, with MUST_NOT_EXIST,
				 * stat) the durable object, then store in the tier */
	NKV_RADOS_TOUCH,	/* a touch of a key not in the tier: stat it */
};

struct nkv_rados_req {
	struct nkv_rados_req *next;
	struct nkv_be_rados *rb;
	struct nkv_be_op *op;
	enum nkv_rados_kind kind;
	uint64_t t_submit_ms;	/* nkv_rados_now_ms() at submit: its deadlines */
	uint32_t opts;		/* the Store options RADOS enforces (op->options
				 * less MUST_EXIST when the key is volatile) */
	bool drop_tier;		/* a durable Store over a volatile key: remove
				 * it from the tier once RADOS has the value */
	rados_completion_t comp;
	rados_write_op_t wop;
	rados_read_op_t rop;
	char oid[2 * NKV_KEY_MAX + 1];
	char owner[17];		/* a Store's owner xattr, alive until it completes */
	char *bounce;		/* the value, when the client's buffer is not direct */
	size_t bytes_read;
	int read_rv;
	uint64_t size;
	time_t mtime;
	int stat_rv;
};

/* A backend's options: its struct nkv_be_conf, parsed (the strings stay
 * the conf's). */
struct nkv_rados_opts {
	const char *conf;	/* ceph.conf path; NULL: librados' default search */
	const char *client;	/* "nkv" or "client.nkv"; NULL: client.admin */
	const char *keyring;	/* NULL: from the conf (none with auth none) */
	const char *pool;	/* NULL: "kvpool" */
	const char *rados_ns;	/* RADOS namespace; NULL or "": the default one */
	uint32_t op_timeout_s;	/* rados_osd_op_timeout; 0: 5 s */
	uint32_t mount_timeout_s; /* client_mount_timeout; 0: 10 s */
	uint32_t max_value;	/* largest value; 0: 1 MiB */
	uint32_t max_inflight;	/* librados ops in flight; 0: 128 (more queue) */
	uint64_t volatile_cap;	/* the volatile tier's bytes; 0: 1 GiB */
};

/* Monotonic milliseconds: the op deadlines' clock (not nkv_be_now_ms(),
 * which a test may set for TTLs). */
uint64_t nkv_rados_now_ms(void);
/* err (when not NULL) gets the printf-formatted reason. */
void nkv_rados_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The NVMe status of a librados return value (0 for rv >= 0). */
uint16_t nkv_rados_status(int rv);
/* Free r and complete its op; was_issued: r held an in-flight slot. */
void nkv_rados_finish(struct nkv_rados_req *r, bool was_issued);

/* Take one removed durable object off the used estimates. */
void nkv_rados_forget_one(struct nkv_be_rados *rb);

/* rados_range.c: backend.h read_range (Exec's ranges of a value). */
int nkv_rados_read_range(struct nkv_be *be, const uint8_t *key, uint32_t klen, uint64_t off,
			 uint64_t len, void *dst, uint64_t *got, uint64_t *size,
			 uint64_t *version);

/* rados_tier.c: the volatile tier. Open it (a mem backend sized by
 * --volatile-capacity): 0, or -ENOMEM with a reason in err. */
int nkv_rados_tier_open(struct nkv_be_rados *rb, const struct nkv_rados_opts *o,
			char *err, size_t errlen);
/* Route r's op: true when the tier served it (op->status set; complete
 * it), false when it goes to RADOS (r->kind, opts, drop_tier set). */
bool nkv_rados_tier_serve(struct nkv_be_rados *rb, struct nkv_rados_req *r);
/* Start the RADOS step of an NKV_RADOS_EVICT or _TOUCH request. */
int nkv_rados_prep_tier(struct nkv_rados_req *r);
/* Its completion (librados' finisher thread): op->status from rv. */
void nkv_rados_tier_complete(struct nkv_rados_req *r, int rv);

/* rados_list.c: the backend's List worker thread (arg: the backend). */
void *nkv_rados_lister(void *arg);

/* rados_health.c: note one RADOS op's result (any thread). */
void nkv_rados_health_note(struct nkv_rados_health *h, int rv);
/* Start c's health thread, probing pool when it opens: 0 or a negative
 * errno. Stop it (waits for its probe, at most
 * the op timeout). */
int nkv_rados_health_start(struct nkv_rados_conn *c, const char *pool, const char *conf,
			   const char *client);
void nkv_rados_health_stop(struct nkv_rados_conn *c);

/* rados_conn.c: the connection shared by every backend created with the
 * same conf, client, keyring and timeouts (a reference taken), or NULL
 * with a reason in err; and giving a reference back. */
struct nkv_rados_conn *nkv_rados_conn_get(const struct nkv_rados_opts *o,
					  uint32_t opt, uint32_t mnt,
					  char *err, size_t errlen);
void nkv_rados_conn_put(struct nkv_rados_conn *c);

#endif /* NKV_TGT_BACKENDS_RADOS_INT_H */
