/* SPDX-License-Identifier: MIT */
/*
 * core.h - nkv-target controller internals shared by the core's files
 * (ctrl, regs, queue, admin, io_kv, io_nvm, xfer, be_data, handoff,
 * stats). Not for the transport or backends: the transport sees ctrl.h,
 * dma.h, poller.h and stats.h; a backend sees backend.h alone.
 *
 * Threading: everything here belongs to the controller's poll thread,
 * except the hand-off stack (pushed from backend threads) and the
 * doorbell page (written by the client).
 */
#ifndef NKV_TGT_CORE_H
#define NKV_TGT_CORE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/uio.h>

#include "backend.h"
#include "ctrl.h"
#include "dma.h"
#include "memguard.h"
#include "nvmf/fabrics.h"
#include "req.h"
#include "stats.h"
#include "target/tenant/tenant.h"

#define NKV_TGT_BURST 32u	/* SQEs fetched from one SQ per pass (fairness) */
#define NKV_TGT_ERRLOG 64u	/* error log ring entries (ELPE + 1) */
#define NKV_TGT_VID 0x1b36	/* same vendor QEMU's emulated NVMe reports */
/* Segments a command holds in itself: a value in one registered region is
 * one segment, however large; more (scattered pages) go to the heap. */
#define NKV_TGT_IOV_INLINE 8
#define NKV_SUBSYS_LISTENERS 4u	/* transports told of namespace changes */

struct nkv_subsys {
	int discovery;			/* the discovery subsystem (fabrics.c) */
	char sn[20];
	char mn[40];
	char subnqn[256];
	struct nkv_be *ns[NKV_TGT_MAX_NS + 1];	/* index = nsid */
	/* Namespace changes (ns.c writes under its lock, poll threads read
	 * with acquire): ns_gen counts them; ns_changed[nsid] is the ns_gen
	 * of nsid's last one, stored before ns_gen so that a reader that
	 * loads ns_gen sees every change up to it (log page 04h). */
	uint64_t ns_gen;
	uint64_t ns_changed[NKV_TGT_MAX_NS + 1];
	/* Holders of nsid's backend (nkv_subsys_ns_get): a command from
	 * lookup to completion, Identify while it fills. Removal waits for 0. */
	uint32_t ns_refs[NKV_TGT_MAX_NS + 1];
	/* Who hears of a change (a transport's wake-up; ns.c, its lock). */
	struct nkv_subsys_listener {
		void (*fn)(void *arg);
		void *arg;
	} listen[NKV_SUBSYS_LISTENERS];
	/* Access rules, owners, metering (tenant/tenant.h). */
	struct nkv_tenants *tenants;
};

struct nkv_tgt_exec_call;

/* One fetched command, from SQE fetch to CQE post. */
struct nkv_tgt_cmd {
	struct nkv_be_op op;		/* what the backend sees */
	struct nkv_tgt_ctrl *ctrl;
	struct nkv_tgt_cmd *next;	/* hand-off stack, CQ pending or free list */
	struct nkv_tgt_cmd *iprev;	/* in-flight list (dma_busy, destroy) */
	struct nkv_tgt_req *req;	/* a capsule transport's request, or NULL:
					 * data from req->iov, result to req->done */
	struct nkv_tgt_cmd *inext;
	struct nkv_be *be;		/* I/O: its namespace, held (ns_refs) until
					 * completion; NULL: none held */
	struct nkv_sqe sqe;
	uint64_t epoch;			/* the SQ's epoch at fetch */
	uint64_t bytes;			/* payload moved on success (stats) */
	uint16_t sqid;
	uint16_t cqid;
	uint16_t status;
	uint32_t dw0;
	/* The data, for the backend helpers (be_data.c) and the transfer
	 * layer (xfer.c); written by one thread at a time: the poll thread
	 * until submit, the backend until done(). */
	uint64_t produced;		/* bytes of the buffer written (List: header too) */
	uint32_t list_count;		/* List: entries added */
	uint8_t list;			/* a KV List: header and DW0 at the end */
	uint8_t stable;			/* every segment's pages cannot vanish */
	uint8_t fault;			/* a client page vanished under a copy */
	uint8_t msg_out;		/* data to send out by message at completion */
	uint8_t near;			/* counted in ctrl->near (nkv_be_wait_near) */
	struct nkv_tgt_exec_call *exec_call;	/* a forwarded Exec's input
						 * (io_exec.c), freed at completion */
	int iovcnt;
	/* iov_inline, or a heap array (iov_heap) while a command whose
	 * data is scattered over more segments is in flight */
	struct iovec *iov;
	int iov_cap;			/* entries iov holds */
	uint8_t iov_heap;
	struct iovec iov_inline[NKV_TGT_IOV_INLINE];
};

