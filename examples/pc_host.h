/* SPDX-License-Identifier: MIT */
/*
 * pc_host.h - the prefix_cache example's host side, shared by the cpu
 * engine build (prefix_cache_cpu.c) and the GPU one (prefix_cache_gpu.cu),
 * which differ only in how they make the queue pair, move arrays and
 * launch (struct pc_ops). Valid C and C++.
 *
 * A serving engine's KV cache, shaped like Llama-3.1-8B in bf16 by
 * default: 32 layers, 8 KV heads, head dim 128, 16-token blocks, so one
 * layer of one block (K and V) is 64 KiB and a block 2 MiB. Block keys
 * are chained as vLLM's are (pc_keys.h, shared with nkv-bench --workload
 * prefix): hash(parent's hash, the block's token ids, extra keys),
 * 16-byte XXH3-128 (libxxhash) or 32-byte SHA-256 (libcrypto); each
 * layer's value has its own key, hash(block hash, layer). Request 1
 * stores all its blocks; request 2 shares a prefix of it (75 % by
 * default), looks it up, loads the hits layer by layer beside a
 * stand-in compute, computes and stores the rest, and checks every page
 * byte for byte. The pages are the queue pair's value slots, or, with
 * --dest region, the engine's own cache in one registered region (vLLM's
 * layout, no slots: values land where the engine keeps them).
 */
#ifndef NKV_EXAMPLES_PC_HOST_H
#define NKV_EXAMPLES_PC_HOST_H

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ex_host.h"
#include "nkv_host.h"
#include "pc_keys.h"
#include "prefix_kernels.h"

/* How the two builds differ. */
struct pc_ops {
	/* A queue pair of @o's pages for the kernel: *q, and its descriptor. */
	int (*qpair)(struct nkv_ctrl *c, const struct nkv_qpair_opts *o, struct nkv_qpair **q,
		     struct nkv_dev_qp **dev);
	/* Memory the kernel reads and writes; host <-> it copies. */
	void *(*alloc)(size_t len);
	void (*release)(void *p);
	int (*put)(void *dst, const void *src, size_t len);
	int (*get)(void *dst, const void *src, size_t len);
	/* Run pc_run() on one wave with @a (device memory); 0 or an error. */
	int (*run)(struct nkv_dev_qp *qp, const struct pc_args *a);
	uint32_t wave;		/* lanes of the wave */
};

struct pc_cfg {
	const char *uri;
	uint32_t layers, kv_heads, head_dim, block_tokens, dtype_bytes;
	uint32_t blocks;	/* per request */
	uint32_t share;		/* percent of request 1's blocks request 2 shares */
	uint32_t klen;		/* 16: XXH3-128, 32: SHA-256 */
	uint32_t extra;		/* vLLM's extra keys (LoRA id, salt, ...) */
	double ratio;		/* compute per batch / its transfer */
	int region;		/* --dest region: the engine's cache, no slots */
};

static inline void pc_usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [options] URI   (e.g. vfio-user:/tmp/nkv.sock)\n"
		"  --layers N        transformer layers (32)\n"
		"  --kv-heads N      KV heads (8)\n"
		"  --head-dim N      head dimension (128)\n"
		"  --block-tokens N  tokens per block (16)\n"
		"  --dtype-bytes N   bytes per element (2: bf16)\n"
		"  --blocks N        blocks per request (128)\n"
		"  --share PCT       request 2's prefix shared with request 1 (75)\n"
		"  --hash xxh3|sha256  block keys: 16-byte XXH3-128 or 32-byte SHA-256 (xxh3)\n"
		"  --extra N         extra key of every block hash (0)\n"
		"  --compute-ratio R stand-in compute per batch / its transfer time (1.0)\n"
		"  --dest slots|region  pages in the queue pair's slots, or the engine's own\n"
		"                    cache in vLLM's layout in a registered region (slots)\n"
		"  --ci              a small shape: 4 layers, 2 KV heads, head dim 64, 64 blocks\n"
		EX_EXIT_HELP, prog);
}

