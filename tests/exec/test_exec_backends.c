/* SPDX-License-Identifier: MIT */
/*
 * Exec on every backend (docs/exec.md, "Where it runs"): the value read
 * through the namespace's backend by a Retrieve of the target's own. A
 * real nkv-target over NVMe/TCP with slice.lua allowlisted (--exec-allow)
 * on rocksdb (a temporary directory), on rados (a throwaway cluster,
 * skipped saying why where none starts) and as an nvmf front over a mem
 * remote: each TP rank's heads of a 1 MiB block byte-checked against a
 * Retrieve, and a module key holding other bytes (C1h until the digest
 * is cached by a good load, then the cached module). On rados also the
 * value read in ranges (fewer bytes than the block, by the metrics) and
 * a concurrent Store between two ranges (the call run again whole, each
 * answer one value). mem: test_exec.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ceph_cluster.h"
#include "http_get.h"
#include "mods.h"
#include "nvmf/tcp_host.h"
#include "target/exec/exec.h"
#include "tgt_proc.h"

#define SUBNQN "nqn.2026-01.io.nkv:target"
#define L 8u
#define H 8u
#define D (16u << 10)
#define BLOCK (L * H * D)

static struct tgt_proc T, R;
static struct nkv_nvmf_assoc AS;
static char ROW[256], ROW_BAD[256], ROW_WHOLE[256], ROW_FWD[256], DIR_[64];

static const char whole_mod[] = EXEC_WHOLE_MOD;
static char slice[4096];
static size_t slice_len;

static void t_log(void *ctx, const char *line)
{
	(void)ctx;
	(void)line;
}

/* examples/exec/slice.lua, looked for from the working directory up
 * (tests run from the source tree or below it). */
static int slice_path(char *path, size_t len)
{
	char dir[512] = ".";
	int up;

	for (up = 0; up < 5; up++) {
		snprintf(path, len, "%s/examples/exec/slice.lua", dir);
		if (!access(path, R_OK))
			return 0;
		strncat(dir, "/..", sizeof(dir) - strlen(dir) - 1);
	}
	return -1;
}

/* slice.lua from the source tree, and its rows: op 1 under "slice", op 2
 * the same digest under "other" (which holds other bytes). */
static void rows(void)
{
	uint8_t d[NKV_EXEC_DIGEST_LEN];
	char hex[2 * NKV_EXEC_DIGEST_LEN + 1], path[512];
	FILE *f;

	cr_assert_eq(slice_path(path, sizeof(path)), 0, "examples/exec/slice.lua not found");
	f = fopen(path, "rb");
	cr_assert_not_null(f, "%s", path);
	slice_len = fread(slice, 1, sizeof(slice), f);
	fclose(f);
	nkv_exec_sha256(slice, slice_len, d);
	nkv_exec_hex(d, sizeof(d), hex);
	snprintf(ROW, sizeof(ROW), "1:1:%s:736c696365", hex);
	snprintf(ROW_BAD, sizeof(ROW_BAD), "1:2:%s:6f74686572", hex);
	snprintf(ROW_FWD, sizeof(ROW_FWD), "1:5:%s:736c696365", hex);	/* the remote's */
	nkv_exec_sha256(whole_mod, strlen(whole_mod), d);
	nkv_exec_hex(d, sizeof(d), hex);
	snprintf(ROW_WHOLE, sizeof(ROW_WHOLE), "1:3:%s:77686f6c65", hex);	/* "whole" */
}

static void open_assoc(uint16_t port)
{
	struct nkv_nvmf_opts o = { .size = sizeof(o), .timeout_ms = 10000, .log = t_log };
	struct nkv_nvmf_addr a = { .port = port };

	snprintf(a.host, sizeof(a.host), "127.0.0.1");
	snprintf(a.nqn, sizeof(a.nqn), "%s", SUBNQN);
	cr_assert_eq(nkv_nvmf_assoc_open(&AS, &a, &o), 0);
}

