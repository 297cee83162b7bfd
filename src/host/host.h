/* SPDX-License-Identifier: MIT */
/*
 * host.h - the host library's internals (library-private): the controller
 * and queue-pair structs, memory sources, the admin queue, logging.
 * Internal functions are nkv_h_*; none of them is exported.
 */
#ifndef NKV_HOST_HOST_H
#define NKV_HOST_HOST_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "nkv_dev.h"
#include "nkv_mr.h"
#include "nkv_host.h"
#include "host/doorbell_fwd.h"
#include "host/gpu.h"
#include "host/transport.h"

/* ---- logging (log.c) ---- */
int nkv_h_trace_on(void);
void nkv_h_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define nkv_h_trace(...)				\
	do {						\
		if (nkv_h_trace_on())			\
			nkv_h_log(__VA_ARGS__);		\
	} while (0)
/* snprintf into err (errlen bytes) when err is set. */
void nkv_h_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- namespace extensions (ns_ext.c) ---- */
/* What KV Identify Namespace @id of namespace @nsid advertises (NSATTR,
 * the nkvX vendor bytes); all zeroes but nsid and size without them. */
void nkv_h_ns_ext_parse(const struct nkv_id_ns_kv *id, uint32_t nsid, struct nkv_ns_ext *ext);
struct nkv_ctrl;
/* How long a client waits for a command of a namespace that advertises
 * cmd_timeout_ms (nkv_kv_vs): that plus a margin of max(2 s, 25 %), so
 * the controller's own status answers first; 0 when it says nothing. */
uint32_t nkv_h_cmd_wait_ms(uint32_t cmd_timeout_ms);
/* The I/O wait of c's queue pairs: @asked, the application's own (kept;
 * logged when shorter than nkv_h_cmd_wait_ms() of the namespace in use,
 * naming it as @what), or with @asked 0 the larger of @dflt and that. */
uint32_t nkv_h_io_timeout(const struct nkv_ctrl *c, uint32_t asked, uint32_t dflt,
			  const char *what);
/* "TTL (option bit 3), touch (option bit 5)" for the NKV_STORE_VENDOR_MASK
 * bits of @opts, or "none"; into @buf (@len bytes), which it returns. */
const char *nkv_h_store_opts_str(uint32_t opts, char *buf, size_t len);

/* ---- URI (uri.c) ---- */
/* Split "scheme:addr": the transport and a pointer to addr inside uri. */
int nkv_h_uri_parse(const char *uri, const struct nkv_transport_ops **ops,
		    const char **addr, char *err, size_t errlen);

/* ---- memory sources and registered buffers (dmamem.c) ---- */

/*
 * Where DMA-able memory comes from. "host" is memfd-backed host RAM;
 * "device" is device memory: today the emulated arena (one memfd in host
 * RAM standing in for VRAM), later a GPU runtime (hipMalloc fine-grained
 * memory exported as a dma-buf fd) plugs in here with the same three ops.
 * alloc fills m->va, m->len (page multiple), m->fd, m->fd_offset, and
 * hands out zeroed memory without touching it (a fresh memfd; arena
 * extents punched out when freed), so buffers cost pages only as they
 * are used.
 */
struct nkv_h_memsrc;
struct nkv_h_memsrc_ops {
	const char *name;
	int (*alloc)(struct nkv_h_memsrc *s, size_t len, struct nkv_dmamem *m);
	void (*free)(struct nkv_h_memsrc *s, struct nkv_dmamem *m);
	void (*destroy)(struct nkv_h_memsrc *s);
	/* Optional: how the transport copies to and from a block of this
	 * source that it reaches by messages (nkv_dmamem.copy); a GPU
	 * runtime's synchronous memcpy goes here. NULL: memcpy at va. */
	int (*copy)(void *ctx, const struct nkv_dmamem *m, size_t off, void *host,
		    size_t len, int to_mem);
};
struct nkv_h_memsrc {
	const struct nkv_h_memsrc_ops *ops;
	int is_device;		/* counts as "VRAM" for the memory mode */
	int emulated;		/* device memory that is really host RAM */
	int by_messages;	/* registered without an fd, reached by messages */
};

struct nkv_h_memsrc *nkv_h_memsrc_host(void);
/* The emulated device arena: one memfd of arena_len bytes (sparse). */
struct nkv_h_memsrc *nkv_h_memsrc_arena(size_t arena_len);
/* The same, registered without an fd: the controller reaches it only by
 * messages, as it would device memory it cannot map. */
