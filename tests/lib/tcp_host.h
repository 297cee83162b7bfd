/* SPDX-License-Identifier: MIT */
/*
 * tcp_host.h - a small NVMe/TCP host for tests: blocking sockets with a
 * receive deadline (a test never hangs on a target that does not answer),
 * ICReq, Fabrics Connect, Property Get/Set, any command with its data
 * (in-capsule, R2T/H2CData, C2HData; a key head in-capsule in front of
 * a C2H transfer), and raw PDUs for hostile hosts: a test can send
 * whatever bytes it likes and read what the target answers.
 */
#ifndef NKV_TEST_TCP_HOST_H
#define NKV_TEST_TCP_HOST_H

#include <stdint.h>

#include "nkv_wire.h"
#include "nvme-tcp/pdu.h"
#include "nvmf/fabrics.h"

#define TH_HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:0c0ffee0-0000-4000-8000-000000000001"
#define TH_SUBNQN "nqn.2026-01.io.nkv:target"
#define TH_ICD_IO (16u << 10)		/* what the target's IOCCSZ says */
#define TH_TIMEOUT 0xffffu		/* a status meaning: no answer, or the connection broke */

struct th {
	int fd;
	uint16_t port;
	int hdgst, ddgst;
	uint32_t maxh2cdata;
	uint32_t icd_max;		/* in-capsule data this queue takes */
	uint16_t cid;
	uint16_t cntlid;
	uint16_t qid;
	char subnqn[256];		/* what the admin queue connected to */
	char hostnqn[256];		/* as whom (its I/O queues connect so too) */
	/* The last C2HData's flags, the last CapsuleResp's CQE. */
	uint8_t c2h_flags;
	struct nkv_cqe cqe;
	/* The last C2HTermReq received (type 0: none). */
	struct nkv_tcp_term term;
	uint8_t *rbuf;			/* received PDUs (th_close frees it) */
	uint32_t rcap;
};

/* TCP connect to 127.0.0.1:port, receive deadline ms. 0 or -errno. */
int th_open(struct th *t, uint16_t port, uint32_t deadline_ms);
void th_close(struct th *t);
/* ICReq (digests as asked) and the ICResp read back. 0 or -errno. */
int th_ic(struct th *t, int hdgst, int ddgst);
/* Connect this queue: qid 0 (cntlid ignored: a new controller) or an I/O
 * queue of cntlid. The status; t->cntlid set from DW0 on success. */
uint16_t th_connect(struct th *t, uint16_t qid, uint16_t cntlid, const char *hostnqn,
		    const char *subnqn, uint32_t kato_ms);
uint16_t th_prop_get(struct th *t, uint32_t ofst, int eight, uint64_t *val);
uint16_t th_prop_set(struct th *t, uint32_t ofst, uint32_t val);
/* Open, IC, admin Connect, CC.EN = 1, wait for CSTS.RDY: 0 or -1. */
int th_admin(struct th *t, uint16_t port, int hdgst, int ddgst, const char *subnqn,
	     uint32_t kato_ms);
/* The same as host hostnqn (a tenant, docs/target.md "Tenants"). */
int th_admin_as(struct th *t, uint16_t port, const char *hostnqn, int hdgst, int ddgst,
		const char *subnqn, uint32_t kato_ms);
/* Open, IC, I/O Connect qid to admin's controller (its subsystem): 0 or -1. */
int th_io(struct th *t, const struct th *admin, uint16_t qid);
/* The same, saying which step failed: 0, or that step's own result
 * (-errno, or Connect's NVMe status) with its name in *step. */
int th_io_steps(struct th *t, const struct th *admin, uint16_t qid, const char **step);

/*
 * One command: h2c (h2c_len bytes) goes in-capsule if it fits, else by
 * R2T; head (head_len bytes, a key head) goes in-capsule in front of a
 * C2H transfer of c2h_len bytes into c2h. Returns the status (TH_TIMEOUT
 * when no CapsuleResp came); *got = C2H bytes received.
 */
uint16_t th_cmd(struct th *t, struct nkv_sqe *s, const void *h2c, uint32_t h2c_len,
		const void *head, uint32_t head_len, void *c2h, uint32_t c2h_len, uint32_t *got);

/* th_cmd in two halves, for a test that leaves the answer unread a while:
 * the command sent (0 or -EIO), then everything read back as th_cmd. */
int th_cmd_send(struct th *t, struct nkv_sqe *s, const void *h2c, uint32_t h2c_len,
		const void *head, uint32_t head_len, uint32_t c2h_len);
uint16_t th_cmd_finish(struct th *t, const void *h2c, uint32_t h2c_len, void *c2h,
		       uint32_t c2h_len, uint32_t *got);
/* A Retrieve of a key of 1..16 bytes sent, its answer left unread
 * (th_cmd_finish reads it). 0 or -EIO. */
int th_retrieve_send(struct th *t, const void *key, uint32_t klen, uint32_t len);

/* KV helpers: keys of 1..16 bytes inline, longer in head form. */
uint16_t th_store(struct th *t, const void *key, uint32_t klen, const void *val, uint32_t len);
uint16_t th_retrieve(struct th *t, const void *key, uint32_t klen, void *buf, uint32_t len,
		     uint32_t *dw0, uint32_t *got);
uint16_t th_kv_simple(struct th *t, uint8_t opc, const void *key, uint32_t klen);
uint16_t th_identify(struct th *t, uint8_t cns, uint32_t nsid, uint8_t csi, void *buf4k);

/* Raw bytes out; 0 or -errno. */
int th_send(struct th *t, const void *buf, uint32_t len);
/* Read one whole PDU into buf (cap bytes): its length, 0 when the
 * target closed the connection, or -errno (-ETIMEDOUT). */
int th_recv_pdu(struct th *t, void *buf, uint32_t cap);
/* Read until the target closes: 1 when it did (t->term holds a
 * C2HTermReq if one came first), 0 on the deadline. */
int th_wait_close(struct th *t);
/* A PDU as a well-behaved host sends it: hdr (hlen bytes, its type and
 * type-specific fields filled; the rest of the common header is set
 * here: digest flags, HLEN, PDO, PLEN), then data (may be NULL for none),
 * digests as negotiated. 0 or -errno. */
int th_send_pdu(struct th *t, void *hdr, uint8_t hlen, const void *data, uint32_t dlen);

#endif /* NKV_TEST_TCP_HOST_H */