/* Parse; 0, or EX_EXIT_USAGE after printing why. */
static inline int pc_parse(int argc, char **argv, struct pc_cfg *g)
{
	static const struct option lo[] = {
		{ "layers", 1, NULL, 'l' }, { "kv-heads", 1, NULL, 'k' },
		{ "head-dim", 1, NULL, 'd' }, { "block-tokens", 1, NULL, 't' },
		{ "dtype-bytes", 1, NULL, 'b' }, { "blocks", 1, NULL, 'n' },
		{ "share", 1, NULL, 's' }, { "hash", 1, NULL, 'h' }, { "extra", 1, NULL, 'e' },
		{ "compute-ratio", 1, NULL, 'r' }, { "ci", 0, NULL, 'c' }, { "dest", 1, NULL, 'D' },
		{ NULL, 0, NULL, 0 } };
	int o;

	memset(g, 0, sizeof(*g));
	g->layers = 32, g->kv_heads = 8, g->head_dim = 128, g->block_tokens = 16;
	g->dtype_bytes = 2, g->blocks = 128, g->share = 75, g->klen = 16, g->ratio = 1.0;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		unsigned long v = optarg ? strtoul(optarg, NULL, 0) : 0;

		switch (o) {
		case 'l': g->layers = (uint32_t)v; break;
		case 'k': g->kv_heads = (uint32_t)v; break;
		case 'd': g->head_dim = (uint32_t)v; break;
		case 't': g->block_tokens = (uint32_t)v; break;
		case 'b': g->dtype_bytes = (uint32_t)v; break;
		case 'n': g->blocks = (uint32_t)v; break;
		case 's': g->share = (uint32_t)v; break;
		case 'e': g->extra = (uint32_t)v; break;
		case 'r': g->ratio = strtod(optarg, NULL); break;
		case 'h':
			if (strcmp(optarg, "xxh3") && strcmp(optarg, "sha256")) {
				fprintf(stderr, "--hash %s: say xxh3 or sha256\n", optarg);
				return EX_EXIT_USAGE;
			}
			g->klen = strcmp(optarg, "xxh3") ? 32u : 16u;
			break;
		case 'c':
			g->layers = 4, g->kv_heads = 2, g->head_dim = 64, g->blocks = 64;
			break;
		case 'D':
			if (strcmp(optarg, "slots") && strcmp(optarg, "region")) {
				fprintf(stderr, "--dest %s: say slots or region\n", optarg);
				return EX_EXIT_USAGE;
			}
			g->region = !strcmp(optarg, "region");
			break;
		default:
			pc_usage(argv[0]);
			return EX_EXIT_USAGE;
		}
	}
	g->uri = optind < argc ? argv[optind] : getenv("NKV_TARGET");
	if (!g->uri || (strncmp(g->uri, "vfio-user:", 10) && strncmp(g->uri, "pcie:", 5)) ||
	    !g->layers || !g->kv_heads || !g->head_dim || !g->block_tokens ||
	    !g->dtype_bytes || !g->blocks || g->share > 100 || !(g->ratio >= 0.0) ||
	    (2ull * g->block_tokens * g->kv_heads * g->head_dim * g->dtype_bytes) % 4u ||
	    2ull * g->block_tokens * g->kv_heads * g->head_dim * g->dtype_bytes > (1u << 30)) {
		pc_usage(argv[0]);
		return EX_EXIT_USAGE;
	}
	return 0;
}

static inline uint32_t pc_layer_bytes(const struct pc_cfg *g)
{
	return 2u * g->block_tokens * g->kv_heads * g->head_dim * g->dtype_bytes;
}

/* Keys [layer][block] of a request of @seed sharing @shared tokens with
 * request 1, chained as pc_keys.h says. 0, or -1 out of memory. */
static inline int pc_keys(const struct pc_cfg *g, uint32_t seed, uint32_t shared, uint8_t *keys)
{
	const struct pc_chain c = { g->klen, g->layers, g->blocks, g->block_tokens,
				    pc_layer_bytes(g), g->extra };

	return pc_chain_keys(&c, seed, shared, keys);
}

