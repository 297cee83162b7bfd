/* SPDX-License-Identifier: MIT */
/*
 * msg.h - vfio-user message framing over an AF_UNIX stream socket, with
 * file descriptors passed as SCM_RIGHTS. Shared by client and server.
 */
#ifndef NKV_VFU_MSG_H
#define NKV_VFU_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "vfio-user/proto.h"

/* One received message. fds[] not taken by the handler (set to -1) are
 * closed by nkv_vfu_msg_free(). */
struct nkv_vfu_msg {
	struct nkv_vfu_hdr hdr;
	uint8_t *payload;	/* hdr.size - 16 bytes, NULL when empty */
	size_t len;
	int fds[NKV_VFU_MAX_FDS];
	int nfds;
	int fds_truncated;	/* more fds were sent than we accept */
};

/* Send header + payload (+ fds with the first byte). h->size is set
 * here. 0 or a negative errno (-EPIPE when the peer is gone). */
int nkv_vfu_send(int fd, struct nkv_vfu_hdr *h, const void *payload,
		 size_t len, const int *fds, int nfds);

/*
 * Receive one whole message of at most max_size bytes. 0, or:
 * -ECONNRESET the peer closed (cleanly, before a header), -EPROTO a
 * short or torn message, -EMSGSIZE a header announcing a size outside
 * [16, max_size] (m->hdr is valid, nothing else is read: the stream is
 * out of sync and should be closed), -EAGAIN/-ETIMEDOUT a socket
 * timeout, other negative errnos from recvmsg.
 */
int nkv_vfu_recv(int fd, struct nkv_vfu_msg *m, uint32_t max_size);

/*
 * Bounds on one whole message, for a peer that is not trusted: a socket
 * timeout restarts with every byte, so a peer dripping one byte at a time
 * could hold a message open for ever. deadline_ns: CLOCK_MONOTONIC time
 * by which the whole message must be in (or out); 0: none. stop_fd: an fd
 * whose readability abandons the wait (a server stopping); -1: none.
 * The socket is only read or written once poll() says it is ready.
 */
struct nkv_vfu_bounds {
	uint64_t deadline_ns;
	int stop_fd;
};
/* As nkv_vfu_recv / nkv_vfu_send, and also -ETIMEDOUT past the deadline
 * (mid-message: the stream is out of sync), -ECANCELED when stop_fd
 * became readable. */
int nkv_vfu_recv_bounded(int fd, struct nkv_vfu_msg *m, uint32_t max_size,
			 const struct nkv_vfu_bounds *b);
int nkv_vfu_send_bounded(int fd, struct nkv_vfu_hdr *h, const void *payload,
			 size_t len, const int *fds, int nfds,
			 const struct nkv_vfu_bounds *b);
/* CLOCK_MONOTONIC now, in ns. */
uint64_t nkv_vfu_now_ns(void);
void nkv_vfu_msg_free(struct nkv_vfu_msg *m);

/* Take fd i out of the message (the caller now owns it); -1 if absent. */
int nkv_vfu_msg_take_fd(struct nkv_vfu_msg *m, int i);

/* Find "key": <unsigned number> anywhere in a JSON text (the capability
 * objects are flat enough for this). 0, -ENOENT, or -EINVAL. */
int nkv_vfu_json_u64(const char *json, size_t len, const char *key, uint64_t *out);

/* Name of a command for logs ("REGION_READ"), "UNKNOWN" otherwise. */
const char *nkv_vfu_cmd_name(uint16_t cmd);

#endif /* NKV_VFU_MSG_H */
