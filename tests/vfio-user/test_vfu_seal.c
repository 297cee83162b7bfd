/* SPDX-License-Identifier: MIT */
/*
 * test_vfu_seal.c - every kind of DMA memory a vfio-user client may pass
 * is accepted: sealed memfds (the fast path: stable), unsealed ones and
 * files (a page that vanishes later is survived, test_vfu_sigbus.c); and
 * nkv's own registered memory is sealed, so nobody can shrink it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "host/host.h"
#include "host/transport.h"
#include "target/embed.h"
#include "vfio-user/msg.h"

#define SEAL_LEN 0x4000u

struct seal_srv {
	struct nkv_subsys *ss;
	pthread_t thr;
	int fd;			/* our end */
	int srv_fd;		/* the server's end, taken by serve_fd */
};

static void *seal_serve(void *arg)
{
	struct seal_srv *s = arg;
	struct nkv_vfu_server_opts o = { .size = sizeof(o) };

	o.ss = s->ss;
	o.ctrl.size = sizeof(o.ctrl);
	o.ctrl.max_ioq = 2;
	o.poll_interval_ns = 20000;
	nkv_vfu_serve_fd(&o, s->srv_fd);
	return NULL;
}

/* Send one command, return the reply's errno (0 = success). */
static int seal_cmd(int fd, uint16_t cmd, const void *p, size_t len, const int *fds, int nfds)
{
	struct nkv_vfu_hdr h = { .msg_id = 1, .cmd = cmd };
	struct nkv_vfu_msg m;
	int rc;

	cr_assert_eq(nkv_vfu_send(fd, &h, p, len, fds, nfds), 0);
	cr_assert_eq(nkv_vfu_recv(fd, &m, NKV_VFU_MAX_MSG), 0);
	cr_assert_eq(m.hdr.cmd, cmd);
	rc = (m.hdr.flags & NKV_VFU_F_ERROR) ? (int)m.hdr.error : 0;
	nkv_vfu_msg_free(&m);
	return rc;
}

static void seal_up(struct seal_srv *s)
{
	struct nkv_tgt_embed_opts eo = { .size = sizeof(eo) };	/* ns 1: KV, mem */
	struct nkv_vfu_version v = { NKV_VFU_MAJOR, NKV_VFU_MINOR };
	struct timeval tv = { 5, 0 };
	char err[256];
	int sv[2];

	memset(s, 0, sizeof(*s));
	s->ss = nkv_tgt_embed_subsys(&eo, err, sizeof(err));
	cr_assert_not_null(s->ss, "%s", err);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	s->fd = sv[0];
	s->srv_fd = sv[1];
	setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	cr_assert_eq(pthread_create(&s->thr, NULL, seal_serve, s), 0);
	cr_assert_eq(seal_cmd(s->fd, NKV_VFU_VERSION, &v, sizeof(v), NULL, 0), 0);
}

static void seal_down(struct seal_srv *s)
{
	close(s->fd);	/* the server sees EOF and returns */
	pthread_join(s->thr, NULL);
	nkv_subsys_destroy(s->ss);
}

static int seal_map(struct seal_srv *s, int mfd, uint64_t iova)
{
	struct nkv_vfu_dma_map dm = { sizeof(dm), 3, 0, iova, SEAL_LEN };

	return seal_cmd(s->fd, NKV_VFU_DMA_MAP, &dm, sizeof(dm), &mfd, 1);
}

static int seal_memfd(unsigned flags, int seals)
{
	int fd = memfd_create("seal-test", MFD_CLOEXEC | flags);

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, SEAL_LEN), 0);
	if (seals)
		cr_assert_eq(fcntl(fd, F_ADD_SEALS, seals), 0);
	return fd;
}