struct nkv_tgt_sq {
	int live;
	uint16_t cqid;
	uint32_t size;
	uint32_t head;
	uint32_t tail;
	uint32_t last_db;		/* last tail doorbell value seen */
	uint64_t iova;
	uint64_t epoch;			/* unique per creation: stale completions drop */
	struct nkv_sqe *ring;
	int stable;			/* ring in NKV_DMA_STABLE memory: no guard */
};

struct nkv_tgt_cq {
	int live;
	uint32_t size;
	uint32_t head;
	uint32_t tail;
	uint32_t phase;
	uint32_t last_db;
	uint32_t nsq;			/* SQs that complete here */
	uint32_t outstanding;		/* fetched, CQE not yet posted */
	uint64_t iova;
	uint64_t epoch;
	struct nkv_cqe *ring;
	int stable;			/* ring in NKV_DMA_STABLE memory: no guard */
	struct nkv_tgt_cmd *pend_head;	/* completions waiting for a free slot */
	struct nkv_tgt_cmd *pend_tail;
};

struct nkv_tgt_ctrl {
	struct nkv_subsys *ss;
	struct nkv_dma *dma;
	volatile uint32_t *db;
	uint32_t ndb;			/* doorbells (2 per queue pair) */
	uint32_t dstrd;			/* CAP.DSTRD: doorbell i is db[i << dstrd] */
	uint32_t mqes;			/* entries, not 0's based */
	uint32_t max_ioq;
	uint32_t mdts;
	uint32_t to;
	uint16_t cntlid;
	uint32_t max_iov;		/* segments of one command: pages + 1 */
	uint64_t max_xfer;		/* bytes: 4 KiB << mdts */
	uint32_t quirks;		/* NKV_TGT_QUIRK_* */
	uint32_t sgls;			/* Identify SGLS advertised */
	uint32_t kml;			/* KML advertised */

	/* Register file. */
	uint64_t cap;
	uint32_t cc;
	uint32_t csts;
	uint32_t aqa;
	uint64_t asq;
	uint64_t acq;
	uint32_t page_size;
	int shutting_down;
	int bus_master;			/* PCI Bus Master Enable: may DMA */
	const char *failed;		/* why CSTS.CFS was set, NULL if not */
	int mem_lost;			/* a client page vanished (SIGBUS caught) */
	nkv_tgt_xfer_fn xfer;		/* moves data of NKV_DMA_MSG regions */
	void *xfer_ctx;

	/* Queues: index = qid, 0 = admin. */
	struct nkv_tgt_sq *sq;
	struct nkv_tgt_cq *cq;
	uint32_t nsq_granted;
	uint32_t ncq_granted;
	uint32_t rr;			/* next I/O SQ for round robin */
	uint16_t *ioq_live;		/* qids of the live I/O SQs, any order */
	uint32_t nioq_live;
	uint32_t npend;			/* results on the CQs' pending lists */
	uint64_t next_epoch;

	/* Features. */
	uint32_t kv_config;

	/* Capsule transports (req.h): no rings, no doorbells. */
	int capsule;
	int dropping;			/* being destroyed: results go nowhere */
	struct nkv_tgt_fab *fab;	/* the fabric that created it (fabrics.c) */
	uint8_t *qconn;			/* index = qid: a connection holds it */
	uint32_t kato_ms;		/* Keep Alive Timeout from Connect; 0: none */
	uint64_t ka_last_ns;		/* last Keep Alive (or the Connect) */
	char hostnqn[256];
	char local_traddr[64];		/* "" unless the transport set it */
	uint8_t local_adrfam;
	struct nkv_tgt_cmd *aer_head;	/* held Asynchronous Event Requests */
	struct nkv_tgt_cmd *aer_tail;
	uint32_t naer;
	/* Events no AER was held for: sent with the next AERs, oldest first. */
	uint32_t aen_pend[NKV_TGT_AERL];
	uint32_t naen_pend;
	uint32_t aec;			/* Asynchronous Event Configuration (NKV_AEC_*) */
	/* The subsystem's namespace changes (ss->ns_gen) as this controller
	 * has handled them: up to ns_log_gen read and cleared from log page
	 * 04h; up to ns_aen_gen noticed (or passed over, notices off). */
	uint64_t ns_log_gen;
	uint64_t ns_aen_gen;
	int ns_aen_masked;		/* a notice sent, the log not read yet */

