/* SPDX-License-Identifier: MIT */
/*
 * server.h - nkv-target's NVMe/TCP transport (NVMe/TCP transport 1.0):
 * TCP listeners whose hosts connect to the subsystem (or to the discovery
 * subsystem) through Fabrics Connect, with the controller core serving
 * them through the transport-neutral request (target/core/req.h).
 *
 * No authentication and no TLS: whoever reaches a listening port can use
 * every namespace (docs/tcp.md says how to keep it to the hosts meant).
 */
#ifndef NKV_TGT_TCP_SERVER_H
#define NKV_TGT_TCP_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "target/core/ctrl.h"

#define NKV_TCP_DEF_ADDR "127.0.0.1"

struct nkv_tcp_server_opts {
	size_t size;			/* sizeof(struct nkv_tcp_server_opts) */
	struct nkv_subsys *ss;		/* shared; the caller owns it */
	struct nkv_tgt_ctrl_opts ctrl;	/* per controller (CNTLIDs are dynamic) */
	int log_level;			/* NKV_VFU_LOG_* levels: 0 error .. 3 debug */
	FILE *log;			/* NULL: stderr */
	/* Budgets per host (its IP address): connections open (0: 64; more
	 * are closed at once, logged), and per connection the bytes of data
	 * buffers of its commands in flight (0: 256 MiB; a command past it
	 * completes with Command Interrupted, which a host retries). */
	uint32_t max_conns_per_host;
	uint64_t max_buf_per_conn;
	/* A connection that sends no ICReq this soon after connecting is
	 * closed (0: 10000 ms). */
	uint32_t ic_ms;
};

struct nkv_tcp_server;

/* Create the server (no listener yet). 0 or a negative errno. */
int nkv_tcp_server_create(const struct nkv_tcp_server_opts *o, struct nkv_tcp_server **out);
/*
 * Listen on addr (IPv4 or IPv6 literal; NULL: 127.0.0.1) and port (0: an
 * ephemeral one); *bound gets the port bound. Each listener is a port of
 * the subsystem on the Discovery log page. Before start only. 0 or a
 * negative errno.
 */
int nkv_tcp_server_listen(struct nkv_tcp_server *s, const char *addr, uint16_t port,
			  uint16_t *bound);
/* Start the poll thread: it serves every listener, connection and
 * controller (one thread, so every call on a controller comes from it). */
int nkv_tcp_server_start(struct nkv_tcp_server *s);
/* Stop the thread, end every association, close everything, free. */
void nkv_tcp_server_stop(struct nkv_tcp_server *s);

/*
 * An asynchronous event for every controller of the server: from any
 * thread; the poll thread completes one held AER of each controller with
 * dw0, or keeps it for the controller's next AER (nkv_tgt_ctrl_aer_event).
 * 0, or -EAGAIN while the previous event is still on its way. Namespace
 * changes need no call: the server listens to its subsystem (ns.h) from
 * start to stop and each controller sends Namespace Attribute Changed
 * (00040002h) as its AEC and log page 04h reads allow.
 */
int nkv_tcp_server_aer(struct nkv_tcp_server *s, uint32_t dw0);

struct nkv_tcp_server_stats {
	uint32_t conns;			/* open now */
	uint32_t assocs;		/* controllers alive now */
	uint64_t accepted;
	uint64_t refused;		/* over a host's connection budget */
	uint64_t terminated;		/* ended by a C2HTermReq */
	uint64_t kato_expired;		/* associations ended by Keep Alive */
	uint64_t commands;
};
void nkv_tcp_server_stats(struct nkv_tcp_server *s, struct nkv_tcp_server_stats *st);

/* The log level from now on (log_level_set), any thread. */
void nkv_tcp_server_log_level_set(struct nkv_tcp_server *s, int level);

/* One connection as the control socket lists it (connection_list). */
struct nkv_tcp_conn_info {
	uint32_t id;			/* the log's conn= */
	char peer[64];			/* address:port */
	uint64_t age_ms;
	int connected;			/* Fabrics Connect done: a queue of a controller */
	uint16_t qid;			/* 0: the admin queue */
	uint16_t cntlid;
	char hostnqn[224];		/* as Connect gave it (self-asserted) */
	uint32_t inflight;		/* commands in the core now */
	int hdgst, ddgst;		/* digests as ICReq/ICResp settled */
};

/*
 * The connections open now into out (up to max): how many are open (may
 * be more than max), or -ETIMEDOUT when the poll thread did not answer
 * within wait_ms. Any thread but the poll thread; one call at a time is
 * served, others wait their turn within their own wait_ms.
 */
int nkv_tcp_server_conns(struct nkv_tcp_server *s, struct nkv_tcp_conn_info *out, uint32_t max,
			 uint32_t wait_ms);
/* End connection id as a protocol error does (its association with it
 * when it is an admin queue), logged: 0, -ENOENT, -ETIMEDOUT. */
int nkv_tcp_server_close_conn(struct nkv_tcp_server *s, uint32_t id, uint32_t wait_ms);

#endif /* NKV_TGT_TCP_SERVER_H */
