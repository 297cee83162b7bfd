/* SPDX-License-Identifier: MIT */
/*
 * prefix.c - nkv-bench --workload prefix: an LLM serving engine's
 * requests against a KV-cache tier. A request is --blocks blocks, each
 * --layers values of --value-size bytes, keyed as the prefix_cache
 * example keys them (examples/pc_keys.h: block hashes chained over the
 * token ids, one key per layer). The request's first --hit-ratio x
 * --blocks blocks are stored first (not measured); then each request
 * runs, on the cpu engine, the example's kernel body
 * (examples/prefix_kernels.h, on nkv_kvcache.h):
 *   the prefix lookup over its blocks' layer-0 keys (timed: its latency),
 *   a Retrieve of every layer of the hits into pages of the pool,
 *   content-addressed Stores of the misses (filled first, not measured),
 * then, not measured, every page checked (--verify) and the misses
 * deleted, so the next request misses them again. Each request has
 * tokens of its own after the shared prefix, so each finds exactly the
 * stored prefix; a salt per run in every block hash (vLLM's cache salt)
 * keeps an earlier run's blocks on the target from changing the hits.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "nkv_cpu.h"
#include "pc_keys.h"
#include "prefix_kernels.h"

#define NKV_BENCH_PFX_TOKENS 16u	/* tokens per block */
#define NKV_BENCH_PFX_MAX_PAGES (1u << 20)
#define NKV_BENCH_PFX_MAX_REQUESTS (1u << 20)
/* prefix_flags: which flags were given. */
#define NKV_BENCH_PFX_BLOCKS 0x1
#define NKV_BENCH_PFX_RATIO 0x2
#define NKV_BENCH_PFX_LAYERS 0x4

struct nkv_bench_prefix_res {
	uint32_t blocks, layers, hits;	/* hits: blocks stored first */
	double hit_ratio;
	uint32_t klen, salt;
	uint32_t requests;		/* measured */
	uint32_t hits_min, hits_max;	/* what the lookups found */
	uint64_t lookup_cmds, lookup_total_ns;
	double *lookup_ns;		/* per request */
	uint64_t retrieved, retrieve_ns, stored, store_ns, exists;
	uint64_t outcomes[5];		/* enum nkv_kvc_outcome */
	uint64_t measured_ns;		/* lookups + retrieves + stores */
	uint64_t value_size;
};

struct nkv_bench_pfx {
	const struct nkv_bench_opts *o;
	struct nkv_ctrl *ctrl;
	struct nkv_ctrl_info info;
	struct nkv_qpair *q;
	struct nkv_dev_qp *qp;
	struct pc_chain chain;
	uint8_t *keys;			/* [layer][block] of the request */
	uint32_t *pages;
	struct nkv_kvc_entry *out;
	struct pc_res res;
	struct pc_args a;
	volatile uint32_t *sq_db, *cq_db;
	uint64_t sq, cq;		/* doorbell writes (the lanes') */
	/* --dest region: the engine's cache (vLLM's layout) in a region. */
	struct nkv_mr *mr;
	struct nkv_dev_base *base;
	struct nkv_kvc_layout lay;
	char why[256];
};

/* ---- flags ---- */

static int nkv_bench_pfx_bad(const char *arg, const char *flag, const char *want)
{
	fprintf(stderr, "nkv-bench: bad value '%s' for --%s: expected %s\n", arg, flag, want);
	return NKV_EXIT_USAGE;
}

static int nkv_bench_pfx_uint(const char *arg, const char *flag, uint32_t max, uint32_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || *arg == '-' || *arg == '+' || *arg == ' ' || !v ||
	    v > max) {
		char want[32];

		snprintf(want, sizeof(want), "1..%u", max);
		return nkv_bench_pfx_bad(arg, flag, want);
	}
	*out = (uint32_t)v;
	return 0;
}

int nkv_bench_prefix_opt(int opt, const char *arg, struct nkv_bench_opts *o)
{
	char *end;

	switch (opt) {
	case NKV_BENCH_OPT_WORKLOAD:
		if (strcmp(arg, "kv") && strcmp(arg, "prefix"))
			return nkv_bench_pfx_bad(arg, "workload", "kv|prefix");
		o->workload = arg[0] == 'p' ? NKV_BENCH_WORKLOAD_PREFIX : NKV_BENCH_WORKLOAD_KV;
		return 0;
	case NKV_BENCH_OPT_BLOCKS:
		o->prefix_flags |= NKV_BENCH_PFX_BLOCKS;
		return nkv_bench_pfx_uint(arg, "blocks", 65536, &o->blocks);
	case NKV_BENCH_OPT_LAYERS:
		o->prefix_flags |= NKV_BENCH_PFX_LAYERS;
		return nkv_bench_pfx_uint(arg, "layers", 1024, &o->layers);
	default:
		o->prefix_flags |= NKV_BENCH_PFX_RATIO;
		errno = 0;
		o->hit_ratio = strtod(arg, &end);
		if (errno || end == arg || *end || *arg == ' ' || !(o->hit_ratio >= 0.0) ||
		    o->hit_ratio > 1.0)
			return nkv_bench_pfx_bad(arg, "hit-ratio", "0..1 (e.g. 0.75)");
		return 0;
	}
}

