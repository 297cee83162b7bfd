/* SPDX-License-Identifier: MIT */
/*
 * target.c - the embedded nkv-target (src/target/embed.h): the same
 * vfio-user server as the nkv-target program, run as threads of nkv-bench
 * on a socket in a fresh private directory, so the quick start needs
 * nothing else running. Namespace 1 is a mem backend sized for the run.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "target/embed.h"

struct nkv_bench_target {
	struct nkv_tgt_embed *tgt;
};

/* Enough for every key's value twice over (--workload prefix: a
 * request's values), at least 1 GiB (the mem backend takes memory only
 * as values arrive). */
static uint64_t nkv_bench_capacity(const struct nkv_bench_opts *o)
{
	uint64_t n = o->workload == NKV_BENCH_WORKLOAD_PREFIX ? (uint64_t)o->blocks * o->layers
							       : o->num_keys;
	uint64_t need = 2ull * n * o->buf_size;

	return need > (1ull << 30) ? need : (1ull << 30);
}

int nkv_bench_target_start(const struct nkv_bench_opts *o, struct nkv_bench_target **out,
			   char *err, size_t errlen)
{
	struct nkv_tgt_embed_ns ns = { .backend = "mem", .conf = { .size = sizeof(ns.conf) } };
	struct nkv_tgt_embed_opts eo = { .size = sizeof(eo), .model = "nkv-bench embedded" };
	struct nkv_bench_target *t = calloc(1, sizeof(*t));
	char why[256];
	int rc;

	if (!t)
		return -ENOMEM;
	ns.conf.capacity = nkv_bench_capacity(o);
	/* max_value 0: nkv-target's default, 64 MiB, which --value-size
	 * never exceeds (opts.c); MDTS follows it. */
	eo.ns = &ns;
	eo.nns = 1;
	eo.dir_name = "nkv-bench";
	eo.server.size = sizeof(eo.server);
	eo.server.ctrl.size = sizeof(eo.server.ctrl);
	eo.server.ctrl.max_ioq = o->num_queues > 8 ? o->num_queues : 8;
	eo.server.ctrl.mqes = o->queue_length > 1024 ? o->queue_length : 1024;
	eo.server.ctrl.dstrd = NKV_TGT_DSTRD_LINE;
	eo.server.poll_interval_ns = o->poll_ns;
	eo.server.max_conns = 4;
	eo.server.log_level = NKV_VFU_LOG_ERROR;
	rc = nkv_tgt_embed_start(&eo, &t->tgt, why, sizeof(why));
	if (rc) {
		snprintf(err, errlen, "embedded target: %s", why);
		free(t);
		return rc;
	}
	*out = t;
	return 0;
}

const char *nkv_bench_target_uri(const struct nkv_bench_target *t)
{
	return nkv_tgt_embed_uri(t->tgt);
}

const char *nkv_bench_target_socket(const struct nkv_bench_target *t)
{
	return nkv_tgt_embed_socket(t->tgt);
}

uint64_t nkv_bench_target_busy_ns(struct nkv_bench_target *t)
{
	struct nkv_vfu_server_stats st;

	nkv_vfu_server_stats(nkv_tgt_embed_server(t->tgt), &st);
	return st.busy_ns;
}

void nkv_bench_target_stop(struct nkv_bench_target *t)
{
	if (!t)
		return;
	nkv_tgt_embed_stop(t->tgt);
	free(t);
}
