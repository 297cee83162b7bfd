/* SPDX-License-Identifier: MIT */
/*
 * rpc_proc.h - the built nkv-target as a process with a control socket,
 * and a small JSON-RPC client for it (json-c): for the suites that test
 * the RPC server and nkv-admin rpc against a running target.
 */
#ifndef NKV_TEST_RPC_PROC_H
#define NKV_TEST_RPC_PROC_H

#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

struct rpc_proc {
	pid_t pid;
	int status;		/* its exit status once it exited, else -1 */
	char dir[64];		/* a fresh temporary directory, removed at stop */
	char vsock[128];	/* dir/v.sock: --socket */
	char rsock[128];	/* dir/r.sock: --rpc-socket */
	char uri[160];		/* vfio-user:dir/v.sock */
	char log[128];		/* dir/target.log: its stderr */
	uint16_t port;		/* rpc_proc_start_tcp: the port it listens on */
};

/* The directory of the built programs (BUILD/bin, beside the test's
 * BUILD/tests), and the source tree (the first directory up from the
 * working directory that holds rel, e.g. "share/systemd"): 0 or -ENOENT. */
int rpc_proc_bindir(char *path, size_t len);
int rpc_proc_srcdir(const char *rel, char *path, size_t len);

/* BUILD/bin/nkv-target --socket dir/v.sock --rpc-socket dir/r.sock
 * --capacity 64M --log-level warn, then extra (NULL-terminated, at most
 * 16); waits up to 5 s for both sockets. 0, or a negative errno (the
 * target exited: see its log). */
int rpc_proc_start(struct rpc_proc *t, const char *const *extra);
/* The same with --listen tcp:127.0.0.1:0 instead of --socket (no
 * vfio-user listener) and --log-level info; t->port from its log. */
int rpc_proc_start_tcp(struct rpc_proc *t, const char *const *extra);
/* SIGTERM by its PID, up to 5 s, then SIGKILL; the directory removed. */
void rpc_proc_stop(struct rpc_proc *t);
/* 1 while the target runs; 0 once it exited (t->status: its exit status,
 * 128 + the signal that killed it). */
int rpc_proc_alive(struct rpc_proc *t);

/* 1 when the target's log (its stderr) holds text, within 2 s. */
int rpc_proc_log_has(const struct rpc_proc *t, const char *text);

/* A connection to its control socket, or a negative errno. */
int rpc_connect(const char *path);
/* All of text, or a negative errno. */
int rpc_send(int fd, const char *text);
/* One response line within timeout_ms: parsed, or NULL when the
 * connection closed or nothing came. */
struct json_object *rpc_read(int fd, int timeout_ms);
/* One request ({"jsonrpc":"2.0","id":1,"method":M,"params":P}; P NULL:
 * none) on a connection of its own; the response or NULL. */
struct json_object *rpc_call(const struct rpc_proc *t, const char *method, const char *params);
/* The response's error code, 0 for a result. */
int rpc_code(struct json_object *resp);
/* The error's message, or "". */
const char *rpc_msg(struct json_object *resp);
/* The response's result (borrowed), or NULL. */
struct json_object *rpc_result(struct json_object *resp);
/* An integer member of o, or -1. */
long long rpc_int(struct json_object *o, const char *key);

#endif /* NKV_TEST_RPC_PROC_H */
