/* SPDX-License-Identifier: MIT */
/*
 * msg.c - vfio-user message framing: whole messages in, whole messages
 * out, fds collected from whichever segment carried them.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "vfio-user/msg.h"

#define NKV_VFU_CMSG_SPACE CMSG_SPACE(sizeof(int) * NKV_VFU_MAX_FDS)

uint64_t nkv_vfu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * With bounds: wait until fd is ready for events, the deadline passes
 * (-ETIMEDOUT) or stop_fd is readable (-ECANCELED). Returns the flags
 * for the following recvmsg/sendmsg: MSG_DONTWAIT under bounds (a
 * spurious wake-up then gives EAGAIN and another wait, never a block).
 */
static int nkv_vfu_wait(int fd, short events, const struct nkv_vfu_bounds *b)
{
	struct pollfd p[2] = { { .fd = fd, .events = events },
			       { .fd = b ? b->stop_fd : -1, .events = POLLIN } };
	int ms = -1;

	if (!b)
		return 0;
	for (;;) {
		if (b->deadline_ns) {
			uint64_t now = nkv_vfu_now_ns();

			if (now >= b->deadline_ns)
				return -ETIMEDOUT;
			ms = (int)((b->deadline_ns - now + 999999) / 1000000);
		}
		if (poll(p, 2, ms) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[1].revents)
			return -ECANCELED;
		if (p[0].revents)
			return MSG_DONTWAIT;
	}
}

int nkv_vfu_send(int fd, struct nkv_vfu_hdr *h, const void *payload,
		 size_t len, const int *fds, int nfds)
{
	return nkv_vfu_send_bounded(fd, h, payload, len, fds, nfds, NULL);
}

int nkv_vfu_send_bounded(int fd, struct nkv_vfu_hdr *h, const void *payload,
			 size_t len, const int *fds, int nfds,
			 const struct nkv_vfu_bounds *b)
{
	union {
		char buf[NKV_VFU_CMSG_SPACE];
		struct cmsghdr align;
	} ctl;
	struct iovec iov[2];
	struct msghdr mh;
	size_t total, sent = 0;

	if (nfds < 0 || nfds > NKV_VFU_MAX_FDS || len > NKV_VFU_MAX_MSG)
		return -EINVAL;
	h->size = (uint32_t)(sizeof(*h) + len);
	total = h->size;
	while (sent < total) {
		int n = 0, flags;
		ssize_t r;

		memset(&mh, 0, sizeof(mh));
		/* Rebuild the iovec past what already went out. */
		if (sent < sizeof(*h)) {
			iov[n].iov_base = (char *)h + sent;
			iov[n++].iov_len = sizeof(*h) - sent;
			if (len) {
				iov[n].iov_base = (void *)payload;
				iov[n++].iov_len = len;
			}
		} else {
			iov[n].iov_base = (char *)payload + (sent - sizeof(*h));
			iov[n++].iov_len = total - sent;
		}
		mh.msg_iov = iov;
		mh.msg_iovlen = n;
		if (sent == 0 && nfds > 0) {
			struct cmsghdr *c;

			memset(&ctl, 0, sizeof(ctl));
			mh.msg_control = ctl.buf;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
			c = CMSG_FIRSTHDR(&mh);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
			memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
		}
		flags = nkv_vfu_wait(fd, POLLOUT, b);
		if (flags < 0)
			return flags;
		r = sendmsg(fd, &mh, MSG_NOSIGNAL | flags);
		if (r < 0) {
			if (errno == EINTR || (b && errno == EAGAIN))
				continue;
			return -errno;
		}
		sent += (size_t)r;
	}
	return 0;
}

/* Keep the fds of one control message; extra ones are closed at once. */
static void nkv_vfu_collect_fds(struct nkv_vfu_msg *m, struct msghdr *mh)
{
	struct cmsghdr *c;

	if (mh->msg_flags & MSG_CTRUNC)
		m->fds_truncated = 1;
	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		int n, i, fdv;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (i = 0; i < n; i++) {
			memcpy(&fdv, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (m->nfds < NKV_VFU_MAX_FDS) {
				m->fds[m->nfds++] = fdv;
			} else {
				close(fdv);
				m->fds_truncated = 1;
			}
		}
	}
}

/* Read exactly len bytes. first: an EOF before any byte is a clean close. */
static int nkv_vfu_read_full(int fd, struct nkv_vfu_msg *m, void *buf,
			     size_t len, int first, const struct nkv_vfu_bounds *b)
{
	union {
		char buf[NKV_VFU_CMSG_SPACE];
		struct cmsghdr align;
	} ctl;
	size_t got = 0;

	while (got < len) {
		struct iovec iov = { (char *)buf + got, len - got };
		struct msghdr mh;
		ssize_t r;
		int flags = nkv_vfu_wait(fd, POLLIN, b);

		if (flags < 0)
			return flags;
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | flags);
		if (r < 0) {
			if (errno == EINTR || (b && errno == EAGAIN))
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return -ETIMEDOUT;
			return -errno;
		}
		nkv_vfu_collect_fds(m, &mh);
		if (r == 0)
			return (first && got == 0) ? -ECONNRESET : -EPROTO;
		got += (size_t)r;
	}
	return 0;
}

