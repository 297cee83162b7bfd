/* SPDX-License-Identifier: MIT */
/*
 * tcp: URIs in the library (src/host/tcp_local.c, libnkv-tcp.so): a
 * remote nkv-target process (mem), nkv_ctrl_connect("tcp:...") with and
 * without the NQN, the synchronous API for every op of 1 B .. 4 MiB and
 * keys 1..255, nkv_qpair_get_info saying what crosses the network, a
 * remote killed (88h from the local controller, never a hang), a bad
 * URI refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "nkv_host.h"
#include "nkv_wire.h"
#include "tgt_proc.h"
#include "tool_run.h"

#define SUBNQN "nqn.2026-01.io.nkv:target"

static struct tgt_proc R;

static void start(void)
{
	static const char *const args[] = { "--backend", "mem", "--capacity", "256M",
					    "--max-value", "8M", NULL };

	cr_assert_eq(tgt_proc_start(&R, 0, args), 0, "the remote started");
}

static void stop(void)
{
	tgt_proc_free(&R);
}

static struct nkv_ctrl *connect_tcp(int with_nqn)
{
	struct nkv_ctrl *c = NULL;
	char uri[128];
	int rc;

	snprintf(uri, sizeof(uri), "tcp:127.0.0.1:%u%s%s", R.port, with_nqn ? "/" : "",
		 with_nqn ? SUBNQN : "");
	rc = nkv_ctrl_connect(uri, NULL, &c);
	cr_assert_eq(rc, 0, "connect %s: %d", uri, rc);
	return c;
}

static void roundtrip(struct nkv_qpair *q, const uint8_t *key, uint32_t klen, uint32_t len)
{
	uint8_t *v = malloc(len), *r = malloc(len);
	struct nkv_result res;
	uint32_t i;

	for (i = 0; i < len; i++)
		v[i] = (uint8_t)(i * 3 + klen);
	cr_assert_eq(nkv_store(q, key, klen, v, len, 0, &res), 0);
	cr_assert_eq(res.status, 0, "store klen %u len %u: %#x", klen, len, res.status);
	memset(r, 0, len);
	cr_assert_eq(nkv_retrieve(q, key, klen, r, len, &res), 0);
	cr_assert_eq(res.status, 0);
	cr_assert_eq(res.dw0, len);
	cr_assert_eq(memcmp(r, v, len), 0, "klen %u len %u", klen, len);
	cr_assert_eq(nkv_exist(q, key, klen, &res), 0);
	cr_assert_eq(res.status, 0);
	cr_assert_eq(nkv_delete(q, key, klen, &res), 0);
	cr_assert_eq(res.status, 0);
	cr_assert_eq(nkv_exist(q, key, klen, &res), 0);
	cr_assert_eq(res.status & 0xff, NKV_SC_KV_KEY_NOT_EXISTS);
	free(v);
	free(r);
}

static void sync_api(int with_nqn)
{
	static const uint32_t len[] = { 1, 4096, 65536, 1u << 20, 4u << 20 };
	struct nkv_qpair_opts qo = { .size = sizeof(qo), .slot_size = 4u << 20, .depth = 8 };
	struct nkv_qpair_info info = { .size = sizeof(info) };
	struct nkv_ctrl *c = connect_tcp(with_nqn);
	struct nkv_qpair *q;
	uint8_t key[255];
	char want[96];
	uint32_t i;

	for (i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i + 5);
	cr_assert_eq(nkv_qpair_create(c, &qo, &q), 0);
	cr_assert_eq(nkv_qpair_get_info(q, &info), 0);
	snprintf(want, sizeof(want), "tcp: 127.0.0.1:%u nqn %s, via a local controller", R.port,
		 SUBNQN);
	cr_assert_str_eq(info.remote, want);
	for (i = 0; i < sizeof(len) / sizeof(len[0]); i++)
		roundtrip(q, key, 8, len[i]);
	for (i = 1; i <= 255; i += 19)
		roundtrip(q, key, i, 200);
	roundtrip(q, key, 255, 1u << 20);
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
}

Test(host_tcp, sync_api_with_nqn, .init = start, .fini = stop, .timeout = 120)
{
	sync_api(1);
}

Test(host_tcp, sync_api_through_discovery, .init = start, .fini = stop, .timeout = 120)
{
	sync_api(0);
}

static char LINES[4096];

static void t_log(void *ctx, const char *line)
{
	size_t n = strlen(LINES);

	(void)ctx;
	snprintf(LINES + n, sizeof(LINES) - n, "%s\n", line);
}

Test(host_tcp, remote_killed, .init = start, .fini = stop, .timeout = 60)
{
	struct nkv_ctrl *c;
	struct nkv_result res;
	struct nkv_qpair *q;
	uint8_t v[16] = { 1 };

	nkv_set_log(t_log, NULL);
	c = connect_tcp(1);
	cr_assert_eq(nkv_qpair_create(c, NULL, &q), 0);
	tgt_proc_kill(&R);
	cr_assert_eq(nkv_store(q, "k", 1, v, sizeof(v), 0, &res), 0);
	cr_assert_eq(res.status & 0x7ff, NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_UNRECOVERED_ERROR),
		     "the remote's loss is 88h: %#x", res.status);
	cr_assert(strstr(LINES, "tcp: event=remote_lost backend=nvmf"),
		  "said through the library's log: %s", LINES);
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
}

/* nkv-bench's cpu engine over tcp: unchanged: a wave batch (64 lanes),
 * then a block of waves (128 per doorbell), every value verified. */
