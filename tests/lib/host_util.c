/* SPDX-License-Identifier: MIT */
/* host_util.c - see host_util.h. Every wait here is bounded. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "host_util.h"
#include "target/backends/mem.h"
#include "target/vfio-user/server.h"
#include "delay_be.h"
#include "liar_be.h"

uint64_t ht_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int ht_serve(struct ht_server *s, const struct ht_server_opts *o)
{
	struct nkv_subsys_opts so = { .size = sizeof(so), .model = "nkv-host-test" };
	struct nkv_be_mem_opts mo = { .size = sizeof(mo) };
	struct nkv_vfu_server_opts vo = { .size = sizeof(vo) };
	struct nkv_be *be;

	mo.capacity = o->capacity ? o->capacity : (1ull << 30);
	mo.nvm = o->nvm_only;
	s->ss = nkv_subsys_create(&so);
	be = nkv_be_mem_create(&mo);
	if (be && o->delay_hold_us)
		be = delay_be_create(be, 4000, o->delay_hold_us);
	if (be && o->lie_retrieve)
		be = liar_be_create(be);
	if (!s->ss || !be || nkv_subsys_add_ns(s->ss, 1, be))
		return -ENOMEM;
	vo.socket_path = s->path;
	vo.ss = s->ss;
	vo.ctrl.size = sizeof(vo.ctrl);
	vo.ctrl.max_ioq = o->max_ioq ? o->max_ioq : 8;
	vo.ctrl.mqes = o->mqes;
	vo.ctrl.quirks = o->quirks;
	vo.ctrl.dstrd = o->dstrd;
	vo.ctrl.to = 6;		/* CAP.TO 3 s: keeps failure cases short */
	vo.poll_interval_ns = 20000;
	vo.no_sparse_mmap = o->no_sparse;
	vo.max_conns = 8;
	vo.log_level = getenv("NKV_TEST_LOG") ? NKV_VFU_LOG_DEBUG : NKV_VFU_LOG_ERROR;
	return nkv_vfu_server_start(&vo, &s->srv);
}

static void ht_names(struct ht_server *s)
{
	static int seq;

	memset(s, 0, sizeof(*s));
	snprintf(s->path, sizeof(s->path), "/tmp/nkv-host-test-%d-%d.sock", (int)getpid(), seq++);
	snprintf(s->uri, sizeof(s->uri), "vfio-user:%s", s->path);
}

int ht_server_start(struct ht_server *s, const struct ht_server_opts *o)
{
	struct ht_server_opts def = { 0 };

	ht_names(s);
	return ht_serve(s, o ? o : &def);
}

int ht_server_fork(struct ht_server *s, const struct ht_server_opts *o)
{
	struct ht_server_opts def = { 0 };
	struct stat st;
	uint64_t t0;

	ht_names(s);
	s->pid = fork();
	if (s->pid < 0)
		return -errno;
	if (s->pid == 0) {
		/* The child serves until killed, or for 60 s at most. */
		if (ht_serve(s, o ? o : &def))
			_exit(1);
		sleep(60);
		_exit(0);
	}
	for (t0 = ht_now_ms(); ht_now_ms() - t0 < 5000; usleep(2000))
		if (!stat(s->path, &st))
			return 0;
	return -ETIMEDOUT;
}

void ht_server_kill(struct ht_server *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
		unlink(s->path);
	}
}

void ht_server_stop(struct ht_server *s)
{
	if (s->pid > 0) {
		ht_server_kill(s);
		return;
	}
	if (s->srv)
		nkv_vfu_server_stop(s->srv);
	if (s->ss)
		nkv_subsys_destroy(s->ss);
	s->srv = NULL;
	s->ss = NULL;
}

int ht_connect(const struct ht_server *s, uint32_t mode, uint32_t ioq,
	       struct nkv_ctrl **c, char *err, size_t errlen)
{
	struct nkv_ctrl_opts o = { .size = sizeof(o) };

	o.memory_mode = mode;
	o.io_queues = ioq;
	o.err = err;
	o.errlen = errlen;
	return nkv_ctrl_connect(s->uri, &o, c);
}

uint32_t ht_key(uint32_t i, uint32_t salt, uint8_t key[16])
{
	/* Lengths 7..16 in turn; distinct for distinct (i < 2^16, salt < 2^8). */
	uint32_t len = 7 + (i % 10), j;
	uint64_t v = (uint64_t)i << 8 | (salt & 0xffu);

	memset(key, 0, 16);
	key[0] = 'k';
	for (j = 1; j < len; j++) {
		key[j] = "0123456789abcdef"[v & 15];
		v >>= 4;
	}
	return len;
}

uint32_t ht_size(uint32_t i, uint32_t salt, uint32_t max)
{
	uint32_t h = (i + 1) * 2654435761u ^ salt * 40503u;
	double u;

	h ^= h >> 15;
	h *= 2246822519u;
	h ^= h >> 13;
	u = (double)h / 4294967296.0;
	/* exp(u ln max) spans 1..max log-uniformly. */
	return (uint32_t)fmin((double)max, fmax(1.0, floor(exp(u * log((double)max + 1)))));
}

static uint32_t ht_lfsr(uint32_t x)
{
	return (x >> 1) ^ (-(x & 1u) & 0x80200003u);
}

void ht_fill(void *buf, uint32_t len, uint32_t seed)
{
	uint8_t *p = buf;
	uint32_t x = seed | 1u, i;

	for (i = 0; i < len; i++) {
		x = ht_lfsr(x);
		p[i] = (uint8_t)x;
	}
}

long ht_check(const void *buf, uint32_t len, uint32_t seed)
{
	const uint8_t *p = buf;
	uint32_t x = seed | 1u, i;

	for (i = 0; i < len; i++) {
		x = ht_lfsr(x);
		if (p[i] != (uint8_t)x)
			return i;
	}
	return -1;
}