static uint16_t kv_on(struct nkv_nvmf_assoc *as, uint8_t opc, const char *key, uint8_t *data,
		      uint32_t len)
{
	uint8_t head[NKV_KEY_HEAD_MAX];
	struct nkv_nvmf_cmd c;

	if (nkv_nvmf_kv_prep(&c, nkv_nvmf_q_icd_max(as->io), opc, 1, (const uint8_t *)key,
			     (uint32_t)strlen(key), head, data, len, 0, 0) ||
	    nkv_nvmf_q_exec(as->io, &c))
		return 0x7ff;
	return nkv_nvmf_status(&c) & 0x7ff;
}

static uint16_t kv(uint8_t opc, const char *key, uint8_t *data, uint32_t len)
{
	return kv_on(&AS, opc, key, data, len);
}

static uint16_t ex_on(uint32_t op, const char *key, const char *in, uint8_t *out,
		      uint32_t ocap, uint32_t *dw0)
{
	uint8_t buf[NKV_KEY_HEAD_MAX + 64];
	uint32_t ilen = (uint32_t)strlen(in), klen = (uint32_t)strlen(key);
	struct nkv_nvmf_cmd c;

	memcpy(buf + nkv_key_head_size(klen), in, ilen);
	cr_assert_eq(nkv_nvmf_exec_prep(&c, nkv_nvmf_q_icd_max(AS.io), 1, (const uint8_t *)key,
					klen, op, buf, ilen, out, ocap), 0);
	cr_assert_eq(nkv_nvmf_q_exec(AS.io, &c), 0);
	*dw0 = c.cqe.dw0;
	return nkv_nvmf_status(&c) & 0x7ff;
}

static uint16_t ex(uint32_t op, const char *in, uint8_t *out, uint32_t ocap, uint32_t *dw0)
{
	return ex_on(op, "block", in, out, ocap, dw0);
}

/* Every rank's heads against the Retrieve; then the C1h row. */
static void slices(void)
{
	uint8_t *v = malloc(NKV_KEY_HEAD_MAX + BLOCK), *whole = malloc(BLOCK), *out = malloc(BLOCK / 8);
	uint8_t m[NKV_KEY_HEAD_MAX + sizeof(slice)];
	uint32_t i, r, l, dw0 = 0, per = H / 8;
	char in[64];

	for (i = 0; i < BLOCK; i++)
		v[NKV_KEY_HEAD_MAX + i] = (uint8_t)(i * 2654435761u >> 9);
	memcpy(m + NKV_KEY_HEAD_MAX, slice, slice_len);
	cr_assert_eq(kv(NKV_KV_STORE, "slice", m + NKV_KEY_HEAD_MAX, (uint32_t)slice_len), 0);
	cr_assert_eq(kv(NKV_KV_STORE, "other", m + NKV_KEY_HEAD_MAX, (uint32_t)slice_len - 1), 0);
	cr_assert_eq(kv(NKV_KV_STORE, "block", v + NKV_KEY_HEAD_MAX, BLOCK), 0);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, "block", whole, BLOCK), 0);
	/* Before the digest is cached (by op 1): then it is the identity. */
	cr_assert_eq(ex(2, "0 0 0 8 0", out, BLOCK / 8, &dw0),
		     NKV_STATUS(NKV_SCT_CMD_SPECIFIC, NKV_SC_EXEC_DIGEST));
	for (r = 0; r < 8; r++) {
		snprintf(in, sizeof(in), "%u %u %u 8 %u", L, H, D, r);
		cr_assert_eq(ex(1, in, out, BLOCK / 8, &dw0), 0, "rank %u", r);
		cr_assert_eq(dw0, BLOCK / 8);
		for (l = 0; l < L; l++)
			cr_assert_eq(memcmp(out + (size_t)l * per * D,
					    whole + ((size_t)l * H + r * per) * D, (size_t)per * D),
				     0, "rank %u layer %u", r, l);
	}
	/* The module's digest is cached now: op 2 names it, so it runs, even
	 * though its key holds other bytes (docs/exec.md, "The allowlist"). */
	cr_assert_eq(ex(2, in, out, BLOCK / 8, &dw0), 0);
	free(v);
	free(whole);
	free(out);
}

