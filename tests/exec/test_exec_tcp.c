/* SPDX-License-Identifier: MIT */
/*
 * Exec (83h) over NVMe/TCP against a real nkv-target process (mem
 * backend, the module allowlisted by --exec-allow): the input part in
 * the capsule, the output by C2HData (docs/wire.md); a TP rank's slice
 * byte-checked against a Retrieve, truncation (DW0 the true length),
 * an output cap of 0, not allowlisted, and an Exec whose input cannot
 * ride in the capsule refused by the initiator; libnkv's tcp: front
 * forwarding Exec to the remote.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "nkv_host.h"
#include "nvmf/tcp_host.h"
#include "target/exec/exec.h"
#include "tgt_proc.h"

static struct tgt_proc P;
static struct nkv_nvmf_assoc AS;
static char LOG[8192];

static const char slice_mod[] =
	"return function(value, input)\n"
	"  local off, len = input:match('^(%d+) (%d+)$')\n"
	"  return value:sub(tonumber(off) + 1, tonumber(off) + tonumber(len))\n"
	"end\n";

static void t_log(void *ctx, const char *line)
{
	size_t n = strlen(LOG);

	(void)ctx;
	snprintf(LOG + n, sizeof(LOG) - n, "%s\n", line);
}

static void start(void)
{
	uint8_t d[NKV_EXEC_DIGEST_LEN];
	char hex[2 * NKV_EXEC_DIGEST_LEN + 1], row[256];
	const char *args[] = { "--backend", "mem", "--capacity", "256M", "--max-value", "8M",
			       "--exec-allow", row, NULL };
	struct nkv_nvmf_opts o = { .size = sizeof(o), .timeout_ms = 10000, .log = t_log };
	struct nkv_nvmf_addr a = { 0 };

	nkv_exec_sha256(slice_mod, strlen(slice_mod), d);
	nkv_exec_hex(d, sizeof(d), hex);
	snprintf(row, sizeof(row), "1:7:%s:%s", hex, "6d6f642e736c696365");	/* "mod.slice" */
	cr_assert_eq(tgt_proc_start(&P, 0, args), 0, "nkv-target started and listens");
	a.port = P.port;
	snprintf(a.host, sizeof(a.host), "127.0.0.1");
	cr_assert_eq(nkv_nvmf_assoc_open(&AS, &a, &o), 0, "%s", LOG);
}

static void stop(void)
{
	nkv_nvmf_assoc_close(&AS);
	tgt_proc_free(&P);
}

static uint16_t kv(uint8_t opc, const char *key, uint8_t *data, uint32_t len, uint32_t *dw0)
{
	uint8_t head[NKV_KEY_HEAD_MAX];
	struct nkv_nvmf_cmd c;

	cr_assert_eq(nkv_nvmf_kv_prep(&c, nkv_nvmf_q_icd_max(AS.io), opc, 1, (const uint8_t *)key,
				      (uint32_t)strlen(key), head, data, len, 0, 0), 0);
	cr_assert_eq(nkv_nvmf_q_exec(AS.io, &c), 0, "%s", LOG);
	if (dw0)
		*dw0 = c.cqe.dw0;
	return nkv_nvmf_status(&c) & 0x7ff;
}

static uint16_t ex(uint32_t op_id, const char *key, const char *in, uint8_t *out, uint32_t ocap,
		   uint32_t *dw0, uint32_t *got)
{
	uint32_t klen = (uint32_t)strlen(key), ilen = (uint32_t)strlen(in);
	uint8_t buf[NKV_KEY_HEAD_MAX + 64];
	struct nkv_nvmf_cmd c;

	memcpy(buf + nkv_key_head_size(klen), in, ilen);
	cr_assert_eq(nkv_nvmf_exec_prep(&c, nkv_nvmf_q_icd_max(AS.io), 1, (const uint8_t *)key,
					klen, op_id, buf, ilen, out, ocap), 0);
	cr_assert_eq(nkv_nvmf_q_exec(AS.io, &c), 0, "%s", LOG);
	*dw0 = c.cqe.dw0;
	*got = c.got;
	return nkv_nvmf_status(&c) & 0x7ff;
}

/* The module under "mod.slice", and len patterned bytes (v, after
 * NKV_KEY_HEAD_MAX of head room) under "block0". */
static void stored(uint8_t *v, uint32_t len)
{
	uint8_t mod[NKV_KEY_HEAD_MAX + sizeof(slice_mod)];
	uint32_t i;

	for (i = 0; i < len; i++)
		v[NKV_KEY_HEAD_MAX + i] = (uint8_t)(i * 131 + (i >> 12));
	memcpy(mod + NKV_KEY_HEAD_MAX, slice_mod, strlen(slice_mod));
	cr_assert_eq(kv(NKV_KV_STORE, "mod.slice", mod + NKV_KEY_HEAD_MAX,
			(uint32_t)strlen(slice_mod), NULL), 0);
	cr_assert_eq(kv(NKV_KV_STORE, "block0", v + NKV_KEY_HEAD_MAX, len, NULL), 0);
}

TestSuite(exec_tcp, .init = start, .fini = stop, .timeout = 60);

