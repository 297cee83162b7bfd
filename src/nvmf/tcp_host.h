/* SPDX-License-Identifier: MIT */
/*
 * tcp_host.h - nkv's NVMe/TCP initiator (issue 45): the room both the
 * forwarding backend (src/target/backends/nvmf.c) and, later, the
 * library's tcp: URIs use. PDUs and digests are src/nvme-tcp/'s; Fabrics
 * commands are fabrics.h's.
 *
 * A queue (struct nkv_nvmf_q) is one TCP connection: ICReq/ICResp, then a
 * Connect for the admin queue (qid 0) or an I/O queue of a controller. An
 * association (struct nkv_nvmf_assoc) is a controller: its admin queue,
 * enabled (CC.EN, CSTS.RDY), and one I/O queue.
 *
 * Thread model: a queue, and an association, belong to one thread at a
 * time (the caller's); nothing here starts a thread or takes a lock. The
 * owner submits any number of commands (up to the queue's depth, each a
 * CID of its own) and reaps completions; R2Ts are answered while reaping.
 * Keep Alive is the owner's to send: nkv_nvmf_assoc_keep_alive() at least
 * every KATO/2 (nkv_nvmf_assoc_ka_due() says when).
 *
 * Every wait has a deadline (opts.timeout_ms): a remote that does not
 * answer ends the association with -ETIMEDOUT, never a hang. Everything
 * received is checked before memory moves (the common header by
 * nkv_tcp_ch_check, then the CID, the transfer's range and order, the
 * digests); a violation sends an H2CTermReq, ends the association, fails
 * every command in flight with -EPROTO and logs a line.
 *
 * Functions return 0 or a negative errno; NVMe status travels in the
 * command's CQE, unchanged.
 */
#ifndef NKV_NVMF_TCP_HOST_H
#define NKV_NVMF_TCP_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "nkv_wire.h"
#include "nvmf/fabrics.h"

/* tcp:HOST:PORT[/NQN], parsed. HOST is an IPv4 address or a name (IPv6 in
 * brackets); nqn "" means: find it through discovery. */
struct nkv_nvmf_addr {
	char host[256];
	uint16_t port;
	char nqn[NKV_NVMF_NQN_MAX + 1];
};

/* 0, or -EINVAL with a one-line reason in err. */
int nkv_nvmf_uri_parse(const char *uri, struct nkv_nvmf_addr *a, char *err, size_t errlen);

/* The default host NQN: nqn.2014-08.org.nvmexpress:uuid:UUID, the UUID
 * made from /etc/machine-id (the same on every run of this machine), or
 * from the host name where there is none. */
void nkv_nvmf_default_hostnqn(char *buf, size_t len);

typedef void (*nkv_nvmf_log_fn)(void *ctx, const char *line);

struct nkv_nvmf_opts {
	size_t size;		/* sizeof(struct nkv_nvmf_opts) */
	const char *hostnqn;	/* NULL: nkv_nvmf_default_hostnqn() */
	int hdgst, ddgst;	/* ask for header / data digests */
	uint32_t timeout_ms;	/* every wait (connect, each command); 0: 5000 */
	uint32_t kato_ms;	/* Keep Alive Timeout sent in Connect; 0: 30000 */
	uint16_t depth;		/* commands in flight per queue; 0: 32, max 128 */
	nkv_nvmf_log_fn log;	/* NULL: no lines */
	void *log_ctx;
};

/* One command. The caller fills sqe (opcode, NSID, CDW2/3, CDW10..15;
 * CID, PSDT and SGL1 are set here) and the data parts, and keeps it and
 * its buffers alive until it completes. Data: icd goes in-capsule (a key
 * head, or a small host-to-controller transfer; at most the queue's
 * in-capsule size); h2c by R2T/H2CData; c2h receives C2HData. A command
 * has h2c or c2h, not both (NVMe/TCP: one direction). */