static void fini(void)
{
	nkv_nvmf_assoc_close(&AS);
	tgt_proc_free(&T);
	tgt_proc_free(&R);
	if (DIR_[0])
		nkv_test_sh(30, NULL, 0, "rm -rf %s", DIR_);
}

Test(exec_backends, rocksdb, .fini = fini, .timeout = 120)
{
	const char *args[] = { "--backend", "rocksdb", "--db", DIR_, "--max-value", "8M",
			       "--exec-allow", ROW, "--exec-allow", ROW_BAD, NULL };

	rows();
	snprintf(DIR_, sizeof(DIR_), "/tmp/nkv-exec-rocks-XXXXXX");
	cr_assert_not_null(mkdtemp(DIR_));
	cr_assert_eq(tgt_proc_start(&T, 0, args), 0, "nkv-target on rocksdb (log %s)", T.log);
	open_assoc(T.port);
	slices();
}

static double metric(uint16_t port, const char *series)
{
	static char text[1 << 18];

	cr_assert_eq(http_get(port, "/metrics", text, sizeof(text)), 200);
	return http_series(text, series);
}

/* Another association's Stores, 'a' x 1 MiB and 'b' x 2 MiB in turn,
 * under the key "hot", until told to stop. */
struct storer {
	uint16_t port;
	int stop;
	int stores;
	uint16_t st;
};

static void *store_loop(void *arg)
{
	struct nkv_nvmf_opts o = { .size = sizeof(o), .timeout_ms = 10000, .log = t_log };
	struct nkv_nvmf_addr a = { .port = 0 };
	struct nkv_nvmf_assoc as;
	struct storer *s = arg;
	uint8_t *v = malloc(2u << 20);
	int i;

	a.port = s->port;
	snprintf(a.host, sizeof(a.host), "127.0.0.1");
	snprintf(a.nqn, sizeof(a.nqn), "%s", SUBNQN);
	if (!v || nkv_nvmf_assoc_open(&as, &a, &o)) {
		s->st = 0x7ff;
		free(v);
		return NULL;
	}
	for (i = 0; !__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE) && !s->st; i++) {
		memset(v, i % 2 ? 'b' : 'a', 2u << 20);
		s->st = kv_on(&as, NKV_KV_STORE, "hot", v, i % 2 ? 2u << 20 : 1u << 20);
		s->stores++;
	}
	nkv_nvmf_assoc_close(&as);
	free(v);
	return NULL;
}

/*
 * RADOS serves ranges (rados_range.c), so Exec reads only the pages a
 * module touches (exec/pager.c): each rank's call reads well under the
 * block. Then a concurrent Store between two of a call's ranges: the
 * call runs again on one whole read, and every answer is one value.
 */
static void rados_ranges(uint16_t mport)
{
	struct storer s = { .port = T.port };
	uint8_t *out = malloc(64), *v = malloc(1u << 20);
	double paged, bytes, rereads = 0;
	uint32_t dw0 = 0;
	pthread_t t;
	int i;

	paged = metric(mport, "nkv_exec_paged_calls_total");
	bytes = metric(mport, "nkv_exec_value_read_bytes_total");
	cr_assert_geq(paged, 9, "the 9 slice calls read in ranges (%.0f)", paged);
	/* 256 KiB first, then 6 layers' 16 KiB each as one 64 KiB page. */
	cr_assert_leq(bytes, 9.0 * BLOCK * 3 / 4, "%.0f bytes read for 9 calls", bytes);
	cr_assert_eq(kv(NKV_KV_STORE, "whole", (uint8_t *)whole_mod, (uint32_t)strlen(whole_mod)),
		     0);
	memset(v, 'a', 1u << 20);
	cr_assert_eq(kv(NKV_KV_STORE, "hot", v, 1u << 20), 0);
	cr_assert_eq(pthread_create(&t, NULL, store_loop, &s), 0);
	/* Until a call met a Store between two ranges, 20 s at most. */
	for (i = 0; i < 400 && (i < 20 || rereads < 1); i++) {
		uint16_t st;

		memset(out, 0, 64);
		st = ex_on(3, "hot", "", out, 63, &dw0);
		cr_assert_eq(st, 0, "call %d: %#x", i, st);
		cr_assert(!strcmp((char *)out, "a1048576") || !strcmp((char *)out, "b2097152"),
			  "call %d saw %s", i, out);
		if (i % 10 == 9)
			rereads = metric(mport, "nkv_exec_rereads_total");
	}
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	cr_assert_eq(s.st, 0, "the other association's Stores: %#x", s.st);
	cr_assert_gt(s.stores, 1);
	cr_assert_geq(rereads, 1, "no call met a Store between two ranges in %d calls", i);
	free(out);
	free(v);
}