/* What the workload cannot take, in words; NULL when all is well. */
static const char *nkv_bench_pfx_refuse(const struct nkv_bench_opts *o)
{
	if (o->engine == NKV_BENCH_ENGINE_GPU)
		return "--engine gpu: --workload prefix runs on the cpu engine only (nkv-bench's "
		       "GPU launcher runs the bench kernel, not the prefix kernel; "
		       "examples/prefix_cache_gpu.cu runs it on a GPU); use --engine cpu";
	if (o->keys_given)
		return "--keys: --workload prefix derives its keys from the blocks' content";
	if (o->key_order == NKV_BENCH_KEYS_HASH || o->key_size)
		return "--key-order hash / --key-size: --workload prefix keys are 16-byte "
		       "XXH3-128, or 32-byte SHA-256 with --key-order sha256";
	if (o->num_queues > 1)
		return "--num-queues: --workload prefix runs one wave on one queue pair";
	if (o->fill_once)
		return "--fill once is for --workload kv (prefix fills each miss before its Store)";
	if (o->ttl_s)
		return "--ttl: --workload prefix stores its misses without a TTL (the "
		       "content-addressed Store of nkv_kvcache.h takes none yet)";
	if (o->batch > NKV_WAVE_MAX)
		return "--batch-size: with --workload prefix a batch is the wave's width, 1..64";
	if (o->value_size % 4u)
		return "--value-size: --workload prefix writes values in 4-byte words; give a "
		       "multiple of 4";
	if (o->dest_region && o->value_size % 8u)
		return "--value-size: with --dest region a value is a block's K and V halves "
		       "of 4-byte words; give a multiple of 8";
	if (o->queue_length - 1u < 3u * o->batch)
		return "--queue-length: --workload prefix keeps three batches in flight; give "
		       "at least 3 x --batch-size + 1";
	if ((uint64_t)o->blocks * o->layers > NKV_BENCH_PFX_MAX_PAGES)
		return "--blocks x --layers: a request's values are pages of one pool, at most "
		       "1048576";
	if ((uint64_t)o->iterations + o->warmup > NKV_BENCH_PFX_MAX_REQUESTS)
		return "--iterations + --warmup: --workload prefix keeps each request's lookup "
		       "time; at most 1048576 requests";
	return NULL;
}

int nkv_bench_prefix_check(struct nkv_bench_opts *o)
{
	const char *why;

	if (o->workload != NKV_BENCH_WORKLOAD_PREFIX) {
		if (!o->prefix_flags)
			return 0;
		fprintf(stderr, "nkv-bench: --blocks, --hit-ratio and --layers are for "
			"--workload prefix\n");
		return NKV_EXIT_USAGE;
	}
	if (!(o->prefix_flags & NKV_BENCH_PFX_BLOCKS))
		o->blocks = 64;
	if (!(o->prefix_flags & NKV_BENCH_PFX_LAYERS))
		o->layers = 1;
	if (!(o->prefix_flags & NKV_BENCH_PFX_RATIO))
		o->hit_ratio = 0.75;
	why = nkv_bench_pfx_refuse(o);
	if (why) {
		fprintf(stderr, "nkv-bench: %s\n", why);
		return NKV_EXIT_USAGE;
	}
	o->engine = NKV_BENCH_ENGINE_CPU;
	o->op_name = "prefix";
	return 0;
}

/* ---- the run ---- */

static void nkv_bench_pfx_say(struct nkv_bench_pfx *p, const char *what, int rc)
{
	snprintf(p->why, sizeof(p->why), "%s: %s", what, strerror(-rc));
}

/* The cpu engine's doorbell stores: which of the queue pair's. */
static void nkv_bench_pfx_hook(void *ctx, volatile uint32_t *addr, uint32_t v)
{
	struct nkv_bench_pfx *p = ctx;

	(void)v;
	if (addr == p->sq_db)
		p->sq++;
	else if (addr == p->cq_db)
		p->cq++;
}

static void nkv_bench_pfx_lane(void *arg)
{
	struct nkv_bench_pfx *p = arg;

	pc_run(p->qp, &p->a);
}

/* One launch of the kernel: @op on blocks first..first+count-1. */
/* The I/O wait the library gave the pool's queue pair. */
static uint32_t nkv_bench_pfx_wait(struct nkv_bench_pfx *p)
{
	struct nkv_qpair_info info = { .size = sizeof(info) };

	return nkv_qpair_get_info(p->q, &info) ? p->o->timeout_ms : info.timeout_ms;
}

