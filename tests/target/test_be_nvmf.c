/* SPDX-License-Identifier: MIT */
/*
 * The nvmf forwarding backend (src/target/backends/nvmf.c) as a user
 * runs it: a remote nkv-target (mem, rocksdb), a front nkv-target
 * --backend nvmf --remote tcp:127.0.0.1:PORT, and nkv's initiator as the
 * client of the front. Every op and size through both, keys 1..255,
 * store options and statuses passed through, the remote's limits
 * advertised, a remote killed (88h, event=remote_lost) and restarted
 * (event=remote_back, commands work again), a remote stopped (88h in
 * bounded time, no hang), a slow remote (stalls below the timeout: every
 * command answered by the remote, late, nothing said lost).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "nvmf/tcp_host.h"
#include "tgt_proc.h"

#define SUBNQN "nqn.2026-01.io.nkv:target"
#define ST_88H NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_UNRECOVERED_ERROR)

static struct tgt_proc R, F;
static char DBDIR[64];
static struct nkv_nvmf_assoc AS;

static void t_log(void *ctx, const char *line)
{
	(void)ctx;
	(void)line;
}

static void remote_mem(uint16_t port)
{
	static const char *const args[] = { "--backend", "mem", "--capacity", "1G",
					    "--max-value", "8M", NULL };

	cr_assert_eq(tgt_proc_start(&R, port, args), 0, "the remote started");
}

static const char *DIGESTS = "none";	/* --remote-digests of the next front */

static void front(void)
{
	char uri[64];
	const char *args[] = { "--backend", "nvmf", "--remote", uri, "--remote-timeout-ms", "1000",
			       "--remote-digests", DIGESTS, NULL };
	struct nkv_nvmf_opts o = { .size = sizeof(o), .timeout_ms = 10000, .log = t_log };
	struct nkv_nvmf_addr a = { .port = 0 };

	snprintf(uri, sizeof(uri), "tcp:127.0.0.1:%u/%s", R.port, SUBNQN);
	cr_assert_eq(tgt_proc_start(&F, 0, args), 0, "the front started");
	a.port = F.port;
	snprintf(a.host, sizeof(a.host), "127.0.0.1");
	snprintf(a.nqn, sizeof(a.nqn), "%s", SUBNQN);
	cr_assert_eq(nkv_nvmf_assoc_open(&AS, &a, &o), 0, "a host reaches the front");
}

static void init_mem(void)
{
	remote_mem(0);
	front();
}

static void init_rocksdb(void)
{
	const char *args[] = { "--backend", "rocksdb", "--db", DBDIR, "--capacity", "1G",
			       "--max-value", "8M", NULL };

	snprintf(DBDIR, sizeof(DBDIR), "/tmp/nkv-be-nvmf-XXXXXX");
	cr_assert_not_null(mkdtemp(DBDIR));
	cr_assert_eq(tgt_proc_start(&R, 0, args), 0, "the rocksdb remote started");
	front();
}

static void fini(void)
{
	char cmd[128];

	nkv_nvmf_assoc_close(&AS);
	tgt_proc_free(&F);
	tgt_proc_free(&R);
	if (DBDIR[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", DBDIR);
		cr_assert_eq(system(cmd), 0);
		DBDIR[0] = 0;
	}
}

static uint16_t kv(uint8_t opc, const uint8_t *key, uint32_t klen, uint8_t *data, uint32_t len,
		   uint32_t opts, uint32_t *dw0, uint32_t *got)
{
	uint8_t head[NKV_KEY_HEAD_MAX];
	struct nkv_nvmf_cmd c;

	cr_assert_eq(nkv_nvmf_kv_prep(&c, nkv_nvmf_q_icd_max(AS.io), opc, 1, key, klen, head,
				      data, len, opts, 0), 0);
	cr_assert_eq(nkv_nvmf_q_exec(AS.io, &c), 0, "the front answered opc %#x", opc);
	if (dw0)
		*dw0 = c.cqe.dw0;
	if (got)
		*got = c.got;
	return nkv_nvmf_status(&c) & 0x7ffu;
}

static void roundtrip(const uint8_t *key, uint32_t klen, uint32_t len)
{
	uint8_t *v = malloc(len + NKV_KEY_HEAD_MAX), *r = malloc(len);
	uint32_t i, dw0 = 0, got = 0;

	for (i = 0; i < len; i++)
		v[NKV_KEY_HEAD_MAX + i] = (uint8_t)(i * 13 + klen);
	cr_assert_eq(kv(NKV_KV_STORE, key, klen, v + NKV_KEY_HEAD_MAX, len, 0, NULL, NULL), 0,
		     "store klen %u len %u", klen, len);
	cr_assert_eq(kv(NKV_KV_STORE, key, klen, v + NKV_KEY_HEAD_MAX, len,
			NKV_STORE_MUST_NOT_EXIST, NULL, NULL),
		     NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_EXISTS), "the option went through");
	memset(r, 0, len);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, key, klen, r, len, 0, &dw0, &got), 0);
	cr_assert_eq(dw0, len);
	cr_assert_eq(got, len);
	cr_assert_eq(memcmp(r, v + NKV_KEY_HEAD_MAX, len), 0, "klen %u len %u", klen, len);
	cr_assert_eq(kv(NKV_KV_EXIST, key, klen, NULL, 0, 0, NULL, NULL), 0);
	cr_assert_eq(kv(NKV_KV_DELETE, key, klen, NULL, 0, 0, NULL, NULL), 0);
	cr_assert_eq(kv(NKV_KV_EXIST, key, klen, NULL, 0, 0, NULL, NULL),
		     NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS));
	free(v);
	free(r);
}