struct nkv_h_memsrc *nkv_h_memsrc_arena_by_messages(size_t arena_len);

/* A buffer from a memory source, registered with the transport. */
struct nkv_h_buf {
	struct nkv_dmamem m;
	struct nkv_h_memsrc *src;
	int mapped;
};

struct nkv_ctrl;
/* Allocate len bytes (rounded up to pages, zeroed) from src and register
 * them with c's transport. 0 or a negative errno. */
int nkv_h_buf_alloc(struct nkv_ctrl *c, struct nkv_h_memsrc *src, size_t len,
		    struct nkv_h_buf *b);
/* The same, registered for @prot only (NKV_DMAMEM_*; 0: both ways). */
int nkv_h_buf_alloc_prot(struct nkv_ctrl *c, struct nkv_h_memsrc *src, size_t len,
			 uint32_t prot, struct nkv_h_buf *b);
/* Register memory the caller filled in b->m (va, len, fd or by_messages,
 * prot) with c's transport, naming it @what in the trace; no source:
 * nkv_h_buf_free() unregisters it and leaves the memory alone. */
int nkv_h_buf_register(struct nkv_ctrl *c, struct nkv_h_buf *b, const char *what);
/* Unregister and free; safe on a zeroed or half-built buffer. */
void nkv_h_buf_free(struct nkv_ctrl *c, struct nkv_h_buf *b);
/* Controller address of byte off of the buffer. */
uint64_t nkv_h_buf_iova(const struct nkv_h_buf *b, size_t off);

/* GPU memory (gpu_mem.c): a message's copy between host memory and byte
 * @off of device memory @m, with the runtime @ctx (struct nkv_gpu_ops). */
int nkv_h_gpu_copy(void *ctx, const struct nkv_dmamem *m, size_t off, void *host, size_t len,
		   int to_mem);
/* Is @src real GPU memory (the host must not dereference it)? */
static inline int nkv_h_memsrc_on_gpu(const struct nkv_h_memsrc *src)
{
	return src && src->is_device && !src->emulated;
}

/* ---- PRP lists (prp.c) ---- */
#define NKV_PRP_PER_PAGE (NKV_PAGE_SIZE / 8u)
/* List pages needed to describe npages data pages (0 for 1 or 2 pages). */
size_t nkv_h_prp_list_pages(size_t npages);
/*
 * Describe npages data pages (controller addresses iova[0..npages-1]) with
 * PRP1/PRP2; when a list is needed it is written into list pages
 * list_va[i] (controller address list_iova[i]), chained through the last
 * entry of a full page. Returns 0 or -EINVAL (too few list pages).
 */
int nkv_h_prp_build(const uint64_t *iova, size_t npages, uint64_t **list_va,
		    const uint64_t *list_iova, size_t nlist, uint64_t *prp1,
		    uint64_t *prp2);

/* ---- the controller ---- */

/* Counters of one queue id; live as long as the controller, so the
 * forwarder thread may update them while queue pairs come and go. */
struct nkv_h_qstats {
	uint64_t commands, bytes, sq_doorbells, cq_doorbells, errors, timeouts;
	uint64_t by_status[16];
	uint64_t other_status;
	uint64_t dev_commands;	/* SQ tail advances the forwarder saw */
	uint64_t dev_completions;
	uint32_t depth_sq, depth_cq;	/* for the forwarder's deltas */
	uint32_t last_sq, last_cq;
};