static int nkv_bench_pfx_op(struct nkv_bench_pfx *p, enum pc_op op, uint32_t first,
			    uint32_t count)
{
	struct nkv_cpu_cfg cfg = { .size = sizeof(cfg), .mode = NKV_CPU_FIBERS, .waves = 1 };
	int rc;

	cfg.wave_size = p->o->batch;
	cfg.sched = p->o->poll_sched;
	p->a.op = op;
	p->a.first = first;
	p->a.count = count;
	p->a.compute_ns = 0;
	memset(&p->res, 0, sizeof(p->res));
	rc = nkv_cpu_launch(&cfg, nkv_bench_pfx_lane, p);
	if (rc) {
		nkv_bench_pfx_say(p, "the cpu engine's launch failed", rc);
		return rc;
	}
	switch (nkv_qpair_failed(p->q)) {
	case NKV_QP_OK:
		return 0;
	case NKV_QP_FAILED_GONE:
		snprintf(p->why, sizeof(p->why), "%s", nkv_bench_dev_err_str(NKV_ENOTCONN));
		return -ENOTCONN;
	case NKV_QP_FAILED_TIMEOUT:
		nkv_bench_dev_err_why(p->o, nkv_bench_pfx_wait(p), NKV_ETIMEDOUT, p->why,
				      sizeof(p->why));
		return -ETIMEDOUT;
	default:
		snprintf(p->why, sizeof(p->why), "the queue pair failed (reason %u: a bad "
			 "completion)", nkv_qpair_failed(p->q));
		return -EIO;
	}
}

/*
 * --dest region: the engine's own cache, one region of --layers x [2,
 * --blocks, --value-size / 2] (every block's K, then every block's V), as
 * vLLM lays out a layer's tensor; a value is its block's K and V of one
 * layer, moved in place (nkv_kvcache.h's layout, no slots).
 */
static int nkv_bench_pfx_cache(struct nkv_bench_pfx *p)
{
	const struct nkv_bench_opts *o = p->o;
	uint32_t half = o->value_size / 2u;
	uint64_t len = nkv_kvc_vllm_bytes(o->layers, o->blocks, half);
	void *addr;
	int rc;

	p->base = calloc(2u * o->layers, sizeof(*p->base));
	if (!p->base)
		return -ENOMEM;
	rc = nkv_mem_alloc(p->ctrl, len, 0, &p->mr, &addr);
	if (rc) {
		snprintf(p->why, sizeof(p->why), "--dest region: cannot register a cache of %llu "
			 "bytes: %s", (unsigned long long)len, strerror(-rc));
		return rc;
	}
	p->lay = nkv_kvc_layout_vllm(p->base, (uint64_t)(uintptr_t)p->base, nkv_mem_dev(p->mr), 0,
				     o->layers, o->blocks, half);
	return 0;
}

static int nkv_bench_pfx_open(struct nkv_bench_pfx *p, const char *uri)
{
	const struct nkv_bench_opts *o = p->o;
	struct nkv_ctrl_opts co = { .size = sizeof(co) };
	struct nkv_qpair_opts qo = { .size = sizeof(qo) };
	size_t n = (size_t)o->blocks * o->layers, i;
	int rc;

	co.memory_mode = o->memory_mode;
	co.flags = o->values_by_messages ? NKV_CTRL_VALUES_BY_MESSAGES : 0;
	co.io_queues = 1;
	co.nsid = o->nsid;
	co.err = p->why;
	co.errlen = sizeof(p->why);
	rc = nkv_ctrl_connect(uri, &co, &p->ctrl);
	if (!rc)
		rc = nkv_ctrl_get_info(p->ctrl, &p->info);
	if (rc)
		return rc;
	if (p->chain.klen > p->info.max_key || (p->info.max_value && o->value_size >
						p->info.max_value) ||
	    (p->info.max_xfer && o->buf_size > p->info.max_xfer)) {
		snprintf(p->why, sizeof(p->why), "the controller takes keys to %u bytes and values "
			 "to %u (MDTS %u); this run has %u-byte keys, %u-byte values",
			 p->info.max_key, p->info.max_value, p->info.max_xfer, p->chain.klen,
			 o->value_size);
		return -EMSGSIZE;
	}
	qo.depth = o->queue_length;
	qo.slots = o->dest_region ? 0 : (uint32_t)n;	/* the page pool: a page per value */
	qo.slot_size = o->dest_region ? 0 : o->buf_size;
	qo.flags = o->dest_region ? NKV_QPAIR_NO_SLOTS : 0;
	qo.timeout_ms = o->timeout_ms;
	rc = nkv_qpair_create(p->ctrl, &qo, &p->q);
	if (rc) {
		snprintf(p->why, sizeof(p->why), "cannot make a pool of %zu pages of %u bytes: %s",
			 o->dest_region ? 0 : n, o->buf_size, strerror(-rc));
		return rc;
	}
	if (o->dest_region) {
		rc = nkv_bench_pfx_cache(p);
		if (rc)
			return rc;
	}
	p->qp = nkv_qpair_dev(p->q);
	p->sq_db = (volatile uint32_t *)(uintptr_t)p->qp->sq_db_addr;
	p->cq_db = (volatile uint32_t *)(uintptr_t)p->qp->cq_db_addr;
	p->keys = calloc(n, p->chain.klen);
	p->pages = calloc(n, sizeof(*p->pages));
	p->out = calloc(n, sizeof(*p->out));
	if (!p->keys || !p->pages || !p->out)
		return -ENOMEM;
	/* A page per value; in the cache, the block's place in its layer. */
	for (i = 0; i < n; i++)
		p->pages[i] = (uint32_t)(o->dest_region ? i % o->blocks : i);
	p->a.keys = (uint64_t)(uintptr_t)p->keys;
	p->a.pages = (uint64_t)(uintptr_t)p->pages;
	p->a.out = (uint64_t)(uintptr_t)p->out;
	p->a.res = (uint64_t)(uintptr_t)&p->res;
	p->a.klen = p->chain.klen;
	p->a.blocks = o->blocks;
	p->a.layers = o->layers;
	p->a.layer_bytes = o->value_size;
	p->a.lay = o->dest_region ? (uint64_t)(uintptr_t)&p->lay : 0;
	return 0;
}