struct nkv_nvmf_cmd {
	struct nkv_sqe sqe;
	const void *icd;
	uint32_t icd_len;
	const void *h2c;
	uint32_t h2c_len;
	void *c2h;
	uint32_t c2h_len;
	/* Results. */
	uint32_t got;		/* C2H bytes received */
	struct nkv_cqe cqe;	/* the CapsuleResp (or as C2HData SUCCESS implies) */
	int err;		/* 0, or the -errno that ended it (no CQE then) */
	int done;
	/* The initiator's. */
	uint64_t deadline_ms;
	uint32_t c2h_next;	/* the next DATAO expected */
};

/* The NVMe status of a completed command (SCT << 8 | SC, DNR bit 14). */
static inline uint16_t nkv_nvmf_status(const struct nkv_nvmf_cmd *c)
{
	return (uint16_t)(c->cqe.dw3 >> 17);
}

struct nkv_nvmf_q;

/* Connect one queue to a->host:port: qid 0 makes a new controller
 * (cntlid ignored), else an I/O queue of cntlid. *cntlid_out (may be
 * NULL): the controller's ID. 0 or -errno (-EREMOTEIO: Connect refused,
 * its status logged). */
int nkv_nvmf_q_open(const struct nkv_nvmf_addr *a, const char *subnqn, uint16_t qid,
		    uint16_t cntlid, const struct nkv_nvmf_opts *o, struct nkv_nvmf_q **out,
		    uint16_t *cntlid_out);
void nkv_nvmf_q_close(struct nkv_nvmf_q *q);

/* Send c. 0, -EBUSY (depth reached), -EINVAL (a shape the queue cannot
 * carry), or the -errno that ended the association. */
int nkv_nvmf_q_submit(struct nkv_nvmf_q *q, struct nkv_nvmf_cmd *c);
/* Receive until at least one command completes (answering R2Ts on the
 * way): the number completed (>= 1), 0 when none is in flight, or the
 * -errno that ended the association (every command in flight then
 * completes with err set). */
int nkv_nvmf_q_reap(struct nkv_nvmf_q *q);
/* Hold back (on) the capsules submitted next, then send them together
 * (off): a batch's commands leave in as few segments as they fill, not
 * one each (TCP_CORK). Submit a batch between the two, reap after. */
void nkv_nvmf_q_cork(struct nkv_nvmf_q *q, int on);
/* Submit c and reap until it is done: 0 (NVMe status in c->cqe) or c->err. */
int nkv_nvmf_q_exec(struct nkv_nvmf_q *q, struct nkv_nvmf_cmd *c);
/* 0 while the association lives, else the -errno that ended it. */
int nkv_nvmf_q_error(const struct nkv_nvmf_q *q);
/* In-capsule bytes this queue takes. */
uint32_t nkv_nvmf_q_icd_max(const struct nkv_nvmf_q *q);

/* A controller: admin queue, enabled, one I/O queue. */
struct nkv_nvmf_assoc {
	struct nkv_nvmf_addr addr;
	char subnqn[NKV_NVMF_NQN_MAX + 1];	/* the one connected to */
	struct nkv_nvmf_q *admin;
	struct nkv_nvmf_q *io;
	uint16_t cntlid;
	uint32_t kato_ms;
	uint64_t ka_last_ms;
};

/*
 * Connect to a (discovering the subsystem when a->nqn is empty: the
 * first NVMe subsystem entry of the Discovery log page), enable the
 * controller and connect I/O queue 1. 0 or -errno; on failure *as holds
 * nothing to close.
 */
int nkv_nvmf_assoc_open(struct nkv_nvmf_assoc *as, const struct nkv_nvmf_addr *a,
			const struct nkv_nvmf_opts *o);