/* A request's arrays, host copy and device copy. */
struct pc_req {
	uint8_t *keys;
	uint32_t *pages;
	struct nkv_kvc_entry *out;
	void *d_keys, *d_pages, *d_out, *d_res;
	struct pc_res res;
	struct pc_args a;
	int launch_failed;	/* a setup failure, not the data's */
};

static inline int pc_req_init(const struct pc_ops *ops, const struct pc_cfg *g, struct pc_req *r,
			      uint32_t seed, uint32_t shared, int reversed)
{
	size_t n = (size_t)g->layers * g->blocks, i;

	memset(r, 0, sizeof(*r));
	r->keys = (uint8_t *)calloc(n, g->klen);
	r->pages = (uint32_t *)calloc(n, sizeof(uint32_t));
	r->out = (struct nkv_kvc_entry *)calloc(n, sizeof(*r->out));
	r->d_keys = ops->alloc(n * g->klen);
	r->d_pages = ops->alloc(n * sizeof(uint32_t));
	r->d_out = ops->alloc(n * sizeof(*r->out));
	r->d_res = ops->alloc(sizeof(r->res));
	if (!r->keys || !r->pages || !r->out || !r->d_keys || !r->d_pages || !r->d_out || !r->d_res ||
	    pc_keys(g, seed, shared, r->keys))
		return -1;
	/* Request 2 takes the free pages from the top of the pool down:
	 * a value's page is wherever the pool had one (in the engine's
	 * cache, a cache block of the value's layer). */
	for (i = 0; i < n; i++) {
		size_t m = g->region ? g->blocks : n, j = g->region ? i % g->blocks : i;

		r->pages[i] = (uint32_t)(reversed ? m - 1u - j : j);
	}
	r->a.keys = (uint64_t)(uintptr_t)r->d_keys;
	r->a.pages = (uint64_t)(uintptr_t)r->d_pages;
	r->a.out = (uint64_t)(uintptr_t)r->d_out;
	r->a.res = (uint64_t)(uintptr_t)r->d_res;
	r->a.klen = g->klen;
	r->a.blocks = g->blocks;
	r->a.layers = g->layers;
	r->a.layer_bytes = pc_layer_bytes(g);
	return ops->put(r->d_keys, r->keys, n * g->klen) ||
	       ops->put(r->d_pages, r->pages, n * sizeof(uint32_t)) ? -1 : 0;
}

static inline void pc_req_free(const struct pc_ops *ops, struct pc_req *r)
{
	free(r->keys);
	free(r->pages);
	free(r->out);
	ops->release(r->d_keys);
	ops->release(r->d_pages);
	ops->release(r->d_out);
	ops->release(r->d_res);
}

/* Run @op on blocks first..first+count-1; the result and outcomes back. */
static inline int pc_op(const struct pc_ops *ops, struct nkv_dev_qp *qp, struct pc_req *r,
			enum pc_op op, uint32_t first, uint32_t count, uint64_t compute_ns)
{
	size_t n = (size_t)r->a.layers * r->a.blocks;

	r->a.op = op;
	r->a.first = first;
	r->a.count = count;
	r->a.compute_ns = compute_ns;
	if (ops->run(qp, &r->a) || ops->get(&r->res, r->d_res, sizeof(r->res)) ||
	    ops->get(r->out, r->d_out, n * sizeof(*r->out))) {
		fprintf(stderr, "op %d: the launch failed\n", op);
		r->launch_failed = 1;
		return -1;
	}
	return 0;
}

/* How telling an entry that went wrong is, for naming the first one:
 * the controller gone or silent, a status, a command not sent after its
 * queue pair failed, a short value, an absent key. */
static inline int pc_rank(const struct nkv_kvc_entry *e)
{
	if (e->outcome == NKV_KVC_ERROR && e->err && e->err != NKV_EIO)
		return 5;
	if (e->outcome == NKV_KVC_ERROR && !e->err)
		return 4;
	if (e->outcome == NKV_KVC_ERROR)
		return 3;
	return e->outcome == NKV_KVC_SHORT ? 2 : 1;
}

