/* SPDX-License-Identifier: MIT */
/*
 * vfu.h - the vfio-user server's insides, shared by its files (server.h
 * is the public interface):
 *   log.c       the log, rate-limited per connection
 *   pci.c       PCI configuration space
 *   dma.c       DMA regions and DMA messages
 *   dispatch.c  receiving a message, its handler, the reply
 *   conn.c      a connection: controller instance, BAR0, its thread
 *   lock.c      one target per socket path (PATH.lock)
 *   listen.c    listening, accepting, start/stop, stats, serve_fd
 *   control.c   the control side (nkv-target's RPC): connections listed
 *               and ended, limits changed while running
 *
 * One accept thread; one thread per connection that both answers that
 * client's messages and polls its controller, so every nkv_tgt_ctrl_*
 * call for a controller comes from one thread, as ctrl.h asks. BAR0
 * lives in a memfd: its doorbell page is handed to the client as a
 * sparse-mmap area (unless disabled), so doorbells arrive as plain
 * stores that the controller polls; doorbells sent as REGION_WRITE go
 * through nkv_tgt_ctrl_reg_write and land in the same page.
 *
 * Every message is checked before it touches anything: a bad one gets
 * an error reply; one that leaves the stream out of sync (oversized,
 * torn) closes that connection only.
 */
#ifndef NKV_TGT_VFIO_USER_VFU_H
#define NKV_TGT_VFIO_USER_VFU_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "target/core/poller.h"
#include "target/vfio-user/server.h"
#include "vfio-user/msg.h"

#define NKV_VFU_PCI_VENDOR 0x1b36	/* the Identify VID the core reports */
#define NKV_VFU_PCI_DEVICE 0x0010
#define NKV_VFU_PCIE_CAP 0x40		/* PCI Express capability offset */
#define NKV_VFU_NUM_IRQS (VFIO_PCI_ERR_IRQ_INDEX + 2)	/* INTx..REQ */
#define NKV_VFU_HANDSHAKE_MS 10000	/* defaults of the time limits (opts) */
#define NKV_VFU_IDLE_MS 60000
#define NKV_VFU_MSG_MS 5000
#define NKV_VFU_MS 1000000ull		/* ns per ms */
#define NKV_VFU_DMA_MAPS 256		/* default budgets (opts) */
#define NKV_VFU_DMA_BYTES (64ull << 30)
#define NKV_VFU_LOG_BURST 50		/* lines one connection may log at once */
#define NKV_VFU_LOG_PER_S 10		/* then this many a second; the rest counted */

/* A socket path's lock (nkv_vfu_lock_take). */
struct nkv_vfu_lock {
	int fd;				/* flocked */
	pid_t stale;			/* a PID a dead holder left in it, or 0 */
	char path[4096];		/* PATH.lock */
};

struct nkv_vfu_server {
	struct nkv_vfu_server_opts o;
	char path[108];
	struct nkv_vfu_lock *plock;	/* the path's, held from start to stop */
	int lfd;
	pthread_t accept_thr;
	int stop;			/* atomic */
	int stop_fd;			/* eventfd, readable once stopping; or -1 */
	uint64_t sleeps;		/* atomic (relaxed): idle sleeps begun */
	uint64_t busy_ticks;		/* atomic (relaxed): passes that found work */
	struct nkv_tgt_clock clock;	/* ticks to ns (stats), from start */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint32_t nconns;		/* under lock */
	uint16_t next_id;		/* under lock */
	struct nkv_vfu_server_stats st;	/* under lock */
	struct nkv_vfu_conn *conns;	/* under lock: those serving (control.c) */
};

/* Requests a client may send while a DMA_READ/WRITE of ours waits for
 * its reply; one more ends the connection. */
#define NKV_VFU_HELD 8

struct nkv_vfu_map {
	uint64_t iova;
	uint64_t len;
	void *ptr;
};

