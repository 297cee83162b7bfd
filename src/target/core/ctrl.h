/* SPDX-License-Identifier: MIT */
/*
 * ctrl.h - nkv-target's NVMe controller core, transport-independent.
 *
 * A subsystem holds the namespaces (each with its backend) and is shared by
 * every controller. A controller is one client's view: register file,
 * admin queue, I/O queues, its own DMA space. The transport creates one
 * controller per connection, forwards BAR0 register accesses to it, and
 * calls nkv_tgt_ctrl_poll() from one thread (the controller's poll thread)
 * to fetch commands and post completions.
 *
 * Threading: every nkv_tgt_ctrl_* call on one controller comes from that
 * one poll thread; backends complete from any thread.
 */
#ifndef NKV_TGT_CTRL_H
#define NKV_TGT_CTRL_H

#include <stdint.h>

#include "backend.h"
#include "dma.h"

struct nkv_subsys;
struct nkv_tgt_ctrl;

/* Moves data of a message-only region: nkv_tgt_ctrl_set_xfer(). */
typedef int (*nkv_tgt_xfer_fn)(void *ctx, uint64_t iova, void *buf, uint64_t len,
			       int to_client);

struct nkv_subsys_opts {
	size_t size;		/* sizeof(struct nkv_subsys_opts) */
	const char *serial;	/* Identify SN; NULL: a default */
	const char *model;	/* Identify MN; NULL: "nkv-target" */
	const char *subnqn;	/* NULL: a default */
};

struct nkv_subsys *nkv_subsys_create(const struct nkv_subsys_opts *opts);
/* Attach a backend as namespace nsid (1..NKV_TGT_MAX_NS). The subsystem
 * owns it from now on and destroys it with the subsystem. */
int nkv_subsys_add_ns(struct nkv_subsys *ss, uint32_t nsid, struct nkv_be *be);
void nkv_subsys_destroy(struct nkv_subsys *ss);

#define NKV_TGT_MAX_NS 32

/*
 * Transfer sizes. One command moves at most 4 KiB << MDTS bytes; MDTS
 * goes up to NKV_TGT_MDTS_MAX (128 MiB). A value's transfer keeps
 * NKV_TGT_KEY_HEAD bytes of room for the head a key longer than 16 bytes
 * will take ([u16 length][key up to 255 bytes], carried in the data
 * buffer), so the largest value a KV namespace may declare is
 * NKV_TGT_MAX_VALUE. nkv-target and the embedded target give a KV
 * namespace NKV_TGT_DEF_MAX_VALUE unless told otherwise.
 */
#define NKV_TGT_MDTS_MAX 15u
#define NKV_TGT_MDTS_MIN 8u		/* 1 MiB: what List and NVM keep */
#define NKV_TGT_KEY_HEAD 257u
#define NKV_TGT_MAX_VALUE ((NKV_PAGE_SIZE << NKV_TGT_MDTS_MAX) - NKV_TGT_KEY_HEAD)
#define NKV_TGT_DEF_MAX_VALUE (64u << 20)

/*
 * The MDTS a controller of ss gets when its options leave it 0: the
 * smallest whose transfer holds the largest max value of ss's KV
 * namespaces plus NKV_TGT_KEY_HEAD, at least NKV_TGT_MDTS_MIN, at most
 * NKV_TGT_MDTS_MAX. Read when a controller is created: namespaces
 * attached later do not change it.
 */
uint32_t nkv_subsys_mdts(struct nkv_subsys *ss);

struct nkv_tgt_ctrl_opts {
	size_t size;		/* sizeof(struct nkv_tgt_ctrl_opts) */
	uint32_t mqes;		/* max queue entries (CAP.MQES + 1); 0: 1024 */
	uint32_t max_ioq;	/* I/O queue pairs granted; 0: 64 */
	uint32_t mdts;		/* Identify MDTS (2^n pages), at most
				 * NKV_TGT_MDTS_MAX; 0: nkv_subsys_mdts() */
	uint32_t to;		/* CAP.TO in 500 ms units; 0: 20 (10 s) */
	uint16_t cntlid;
	int trace;		/* log SQEs, doorbells, CQEs */
	uint32_t quirks;	/* NKV_TGT_QUIRK_*: 0 for a well-behaved controller */
	/* CAP.DSTRD, 0..4: doorbells 4 << dstrd bytes apart. 0 packs them
	 * (16 to a cache line); 4 gives each a 64-byte line of its own, so
	 * the client's CQ head writes never pull the line the controller
	 * polls for SQ tails (docs/target.md). The doorbell page passed to
	 * create holds 2 * (max_ioq + 1) << dstrd dwords. */
	uint32_t dstrd;
	/* What Identify advertises as another controller would, for testing
	 * clients against it (tests/lib/host_util.h); the core still takes
	 * what it always takes. sgls: Identify Controller SGLS; 0: 40001h
	 * (SGLs of any alignment, longer than the data allowed). kml: every
	 * KV namespace's KML; 0: NKV_KEY_MAX. */
	uint32_t sgls;
	uint32_t kml;
};
/* opts (NULL: all defaults) with the defaults above applied, for a
 * program that reports what its controllers run with; mdts 0 stays 0
 * (nkv_subsys_mdts()). 0, or -EINVAL when a value is out of range. */
