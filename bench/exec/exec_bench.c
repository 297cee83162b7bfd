/* SPDX-License-Identifier: MIT */
/*
 * exec_bench.c - Exec beside Retrieve, in one run (docs/bench.md, "Exec:
 * the TP slice beside a whole Retrieve"):
 *
 *   exec_bench [SIZE_MIB [ROUNDS [BACKEND_ARGS...]]]
 *
 * Starts nkv-target (BUILD/bin, mem backend unless BACKEND_ARGS say
 * otherwise, e.g. "--backend rados --pool p ...") listening on NVMe/TCP
 * loopback and a vfio-user socket, slice.lua (examples/exec/) allowlisted
 * as op 1 and an endless loop as op 2 (max_wall_ms 200). Stores one
 * SIZE MiB block (8 layers x 8 heads, layer-major) and measures, each
 * the median of ROUNDS:
 *
 *   tcp retrieve / tcp exec     the whole block by Retrieve, and one TP
 *                               rank's 1/8 by Exec (ranks in turn), over
 *                               NVMe/TCP (src/nvmf initiator): bytes the
 *                               client received (C2HData) and time
 *   vfio retrieve / vfio exec   the same through libnkv's synchronous API
 *                               over vfio-user (bytes into the caller's
 *                               buffer)
 *   loop                        op 2 from one client while another
 *                               Retrieves 4 KiB values over NVMe/TCP:
 *                               when the loop ended (its status) against
 *                               its wall cap, and the other client's
 *                               latency before and during it
 *
 * Every Exec result is byte-checked against the Retrieve's slice outside
 * the timed part. One JSON object per line.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nkv_host.h"
#include "nvmf/tcp_host.h"
#include "target/exec/exec.h"
#include "tgt_proc.h"

#define HEADS 8u
#define LAYERS 8u
#define TP 8u
#define LOOP_CAP_MS 200u

static struct nkv_nvmf_assoc AS;
static uint32_t SIZE;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return v[n / 2];
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = malloc(1 << 16);

	*len = f && p ? fread(p, 1, 1 << 16, f) : 0;
	if (f)
		fclose(f);
	return p;
}

static const char loop_mod[] = "return function() while true do end end";

/* --exec-allow rows for slice (op 1) and the loop (op 2). */
static void rows(const char *slice, size_t len, char *r1, char *r2, size_t n)
{
	uint8_t d[NKV_EXEC_DIGEST_LEN];
	char hex[2 * NKV_EXEC_DIGEST_LEN + 1];

	nkv_exec_sha256(slice, len, d);
	nkv_exec_hex(d, sizeof(d), hex);
	snprintf(r1, n, "1:1:%s:%s", hex, "736c696365");	/* "slice" */
	nkv_exec_sha256(loop_mod, strlen(loop_mod), d);
	nkv_exec_hex(d, sizeof(d), hex);
	snprintf(r2, n, "1:2:%s:%s:0:0:0:%u", hex, "6c6f6f70", LOOP_CAP_MS);	/* "loop" */
}

static uint16_t tcp_kv(uint8_t opc, const char *key, uint8_t *data, uint32_t len, uint32_t *got)
{
	uint8_t head[NKV_KEY_HEAD_MAX];
	struct nkv_nvmf_cmd c;

	if (nkv_nvmf_kv_prep(&c, nkv_nvmf_q_icd_max(AS.io), opc, 1, (const uint8_t *)key,
			     (uint32_t)strlen(key), head, data, len, 0, 0) ||
	    nkv_nvmf_q_exec(AS.io, &c))
		return 0xffff;
	if (got)
		*got = c.got;
	return nkv_nvmf_status(&c) & 0x7ff;
}

static uint16_t tcp_exec(uint32_t op, const char *in, uint8_t *out, uint32_t ocap, uint32_t *got)
{
	uint8_t buf[NKV_KEY_HEAD_MAX + 64];
	uint32_t hl = nkv_key_head_size(5), ilen = (uint32_t)strlen(in);
	struct nkv_nvmf_cmd c;

	memcpy(buf + hl, in, ilen);
	if (nkv_nvmf_exec_prep(&c, nkv_nvmf_q_icd_max(AS.io), 1, (const uint8_t *)"block", 5, op,
			       buf, ilen, out, ocap) ||
	    nkv_nvmf_q_exec(AS.io, &c))
		return 0xffff;
	*got = c.got;
	return nkv_nvmf_status(&c) & 0x7ff;
}