static void nkv_bench_pfx_close(struct nkv_bench_pfx *p)
{
	nkv_qpair_destroy(p->q);
	nkv_mem_deregister(p->mr);
	free(p->base);
	nkv_ctrl_close(p->ctrl);
	free(p->keys);
	free(p->pages);
	free(p->out);
}

/* Entry outcomes of blocks first..first+count-1, every layer (@layers:
 * the lookup asks layer 0 only), into the phase and the result. */
static void nkv_bench_pfx_tally(struct nkv_bench_pfx *p, struct nkv_bench_phase *ph,
				struct nkv_bench_prefix_res *r, uint8_t opc, uint32_t first,
				uint32_t count, uint32_t layers)
{
	uint32_t l, b;

	for (l = 0; l < layers; l++)
		for (b = first; b < first + count; b++) {
			const struct nkv_kvc_entry *e = &p->out[(size_t)l * p->o->blocks + b];
			uint32_t sc = e->status & 0xffu, sct = e->status >> 8 & 0x7u;

			ph->commands++;
			r->outcomes[e->outcome < 5u ? e->outcome : NKV_KVC_ERROR]++;
			if (e->outcome == NKV_KVC_OK) {
				ph->ok++;
				ph->bytes += opc == NKV_KV_EXIST ? 0 : p->o->value_size;
			} else if (e->err) {
				ph->dev_errors++;
				ph->lost += e->err == NKV_ETIMEDOUT || e->err == NKV_ENOTCONN;
				ph->last_dev_error = e->err;
			} else if (e->outcome == NKV_KVC_SHORT) {
				ph->other_status++;	/* success with a DW0 not asked for */
			} else if (sct == NKV_SCT_GENERIC && sc >= 0x80 && sc < 0x90) {
				ph->by_status[sc - 0x80]++;
				/* The lookup's first miss, a Store whose block was there. */
				ph->expected += (e->outcome == NKV_KVC_ABSENT && opc == NKV_KV_EXIST) ||
						e->outcome == NKV_KVC_EXISTS;
			} else {
				if (!ph->first_other)
					ph->first_other = e->status;
				ph->other_status++;
			}
		}
}

static uint32_t nkv_bench_pfx_batches(uint32_t n, uint32_t width)
{
	return (n + width - 1u) / width;
}

/* A measured launch: its time and doorbells into the phase, its time as
 * one latency sample of @cmds commands. */
static int nkv_bench_pfx_timed(struct nkv_bench_pfx *p, struct nkv_bench_phase *ph, enum pc_op op,
			       uint32_t first, uint32_t count, uint64_t cmds, uint64_t batches)
{
	uint64_t sq = p->sq, cq = p->cq;
	int rc;

	memset(p->out, 0xff, (size_t)p->o->blocks * p->o->layers * sizeof(*p->out));
	rc = nkv_bench_pfx_op(p, op, first, count);
	if (rc)
		return rc;
	ph->sq_doorbells += p->sq - sq;
	ph->cq_doorbells += p->cq - cq;
	ph->batches += batches;
	ph->busy_ns += p->res.t_ns;
	ph->wall_ns += p->res.t_ns;
	ph->lat_ns[ph->nlat] = (double)p->res.t_ns;
	ph->lat_cmds[ph->nlat++] = (uint32_t)cmds;
	return 0;
}

/* Delete the values of blocks first..first+count-1 (not measured):
 * 87h is fine (never stored). */
