/* SPDX-License-Identifier: MIT */
/* host_util.c - see host_util.h. */
#include <math.h>
#include <string.h>

#include "cfs_be.h"
#include "delay_be.h"
#include "host_util.h"
#include "liar_be.h"

/* The backends a test asked for in front of the mem one. */
static struct nkv_be *ht_wrap(void *arg, uint32_t nsid, struct nkv_be *be)
{
	const struct ht_server_opts *o = arg;

	(void)nsid;
	if (be && o->no_store_opts)
		be->store_opts = 0;	/* the core answers and advertises from it */
	if (be)
		be->cmd_timeout_ms = o->cmd_timeout_ms;	/* the wrappers copy it */
	if (be && o->delay_hold_us)
		be = delay_be_create(be, 4000, o->delay_hold_us);
	if (be && o->stop_after) {
		be = delay_be_create(be, 4000, 600000000u);
		if (be)
			delay_be_pass(be, o->stop_after);
	}
	if (be && (o->lie_retrieve || o->lie_list || o->lie_status))
		be = liar_be_create(be, (o->lie_retrieve ? LIAR_RETRIEVE : 0) |
					(o->lie_list ? LIAR_LIST : 0) |
					(o->lie_status ? LIAR_STATUS : 0));
	if (be && o->cfs_after)
		be = cfs_be_create(be, o->cfs_after);	/* outermost: see cfs_be.h */
	return be;
}

/* The host suites' target: namespace 1 of the mem backend (KV, or NVM),
 * CAP.TO 3 s to keep failure cases short, eight connections. */
static int ht_serve(struct tl_server *s, const struct ht_server_opts *o, int forked)
{
	static const struct ht_server_opts def;
	struct nkv_tgt_embed_ns ns = { .backend = "mem", .conf = { .size = sizeof(ns.conf) } };
	struct nkv_tgt_embed_opts eo;

	o = o ? o : &def;
	tl_server_opts(&eo);
	eo.model = "nkv-host-test";
	ns.conf.nvm = o->nvm_only;
	ns.conf.read_only = o->read_only;
	ns.conf.capacity = o->capacity ? o->capacity : (1ull << 30);
	ns.conf.max_value = o->max_value;
	eo.ns = &ns;
	eo.nns = 1;
	eo.wrap = ht_wrap;
	eo.wrap_arg = (void *)o;
	eo.server.ctrl.max_ioq = o->max_ioq ? o->max_ioq : 8;
	eo.server.ctrl.mqes = o->mqes;
	eo.server.ctrl.quirks = o->quirks;
	eo.server.ctrl.dstrd = o->dstrd;
	eo.server.ctrl.mdts = o->mdts;
	eo.server.ctrl.sgls = o->sgls;
	eo.server.ctrl.kml = o->kml;
	eo.server.ctrl.to = 6;
	eo.server.no_sparse_mmap = o->no_sparse;
	eo.server.max_conns = 8;
	return forked ? tl_server_fork(s, "nkv-host-test", &eo)
		    : tl_server_start(s, "nkv-host-test", &eo);
}

int ht_server_start(struct tl_server *s, const struct ht_server_opts *o)
{
	return ht_serve(s, o, 0);
}

int ht_server_fork(struct tl_server *s, const struct ht_server_opts *o)
{
	return ht_serve(s, o, 1);
}

int ht_connect(const struct tl_server *s, uint32_t mode, uint32_t ioq,
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