/* Rank r's heads of every layer, from the whole block. */
static int slice_ok(const uint8_t *whole, const uint8_t *out, uint32_t r)
{
	uint32_t d = SIZE / (LAYERS * HEADS), per = HEADS / TP, l;

	for (l = 0; l < LAYERS; l++)
		if (memcmp(out + (size_t)l * per * d, whole + ((size_t)l * HEADS + r * per) * d,
			   (size_t)per * d))
			return 0;
	return 1;
}

static void input(uint32_t r, char *in, size_t n)
{
	snprintf(in, n, "%u %u %u %u %u", LAYERS, HEADS, SIZE / (LAYERS * HEADS), TP, r);
}

static void put_line(const char *what, const char *path, double s, uint64_t bytes, int ok)
{
	printf("{\"what\": \"%s\", \"path\": \"%s\", \"size\": %u, \"seconds\": %.6f, "
	       "\"bytes_to_client\": %llu, \"ok\": %s}\n", what, path, SIZE, s,
	       (unsigned long long)bytes, ok ? "true" : "false");
	fflush(stdout);
}

static void over_tcp(uint8_t *whole, uint8_t *out, unsigned rounds)
{
	double tr[64], te[64];
	uint32_t got = 0, gx = 0;
	unsigned i;
	int ok = 1;
	char in[64];

	for (i = 0; i < rounds; i++) {
		double t0 = now_s();

		ok &= tcp_kv(NKV_KV_RETRIEVE, "block", whole, SIZE, &got) == 0 && got == SIZE;
		tr[i] = now_s() - t0;
		input(i % TP, in, sizeof(in));
		t0 = now_s();
		ok &= tcp_exec(1, in, out, SIZE / TP, &gx) == 0 && gx == SIZE / TP;
		te[i] = now_s() - t0;
		ok &= slice_ok(whole, out, i % TP);
	}
	put_line("retrieve", "tcp", median(tr, rounds), got, ok);
	put_line("exec_slice", "tcp", median(te, rounds), gx, ok);
}

static void over_vfio(const char *sock, uint8_t *whole, uint8_t *out, unsigned rounds)
{
	char uri[256], in[64];
	double tr[64], te[64];
	struct nkv_qpair *q = NULL;
	struct nkv_ctrl *c = NULL;
	struct nkv_result r;
	uint32_t olen = 0;
	unsigned i;
	int ok;

	snprintf(uri, sizeof(uri), "vfio-user:%s", sock);
	ok = !nkv_ctrl_connect(uri, NULL, &c) && !nkv_qpair_create(c, NULL, &q);
	for (i = 0; ok && i < rounds; i++) {
		double t0 = now_s();

		ok &= !nkv_retrieve(q, "block", 5, whole, SIZE, &r) && !r.status;
		tr[i] = now_s() - t0;
		input(i % TP, in, sizeof(in));
		t0 = now_s();
		ok &= !nkv_exec(q, "block", 5, 1, in, (uint32_t)strlen(in), out, SIZE / TP, &olen);
		te[i] = now_s() - t0;
		ok &= olen == SIZE / TP && slice_ok(whole, out, i % TP);
	}
	if (ok) {
		put_line("retrieve", "vfio-user", median(tr, rounds), SIZE, ok);
		put_line("exec_slice", "vfio-user", median(te, rounds), olen, ok);
	} else {
		put_line("exec_slice", "vfio-user", 0, 0, 0);
	}
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
}

struct loop_arg {
	const char *uri;
	double t_start, t_end;
	int rc;
	volatile int done;
};

static void *loop_thread(void *p)
{
	struct loop_arg *a = p;
	struct nkv_qpair *q = NULL;
	struct nkv_ctrl *c = NULL;
	uint32_t olen;
	char out[8];

	a->rc = -1;
	if (!nkv_ctrl_connect(a->uri, NULL, &c) && !nkv_qpair_create(c, NULL, &q)) {
		a->t_start = now_s();
		a->rc = nkv_exec(q, "block", 5, 2, NULL, 0, out, sizeof(out), &olen);
		a->t_end = now_s();
	}
	a->done = 1;
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	return NULL;
}

/* 4 KiB Retrieves over NVMe/TCP for s seconds (or until *stop): p50, p99 us. */
static void small_lat(double s, volatile int *stop, double *p50, double *p99, unsigned *n)
{
	static double lat[200000];
	static uint8_t v[4096];
	double end = now_s() + s;
	unsigned k = 0;

	while (k < 200000 && now_s() < end && !(stop && *stop)) {
		double t0 = now_s();

		tcp_kv(NKV_KV_RETRIEVE, "small", v, sizeof(v), NULL);
		lat[k++] = (now_s() - t0) * 1e6;
	}
	qsort(lat, k, sizeof(lat[0]), cmp_d);
	*p50 = k ? lat[k / 2] : 0;
	*p99 = k ? lat[k * 99 / 100] : 0;
	*n = k;
}