/* Foreign clients (QEMU's memory-backend-file, SPDK) do not seal. */
Test(vfu_seal, unsealed_memfd_is_accepted)
{
	struct seal_srv s;
	int plain = seal_memfd(0, 0);
	int sealable = seal_memfd(MFD_ALLOW_SEALING, 0);
	int grow_only = seal_memfd(MFD_ALLOW_SEALING, F_SEAL_GROW);

	seal_up(&s);
	cr_expect_eq(seal_map(&s, plain, 0x100000), 0, "memfd without seals");
	cr_expect_eq(seal_map(&s, sealable, 0x200000), 0, "sealable but not sealed");
	cr_expect_eq(seal_map(&s, grow_only, 0x300000), 0, "sealed against growth only");
	seal_down(&s);
	close(plain);
	close(sealable);
	close(grow_only);
}

Test(vfu_seal, sealed_memfd_is_accepted_and_cannot_shrink)
{
	struct seal_srv s;
	struct nkv_vfu_dma_unmap du = { sizeof(du), 0, 0x200000, SEAL_LEN };
	int fd = seal_memfd(MFD_ALLOW_SEALING, F_SEAL_SHRINK);

	seal_up(&s);
	cr_expect_eq(seal_map(&s, fd, 0x200000), 0);
	/* The attack the seal stops: shrinking after the target mapped it. */
	cr_expect_eq(ftruncate(fd, 0), -1);
	cr_expect_eq(errno, EPERM);
	cr_expect_eq(seal_cmd(s.fd, NKV_VFU_DMA_UNMAP, &du, sizeof(du), NULL, 0), 0);
	seal_down(&s);
	close(fd);
}

Test(vfu_seal, regular_file_is_accepted)
{
	struct seal_srv s;
	char path[] = "/tmp/nkv-seal-XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	unlink(path);
	cr_assert_eq(ftruncate(fd, SEAL_LEN), 0);
	seal_up(&s);
	cr_expect_eq(seal_map(&s, fd, 0x300000), 0, "a file (QEMU memory-backend-file)");
	seal_down(&s);
	close(fd);
	/* Too short a file is still refused: the range could never be used. */
	fd = seal_memfd(0, 0);
	cr_assert_eq(ftruncate(fd, SEAL_LEN / 2), 0);
	seal_up(&s);
	cr_expect_eq(seal_map(&s, fd, 0x300000), EINVAL);
	seal_down(&s);
	close(fd);
}

/* /dev/zero maps as private anonymous memory: every transfer would be
 * silently lost, so a character device is refused (issue 18). */
Test(vfu_seal, device_is_refused)
{
	struct seal_srv s;
	int zero = open("/dev/zero", O_RDWR | O_CLOEXEC);

	cr_assert_geq(zero, 0);
	seal_up(&s);
	cr_expect_eq(seal_map(&s, zero, 0x400000), EPERM, "/dev/zero is not shared memory");
	seal_down(&s);
	close(zero);
}

/* nkv's own registered memory (host RAM and the device arena) is sealed,
 * so it is the target's fast path and nobody can shrink it. */
Test(vfu_seal, own_memory_is_sealed)
{
	struct nkv_h_memsrc *src[2] = { nkv_h_memsrc_host(), nkv_h_memsrc_arena(1u << 20) };
	struct seal_srv s;
	int i;

	seal_up(&s);
	for (i = 0; i < 2; i++) {
		struct nkv_dmamem m;
		struct nkv_vfu_dma_map dm = { sizeof(dm), 3, 0, 0x1000000ull * (i + 1), SEAL_LEN };
		int seals;

		cr_assert_not_null(src[i]);
		memset(&m, 0, sizeof(m));
		cr_assert_eq(src[i]->ops->alloc(src[i], SEAL_LEN, &m), 0);
		seals = fcntl(m.fd, F_GET_SEALS);
		cr_expect(seals >= 0 && (seals & F_SEAL_SHRINK) && (seals & F_SEAL_GROW),
			  "source %d seals %#x", i, seals);
		cr_expect_eq(ftruncate(m.fd, 0), -1, "source %d shrank", i);
		dm.offset = m.fd_offset;
		cr_expect_eq(seal_cmd(s.fd, NKV_VFU_DMA_MAP, &dm, sizeof(dm), &m.fd, 1), 0,
			     "source %d refused", i);
		src[i]->ops->free(src[i], &m);
		src[i]->ops->destroy(src[i]);
	}
	seal_down(&s);
}