static int nkv_bench_pfx_delete(struct nkv_bench_pfx *p, uint32_t first, uint32_t count)
{
	uint32_t l, b;

	for (l = 0; l < p->o->layers; l++)
		for (b = first; b < first + count; b++) {
			struct nkv_result res;
			int rc = nkv_delete(p->q, p->keys + ((size_t)l * p->o->blocks + b) *
						   p->chain.klen, p->chain.klen, &res);

			if (rc) {
				snprintf(p->why, sizeof(p->why), "deleting a request's values "
					 "(not measured) failed: %s", nkv_bench_errno_str(rc));
				return rc;
			}
			if (res.status &&
			    res.status != NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS)) {
				snprintf(p->why, sizeof(p->why), "deleting a request's values "
					 "(not measured) failed: the controller answered %s "
					 "(status %#x)", nkv_status_str(res.status), res.status);
				return -EREMOTEIO;
			}
		}
	return 0;
}

/* The prefix every request shares, stored first (not measured). */
static int nkv_bench_pfx_setup(struct nkv_bench_pfx *p, uint32_t hits)
{
	uint32_t i;
	int rc, full = 0;

	if (pc_chain_keys(&p->chain, 1, p->o->blocks * NKV_BENCH_PFX_TOKENS, p->keys))
		return -ENOMEM;
	if (!hits)
		return 0;
	rc = nkv_bench_pfx_op(p, PC_FILL, 0, hits);
	if (!rc)
		rc = nkv_bench_pfx_op(p, PC_STORE, 0, hits);
	if (rc)
		return rc;
	if (p->res.count == hits * p->o->layers)
		return 0;
	/* Only 81h says the target is full. */
	for (i = 0; i < hits * p->o->layers && !full; i++)
		full = p->out[i / hits * p->o->blocks + i % hits].status ==
		       NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_CAPACITY_EXCEEDED);
	snprintf(p->why, sizeof(p->why), "storing the prefix first (not measured) failed: "
		 "%u of %u values stored%s", p->res.count, hits * p->o->layers,
		 full ? "; the target answered 81h (capacity exceeded): it is full" : "");
	return full ? -ENOSPC : -EREMOTEIO;
}

/* Request @i: keys, lookup, retrieve, store, check, delete; measured
 * into @ph and @r unless it is a warm-up. */
static int nkv_bench_pfx_request(struct nkv_bench_pfx *p, uint32_t i, uint32_t hits,
				 struct nkv_bench_phase *ph, struct nkv_bench_prefix_res *r)
{
	const struct nkv_bench_opts *o = p->o;
	uint32_t n = o->blocks, w = o->batch, found, asked, miss;
	int rc;

	if (pc_chain_keys(&p->chain, 2u + i, hits * NKV_BENCH_PFX_TOKENS, p->keys))
		return -ENOMEM;
	rc = nkv_bench_pfx_timed(p, ph, PC_LOOKUP, 0, n, 0, 0);
	if (rc)
		return rc;
	found = p->res.count;
	/* The lookup asks a wave's width at a time, up to the batch with
	 * its first miss. */
	asked = found >= n ? n : (found / w + 1u) * w < n ? (found / w + 1u) * w : n;
	ph->lat_cmds[ph->nlat - 1] = asked;
	ph->batches += nkv_bench_pfx_batches(asked, w);
	nkv_bench_pfx_tally(p, ph, r, NKV_KV_EXIST, 0, asked, 1);
	r->lookup_ns[r->requests] = (double)p->res.t_ns;
	r->lookup_total_ns += p->res.t_ns;
	r->lookup_cmds += asked;
	r->hits_min = found < r->hits_min ? found : r->hits_min;
	r->hits_max = found > r->hits_max ? found : r->hits_max;
	ph->wrong += found != hits;
	miss = n - found;
	/* After the lookup: its Exists never write a page's data. */
	rc = o->verify ? nkv_bench_pfx_op(p, PC_CLEAR, 0, n) : 0;
	if (rc)
		return rc;
	if (found) {
		rc = nkv_bench_pfx_timed(p, ph, PC_LOAD, 0, found, (uint64_t)found * o->layers,
					 (uint64_t)o->layers * nkv_bench_pfx_batches(found, w));
		if (rc)
			return rc;
		nkv_bench_pfx_tally(p, ph, r, NKV_KV_RETRIEVE, 0, found, o->layers);
		r->retrieve_ns += p->res.t_ns;
		r->retrieved += p->res.count;
	}
	if (miss) {
		rc = nkv_bench_pfx_op(p, PC_FILL, found, miss);
		if (!rc)
			rc = nkv_bench_pfx_timed(p, ph, PC_STORE, found, miss, (uint64_t)miss * o->layers,
					 (uint64_t)o->layers * nkv_bench_pfx_batches(miss, w));
		if (rc)
			return rc;
		nkv_bench_pfx_tally(p, ph, r, NKV_KV_STORE, found, miss, o->layers);
		r->store_ns += p->res.t_ns;
		r->stored += p->res.count;
	}
	if (o->verify) {
		rc = nkv_bench_pfx_op(p, PC_CHECK, 0, n);
		if (rc)
			return rc;
		ph->verify_fail += p->res.count;
	}
	r->requests++;
	return nkv_bench_pfx_delete(p, found, miss);
}