void nkv_nvmf_assoc_close(struct nkv_nvmf_assoc *as);
/* Whether Keep Alive is due (half the KATO since the last). */
int nkv_nvmf_assoc_ka_due(const struct nkv_nvmf_assoc *as);
/* Send Keep Alive on the admin queue and wait for it. 0 or -errno. */
int nkv_nvmf_assoc_keep_alive(struct nkv_nvmf_assoc *as);
/* Identify into buf (4096 bytes) on the admin queue: 0, -errno, or
 * -EREMOTEIO with the status in *st. */
int nkv_nvmf_identify(struct nkv_nvmf_q *admin, uint8_t cns, uint32_t nsid, uint8_t csi,
		      void *buf, uint16_t *st);

/*
 * A KV command (NKV_KV_*) on nsid, shaped as docs/wire.md's NVMe/TCP
 * rule says: a key of 1..16 bytes inline, a longer one in head form
 * (KL 0). cdw10, cdw11 options bits (NKV_STORE_*, NKV_LIST_KEY_HEAD is
 * set here), cdw12 as the command takes them. data/len: Store's value
 * (in head form data - nkv_key_head_size(klen) must be writable: the
 * head is written there, head and value are one transfer), Retrieve's
 * and List's buffer. head: NKV_KEY_HEAD_MAX bytes of the caller's, alive
 * until the command completes. Store data goes in-capsule when it fits
 * icd_max. 0 or -EINVAL.
 */
int nkv_nvmf_kv_prep(struct nkv_nvmf_cmd *c, uint32_t icd_max, uint8_t opc, uint32_t nsid,
		     const uint8_t *key, uint32_t klen, uint8_t *head, uint8_t *data,
		     uint32_t len, uint32_t opts, uint32_t cdw12);

/*
 * Exec (83h) on nsid, shaped by docs/wire.md's rule for data both ways:
 * [u16 klen][key][input] in the capsule, the output (up to ocap bytes)
 * by C2HData into out; CQE DW0 = the output's true length. in_buf holds
 * nkv_key_head_size(klen) + ilen bytes: the caller has put the input at
 * in_buf + nkv_key_head_size(klen), the head is written here. 0, -EINVAL,
 * or -EMSGSIZE when head and input exceed icd_max (no other way in).
 */
int nkv_nvmf_exec_prep(struct nkv_nvmf_cmd *c, uint32_t icd_max, uint32_t nsid,
		       const uint8_t *key, uint32_t klen, uint32_t op_id, uint8_t *in_buf,
		       uint32_t ilen, uint8_t *out, uint32_t ocap);

/* Property Get of ofst (4 bytes, or 8 with eight) on an admin queue
 * (CAP, VS, CSTS, CC): 0, -errno, or -EREMOTEIO (status logged). */
int nkv_nvmf_prop_get(struct nkv_nvmf_q *q, uint32_t ofst, int eight, uint64_t *val);

/* The Discovery log page of a's discovery controller (a->nqn is not
 * used) into log (bytes: a multiple of 1024; the header, then an entry
 * per 1024 bytes, struct nkv_nvmf_disc_hdr / _entry). 0 or -errno. */
#define NKV_NVMF_DISC_LOG_BYTES 16384u
int nkv_nvmf_disc_log(const struct nkv_nvmf_addr *a, const struct nkv_nvmf_opts *o,
		      uint8_t *log, uint32_t bytes);

/* What ICReq/ICResp and Connect settled for a queue (nkv-probe shows it). */
struct nkv_nvmf_q_params {
	uint16_t qid, depth;
	int hdgst, ddgst;
	uint32_t cpda;		/* bytes */
	uint32_t maxh2cdata;
	uint32_t icd_max;	/* in-capsule bytes (I/O queues: from IOCCSZ) */
};
void nkv_nvmf_q_params(const struct nkv_nvmf_q *q, struct nkv_nvmf_q_params *p);

/* Milliseconds of CLOCK_MONOTONIC. */
uint64_t nkv_nvmf_now_ms(void);

#endif /* NKV_NVMF_TCP_HOST_H */