static void every_op(void)
{
	static const uint32_t len[] = { 1, 4096, 16321, 1u << 20, 6u << 20 };
	uint8_t key[255], list[4096];
	uint32_t i, dw0 = 0, got = 0;

	for (i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i + 1);
	for (i = 0; i < sizeof(len) / sizeof(len[0]); i++)
		roundtrip(key, 8, len[i]);
	for (i = 1; i <= 255; i += 22)
		roundtrip(key, i, 100);
	roundtrip(key, 255, 3u << 20);
	/* A size query (no buffer) and a short buffer: DW0 the full size. */
	cr_assert_eq(kv(NKV_KV_STORE, (const uint8_t *)"sz", 2, list + 512, 1000, 0, 0, 0), 0);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, (const uint8_t *)"sz", 2, list, 0, 0, &dw0, &got), 0);
	cr_assert_eq(dw0, 1000);
	cr_assert_eq(got, 0);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, (const uint8_t *)"sz", 2, list, 100, 0, &dw0, &got), 0);
	cr_assert_eq(dw0, 1000);
	cr_assert_eq(got, 100);
	cr_assert_eq(memcmp(list, list + 512, 100), 0);
	cr_assert_eq(kv(NKV_KV_DELETE, (const uint8_t *)"sz", 2, NULL, 0, 0, 0, 0), 0);
	/* List: three keys, one in head form, listed from the start. */
	cr_assert_eq(kv(NKV_KV_STORE, (const uint8_t *)"a1", 2, list + 512, 1, 0, 0, 0), 0);
	cr_assert_eq(kv(NKV_KV_STORE, (const uint8_t *)"a2", 2, list + 512, 1, 0, 0, 0), 0);
	cr_assert_eq(kv(NKV_KV_STORE, key, 40, list + 512, 1, 0, 0, 0), 0);
	cr_assert_eq(kv(NKV_KV_LIST, NULL, 0, list, sizeof(list), 0, &dw0, &got), 0);
	cr_assert_eq(dw0, 3, "three keys listed");
	cr_assert_eq(list[0], 3);
}

/* The front's KV Identify Namespace says the remote's limits. */
static void limits(uint64_t cap, uint32_t mvl)
{
	struct nkv_id_ns_kv id;

	cr_assert_eq(nkv_nvmf_identify(AS.admin, NKV_CNS_IOCS_NS, 1, NKV_CSI_KV, &id, NULL), 0);
	cr_assert_eq(id.nsze, cap);
	cr_assert_eq(id.kvf[0].mvl, mvl);
}

Test(be_nvmf, over_mem, .init = init_mem, .fini = fini, .timeout = 120)
{
	limits(1ull << 30, 8u << 20);
	every_op();
}

static void init_mem_digests(void)
{
	DIGESTS = "both";
	init_mem();
}

Test(be_nvmf, over_mem_with_digests, .init = init_mem_digests, .fini = fini, .timeout = 120)
{
	cr_assert(tgt_log_wait(F.log, "remote_digests=both", 1, 1000), "the front says so");
	every_op();
}

