/* SPDX-License-Identifier: MIT */
/*
 * nkv_host.h - the nkv host library: everything slow.
 *
 * Connects to an NVMe-KV controller by URI, brings it up over its admin
 * queue, creates I/O queue pairs, places their rings, doorbells and value
 * buffers in host RAM or device memory by the memory-mode mask, and hands
 * device code a plain descriptor of each queue pair (struct nkv_dev_qp in
 * nkv_dev.h; the host never dereferences one it gave to a GPU). A small
 * synchronous API serves tools, tests and CPU programs with the same
 * semantics as the device path, and the same error code per mistake.
 *
 * Conventions: every function returns 0 (or a count) on success and a
 * negative errno on failure; an NVMe status is never turned into an errno:
 * it travels unchanged in struct nkv_result. Handles are opaque.
 *
 * Concurrency: a struct nkv_ctrl may be used from any thread, calls are
 * serialised inside. A queue pair is owned by one user at a time: one wave
 * of device code, or one host thread using the synchronous API.
 */
#ifndef NKV_HOST_H
#define NKV_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "nkv_wire.h"	/* NKV_STORE_* options, NVMe status helpers */
#include "nkv_errno.h"	/* enum nkv_qp_state */

#ifdef __cplusplus
extern "C" {
#endif

struct nkv_ctrl;
struct nkv_qpair;
struct nkv_dev_qp;

/* Memory-mode mask: which structures live in device memory ("VRAM"). */
#define NKV_MEM_SQ 0x1u		/* submission queue ring */
#define NKV_MEM_CQ 0x2u		/* completion queue ring */
#define NKV_MEM_DB 0x4u		/* doorbell shadow page (forwarder) */
#define NKV_MEM_DATA 0x8u	/* value buffers: values land in VRAM */
#define NKV_MEM_ALL 0xfu

struct nkv_ctrl_opts {
	size_t size;		/* sizeof(struct nkv_ctrl_opts) */
	uint32_t memory_mode;	/* NKV_MEM_* mask */
	uint32_t io_queues;	/* queue pairs to request; 0: 1 */
	uint32_t admin_depth;	/* 0: 32 */
	uint32_t timeout_ms;	/* admin commands and bring-up, and the I/O
				 * default of its queue pairs; 0: CAP.TO, and
				 * for I/O at least the namespace's advertised
				 * command time + max(2 s, 25 %) (docs/host.md,
				 * "Timeouts") */
	int trace;		/* trace admin commands and doorbells (nkv_set_log) */
	char *err;		/* if set, a one-line reason on failure */
	size_t errlen;
	uint32_t flags;		/* NKV_CTRL_*; read when size covers it */
	uint32_t nsid;		/* the namespace to use; 0: the first KV one,
				 * else the first NVM one. Read when size
				 * covers it; not active or neither KV nor
				 * NVM: -ENODEV, said in err */
};

/*
 * Value buffers (memory-mode bit 0x8) are registered without a file
 * descriptor, and the controller reaches them through the transport's
 * messages (vfio-user DMA_READ/WRITE, served by the library's socket
 * thread) instead of mapping them: the path for device memory the
 * controller's process cannot map. Without a GPU the device arena then
 * behaves so, which lets CI drive the path. vfio-user only (pcie:
 * -EOPNOTSUPP); needs bit 0x8 (-EINVAL). nkv_qpair_info.by_messages says
 * which parts took it.
 */
#define NKV_CTRL_VALUES_BY_MESSAGES 0x1u
/*
 * Send every key in head form ([u16 length][key] at the head of the data
 * buffer, CDW11 KL = 0), the short ones too, on every queue pair: for
 * controllers that read keys only from there (rados-nkv's forwarder).
 * Without it keys of 1..16 bytes travel inline and longer ones in head
 * form. Per queue pair: NKV_QPAIR_KEY_HEAD.
 */
#define NKV_CTRL_KEY_HEAD 0x2u

/*
 * Connect to the controller at uri and bring it up:
 *   "vfio-user:/run/nkv.sock"     a vfio-user controller
 *   "pcie:/dev/nkv0", "pcie:0000:02:00.0"   a device bound to nkv.ko
 *   "tcp:HOST:PORT[/NQN]"        a remote NVMe/TCP KV controller (no NQN:
 *                                the first NVM subsystem discovery lists),
 *                                through a local controller libnkv runs
 *                                (libnkv-tcp.so; namespace 1 forwards to
 *                                the remote's namespace 1; docs/tcp.md)
 * Finds the first Key Value namespace (or, failing that, an NVM one),
 * or uses opts->nsid.
 * opts may be NULL for defaults. 0 or a negative errno:
 * -EINVAL bad URI or options, -EPROTONOSUPPORT unknown scheme,
 * -ECONNREFUSED / -ENOENT nobody listening, -EPROTO protocol mismatch,
 * -ETIMEDOUT the controller did not become ready within CAP.TO,
 * -ENODEV no usable namespace; tcp: -ENOENT the plugin not found, or
 * the remote's error (-ECONNREFUSED, -ETIMEDOUT, -EREMOTEIO).
 */
int nkv_ctrl_connect(const char *uri, const struct nkv_ctrl_opts *opts,
		     struct nkv_ctrl **out);
/* Delete the queue pairs, shut the controller down, unregister memory. */
void nkv_ctrl_close(struct nkv_ctrl *c);

struct nkv_ctrl_info {
	uint64_t cap;		/* CAP register */
	uint32_t vs;		/* VS register */
	uint32_t mqes;		/* max entries per queue (CAP.MQES + 1) */
	uint32_t max_xfer;	/* bytes per command (MDTS), 0 = no limit */
	uint32_t io_queues;	/* queue pairs the controller granted */
	uint32_t nsid;		/* the namespace in use */
	uint8_t csi;		/* its command set: 1 = KV, 0 = NVM */
	uint32_t max_key;	/* KV: longest key the controller takes (its
				 * KV format's KML, at most 255; 16 when it
				 * reports none) */
	uint32_t max_value;	/* KV: largest value */
	uint32_t max_keys;	/* KV: 0 = not reported */
	uint32_t block_size;	/* NVM: bytes per block */
	uint64_t capacity;	/* KV: bytes; NVM: blocks */
	uint32_t memory_mode;	/* as placed */
	int doorbells_mapped;	/* 1: device code writes real doorbells;
				 * 0: a forwarder copies a shadow page */
	int vram_is_emulated;	/* 1: "VRAM" is a host arena (no GPU) */
	char gpu[16];		/* GPU runtime: "cuda", "hip", or "emulated"
				 * (built without one: device memory is host
				 * RAM and the cpu engine plays the GPU) */
	int gpu_error;		/* 0, or why the built runtime has no GPU
				 * (-ENODEV): device queue pairs are refused */
	char transport[16];
	char model[41];
	char serial[21];
	uint32_t sgls;		/* Identify Controller SGLS (NKV_SGLS_*): value
				 * slots send SGL1 when its bits 1:0 are 01b */
};
/* Copy what bring-up found (any thread). 0 or -EINVAL. */
int nkv_ctrl_get_info(struct nkv_ctrl *c, struct nkv_ctrl_info *info);

/* One active namespace of a controller, as Identify describes it. */
struct nkv_ns_info {
	uint32_t nsid;
	int32_t csi;		/* 1 = KV, 0 = NVM, another set, or -1 unknown */
	uint32_t max_key;	/* KV: longest key */
	uint32_t max_value;	/* KV: largest value */
	uint32_t max_keys;	/* KV: 0 = not reported */
	uint32_t block_size;	/* NVM: bytes per block */
	uint64_t capacity;	/* KV: bytes (NSZE); NVM: blocks */
};

/*
 * What a KV namespace honours beyond the KV command set: its NSATTR and
 * the vendor bytes of its KV Identify Namespace (nkv_wire.h struct
 * nkv_kv_vs). A controller that does not fill those advertises nothing
 * (advertised = 0), and the library then refuses every vendor Store
 * option for it (-EOPNOTSUPP) rather than let it be ignored.
 */
struct nkv_ns_ext {
	size_t size;		/* sizeof(struct nkv_ns_ext) */
	uint32_t nsid;
	uint32_t advertised;	/* 1: the vendor bytes are filled */
	uint32_t store_opts;	/* NKV_STORE_VENDOR_MASK bits honoured */
	uint32_t max_ttl;	/* longest TTL, seconds; 0: any */
	uint32_t read_only;	/* 1: Store and Delete are refused */
	uint32_t size_query;	/* 1: Retrieve with a 0-byte buffer returns the size */
	uint32_t cmd_timeout_ms; /* the longest a command may take before the
				 * controller answers it with a status of its
				 * own (its backend's timeout); 0: not said.
				 * The library's default I/O wait leaves a
				 * margin past it (docs/host.md, "Timeouts") */
	uint32_t exec;		/* 1: Exec (83h) is served (nkv_exec()); each
				 * op-ID still needs an allowlist entry */
};
/* Namespace nsid's extensions (0: the one in use). 0, -EINVAL, -ENODEV
 * (no such KV namespace) or a transport error. ext->size as the caller
 * was built: one built before cmd_timeout_ms gets the fields it knows.
 * Takes the controller's lock. */
int nkv_ctrl_ns_ext(struct nkv_ctrl *c, uint32_t nsid, struct nkv_ns_ext *ext);

/*
 * Every active namespace (Identify CNS 02h) with its command set and
 * limits, up to max entries in out, as the controller has them now (read
 * afresh at each call: namespaces added or removed while connected
 * show). Returns how many are active (may be more than max), or a
 * negative errno. Takes the controller's lock.
 */
int nkv_ctrl_namespaces(struct nkv_ctrl *c, struct nkv_ns_info *out, size_t max);

/*
 * Has the namespace list changed since the last call? While the
 * controller advertises Namespace Attribute Notices (Identify OAES bit
 * 8) the library keeps one Asynchronous Event Request on the admin
 * queue. It has no admin-queue thread: the notice is met lazily, by this
 * call, nkv_ctrl_namespaces() or any admin command, which read log page
 * 04h (so the controller notices the next change) and send the AER
 * again. 1: changed (call nkv_ctrl_namespaces), 0: not, -EOPNOTSUPP: the
 * controller sends no such notices, -ENOTCONN, -EINVAL. Any thread;
 * takes the controller's lock.
 */
int nkv_ctrl_ns_changed(struct nkv_ctrl *c);

/* Debug trace of the library (admin commands, registrations, sync
 * commands), process-wide; also NKV_TRACE=1 in the environment. */
void nkv_set_trace(int on);

/* Where the library's one-line messages go (why a setting was refused, a
 * controller that went away, the trace): @fn(ctx, line), one whole line
 * without its newline, from any thread, one call at a time; @fn must not
 * call the library. Process-wide. NULL, the default: the library writes
 * nothing on its own; the lines go to stderr, prefixed "nkv: ", only
 * when NKV_LOG=stderr (or NKV_LOG=1) is in the environment or the trace
 * is on (nkv_set_trace, NKV_TRACE=1, nkv_ctrl_opts.trace). The nkv
 * programs and examples set a callback that prints them that way. */
typedef void (*nkv_log_fn)(void *ctx, const char *line);
void nkv_set_log(nkv_log_fn fn, void *ctx);

struct nkv_qpair_opts {
	size_t size;		/* sizeof(struct nkv_qpair_opts) */
	uint32_t depth;		/* SQ and CQ entries; 0: min(256, MQES) */
	uint32_t slots;		/* value buffers; 0: depth - 1 */
	uint32_t slot_size;	/* bytes per value buffer; 0: 4096 */
	uint64_t poll_budget;	/* empty polls before device code gives up
				 * (NKV_ETIMEDOUT); 0: no count, time only */
	uint32_t timeout_ms;	/* wall clock without a completion before a
				 * wait gives up, in the synchronous API and in
				 * device code (nkv_dev_qp.timeout_us);
				 * 0: the controller's I/O default (struct
				 * nkv_ctrl_opts); one shorter than the
				 * namespace's command time is kept, and
				 * logged */
	uint32_t flags;		/* NKV_QPAIR_* */
	uint32_t memory_mode;	/* NKV_MEM_SQ / _CQ / _DATA placed in device
				 * memory for this queue pair, on top of the
				 * controller's memory mode (NKV_MEM_DB is the
				 * controller's alone: -EINVAL) */
};

/* Every key in head form on this queue pair (NKV_CTRL_KEY_HEAD for one). */
#define NKV_QPAIR_KEY_HEAD 0x1u
/* PRPs only, even where the controller takes SGLs. */
#define NKV_QPAIR_PRP_ONLY 0x2u
/* No value slots (opts->slots must be 0): values move only through memory
 * regions (nkv_store_mr() and friends, nkv_mr.h from device code); the
 * per-command memory for key heads and lists is still made. Without the
 * flag, slots 0 keeps meaning depth - 1. */
#define NKV_QPAIR_NO_SLOTS 0x4u
/* Report a Retrieve whose stored value is longer than its buffer as
 * short: the synchronous API returns -EMSGSIZE with the true length in
 * DW0 / *vlen (the prefix landed), device code gets err NKV_EMSGSIZE.
 * Without it such a Retrieve is success, as the KV command set says. */
#define NKV_QPAIR_REPORT_SHORT 0x8u
/*
 * Create an I/O queue pair for host use (the synchronous API, and the
 * cpu engine running device code on host threads): CQ then SQ over the
 * admin queue, with its rings, value slots and PRP lists placed by the
 * controller's memory mode and opts->memory_mode. Each slot has a page of
 * head room below its value for a key in head form (docs/host.md, "Slot
 * layout"). opts may be NULL. 0,
 * -EINVAL (depth outside 2..MQES, unknown flags, a memory-mode bit that is not
 * the queue pair's), -EMSGSIZE (slot_size above min(MDTS, max value)),
 * -EBUSY (every granted queue id in use), -ENOTCONN (controller dead),
 * -EOPNOTSUPP (a memory-mode bit the GPU does not honour, docs/gpu.md),
 * -ENOMEM, or a transport or GPU runtime error.
 */
int nkv_qpair_create(struct nkv_ctrl *c, const struct nkv_qpair_opts *opts,
		     struct nkv_qpair **out);
/*
 * The same for device code, in one call: the queue pair in *out and the
 * descriptor a kernel receives in *dev. Its descriptor, CID bitmap,
 * completion and slot tables live in device memory (the GPU runtime's;
 * the emulated runtime's host memory in a build without one), so *dev is
 * a device pointer the host never dereferences (nkv_qpair_get_info() and
 * nkv_qpair_get_stats() say what the host may know). The synchronous API
 * refuses such a queue pair (-EOPNOTSUPP). Errors as nkv_qpair_create(),
 * and -ENODEV when the GPU runtime found no GPU (nkv_ctrl_info.gpu_error).
 */
int nkv_qpair_create_dev(struct nkv_ctrl *c, const struct nkv_qpair_opts *opts,
			 struct nkv_qpair **out, struct nkv_dev_qp **dev);
/* Delete it (SQ then CQ) and free its memory. NULL is a no-op. */
void nkv_qpair_destroy(struct nkv_qpair *q);
/* The descriptor device code receives (valid until destroy): a host
 * pointer for nkv_qpair_create()'s queue pairs (the cpu engine's lanes
 * use it), the device pointer nkv_qpair_create_dev() gave for the
 * others. Either way it is device code's to read and write. */
struct nkv_dev_qp *nkv_qpair_dev(struct nkv_qpair *q);

/* Where a part of a queue pair lives. */
enum nkv_place {
	NKV_PLACE_HOST = 0,		/* host RAM, host use only */
	NKV_PLACE_HOST_MAPPED = 1,	/* host RAM registered with the GPU */
	NKV_PLACE_DEVICE = 2,		/* GPU memory */
	NKV_PLACE_EMULATED = 3,		/* "device memory" that is host RAM
					 * (no GPU: the arena / emulated runtime) */
};

struct nkv_qpair_info {
	size_t size;		/* sizeof(struct nkv_qpair_info) */
	uint32_t qid;
	uint32_t depth;
	uint32_t slots;
	uint32_t slot_size;
	uint32_t device;	/* 1: made by nkv_qpair_create_dev() */
	uint32_t memory_mode;	/* NKV_MEM_* bits placed in device memory */
	uint32_t sq;		/* enum nkv_place of each part */
	uint32_t cq;
	uint32_t values;
	uint32_t doorbells;	/* the words device code writes */
	uint32_t bookkeeping;	/* descriptor, CID bitmap, completion and slot tables */
	int doorbells_mapped;	/* 1: the controller's own page; 0: a forwarded shadow */
	uint32_t by_messages;	/* NKV_MEM_* bits of the parts the controller
				 * reaches by messages (vfio-user DMA_READ/
				 * WRITE), not by mapping them: values under
				 * NKV_CTRL_VALUES_BY_MESSAGES; 0: all mapped */
	uint32_t sgl;		/* 1: value slots send SGL1 (one Data Block);
				 * 0: PRPs */
	uint32_t key_head;	/* 1: every key in head form; 0: keys of
				 * 17+ bytes only */
	uint32_t timeout_ms;	/* the I/O wait it got: the one asked for,
				 * or the default ("Timeouts", docs/host.md) */
	uint32_t cmds;		/* per-command memory blocks device code may
				 * use (nkv_dev_qp.nr_cmds) */
	uint32_t dptr;		/* NKV_DEV_DPTR_* (nkv_dev.h): what region
				 * commands may send beside PRPs */
	uint32_t flags;		/* NKV_QPAIR_* it was made with */
	/* What crosses the network: "" when nothing does (vfio-user, pcie);
	 * for a tcp: URI "tcp: HOST:PORT nqn NQN, via a local controller"
	 * (the rings, slots and doorbells above are the local controller's;
	 * only commands' keys and values travel, docs/tcp.md). */
	char remote[192];
};
/* Say truthfully where each part lives (any thread). info->size as the
 * caller was built: one built before by_messages existed gets the fields
 * it knows. 0 or -EINVAL. */
int nkv_qpair_get_info(struct nkv_qpair *q, struct nkv_qpair_info *info);
/* Any thread, any time, also while a kernel runs: NKV_QP_OK (0), or why
 * device code or the synchronous API failed the queue pair (enum
 * nkv_qp_state, nkv_errno.h), the first reason. Reads the host-visible
 * word device code mirrors the reason to, never the descriptor (which a
 * GPU runtime may keep in device memory). NKV_QP_FAILED_GONE is the
 * library's own: a thread per controller watches for its loss (a closed
 * vfio-user connection; pcie registers reading all-ones or CSTS.CFS) and
 * marks every queue pair still OK within about 10 ms; device waits then
 * end with NKV_ENOTCONN, the synchronous API with -ENOTCONN
 * (docs/host.md, "A controller that is gone"). Cleared by
 * nkv_qpair_reset(). */
enum nkv_qp_state nkv_qpair_failed(struct nkv_qpair *q);
/* "controller gone: ...", "timed out: ...": what a queue pair state
 * means, for messages. Never NULL. */
const char *nkv_qp_state_str(enum nkv_qp_state state);
/* Value buffer i: where device code or the caller reads and writes. */
void *nkv_qpair_slot(struct nkv_qpair *q, uint32_t i, uint32_t *len);
/* Re-create a queue pair that device code (or the sync API) marked
 * failed: delete and re-create both queues, zero rings, CIDs and the
 * descriptor state. No wave may use it meanwhile. 0, or -ENOTCONN /
 * -ETIMEDOUT / -EIO (it then stays failed). */
int nkv_qpair_reset(struct nkv_qpair *q);

/*
 * Per-queue counters, kept by the host (docs/host.md, "Counters"):
 * commands, bytes, errors, by_status and timeouts count the synchronous
 * API. Doorbells: with a forwarder, every doorbell write that reached the
 * controller (device code's and the sync API's), and fwd_submitted /
 * fwd_completed the SQ / CQ entries those writes moved; with mapped
 * doorbells device code's stores go straight to the controller, so only
 * the sync API's doorbells are counted and the fwd_* fields stay 0.
 */
struct nkv_qpair_stats {
	uint64_t commands;
	uint64_t bytes;		/* value / List bytes moved */
	uint64_t sq_doorbells;
	uint64_t cq_doorbells;
	uint64_t errors;	/* completions with a non-zero status */
	uint64_t timeouts;
	uint64_t by_status[16];	/* generic statuses 80h-8Fh: [sc - 0x80];
				 * e.g. [7] Key Does Not Exist (87h) */
	uint64_t other_status;	/* every other non-zero status */
	uint64_t fwd_submitted;
	uint64_t fwd_completed;
	/* Kept by device code in the descriptor (its own doorbell writes:
	 * the host cannot see mapped ones). Read while no kernel runs on it. */
	uint64_t dev_commands;
	uint64_t dev_sq_doorbells;
	uint64_t dev_cq_doorbells;
};
/* Read the counters (any thread; flushes the forwarder first). */
int nkv_qpair_get_stats(struct nkv_qpair *q, struct nkv_qpair_stats *st);

/* ---- synchronous API (one host thread per queue pair) ---- */

/* What a command returned: NVMe status as sent by the controller
 * (SCT << 8 | SC, 0 = success) and DW0 (Retrieve: the full value size). */
struct nkv_result {
	uint16_t status;
	uint32_t dw0;
};

/*
 * Each call returns 0 when the command completed (whatever its NVMe
 * status, see res), or a negative errno when it could not be sent or did
 * not complete, the same code the device builders give for the same
 * mistake (nkv_errno.h): -EINVAL bad key length (0 except List, or longer
 * than nkv_ctrl_info.max_key: logged with the limit) or options (NKV_STORE_* of nkv_wire.h),
 * -EOPNOTSUPP a vendor Store option (NKV_STORE_TTL, _EPHEMERAL, _TOUCH)
 * the namespace does not advertise (logged, naming it and the advertised
 * set; nkv_store() takes them as nkv_store_ttl() does), -EMSGSIZE value larger than the
 * controller's maximum or the buffer, -ETIMEDOUT no completion in time
 * (the queue pair is then failed until nkv_qpair_reset), -ENOTCONN the
 * controller is gone (nkv_qpair_failed() says NKV_QP_FAILED_GONE; seen
 * within milliseconds, also mid-wait), -EIO the queue pair is failed
 * otherwise. A wait polls for its first 20 us, then sleeps between polls
 * (an eighth of the time waited, 10 us to 1 ms): it costs a fraction of
 * a core however long the controller takes.
 */
int nkv_store(struct nkv_qpair *q, const void *key, uint32_t klen,
	      const void *val, uint32_t len, uint32_t options,
	      struct nkv_result *res);
/*
 * A Store with the rados-nkv dialect's options: @options may add
 * NKV_STORE_TTL (@ttl_s seconds, 1..), NKV_STORE_EPHEMERAL and
 * NKV_STORE_TOUCH (refresh the key's TTL; @val NULL, @len 0) to the
 * standard bits. A vendor bit the namespace does not advertise
 * (nkv_ns_ext.store_opts) is -EOPNOTSUPP, before anything is sent;
 * NKV_STORE_TTL with @ttl_s 0, or @ttl_s without NKV_STORE_TTL, -EINVAL.
 */
int nkv_store_ttl(struct nkv_qpair *q, const void *key, uint32_t klen,
		  const void *val, uint32_t len, uint32_t options, uint32_t ttl_s,
		  struct nkv_result *res);
/* Touch: refresh an existing key's TTL (@ttl_s 0: restart its own TTL;
 * else set a new one), its value unchanged; 87h when it is absent. */
int nkv_touch(struct nkv_qpair *q, const void *key, uint32_t klen, uint32_t ttl_s,
	      struct nkv_result *res);
/* Retrieve into buf (buflen bytes); DW0 = the stored size, which may
 * exceed buflen (a prefix came). buflen 0 (buf may be NULL) is a size
 * query: DW0 = the stored size, nothing transferred, on a namespace with
 * nkv_ns_ext.size_query (one without answers Invalid Value Size, 85h). */
int nkv_retrieve(struct nkv_qpair *q, const void *key, uint32_t klen,
		 void *buf, uint32_t buflen, struct nkv_result *res);
int nkv_delete(struct nkv_qpair *q, const void *key, uint32_t klen,
	       struct nkv_result *res);
int nkv_exist(struct nkv_qpair *q, const void *key, uint32_t klen,
	      struct nkv_result *res);
/*
 * Exec (83h, docs/exec.md): run the module the namespace's allowlist
 * binds to @op_id against the value of @key (1..255 bytes) on the
 * controller, with @ilen bytes of input; up to @ocap bytes of its result
 * into @out, *@olen = the result's true length (more than @ocap: the
 * result was truncated, not failed). Returns 0; a positive NVMe status
 * (SCT << 8 | SC, as the controller sent it: the call has no struct
 * nkv_result) such as 87h (no such key) or SCT 1h's C0h not allowlisted,
 * C1h digest mismatch, C2h budget exceeded, C3h module error; or a
 * negative errno: -EINVAL (bad arguments), -EOPNOTSUPP (the namespace
 * does not advertise Exec), -EMSGSIZE (the buffer, max(2 + klen + ilen,
 * ocap), exceeds one transfer). One caller per queue pair at a time.
 */
int nkv_exec(struct nkv_qpair *q, const void *key, uint32_t klen, uint32_t op_id,
	     const void *in, uint32_t ilen, void *out, uint32_t ocap, uint32_t *olen);
/* List keys from start (klen 0: from the beginning) into buf, in the List
 * payload format (nkv_wire.h). */
int nkv_list(struct nkv_qpair *q, const void *start, uint32_t klen,
	     void *buf, uint32_t buflen, struct nkv_result *res);

/*
 * Memory regions (docs/host.md, "Memory regions"): the caller's memory,
 * registered once for every queue pair of the controller, so values land
 * where the application wants them instead of in a queue pair's slots.
 * How the controller reaches a region depends on the transport: pcie pins
 * any page-aligned memory and the device DMAs into it; vfio-user's
 * controller maps memory it is given an fd for (nkv_mem_register_fd(),
 * nkv_mem_alloc()) and reaches other memory only by messages (vfio-user
 * DMA_READ / DMA_WRITE, served by the library's socket thread, a copy
 * each way), which the caller must allow with NKV_MEM_MESSAGES: without
 * it such a registration is refused (-EOPNOTSUPP, with a line saying
 * why), never turned into copies in silence. nkv_mem_info() says which.
 * Regions are the controller's: any thread may register and deregister
 * (serialised inside); a region is used by any queue pair of it.
 */
struct nkv_mr;
#define NKV_MEM_READ 0x10u	/* the controller may read it: Stores from it */
#define NKV_MEM_WRITE 0x20u	/* the controller may write it: Retrieves into it
				 * (neither: both) */
#define NKV_MEM_MESSAGES 0x40u	/* may be reached by the transport's messages
				 * where it cannot be shared as it is */
/* GPU memory of the build's runtime (a cudaMalloc / hipMalloc pointer):
 * nkv_mem_register() reaches it over vfio-user by messages the library
 * serves with the runtime's copies (NKV_MEM_MESSAGES required), over pcie
 * as a dma-buf the runtime exports and nkv.ko imports; nkv_mem_alloc()
 * allocates it (*addr a device pointer). -ENODEV without a GPU runtime;
 * the emulated runtime (no GPU) takes host memory as its device memory. */
#define NKV_MEM_DEVICE 0x80u
/*
 * Register [addr, addr + len) (page aligned; the controller maps whole 4
 * KiB pages). 0, -EINVAL (alignment, flags; logged), -EOPNOTSUPP
 * (vfio-user and no NKV_MEM_MESSAGES: the memory has no fd the controller
 * could map; logged), -ENOTCONN, or the transport's error (a pcie pin
 * over its limit: -ENOMEM).
 */
int nkv_mem_register(struct nkv_ctrl *c, void *addr, size_t len, uint32_t flags,
		     struct nkv_mr **out);
/*
 * The same for memory the caller mapped MAP_SHARED from @fd at @fd_off
 * (a memfd, a file, hugetlbfs): the controller maps the fd too. @fd stays
 * the caller's (the controller holds its own reference while mapped);
 * @fd_off page aligned and the fd at least @fd_off + @len bytes long
 * (-EINVAL). On pcie the pages are pinned by address as for
 * nkv_mem_register().
 */
int nkv_mem_register_fd(struct nkv_ctrl *c, int fd, uint64_t fd_off, void *addr, size_t len,
			uint32_t flags, struct nkv_mr **out);
/* Allocate @len bytes (rounded up to pages, zeroed, host RAM the
 * controller maps: a sealed memfd) and register them; the address in
 * *addr, freed by nkv_mem_deregister(). */
int nkv_mem_alloc(struct nkv_ctrl *c, size_t len, uint32_t flags, struct nkv_mr **out,
		  void **addr);
/*
 * Deregister (and free what nkv_mem_alloc() allocated). -EBUSY (logged,
 * nothing changed) while a synchronous command uses the region or a host
 * queue pair of the controller has commands in flight (device code's
 * commands are not tracked per region: let kernels that use it end
 * first). NULL: 0.
 */
int nkv_mem_deregister(struct nkv_mr *mr);

struct nkv_mr_info {
	size_t size;		/* sizeof(struct nkv_mr_info) */
	void *addr;
	size_t len;
	uint32_t flags;		/* NKV_MEM_READ / _WRITE as registered */
	uint32_t by_messages;	/* 1: the controller reaches it by messages */
	uint32_t contiguous;	/* 1: one run of controller addresses */
	uint32_t prp_table;	/* 1: it has a PRP table (3 pages or more) */
	uint32_t device;	/* 1: GPU memory (NKV_MEM_DEVICE) */
};
/* What a region is and how the controller reaches it. 0 or -EINVAL. */
int nkv_mem_info(struct nkv_mr *mr, struct nkv_mr_info *info);
/* The region's descriptor for device code (nkv_mr.h; valid until
 * deregistered): a host pointer the cpu engine reads, a device pointer
 * where the library was built with a GPU runtime. */
const struct nkv_dev_mr *nkv_mem_dev(struct nkv_mr *mr);

/* One run of a value: @len bytes at byte @off of region @mr. */
struct nkv_iov {
	struct nkv_mr *mr;
	size_t off;
	uint32_t len;
};
/*
 * Synchronous commands whose value is in regions (the sync API's rules:
 * one host thread on a queue pair from nkv_qpair_create()). Each returns
 * 0, the NVMe status as the controller sent it (> 0: 0x87 Key Does Not
 * Exist, 0x81 full; nkv_status_str() names it), or a negative errno:
 * -EINVAL for a key, a run or options the command cannot carry (logged,
 * naming the run: outside its region, registered without the direction,
 * boundaries a PRP-only or dword-SGL controller cannot describe; nothing
 * is sent), -EMSGSIZE for a total over the controller's limit, and the
 * sync API's -ETIMEDOUT / -ENOTCONN / -EIO. @n 1..NKV_IOV_MAX runs.
 */
int nkv_store_mr(struct nkv_qpair *q, const void *key, uint32_t klen, uint32_t opts,
		 struct nkv_mr *mr, size_t off, uint32_t len);
int nkv_store_iov(struct nkv_qpair *q, const void *key, uint32_t klen, uint32_t opts,
		  const struct nkv_iov *iov, uint32_t n);
/* Retrieve into a range or runs; *vlen (may be NULL) = DW0, the stored
 * size, which may exceed the buffer (a prefix landed, in run order; under
 * NKV_QPAIR_REPORT_SHORT that is -EMSGSIZE, *vlen still set). */
int nkv_retrieve_mr(struct nkv_qpair *q, const void *key, uint32_t klen, struct nkv_mr *mr,
		    size_t off, uint32_t len, uint32_t *vlen);
int nkv_retrieve_iov(struct nkv_qpair *q, const void *key, uint32_t klen,
		     const struct nkv_iov *iov, uint32_t n, uint32_t *vlen);
/*
 * The host batch API (docs/host.md, "Batches"): many Store, Retrieve,
 * Exist and Delete commands on one host queue pair (nkv_qpair_create())
 * with as few SQ doorbells as the queue allows (one when the batch fits
 * the queue's free entries: depth - 1 less what is in flight), waited for
 * all together, any one, or one by one, each with its own outcome. The
 * values are ranges or runs of registered regions, as nkv_store_mr() and
 * nkv_retrieve_iov() take them: no copy. The cpu engine's and a GPU's
 * batches are device code (nkv_dev.h); this is the same machinery for a
 * host thread, exported so that programs without inline device code
 * (bindings over the shared library: the Python package) can batch.
 *
 * Command memory: the batch API uses the queue pair's blocks 0..nr_cmds-1
 * (device code's) and the synchronous calls their own last block, so a
 * host thread may mix both on one queue pair; device code (the cpu
 * engine's lanes) must not use a queue pair while batch commands are in
 * flight on it. One host thread at a time per queue pair, as the
 * synchronous API.
 */
struct nkv_batch_cmd {
	/* Set by the caller. */
	uint8_t opc;		/* NKV_KV_STORE, _RETRIEVE, _EXIST or _DELETE */
	uint8_t rsvd0[3];
	uint32_t opts;		/* Store: NKV_STORE_* as nkv_store_ttl() takes
				 * them (TTL, EPHEMERAL too; no TOUCH) */
	uint32_t ttl_s;		/* Store with NKV_STORE_TTL: seconds */
	uint32_t klen;
	const void *key;
	const struct nkv_iov *iov;	/* Store / Retrieve: the value's runs;
					 * NULL: the one range mr, off, len */
	uint32_t n_iov;		/* runs in iov, 1..NKV_IOV_MAX */
	uint32_t len;		/* the range's bytes (iov NULL) */
	struct nkv_mr *mr;
	uint64_t off;
	/* Filled by the library. */
	int32_t err;		/* 0, the NVMe status (> 0), or a negative
				 * errno, as nkv_store_mr() returns them;
				 * -EMSGSIZE a short Retrieve reported
				 * (NKV_QPAIR_REPORT_SHORT) */
	uint32_t dw0;		/* Retrieve: the stored size */
	uint32_t state;		/* NKV_BATCH_* */
	uint16_t cid;		/* in flight under this CID (the ticket) */
	uint16_t cmd;		/* its command-memory block */
};
#define NKV_BATCH_IDLE 0u	/* not submitted (or refused before sending,
				 * then done: see err) */
