/* SPDX-License-Identifier: MIT */
/*
 * fuzz_vfu_server.c - nkv-target's vfio-user server on arbitrary message
 * streams: per input, a whole server (nkv_vfu_server_start) on a private
 * socket (the embedded target, src/target/embed.h), reached as a client
 * reaches it, through its accept thread and a connection thread, against a
 * real subsystem (mem backends of the registry), in strict
 * DMA mode as nkv-target runs. It must answer errors or close, never
 * crash, hang or leak (memory: LeakSanitizer; fds: checked here after
 * every input, once the server has stopped).
 *
 * Input: byte 0 = options (bit 0: no sparse mmap); the rest is a stream
 * of vfio-user messages, split at the sizes their headers announce (a
 * bad size sends the rest as it is). Per message:
 *  - DMA_MAP: the header's error field (unused in a command) picks the
 *    fds sent with it (fz_fds): a sealed memfd covering the request, an
 *    unsealed one, a too small one, none (memory reached by DMA
 *    messages, which this client never answers), two, a pipe.
 *  - cmd 0xff00 (not sent): wait until the server answered everything
 *    sent so far, then try to shrink every memfd sent: the attack the
 *    DMA seal requirement stops (a crash here is a SIGBUS in the target).
 *  - cmd 0xff01 (not sent): same wait, then write the payload (u32
 *    offset, bytes) into the last memfd: SQEs and PRP lists in memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "target/embed.h"
#include "vfio-user/msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX_MEM (1u << 20)	/* largest memfd the harness makes */
#define FZ_MAX_MEMFDS 16
#define FZ_CMD_SHRINK 0xff00u
#define FZ_CMD_POKE 0xff01u

struct fz_drain {
	int fd;
	unsigned replies;	/* atomic */
	int done;		/* atomic: the server closed */
};

