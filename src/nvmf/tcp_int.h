/* SPDX-License-Identifier: MIT */
/*
 * tcp_int.h - what the initiator's files share (tcp_host.c: the queue
 * and its sends; tcp_rx.c: the receive path; tcp_assoc.c: Fabrics
 * commands, the association, discovery). Not for other rooms.
 */
#ifndef NKV_NVMF_TCP_INT_H
#define NKV_NVMF_TCP_INT_H

#include "nvme-tcp/pdu.h"
#include "nvmf/tcp_host.h"

#define NKV_NVMF_DEPTH_MAX 128u

struct nkv_nvmf_q {
	int fd;
	uint16_t qid;
	uint16_t depth;
	uint16_t next_cid;
	uint16_t port;
	int hdgst, ddgst;
	uint32_t cpda;		/* PDO alignment the controller asked for, bytes */
	uint32_t maxh2cdata;
	uint32_t icd_max;
	uint32_t timeout_ms;
	uint32_t inflight;
	int err;		/* what ended the association; 0 while it lives */
	nkv_nvmf_log_fn log;
	void *log_ctx;
	char host[256];
	uint8_t hdr[NKV_TCP_HDR_MAX + 8];	/* the PDU header being received */
	struct nkv_nvmf_cmd *slot[];	/* by CID */
};

void nkv_nvmf_logf(const struct nkv_nvmf_q *q, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int nkv_nvmf_read(struct nkv_nvmf_q *q, void *buf, size_t len);
int nkv_nvmf_read_idle(struct nkv_nvmf_q *q, void *buf, size_t len);
int nkv_nvmf_send_pdu(struct nkv_nvmf_q *q, void *hdr, uint8_t hlen, const void *data,
		      uint32_t dlen);
int nkv_nvmf_q_fail(struct nkv_nvmf_q *q, int err);
int nkv_nvmf_q_violation(struct nkv_nvmf_q *q, const void *hdr, uint32_t hlen,
			 const struct nkv_tcp_fault *f);
/* A queue on a connected stream socket fd (taken over): ICReq and ICResp
 * only, no Connect. For the fuzzer, which plays the remote over a
 * socketpair. 0 or -errno (fd then closed). */
int nkv_nvmf_q_from_fd(int fd, const struct nkv_nvmf_addr *a, const struct nkv_nvmf_opts *o,
		       uint16_t qid, struct nkv_nvmf_q **out);
/* Fabrics Connect on a queue that has done ICReq (tcp_assoc.c). */
int nkv_nvmf_connect(struct nkv_nvmf_q *q, const char *subnqn, uint16_t cntlid,
		     const struct nkv_nvmf_opts *o, uint16_t *cntlid_out);

#endif /* NKV_NVMF_TCP_INT_H */