Test(exec_tcp, slice_matches_retrieve)
{
	uint32_t len = 1u << 20, part = len / 8, dw0 = 0, got = 0, rank;
	uint8_t *v = malloc(NKV_KEY_HEAD_MAX + len), *whole = malloc(len), *out = malloc(part);
	char in[64];

	stored(v, len);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, "block0", whole, len, &dw0), 0);
	for (rank = 0; rank < 8; rank++) {
		snprintf(in, sizeof(in), "%u %u", rank * part, part);
		memset(out, 0, part);
		cr_assert_eq(ex(7, "block0", in, out, part, &dw0, &got), 0, "rank %u: %s", rank, LOG);
		cr_assert_eq(dw0, part);
		cr_assert_eq(got, part, "C2HData brought the output");
		cr_assert_eq(memcmp(out, whole + rank * part, part), 0, "rank %u's bytes", rank);
	}
	/* Truncated: DW0 the true length, C2HData the cap. */
	cr_assert_eq(ex(7, "block0", "0 1000", out, 10, &dw0, &got), 0);
	cr_assert_eq(dw0, 1000);
	cr_assert_eq(got, 10);
	cr_assert_eq(memcmp(out, whole, 10), 0);
	/* No room at all: the length alone. */
	cr_assert_eq(ex(7, "block0", "0 1000", NULL, 0, &dw0, &got), 0);
	cr_assert_eq(dw0, 1000);
	cr_assert_eq(got, 0);
	free(v);
	free(whole);
	free(out);
}

Test(exec_tcp, not_allowlisted_and_no_value)
{
	uint32_t dw0, got;
	uint8_t out[8];

	cr_assert_eq(ex(8, "block0", "0 1", out, sizeof(out), &dw0, &got),
		     NKV_STATUS(NKV_SCT_CMD_SPECIFIC, NKV_SC_EXEC_NOT_ALLOWED));
	cr_assert_eq(ex(7, "absent", "0 1", out, sizeof(out), &dw0, &got),
		     NKV_STATUS(NKV_SCT_CMD_SPECIFIC, NKV_SC_EXEC_DIGEST), "no module stored yet");
}

Test(exec_tcp, input_past_the_capsule_refused)
{
	static uint8_t buf[NKV_KEY_HEAD_MAX + (64u << 10)], out[8];
	struct nkv_nvmf_cmd c;

	cr_assert_eq(nkv_nvmf_exec_prep(&c, nkv_nvmf_q_icd_max(AS.io), 1, (const uint8_t *)"k", 1,
					7, buf, 64u << 10, out, sizeof(out)), -EMSGSIZE);
	cr_assert_eq(nkv_nvmf_exec_prep(&c, 0, 1, (const uint8_t *)"k", 0, 7, buf, 0, out, 8),
		     -EINVAL);
}

/* libnkv's tcp: URIs go through a local front (libnkv-tcp.so) whose
 * allowlist would be its own, empty: it offers no Exec, and nkv_exec()
 * says so before sending anything. */
/*
 * libnkv's tcp: front (a local controller whose nvmf backend forwards)
 * has no allowlist of its own: it forwards Exec to the remote, whose
 * allowlist decides and which runs the module next to the value, so only
 * the output crosses the network. Its status comes back as it is.
 */
Test(exec_tcp, libnkv_front_forwards_to_the_remote)
{
	struct nkv_ns_ext e = { .size = sizeof(e) };
	uint32_t len = 64u << 10, olen = 0;
	uint8_t *v = malloc(NKV_KEY_HEAD_MAX + len), out[4096];
	struct nkv_qpair *q;
	struct nkv_ctrl *c;
	char uri[64];

	stored(v, len);
	snprintf(uri, sizeof(uri), "tcp:127.0.0.1:%u", P.port);
	cr_assert_eq(nkv_ctrl_connect(uri, NULL, &c), 0);
	cr_assert_eq(nkv_ctrl_ns_ext(c, 1, &e), 0);
	cr_assert(e.advertised);
	cr_assert_eq(e.exec, 1, "the front says Exec where the remote does");
	cr_assert_eq(nkv_qpair_create(c, NULL, &q), 0);
	cr_assert_eq(nkv_exec(q, "block0", 6, 7, "1000 3000", 9, out, sizeof(out), &olen), 0);
	cr_assert_eq(olen, 3000);
	cr_assert_eq(memcmp(out, v + NKV_KEY_HEAD_MAX + 1000, 3000), 0, "the remote's slice");
	/* Truncated: the true length, the cap's bytes. */
	cr_assert_eq(nkv_exec(q, "block0", 6, 7, "0 5000", 6, out, 100, &olen), 0);
	cr_assert_eq(olen, 5000);
	cr_assert_eq(memcmp(out, v + NKV_KEY_HEAD_MAX, 100), 0);
	/* The remote's refusals, as they are. */
	cr_assert_eq(nkv_exec(q, "block0", 6, 8, "0 1", 3, out, sizeof(out), &olen),
		     NKV_STATUS(NKV_SCT_CMD_SPECIFIC, NKV_SC_EXEC_NOT_ALLOWED));
	cr_assert_eq(nkv_exec(q, "nokey", 5, 7, "0 1", 3, out, sizeof(out), &olen),
		     NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS));
	/* An input past what the remote takes in a capsule (16 KiB) cannot
	 * be forwarded: the front says Invalid Field, sends nothing. */
	{
		char *big = malloc(20000);

		memset(big, '1', 20000);
		cr_assert_eq(nkv_exec(q, "block0", 6, 7, big, 20000, out, sizeof(out), &olen),
			     NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_INVALID_FIELD));
		free(big);
	}
	cr_assert_eq(nkv_exec(q, "block0", 6, 7, "2 3", 3, out, sizeof(out), &olen), 0,
		     "the association is whole after the refusal");
	cr_assert_eq(olen, 3);
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	free(v);
}
