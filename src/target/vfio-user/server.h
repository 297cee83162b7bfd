/* SPDX-License-Identifier: MIT */
/*
 * server.h - nkv-target's vfio-user transport: a Unix socket
 * server giving every connection its own NVMe controller instance over a
 * shared subsystem. nkv-target's main() and an embedding program (e.g. a
 * benchmark running the target as a thread on a private socket) both use
 * this.
 */
#ifndef NKV_TGT_VFIO_USER_SERVER_H
#define NKV_TGT_VFIO_USER_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "target/core/ctrl.h"

enum nkv_vfu_log_level {
	NKV_VFU_LOG_ERROR = 0,
	NKV_VFU_LOG_WARN = 1,
	NKV_VFU_LOG_INFO = 2,
	NKV_VFU_LOG_DEBUG = 3,
};

/* The connection threads' scheduling class (nkv_vfu_server_opts.poll_sched). */
enum nkv_vfu_sched {
	NKV_VFU_SCHED_NORMAL = 0,	/* SCHED_OTHER, as created */
	/*
	 * SCHED_IDLE: any ordinary thread that wakes on the thread's CPU
	 * takes it at once. For a target sharing cores with the storage it
	 * forwards to (a local Ceph OSD), so that its polling gives way to
	 * it; other busy work starves it.
	 */
	NKV_VFU_SCHED_IDLE = 1,
};

struct nkv_vfu_server_opts {
	size_t size;			/* sizeof(struct nkv_vfu_server_opts) */
	/* created; one target per path: see nkv_vfu_lock_take (a socket
	 * file no live target holds is replaced, anything else refused) */
	const char *socket_path;
	struct nkv_subsys *ss;		/* shared by all connections; caller owns */
	struct nkv_tgt_ctrl_opts ctrl;	/* per connection (cntlid is assigned) */
	uint64_t poll_interval_ns;	/* idle sleep between polls; 0: 100 us */
	int no_sparse_mmap;		/* doorbells only by REGION_WRITE */
	int max_conns;			/* 0: 16; more are closed at once */
	int log_level;			/* NKV_VFU_LOG_*; default ERROR (0) */
	FILE *log;			/* NULL: stderr */
	/*
	 * Time limits on a client, in ms (0 takes the default). A connection
	 * past one is closed, logged and counted as dropped.
	 * handshake_ms: VERSION must arrive this soon after connecting
	 * (default 10000). idle_ms: a connection whose controller is not
	 * enabled (CSTS.RDY 0) and that sends no message for this long
	 * (default 60000). msg_ms: one whole message in and its reply out,
	 * from its first byte, however slowly the bytes drip (default 5000).
	 */
	uint32_t handshake_ms;
	uint32_t idle_ms;
	uint32_t msg_ms;
	/*
	 * Budgets per connection, so that one client cannot use up the
	 * target's address space (a sparse 1 TiB memfd maps for free): DMA
	 * regions (0: 256, at most 1024; also announced as max_dma_maps) and
	 * bytes mapped (0: 64 GiB). DMA_MAP past either: ENOSPC and a log line.
	 */
	uint32_t max_dma_maps;
	uint64_t max_dma_bytes;
	int poll_sched;			/* enum nkv_vfu_sched; serve_fd ignores it */
	/*
	 * Who may connect: connecting takes write permission on the socket
	 * file (and search permission on every directory above it, which
	 * is the operator's). socket_mode: its permission bits, 1..0777
	 * (0: as bind leaves them, 0777 less the umask). socket_gid_set:
	 * give it group socket_gid (0: the process's group).
	 */
	uint32_t socket_mode;
	int socket_gid_set;
	gid_t socket_gid;
	/* The path's lock, taken already by nkv_vfu_lock_take (the server
	 * owns it from the call on, and releases it when it stops or fails
	 * to start); NULL: nkv_vfu_server_start takes it. */
	struct nkv_vfu_lock *lock;
};

/*
 * One target per socket path. The lock is PATH.lock (pidlock.h: flock,
 * the holder's PID in it); a server binds PATH only while holding it,
 * and removes PATH, then PATH.lock, when it stops. A socket file found at
 * PATH under the lock was left by a target that died: it is replaced
 * (logged as event=socket_reclaimed); PATH being anything but a socket
 * is refused (-ENOTSOCK at start).
 *
 * Take the lock of socket_path without waiting. 0; -EADDRINUSE when a
 * live process holds it (*holder: its PID, 0 when unknown);
 * -ENAMETOOLONG; or the errno of PATH.lock's open.
 */
struct nkv_vfu_lock;
int nkv_vfu_lock_take(const char *socket_path, struct nkv_vfu_lock **out, pid_t *holder);
/* Remove PATH.lock and drop the lock (NULL: nothing). */
void nkv_vfu_lock_release(struct nkv_vfu_lock *l);

struct nkv_vfu_server;

