/* SPDX-License-Identifier: MIT */
/*
 * tcp_bench.c - nkv-target over NVMe/TCP on loopback, beside its
 * references, in one run (docs/bench.md, "NVMe/TCP"):
 *
 *   tcp_bench NKV_TARGET [SIZE_MIB [ROUNDS]]
 *
 *   stream     a plain TCP stream of SIZE MiB between two processes, each
 *              way (the child sends / receives, the parent the other end):
 *              the loopback's own rate, what a transport can at best reach
 *   store      Store of a SIZE MiB value over NVMe/TCP (R2T/H2CData) to
 *              NKV_TARGET --listen tcp:0 (another process, mem backend)
 *   retrieve   Retrieve of it (C2HData), every byte compared outside the
 *              timed part
 *   the same two with header and data digests on
 *   retrieve4k 4 KiB Retrieves, 32 in flight (32 CapsuleCmds written,
 *              then 32 C2HData + CapsuleResp read), per second
 *
 * The host side is the test host (tests/lib/tcp_host.c; issue 45's
 * initiator will replace it). Each figure is the median of ROUNDS
 * (default 5). Prints one JSON object per line.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "tcp_host.h"

static double tb_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int tb_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double tb_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), tb_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int tb_full(int fd, void *p, size_t n, int out)
{
	uint8_t *b = p;

	while (n) {
		ssize_t k = out ? send(fd, b, n, MSG_NOSIGNAL) : recv(fd, b, n, 0);

		if (k <= 0)
			return -1;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The child's end of the stream: per round, receive size bytes and ack
 * one, then send size bytes. */
static void tb_stream_child(int lfd, size_t size, int rounds, uint8_t *buf)
{
	int fd = accept(lfd, NULL, NULL), r;
	uint8_t ack = 1;

	for (r = 0; r < rounds && fd >= 0; r++)
		if (tb_full(fd, buf, size, 0) || tb_full(fd, &ack, 1, 1) ||
		    tb_full(fd, buf, size, 1))
			break;
	_exit(0);
}

/* Plain TCP between this process and a child: the connection (*pid the
 * child's), or -1. */
static int tb_stream_open(size_t size, int rounds, uint8_t *buf, pid_t *pid)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM, 0), fd;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&a, &al))
		return -1;
	*pid = fork();
	if (!*pid)
		tb_stream_child(lfd, size, rounds, buf);
	close(lfd);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	return fd;
}

/* One round of the stream: MB/s to the child and from it. */
static void tb_stream_round(int fd, uint8_t *buf, size_t size, double *up, double *down)
{
	uint8_t ack;
	double t0 = tb_now();

	tb_full(fd, buf, size, 1);
	tb_full(fd, &ack, 1, 0);
	*up = (double)size / (tb_now() - t0) / 1e6;
	t0 = tb_now();
	tb_full(fd, buf, size, 0);
	*down = (double)size / (tb_now() - t0) / 1e6;
}