Test(exec_backends, rados, .fini = fini, .timeout = 120)
{
	const char *skip = getenv("NKV_TEST_CEPH_SKIP"), *cf = getenv("NKV_TEST_CEPH_CONF");
	const char *args[] = { "--backend", "rados", "--conf", cf, "--pool", "kvpool",
			       "--ns-map", "1=exectest", "--max-value", "8M", "--exec-allow", ROW,
			       "--exec-allow", ROW_BAD, "--exec-allow", ROW_WHOLE,
			       "--metrics", "127.0.0.1:0", NULL };
	uint16_t mport;

	if (skip)
		cr_skip_test("no Ceph cluster: %s", skip);
	cr_assert_not_null(cf);
	rows();
	cr_assert_eq(tgt_proc_start(&T, 0, args), 0, "nkv-target on rados (log %s)", T.log);
	mport = http_metrics_port(T.log);
	cr_assert_neq(mport, 0);
	open_assoc(T.port);
	slices();
	rados_ranges(mport);
}

/* The front's allowlist rows run there, the value read through the nvmf
 * backend (a Retrieve from the remote); an op-ID it has no row for goes
 * to the remote, whose allowlist decides (docs/exec.md, "Where it runs"). */
static void forwarded(void)
{
	uint8_t *whole = malloc(BLOCK), *out = malloc(BLOCK / 8);
	uint32_t l, dw0 = 0, per = H / 8;

	cr_assert_eq(kv(NKV_KV_RETRIEVE, "block", whole, BLOCK), 0);
	cr_assert_eq(ex(5, "8 8 16384 8 3", out, BLOCK / 8, &dw0), 0, "op 5 at the remote");
	cr_assert_eq(dw0, BLOCK / 8);
	for (l = 0; l < L; l++)
		cr_assert_eq(memcmp(out + (size_t)l * per * D, whole + ((size_t)l * H + 3 * per) * D,
				    (size_t)per * D), 0, "layer %u", l);
	cr_assert_eq(ex(6, "8 8 16384 8 3", out, BLOCK / 8, &dw0),
		     NKV_STATUS(NKV_SCT_CMD_SPECIFIC, NKV_SC_EXEC_NOT_ALLOWED), "no row anywhere");
	free(whole);
	free(out);
}

Test(exec_backends, nvmf_front, .fini = fini, .timeout = 120)
{
	const char *rargs[] = { "--backend", "mem", "--max-value", "8M", "--exec-allow", ROW_FWD,
				NULL };
	char uri[96];
	const char *fargs[] = { "--backend", "nvmf", "--remote", uri, "--exec-allow", ROW,
				"--exec-allow", ROW_BAD, NULL };

	rows();
	cr_assert_eq(tgt_proc_start(&R, 0, rargs), 0, "the mem remote started");
	snprintf(uri, sizeof(uri), "tcp:127.0.0.1:%u/%s", R.port, SUBNQN);
	cr_assert_eq(tgt_proc_start(&T, 0, fargs), 0, "the front started (log %s)", T.log);
	open_assoc(T.port);
	slices();
	forwarded();
}

int main(int argc, char *argv[])
{
	return nkv_test_cluster_main(argc, argv, "test_exec_backends");
}