	/* Commands. */
	struct nkv_tgt_cmd *free_cmds;
	uint32_t nfree;			/* on free_cmds */
	struct nkv_tgt_cmd *inflight_head;
	uint32_t inflight;
	uint32_t near;			/* of them, completions near (nkv_be_wait_near) */
	struct nkv_tgt_cmd *handoff;	/* lock-free stack, any thread pushes */
	struct nkv_tgt_cmd *done_head;	/* completed inline during submit, in */
	struct nkv_tgt_cmd *done_tail;	/* order: the poll thread's own list */
	int wake_fd;			/* eventfd: a completion for a sleeping poller */
	int sleeping;			/* the poll thread is (about to be) asleep */
	int pushers;			/* done() calls still touching this struct */

	/* Logs and counters. */
	struct nkv_error_log errlog[NKV_TGT_ERRLOG];
	uint64_t err_count;
	struct nkv_tgt_qstats *qstats;	/* index = qid */
	uint64_t bytes_read;		/* controller -> host, for SMART */
	uint64_t bytes_written;
	uint64_t host_reads;
	uint64_t host_writes;

	/* Who the client is (access.c): its transport tells; its view of
	 * the access rules, made at acc_gen (UINT64_MAX: not yet), one byte
	 * (enum nkv_access) per nsid; its tenant entry per nsid (made at
	 * its first command there). */
	struct nkv_tenant_who who;
	uint64_t acc_gen;
	uint8_t acc[NKV_TGT_MAX_NS + 1];
	struct nkv_tenant_acct *tacct[NKV_TGT_MAX_NS + 1];

	/* Trace (off: one branch per event). */
	int trace;
	nkv_tgt_trace_fn trace_fn;
	void *trace_arg;
};

/* regs.c */
void nkv_tgt_regs_init(struct nkv_tgt_ctrl *c);
void nkv_tgt_ctrl_reset(struct nkv_tgt_ctrl *c);

/* queue.c */
/* Create I/O queue qid of entries slots at iova (pc: physically
 * contiguous, the only kind offered). 0 or an NVMe status. */
uint16_t nkv_tgt_cq_create(struct nkv_tgt_ctrl *c, uint16_t qid, uint32_t entries,
			   int pc, uint64_t iova);
uint16_t nkv_tgt_sq_create(struct nkv_tgt_ctrl *c, uint16_t qid, uint32_t entries,
			   int pc, uint16_t cqid, uint64_t iova);
int nkv_tgt_queue_mem(struct nkv_tgt_ctrl *c, uint64_t iova, uint64_t bytes,
		      uint32_t prot, void **ptr, int *stable);
int nkv_tgt_queues_poll(struct nkv_tgt_ctrl *c);
int nkv_tgt_cq_flush(struct nkv_tgt_ctrl *c, uint16_t cqid);
void nkv_tgt_cq_delete(struct nkv_tgt_ctrl *c, uint16_t qid);
void nkv_tgt_sq_delete(struct nkv_tgt_ctrl *c, uint16_t qid);

/* handoff.c */
void nkv_tgt_handoff_push(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd);
int nkv_tgt_handoff_drain(struct nkv_tgt_ctrl *c);
void nkv_tgt_be_done(struct nkv_be_op *op);
/* nkv_be_submit from the poll thread: a done() during it stays local. */
int nkv_tgt_be_submit(struct nkv_tgt_ctrl *c, struct nkv_be *be, struct nkv_be_op *op);
/* Around one SQ's burst of submits: end polls the backends that left ops
 * for later (nkv_be_poll_later), their done()s local as in submit. */