Test(be_nvmf, over_rocksdb, .init = init_rocksdb, .fini = fini, .timeout = 120)
{
	limits(1ull << 30, 8u << 20);
	every_op();
}

Test(be_nvmf, remote_killed_and_back, .init = init_mem, .fini = fini, .timeout = 60)
{
	uint8_t v[64] = { 7 }, r[64];
	uint16_t port = R.port;
	int i, st = -1;

	cr_assert_eq(kv(NKV_KV_STORE, (const uint8_t *)"k", 1, v, 64, 0, NULL, NULL), 0);
	tgt_proc_kill(&R);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, (const uint8_t *)"k", 1, r, 64, 0, NULL, NULL), ST_88H);
	cr_assert(tgt_log_wait(F.log, "event=remote_lost", 1, 5000), "the front said so");
	cr_assert_eq(kv(NKV_KV_EXIST, (const uint8_t *)"k", 1, NULL, 0, 0, NULL, NULL), ST_88H);
	remote_mem(port);
	cr_assert(tgt_log_wait(F.log, "event=remote_back", 1, 15000), "the front saw it back");
	/* A fresh mem remote: the key is gone, and the remote answers that. */
	for (i = 0; i < 50 && st != 0; i++)
		st = kv(NKV_KV_STORE, (const uint8_t *)"k", 1, v, 64, 0, NULL, NULL);
	cr_assert_eq(st, 0);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, (const uint8_t *)"k", 1, r, 64, 0, NULL, NULL), 0);
	cr_assert_eq(memcmp(r, v, 64), 0);
	cr_assert_eq(tgt_log_count(F.log, "event=remote_lost"), 1, "said once");
	cr_assert_eq(tgt_log_count(F.log, "event=remote_back"), 1, "said once");
}

Test(be_nvmf, remote_stopped, .init = init_mem, .fini = fini, .timeout = 60)
{
	uint8_t r[64];
	uint64_t t0;

	kill(R.pid, SIGSTOP);
	usleep(100 * 1000);
	t0 = nkv_nvmf_now_ms();
	cr_assert_eq(kv(NKV_KV_RETRIEVE, (const uint8_t *)"k", 1, r, 64, 0, NULL, NULL), ST_88H);
	cr_assert_lt(nkv_nvmf_now_ms() - t0, 3000u + 1000u, "bounded: the front's 3 x timeout");
	cr_assert(tgt_log_wait(F.log, "event=remote_lost", 1, 5000));
	kill(R.pid, SIGCONT);
	cr_assert(tgt_log_wait(F.log, "event=remote_back", 1, 15000));
}

/* A slow remote, not a lost one: stopped for 300 ms out of every 400 (a
 * stall below the front's 1 s --remote-timeout-ms) while a host Stores
 * and Retrieves through the front. Every command completes with the
 * remote's own status (no 88h), every value whole, some of them late,
 * and the front never says the remote was lost. */
static volatile int PULSING;

static void *pulse(void *arg)
{
	pid_t pid = *(pid_t *)arg;

	while (PULSING) {
		kill(pid, SIGSTOP);
		usleep(300 * 1000);
		kill(pid, SIGCONT);
		usleep(100 * 1000);
	}
	return NULL;
}

Test(be_nvmf, slow_remote, .init = init_mem, .fini = fini, .timeout = 120)
{
	uint8_t v[8192], r[8192], key[16];
	uint32_t dw0, got, klen, i, n = 24, late = 0;
	uint64_t t0, ms;
	pthread_t t;
	pid_t pid = R.pid;

	PULSING = 1;
	cr_assert_eq(pthread_create(&t, NULL, pulse, &pid), 0);
	for (i = 0; i < n; i++) {
		klen = (uint32_t)snprintf((char *)key, sizeof(key), "slow%u", i);
		memset(v, (int)(i + 1), sizeof(v));
		t0 = nkv_nvmf_now_ms();
		cr_assert_eq(kv(NKV_KV_STORE, key, klen, v, sizeof(v), 0, NULL, NULL), 0,
			     "store %u: the remote's own answer, however late", i);
		memset(r, 0, sizeof(r));
		cr_assert_eq(kv(NKV_KV_RETRIEVE, key, klen, r, sizeof(r), 0, &dw0, &got), 0);
		ms = nkv_nvmf_now_ms() - t0;
		late += ms >= 100;
		cr_assert_eq(dw0, sizeof(v));
		cr_assert_eq(memcmp(r, v, sizeof(v)), 0, "value %u whole", i);
	}
	PULSING = 0;
	pthread_join(t, NULL);
	kill(pid, SIGCONT);
	cr_expect_gt(late, 0, "some commands waited for the stalled remote");
	cr_expect_eq(tgt_log_count(F.log, "event=remote_lost"), 0, "slow is not lost");
}

