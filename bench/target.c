/* SPDX-License-Identifier: MIT */
/*
 * target.c - the embedded nkv-target: the same vfio-user server as the
 * nkv-target program, run as threads of nkv-bench on a socket in a fresh
 * private directory, so the quick start needs nothing else running.
 * Namespace 1 is a mem backend sized for the run.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "target/backends/mem.h"
#include "target/vfio-user/server.h"

struct nkv_bench_target {
	char dir[64];
	char sock[96];
	char uri[128];
	struct nkv_subsys *ss;
	struct nkv_vfu_server *srv;
};

/* Enough for every key's value twice over, at least 1 GiB (the mem
 * backend takes memory only as values arrive). */
static uint64_t nkv_bench_capacity(const struct nkv_bench_opts *o)
{
	uint64_t need = 2ull * o->num_keys * o->buf_size;

	return need > (1ull << 30) ? need : (1ull << 30);
}

static int nkv_bench_subsys(const struct nkv_bench_opts *o, struct nkv_bench_target *t)
{
	struct nkv_subsys_opts so = { .size = sizeof(so), .model = "nkv-bench embedded" };
	struct nkv_be_mem_opts mo = { .size = sizeof(mo) };
	struct nkv_be *be;

	t->ss = nkv_subsys_create(&so);
	if (!t->ss)
		return -ENOMEM;
	mo.capacity = nkv_bench_capacity(o);
	mo.max_value = o->buf_size > (1u << 20) ? o->buf_size : (1u << 20);
	be = nkv_be_mem_create(&mo);
	if (!be)
		return -errno;
	return nkv_subsys_add_ns(t->ss, 1, be);
}

int nkv_bench_target_start(const struct nkv_bench_opts *o, struct nkv_bench_target **out,
			   char *err, size_t errlen)
{
	struct nkv_vfu_server_opts vo = { .size = sizeof(vo) };
	struct nkv_bench_target *t = calloc(1, sizeof(*t));
	int rc;

	if (!t)
		return -ENOMEM;
	snprintf(t->dir, sizeof(t->dir), "/tmp/nkv-bench-XXXXXX");
	if (!mkdtemp(t->dir)) {
		rc = -errno;
		snprintf(err, errlen, "cannot create a private directory in /tmp: %s", strerror(errno));
		free(t);
		return rc;
	}
	snprintf(t->sock, sizeof(t->sock), "%s/nkv.sock", t->dir);
	snprintf(t->uri, sizeof(t->uri), "vfio-user:%s", t->sock);
	rc = nkv_bench_subsys(o, t);
	if (rc) {
		snprintf(err, errlen, "embedded target: cannot build the mem namespace: %s",
			 strerror(-rc));
		nkv_bench_target_stop(t);
		return rc;
	}
	vo.socket_path = t->sock;
	vo.ss = t->ss;
	vo.ctrl.size = sizeof(vo.ctrl);
	vo.ctrl.max_ioq = o->num_queues > 8 ? o->num_queues : 8;
	vo.ctrl.mqes = o->queue_length > 1024 ? o->queue_length : 1024;
	vo.ctrl.dstrd = NKV_TGT_DSTRD_LINE;
	vo.poll_interval_ns = o->poll_ns;
	vo.max_conns = 4;
	vo.log_level = NKV_VFU_LOG_ERROR;
	rc = nkv_vfu_server_start(&vo, &t->srv);
	if (rc) {
		snprintf(err, errlen, "embedded target: cannot listen on %s: %s", t->sock,
			 strerror(-rc));
		nkv_bench_target_stop(t);
		return rc;
	}
	*out = t;
	return 0;
}

const char *nkv_bench_target_uri(const struct nkv_bench_target *t)
{
	return t->uri;
}

const char *nkv_bench_target_socket(const struct nkv_bench_target *t)
{
	return t->sock;
}

uint64_t nkv_bench_target_busy_ns(struct nkv_bench_target *t)
{
	struct nkv_vfu_server_stats st;

	nkv_vfu_server_stats(t->srv, &st);
	return st.busy_ns;
}

void nkv_bench_target_stop(struct nkv_bench_target *t)
{
	if (!t)
		return;
	if (t->srv)
		nkv_vfu_server_stop(t->srv);
	if (t->ss)
		nkv_subsys_destroy(t->ss);
	/* The server removed its socket; the directory is ours to remove. */
	unlink(t->sock);
	rmdir(t->dir);
	free(t);
}