/* Entry @e (layer @l, block @b) in words, with its numbers. */
static inline void pc_entry_why(const struct nkv_kvc_entry *e, uint32_t l, uint32_t b,
				uint32_t page, char *buf, size_t len)
{
	int n = snprintf(buf, len, "layer %u block %u: ", l, b);

	buf += n, len -= (size_t)n;
	if (e->outcome == NKV_KVC_ERROR && e->err)
		snprintf(buf, len, "did not run: %s (error %d)", ex_err_str(e->err), e->err);
	else if (e->outcome == NKV_KVC_ERROR)
		snprintf(buf, len, "the controller answered %s (status %#x)",
			 nkv_status_str(e->status), e->status);
	else if (e->outcome == NKV_KVC_SHORT)
		snprintf(buf, len, "the controller answered DW0 = %u for a page of %u bytes",
			 e->dw0, page);
	else if (e->outcome == NKV_KVC_ABSENT)
		snprintf(buf, len, "the key does not exist (87h)");
	else
		snprintf(buf, len, "the key exists already (89h)");
}

/* Count the outcomes of blocks first..first+count-1, all layers, in
 * t[5]. Entries whose outcome is not in @want (a mask of 1 << outcome)
 * are said on stderr in one line: how many of each kind, and the most
 * telling one ("request 2: 192 of 192 values not loaded: 192 short:
 * layer 0 block 0: the controller answered DW0 = 0 for a page of 8192
 * bytes"). 0 when every entry is wanted. */
static inline int pc_tally(const struct pc_req *r, const char *what, uint32_t want,
			   uint32_t first, uint32_t count, uint32_t t[5])
{
	static const char *const kind[5] = { "done", "absent (87h)", "already there (89h)",
					     "short", "failed" };
	const struct nkv_kvc_entry *worst = NULL;
	uint32_t l, b, wl = 0, wb = 0, bad = 0, k;
	char why[256], kinds[160] = "";
	size_t n = 0;

	memset(t, 0, 5 * sizeof(uint32_t));
	for (l = 0; l < r->a.layers; l++)
		for (b = first; b < first + count; b++) {
			const struct nkv_kvc_entry *e = &r->out[(size_t)l * r->a.blocks + b];
			uint32_t o = e->outcome < 5u ? e->outcome : NKV_KVC_ERROR;

			t[o]++;
			if (want & (1u << o))
				continue;
			bad++;
			if (!worst || pc_rank(e) > pc_rank(worst))
				worst = e, wl = l, wb = b;
		}
	if (!bad)
		return 0;
	for (k = 0; k < 5; k++)
		if (t[k] && !(want & (1u << k)) && n < sizeof(kinds))
			n += (size_t)snprintf(kinds + n, sizeof(kinds) - n, "%s%u %s", n ? ", " : "",
					      t[k], kind[k]);
	pc_entry_why(worst, wl, wb, r->a.layer_bytes, why, sizeof(why));
	fprintf(stderr, "%s: %u of %u values: %s: %s\n", what, bad, count * r->a.layers, kinds,
		why);
	return -1;
}

/* Fill, then content-addressed Stores of blocks first..first+count-1:
 * "stored" new values, values "already there" (89h). 0 when every
 * entry is one of the two. */
static inline int pc_store_blocks(const struct pc_ops *ops, struct nkv_dev_qp *qp,
				  struct pc_req *r, const char *who, uint32_t first, uint32_t count)
{
	uint32_t t[5];
	int bad;

	if (pc_op(ops, qp, r, PC_FILL, first, count, 0) ||
	    pc_op(ops, qp, r, PC_STORE, first, count, 0))
		return -1;
	bad = pc_tally(r, who, 1u << NKV_KVC_OK | 1u << NKV_KVC_EXISTS, first, count, t);
	printf("%s: %u values (%u blocks x %u layers): %u stored, %u already there\n", who,
	       count * r->a.layers, count, r->a.layers, t[NKV_KVC_OK], t[NKV_KVC_EXISTS]);
	return bad;
}

/* One round of request 2's load: alone (its transfer time *tx), then
 * beside the stand-in compute (ratio x each batch's share of *tx); the
 * share of the transfer hidden behind the compute. */