struct nkv_ctrl {
	const struct nkv_transport_ops *ops;
	struct nkv_tr *tr;
	pthread_mutex_t lock;	/* admin queue, queue ids, create/destroy */
	int dead;		/* admin timeout / transport gone: -ENOTCONN */
	int gone;		/* close found it unreachable: no register access
				 * at all (atomic: the forwarder reads it) */
	uint32_t failed_csts;	/* CSTS when CFS was first seen, else 0 */
	/* The watch (watch.c): its thread, and why it found the controller
	 * gone (atomic: 0, or a negative errno), so a wait holding the lock
	 * ends at once instead of at its next own check. */
	pthread_t watch;
	int watch_on;
	int watch_stop;		/* atomic */
	int lost;		/* atomic */
	int trace;
	uint32_t timeout_ms;	/* admin and bring-up bound */
	uint32_t io_timeout_ms;	/* sync API default */
	uint64_t cap;
	uint32_t vs, dstrd, db_stride;
	struct nkv_ctrl_info info;
	uint32_t nsid;
	uint32_t want_nsid;	/* nkv_ctrl_opts.nsid; 0: pick one */
	struct nkv_ns_ext ext;	/* the namespace in use's, read at connect */
	/* Admin queue: host RAM, driven only by the library. */
	struct nkv_h_buf asq, acq, idbuf;
	uint32_t adepth, atail, ahead, aphase;
	uint16_t acid;
	/* Asynchronous events (aen.c): one AER outstanding while the
	 * controller advertises Namespace Attribute Notices (aen_oaes). */
	int aen_oaes;
	int aer_out;		/* an AER is outstanding, CID aer_cid */
	uint16_t aer_cid;
	int aen_ns;		/* a Namespace Attribute Changed came, not handled */
	int ns_changed;		/* handled, not yet told (nkv_ctrl_ns_changed) */
	/* Memory sources by mode bit. */
	struct nkv_h_memsrc *host, *dev;
	/* Values under NKV_CTRL_VALUES_BY_MESSAGES: device memory the
	 * controller reaches by messages (NULL otherwise). */
	struct nkv_h_memsrc *dev_msg;
	uint32_t flags;		/* NKV_CTRL_* */
	uint32_t mode;
	/* Doorbells: mapped page (BAR0 + 0x1000), or shadow + forwarder. */
	volatile uint32_t *dbmap;
	size_t dbmap_len;
	struct nkv_h_buf shadow;
	volatile uint32_t *shadow_va;
	struct nkv_dbfwd *fwd;
	/* The GPU runtime (gpu.h): init's result at connect; device queue
	 * pairs need gpu_rc == 0. The doorbell page as device code sees it. */
	const struct nkv_gpu_ops *gpu;
	struct nkv_gpu_caps gpu_caps;
	int gpu_rc;
	char gpu_err[128];
	void *gpu_db_host;	/* registered doorbell range, or NULL */
	uint64_t gpu_db;	/* its device address */
	/* Queue ids 1..granted. */
	uint32_t granted;
	struct nkv_qpair **qps;		/* by qid */
	struct nkv_h_qstats *qst;	/* by qid */
	/* Memory regions (mr.c), under lock: deregistered at close. */
	struct nkv_mr *mrs;
};

struct nkv_qpair {
	struct nkv_ctrl *c;
	uint16_t qid;
	struct nkv_dev_qp *dev;		/* the descriptor (64-byte aligned) */
	struct nkv_h_buf sq, cq;
	struct nkv_h_buf data;		/* nr_slots value buffers, each after
					 * its head page */
	struct nkv_h_buf prps;		/* their PRP list pages (both forms) */
	/* The synchronous API's buffer: none (size 0) until first used,
	 * then grown to the largest value moved (nkv_h_qp_sync_room). */
	struct nkv_h_buf sdata, sprps;
	struct nkv_dev_slot sslot;
	/* Per-command memory (nkv_mr.h): nr_cmds blocks for device code and
	 * one more, the last, for the synchronous API: the pages of the SQ's
	 * buffer from cmd_page on (after the ring). */
	size_t cmd_page;
	uint64_t *cid_bitmap;
	struct nkv_dev_cpl *cpl;
	struct nkv_dev_slot *slots;
	uint32_t timeout_ms;
	uint32_t mode;			/* memory mode: the controller's | its own */
	uint32_t flags;			/* NKV_QPAIR_* */
	/* Why device code failed the queue pair (descriptor fail_addr): the
	 * word a host reads while a kernel runs; a page of its own, so a GPU
	 * runtime can map it. */
	uint32_t *fail_word;
	/* nkv_qpair_create_dev (qpair_gpu.c): the descriptor device code gets
	 * (gdesc, copied to gpu_desc), device copies of the bookkeeping,
	 * device bases of the registered host ranges. */
	int on_device;
	int said_device;	/* the sync API's refusal was logged */
	struct nkv_dev_qp gdesc;
	uint64_t gpu_desc, gpu_bitmap, gpu_cpl, gpu_slots;
	uint64_t gpu_sq, gpu_cq, gpu_data, gpu_fail, gpu_cmd_pages;
	void *gpu_reg[4];
	int gpu_nreg;
	/* The batch API (batch.c), made on first use: the command each CID
	 * in flight belongs to, a stack of free command-memory blocks, and
	 * the entries of the grant being built. */
	struct nkv_batch_cmd **bat;
	uint16_t *bat_free;
	struct nkv_prep *bat_prep;
	uint32_t bat_nfree;
	uint32_t bat_live;	/* batch commands in flight */
};

