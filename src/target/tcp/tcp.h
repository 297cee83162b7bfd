/* SPDX-License-Identifier: MIT */
/*
 * tcp.h - the NVMe/TCP transport's insides, shared by its files (server.h
 * is the public interface):
 *   listen.c  listeners, accepting, per-host budgets, the poll thread,
 *             associations (keep alive), the log
 *   conn.c    a connection: the receive state machine (header, digest,
 *             padding, data, data digest), ICReq/ICResp, TermReqs
 *   cmd.c     commands: the capsule's data pointer, in-capsule data,
 *             R2T/H2CData, the core's request, C2HData and CapsuleResp
 *   tx.c      the send queue: PDUs leave in order, without blocking, a
 *             value straight from its buffer
 *
 * One poll thread serves every socket and controller (epoll), so an
 * association (an admin connection and its I/O connections, one
 * controller) is always served by the thread its controller needs.
 */
#ifndef NKV_TGT_TCP_H
#define NKV_TGT_TCP_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>

#include "nvme-tcp/pdu.h"
#include "target/core/req.h"
#include "target/tcp/server.h"

#define NKV_TCP_SLOTS 128u		/* commands in flight per connection (MQES + 1) */
#define NKV_TCP_MAXH2CDATA (1u << 20)	/* ICResp MAXH2CDATA */
#define NKV_TCP_MAX_LISTEN 16u
#define NKV_TCP_DEF_CONNS 64u
#define NKV_TCP_DEF_BUF (256ull << 20)
#define NKV_TCP_DEF_IC_MS 10000u
#define NKV_TCP_TERM_MS 5000u		/* a TermReq not taken by then: just close */
#define NKV_TCP_RX_BUDGET (1u << 20)	/* bytes one connection reads per pass */
#define NKV_TCP_RBUF (64u << 10)	/* read-ahead: many small PDUs per recv */
#define NKV_TCP_SPARE_MAX (64u << 20)	/* a transfer buffer kept for the next command */
/* Log levels (server.h's log_level: the vfio-user server's scale). */
#define NKV_TCP_WARN 1
#define NKV_TCP_INFO 2
#define NKV_TCP_SC_INTERRUPTED 0x21	/* generic: Command Interrupted (retry) */
#define NKV_TCP_SC_TRANSIENT 0x22	/* generic: Transient Transport Error */

struct nkv_tcp_conn;
struct nkv_tcp_assoc;

/* One command of a connection, from its CapsuleCmd to its CapsuleResp. */
struct nkv_tcp_io {
	struct nkv_tgt_req req;		/* what the core sees */
	struct nkv_tcp_conn *conn;
	uint16_t ttag;			/* its slot: the R2T's tag */
	uint8_t busy;
	uint8_t in_core;		/* between nkv_tgt_ctrl_exec and done() */
	uint8_t c2h;			/* data goes back as C2HData */
	uint8_t *icd;			/* in-capsule data (owned) */
	uint32_t icd_len;
	uint8_t *buf;			/* the transfer's buffer (owned) */
	uint32_t buf_len;
	uint32_t buf_cap;		/* its size (a spare may be larger) */
	uint32_t h2c_off;		/* H2C: bytes received so far */
	uint32_t r2t_end;		/* H2C: the R2T asks up to here */
};

/* One PDU (or its rest) on the send queue. */
struct nkv_tcp_tx {
	struct nkv_tcp_tx *next;
	_Alignas(8) uint8_t hdr[NKV_TCP_HDR_MAX + 2 * NKV_TCP_DGST_LEN + 128];	/* header, digest, pad */
	uint32_t hdr_len;
	const uint8_t *data;		/* DATA, in a command's buffer */
	uint32_t data_len;
	uint8_t ddgst[NKV_TCP_DGST_LEN];
	uint32_t dd_len;
	uint64_t sent;			/* of hdr_len + data_len + dd_len */
	struct nkv_tcp_io *release;	/* free this command once sent */
	int close_after;		/* a TermReq: the connection ends once it is out */
};