int nkv_vfu_recv(int fd, struct nkv_vfu_msg *m, uint32_t max_size)
{
	return nkv_vfu_recv_bounded(fd, m, max_size, NULL);
}

int nkv_vfu_recv_bounded(int fd, struct nkv_vfu_msg *m, uint32_t max_size,
			 const struct nkv_vfu_bounds *b)
{
	int rc, i;

	memset(m, 0, sizeof(*m));
	for (i = 0; i < NKV_VFU_MAX_FDS; i++)
		m->fds[i] = -1;
	rc = nkv_vfu_read_full(fd, m, &m->hdr, sizeof(m->hdr), 1, b);
	if (rc)
		return rc;
	if (m->hdr.size < sizeof(m->hdr) || m->hdr.size > max_size)
		return -EMSGSIZE;
	m->len = m->hdr.size - sizeof(m->hdr);
	if (!m->len)
		return 0;
	m->payload = malloc(m->len);
	if (!m->payload)
		return -ENOMEM;
	return nkv_vfu_read_full(fd, m, m->payload, m->len, 0, b);
}

void nkv_vfu_msg_free(struct nkv_vfu_msg *m)
{
	int i;

	for (i = 0; i < m->nfds; i++)
		if (m->fds[i] >= 0)
			close(m->fds[i]);
	m->nfds = 0;
	free(m->payload);
	m->payload = NULL;
	m->len = 0;
}

int nkv_vfu_msg_take_fd(struct nkv_vfu_msg *m, int i)
{
	int fd;

	if (i < 0 || i >= m->nfds)
		return -1;
	fd = m->fds[i];
	m->fds[i] = -1;
	return fd;
}

int nkv_vfu_json_u64(const char *json, size_t len, const char *key, uint64_t *out)
{
	size_t klen = strlen(key), i;
	uint64_t v = 0;

	for (i = 0; i + klen + 2 <= len; i++) {
		size_t j;
		int digits = 0;

		if (json[i] != '"' || memcmp(json + i + 1, key, klen) ||
		    json[i + 1 + klen] != '"')
			continue;
		j = i + klen + 2;
		while (j < len && (json[j] == ' ' || json[j] == '\t' || json[j] == '\n'))
			j++;
		if (j >= len || json[j] != ':')
			return -EINVAL;
		j++;
		while (j < len && (json[j] == ' ' || json[j] == '\t' || json[j] == '\n'))
			j++;
		for (; j < len && json[j] >= '0' && json[j] <= '9'; j++, digits++) {
			if (v > (UINT64_MAX - 9) / 10)
				return -EINVAL;
			v = v * 10 + (uint64_t)(json[j] - '0');
		}
		if (!digits)
			return -EINVAL;
		*out = v;
		return 0;
	}
	return -ENOENT;
}

const char *nkv_vfu_cmd_name(uint16_t cmd)
{
	static const char *const names[] = {
		[NKV_VFU_VERSION] = "VERSION",
		[NKV_VFU_DMA_MAP] = "DMA_MAP",
		[NKV_VFU_DMA_UNMAP] = "DMA_UNMAP",
		[NKV_VFU_DEVICE_GET_INFO] = "DEVICE_GET_INFO",
		[NKV_VFU_DEVICE_GET_REGION_INFO] = "DEVICE_GET_REGION_INFO",
		[NKV_VFU_DEVICE_GET_REGION_IO_FDS] = "DEVICE_GET_REGION_IO_FDS",
		[NKV_VFU_DEVICE_GET_IRQ_INFO] = "DEVICE_GET_IRQ_INFO",
		[NKV_VFU_DEVICE_SET_IRQS] = "DEVICE_SET_IRQS",
		[NKV_VFU_REGION_READ] = "REGION_READ",
		[NKV_VFU_REGION_WRITE] = "REGION_WRITE",
		[NKV_VFU_DMA_READ] = "DMA_READ",
		[NKV_VFU_DMA_WRITE] = "DMA_WRITE",
		[NKV_VFU_DEVICE_RESET] = "DEVICE_RESET",
		[NKV_VFU_REGION_WRITE_MULTI] = "REGION_WRITE_MULTI",
		[NKV_VFU_DEVICE_FEATURE] = "DEVICE_FEATURE",
		[NKV_VFU_MIG_DATA_READ] = "MIG_DATA_READ",
		[NKV_VFU_MIG_DATA_WRITE] = "MIG_DATA_WRITE",
	};

	if (cmd < sizeof(names) / sizeof(names[0]) && names[cmd])
		return names[cmd];
	return "UNKNOWN";
}