/* nkv-target --listen tcp:0 as a child; its port from its log. */
static pid_t tb_target(const char *path, uint16_t *port)
{
	char line[512], *p;
	int fds[2];
	FILE *f;
	pid_t pid;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (!pid) {
		dup2(fds[1], 2);
		close(fds[0]);
		execl(path, "nkv-target", "--listen", "tcp:0", "--capacity", "2G",
		      "--max-value", "64M", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	*port = 0;
	while (!*port && fgets(line, sizeof(line), f))
		if (strstr(line, "event=tcp_listening") && (p = strstr(line, " port=")))
			*port = (uint16_t)atoi(p + 6);
	/* Its stderr stays open (a pipe nobody reads would block it only
	 * past 64 KiB of log; at level info it writes a line per connection). */
	return pid;
}

/* One round of Store and Retrieve of a size-byte value: MB/s each;
 * -1 when a command failed or the value came back different. */
static int tb_kv_round(struct th *io, const uint8_t *v, uint8_t *back, size_t size,
		       double *st, double *rt)
{
	uint32_t dw0, got;
	double t0 = tb_now();
	int bad;

	bad = th_store(io, "bench", 5, v, (uint32_t)size) != 0;
	*st = (double)size / (tb_now() - t0) / 1e6;
	t0 = tb_now();
	bad |= th_retrieve(io, "bench", 5, back, (uint32_t)size, &dw0, &got) != 0;
	*rt = (double)size / (tb_now() - t0) / 1e6;
	return bad || got != size || memcmp(v, back, size) ? -1 : 0;
}

/* 32 Retrieves of 4 KiB written at once, then their answers read. */
static int tb_batch(struct th *io, uint8_t *buf)
{
	struct nkv_tcp_cmd c[32];
	int i, done = 0, n;

	memset(c, 0, sizeof(c));
	for (i = 0; i < 32; i++) {
		c[i].ch.type = NKV_TCP_CMD;
		nkv_tcp_ch_init(&c[i].ch, NKV_TCP_CMD, 0, 72, 0, 72);
		c[i].sqe.cdw0 = NKV_KV_RETRIEVE | (1u << 14) | ((uint32_t)(i + 1) << 16);
		c[i].sqe.nsid = 1;
		memcpy(&c[i].sqe.cdw2, "k4k", 3);
		c[i].sqe.cdw10 = 4096;
		c[i].sqe.cdw11 = 3;
		nkv_sqe_sgl1_set(&c[i].sqe, 0, 4096, 0);
		c[i].sqe.prp2 |= (uint64_t)NKV_TCP_SGL_TRANSPORT << 56;
	}
	if (th_send(io, c, sizeof(c)))
		return -1;
	while (done < 32) {
		n = th_recv_pdu(io, buf, 8192);
		if (n <= 0)
			return -1;
		if (buf[0] == NKV_TCP_RSP) {
			if (((const struct nkv_tcp_rsp *)buf)->cqe.dw3 >> 17)
				return -1;
			done++;
		}
	}
	return 0;
}

static double tb_4k(uint16_t port, int rounds)
{
	uint8_t v[4096], buf[8192];
	double t0, k[64];
	struct th a, io;
	int r, b;

	memset(v, 1, sizeof(v));
	if (th_admin(&a, port, 0, 0, TH_SUBNQN, 0) || th_io(&io, &a, 1) ||
	    th_store(&io, "k4k", 3, v, sizeof(v)))
		return -1;
	for (r = 0; r < rounds; r++) {
		t0 = tb_now();
		for (b = 0; b < 200; b++)
			if (tb_batch(&io, buf))
				return -1;
		k[r] = 200.0 * 32 / (tb_now() - t0);
	}
	th_close(&io);
	th_close(&a);
	return tb_median(k, rounds);
}

struct tb_res {
	double up[64], down[64];		/* the stream */
	double st[2][64], rt[2][64];		/* NVMe/TCP, digests off / on */
	double rst[2][64], rrt[2][64];		/* each over the same round's stream */
};

/*
 * Every round measures all of them one after the other (stream, then
 * NVMe/TCP without and with digests), so that the ratios compare figures
 * taken under the same load: on a shared machine the load between
 * rounds varies more than anything measured here.
 */
static int tb_rounds(int sfd, struct th io[2], size_t size, int rounds, struct tb_res *r)
{
	uint8_t *v = malloc(size), *back = malloc(size);
	int i, d, bad = 0;
	size_t k;

	for (k = 0; k < size; k++)
		v[k] = (uint8_t)(k * 31 + 7);
	for (i = 0; i < rounds && !bad; i++) {
		tb_stream_round(sfd, back, size, &r->up[i], &r->down[i]);
		for (d = 0; d < 2; d++) {
			bad |= tb_kv_round(&io[d], v, back, size, &r->st[d][i], &r->rt[d][i]);
			r->rst[d][i] = r->st[d][i] / r->up[i];
			r->rrt[d][i] = r->rt[d][i] / r->down[i];
		}
	}
	free(v);
	free(back);
	return bad ? -1 : 0;
}

static void tb_print(const struct tb_res *rc, size_t size, int rounds, double k4)
{
	struct tb_res r = *rc;
	int d;

	printf("{\"what\": \"stream\", \"bytes\": %zu, \"rounds\": %d, \"to_MBps\": %.0f, "
	       "\"from_MBps\": %.0f}\n", size, rounds, tb_median(r.up, rounds),
	       tb_median(r.down, rounds));
	for (d = 0; d < 2; d++)
		printf("{\"what\": \"nvme-tcp\", \"digests\": %s, \"store_MBps\": %.0f, "
		       "\"retrieve_MBps\": %.0f, \"store_x_stream\": %.2f, "
		       "\"retrieve_x_stream\": %.2f}\n", d ? "true" : "false",
		       tb_median(r.st[d], rounds), tb_median(r.rt[d], rounds),
		       tb_median(r.rst[d], rounds), tb_median(r.rrt[d], rounds));
	printf("{\"what\": \"retrieve4k_batch32\", \"iops\": %.0f}\n", k4);
}

/* SIZE: MiB (a plain number, as before), or with a K or M suffix. */
static size_t tb_size(const char *s)
{
	char *end;
	size_t n = strtoull(s, &end, 10);

	if (*end == 'K' || *end == 'k')
		return end[1] ? 0 : n << 10;
	if (*end == 'M' || *end == 'm')
		end++;
	return *end ? 0 : n << 20;
}

int main(int argc, char **argv)
{
	size_t size = argc > 2 ? tb_size(argv[2]) : 32u << 20;
	int rounds = argc > 3 ? atoi(argv[3]) : 5, sfd, rc = 0;
	static struct tb_res r;
	struct th a[2], io[2];
	uint8_t *sbuf;
	double k4 = -1;
	uint16_t port;
	pid_t tgt, spid = -1;

	if (argc < 2 || rounds < 1 || rounds > 64 || !size) {
		fprintf(stderr, "usage: tcp_bench NKV_TARGET [SIZE (MiB, or 64K, 2M) [ROUNDS<=64]]\n");
		return 2;
	}
	sbuf = calloc(1, size);
	sfd = tb_stream_open(size, rounds, sbuf, &spid);
	tgt = tb_target(argv[1], &port);
	if (sfd < 0 || tgt < 0 || !port) {
		fprintf(stderr, "tcp_bench: the stream's child or %s did not start\n", argv[1]);
		return 3;
	}
	if (th_admin(&a[0], port, 0, 0, TH_SUBNQN, 0) || th_io(&io[0], &a[0], 1) ||
	    th_admin(&a[1], port, 1, 1, TH_SUBNQN, 0) || th_io(&io[1], &a[1], 1) ||
	    tb_rounds(sfd, io, size, rounds, &r) || (k4 = tb_4k(port, rounds)) < 0) {
		fprintf(stderr, "tcp_bench: a command failed or a value did not verify\n");
		rc = 1;
	}
	close(sfd);
	waitpid(spid, NULL, 0);
	kill(tgt, SIGTERM);
	waitpid(tgt, NULL, 0);
	if (!rc)
		tb_print(&r, size, rounds, k4);
	return rc;
}