static void loop_beside(const char *sock)
{
	static uint8_t v[4096];
	struct loop_arg a = { 0 };
	char uri[256];
	double b50, b99, d50, d99;
	unsigned bn, dn;
	pthread_t t;

	snprintf(uri, sizeof(uri), "vfio-user:%s", sock);
	a.uri = uri;
	tcp_kv(NKV_KV_STORE, "small", v, sizeof(v), NULL);
	small_lat(0.3, NULL, &b50, &b99, &bn);
	pthread_create(&t, NULL, loop_thread, &a);
	small_lat(5.0, &a.done, &d50, &d99, &dn);
	pthread_join(t, NULL);
	printf("{\"what\": \"loop\", \"status\": \"%#x\", \"wall_cap_ms\": %u, \"ended_after_ms\": "
	       "%.1f, \"within_2x\": %s, \"other_p50_us_before\": %.1f, \"other_p99_us_before\": "
	       "%.1f, \"other_p50_us_during\": %.1f, \"other_p99_us_during\": %.1f, "
	       "\"other_ops_before\": %u, \"other_ops_during\": %u}\n", a.rc, LOOP_CAP_MS,
	       (a.t_end - a.t_start) * 1e3,
	       (a.t_end - a.t_start) * 1e3 < 2.0 * LOOP_CAP_MS ? "true" : "false", b50, b99, d50,
	       d99, bn, dn);
}

int main(int argc, char **argv)
{
	unsigned mib = argc > 1 ? (unsigned)atoi(argv[1]) : 32, rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 5;
	const char *args[48] = { "--capacity", "1G", "--max-value", "64M", "--socket" };
	char sock[64], r1[256], r2[256];
	struct nkv_nvmf_opts o = { .size = sizeof(o), .timeout_ms = 30000 };
	struct nkv_nvmf_addr a = { 0 };
	struct tgt_proc P = { 0 };
	size_t slen = 0;
	char *slice = read_file("examples/exec/slice.lua", &slen);
	uint8_t *whole, *out;
	int i, n = 5, mem = 1;
	uint32_t k;

	if (!slen || !mib || mib > 64 || !rounds || rounds > 64)
		return fprintf(stderr, "usage (from the source tree): exec_bench [SIZE_MIB 1..64 "
			       "[ROUNDS 1..64 [BACKEND_ARGS...]]]\n"), 2;
	SIZE = mib << 20;
	snprintf(sock, sizeof(sock), "/tmp/nkv-exec-bench-%d.sock", (int)getpid());
	rows(slice, slen, r1, r2, sizeof(r1));
	args[n++] = sock;
	args[n++] = "--exec-allow";
	args[n++] = r1;
	args[n++] = "--exec-allow";
	args[n++] = r2;
	for (i = 3; i < argc && n < 46; i++, mem = 0)
		args[n++] = argv[i];
	if (mem) {
		args[n++] = "--backend";
		args[n++] = "mem";
	}
	if (tgt_proc_start(&P, 0, args))
		return fprintf(stderr, "exec_bench: nkv-target did not start (log %s)\n", P.log), 3;
	a.port = P.port;
	snprintf(a.host, sizeof(a.host), "127.0.0.1");
	whole = malloc(SIZE);
	out = malloc(SIZE / TP);
	for (k = 0; k < SIZE; k++)
		whole[k] = (uint8_t)(k * 2654435761u >> 11);
	if (nkv_nvmf_assoc_open(&AS, &a, &o) ||
	    tcp_kv(NKV_KV_STORE, "slice", (uint8_t *)slice, (uint32_t)slen, NULL) ||
	    tcp_kv(NKV_KV_STORE, "loop", (uint8_t *)loop_mod, sizeof(loop_mod) - 1, NULL) ||
	    tcp_kv(NKV_KV_STORE, "block", whole, SIZE, NULL)) {
		tgt_proc_free(&P);
		return fprintf(stderr, "exec_bench: setup over NVMe/TCP failed\n"), 3;
	}
	over_tcp(whole, out, rounds);
	over_vfio(sock, whole, out, rounds);
	loop_beside(sock);
	nkv_nvmf_assoc_close(&AS);
	tgt_proc_free(&P);
	free(whole);
	free(out);
	free(slice);
	return 0;
}
