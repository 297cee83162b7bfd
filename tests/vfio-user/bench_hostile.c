/* SPDX-License-Identifier: MIT */
/*
 * bench_hostile.c - the figure of docs/bench.md "One good client beside
 * hostile ones" (issue 18): one good client's 4 KiB Store/Retrieve loop,
 * alone and then beside 16 hostile connections (4 idle, 4 dripping a
 * message a byte at a time, 4 mapping and unmapping 32 GiB sparse memfds,
 * 4 flooding 1-byte values), against an in-process nkv-target with
 * max_conns 32. Prints pairs per second and any value lost. Not a test:
 * `make bench-hostile`, then build/bench/bench_hostile [seconds].
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "vfio-user/msg.h"
#include "vfu_util.h"

static struct tl_server srv;
static int stop;	/* atomic */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int running(void) { return !__atomic_load_n(&stop, __ATOMIC_ACQUIRE); }

static int bh_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	strcpy(sa.sun_path, srv.path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		abort();
	return fd;
}

/* One command, its reply's errno (0 ok), -1 when the connection is gone. */
static int bh_cmd(int fd, uint16_t cmd, const void *p, size_t len, int *mfd)
{
	struct nkv_vfu_hdr h = { .msg_id = 1, .cmd = cmd };
	struct nkv_vfu_msg m;
	int rc;

	if (nkv_vfu_send(fd, &h, p, len, mfd, mfd ? 1 : 0) || nkv_vfu_recv(fd, &m, NKV_VFU_MAX_MSG))
		return -1;
	rc = (m.hdr.flags & NKV_VFU_F_ERROR) ? (int)m.hdr.error : 0;
	nkv_vfu_msg_free(&m);
	return rc;
}

static int bh_negotiated(void)
{
	struct nkv_vfu_version v = { 0, 1 };
	int fd = bh_connect();

	if (bh_cmd(fd, NKV_VFU_VERSION, &v, sizeof(v), NULL))
		abort();
	return fd;
}

static void *bh_idle(void *arg)
{
	int fd = bh_connect();

	(void)arg;
	while (running())
		usleep(10000);
	close(fd);
	return NULL;
}

/* A message dripped a byte every 100 ms; reconnect when dropped. */
static void *bh_drip(void *arg)
{
	struct nkv_vfu_hdr h = { 7, NKV_VFU_REGION_WRITE, 1u << 20, 0, 0 };
	const uint8_t *b = (const uint8_t *)&h;
	int fd = bh_negotiated();
	size_t i = 0;

	(void)arg;
	while (running()) {
		if (send(fd, b + i % sizeof(h), 1, MSG_NOSIGNAL) != 1) {
			close(fd);
			fd = bh_negotiated();
		}
		i++;
		usleep(100000);
	}
	close(fd);
	return NULL;
}

/* DMA_MAP / DMA_UNMAP of a 32 GiB sparse memfd, as fast as answered. */
static void *bh_maps(void *arg)
{
	struct nkv_vfu_dma_map dm = { sizeof(dm), 3, 0, 0, 32ull << 30 };
	struct nkv_vfu_dma_unmap du = { sizeof(du), 0, 0, 32ull << 30 };
	int fd = bh_negotiated(), mfd = memfd_create("bh", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	(void)arg;
	if (mfd < 0 || ftruncate(mfd, (off_t)dm.size) ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW))
		abort();
	while (running()) {
		(void)bh_cmd(fd, NKV_VFU_DMA_MAP, &dm, sizeof(dm), &mfd);
		dm.addr = du.addr = (dm.addr + (32ull << 30)) % (1ull << 40);
		(void)bh_cmd(fd, NKV_VFU_DMA_MAP, &dm, sizeof(dm), &mfd);
		(void)bh_cmd(fd, NKV_VFU_DMA_UNMAP, &du, sizeof(du), NULL);
	}
	close(mfd);
	close(fd);
	return NULL;
}

/* 1-byte values under fresh keys until the namespace is full, then on. */
static void *bh_flood(void *arg)
{
	long id = (long)arg;
	struct vt_nvme n;
	struct nkv_sqe s;
	char key[16];
	unsigned i = 0;

	if (vt_nvme_up(&n, srv.path))
		abort();
	while (running()) {
		snprintf(key, sizeof(key), "f%ld-%u", id, i++);
		vt_kv_sqe(&s, NKV_KV_STORE, key, vt_iova(&n, VT_DATA), 1);
		(void)vt_cmd(&n, 1, &s, NULL);
	}
	vt_nvme_down(&n);
	return NULL;
}

/* The good client: pairs per second over secs; *lost counts bad pairs. */
static double bh_good(unsigned secs, unsigned *lost)
{
	uint64_t t0, end, pairs = 0;
	struct vt_nvme n;
	struct nkv_sqe s;
	char key[16];

	if (vt_nvme_up(&n, srv.path))
		abort();
	t0 = now_ns();
	end = t0 + secs * 1000000000ull;
	while (now_ns() < end) {
		snprintf(key, sizeof(key), "good-%u", (unsigned)(pairs % 256));
		memset(vt_page(&n, VT_DATA), (int)(pairs & 0xff), 4096);
		vt_kv_sqe(&s, NKV_KV_STORE, key, vt_iova(&n, VT_DATA), 4096);
		if (vt_cmd(&n, 1, &s, NULL))
			(*lost)++;
		vt_kv_sqe(&s, NKV_KV_RETRIEVE, key, vt_iova(&n, VT_DATA + 1), 4096);
		if (vt_cmd(&n, 1, &s, NULL) ||
		    memcmp(vt_page(&n, VT_DATA), vt_page(&n, VT_DATA + 1), 4096))
			(*lost)++;
		pairs++;
	}
	vt_nvme_down(&n);
	return (double)pairs * 1e9 / (double)(now_ns() - t0);
}

static void bh_tweak(struct nkv_vfu_server_opts *o)
{
	o->max_conns = 32;
	o->poll_interval_ns = 0;	/* nkv-target's default, 100 us */
	o->log_level = NKV_VFU_LOG_ERROR;
}

int main(int argc, char **argv)
{
	static void *(*const kinds[4])(void *) = { bh_idle, bh_drip, bh_maps, bh_flood };
	unsigned secs = argc > 1 ? (unsigned)atoi(argv[1]) : 5, lost_alone = 0, lost = 0;
	pthread_t t[16];
	double alone, beside;
	long i;

	if (vt_server_start_with(&srv, 0, bh_tweak))
		return 1;
	alone = bh_good(secs, &lost_alone);
	for (i = 0; i < 16; i++)
		if (pthread_create(&t[i], NULL, kinds[i / 4], (void *)i))
			return 1;
	usleep(500000);	/* the flood fills the namespace meanwhile */
	beside = bh_good(secs, &lost);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < 16; i++)
		pthread_join(t[i], NULL);
	printf("cores=%ld secs=%u\n", sysconf(_SC_NPROCESSORS_ONLN), secs);
	printf("alone:  %.0f Store+Retrieve pairs/s, %u lost\n", alone, lost_alone);
	printf("beside 16 hostile: %.0f pairs/s (%.0f %% of alone), %u lost\n", beside,
	       100.0 * beside / alone, lost);
	tl_server_stop(&srv);
	return lost || lost_alone;
}