static void *fz_drain_main(void *arg)
{
	struct fz_drain *d = arg;
	struct nkv_vfu_msg m;

	/* Replies are read (their fds closed) so the server never blocks. */
	while (nkv_vfu_recv(d->fd, &m, NKV_VFU_MAX_MSG) == 0) {
		nkv_vfu_msg_free(&m);
		__atomic_add_fetch(&d->replies, 1, __ATOMIC_RELEASE);
	}
	nkv_vfu_msg_free(&m);
	__atomic_store_n(&d->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A client's socket connected to the server at path. */
static int fz_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || strlen(path) >= sizeof(sa.sun_path))
		abort();
	strcpy(sa.sun_path, path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		abort();
	return fd;
}

/* Bounded wait for the server to have answered `want` messages. */
static void fz_sync(struct fz_drain *d, unsigned want)
{
	struct timespec ts = { 0, 50000 };
	int i;

	for (i = 0; i < 20000; i++) {
		if (__atomic_load_n(&d->replies, __ATOMIC_ACQUIRE) >= want ||
		    __atomic_load_n(&d->done, __ATOMIC_ACQUIRE))
			return;
		nanosleep(&ts, NULL);
	}
}

static int fz_memfd(uint64_t len, int seal)
{
	int fd = memfd_create("fz-dma", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		abort();
	if (ftruncate(fd, (off_t)len) < 0)
		abort();
	if (seal)
		fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
	return fd;
}

struct fz_state {
	int memfds[FZ_MAX_MEMFDS];
	int nmemfds;
};

/* The fds to send with a DMA_MAP message; returns how many. */
static int fz_fds(struct fz_state *st, const struct nkv_vfu_hdr *h, const uint8_t *pay,
		  size_t len, int fds[2])
{
	struct nkv_vfu_dma_map dm = { 0 };
	uint64_t want = 64u << 10;
	int p[2];

	if (len >= sizeof(dm)) {
		memcpy(&dm, pay, sizeof(dm));
		if (dm.offset < FZ_MAX_MEM && dm.size <= FZ_MAX_MEM - dm.offset)
			want = dm.offset + dm.size;
	}
	switch (h->error % 6) {
	case 3:
		return 0;
	case 5:
		if (pipe(p))
			abort();
		close(p[1]);
		fds[0] = p[0];
		return 1;
	default:
		break;
	}
	if (st->nmemfds == FZ_MAX_MEMFDS)
		return 0;
	fds[0] = fz_memfd(h->error % 6 == 2 ? want / 2 : want, h->error % 6 != 1);
	st->memfds[st->nmemfds++] = fds[0];
	if (h->error % 6 == 4) {
		fds[1] = fds[0];
		return 2;
	}
	return 1;
}

static void fz_poke(struct fz_state *st, const uint8_t *pay, size_t len)
{
	uint32_t off;

	if (!st->nmemfds || len < 4)
		return;
	memcpy(&off, pay, 4);
	pwrite(st->memfds[st->nmemfds - 1], pay + 4, len - 4, off % FZ_MAX_MEM);
}

/* Send the stream; returns when all is sent or the server went away. */
static void fz_send_all(int fd, struct fz_drain *d, const uint8_t *p, size_t n)
{
	struct fz_state st = { .nmemfds = 0 };
	unsigned expect = 0;
	int i;

	while (n) {
		struct nkv_vfu_hdr h;
		const uint8_t *pay;
		int fds[2], nfds = 0;
		size_t len;

		if (n < sizeof(h))
			break;
		memcpy(&h, p, sizeof(h));
		if (h.size < sizeof(h) || h.size > n)
			break;
		pay = p + sizeof(h);
		len = h.size - sizeof(h);
		p += h.size;
		n -= h.size;
		if (h.cmd == FZ_CMD_SHRINK || h.cmd == FZ_CMD_POKE) {
			fz_sync(d, expect);
			if (h.cmd == FZ_CMD_POKE)
				fz_poke(&st, pay, len);
			for (i = 0; h.cmd == FZ_CMD_SHRINK && i < st.nmemfds; i++)
				(void)!ftruncate(st.memfds[i], 0);
			continue;
		}
		if (h.cmd == NKV_VFU_DMA_MAP)
			nfds = fz_fds(&st, &h, pay, len, fds);
		/* nkv_vfu_send sets h.size from len: keep the stream's bytes. */
		if (nkv_vfu_send(fd, &h, pay, len, fds, nfds))
			n = 0;
		if (nfds && h.error % 6 == 5)
			close(fds[0]);
		if (!(h.flags & NKV_VFU_F_NO_REPLY))
			expect++;
	}
	if (n)
		(void)!send(fd, p, n, MSG_NOSIGNAL);	/* a torn or oversized tail */
	for (i = 0; i < st.nmemfds; i++)
		close(st.memfds[i]);
}

/* The lowest free fd: equal before and after an input, or we leaked. */
static int fz_lowest_fd(void)
{
	int fd = dup(0);

	close(fd);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct nkv_tgt_embed_ns ns[2] = {
		{ "mem", { sizeof(struct nkv_be_conf), .capacity = 4u << 20, .max_value = 1u << 20 } },
		{ "mem", { sizeof(struct nkv_be_conf), .nvm = 1, .capacity = 256u << 10,
			   .block_size = 512 } },
	};
	struct nkv_tgt_embed_opts o = { .size = sizeof(o), .ns = ns, .nns = 2 };
	struct fz_drain d = { 0 };
	struct nkv_tgt_embed *tgt;
	char path[64], err[256];
	pthread_t drain;
	int fd0 = fz_lowest_fd();

	if (size < 1)
		return 0;
	snprintf(path, sizeof(path), "/tmp/nkv-fuzz-%d.sock", (int)getpid());
	o.server.size = sizeof(o.server);
	o.server.socket_path = path;
	o.server.ctrl.size = sizeof(o.server.ctrl);
	o.server.ctrl.max_ioq = 4;
	o.server.ctrl.mqes = 64;
	o.server.no_sparse_mmap = data[0] & 1;
	o.server.poll_interval_ns = 10000;
	o.server.log_level = -1;	/* quiet: errors are the point here */
	/* A DMA_MAP without fds maps memory reached by DMA_READ/WRITE
	 * messages, which this fake client never answers: give up soon. */
	o.server.msg_ms = 200;
	if (nkv_tgt_embed_start(&o, &tgt, err, sizeof(err)))
		abort();
	d.fd = fz_connect(path);
	if (pthread_create(&drain, NULL, fz_drain_main, &d))
		abort();
	fz_send_all(d.fd, &d, data + 1, size - 1);
	shutdown(d.fd, SHUT_WR);	/* EOF: the server finishes and closes */
	pthread_join(drain, NULL);
	close(d.fd);
	nkv_tgt_embed_stop(tgt);	/* waits for the connection thread */
	if (fz_lowest_fd() != fd0)
		abort();	/* an fd leaked */
	return 0;
}