/* Every request; warm-ups measured into a phase and result thrown away. */
static int nkv_bench_pfx_requests(struct nkv_bench_pfx *p, uint32_t hits,
				  struct nkv_bench_phase *ph, struct nkv_bench_prefix_res *r)
{
	const struct nkv_bench_opts *o = p->o;
	uint32_t total = o->warmup + o->iterations, i;
	int rc = 0;

	ph->lat_ns = calloc(3u * total, sizeof(*ph->lat_ns));
	ph->lat_cmds = calloc(3u * total, sizeof(*ph->lat_cmds));
	r->lookup_ns = calloc(total, sizeof(*r->lookup_ns));
	if (!ph->lat_ns || !ph->lat_cmds || !r->lookup_ns)
		return -ENOMEM;
	for (i = 0; i < total && !rc; i++) {
		if (i == o->warmup) {
			/* The measured requests start here: forget the warm-ups. */
			double *lat = ph->lat_ns, *lk = r->lookup_ns;
			uint32_t *cmds = ph->lat_cmds;

			memset(ph, 0, sizeof(*ph));
			memset(r, 0, sizeof(*r));
			ph->lat_ns = lat, ph->lat_cmds = cmds, r->lookup_ns = lk;
			r->hits_min = UINT32_MAX;
		}
		rc = nkv_bench_pfx_request(p, i, hits, ph, r);
	}
	return rc;
}

static int nkv_bench_pfx_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The smallest lookup time with at least @frac of the requests at or
 * below it (the lookup times sorted). */
static double nkv_bench_pfx_pct(const struct nkv_bench_prefix_res *r, double frac)
{
	uint32_t i = (uint32_t)(frac * r->requests + 0.999999);

	return r->requests ? r->lookup_ns[i ? i - 1 : 0] : 0.0;
}

static double nkv_bench_pfx_rate(double n, uint64_t ns)
{
	return ns ? n * 1e9 / (double)ns : 0.0;
}

void nkv_bench_prefix_keys(const struct nkv_bench_prefix_res *p, const char **order,
			   uint32_t *keys, uint32_t *key_size)
{
	*order = p->klen == 32 ? "sha256" : "xxh3";
	*keys = p->blocks * p->layers;
	*key_size = p->klen;
}

void nkv_bench_prefix_json(FILE *f, const struct nkv_bench_prefix_res *p)
{
	double retrieved = (double)p->retrieved * p->value_size;
	double stored = (double)p->stored * p->value_size;

	fprintf(f, ",\"prefix\":{\"blocks\":%u,\"layers\":%u,\"hit_ratio\":%.6g,\"hits_stored\":%u,"
		"\"hits_min\":%u,\"hits_max\":%u,\"requests\":%u,\"salt\":%u,"
		"\"values_per_request\":%u,\"block_bytes\":%llu,",
		p->blocks, p->layers, p->hit_ratio, p->hits, p->requests ? p->hits_min : 0,
		p->hits_max, p->requests, p->salt, p->blocks * p->layers,
		(unsigned long long)p->value_size * p->layers);
	fprintf(f, "\"lookup_ns\":{\"min\":%.0f,\"p50\":%.0f,\"p99\":%.0f,\"max\":%.0f},"
		"\"lookup_commands\":%llu,\"lookup_total_ns\":%llu,",
		p->requests ? p->lookup_ns[0] : 0.0, nkv_bench_pfx_pct(p, 0.5),
		nkv_bench_pfx_pct(p, 0.99), p->requests ? p->lookup_ns[p->requests - 1] : 0.0,
		(unsigned long long)p->lookup_cmds, (unsigned long long)p->lookup_total_ns);
	fprintf(f, "\"retrieved\":{\"values\":%llu,\"bytes\":%.0f,\"ns\":%llu,\"bytes_per_s\":%.1f},"
		"\"stored\":{\"values\":%llu,\"bytes\":%.0f,\"ns\":%llu,\"bytes_per_s\":%.1f,"
		"\"already_there\":%llu},",
		(unsigned long long)p->retrieved, retrieved, (unsigned long long)p->retrieve_ns,
		nkv_bench_pfx_rate(retrieved, p->retrieve_ns), (unsigned long long)p->stored, stored,
		(unsigned long long)p->store_ns, nkv_bench_pfx_rate(stored, p->store_ns),
		(unsigned long long)p->outcomes[NKV_KVC_EXISTS]);
	fprintf(f, "\"measured_ns\":%llu,\"blocks_per_s\":%.1f,\"bytes_per_s\":%.1f,"
		"\"gb_per_s\":%.4f,\"outcomes\":{\"ok\":%llu,\"absent\":%llu,\"exists\":%llu,"
		"\"short\":%llu,\"error\":%llu}}",
		(unsigned long long)p->measured_ns,
		nkv_bench_pfx_rate((double)p->requests * p->blocks, p->measured_ns),
		nkv_bench_pfx_rate(retrieved + stored, p->measured_ns),
		nkv_bench_pfx_rate(retrieved + stored, p->measured_ns) / 1e9,
		(unsigned long long)p->outcomes[NKV_KVC_OK],
		(unsigned long long)p->outcomes[NKV_KVC_ABSENT],
		(unsigned long long)p->outcomes[NKV_KVC_EXISTS],
		(unsigned long long)p->outcomes[NKV_KVC_SHORT],
		(unsigned long long)p->outcomes[NKV_KVC_ERROR]);
}

