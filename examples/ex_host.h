/* SPDX-License-Identifier: MIT */
/*
 * ex_host.h - the host side every example shares (the GPU ones through
 * ex_gpu.h): connect, make keys, count doorbells. Static helpers (valid C
 * and C++); copy what you need.
 * Build against an installed nkv:
 *   cc -std=c11 example_cpu.c $(pkg-config --cflags --libs nkv) -pthread
 */
#ifndef NKV_EXAMPLES_EX_HOST_H
#define NKV_EXAMPLES_EX_HOST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkv_cpu.h"
#include "nkv_host.h"
#include "kv_kernels.h"

/* The target: argv[1], else $NKV_TARGET. */
static inline const char *ex_uri(int argc, char **argv, const char *prog)
{
	const char *u = argc > 1 ? argv[1] : getenv("NKV_TARGET");

	if (!u)
		fprintf(stderr, "usage: %s URI   (e.g. vfio-user:/tmp/nkv.sock; start one with\n"
			"  nkv-target --socket /tmp/nkv.sock), or set NKV_TARGET\n", prog);
	return u;
}

/* Connect with memory mode @mode and @queues I/O queue pairs. */
static inline struct nkv_ctrl *ex_connect_mode(const char *uri, uint32_t queues, uint32_t mode,
					       struct nkv_ctrl_info *info)
{
	struct nkv_ctrl_opts o = { .size = sizeof(o) };
	struct nkv_ctrl *c = NULL;
	char err[256] = "";
	int rc;

	o.memory_mode = mode;
	o.io_queues = queues;
	o.err = err;
	o.errlen = sizeof(err);
	rc = nkv_ctrl_connect(uri, &o, &c);
	if (rc) {
		fprintf(stderr, "cannot connect to %s: %s\n", uri, err[0] ? err : strerror(-rc));
		return NULL;
	}
	nkv_ctrl_get_info(c, info);
	return c;
}

/* The cpu-engine examples: memory mode 0x8 (values in "VRAM": the
 * emulated device arena when there is no GPU). */
static inline struct nkv_ctrl *ex_connect(const char *uri, uint32_t queues, struct nkv_ctrl_info *info)
{
	return ex_connect_mode(uri, queues, NKV_MEM_DATA, info);
}

/* A queue pair with one 4 KiB value slot per lane of a @wave-lane wave;
 * @flags NKV_QPAIR_DEVICE for one a GPU kernel drives. */
static inline struct nkv_qpair *ex_qpair_flags(struct nkv_ctrl *c, uint32_t wave, uint32_t flags)
{
	struct nkv_qpair_opts o = { .size = sizeof(o) };
	struct nkv_qpair *q = NULL;
	int rc;

	o.flags = flags;
	o.depth = 128;
	o.slots = wave;
	o.slot_size = 4096;
	rc = nkv_qpair_create(c, &o, &q);
	if (rc)
		fprintf(stderr, "cannot create a queue pair: %s\n", strerror(-rc));
	return q;
}

/* A queue pair for the cpu engine and the synchronous API. */
static inline struct nkv_qpair *ex_qpair(struct nkv_ctrl *c, uint32_t wave)
{
	return ex_qpair_flags(c, wave, 0);
}

/* Keys "<prefix><n>" for n in [first, first + count). */
static inline struct ex_key *ex_keys(const char *prefix, uint32_t first, uint32_t count)
{
	struct ex_key *k = (struct ex_key *)calloc(count, sizeof(*k));
	uint32_t i;

	for (i = 0; k && i < count; i++)
		k[i].len = (uint32_t)snprintf((char *)k[i].bytes, sizeof(k[i].bytes), "%s%u",
					      prefix, first + i);
	return k;
}

/* Counts SQ tail doorbell writes (the cpu engine's MMIO hook): a wave's
 * batch must ring once. */
static uint64_t ex_sq_writes;
static volatile uint32_t *ex_sq_db[64];

static inline void ex_db_hook(void *ctx, volatile uint32_t *addr, uint32_t v)
{
	int i;

	(void)ctx;
	(void)v;
	for (i = 0; i < 64; i++)
		if (ex_sq_db[i] == addr)
			__atomic_fetch_add(&ex_sq_writes, 1, __ATOMIC_RELAXED);
}

static inline void ex_count_doorbells(uint32_t i, struct nkv_qpair *q)
{
	ex_sq_db[i] = (volatile uint32_t *)(uintptr_t)nkv_qpair_dev(q)->sq_db_addr;
	nkv_cpu_set_mmio_hook(ex_db_hook, NULL);
}

/* Results: how many ok, how many 87h, anything else is a failure; the
 * first failures are named: the key, and whether the returned length or
 * which byte of the value was wrong. */
static inline int ex_check(const char *what, const struct ex_out *out, uint32_t n, uint32_t *misses)
{
	uint32_t i, bad = 0, miss = 0;

	for (i = 0; i < n; i++) {
		const struct ex_out *o = &out[i];

		if (o->status == NKV_STATUS(NKV_SCT_GENERIC, 0x87)) {
			miss++;
			continue;
		}
		if (!o->err && !o->status && !o->bad)
			continue;
		if (bad++ >= 5)
			continue;
		if (o->err || o->status)
			fprintf(stderr, "%s: key %u: error %d, status %#x (%s)\n", what, i, o->err,
				o->status, nkv_status_str(o->status));
		else if (o->bad_at == EX_LEN_BAD)
			fprintf(stderr, "%s: key %u: the controller returned length %u, not the %u "
				"bytes stored\n", what, i, o->len, o->want);
		else
			fprintf(stderr, "%s: key %u: the value differs from what was stored at "
				"byte %u of %u\n", what, i, o->bad_at, o->want);
	}
	if (misses)
		*misses = miss;
	else
		bad += miss;
	return bad ? -1 : 0;
}

#endif /* NKV_EXAMPLES_EX_HOST_H */