enum nkv_tcp_rx_state {
	NKV_TCP_RX_CH,			/* the 8-byte common header */
	NKV_TCP_RX_HDR,			/* the rest of the header and its digest */
	NKV_TCP_RX_PAD,			/* up to PDO */
	NKV_TCP_RX_DATA,
	NKV_TCP_RX_DDGST,
};

struct nkv_tcp_conn {
	struct nkv_tcp_server *s;
	struct nkv_tcp_conn *next;	/* the server's list */
	struct nkv_tcp_conn *anext;	/* its association's list */
	int fd;
	uint32_t id;
	char peer[64];			/* address:port, for the log */
	char host[48];			/* address: the budget's key */
	uint64_t t_open_ns;
	int ic_done;
	int dead;			/* closed: freed once no command is in flight */
	int broken;			/* to be ended by the poll loop, for why */
	const char *why;
	int closing;			/* a TermReq is queued: read nothing more */
	uint64_t t_close_ns;		/* since when (a host not reading it: dropped) */
	struct nkv_tcp_neg neg;		/* what ICReq/ICResp settled */
	uint32_t hpda_align;		/* C2H data alignment the host asked for */
	/* Receive state: survives short reads. */
	enum nkv_tcp_rx_state rx;
	_Alignas(8) uint8_t hbuf[NKV_TCP_HDR_MAX + NKV_TCP_DGST_LEN];	/* read as PDU structs */
	uint32_t hgot;
	struct nkv_tcp_layout lay;
	uint32_t pad_left;
	uint8_t *dst;			/* where DATA goes */
	uint32_t dgot;
	uint32_t dcrc;
	uint8_t ddbuf[NKV_TCP_DGST_LEN];
	uint32_t ddgot;
	struct nkv_tcp_io *rx_cmd;	/* whose data is arriving */
	uint8_t *rbuf;			/* read-ahead (NKV_TCP_RBUF bytes) */
	uint32_t rpos, rlen;		/* unread bytes: rbuf[rpos, rlen) */
	/* The last transfer buffer freed, kept for the next command: a
	 * value of megabytes then costs no fresh mapping and page faults. */
	uint8_t *spare;
	uint32_t spare_len;
	/* The association. */
	struct nkv_tcp_assoc *assoc;
	/* An I/O connection that ended while the core held commands of it:
	 * on its association's zombie list until they come back, or until
	 * the association ends (its controller then never returns them). */
	struct nkv_tcp_assoc *zassoc;
	struct nkv_tcp_conn *znext;
	uint16_t qid;
	uint16_t sqhd;
	uint32_t sqsize;
	/* Commands. */
	struct nkv_tcp_io slots[NKV_TCP_SLOTS];
	uint32_t inflight;		/* slots busy */
	uint64_t buf_bytes;		/* data buffers held (the budget) */
	/* Sending. */
	struct nkv_tcp_tx *txq;
	struct nkv_tcp_tx *txq_tail;
	int want_out;			/* EPOLLOUT armed */
	int tx_dirty;			/* queued since the last flush: flushed at the pass's end */
};

/* An association: one controller, its admin connection, its I/O ones. */
struct nkv_tcp_assoc {
	struct nkv_tcp_assoc *next;
	struct nkv_tgt_ctrl *ctrl;
	struct nkv_tcp_conn *conns;	/* admin first */
	struct nkv_tcp_conn *zombies;	/* ended I/O connections (zassoc) */
	int wake_fd;
};

struct nkv_tcp_listener {
	int fd;
	char addr[64];
	uint16_t port;
};

