/* SPDX-License-Identifier: MIT */
/*
 * rpc.h - nkv-target's control socket: JSON-RPC 2.0 over a Unix stream
 * socket (docs/rpc.md), parsed with json-c.
 *
 *   registry.c  the method table: nkv_rpc_register, params checked by
 *               table (unknown keys refused), rpc_list, one request run
 *   server.c    the socket: listening, connections, framing, limits, the
 *               server thread
 *   namespace.c, connection.c, stats.c, settings.c: nkv-target's methods
 *               (target.h), each file registering its own
 *
 * A method is a name, a table of its params and a handler; a later
 * feature adds its methods with nkv_rpc_register and never touches the
 * server. Handlers run on the server's one thread, one at a time: what
 * they touch of the target goes through that part's own thread-safe
 * calls (the vfio-user server's control side, a backend's counters),
 * never a controller directly, so no poll thread waits for the RPC.
 */
#ifndef NKV_TGT_RPC_H
#define NKV_TGT_RPC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

/* JSON-RPC 2.0's error codes, and nkv-target's own (-32000..-32099). */
#define NKV_RPC_PARSE_ERROR -32700	/* not JSON: the connection is closed */
#define NKV_RPC_INVALID_REQUEST -32600	/* not a request object, or too large */
#define NKV_RPC_METHOD_NOT_FOUND -32601
#define NKV_RPC_INVALID_PARAMS -32602	/* the message names the param */
#define NKV_RPC_INTERNAL_ERROR -32603	/* no memory */
#define NKV_RPC_ERR_BUSY -32000		/* too many connections */
#define NKV_RPC_ERR_UNSUPPORTED -32001	/* the target cannot do it (yet) */
#define NKV_RPC_ERR_NOT_FOUND -32002	/* no such namespace or connection */
#define NKV_RPC_ERR_BACKEND -32003	/* a backend could not be created */

/* One param of a method: its key, its JSON type (json_type_int for
 * integers), whether it must be given, and a line for rpc_list. A row
 * named "*" takes every key the others do not name, of its type
 * (namespace_add: a backend's own options); without one, such a key is
 * refused with -32602. */
struct nkv_rpc_param {
	const char *name;	/* NULL ends the table */
	json_type type;
	int required;
	const char *doc;
};

/* One call as a handler sees it. */
struct nkv_rpc_call {
	struct json_object *params;	/* an object, its keys checked against
					 * the method's table; never NULL */
	void *ctx;			/* nkv_rpc_server_opts.ctx */
	struct nkv_rpc_server *server;	/* the one running it (its counters) */
	struct json_object *result;	/* the handler's, on success (NULL: null) */
	int code;			/* 0, or the error the handler set */
	char msg[256];
};

typedef void (*nkv_rpc_handler)(struct nkv_rpc_call *call);

/*
 * Add method name (kept, not copied: a string literal) with its params
 * (NULL: none) and a line of help. 0; -EEXIST when name is taken;
 * -ENOSPC past NKV_RPC_MAX_METHODS; -EINVAL. Any thread, before or while
 * the server runs.
 */
#define NKV_RPC_MAX_METHODS 64
int nkv_rpc_register(const char *name, const char *summary,
		     const struct nkv_rpc_param *params, nkv_rpc_handler fn);

/* Fail call with code and a message (printf-style). */
void nkv_rpc_error(struct nkv_rpc_call *call, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* An integer param in [min, max] into *out: 1 when given, 0 when absent,
 * -1 after failing call with -32602 naming it. */
int nkv_rpc_param_u64(struct nkv_rpc_call *call, const char *name, uint64_t min,
		      uint64_t max, uint64_t *out);

/*
 * Run one parsed request (req: whatever the client sent) and return the
 * response object to send, or NULL for a notification (a request without
 * an id), which gets none.
 */
struct nkv_rpc_server;
struct json_object *nkv_rpc_run(struct json_object *req, void *ctx, struct nkv_rpc_server *server);
/* The error response for id (NULL: null). */
struct json_object *nkv_rpc_error_response(struct json_object *id, int code, const char *msg);

/* Default limits of the server (nkv_rpc_server_opts, 0 takes them). */
#define NKV_RPC_MAX_REQUEST (1u << 20)	/* bytes of one request */
#define NKV_RPC_MAX_CONNS 64
#define NKV_RPC_IDLE_MS 60000		/* no byte for this long: closed */
#define NKV_RPC_REQUEST_MS 5000		/* a request whole this soon after its first byte */

struct nkv_rpc_server_opts {
	size_t size;		/* sizeof(struct nkv_rpc_server_opts) */
	const char *path;	/* the socket; PATH.lock as nkv-target's --socket */
	uint32_t mode;		/* permission bits; 0: 0600 */
	uint32_t max_request;	/* 0: NKV_RPC_MAX_REQUEST */
	uint32_t max_conns;	/* 0: NKV_RPC_MAX_CONNS */
	uint32_t idle_ms;	/* 0: NKV_RPC_IDLE_MS */
	uint32_t request_ms;	/* 0: NKV_RPC_REQUEST_MS */
	void *ctx;		/* handed to every handler */
	/* The path's lock, taken already by nkv_rpc_lock_take (the server's
	 * from the call on: released when it stops or fails to start);
	 * NULL: nkv_rpc_server_start takes it. */
	struct nkv_rpc_lock *lock;
};

/*
 * One target per path: PATH.lock (core/pidlock.h: flock, the holder's PID
 * in it), the rule nkv-target's --socket follows, taken before anything
 * costly starts. 0; -EADDRINUSE when a live process holds it (*holder:
 * its PID, 0 when unknown); -ENAMETOOLONG; or the lock file's errno.
 */
struct nkv_rpc_lock;
int nkv_rpc_lock_take(const char *path, struct nkv_rpc_lock **out, pid_t *holder);
/* Remove PATH.lock and drop it (NULL: nothing). */
void nkv_rpc_lock_release(struct nkv_rpc_lock *l);

struct nkv_rpc_server;

/*
 * Take PATH.lock unless opts->lock (nkv_rpc_lock_take's errors, *holder),
 * replace a socket a dead target left (a non-socket there: -ENOTSOCK),
 * bind, listen, start the server thread. 0 or a negative errno.
 */
int nkv_rpc_server_start(const struct nkv_rpc_server_opts *opts, struct nkv_rpc_server **out,
			 pid_t *holder);
/* Close every connection, remove the socket and its lock, free. */
void nkv_rpc_server_stop(struct nkv_rpc_server *s);

struct nkv_rpc_server_stats {
	uint32_t conns;		/* open now */
	uint64_t accepted;
	uint64_t refused;	/* over max_conns */
	uint64_t requests;	/* run (notifications included) */
	uint64_t errors;	/* error responses sent */
	uint64_t dropped;	/* closed by the server: bad JSON, too large, too slow, idle */
};
/* Any thread. */
void nkv_rpc_server_stats(struct nkv_rpc_server *s, struct nkv_rpc_server_stats *st);

/*
 * Raise RLIMIT_NOFILE's soft limit to need descriptors, capped by the hard
 * limit (never lowered). Returns the soft limit now.
 */
uint64_t nkv_rpc_raise_nofile(uint64_t need);

#endif /* NKV_TGT_RPC_H */