static inline int pc_load_round(const struct pc_ops *ops, const struct pc_cfg *g,
				struct nkv_dev_qp *qp, struct pc_req *r, uint32_t hits,
				uint32_t units, double *tx, double *to, double *c, double *hidden)
{
	if (pc_op(ops, qp, r, PC_CLEAR, 0, hits, 0) || pc_op(ops, qp, r, PC_LOAD, 0, hits, 0))
		return -1;
	*tx = (double)r->res.t_ns;
	if (pc_op(ops, qp, r, PC_CLEAR, 0, hits, 0) ||
	    pc_op(ops, qp, r, PC_LOAD, 0, hits, (uint64_t)(g->ratio * *tx / units)))
		return -1;
	*to = (double)r->res.t_ns;
	*c = (double)r->res.compute_ns;
	/* What the overlapped run spent beyond its compute is the exposed
	 * part of the transfer; the rest hid behind the compute. */
	*hidden = *to - *c >= *tx ? 0.0 : *to - *c <= 0.0 ? 1.0 : 1.0 - (*to - *c) / *tx;
	return 0;
}

static inline int pc_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Request 2's hits, loaded in PC_ROUNDS rounds (a shared machine is
 * noisy: the median round is reported, and the spread). */
#define PC_ROUNDS 5
static inline int pc_load_hits(const struct pc_ops *ops, const struct pc_cfg *g,
			       struct nkv_dev_qp *qp, struct pc_req *r, uint32_t hits)
{
	uint32_t units = g->layers * ((hits + ops->wave - 1u) / ops->wave), t[5], i, m = 0;
	double bytes = (double)hits * g->layers * pc_layer_bytes(g), h[PC_ROUNDS], sorted[PC_ROUNDS];
	double tx[PC_ROUNDS], to[PC_ROUNDS], c[PC_ROUNDS];
	int bad;

	if (!hits)
		return 0;
	for (i = 0; i < PC_ROUNDS; i++)
		if (pc_load_round(ops, g, qp, r, hits, units, &tx[i], &to[i], &c[i], &h[i]))
			return -1;
	memcpy(sorted, h, sizeof(h));
	qsort(sorted, PC_ROUNDS, sizeof(double), pc_cmp_double);
	for (i = 0; i < PC_ROUNDS; i++)
		if (h[i] == sorted[PC_ROUNDS / 2])
			m = i;
	bad = pc_tally(r, "request 2 (loaded)", 1u << NKV_KVC_OK, 0, hits, t);
	printf("request 2: loaded %u of %u values in %u batches: %.1f MiB in %.2f ms alone, "
	       "%.2f GB/s (median round of %d)\n", t[NKV_KVC_OK], hits * g->layers, units,
	       bytes / 1048576.0, tx[m] / 1e6, bytes / tx[m], PC_ROUNDS);
	printf("request 2: beside %.2f ms of compute (%.2f x each batch's transfer): %.2f ms in "
	       "all, %.0f %% of the retrieval time hidden behind compute (rounds: %.0f..%.0f %%)\n",
	       c[m] / 1e6, g->ratio, to[m] / 1e6, 100.0 * h[m], 100.0 * sorted[0],
	       100.0 * sorted[PC_ROUNDS - 1]);
	return bad;
}

/* Request 2: lookup, load, fill and store the rest, check every page. */
static inline int pc_request2(const struct pc_ops *ops, const struct pc_cfg *g,
			      struct nkv_dev_qp *qp, struct pc_req *r)
{
	uint64_t first;
	uint32_t hits;