struct nkv_vfu_conn {
	struct nkv_vfu_server *s;
	int fd;
	uint16_t id;
	/* The peer's credentials at connect (SO_PEERCRED): its controller's
	 * tenant (tenant/tenant.h). has_cred 0: the kernel gave none. */
	int has_cred;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	int negotiated;
	uint64_t max_xfer;		/* min(ours, the client's) */
	struct nkv_dma *dma;
	struct nkv_tgt_ctrl *ctrl;
	int bar_fd;			/* memfd holding BAR0 */
	uint8_t *bar;
	struct nkv_tgt_bar0_layout bar0;	/* from the controller's options */
	uint8_t cfg[NKV_PCI_CFG_SIZE];
	uint32_t bar_lo, bar_hi;	/* BAR0 as programmed by the client */
	const char *failed_logged;	/* the controller failure last logged */
	struct nkv_vfu_map *maps;
	uint32_t nmaps;
	uint64_t mapped;		/* bytes in maps */
	uint64_t opened_ns;		/* CLOCK_MONOTONIC */
	uint64_t last_msg_ns;
	const char *end_reason;		/* a time limit that ended it, or NULL */
	uint32_t log_tokens;		/* lines it may still log now */
	uint64_t log_refill_ns;
	uint64_t log_dropped;		/* lines not logged since the last one */
	uint64_t log_dropped_total;
	/* Client requests that arrived while waiting for the reply to one of
	 * ours (DMA_READ/WRITE): handled in order after the controller pass. */
	struct nkv_vfu_msg held[NKV_VFU_HELD];
	uint32_t nheld;
	uint16_t next_req_id;		/* msg_id of our next DMA_READ/WRITE */
	int dma_dead;			/* a DMA message failed the stream: end */
	struct nkv_tgt_poller poller;	/* when to poll, check, sleep; busy ticks
					 * not yet in the server's */
	/* The control side (control.c): requests it sets under the server's
	 * lock, then kicks kick_fd so that the connection's thread, which
	 * alone may touch its controller, serves them at its next wait. */
	struct nkv_vfu_conn *next;	/* in s->conns, under s->lock */
	int kick_fd;			/* eventfd; -1 before setup */
	int kicked;			/* kick_fd was readable at the last wait */
	uint32_t ctl;			/* NKV_VFU_CTL_*, under s->lock */
	uint32_t snap_req, snap_done;	/* under s->lock */
	struct nkv_vfu_conn_info snap;	/* under s->lock */
	/* The reply being built. */
	uint8_t *rbuf;
	size_t rlen;
	int rfd;
};

/* Control requests to a connection's thread (nkv_vfu_conn.ctl). */
#define NKV_VFU_CTL_SNAP (1u << 0)	/* fill snap */
#define NKV_VFU_CTL_SETTINGS (1u << 1)	/* reread the poll interval */
#define NKV_VFU_CTL_CLOSE (1u << 2)	/* end the connection */
#define NKV_VFU_CTL_EVENTS (1u << 3)	/* namespace changes: notices (ns.h) */

/* ns.h's listener: every connection's thread asked for its controller's
 * Namespace Attribute Changed notice (control.c). */
void nkv_vfu_server_ns_changed(void *server);

/* A time limit of the server's options, which the control side may
 * change while connections read it (control.c): 0 takes def. */
static inline uint64_t nkv_vfu_ms(const uint32_t *v, uint32_t def)
{
	uint32_t ms = __atomic_load_n(v, __ATOMIC_RELAXED);

	return (uint64_t)(ms ? ms : def) * NKV_VFU_MS;
}

/* log.c */
void nkv_vfu_log(struct nkv_vfu_server *s, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A line caused by what one client sends: rate-limited per connection. */
void nkv_vfu_clog(struct nkv_vfu_conn *c, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void nkv_vfu_log_failed(struct nkv_vfu_conn *c);

/* pci.c */
void nkv_vfu_cfg_init(struct nkv_vfu_conn *c);
void nkv_vfu_cfg_view(const struct nkv_vfu_conn *c, uint8_t *out);
uint16_t nkv_vfu_command(const struct nkv_vfu_conn *c);
void nkv_vfu_check_intx(struct nkv_vfu_conn *c);
void nkv_vfu_cfg_write(struct nkv_vfu_conn *c, uint32_t off, const uint8_t *d, uint32_t len);

/* dma.c */
uint32_t nkv_vfu_max_maps(const struct nkv_vfu_server *s);
int nkv_vfu_h_dma_map(struct nkv_vfu_conn *c, struct nkv_vfu_msg *m);
int nkv_vfu_h_dma_unmap(struct nkv_vfu_conn *c, struct nkv_vfu_msg *m);
int nkv_vfu_dma_xfer(void *ctx, uint64_t iova, void *buf, uint64_t len, int to_client);

/* dispatch.c */
int nkv_vfu_reply_alloc(struct nkv_vfu_conn *c, size_t len);
int nkv_vfu_handle_one(struct nkv_vfu_conn *c);

/* control.c */
/* Serve the control requests kick_fd announced (on the connection's
 * thread): 0, or -ECONNABORTED when asked to end it. */
int nkv_vfu_conn_control(struct nkv_vfu_conn *c);
void nkv_vfu_conn_link(struct nkv_vfu_conn *c);
void nkv_vfu_conn_unlink(struct nkv_vfu_conn *c);
uint64_t nkv_vfu_poll_ns(const struct nkv_vfu_server *s);

/* conn.c */
/* The controller options of a connection: the server's, whatever their
 * own size field says (the server opts' size covers them). */
struct nkv_tgt_ctrl_opts nkv_vfu_ctrl_opts(const struct nkv_vfu_server_opts *o, uint16_t cntlid);
int nkv_vfu_ctrl_new(struct nkv_vfu_conn *c);
/* The connection thread: serves c until it ends, then frees it. */
void *nkv_vfu_conn_main(void *arg);

#endif /* NKV_TGT_VFIO_USER_VFU_H */