static void nkv_bench_pfx_text(FILE *f, const struct nkv_bench_opts *o,
			       const struct nkv_bench_setup *s, const struct nkv_bench_phase *ph,
			       const struct nkv_bench_prefix_res *p)
{
	double retrieved = (double)p->retrieved * p->value_size;
	double stored = (double)p->stored * p->value_size;

	fprintf(f, "nkv-bench: prefix, requests of %u blocks x %u value%s of %u B (%u-byte %s "
		"keys), hit ratio %.3g: %u blocks stored first; batch %u, queue %u entries, "
		"%u request%s", p->blocks, p->layers, p->layers > 1 ? "s" : "", o->value_size,
		p->klen, p->klen == 32 ? "SHA-256" : "XXH3-128", p->hit_ratio, p->hits, o->batch,
		o->queue_length, p->requests, p->requests == 1 ? "" : "s");
	if (o->warmup)
		fprintf(f, " after %u not measured", o->warmup);
	fprintf(f, "\n  engine      cpu: 1 wave x %u lanes (fibers), kernel body "
		"examples/prefix_kernels.h (nkv_kvcache.h)\n", o->batch);
	fprintf(f, "  target      %s\n", s->target_desc);
	fprintf(f, "  controller  %s \"%s\", KV nsid %u, memory mode 0x%x\n", s->info->transport,
		s->info->model, s->info->nsid, s->info->memory_mode);
	if (o->dest_region)
		fprintf(f, "  dest        the engine's cache in one registered region, vLLM's "
			"layout (%u layers x [2, %u blocks, %u B]): no slots, no copy\n",
			p->layers, p->blocks, o->value_size / 2u);
	else
		fprintf(f, "  dest        pages in the queue pair's slots\n");
	fprintf(f, "results: %llu commands in %llu batches, %.3f ms measured (lookups + "
		"retrieves + stores)\n", (unsigned long long)ph->commands,
		(unsigned long long)ph->batches, (double)p->measured_ns / 1e6);
	fprintf(f, "  lookup      %u..%u blocks found of %u; per request (%.1f Exist commands): "
		"p50 %.2f us, p99 %.2f us\n", p->requests ? p->hits_min : 0, p->hits_max,
		p->blocks, p->requests ? (double)p->lookup_cmds / p->requests : 0.0,
		nkv_bench_pfx_pct(p, 0.5) / 1e3, nkv_bench_pfx_pct(p, 0.99) / 1e3);
	fprintf(f, "  retrieve    %llu values into pages, %.3g MB in %.3f ms: %.3g GB/s\n",
		(unsigned long long)p->retrieved, retrieved / 1e6, (double)p->retrieve_ns / 1e6,
		nkv_bench_pfx_rate(retrieved, p->retrieve_ns) / 1e9);
	fprintf(f, "  store       %llu values (content-addressed; %llu already there), %.3g MB "
		"in %.3f ms: %.3g GB/s\n", (unsigned long long)p->stored,
		(unsigned long long)p->outcomes[NKV_KVC_EXISTS], stored / 1e6,
		(double)p->store_ns / 1e6, nkv_bench_pfx_rate(stored, p->store_ns) / 1e9);
	fprintf(f, "  throughput  %.4g blocks/s, %.3g GB/s over the measured time\n",
		nkv_bench_pfx_rate((double)p->requests * p->blocks, p->measured_ns),
		nkv_bench_pfx_rate(retrieved + stored, p->measured_ns) / 1e9);
	fprintf(f, "  doorbells   SQ %llu for %llu batches, CQ %llu\n",
		(unsigned long long)ph->sq_doorbells, (unsigned long long)ph->batches,
		(unsigned long long)ph->cq_doorbells);
	fprintf(f, "  outcomes    %llu ok, %llu absent (the lookup's batch with the first miss), "
		"%llu already there, %llu short, %llu errors, %llu pages bad\n",
		(unsigned long long)p->outcomes[NKV_KVC_OK],
		(unsigned long long)p->outcomes[NKV_KVC_ABSENT],
		(unsigned long long)p->outcomes[NKV_KVC_EXISTS],
		(unsigned long long)p->outcomes[NKV_KVC_SHORT],
		(unsigned long long)p->outcomes[NKV_KVC_ERROR], (unsigned long long)ph->verify_fail);
}