	/* Twice: the first one's time is printed too (it may meet a
	 * controller thread that was descheduled while the pages cleared). */
	if (pc_op(ops, qp, r, PC_CLEAR, 0, g->blocks, 0) ||
	    pc_op(ops, qp, r, PC_LOOKUP, 0, g->blocks, 0))
		return -1;
	first = r->res.t_ns;
	if (pc_op(ops, qp, r, PC_LOOKUP, 0, g->blocks, 0))
		return -1;
	hits = r->res.count;
	printf("request 2: %u of %u blocks hit (prefix lookup of %u keys: %.1f us; the first "
	       "lookup %.1f us)\n", hits, g->blocks, g->blocks, r->res.t_ns / 1e3, first / 1e3);
	if (pc_load_hits(ops, g, qp, r, hits) ||
	    pc_store_blocks(ops, qp, r, "request 2 (computed)", hits, g->blocks - hits) ||
	    pc_op(ops, qp, r, PC_CHECK, 0, g->blocks, 0))
		return -1;
	printf("request 2: every page byte-checked (%u pages of %u bytes): %u bad: %s\n",
	       g->blocks * g->layers, pc_layer_bytes(g), r->res.count,
	       r->res.count ? "FAILED" : "ok");
	if (r->res.count)
		fprintf(stderr, "request 2: %u of %u pages of %u bytes differ from what was "
			"stored\n", r->res.count, g->blocks * g->layers, pc_layer_bytes(g));
	return r->res.count ? -1 : 0;
}

/* Keys and pages must fit the controller: its KML, its largest value
 * and MDTS (a page is one value). 0, or EX_EXIT_USAGE after saying
 * which limit, before anything is sent. */
static inline int pc_fits(struct nkv_ctrl *c, const struct pc_cfg *g, uint32_t page)
{
	struct nkv_ctrl_info in;
	uint32_t lim;
	int mdts;

	if (nkv_ctrl_get_info(c, &in))
		return 0;	/* the queue pair's creation says what is wrong */
	if (g->klen > in.max_key) {
		fprintf(stderr, "--hash %s: keys of %u bytes are longer than the controller's "
			"limit of %u bytes (KML)\n", g->klen == 16 ? "xxh3" : "sha256", g->klen,
			in.max_key);
		return EX_EXIT_USAGE;
	}
	mdts = in.max_xfer && (!in.max_value || in.max_xfer < in.max_value);
	lim = mdts ? in.max_xfer : in.max_value;
	if (lim && page > lim) {
		fprintf(stderr, "pages of %u bytes are larger than the controller's limit of %u "
			"bytes (%s): a page holds one layer of one block (--block-tokens x "
			"--kv-heads x --head-dim x --dtype-bytes x 2)\n", page, lim,
			mdts ? "MDTS" : "max value");
		return EX_EXIT_USAGE;
	}
	return 0;
}

/*
 * --dest region: the engine's cache, one region of layers x [2, blocks,
 * block bytes] (K of every block, then V), as vLLM lays out a layer's
 * tensor, and its layout for the kernel in @ops memory (*d_lay, with its
 * bases *d_base). 0, or -1 after saying why.
 */
static inline int pc_cache(const struct pc_ops *ops, struct nkv_ctrl *c, const struct pc_cfg *g,
			   struct nkv_mr **mr, void **d_lay, void **d_base)
{
	uint32_t half = pc_layer_bytes(g) / 2u;
	uint64_t len = nkv_kvc_vllm_bytes(g->layers, g->blocks, half);
	struct nkv_kvc_layout lay;
	struct nkv_dev_base *b = (struct nkv_dev_base *)calloc(2u * g->layers, sizeof(*b));
	void *base;
	int rc = b ? nkv_mem_alloc(c, len, 0, mr, &base) : -ENOMEM;

	if (!rc) {
		*d_base = ops->alloc(2u * g->layers * sizeof(*b));
		*d_lay = ops->alloc(sizeof(lay));
		rc = *d_base && *d_lay ? 0 : -ENOMEM;
	}
	if (!rc) {
		lay = nkv_kvc_layout_vllm(b, (uint64_t)(uintptr_t)*d_base, nkv_mem_dev(*mr), 0,
					  g->layers, g->blocks, half);
		rc = ops->put(*d_base, b, 2u * g->layers * sizeof(*b)) ||
		     ops->put(*d_lay, &lay, sizeof(lay)) ? -EIO : 0;
	}
	free(b);
	if (rc)
		fprintf(stderr, "cannot make the engine's cache (%llu bytes in one region): %s\n",
			(unsigned long long)len, strerror(-rc));
	else
		printf("cache: the engine's own, vLLM's layout (%u layers x [2, %u blocks, %u "
		       "bytes]), %.1f MiB in one registered region: no slots, no copy\n",
		       g->layers, g->blocks, half, (double)len / 1048576.0);
	return rc ? -1 : 0;
}

