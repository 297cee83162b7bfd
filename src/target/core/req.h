/* SPDX-License-Identifier: MIT */
/*
 * req.h - the transport-neutral request: how a capsule transport (NVMe
 * over Fabrics: NVMe/TCP) drives the controller core.
 *
 * A memory transport (vfio-user) lets the controller fetch SQEs from rings
 * in client memory and walk PRPs/SGLs there (ctrl.h). A capsule transport
 * has no rings, no doorbells and no client memory to map: it receives a
 * command with its data in PDUs. So it hands the core a request, the SQE
 * plus the data buffers it owns (iovecs), and gets the result back
 * through req->done(): status and CQE DW0/DW1, and how many bytes the
 * command produced into the buffers for the transport to send back. This
 * is SPDK nvmf's transport / controller / backend split (spdk_nvmf_request)
 * and Linux nvmet's nvmet_req: the core owns the command, transports embed
 * the request and move its bytes.
 *
 * It is a header of its own (not ctrl.h) because only capsule transports
 * need it, and the fabrics controller model (Connect, controller IDs, keep
 * alive) comes with it; vfio-user never sees any of this.
 *
 * Threading: as ctrl.h: every call on one controller (and on the fabric
 * object, which creates and finds controllers) comes from one poll thread;
 * done() runs on that thread, possibly inside nkv_tgt_ctrl_exec().
 */
#ifndef NKV_TGT_REQ_H
#define NKV_TGT_REQ_H

#include <stdint.h>
#include <sys/uio.h>

#include "ctrl.h"
#include "nkv_wire.h"

#define NKV_TGT_REQ_IOV 8	/* data buffers one request may give */
/* In-capsule data a command may carry: Identify IOCCSZ says the I/O
 * queues' (a small Store, a key head, goes in one PDU); the admin queue
 * takes 8 KiB (Connect's 1 KiB data arrives there). */
#define NKV_TGT_ICD_IO (16u << 10)
#define NKV_TGT_ICD_ADMIN (8u << 10)

struct nkv_tgt_req {
	/* In, set by the transport. */
	struct nkv_sqe sqe;	/* as the host sent it; the data pointer
				 * (SGL1) is the transport's business */
	uint16_t qid;		/* 0: admin, else the I/O queue */
	/* The command's data in the core's view: host-to-controller bytes
	 * already received (a Store value; a key head in front of a
	 * Retrieve's buffer), then room for what the controller returns.
	 * Buffers of the transport's; the core never touches anything else. */
	struct iovec iov[NKV_TGT_REQ_IOV];
	int iovcnt;
	void (*done)(struct nkv_tgt_req *req);
	void *ctx;		/* the transport's */
	/* 1: the transport sends what the controller returns from memory
	 * of the backend's when it lends some (backend.h nkv_be_lend). */
	int can_lend;

	/* Out, set before done(). */
	uint16_t status;	/* NKV_STATUS(sct, sc); 0 = success */
	uint32_t dw0;
	uint32_t dw1;		/* Property Get of an 8-byte property */
	uint64_t produced;	/* bytes written into the data, from the
				 * first byte after a key head */
	/* A loan instead of written data (can_lend): the produced bytes are
	 * at lent; the transport calls lent_release(lent_ctx) once they are
	 * out or will never go, whatever the status. NULL: none. */
	const void *lent;
	void (*lent_release)(void *ctx);
	void *lent_ctx;
};

/*
 * A controller for a capsule transport: no rings, no doorbells, no DMA
 * space. Property Get/Set reach its register file; CC.EN = 1 makes it
 * ready without creating queues (the transport's connections are the
 * queues). max_ioq bounds the I/O queue IDs that may connect.
 */
struct nkv_tgt_ctrl *nkv_tgt_ctrl_create_capsule(struct nkv_subsys *ss,
						 const struct nkv_tgt_ctrl_opts *opts);

/*
 * Run one command. 0: accepted, req->done() follows (maybe before this
 * returns; an Asynchronous Event Request is held until an event or the
 * controller's end). -EINVAL: not a capsule controller, qid out of range
 * or iovcnt above NKV_TGT_REQ_IOV; done() is not called.
 * The request belongs to the core until done(); the transport must not
 * free it, or its buffers, before (nkv_tgt_ctrl_destroy() returns every
 * request without calling done()).
 */
