/* SPDX-License-Identifier: MIT */
/*
 * fuzz_vfu_client.c - the host library's vfio-user client against a fake
 * server that answers with arbitrary bytes: connect must fail cleanly or
 * succeed (then the doorbells it mapped must be usable), never crash,
 * hang or leak.
 *
 * Input: one record per reply, each {u8 ctl, u16 len, len bytes}:
 *  ctl bit 0: the header is made to match the request (msg_id, cmd,
 *             reply type, size) and the bytes are the payload; else the
 *             bytes go out as they are (header included);
 *  ctl bit 1: an fd travels with it, a memfd of (bytes[0] * 4 KiB);
 *  ctl bit 2: an error reply, errno = ctl >> 3.
 * When the records run out, or no request comes within 20 ms (the
 * client waits for the rest of a torn reply), the server hangs up.
 *
 * A connected client then registers two pages without an fd (memory the
 * server reaches by DMA_READ/WRITE messages). Once the fake has answered
 * that DMA_MAP, the remaining records are requests of the server's own,
 * served by the client's reader thread: {u8 ctl, u16 len, len bytes},
 * ctl bit 0: a well-formed DMA_READ (bit 1: DMA_WRITE) header before the
 * bytes as payload; else the bytes as they are. The client's answers
 * are read and dropped.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "host/transport.h"
#include "vfio-user/msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

extern const struct nkv_transport_ops nkv_transport_vfio_user;

static char fz_path[108];
static int fz_lfd = -1;

struct fz_fake {
	const uint8_t *p;
	size_t n;
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	(void)argc;
	(void)argv;
	setenv("NKV_VFU_TIMEOUT_MS", "500", 1);	/* a bound, never reached */
	snprintf(fz_path, sizeof(fz_path), "/tmp/nkv-fuzz-client-%d.sock", (int)getpid());
	strcpy(sa.sun_path, fz_path);
	unlink(fz_path);
	fz_lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fz_lfd < 0 || bind(fz_lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(fz_lfd, 4))
		abort();
	return 0;
}

/* One reply record; -1 when the records ran out. */
static int fz_reply(struct fz_fake *f, int fd, const struct nkv_vfu_msg *req)
{
	uint8_t ctl;
	uint16_t len;
	const uint8_t *b;
	int mfd = -1, rc;

	if (f->n < 3)
		return -1;
	ctl = f->p[0];
	memcpy(&len, f->p + 1, 2);
	if (len > f->n - 3)
		len = (uint16_t)(f->n - 3);
	b = f->p + 3;
	f->p += 3 + len;
	f->n -= 3 + (size_t)len;
	if (ctl & 2) {
		mfd = memfd_create("fz-bar", MFD_CLOEXEC);
		if (mfd < 0 || ftruncate(mfd, (off_t)(len ? b[0] : 0) * 4096))
			abort();
	}
	if (ctl & 1) {
		struct nkv_vfu_hdr h = { req->hdr.msg_id, req->hdr.cmd, 0, NKV_VFU_TYPE_REPLY, 0 };

		if (ctl & 4) {
			h.flags |= NKV_VFU_F_ERROR;
			h.error = ctl >> 3;
		}
		rc = nkv_vfu_send(fd, &h, b, len, &mfd, mfd >= 0);
	} else {
		struct msghdr mh = { 0 };
		struct iovec iov = { (void *)b, len };
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} c;

		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		if (mfd >= 0) {
			struct cmsghdr *cm;

			memset(&c, 0, sizeof(c));
			mh.msg_control = c.buf;
			mh.msg_controllen = sizeof(c.buf);
			cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &mfd, sizeof(int));
		}
		rc = len ? (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0) : 0;
	}
	if (mfd >= 0)
		close(mfd);
	return rc ? -1 : 0;
}

/* The server's own requests, from the remaining records. */
static void fz_requests(struct fz_fake *f, int fd)
{
	uint16_t id = 0x100;

	while (f->n >= 3) {
		uint8_t ctl = f->p[0];
		uint16_t len;
		const uint8_t *b = f->p + 3;
		struct nkv_vfu_msg junk;
		int rc;

		memcpy(&len, f->p + 1, 2);
		if (len > f->n - 3)
			len = (uint16_t)(f->n - 3);
		f->p += 3 + len;
		f->n -= 3 + (size_t)len;
		if (ctl & 1) {
			struct nkv_vfu_hdr h = { id++, ctl & 2 ? NKV_VFU_DMA_WRITE : NKV_VFU_DMA_READ,
						 0, NKV_VFU_TYPE_COMMAND, 0 };

			rc = nkv_vfu_send(fd, &h, b, len, NULL, 0);
		} else {
			rc = len && send(fd, b, len, MSG_NOSIGNAL) < 0 ? -errno : 0;
		}
		if (rc)
			return;
		/* An answer, if one comes (20 ms receive timeout). */
		if (!nkv_vfu_recv(fd, &junk, NKV_VFU_MAX_MSG))
			nkv_vfu_msg_free(&junk);
	}
}

static void *fz_fake_main(void *arg)
{
	struct fz_fake *f = arg;
	struct timeval tv = { 0, 20000 };
	struct pollfd p = { .fd = fz_lfd, .events = POLLIN };
	int fd;

	/* Bounded: a client that never connects cannot hang us. */
	if (poll(&p, 1, 2000) != 1)
		return NULL;
	fd = accept4(fz_lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return NULL;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (;;) {
		struct nkv_vfu_msg req;
		int rc = nkv_vfu_recv(fd, &req, NKV_VFU_MAX_MSG);

		if (!rc)
			rc = fz_reply(f, fd, &req);
		if (!rc && req.hdr.cmd == NKV_VFU_DMA_MAP && !req.nfds) {
			nkv_vfu_msg_free(&req);
			fz_requests(f, fd);
			break;
		}
		nkv_vfu_msg_free(&req);
		if (rc)
			break;
	}
	close(fd);
	return NULL;
}

/* What a caller does with a connected transport: touch every doorbell,
 * register memory reached by messages, let the server's requests come. */
static void fz_use(struct nkv_tr *tr)
{
	struct nkv_dmamem m = { 0 };
	size_t len = 0, i;
	volatile uint32_t *db = nkv_transport_vfio_user.doorbells(tr, &len);

	for (i = 0; db && i < len / 4; i++)
		db[i] = db[i] + 1;
	m.len = 2 * 4096;
	m.va = aligned_alloc(4096, m.len);
	m.fd = -1;
	m.by_messages = 1;
	if (!m.va)
		abort();
	if (nkv_transport_vfio_user.dma_map(tr, &m) == 0) {
		usleep(20000);	/* the fake's requests meanwhile */
		nkv_transport_vfio_user.dma_unmap(tr, &m);
		if (m.tr_priv == m.iova)
			free(m.iova);
	}
	free(m.va);
}

static int fz_lowest_fd(void)
{
	int fd = dup(0);

	close(fd);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_fake f = { data, size };
	struct nkv_tr *tr = NULL;
	char err[256];
	pthread_t t;
	int fd0 = fz_lowest_fd();

	if (pthread_create(&t, NULL, fz_fake_main, &f))
		abort();
	if (nkv_transport_vfio_user.open(fz_path, &tr, err, sizeof(err)) == 0) {
		fz_use(tr);
		nkv_transport_vfio_user.close(tr);
	} else if (tr || !memchr(err, '\0', sizeof(err))) {
		abort();	/* a failed open hands nothing back */
	}
	pthread_join(t, NULL);
	if (fz_lowest_fd() != fd0)
		abort();
	return 0;
}