/* ---- queue pairs (qpair.c) ---- */
/* Pages of each command's memory block (nkv_mr.h): a head page, then
 * list pages: 4 hold 1021 SGL descriptors (NKV_IOV_MAX runs and a head)
 * or 2045 PRP entries (an 8 MiB range a region's table cannot carry). */
#define NKV_H_CMD_PAGES 5u
/* Largest value one command of c moves: min(MDTS, the namespace's max
 * value). */
uint32_t nkv_h_xfer_limit(const struct nkv_ctrl *c);
/* 0 when len bytes fit one command of c; else -EMSGSIZE, logged as
 * "<what> of N bytes is larger than the controller's limit of M bytes
 * (MDTS | max value)". */
int nkv_h_value_fits(const struct nkv_ctrl *c, const char *what, uint64_t len);
/* The synchronous API's buffer (q->sslot) holds len <= the limit bytes:
 * made or grown now if not. 0 or a negative errno. */
int nkv_h_qp_sync_room(struct nkv_qpair *q, uint32_t len);

/* ---- memory regions (mr.c) ---- */
/* Deregister every region of c left at close (caller holds c->lock). */
void nkv_h_mr_close_all(struct nkv_ctrl *c);
/* The host view of @mr when it is @c's region, else NULL. */
const struct nkv_dev_mr *nkv_h_mr_host(const struct nkv_mr *mr, const struct nkv_ctrl *c);
/* A synchronous command starts (+1) or ends (-1) using @mr. */
void nkv_h_mr_use(struct nkv_mr *mr, int d);

/* ---- the synchronous API (sync.c), shared with sync_mr.c ---- */
/* The checks before any command: 0, or why not (-EINVAL, -EOPNOTSUPP
 * for a device queue pair, -ENOTCONN / -EIO for a failed one). */
int nkv_h_sync_pre(struct nkv_qpair *q, struct nkv_result *res);
/* 0 for a key of @min..max_key bytes; else -EINVAL (a long one logged). */
int nkv_h_sync_key(const struct nkv_qpair *q, const void *key, uint32_t klen, uint32_t min);
/* Store options the namespace takes, for a value of @len bytes. */
int nkv_h_sync_opts(const struct nkv_qpair *q, uint32_t opts, uint32_t ttl_s, uint32_t len);
/* One SQE as a one-lane wave, waited for: 0 with the result in @res,
 * -EMSGSIZE (a short Retrieve under NKV_QPAIR_REPORT_SHORT, @res set),
 * or the error that ended it. */
int nkv_h_sync_exec(struct nkv_qpair *q, struct nkv_sqe *sqe, struct nkv_result *res);
/* Count a result and the bytes it moved in the queue's counters. */
void nkv_h_sync_count(struct nkv_qpair *q, const struct nkv_result *res, uint64_t bytes);
/* CLOCK_MONOTONIC in ns, and the pause between two empty polls of a wait
 * that has lasted @waited ns (a spin, then naps: "Waiting"). */
uint64_t nkv_h_now_ns(void);
void nkv_h_sync_pause(uint64_t waited);

/* ---- the batch API (batch.c) ---- */
/* At reset: every batch command in flight ends with -EIO, every block is
 * free again. At destroy: the batch state freed. */
void nkv_h_batch_clear(struct nkv_qpair *q);
void nkv_h_batch_free(struct nkv_qpair *q);

/* ---- queue pairs for device code (qpair_gpu.c) ---- */
int nkv_h_qp_gpu_publish(struct nkv_qpair *q);
int nkv_h_qp_gpu_sync(struct nkv_qpair *q);
int nkv_h_qp_gpu_read(struct nkv_qpair *q, struct nkv_dev_qp *d);
void nkv_h_qp_gpu_free(struct nkv_qpair *q);
void nkv_h_gpu_db_fini(struct nkv_ctrl *c);