void nkv_tgt_burst_begin(struct nkv_tgt_ctrl *c);
void nkv_tgt_burst_end(struct nkv_tgt_ctrl *c);

/* ctrl.c: command lifetime */
struct nkv_tgt_cmd *nkv_tgt_cmd_get(struct nkv_tgt_ctrl *c);
void nkv_tgt_cmd_put(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd);
void nkv_tgt_complete(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd);
void nkv_tgt_mem_lost(struct nkv_tgt_ctrl *c);

/* xfer.c: the command's data between the client and its segments. */
/* Resolve the data pointer (PRPs or an SGL, len bytes) into cmd->iov;
 * the first rd_head bytes (a key head) need read access whatever prot
 * says; data in message-only memory comes in now (NKV_DMA_READ) or goes
 * out at completion. 0 or an NVMe status. */
int nkv_tgt_cmd_dptr(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd,
		     uint64_t len, uint32_t prot, uint64_t rd_head);
/* The first n bytes of the resolved data into dst (brought in first
 * where they lie in message-only memory). 0 or Data Transfer Error. */
uint16_t nkv_tgt_cmd_peek(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd, void *dst,
			  uint64_t n);
/* Drop the first n bytes from cmd->iov (a key head read: what follows
 * is the backend's data, from offset 0). */
void nkv_tgt_cmd_skip(struct nkv_tgt_cmd *cmd, uint64_t n);
/* Send the cmd->produced bytes that lie in message-only memory to the
 * client (once; nothing when none do). 0 or Data Transfer Error. */
uint16_t nkv_tgt_xfer_out(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd);

/* be_data.c: the data state behind backend.h's helpers. Also what a test
 * that drives a backend on its own calls around each op. */
/* Before submit: a KV List (list) gets its payload header reserved. */
void nkv_tgt_data_start(struct nkv_tgt_cmd *cmd, int list);
/* After done(): a List's header and DW0 (the count); a fault recorded by
 * a helper fails the op with Data Transfer Error. */
void nkv_tgt_data_end(struct nkv_tgt_cmd *cmd);

/* admin.c */
/* Complete (capsule) or drop (rings) every held AER with status. */
void nkv_tgt_aer_flush(struct nkv_tgt_ctrl *c, uint16_t status);
/* Start c's view of the subsystem's namespace changes at "now" (create). */
void nkv_tgt_aen_init(struct nkv_tgt_ctrl *c);
void nkv_tgt_admin_exec(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd);

/* io_kv.c / io_nvm.c: validate, resolve, submit (or complete with error). */
void nkv_tgt_io_exec(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd);
void nkv_tgt_io_finish(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd);
uint16_t nkv_tgt_kv_prep(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd,
			 struct nkv_be *be);
uint16_t nkv_tgt_nvm_prep(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd,
			  struct nkv_be *be);
/* A key head's length field (io_kv.c), as far as the data reaches. */
uint16_t nkv_tgt_kv_head_len(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd, uint32_t *klen);
/* io_exec.c: an Exec command, checked and handed to the Exec room, or
 * completed with its error. */
void nkv_tgt_exec_cmd(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd, struct nkv_be *be);
/* A forwarded Exec's input freed (at completion; nothing without one). */
void nkv_tgt_exec_release(struct nkv_tgt_cmd *cmd);

/* access.c */
void nkv_tgt_access_refresh(struct nkv_tgt_ctrl *c);
/* The Connect's host NQN (c->hostnqn) is the client's identity now. */
void nkv_tgt_access_hostnqn(struct nkv_tgt_ctrl *c);
/* A new I/O command for cmd->sqe.nsid: 0 (and op.owner set), or
 * Invalid Namespace when the client may not use it (counted, logged). */
uint16_t nkv_tgt_access_check(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd);
/* May the client write nsid (rw)? */
int nkv_tgt_access_writes(struct nkv_tgt_ctrl *c, uint32_t nsid);

/* c's access to nsid now (rw out of range: the caller answers that). */
static inline enum nkv_access nkv_tgt_access(struct nkv_tgt_ctrl *c, uint32_t nsid)
{
	if (nkv_tenants_gen(c->ss->tenants) != c->acc_gen)
		nkv_tgt_access_refresh(c);
	return nsid && nsid <= NKV_TGT_MAX_NS ? (enum nkv_access)c->acc[nsid] : NKV_ACCESS_RW;
}