#define NKV_BATCH_INFLIGHT 1u
#define NKV_BATCH_DONE 2u
/*
 * Send @n commands. A command the library refuses before sending (key,
 * runs, options: the reasons nkv_store_mr() gives, logged) is done at
 * once with its err; the others go in, in order, a doorbell per run of
 * commands the queue takes at once: when @n is more than the free entries,
 * it waits for earlier commands (this call's or an earlier one's) to
 * complete and files their outcomes. @cmds must stay valid until each is
 * done. Returns how many went in, or a negative errno when the queue pair
 * cannot take any (-EINVAL, -EOPNOTSUPP for a device queue pair,
 * -ENOTCONN / -EIO / -ETIMEDOUT failed: the commands not sent then carry
 * that err and are done).
 */
int nkv_batch_submit(struct nkv_qpair *q, struct nkv_batch_cmd *cmds, uint32_t n);
/*
 * Wait until at least @min of @cmds[0..n) are done (n: all of them; 1:
 * any; one command: by its ticket; 0: reap what has come without
 * waiting), filing every completion of the queue pair's batch commands
 * into its own command as it comes. Returns how many of the @n are done,
 * or a negative errno: the synchronous API's -ETIMEDOUT (no completion
 * within the queue pair's timeout: it is failed, and every command still
 * in flight on it is done with err -ETIMEDOUT), -ENOTCONN, -EIO, and the
 * commands in flight then carry that err.
 */
int nkv_batch_wait(struct nkv_qpair *q, struct nkv_batch_cmd *cmds, uint32_t n, uint32_t min);
/* Submit and wait for all: how many went in, or a negative errno. */
int nkv_batch_run(struct nkv_qpair *q, struct nkv_batch_cmd *cmds, uint32_t n);

/* "outside its region", ...: what enum nkv_run_why (nkv_mr.h) means, for
 * messages about device code's NKV_EINVAL. Never NULL. */
const char *nkv_run_why_str(uint32_t why);

/* Human-readable name of an NVMe status ("Key Does Not Exist"). */
const char *nkv_status_str(uint16_t status);
/* 1 when status says the namespace is read-only: Attempted Write to Read
 * Only Range (SCT 1h, SC 82h, as rados-nkv answers) or Namespace is Write
 * Protected (generic 20h) alike; else 0. */
int nkv_status_read_only(uint16_t status);

#ifdef __cplusplus
}
#endif

#endif /* NKV_HOST_H */