/* A salt per run (vLLM's cache salt): blocks an earlier run left on the
 * target are other keys. */
static uint32_t nkv_bench_pfx_salt(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec * 0x9e3779b9u ^ (uint32_t)getpid() << 8;
}

static int nkv_bench_pfx_run(struct nkv_bench_pfx *p, const char *uri, uint32_t hits,
			     struct nkv_bench_setup *s, struct nkv_bench_target *t,
			     struct nkv_bench_phase *ph, struct nkv_bench_prefix_res *r)
{
	int rc = nkv_bench_pfx_open(p, uri);

	if (rc)
		return rc;
	s->info = &p->info;
	s->keys_present = UINT64_MAX;	/* not asked: the lookups say */
	s->keys_stored = (uint64_t)hits * p->o->layers;
	nkv_cpu_set_mmio_hook(nkv_bench_pfx_hook, p);
	rc = nkv_bench_pfx_setup(p, hits);
	s->target_busy_ns = t ? -(int64_t)nkv_bench_target_busy_ns(t) : -1;
	if (!rc)
		rc = nkv_bench_pfx_requests(p, hits, ph, r);
	if (t)
		s->target_busy_ns += (int64_t)nkv_bench_target_busy_ns(t);
	nkv_cpu_set_mmio_hook(NULL, NULL);
	/* The prefix too: the target is left as it was found. */
	if (!rc && hits && !pc_chain_keys(&p->chain, 1, hits * NKV_BENCH_PFX_TOKENS, p->keys))
		rc = nkv_bench_pfx_delete(p, 0, hits);
	r->measured_ns = ph->wall_ns;
	qsort(r->lookup_ns, r->requests, sizeof(double), nkv_bench_pfx_cmp);
	return rc;
}

int nkv_bench_prefix_main(const struct nkv_bench_opts *o, struct nkv_bench_setup *s,
			  const char *uri, struct nkv_bench_target *t)
{
	struct nkv_bench_pfx p = { .o = o };
	struct nkv_bench_prefix_res r = { 0 };
	struct nkv_bench_phase ph = { 0 };
	uint32_t hits = (uint32_t)(o->hit_ratio * o->blocks + 1e-9);
	char why[400];
	int rc;

	p.chain.klen = o->key_order == NKV_BENCH_KEYS_SHA256 ? 32u : 16u;
	p.chain.layers = o->layers;
	p.chain.blocks = o->blocks;
	p.chain.block_tokens = NKV_BENCH_PFX_TOKENS;
	p.chain.value_bytes = o->value_size;
	p.chain.extra = nkv_bench_pfx_salt();
	rc = nkv_bench_pfx_run(&p, uri, hits, s, t, &ph, &r);
	r.blocks = o->blocks, r.layers = o->layers, r.hits = hits, r.hit_ratio = o->hit_ratio;
	r.klen = p.chain.klen, r.salt = p.chain.extra, r.value_size = o->value_size;
	s->prefix = &r;
	if (rc) {
		fprintf(stderr, "nkv-bench: %s\n", p.why[0] ? p.why : nkv_bench_errno_str(rc));
		/* Flags the controller cannot serve are the user's to change. */
		rc = !s->info ? (rc == -EMSGSIZE ? NKV_EXIT_USAGE : nkv_tool_connect_exit(rc))
			      : nkv_bench_exit_of(rc);
	} else {
		if (o->json)
			nkv_bench_report_json(stdout, o, s, &ph);
		else
			nkv_bench_pfx_text(stdout, o, s, &ph, &r);
		fflush(stdout);
		rc = nkv_bench_phase_exit(o, &ph);
		/* The controller gone or silent: as for --workload kv; else
		 * what the requests found (statuses: the outcomes line). */
		if (rc == NKV_EXIT_SETUP)
			nkv_bench_fail_why(o, 0, &ph, why, sizeof(why));
		else
			snprintf(why, sizeof(why), "%llu requests found another number of hits "
				 "than the %u stored, %llu pages bad, %llu other outcomes "
				 "(see the outcomes line)", (unsigned long long)ph.wrong, hits,
				 (unsigned long long)ph.verify_fail,
				 (unsigned long long)(nkv_bench_unexpected(o, &ph) - ph.wrong -
						      ph.verify_fail));
		if (rc)
			fprintf(stderr, "nkv-bench: FAILED: %s\n", why);
	}
	free(r.lookup_ns);
	nkv_bench_phase_free(&ph);
	nkv_bench_pfx_close(&p);
	return rc;
}