int nkv_tgt_ctrl_opts_resolve(const struct nkv_tgt_ctrl_opts *o, struct nkv_tgt_ctrl_opts *out);

/* The DSTRD that gives each doorbell a 64-byte cache line of its own: what
 * nkv-target and nkv-bench's embedded target use. */
#define NKV_TGT_DSTRD_LINE 4u

/*
 * Misbehaviours of controllers met in the field, reproduced on request so
 * that clients can be tested against them (tests/host does).
 * NO_CSI_DESC: the Namespace Identification Descriptor list of an NVM
 * namespace leaves out the Command Set Identifier descriptor.
 * FAIL_ON_READY: enabling sets CSTS.RDY and CSTS.CFS together and the
 * controller goes on serving commands, as one that failed for a cause it
 * does not stop for (issue 19: CSTS 0x3 on every connect).
 * FAIL_ON_CREATE_SQ: the same, set while completing (successfully) a
 * Create I/O Submission Queue: a controller that fails in use.
 */
#define NKV_TGT_QUIRK_NO_CSI_DESC (1u << 0)
#define NKV_TGT_QUIRK_FAIL_ON_READY (1u << 1)
#define NKV_TGT_QUIRK_FAIL_ON_CREATE_SQ (1u << 2)

/*
 * doorbells: the doorbell page(s) at BAR0 + 0x1000, 2 * (max_ioq + 1)
 * dwords; the transport may place them in memory the client maps (a
 * vfio-user sparse-mmap area), so the controller reads them as memory
 * that another agent writes.
 */
struct nkv_tgt_ctrl *nkv_tgt_ctrl_create(struct nkv_subsys *ss,
					 struct nkv_dma *dma,
					 volatile uint32_t *doorbells,
					 const struct nkv_tgt_ctrl_opts *opts);
/* Fail or finish in-flight commands, then free the controller. */
void nkv_tgt_ctrl_destroy(struct nkv_tgt_ctrl *c);

/* BAR0 register file, including doorbell writes that arrive as messages.
 * size is 4 or 8. Unknown offsets read as 0 and ignore writes. */
uint64_t nkv_tgt_ctrl_reg_read(struct nkv_tgt_ctrl *c, uint32_t off, unsigned size);
void nkv_tgt_ctrl_reg_write(struct nkv_tgt_ctrl *c, uint32_t off, uint64_t val, unsigned size);
/*
 * The PCI function's Bus Master Enable, as the transport's config space
 * holds it (on at create: a transport without PCI semantics never clears
 * it). While it is clear the controller makes no memory request: an SQE
 * to fetch or a CQE to post fails the controller instead (CSTS.CFS), as a
 * device whose DMA is refused does. Data of commands a backend already
 * holds is not stopped.
 */
void nkv_tgt_ctrl_set_bus_master(struct nkv_tgt_ctrl *c, int on);

/*
 * Data in client memory reachable only by messages (regions mapped
 * NKV_DMA_MSG, dma.h). The controller works on the region's local shadow
 * and calls fn on its poll thread to move bytes: to_client 0 fills
 * [buf, buf + len) from the client's [iova, iova + len) before a command
 * that reads host data is submitted (Store, Write); to_client 1 sends the
 * bytes a command produced (Retrieve, List, Read, admin data) before its
 * CQE is queued, so a completion never overtakes its data. fn returns 0
 * or a negative errno; any failure ends the command with Data Transfer
 * Error. Without fn such commands fail the same way.
 */
void nkv_tgt_ctrl_set_xfer(struct nkv_tgt_ctrl *c, nkv_tgt_xfer_fn fn, void *ctx);
/* Fail the controller: CSTS.CFS set, no fetching and no posting until a
 * reset (CC.EN 1->0). why (a string that outlives the controller) is kept
 * for the transport's log. */
void nkv_tgt_ctrl_fail(struct nkv_tgt_ctrl *c, const char *why);
/* Why the controller failed since its last reset, or NULL. */
const char *nkv_tgt_ctrl_failed(const struct nkv_tgt_ctrl *c);
/*
 * Did a page of the client's memory vanish under one of the controller's
 * accesses (a truncated or hole-punched DMA fd: SIGBUS, caught by
 * memguard.h)? The command that touched it completes with Data Transfer
 * Error, if its CQ is still reachable; the transport should then drop the
 * client: its memory cannot be trusted to be there.
 */
int nkv_tgt_ctrl_lost_memory(const struct nkv_tgt_ctrl *c);
/* Size of BAR0 the transport should expose (registers + doorbells):
 * nkv_tgt_bar0_layout.size for the controller's options. */
