/* SPDX-License-Identifier: MIT */
/*
 * The nvmf forwarding backend over a remote nkv-target on the rados
 * backend: a throwaway Ceph cluster (tests/lib/ceph_cluster.h; skipped
 * with the reason when none can start), the remote on it, a front
 * nkv-target --backend nvmf, nkv's initiator as the client: Store,
 * Retrieve (every byte), Exist, Delete of 1 B .. 1 MiB, keys inline and
 * in head form, then the object seen in the pool with the rados tool.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "ceph_cluster.h"
#include "nvmf/tcp_host.h"
#include "tgt_proc.h"

#define SUBNQN "nqn.2026-01.io.nkv:target"

static struct tgt_proc R, F;
static struct nkv_nvmf_assoc AS;

static void t_log(void *ctx, const char *line)
{
	(void)ctx;
	(void)line;
}

static void init(void)
{
	const char *skip = getenv("NKV_TEST_CEPH_SKIP"), *cf = getenv("NKV_TEST_CEPH_CONF");
	const char *rargs[] = { "--backend", "rados", "--conf", cf, "--pool", "kvpool",
				"--ns-map", "1=nvmffront", "--max-value", "8M", NULL };
	char uri[96];
	const char *fargs[] = { "--backend", "nvmf", "--remote", uri, NULL };
	struct nkv_nvmf_opts o = { .size = sizeof(o), .timeout_ms = 10000, .log = t_log };
	struct nkv_nvmf_addr a = { .port = 0 };

	if (skip)
		cr_skip_test("no Ceph cluster: %s", skip);
	cr_assert_not_null(cf);
	cr_assert_eq(tgt_proc_start(&R, 0, rargs), 0, "the rados remote started");
	snprintf(uri, sizeof(uri), "tcp:127.0.0.1:%u/%s", R.port, SUBNQN);
	cr_assert_eq(tgt_proc_start(&F, 0, fargs), 0, "the front started");
	a.port = F.port;
	snprintf(a.host, sizeof(a.host), "127.0.0.1");
	snprintf(a.nqn, sizeof(a.nqn), "%s", SUBNQN);
	cr_assert_eq(nkv_nvmf_assoc_open(&AS, &a, &o), 0);
}

static void fini(void)
{
	nkv_nvmf_assoc_close(&AS);
	tgt_proc_free(&F);
	tgt_proc_free(&R);
}

static uint16_t kv(uint8_t opc, const uint8_t *key, uint32_t klen, uint8_t *data, uint32_t len,
		   uint32_t *dw0)
{
	uint8_t head[NKV_KEY_HEAD_MAX];
	struct nkv_nvmf_cmd c;

	cr_assert_eq(nkv_nvmf_kv_prep(&c, nkv_nvmf_q_icd_max(AS.io), opc, 1, key, klen, head,
				      data, len, 0, 0), 0);
	cr_assert_eq(nkv_nvmf_q_exec(AS.io, &c), 0);
	if (dw0)
		*dw0 = c.cqe.dw0;
	return nkv_nvmf_status(&c) & 0x7ffu;
}

Test(be_nvmf_rados, every_op, .init = init, .fini = fini, .timeout = 180)
{
	static const uint32_t len[] = { 1, 4096, 65536, 1u << 20 };
	static uint8_t v[NKV_KEY_HEAD_MAX + (1u << 20)], r[1u << 20];
	uint8_t key[40];
	char out[512];
	uint32_t i, k, dw0;

	memset(key, 'r', sizeof(key));
	for (k = 8; k <= 40; k += 32)
		for (i = 0; i < sizeof(len) / sizeof(len[0]); i++) {
			memset(v + NKV_KEY_HEAD_MAX, (int)(i + k), len[i]);
			cr_assert_eq(kv(NKV_KV_STORE, key, k, v + NKV_KEY_HEAD_MAX, len[i], NULL), 0);
			cr_assert_eq(kv(NKV_KV_RETRIEVE, key, k, r, len[i], &dw0), 0);
			cr_assert_eq(dw0, len[i]);
			cr_assert_eq(memcmp(r, v + NKV_KEY_HEAD_MAX, len[i]), 0);
			cr_assert_eq(kv(NKV_KV_EXIST, key, k, NULL, 0, NULL), 0);
		}
	/* The object is in the pool, named by the key's hex ("rr..." x 8). */
	cr_assert_eq(nkv_test_sh(30, out, sizeof(out), "rados -c %s -p kvpool -N nvmffront stat "
				 "7272727272727272", getenv("NKV_TEST_CEPH_CONF")), 0, "%s", out);
	cr_assert_eq(kv(NKV_KV_DELETE, key, 8, NULL, 0, NULL), 0);
	cr_assert_eq(kv(NKV_KV_EXIST, key, 8, NULL, 0, NULL),
		     NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS));
}

int main(int argc, char *argv[])
{
	return nkv_test_cluster_main(argc, argv, "test_be_nvmf_rados");
}