/* fabrics.c */
/* A Fabrics command (opcode 7Fh) on a capsule controller's queue:
 * Property Get/Set, a second Connect. Completes req. */
void nkv_tgt_fab_cmd(struct nkv_tgt_ctrl *c, struct nkv_tgt_req *req);
/* The Discovery log page of c's fabric into a new buffer (*size bytes,
 * the caller frees). 0 or an NVMe status. */
uint16_t nkv_tgt_fab_disc_log(struct nkv_tgt_ctrl *c, uint8_t **buf, uint64_t *size);

/* stats.c */
void nkv_tgt_stat_cmd(struct nkv_tgt_ctrl *c, const struct nkv_tgt_cmd *cmd);
void nkv_tgt_errlog_add(struct nkv_tgt_ctrl *c, const struct nkv_tgt_cmd *cmd);
void nkv_tgt_tracef(struct nkv_tgt_ctrl *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define NKV_TGT_TRACE(c, ...)					\
	do {							\
		if ((c)->trace)					\
			nkv_tgt_tracef((c), __VA_ARGS__);	\
	} while (0)

/* The backend of namespace nsid, NULL when none is attached there.
 * Acquire: one attached while controllers serve (ns.c) is seen whole.
 * Unheld: only for a caller that holds nsid already (nkv_subsys_ns_get),
 * since namespace_remove may destroy it under anyone else. */
static inline struct nkv_be *nkv_tgt_ns(const struct nkv_tgt_ctrl *c, uint32_t nsid)
{
	return nsid && nsid <= NKV_TGT_MAX_NS ? __atomic_load_n(&c->ss->ns[nsid], __ATOMIC_ACQUIRE)
					      : NULL;
}

/*
 * Hold namespace nsid's backend while using it: NULL when none is
 * attached (or it is being removed). The count goes up before the slot
 * is read, both sequentially consistent, as ns.c's removal clears the
 * slot before it reads the count: one of the two sees the other, so a
 * holder never meets a destroyed backend. Any thread; short.
 */
static inline struct nkv_be *nkv_subsys_ns_get(struct nkv_subsys *ss, uint32_t nsid)
{
	struct nkv_be *be;

	if (!nsid || nsid > NKV_TGT_MAX_NS)
		return NULL;
	__atomic_add_fetch(&ss->ns_refs[nsid], 1, __ATOMIC_SEQ_CST);
	be = __atomic_load_n(&ss->ns[nsid], __ATOMIC_SEQ_CST);
	if (!be)
		__atomic_sub_fetch(&ss->ns_refs[nsid], 1, __ATOMIC_RELEASE);
	return be;
}

/* Let go of what nkv_subsys_ns_get returned (release: every use before). */
static inline void nkv_subsys_ns_put(struct nkv_subsys *ss, uint32_t nsid)
{
	__atomic_sub_fetch(&ss->ns_refs[nsid], 1, __ATOMIC_RELEASE);
}

/* Append @cmd to the list *head..*tail (the poll thread's own lists). */
static inline void nkv_tgt_cmd_append(struct nkv_tgt_cmd **head, struct nkv_tgt_cmd **tail,
				      struct nkv_tgt_cmd *cmd)
{
	cmd->next = NULL;
	if (*tail)
		(*tail)->next = cmd;
	else
		*head = cmd;
	*tail = cmd;
}

/* Doorbell @idx (2 qid: SQ tail, 2 qid + 1: CQ head) in the page. */
static inline volatile uint32_t *nkv_tgt_dbp(const struct nkv_tgt_ctrl *c, uint32_t idx)
{
	return &c->db[(size_t)idx << c->dstrd];
}

static inline uint16_t nkv_tgt_sc(uint8_t sc)
{
	return NKV_STATUS(NKV_SCT_GENERIC, sc);
}

static inline uint16_t nkv_tgt_cs(uint8_t sc)
{
	return NKV_STATUS(NKV_SCT_CMD_SPECIFIC, sc);
}

#endif /* NKV_TGT_CORE_H */