/* Take the path's lock (unless opts->lock), bind, listen and start the
 * accept thread. 0 or a negative errno: -EADDRINUSE, another target holds
 * the path (nkv_vfu_lock_take); -ENOTSOCK, the path is not a socket; -EPERM
 * from socket_gid. */
int nkv_vfu_server_start(const struct nkv_vfu_server_opts *opts,
			 struct nkv_vfu_server **out);
/* Stop accepting, close every connection (in-flight commands finished or
 * failed by the controllers, then DMA memory unmapped), remove the
 * socket, free. */
void nkv_vfu_server_stop(struct nkv_vfu_server *s);

struct nkv_vfu_server_stats {
	uint32_t conns;			/* open now */
	uint64_t accepted;
	uint64_t refused;		/* over max_conns */
	uint64_t closed;		/* connections whose controller was freed */
	uint64_t errors;		/* error replies sent */
	uint64_t failed;		/* accepted but not served (no memory, no thread) */
	uint64_t dropped;		/* ended by the server (bad stream, timeout), not the client */
	uint64_t sleeps;		/* idle sleeps of connection threads (each ends in a wake-up) */
	uint64_t dma_msgs;		/* DMA_READ/WRITE sent to clients (memory without an fd) */
	uint64_t dma_bytes;		/* bytes they moved, answered OK */
	uint64_t busy_ns;		/* connection threads' time in controller passes
					 * that found work (commands fetched, run,
					 * completed): CPU time of the data path */
};
void nkv_vfu_server_stats(struct nkv_vfu_server *s, struct nkv_vfu_server_stats *st);

/*
 * The control side (nkv-target's RPC socket, control.c). Any thread but a
 * connection's own. A connection's controller belongs to its thread, so
 * what is asked of it is handed to that thread (an eventfd it waits on
 * beside its socket) and served at its next wait: within the poll
 * interval, or once the message it is reading is whole (msg_ms at most).
 */

/* One connection, as its own thread saw it when asked. */
struct nkv_vfu_conn_info {
	uint16_t id;		/* the connection's number, its controller's CNTLID */
	int fresh;		/* 1: the fields below are filled; 0: its thread was
				 * busy past the wait (mid-message): id and age_ms only */
	uint64_t age_ms;	/* since it was accepted */
	int has_cred;		/* the peer's credentials (SO_PEERCRED) below */
	int32_t pid;
	uint32_t uid, gid;
	uint64_t idle_ms;	/* since its last message */
	int negotiated;		/* VERSION done */
	int enabled;		/* CSTS.RDY */
	const char *failed;	/* why its controller failed (CSTS.CFS), or NULL */
	uint32_t dma_maps;
	uint64_t dma_bytes;	/* mapped */
	/* Its queues' counters summed (stats.h): admin and I/O. */
	uint64_t commands, bytes, errors, sq_doorbells, cq_doorbells, bad_doorbells;
};

/* Up to max connections into out, each asked and waited for up to wait_ms
 * (then fresh 0). Returns how many are open (which may exceed max). */
int nkv_vfu_server_conns(struct nkv_vfu_server *s, struct nkv_vfu_conn_info *out,
			 uint32_t max, uint32_t wait_ms);
/* End connection id as a protocol error ends one (its controller's
 * in-flight commands finished or failed, logged event=conn_end
 * reason=closed_by_rpc, counted as dropped). 0, or -ENOENT. Returns
 * before the connection is gone. */
int nkv_vfu_server_close_conn(struct nkv_vfu_server *s, uint16_t id);

/* The options a running server can change, read by connections as they
 * go. 0 takes the default, as in nkv_vfu_server_opts. */
struct nkv_vfu_server_live {
	uint32_t handshake_ms;	/* checked against each connection not yet
				 * negotiated at its next wake-up */
	uint32_t idle_ms;	/* the same, for idle ones */
	uint32_t msg_ms;	/* from the next message on */
	int max_conns;		/* at the next accept; open ones stay */
	uint64_t poll_interval_ns; /* every connection at its next wait */
	int log_level;		/* NKV_VFU_LOG_*: the next line */
};
/* What the server runs with now, the defaults filled in. */
void nkv_vfu_server_live_get(struct nkv_vfu_server *s, struct nkv_vfu_server_live *l);
/* 0, or -EINVAL (a negative max_conns, a log level past DEBUG). */
int nkv_vfu_server_live_set(struct nkv_vfu_server *s, const struct nkv_vfu_server_live *l);

/*
 * Serve one already connected client on fd (taken: closed on return) in
 * the calling thread, with its own controller, until the client closes
 * or the stream breaks. No socket is created (opts->socket_path is
 * ignored). For fuzzers, tests and socket-activated setups. 0, or
 * -EINVAL for bad opts, -ENOMEM.
 */
int nkv_vfu_serve_fd(const struct nkv_vfu_server_opts *opts, int fd);

#endif /* NKV_TGT_VFIO_USER_SERVER_H */
