/* SPDX-License-Identifier: MIT */
/*
 * opts.c - nkv-bench's command line, in the field's vocabulary
 * (--kv-op, --memory-mode, --batch-size, ...). Every bad value gets a
 * one-line reason naming the flag; nothing is silently clamped.
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "bench.h"

void nkv_bench_usage(FILE *f)
{
	fputs("usage: nkv-bench [options]\n"
	      "Measure NVMe Key-Value commands issued by device code (wave batches:\n"
	      "one SQ doorbell per batch) against nkv-target or any vfio-user/pcie controller.\n\n"
	      "  --kv-op OP             store|retrieve|delete|exist|list|exec (default\n"
	      "                         retrieve); exec runs the module --op-id names\n"
	      "                         against each key's value (docs/exec.md): its\n"
	      "                         output up to the slot, bytes counted as moved\n"
	      "  --op-id N              exec: the op-ID (CDW13) the allowlist binds\n"
	      "  --exec-input STR       exec: the input bytes, at most 64 (default none)\n"
	      "  --exec-module FILE     exec: store FILE under key \"nkv-bench/module\" first;\n"
	      "                         on the embedded target also allowlist it as --op-id\n"
	      "                         (its SHA-256); with --target, allowlist it there\n"
	      "  --workload kv|prefix   kv: --kv-op over the keys (default); prefix: an LLM\n"
	      "                         KV cache's requests of --blocks chained block keys\n"
	      "                         (XXH3-128, or SHA-256 with --key-order sha256), each\n"
	      "                         a timed prefix lookup, a Retrieve of the hits into\n"
	      "                         pages, content-addressed Stores of the misses\n"
	      "                         (--iterations requests; cpu engine; docs/bench.md)\n"
	      "  --blocks N             prefix: blocks per request, 1..65536 (default 64)\n"
	      "  --hit-ratio R          prefix: the request's first R x N blocks are stored\n"
	      "                         first, not measured: 0..1 (default 0.75)\n"
	      "  --layers L             prefix: values per block, --value-size each: one\n"
	      "                         per layer, or 1 for a value per block (default 1)\n"
	      "  --memory-mode X        hex mask 0-f, 0x optional (10 is refused): bits SQ 0x1,\n"
	      "                         CQ 0x2, doorbell shadow 0x4,\n"
	      "                         values 0x8 in VRAM (default 0)\n"
	      "  --values-by-messages   the controller reaches values (mode bit 0x8) only by\n"
	      "                         vfio-user DMA_READ/WRITE messages, as GPU memory it\n"
	      "                         cannot map (no GPU: the device arena does)\n"
	      "  --keys K[,K...] [K...] explicit keys (1..255 bytes each; longer than 16 go\n"
	      "                         in head form, as the controller's KML allows)\n"
	      "  --num-keys N           generated keys PREFIX0..PREFIXn (default 1024)\n"
	      "  --key-prefix P         prefix of generated keys (default nkvb-)\n"
	      "  --key-order seq|hash|sha256\n"
	      "                         generated keys: seq = PREFIX + index, sorted (default);\n"
	      "                         hash = 16-byte hash of (PREFIX, index), random order,\n"
	      "                         as an LLM KV cache keys blocks by content;\n"
	      "                         sha256 = 32-byte SHA-256 of (PREFIX, index), vLLM's\n"
	      "                         block key (head form: longer than 16 bytes)\n"
	      "  --key-size N           every generated key N bytes, 1..255: seq pads the\n"
	      "                         index with zeros, hash derives more bytes (8..255),\n"
	      "                         sha256 is 32 (default: the order's own length)\n"
	      "  --batch-size B         commands per doorbell, 1..1023 (default 64): up to a\n"
	      "                         wave (32 or 64) a wave batch, above it a block of\n"
	      "                         waves (needs --queue-length > B)\n"
	      "  --value-size SIZE      bytes per value, 1..64M (default 4096)\n"
	      "  --data-buffer-size SIZE bytes per value buffer, up to 64M (default: value size,\n"
	      "                         page rounded); both within the controller's limit,\n"
	      "                         min(MDTS, max value): 64M on nkv-target's defaults\n"
	      "  --queue-length N       SQ/CQ entries (default 256)\n"
	      "  --num-queues N         queue pairs, one wave (or block) each (default 1)\n"
	      "  --nsid N               the namespace the run uses (default: the target's\n"
	      "                         first KV namespace)\n"
	      "  --iterations N         passes over the keys (default 4)\n"
	      "  --warmup N             passes of the same op before them, not measured\n"
	      "                         (default 0): a Store then overwrites values in\n"
	      "                         memory the target has touched before\n"
	      "  --ttl SECONDS          every Store carries a TTL of SECONDS (1..4294967295):\n"
	      "                         the measured ones and those that store the keys\n"
	      "                         first; the controller must advertise TTL (nkv-target\n"
	      "                         does), else a usage error; wave batches only\n"
	      "                         (--batch-size 64 or less)\n"
	      "  --dest slots|region    where values land: each queue pair's own slots\n"
	      "                         (default), or one region the run registers\n"
	      "                         (nkv_mem_alloc; queue pairs without slots): Store,\n"
	      "                         Retrieve, Exist, Delete; cpu engine, memory mode 0-7;\n"
	      "                         with --workload prefix, the engine's cache in vLLM's\n"
	      "                         layout (a value: a block's K and V of one layer)\n"
	      "  --scatter N            --dest region: each value in N runs spread over the\n"
	      "                         region (1..1020, default 1; --value-size >= 4 N)\n"
	      "  --lfsr-seed N          value pattern seed (default 0x1d872b41)\n"
	      "  --verify, --no-verify  check values / List payloads (default on)\n"
	      "  --fill each|once       Store: write the key's pattern into its slot before\n"
	      "                         every Store (each, the default), or store the keys\n"
	      "                         once first, not measured, and then send the slots\n"
	      "                         as they are (once: the store path alone, as\n"
	      "                         rados_loop sends one buffer; a key may then hold\n"
	      "                         another key's pattern)\n"
	      "  --poll-interval-ns N   embedded target's idle sleep (default 1000; 0: the\n"
	      "                         target's own default, 100 us)\n"
	      "  --engine gpu|cpu       where device code runs (default gpu if usable, else cpu)\n"
	      "  --target URI           vfio-user:/path.sock, pcie:... or tcp:HOST:PORT[/NQN]\n"
	      "                         (default: an embedded nkv-target with the mem backend\n"
	      "                         on a private socket)\n"
	      "  --timeout-ms N         wall-clock time a wait for a completion may take\n"
	      "                         before the queue pair fails (default: the library's,\n"
	      "                         CAP.TO or the namespace's command time and a margin);\n"
	      "                         a controller that is gone ends the wait at once\n"
	      "  --cpus D[,T]           pin device code (cpu engine waves) to CPU D and the\n"
	      "                         embedded target's threads to CPU T (default: unpinned)\n"
	      "  --poll-sched CLASS     normal|idle: the cpu engine's wave threads' scheduling\n"
	      "                         class (default normal); idle (SCHED_IDLE) gives the\n"
	      "                         CPU at once to any thread that wakes, e.g. a Ceph\n"
	      "                         OSD on the same cores\n"
	      "  --json                 one JSON object on stdout instead of the text report\n"
	      "  --quiet                no progress line\n"
	      "  --version              print the version (nkv-bench (nkv) " NKV_VERSION ")\n"
	      "  -h, --help             this text\n\n"
	      "SIZE takes K, M suffixes (powers of 1024).\n\n"
	      NKV_EXIT_HELP
	      "Here 1 is also a stored value of another length, 81h (the target is full);\n"
	      "2 also flags the controller cannot serve (a value above its limit, --ttl\n"
	      "where it has no TTL, more --iterations than nkv-bench keeps times of);\n"
	      "3 also a queue pair that timed out (--timeout-ms) or a controller gone.\n\n"
	      "examples:\n"
	      "  nkv-bench --kv-op retrieve --memory-mode 8\n"
	      "  nkv-bench --kv-op retrieve --memory-mode 8 --values-by-messages\n"
	      "  nkv-bench --workload prefix --blocks 128 --hit-ratio 0.75 --layers 32 \\\n"
	      "            --value-size 64K\n"
	      "  nkv-bench --kv-op store --num-keys 4096 --batch-size 32 --num-queues 2\n"
	      "  nkv-bench --kv-op store --num-keys 200000 --value-size 64 --key-order hash\n"
	      "  nkv-bench --kv-op store --ttl 600\n"
	      "  nkv-bench --kv-op exist --keys gpukey01,gpukey02 --batch-size 2\n"
	      "  nkv-bench --kv-op retrieve --target vfio-user:/tmp/nkv.sock --json\n", f);
}

static const struct { const char *name; uint8_t opc; } nkv_bench_ops[] = {
	{ "store", NKV_KV_STORE }, { "retrieve", NKV_KV_RETRIEVE },
	{ "delete", NKV_KV_DELETE }, { "exist", NKV_KV_EXIST }, { "list", NKV_KV_LIST },
	{ "exec", NKV_KV_EXEC },
};

const char *nkv_bench_op_name(uint8_t opc)
{
	size_t i;

	for (i = 0; i < sizeof(nkv_bench_ops) / sizeof(nkv_bench_ops[0]); i++)
		if (nkv_bench_ops[i].opc == opc)
			return nkv_bench_ops[i].name;
	return "?";
}

/* A number (decimal or 0x hex) with an optional K/M suffix, <= max. */
static int nkv_bench_num(const char *s, uint64_t max, int suffix, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	if (suffix && (*end == 'k' || *end == 'K')) {
		v = v > (max >> 10) + 1 ? max + 1 : v << 10;
		end++;
	} else if (suffix && (*end == 'm' || *end == 'M')) {
		v = v > (max >> 20) + 1 ? max + 1 : v << 20;
		end++;
	}
	if (*end || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* A hex number, with or without 0x, <= max. */
static int nkv_bench_hex(const char *s, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (!*s || !strchr("0123456789abcdefABCDEF", *s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 16);
	if (errno || *end || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

static int nkv_bench_add_key(struct nkv_bench_opts *o, const char *k, size_t len)
{
	struct nkv_bk_key *n;

	if (len == 0 || len > NKV_KEY_MAX) {
		fprintf(stderr, "nkv-bench: --keys: key '%.*s' is %zu bytes; keys are 1..255 bytes\n",
			(int)len, k, len);
		return NKV_EXIT_USAGE;
	}
	n = realloc(o->keys, (o->num_keys + 1) * sizeof(*n));
	if (!n) {
		fprintf(stderr, "nkv-bench: out of memory\n");
		return NKV_EXIT_USAGE;
	}
	o->keys = n;
	memset(&n[o->num_keys], 0, sizeof(*n));
	memcpy(n[o->num_keys].key, k, len);
	n[o->num_keys].len = (uint32_t)len;
	o->num_keys++;
	return 0;
}

/* "a,b,c": each piece a key. */
static int nkv_bench_add_keys(struct nkv_bench_opts *o, const char *s)
{
	const char *p = s;
	int rc;

	for (;;) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);

		rc = nkv_bench_add_key(o, p, len);
		if (rc || !c)
			return rc;
		p = c + 1;
	}
}

const char *nkv_bench_key_order_name(int order)
{
	return order == NKV_BENCH_KEYS_SHA256 ? "sha256" : order == NKV_BENCH_KEYS_HASH ? "hash"
										     : "seq";
}

/* splitmix64's output function: a bijection on 64 bits that mixes well. */
static uint64_t nkv_bench_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * FNV-1a of the prefix seeds the stream; the first word is a bijection
 * of i (so no two indexes share a key of 8 bytes or more), every next
 * word one more round of the mixer. Stand-in for a content hash: stable,
 * uniform, not cryptographic.
 */
void nkv_bench_hash_key(const char *prefix, uint64_t i, uint8_t *key, uint32_t len)
{
	uint64_t h = 0xcbf29ce484222325ull, w;
	const char *p;
	uint32_t j;

	for (p = prefix; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	w = nkv_bench_mix(h + (i + 1) * 0x9e3779b97f4a7c15ull);
	for (j = 0; j < len; j++) {
		if (j && j % 8 == 0)
			w = nkv_bench_mix(w + 0x9e3779b97f4a7c15ull);
		key[j] = (uint8_t)(w >> (8 * (j % 8)));
	}
}

int nkv_bench_sha256_key(const char *prefix, uint64_t i, uint8_t key[32])
{
	size_t plen = strlen(prefix);
	uint8_t in[256 + 8];
	unsigned int n = 0;
	int j;

	if (plen > 256)
		return -EINVAL;
	memcpy(in, prefix, plen);
	for (j = 0; j < 8; j++)
		in[plen + (size_t)j] = (uint8_t)(i >> (8 * j));
	if (!EVP_Digest(in, plen + 8, key, &n, EVP_sha256(), NULL) || n != 32)
		return -EIO;
	return 0;
}

static int nkv_bench_gen_hash_keys(struct nkv_bench_opts *o, uint64_t n)
{
	uint32_t len = o->key_size ? o->key_size : NKV_KEY_INLINE_MAX;
	uint64_t i;

	for (i = 0; i < n; i++) {
		if (o->key_order == NKV_BENCH_KEYS_HASH) {
			nkv_bench_hash_key(o->key_prefix, i, o->keys[i].key, len);
		} else {
			len = 32;
			if (nkv_bench_sha256_key(o->key_prefix, i, o->keys[i].key)) {
				fprintf(stderr, "nkv-bench: --key-order sha256: libcrypto's SHA-256 "
					"failed (or --key-prefix is over 256 bytes)\n");
				return NKV_EXIT_USAGE;
			}
		}
		o->keys[i].len = len;
	}
	o->num_keys = (uint32_t)n;
	return 0;
}

/* --key-size against --key-order: the sizes each can make. */
static int nkv_bench_key_size_ok(const struct nkv_bench_opts *o)
{
	if (!o->key_size)
		return 0;
	if (o->keys_given) {
		fprintf(stderr, "nkv-bench: --key-size is for generated keys; --keys have their "
			"own lengths\n");
		return NKV_EXIT_USAGE;
	}
	if (o->key_order == NKV_BENCH_KEYS_SHA256 && o->key_size != 32) {
		fprintf(stderr, "nkv-bench: --key-order sha256 makes 32-byte keys, not %u\n",
			o->key_size);
		return NKV_EXIT_USAGE;
	}
	/* Fewer bytes than the bijection's word could repeat keys. */
	if (o->key_order == NKV_BENCH_KEYS_HASH && o->key_size < 8) {
		fprintf(stderr, "nkv-bench: --key-order hash needs --key-size 8..255 (shorter "
			"hashes could repeat); --key-order seq makes short keys\n");
		return NKV_EXIT_USAGE;
	}
	return 0;
}

/* PREFIX + zero-padded decimal index, as wide as the largest index (or
 * --key-size); or with --key-order hash / sha256, a hash of the two. */
static int nkv_bench_gen_keys(struct nkv_bench_opts *o, uint64_t n)
{
	size_t plen = strlen(o->key_prefix);
	int width = snprintf(NULL, 0, "%llu", (unsigned long long)(n ? n - 1 : 0));
	size_t max = o->key_size ? o->key_size : NKV_KEY_MAX;
	uint64_t i;

	if (o->key_order == NKV_BENCH_KEYS_SEQ && plen + (size_t)width > max) {
		fprintf(stderr, "nkv-bench: --key-prefix '%s' (%zu bytes) + %d digits for %llu keys "
			"makes keys of %zu bytes; %s %zu bytes\n", o->key_prefix, plen,
			width, (unsigned long long)n, plen + (size_t)width,
			o->key_size ? "--key-size is" : "keys are at most", max);
		return NKV_EXIT_USAGE;
	}
	if (o->key_size && o->key_order == NKV_BENCH_KEYS_SEQ)
		width = (int)(o->key_size - plen);
	o->keys = calloc(n, sizeof(*o->keys));
	if (!o->keys) {
		fprintf(stderr, "nkv-bench: out of memory for %llu keys\n", (unsigned long long)n);
		return NKV_EXIT_USAGE;
	}
	if (o->key_order != NKV_BENCH_KEYS_SEQ)
		return nkv_bench_gen_hash_keys(o, n);
	for (i = 0; i < n; i++) {
		char buf[NKV_KEY_MAX + 1];
		int len = snprintf(buf, sizeof(buf), "%s%0*llu", o->key_prefix, width,
				   (unsigned long long)i);

		memcpy(o->keys[i].key, buf, (size_t)len);
		o->keys[i].len = (uint32_t)len;
	}
	o->num_keys = (uint32_t)n;
	return 0;
}

enum {
	OPT_OP = 256, OPT_MODE, OPT_KEYS, OPT_NUM_KEYS, OPT_PREFIX, OPT_BATCH, OPT_VSIZE,
	OPT_BSIZE, OPT_QLEN, OPT_NQ, OPT_ITER, OPT_WARMUP, OPT_SEED, OPT_VERIFY, OPT_NO_VERIFY,
	OPT_POLL, OPT_ENGINE, OPT_TARGET, OPT_TIMEOUT, OPT_JSON, OPT_QUIET, OPT_KEY_ORDER, OPT_CPUS,
	OPT_BY_MSGS, OPT_POLL_SCHED, OPT_FILL, OPT_KEY_SIZE, OPT_TTL, OPT_DEST, OPT_SCATTER,
	OPT_VERSION, OPT_NSID, OPT_OP_ID, OPT_EXEC_INPUT, OPT_EXEC_MODULE,
};

static const struct option nkv_bench_lopts[] = {
	{ "kv-op", required_argument, NULL, OPT_OP },
	{ "memory-mode", required_argument, NULL, OPT_MODE },
	{ "keys", required_argument, NULL, OPT_KEYS },
	{ "num-keys", required_argument, NULL, OPT_NUM_KEYS },
	{ "key-prefix", required_argument, NULL, OPT_PREFIX },
	{ "batch-size", required_argument, NULL, OPT_BATCH },
	{ "value-size", required_argument, NULL, OPT_VSIZE },
	{ "data-buffer-size", required_argument, NULL, OPT_BSIZE },
	{ "queue-length", required_argument, NULL, OPT_QLEN },
	{ "num-queues", required_argument, NULL, OPT_NQ },
	{ "iterations", required_argument, NULL, OPT_ITER },
	{ "warmup", required_argument, NULL, OPT_WARMUP },
	{ "lfsr-seed", required_argument, NULL, OPT_SEED },
	{ "verify", no_argument, NULL, OPT_VERIFY },
	{ "no-verify", no_argument, NULL, OPT_NO_VERIFY },
	{ "poll-interval-ns", required_argument, NULL, OPT_POLL },
	{ "engine", required_argument, NULL, OPT_ENGINE },
	{ "target", required_argument, NULL, OPT_TARGET },
	{ "timeout-ms", required_argument, NULL, OPT_TIMEOUT },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "key-order", required_argument, NULL, OPT_KEY_ORDER },
	{ "cpus", required_argument, NULL, OPT_CPUS },
	{ "values-by-messages", no_argument, NULL, OPT_BY_MSGS },
	{ "poll-sched", required_argument, NULL, OPT_POLL_SCHED },
	{ "fill", required_argument, NULL, OPT_FILL },
	{ "key-size", required_argument, NULL, OPT_KEY_SIZE },
	{ "ttl", required_argument, NULL, OPT_TTL },
	{ "dest", required_argument, NULL, OPT_DEST },
	{ "scatter", required_argument, NULL, OPT_SCATTER },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "nsid", required_argument, NULL, OPT_NSID },
	{ "op-id", required_argument, NULL, OPT_OP_ID },
	{ "exec-input", required_argument, NULL, OPT_EXEC_INPUT },
	{ "exec-module", required_argument, NULL, OPT_EXEC_MODULE },
	{ "help", no_argument, NULL, 'h' },
	{ "workload", required_argument, NULL, NKV_BENCH_OPT_WORKLOAD },
	{ "blocks", required_argument, NULL, NKV_BENCH_OPT_BLOCKS },
	{ "hit-ratio", required_argument, NULL, NKV_BENCH_OPT_HIT_RATIO },
	{ "layers", required_argument, NULL, NKV_BENCH_OPT_LAYERS },
	{ NULL, 0, NULL, 0 },
};

/* Numeric flags: where the value goes, its range and whether K/M apply. */
static int nkv_bench_numeric(int opt, const char *arg, struct nkv_bench_opts *o,
			     uint64_t *num_keys)
{
	static const struct { int opt; uint64_t min, max; int suffix; const char *what; } r[] = {
		{ OPT_MODE, 0, 0xf, 0, "a hex mask 0-f (0x optional): 10 is 0x10, out of range" },
		{ OPT_NUM_KEYS, 1, 1u << 24, 0, "1..16777216" },
		{ OPT_BATCH, 1, NKV_BENCH_MAX_BATCH, 0, "1..1023 (threads of one block)" },
		{ OPT_VSIZE, 1, 64u << 20, 1, "1..64M (a value has 1 byte to 64 MiB)" },
		{ OPT_BSIZE, 1, 64u << 20, 1, "1..64M (values to 64 MiB)" },
		{ OPT_QLEN, 2, 65536, 0, "2..65536" },
		{ OPT_NQ, 1, 64, 0, "1..64" },
		{ OPT_ITER, 1, 1u << 30, 0, "1..2^30" },
		{ OPT_WARMUP, 0, 1u << 20, 0, "0..2^20" },
		{ OPT_SEED, 0, UINT32_MAX, 0, "0..0xffffffff" },
		{ OPT_POLL, 0, 1000000000ull, 0, "0..1000000000" },
		{ OPT_TIMEOUT, 1, 3600000, 0, "1..3600000" },
		{ OPT_KEY_SIZE, 1, NKV_KEY_MAX, 0, "1..255" },
		{ OPT_TTL, 1, UINT32_MAX, 0, "1..4294967295 seconds" },
		{ OPT_DEST, 0, 0, 0, "" },
		{ OPT_SCATTER, 1, NKV_IOV_MAX, 0, "1..1020 runs" },
		{ OPT_NSID, 1, 0xfffffffeu, 0, "1..4294967294 (an active namespace)" },
		{ OPT_OP_ID, 0, UINT32_MAX, 0, "0..4294967295" },
	};
	uint64_t v = 0;
	size_t i;
	int bad;

	for (i = 0; i < sizeof(r) / sizeof(r[0]) && r[i].opt != opt; i++)
		;
	/* Memory modes are written in hex, as the field's tools write them. */
	bad = opt == OPT_MODE ? nkv_bench_hex(arg, r[i].max, &v)
			      : nkv_bench_num(arg, r[i].max, r[i].suffix, &v);
	if (bad || v < r[i].min) {
		fprintf(stderr, "nkv-bench: bad value '%s' for --%s: expected %s\n", arg,
			nkv_bench_lopts[opt - OPT_OP].name, r[i].what);
		return NKV_EXIT_USAGE;
	}
	switch (opt) {
	case OPT_MODE: o->memory_mode = (uint32_t)v; break;
	case OPT_NUM_KEYS: *num_keys = v; break;
	case OPT_BATCH: o->batch = (uint32_t)v; break;
	case OPT_VSIZE: o->value_size = (uint32_t)v; break;
	case OPT_BSIZE: o->buf_size = (uint32_t)v; break;
	case OPT_QLEN: o->queue_length = (uint32_t)v; break;
	case OPT_NQ: o->num_queues = (uint32_t)v; break;
	case OPT_ITER: o->iterations = (uint32_t)v; break;
	case OPT_WARMUP: o->warmup = (uint32_t)v; break;
	case OPT_SEED: o->seed = (uint32_t)v; break;
	case OPT_POLL: o->poll_ns = v; break;
	case OPT_TIMEOUT: o->timeout_ms = (uint32_t)v; break;
	case OPT_KEY_SIZE: o->key_size = (uint32_t)v; break;
	case OPT_TTL: o->ttl_s = (uint32_t)v; break;
	case OPT_SCATTER: o->scatter = (uint32_t)v; break;
	case OPT_NSID: o->nsid = (uint32_t)v; break;
	case OPT_OP_ID: o->op_id = (uint32_t)v; o->op_id_given = 1; break;
	}
	return 0;
}

static int nkv_bench_word(int opt, const char *arg, struct nkv_bench_opts *o)
{
	size_t i;

	if (opt == OPT_OP) {
		for (i = 0; i < sizeof(nkv_bench_ops) / sizeof(nkv_bench_ops[0]); i++) {
			if (!strcmp(arg, nkv_bench_ops[i].name)) {
				o->opc = nkv_bench_ops[i].opc;
				o->op_name = nkv_bench_ops[i].name;
				return 0;
			}
		}
		fprintf(stderr, "nkv-bench: bad --kv-op '%s': store|retrieve|delete|exist|list|exec\n",
			arg);
		return NKV_EXIT_USAGE;
	}
	if (opt == OPT_KEY_ORDER) {
		if (!strcmp(arg, "seq") || !strcmp(arg, "hash") || !strcmp(arg, "sha256")) {
			o->key_order = arg[0] == 'h' ? NKV_BENCH_KEYS_HASH
				     : arg[0] == 's' && arg[1] == 'h' ? NKV_BENCH_KEYS_SHA256
								      : NKV_BENCH_KEYS_SEQ;
			return 0;
		}
		fprintf(stderr, "nkv-bench: bad --key-order '%s': seq|hash|sha256\n", arg);
		return NKV_EXIT_USAGE;
	}
	if (opt == OPT_POLL_SCHED) {
		if (!strcmp(arg, "normal") || !strcmp(arg, "idle")) {
			o->poll_sched = arg[0] == 'i' ? NKV_CPU_SCHED_IDLE : NKV_CPU_SCHED_NORMAL;
			return 0;
		}
		fprintf(stderr, "nkv-bench: bad --poll-sched '%s': normal|idle\n", arg);
		return NKV_EXIT_USAGE;
	}
	if (opt == OPT_FILL) {
		if (!strcmp(arg, "each") || !strcmp(arg, "once")) {
			o->fill_once = arg[0] == 'o';
			return 0;
		}
		fprintf(stderr, "nkv-bench: bad --fill '%s': each|once\n", arg);
		return NKV_EXIT_USAGE;
	}
	if (!strcmp(arg, "cpu") || !strcmp(arg, "gpu")) {
		o->engine = arg[0] == 'c' ? NKV_BENCH_ENGINE_CPU : NKV_BENCH_ENGINE_GPU;
		return 0;
	}
	fprintf(stderr, "nkv-bench: bad --engine '%s': gpu|cpu\n", arg);
	return NKV_EXIT_USAGE;
}

/* --cpus D[,T]: CPUs this process may run on, each one at most once
 * per role. */
static int nkv_bench_cpus(const char *arg, struct nkv_bench_opts *o)
{
	int cpu[2] = { -1, -1 }, n;
	const char *p = arg;
	cpu_set_t allowed;
	char *end;
	long v;

	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		CPU_ZERO(&allowed);
	for (n = 0; n < 2; n++) {
		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || end == p || *p == '-' || *p == '+' || *p == ' ' || v >= CPU_SETSIZE ||
		    (*end && *end != ',') || (*end == ',' && n == 1))
			goto bad;
		if (!CPU_ISSET((int)v, &allowed)) {
			fprintf(stderr, "nkv-bench: --cpus %s: CPU %ld is not one this process may "
				"run on (see nproc, taskset -p $$)\n", arg, v);
			return NKV_EXIT_USAGE;
		}
		cpu[n] = (int)v;
		if (!*end)
			break;
		p = end + 1;
	}
	o->cpu_device = cpu[0];
	o->cpu_target = cpu[1];
	return 0;
bad:
	fprintf(stderr, "nkv-bench: bad value '%s' for --cpus: expected D or D,T "
		"(CPU numbers: device code, embedded target)\n", arg);
	return NKV_EXIT_USAGE;
}

/* One launch runs every --iterations pass over the keys and keeps each
 * batch's time: at most NKV_BENCH_MAX_BATCHES of them. */
static int nkv_bench_batches_ok(const struct nkv_bench_opts *o)
{
	uint32_t per_q = o->num_keys / o->num_queues, extra = o->num_keys % o->num_queues;
	uint64_t nb = (uint64_t)o->num_queues * ((per_q + o->batch - 1) / o->batch) +
		      (extra && per_q % o->batch == 0 ? extra : 0);
	/* run.c keeps one more per queue pair. */
	uint64_t max = (NKV_BENCH_MAX_BATCHES - o->num_queues) / nb;

	if (o->workload != NKV_BENCH_WORKLOAD_KV || o->iterations <= max)
		return 0;
	fprintf(stderr, "nkv-bench: --iterations %u x %llu batches per pass (%u keys / "
		"--batch-size %u over %u queue%s) is more than the %llu batch times nkv-bench "
		"keeps: use --iterations %llu or less\n", o->iterations, (unsigned long long)nb,
		o->num_keys, o->batch, o->num_queues, o->num_queues == 1 ? "" : "s",
		NKV_BENCH_MAX_BATCHES, (unsigned long long)max);
	return NKV_EXIT_USAGE;
}

/* --dest region's rules: what a region run can do (docs/bench.md). */
static int nkv_bench_dest_ok(struct nkv_bench_opts *o)
{
	const char *no = NULL;

	if (!o->dest_region) {
		if (o->scatter > 1)
			no = "--scatter needs --dest region (a slot is one run)";
	} else if (o->opc == NKV_KV_LIST && o->workload == NKV_BENCH_WORKLOAD_KV) {
		no = "--dest region takes --kv-op store, retrieve, exist or delete";
	} else if (o->scatter > 1 && o->workload != NKV_BENCH_WORKLOAD_KV) {
		no = "--scatter: --workload prefix's values are a block's K and V, 2 runs";
	} else if (o->engine == NKV_BENCH_ENGINE_GPU) {
		no = "--dest region runs on the cpu engine (GPU memory regions are not built yet)";
	} else if (o->memory_mode & 0x8u) {
		no = "--dest region: values land in the region, not in device memory (memory-mode "
		     "bit 0x8 is for slots)";
	} else if (o->buf_size && o->buf_size != o->value_size) {
		no = "--dest region: a value's room in the region is --value-size (no "
		     "--data-buffer-size)";
	} else if (o->value_size < 4u * (o->scatter ? o->scatter : 1u)) {
		no = "--scatter N needs --value-size of 4 N bytes or more (runs of whole words)";
	}
	if (no) {
		fprintf(stderr, "nkv-bench: %s\n", no);
		return NKV_EXIT_USAGE;
	}
	if (o->dest_region && !o->scatter)
		o->scatter = 1;
	if (o->dest_region && o->engine == NKV_BENCH_ENGINE_AUTO)
		o->engine = NKV_BENCH_ENGINE_CPU;
	return 0;
}

/* --kv-op exec's rules: an op-ID, an input that fits the kernel's
 * arguments, slots (no region), the kv workload. */
static int nkv_bench_exec_ok(const struct nkv_bench_opts *o)
{
	const char *no = NULL;
	int exec = o->opc == NKV_KV_EXEC;

	if (!exec && (o->op_id_given || o->exec_input || o->exec_module))
		no = "--op-id, --exec-input and --exec-module are for --kv-op exec";
	else if (exec && !o->op_id_given)
		no = "--kv-op exec needs --op-id N (the namespace's allowlist binds it)";
	else if (exec && o->exec_input && strlen(o->exec_input) > NKV_BK_EXEC_IN_MAX)
		no = "--exec-input: at most 64 bytes";
	else if (exec && (o->dest_region || o->workload != NKV_BENCH_WORKLOAD_KV))
		no = "--kv-op exec runs with value slots and --workload kv";
	if (!no)
		return 0;
	fprintf(stderr, "nkv-bench: %s\n", no);
	return NKV_EXIT_USAGE;
}

/* Cross-flag rules, once everything is parsed. */
static int nkv_bench_check(struct nkv_bench_opts *o, uint64_t num_keys)
{
	int rc = nkv_bench_dest_ok(o);

	if (!rc)
		rc = nkv_bench_exec_ok(o);
	if (rc)
		return rc;
	if (!o->buf_size && o->dest_region)
		o->buf_size = o->value_size;
	if (!o->buf_size)
		o->buf_size = (o->value_size + 4095u) & ~4095u;
	if (o->values_by_messages && !(o->memory_mode & 0x8u)) {
		fprintf(stderr, "nkv-bench: --values-by-messages needs --memory-mode with bit 8 "
			"(values in device memory)\n");
		return NKV_EXIT_USAGE;
	}
	if (o->value_size > o->buf_size) {
		fprintf(stderr, "nkv-bench: --value-size %u is larger than --data-buffer-size %u\n",
			o->value_size, o->buf_size);
		return NKV_EXIT_USAGE;
	}
	if (o->fill_once && o->opc != NKV_KV_STORE) {
		fprintf(stderr, "nkv-bench: --fill once is for --kv-op store (only a Store "
			"writes values)\n");
		return NKV_EXIT_USAGE;
	}
	if (o->ttl_s && o->batch > NKV_WAVE_MAX) {
		fprintf(stderr, "nkv-bench: --ttl with --batch-size %u: TTL'd Stores go in wave "
			"batches only (--batch-size %u or less; a block batch has no register "
			"left for the TTL on sm_90)\n", o->batch, NKV_WAVE_MAX);
		return NKV_EXIT_USAGE;
	}
	if (o->warmup && o->opc == NKV_KV_DELETE) {
		fprintf(stderr, "nkv-bench: --warmup with --kv-op delete: a Delete pass leaves "
			"nothing to delete (each measured pass stores its keys first)\n");
		return NKV_EXIT_USAGE;
	}
	if ((uint64_t)o->batch * o->num_queues > NKV_BENCH_MAX_THREADS) {
		fprintf(stderr, "nkv-bench: --batch-size %u x --num-queues %u is more than the %u "
			"threads nkv-bench launches\n", o->batch, o->num_queues, NKV_BENCH_MAX_THREADS);
		return NKV_EXIT_USAGE;
	}
	if (o->batch > o->queue_length - 1) {
		fprintf(stderr, "nkv-bench: --batch-size %u needs --queue-length >= %u "
			"(a queue holds length - 1 commands)\n", o->batch, o->batch + 1);
		return NKV_EXIT_USAGE;
	}
	if (o->keys_given && o->key_order != NKV_BENCH_KEYS_SEQ) {
		fprintf(stderr, "nkv-bench: --key-order %s makes the keys; it cannot be "
			"combined with --keys\n", nkv_bench_key_order_name(o->key_order));
		return NKV_EXIT_USAGE;
	}
	rc = nkv_bench_key_size_ok(o);
	if (rc)
		return rc;
	if (o->target && o->cpu_target >= 0) {
		fprintf(stderr, "nkv-bench: --cpus %d,%d: with --target the target is another "
			"process; pin it with taskset and give --cpus %d\n", o->cpu_device,
			o->cpu_target, o->cpu_device);
		return NKV_EXIT_USAGE;
	}
	if (!o->keys_given)
		rc = nkv_bench_gen_keys(o, num_keys);
	else if (num_keys)
		fprintf(stderr, "nkv-bench: --num-keys ignored: --keys given\n");
	if (!rc && o->num_keys < o->num_queues) {
		fprintf(stderr, "nkv-bench: %u keys cannot feed %u queues (one wave each)\n",
			o->num_keys, o->num_queues);
		rc = NKV_EXIT_USAGE;
	}
	return rc ? rc : nkv_bench_batches_ok(o);
}

static void nkv_bench_defaults(struct nkv_bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->opc = NKV_KV_RETRIEVE;
	o->op_name = "retrieve";
	o->key_prefix = "nkvb-";
	o->batch = 64;
	o->value_size = 4096;
	o->queue_length = 256;
	o->num_queues = 1;
	o->iterations = 4;
	o->seed = 0x1d872b41u;
	o->verify = 1;
	o->poll_ns = 1000;
	o->cpu_device = -1;
	o->cpu_target = -1;
}

int nkv_bench_parse(int argc, char **argv, struct nkv_bench_opts *o)
{
	uint64_t num_keys = 0;
	int opt, rc = 0;

	nkv_bench_defaults(o);
	optind = 1;
	/* '+': stop at the first non-option, so --keys can take several words. */
	while (!rc && (opt = getopt_long(argc, argv, "+h", nkv_bench_lopts, NULL)) != -1) {
		switch (opt) {
		case OPT_OP: case OPT_ENGINE: case OPT_KEY_ORDER: case OPT_POLL_SCHED: case OPT_FILL:
			rc = nkv_bench_word(opt, optarg, o);
			break;
		case OPT_KEYS:
			o->keys_given = 1;
			rc = nkv_bench_add_keys(o, optarg);
			while (!rc && optind < argc && argv[optind][0] != '-')
				rc = nkv_bench_add_keys(o, argv[optind++]);
			break;
		case OPT_PREFIX: o->key_prefix = optarg; break;
		case OPT_VERIFY: o->verify = 1; break;
		case OPT_NO_VERIFY: o->verify = 0; break;
		case OPT_TARGET: o->target = optarg; break;
		case OPT_EXEC_INPUT: o->exec_input = optarg; break;
		case OPT_EXEC_MODULE: o->exec_module = optarg; break;
		case OPT_JSON: o->json = 1; break;
		case OPT_QUIET: o->quiet = 1; break;
		case OPT_CPUS: rc = nkv_bench_cpus(optarg, o); break;
		case OPT_BY_MSGS: o->values_by_messages = 1; break;
		case OPT_DEST:
			if (strcmp(optarg, "slots") && strcmp(optarg, "region")) {
				fprintf(stderr, "nkv-bench: bad --dest '%s': slots|region\n", optarg);
				rc = NKV_EXIT_USAGE;
			}
			o->dest_region = !strcmp(optarg, "region");
			break;
		case NKV_BENCH_OPT_WORKLOAD: case NKV_BENCH_OPT_BLOCKS:
		case NKV_BENCH_OPT_HIT_RATIO: case NKV_BENCH_OPT_LAYERS:
			rc = nkv_bench_prefix_opt(opt, optarg, o);
			break;
		case 'h': nkv_bench_usage(stdout); return -1;
		case OPT_VERSION: fputs(NKV_VERSION_LINE("nkv-bench"), stdout); return -1;
		case '?': rc = NKV_EXIT_USAGE; break;
		default: rc = nkv_bench_numeric(opt, optarg, o, &num_keys); break;
		}
	}
	if (!rc && optind < argc) {
		fprintf(stderr, "nkv-bench: unexpected argument '%s'\n", argv[optind]);
		rc = NKV_EXIT_USAGE;
	}
	if (!rc)
		rc = nkv_bench_check(o, o->keys_given ? num_keys : (num_keys ? num_keys : 1024));
	if (!rc)
		rc = nkv_bench_prefix_check(o);
	if (rc)
		fprintf(stderr, "nkv-bench: try 'nkv-bench --help'\n");
	return rc;
}

void nkv_bench_opts_free(struct nkv_bench_opts *o)
{
	free(o->keys);
	o->keys = NULL;
}