/* Front namespace N is the remote's namespace N: a key stored through
 * the front's namespace 2 is in the remote's 2, not its 1. */
Test(be_nvmf, same_nsid_on_the_remote, .fini = fini, .timeout = 60)
{
	static const char *const rargs[] = { "--backend", "mem", "--ns-map", "1=a,2=b", NULL };
	char uri[96];
	const char *fargs[] = { "--backend", "nvmf", "--remote", uri, "--ns-map", "1=x,2=y", NULL };
	struct nkv_nvmf_opts o = { .size = sizeof(o), .timeout_ms = 10000, .log = t_log };
	struct nkv_nvmf_addr a = { .port = 0 };
	struct nkv_nvmf_assoc direct;
	uint8_t v[32], r[32], head[NKV_KEY_HEAD_MAX];
	struct nkv_nvmf_cmd c;

	cr_assert_eq(tgt_proc_start(&R, 0, rargs), 0);
	snprintf(uri, sizeof(uri), "tcp:127.0.0.1:%u", R.port);	/* through discovery */
	cr_assert_eq(tgt_proc_start(&F, 0, fargs), 0);
	snprintf(a.host, sizeof(a.host), "127.0.0.1");
	snprintf(a.nqn, sizeof(a.nqn), "%s", SUBNQN);
	a.port = F.port;
	cr_assert_eq(nkv_nvmf_assoc_open(&AS, &a, &o), 0);
	memset(v, 0x5a, sizeof(v));
	nkv_nvmf_kv_prep(&c, nkv_nvmf_q_icd_max(AS.io), NKV_KV_STORE, 2, (const uint8_t *)"n2", 2,
			 head, v, sizeof(v), 0, 0);
	cr_assert_eq(nkv_nvmf_q_exec(AS.io, &c), 0);
	cr_assert_eq(nkv_nvmf_status(&c), 0);
	a.port = R.port;
	cr_assert_eq(nkv_nvmf_assoc_open(&direct, &a, &o), 0, "the remote, directly");
	nkv_nvmf_kv_prep(&c, 0, NKV_KV_RETRIEVE, 2, (const uint8_t *)"n2", 2, head, r, sizeof(r),
			 0, 0);
	cr_assert_eq(nkv_nvmf_q_exec(direct.io, &c), 0);
	cr_assert_eq(nkv_nvmf_status(&c), 0);
	cr_assert_eq(memcmp(r, v, sizeof(v)), 0);
	nkv_nvmf_kv_prep(&c, 0, NKV_KV_EXIST, 1, (const uint8_t *)"n2", 2, head, r, 0, 0, 0);
	cr_assert_eq(nkv_nvmf_q_exec(direct.io, &c), 0);
	cr_assert_eq(nkv_nvmf_status(&c) & 0x7ffu,
		     NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS));
	nkv_nvmf_assoc_close(&direct);
}

Test(be_nvmf, bad_remote_refused)
{
	static const char *const args[] = { "--backend", "nvmf", "--remote", "tcp:127.0.0.1:1",
					    "--remote-timeout-ms", "500", NULL };
	static const char *const noarg[] = { "--backend", "nvmf", NULL };
	struct tgt_proc p = { 0 };

	cr_assert_eq(tgt_proc_start(&p, 0, args), -ECHILD, "nkv-target exits");
	cr_assert_eq(tgt_log_count(p.log, "cannot reach tcp:127.0.0.1:1"), 1);
	cr_assert_eq(tgt_proc_start(&p, 0, noarg), -ECHILD);
	cr_assert_eq(tgt_log_count(p.log, "--remote tcp:HOST:PORT[/NQN] is needed"), 1);
	{
		static const char *const bad[] = { "--backend", "nvmf", "--remote", "tcp:h:1",
						   "--remote-digests", "crc", NULL };

		cr_assert_eq(tgt_proc_start(&p, 0, bad), -ECHILD);
		cr_assert_eq(tgt_log_count(p.log, "--remote-digests crc: want none, header"), 1);
	}
	tgt_proc_free(&p);
}