static void bench(const char *batch, const char *op)
{
	static struct tool_run r;
	char uri[64], line[512];
	const char *args[] = { "--engine", "cpu", "--target", uri, "--kv-op", op, "--num-keys", "512",
			       "--batch-size", batch, "--queue-length", "256", "--iterations", "2",
			       NULL };

	snprintf(uri, sizeof(uri), "tcp:127.0.0.1:%u", R.port);
	cr_assert_eq(tool_run(&r, "nkv-bench", args, NULL, 120000), 0);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert_not_null(tool_line(&r, "  outcomes", line, sizeof(line)), "%s", r.out);
	cr_assert(strstr(line, " ok, 0 verify failures"), "%s", line);
	cr_assert(strstr(r.out, "via a local controller"), "the report says what crosses the network");
}

Test(host_tcp, cpu_engine_wave_and_block, .init = start, .fini = stop, .timeout = 240)
{
	bench("64", "store");
	bench("64", "retrieve");
	bench("128", "retrieve");
}

Test(host_tcp, nkv_admin_says_what_crosses_the_network, .init = start, .fini = stop,
     .timeout = 60)
{
	static struct tool_run r;
	char uri[96], want[160];
	const char *args[] = { "info", uri, NULL };

	snprintf(uri, sizeof(uri), "tcp:127.0.0.1:%u/%s", R.port, SUBNQN);
	cr_assert_eq(tool_run(&r, "nkv-admin", args, NULL, 30000), 0);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert(strstr(r.out, "transport          tcp\n"), "%s", r.out);
	snprintf(want, sizeof(want), "network            %s (NVMe/TCP), via a local controller\n",
		 uri);
	cr_assert(strstr(r.out, want), "%s", r.out);
	cr_assert(strstr(r.out, "value 8388608 B"), "the remote's limit: %s", r.out);
}

/* nkv-probe tcp:: the discovery log, the admin queue's settings and the
 * registers (CSTS.RDY 0: it enables nothing), then the bring-up through
 * the front; a subsystem the target does not serve and nothing listening
 * end with exit 3, saying why. */
Test(host_tcp, nkv_probe_reads_discovery_and_registers, .init = start, .fini = stop,
     .timeout = 60)
{
	static struct tool_run r;
	char uri[96], want[160];
	const char *args[] = { uri, NULL };
	const char *regs[] = { "--registers-only", uri, NULL };

	snprintf(uri, sizeof(uri), "tcp:127.0.0.1:%u", R.port);
	cr_assert_eq(tool_run(&r, "nkv-probe", args, NULL, 30000), 0);
	cr_assert_eq(r.status, 0, "%s", r.out);
	snprintf(want, sizeof(want), "  port 1: tcp ipv4 127.0.0.1:%u subnqn=%s\n", R.port, SUBNQN);
	cr_expect(strstr(r.out, want), "the Discovery log's entry: %s", r.out);
	cr_expect(strstr(r.out, "admin queue: subnqn=" SUBNQN " cntlid="), "%s", r.out);
	cr_expect(strstr(r.out, "maxh2cdata="), "%s", r.out);
	cr_expect(strstr(r.out, "MQES=127"), "CAP by Property Get: %s", r.out);
	cr_expect(strstr(r.out, "CSTS=0x00000000 RDY=0"), "nothing enabled: %s", r.out);
	cr_expect(strstr(r.out, "largest value      8388608 B"), "the bring-up: %s", r.out);
	cr_assert_eq(tool_run(&r, "nkv-probe", regs, NULL, 30000), 0);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_null(strstr(r.out, "largest value"), "--registers-only stops before it");
	snprintf(uri, sizeof(uri), "tcp:127.0.0.1:%u/nqn.2026-01.io.nkv:nope", R.port);
	cr_assert_eq(tool_run(&r, "nkv-probe", args, NULL, 30000), 0);
	cr_expect_eq(r.status, 3);
	cr_expect(strstr(r.out, "connecting an admin queue to nqn.2026-01.io.nkv:nope"), "%s",
		  r.out);
	snprintf(uri, sizeof(uri), "tcp:127.0.0.1:1");
	cr_assert_eq(tool_run(&r, "nkv-probe", args, NULL, 30000), 0);
	cr_expect_eq(r.status, 3);
	cr_expect(strstr(r.out, "Connection refused"), "%s", r.out);
}

/* The examples run unchanged with a tcp: URI (exit 0: every value and
 * status as they expect). */
Test(host_tcp, examples_unchanged, .init = start, .fini = stop, .timeout = 120)
{
	static const char *const ex[] = { "examples/first_retrieve_cpu",
					  "examples/batch_store_retrieve_cpu" };
	static struct tool_run r;
	char uri[64];
	const char *args[] = { uri, NULL };
	size_t i;

	snprintf(uri, sizeof(uri), "tcp:127.0.0.1:%u", R.port);
	for (i = 0; i < sizeof(ex) / sizeof(ex[0]); i++) {
		cr_assert_eq(tool_run(&r, ex[i], args, NULL, 60000), 0, "%s", r.out);
		cr_assert_eq(r.status, 0, "%s: %s", ex[i], r.out);
	}
}

Test(host_tcp, unreachable_and_bad_uris)
{
	struct nkv_ctrl *c = NULL;

	cr_assert_eq(nkv_ctrl_connect("tcp:127.0.0.1:1/nqn.x", NULL, &c), -ECONNREFUSED);
	cr_assert_null(c);
	cr_assert_eq(nkv_ctrl_connect("tcp:127.0.0.1", NULL, &c), -EINVAL);
}