uint32_t nkv_tgt_ctrl_bar0_size(const struct nkv_tgt_ctrl *c);

/* BAR0 of a controller: registers below db_offset, then its doorbells. */
struct nkv_tgt_bar0_layout {
	uint32_t db_offset;	/* first doorbell: NKV_REG_DBS */
	uint32_t db_stride;	/* bytes between doorbells: 4 << CAP.DSTRD */
	uint32_t db_bytes;	/* 2 * (max_ioq + 1) doorbells */
	uint32_t size;		/* all of it, a power of two (a PCI BAR) */
};
/*
 * BAR0's layout for a controller created with opts (defaults applied as
 * nkv_tgt_ctrl_create applies them), without creating one: a transport
 * sizes the memory holding BAR0 with it. 0, or -EINVAL for options
 * nkv_tgt_ctrl_create refuses.
 */
int nkv_tgt_ctrl_layout(const struct nkv_tgt_ctrl_opts *opts, struct nkv_tgt_bar0_layout *out);

/* One pass: state changes, doorbells, command fetch, backend hand-off,
 * CQE posting. Returns how much work it did (0 = idle), so the caller can
 * back off to sleeping when idle. */
int nkv_tgt_ctrl_poll(struct nkv_tgt_ctrl *c);
/*
 * Sleeping between polls. The transport may sleep (up to its poll
 * interval: doorbells in shared memory wake nobody) only between
 * nkv_tgt_ctrl_sleep_begin() returning 1 and nkv_tgt_ctrl_sleep_end(),
 * and should then also wait for nkv_tgt_ctrl_wake_fd() to become
 * readable: a backend completing a command writes it. sleep_begin()
 * returns 0 when a completion is already waiting (do not sleep; no
 * sleep_end needed).
 */
int nkv_tgt_ctrl_wake_fd(const struct nkv_tgt_ctrl *c);
int nkv_tgt_ctrl_sleep_begin(struct nkv_tgt_ctrl *c);
void nkv_tgt_ctrl_sleep_end(struct nkv_tgt_ctrl *c);

/*
 * Command objects are cached for reuse, so a burst leaves its high-water
 * mark behind (each object is about 360 bytes with room for a few
 * segments; a command whose data is scattered over more holds a heap
 * array only while in flight). Free all but keep of them; returns how
 * many stay cached. The poll thread calls it when it goes idle
 * (nkv_tgt_poller_next() does: poller.h).
 */
#define NKV_TGT_CMD_KEEP 32
uint32_t nkv_tgt_ctrl_trim(struct nkv_tgt_ctrl *c, uint32_t keep);

/* Commands fetched whose completion is not yet posted. */
uint32_t nkv_tgt_ctrl_inflight(const struct nkv_tgt_ctrl *c);
/* Those of them at work (at the backend, or being served): all but the
 * held Asynchronous Event Requests, which wait for an event that may
 * never come. The poller's measure of "commands at the backend". */
uint32_t nkv_tgt_ctrl_at_work(const struct nkv_tgt_ctrl *c);
/* Of those, the ones whose backend said their completion is near
 * (nkv_be_wait_near): the poll thread stays awake for them. */
uint32_t nkv_tgt_ctrl_near(const struct nkv_tgt_ctrl *c);
/* Is [iova, iova+len) used by a queue or an in-flight command? The
 * transport refuses to unmap such memory. */
int nkv_tgt_ctrl_dma_busy(const struct nkv_tgt_ctrl *c, uint64_t iova, uint64_t len);

/*
 * Namespace changes the subsystem recorded since c last looked (ns.h's
 * nkv_tgt_ns_changed): a Namespace Attribute Changed notice completes a
 * held AER when Asynchronous Event Configuration bit 8 is set and no
 * notice awaits its log page 04h read; without a held AER it waits for
 * the next one. Called by the transport on c's poll thread when told of
 * a change (nkv_subsys_ns_listen); the core calls it itself at each AER
 * and each log page 04h read. Returns 1 when a notice was sent.
 */
int nkv_tgt_ctrl_ns_events(struct nkv_tgt_ctrl *c);

/*
 * Tenants (issue 48, src/target/tenant/tenant.h). A vfio-user transport
 * gives each controller its peer's credentials (SO_PEERCRED) before the
 * first command; an NVMe/TCP one's identity is the Connect's host NQN
 * (the core takes it itself). On c's poll thread.
 */
void nkv_tgt_ctrl_set_peer(struct nkv_tgt_ctrl *c, uint32_t uid, uint32_t gid);
/* c's tenant id (0: none known), and its peer's uid and gid (NULL: not
 * wanted). Any thread once set. */
uint64_t nkv_tgt_ctrl_tenant(const struct nkv_tgt_ctrl *c, uint32_t *uid, uint32_t *gid);
/* ss's access rules, owners and metering (tenant.h). */
struct nkv_tenants *nkv_subsys_tenants(struct nkv_subsys *ss);

#endif /* NKV_TGT_CTRL_H */