int nkv_tgt_ctrl_exec(struct nkv_tgt_ctrl *c, struct nkv_tgt_req *req);

/*
 * Keep Alive (KATO from the admin Connect, ms; 0 = none): has the host
 * sent no Keep Alive (or the Connect) for longer than KATO at now_ns
 * (CLOCK_MONOTONIC: nkv_tgt_now_ns(), poller.h)? The transport then ends the association.
 */
int nkv_tgt_ctrl_kato_expired(const struct nkv_tgt_ctrl *c, uint64_t now_ns);

#define NKV_TGT_AERL 4u		/* AERs held at most (Identify AERL + 1) */
/* Held Asynchronous Event Requests: how many are held now. */
uint32_t nkv_tgt_ctrl_aers(const struct nkv_tgt_ctrl *c);
/*
 * Complete the oldest held AER with dw0 (an event: type, info, log page;
 * nkv_aen_dw0()); with none held the event waits for the next AER, up to
 * NKV_TGT_AERL of them. NKV_AEN_NS_CHANGED is nkv_tgt_ctrl_ns_events()
 * (ctrl.h): the subsystem's record of changes decides, so one posted
 * while another waits is not lost. 0, or -ENOSPC: AERL events wait.
 */
int nkv_tgt_ctrl_aer_event(struct nkv_tgt_ctrl *c, uint32_t dw0);

/* The host NQN recorded at the admin Connect ("" before). */
const char *nkv_tgt_ctrl_hostnqn(const struct nkv_tgt_ctrl *c);
uint16_t nkv_tgt_ctrl_cntlid(const struct nkv_tgt_ctrl *c);
/* The address (family NKV_NVMF_ADRFAM_*) the host reached this
 * controller's admin queue at, set by the transport after Connect: what
 * the Discovery log page says for a port listening on a wildcard address
 * (0.0.0.0, ::), which no host can connect to. */
void nkv_tgt_ctrl_set_local_addr(struct nkv_tgt_ctrl *c, uint8_t adrfam, const char *traddr);

/*
 * The fabric: the controllers of the dynamic controller model, and the
 * subsystems a transport's hosts may connect to (the discovery subsystem
 * included). A transport holds one per poll thread's worth of
 * associations; Connect goes through it:
 *
 *  - an admin Connect (QID 0) to a known subsystem NQN creates a capsule
 *    controller with a fresh CNTLID, records the host NQN and KATO;
 *  - an I/O Connect (QID > 0) joins the controller of its CNTLID, only
 *    with the same host NQN and subsystem NQN, only once per QID, and
 *    only while the controller is enabled and ready.
 */
struct nkv_tgt_fab;

/* A port, as the Discovery log page lists it. */
struct nkv_tgt_port {
	uint16_t portid;
	uint8_t adrfam;		/* NKV_NVMF_ADRFAM_* */
	char traddr[64];
	char trsvcid[16];
};

struct nkv_tgt_fab *nkv_tgt_fab_create(struct nkv_subsys *ss,
				       const struct nkv_tgt_ctrl_opts *opts);
/* Controllers still alive are destroyed. */
void nkv_tgt_fab_destroy(struct nkv_tgt_fab *f);
/* List a port on the Discovery log page (up to 16). 0, -ENOSPC. */
int nkv_tgt_fab_add_port(struct nkv_tgt_fab *f, const struct nkv_tgt_port *port);

/*
 * Connect: req holds the Connect SQE (QID, SQSIZE, KATO) and data the
 * 1 KiB Connect data. On success (req->status 0) *ctrl is the
 * controller this queue now belongs to and req->dw0 its CNTLID; else
 * req->status says why (Connect Invalid Parameters with DW0 naming the
 * field, Invalid Host, ...). done() is not called: the transport sends
 * the response itself. Returns 0, or -EINVAL for a req that is not a
 * Connect.
 */
int nkv_tgt_fab_connect(struct nkv_tgt_fab *f, struct nkv_tgt_req *req,
			const void *data, uint32_t len, struct nkv_tgt_ctrl **ctrl);
/* A queue of c's went away (its connection closed). When the admin queue
 * goes, the controller is destroyed: the association ends. */
void nkv_tgt_fab_disconnect(struct nkv_tgt_fab *f, struct nkv_tgt_ctrl *c, uint16_t qid);

#endif /* NKV_TGT_REQ_H */