/* ---- teardown (ctrl.c) ---- */
/* Mark a controller that went away dead and gone; caller holds c->lock. */
void nkv_h_check_gone(struct nkv_ctrl *c);

/* ---- the watch for a controller that is gone (watch.c) ---- */
/* Start the controller's watch thread (after bring-up): 0 or -EAGAIN. */
int nkv_h_watch_start(struct nkv_ctrl *c);
/* Stop and join it; safe when it never started or already ended. */
void nkv_h_watch_stop(struct nkv_ctrl *c);

/* ---- admin queue (admin.c) ---- */
int nkv_h_admin_init(struct nkv_ctrl *c, uint32_t depth);
/* 0, or -EIO when CSTS.CFS is set (logged once with when; the controller
 * is marked dead), or -ENOTCONN when CSTS cannot be read. */
int nkv_h_check_cfs(struct nkv_ctrl *c, const char *when);
/* One admin command, waited for within c->timeout_ms. Returns 0 with the
 * NVMe status in *status (and DW0), or -ETIMEDOUT / -ENOTCONN, or -EIO
 * when the controller reports CSTS.CFS (after the completion too). Caller
 * holds c->lock (or is the bring-up). */
int nkv_h_admin(struct nkv_ctrl *c, struct nkv_sqe *sqe, uint16_t *status,
		uint32_t *dw0);
void nkv_h_admin_fini(struct nkv_ctrl *c);
/* Submit without waiting (the AER): 0 with its CID in *cid, or -errno. */
int nkv_h_admin_submit(struct nkv_ctrl *c, struct nkv_sqe *sqe, uint16_t *cid);
/* Take the completions already on the admin CQ, none waited for: only
 * the outstanding AER's may be there. 0, or -EPROTO (another: dead). */
int nkv_h_admin_reap(struct nkv_ctrl *c);

/* ---- asynchronous events (aen.c); caller holds c->lock ---- */
/* Keep one AER outstanding when OAES bit 8 is advertised. 0 or -errno. */
int nkv_h_aer_arm(struct nkv_ctrl *c);
/* The AER completed (seen by an admin wait or nkv_h_admin_reap). */
void nkv_h_aer_done(struct nkv_ctrl *c, uint16_t status, uint32_t dw0);
/* Meet a completed AER: a namespace change read from log page 04h, the
 * AER sent again, c->ns_changed set. 0 or -errno. */
int nkv_h_aen_poll(struct nkv_ctrl *c);
/* Register access with the controller marked dead on a transport error. */
int nkv_h_reg_read(struct nkv_ctrl *c, uint32_t off, unsigned size, uint64_t *v);
int nkv_h_reg_write(struct nkv_ctrl *c, uint32_t off, uint64_t v, unsigned size);
uint64_t nkv_h_now_ms(void);

/* ---- placement (placement.c) ---- */
/* The memory source for a mode bit (NKV_MEM_*) under memory mode @mode. */
struct nkv_h_memsrc *nkv_h_place(struct nkv_ctrl *c, uint32_t mode, uint32_t bit);
/* Set up the memory sources for c->mode. 0 or a negative errno. */
int nkv_h_place_init(struct nkv_ctrl *c, char *err, size_t errlen);
/* Device memory for @mode's bits, made on first need. 0 or -errno. */
int nkv_h_place_dev(struct nkv_ctrl *c, uint32_t mode, char *err, size_t errlen);
/* Doorbells after bring-up: direct or shadow + forwarder. */
int nkv_h_doorbells_init(struct nkv_ctrl *c, char *err, size_t errlen);
void nkv_h_doorbells_fini(struct nkv_ctrl *c);
/* Where device code writes doorbell index idx (2 qid or 2 qid + 1). */
volatile uint32_t *nkv_h_db_addr(struct nkv_ctrl *c, uint32_t idx);
/* Push doorbell writes out now (forwarder mode); 0 or -errno. */
int nkv_h_db_flush(struct nkv_ctrl *c);
void nkv_h_place_fini(struct nkv_ctrl *c);

/* ---- stats (stats.c) ---- */
void nkv_h_stats_result(struct nkv_h_qstats *s, uint16_t status, uint64_t bytes);
void nkv_h_stats_doorbell(struct nkv_ctrl *c, uint32_t idx, uint32_t val);

#endif /* NKV_HOST_HOST_H */