/* The whole example; the process's exit status. */
static inline int pc_main(int argc, char **argv, const struct pc_ops *ops)
{
	void *d_lay = NULL, *d_base = NULL;
	struct nkv_mr *mr = NULL;
	struct nkv_qpair_opts o;
	struct nkv_ctrl_opts co;
	struct nkv_dev_qp *qp = NULL;
	struct nkv_qpair *q = NULL;
	struct nkv_ctrl *c = NULL;
	struct pc_req r1, r2;
	struct pc_cfg g;
	char err[256] = "";
	int rc = pc_parse(argc, argv, &g);

	if (rc)
		return rc;
	memset(&r1, 0, sizeof(r1));
	memset(&r2, 0, sizeof(r2));
	memset(&co, 0, sizeof(co));
	co.size = sizeof(co);
	co.err = err;
	co.errlen = sizeof(err);
	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	o.depth = 256;
	o.slots = g.region ? 0 : g.layers * g.blocks;	/* the page pool */
	o.slot_size = g.region ? 0 : pc_layer_bytes(&g);
	o.flags = g.region ? NKV_QPAIR_NO_SLOTS : 0;
	ex_log_stderr();
	rc = nkv_ctrl_connect(g.uri, &co, &c);
	if (rc) {
		fprintf(stderr, "cannot connect to %s: %s\n", g.uri, err[0] ? err : strerror(-rc));
		return EX_EXIT_SETUP;
	}
	rc = pc_fits(c, &g, pc_layer_bytes(&g));
	if (rc) {
		nkv_ctrl_close(c);
		return rc;
	}
	rc = ops->qpair(c, &o, &q, &qp);
	if (rc) {
		if (g.region)
			fprintf(stderr, "cannot make a queue pair without slots: %s\n",
				strerror(-rc));
		else
			fprintf(stderr, "cannot make a pool of %u pages of %u bytes: %s\n",
				o.slots, o.slot_size, strerror(-rc));
		nkv_ctrl_close(c);
		return EX_EXIT_SETUP;
	}
	printf("shape: %u layers x %u KV heads x head dim %u, %u-token blocks: %u KiB per layer "
	       "per block, %.2f MiB per block; %u blocks per request, %s keys\n", g.layers,
	       g.kv_heads, g.head_dim, g.block_tokens, pc_layer_bytes(&g) / 1024u,
	       pc_layer_bytes(&g) * (double)g.layers / 1048576.0, g.blocks,
	       g.klen == 16 ? "16-byte XXH3-128" : "32-byte SHA-256");
	if (g.region && pc_cache(ops, c, &g, &mr, &d_lay, &d_base))
		r1.launch_failed = 1;
	else if (pc_req_init(ops, &g, &r1, 1, g.blocks * g.block_tokens, 0) ||
		 pc_req_init(ops, &g, &r2, 2, g.blocks * g.share / 100u * g.block_tokens, 1)) {
		fprintf(stderr, "cannot make the requests' arrays (%u keys of %u bytes each): "
			"out of memory, or the device's copy failed\n", g.layers * g.blocks,
			g.klen);
		r1.launch_failed = 1;
	}
	r1.a.lay = r2.a.lay = (uint64_t)(uintptr_t)d_lay;
	rc = r1.launch_failed || pc_store_blocks(ops, qp, &r1, "request 1", 0, g.blocks) ||
	     pc_request2(ops, &g, qp, &r2);
	/* The controller gone or silent, or a launch that failed: setup;
	 * anything else the data's or a status. */
	if (rc)
		rc = r1.launch_failed || r2.launch_failed || nkv_qpair_failed(q) != NKV_QP_OK
			     ? EX_EXIT_SETUP : EX_EXIT_FAIL;
	pc_req_free(ops, &r1);
	pc_req_free(ops, &r2);
	nkv_qpair_destroy(q);
	nkv_mem_deregister(mr);
	ops->release(d_lay);
	ops->release(d_base);
	nkv_ctrl_close(c);
	return rc;
}

#endif /* NKV_EXAMPLES_PC_HOST_H */