struct nkv_tcp_server {
	struct nkv_tcp_server_opts o;
	struct nkv_tgt_fab *fab;
	struct nkv_tcp_listener lis[NKV_TCP_MAX_LISTEN];
	uint32_t nlis;
	int ep;				/* epoll */
	int stop_fd;			/* eventfd: stop */
	int aer_fd;			/* eventfd: an event posted (nkv_tcp_server_aer) */
	uint64_t aer_word;		/* atomic: 1 << 32 | dw0 while one is posted */
	/* The control side (control.c): one request at a time. */
	int ctl_fd;			/* eventfd: a request posted */
	pthread_mutex_t ctl_mu;
	pthread_cond_t ctl_cv;
	int ctl_busy, ctl_req, ctl_rc;
	uint32_t ctl_id, ctl_max;
	struct nkv_tcp_conn_info *ctl_out;
	pthread_t thr;
	int started;
	struct nkv_tcp_conn *conns;
	struct nkv_tcp_assoc *assocs;
	uint32_t next_id;
	struct nkv_tcp_server_stats st;	/* written by the poll thread, read atomically */
};

/* listen.c */
void nkv_tcp_log(struct nkv_tcp_server *s, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void nkv_tcp_stat_add(uint64_t *ctr);
/* The association of a connection that just connected its admin queue. */
int nkv_tcp_assoc_new(struct nkv_tcp_conn *c, struct nkv_tgt_ctrl *ctrl);
int nkv_tcp_assoc_join(struct nkv_tcp_conn *c, struct nkv_tgt_ctrl *ctrl);
/* End a connection: its association too when it is the admin queue. */
void nkv_tcp_conn_end(struct nkv_tcp_conn *c, const char *why);

/* control.c: serve the posted control request (the poll thread). */
void nkv_tcp_ctl_serve(struct nkv_tcp_server *s);

/* conn.c */
struct nkv_tcp_conn *nkv_tcp_conn_new(struct nkv_tcp_server *s, int fd);
/* The address the host reached c at (an IPv4 one for a v4-mapped
 * address), NKV_NVMF_ADRFAM_* into *adrfam: 0 or -errno. */
int nkv_tcp_conn_local(const struct nkv_tcp_conn *c, char *addr, size_t len, uint8_t *adrfam);
/* Read and handle what the socket holds (a budget's worth). */
void nkv_tcp_conn_readable(struct nkv_tcp_conn *c);
/* A protocol error: queue a C2HTermReq quoting hdr, log, end the
 * connection once it is out. */
void nkv_tcp_conn_fatal(struct nkv_tcp_conn *c, const struct nkv_tcp_fault *f,
			const void *hdr, uint32_t len);
void nkv_tcp_conn_free(struct nkv_tcp_conn *c);
/* Have the poll loop end the connection (never ended from inside a call
 * of the core's: its controller may go with it). */
void nkv_tcp_conn_break(struct nkv_tcp_conn *c, const char *why);

/* cmd.c */
/* A CapsuleCmd's header arrived (its data, if any, not yet). 0 or
 * -EPROTO (the connection is ending). */
int nkv_tcp_cmd_begin(struct nkv_tcp_conn *c, const struct nkv_tcp_cmd *pdu);
/* The CapsuleCmd's in-capsule data (if any) arrived whole. */
void nkv_tcp_cmd_capsule_done(struct nkv_tcp_conn *c);
/* An H2CData header: check it, and point the receiver at its place. */
int nkv_tcp_h2c_begin(struct nkv_tcp_conn *c, const struct nkv_tcp_data *h);
/* An H2CData's data arrived whole. */
void nkv_tcp_h2c_done(struct nkv_tcp_conn *c);
void nkv_tcp_io_release(struct nkv_tcp_io *io);

/* tx.c */
struct nkv_tcp_tx *nkv_tcp_tx_new(void);
void nkv_tcp_tx_queue(struct nkv_tcp_conn *c, struct nkv_tcp_tx *t);
/* Send what the socket takes. 0, or -1 when the connection broke. */
int nkv_tcp_tx_flush(struct nkv_tcp_conn *c);
void nkv_tcp_tx_drop(struct nkv_tcp_conn *c);

#endif /* NKV_TGT_TCP_H */
