/* SPDX-License-Identifier: MIT */
/*
 * The Exec allowlist through a real nkv-target's control socket and its
 * options: exec_allow (the row back, exec_list shows it, an Exec runs),
 * exec_deny (then C0h; twice: -32002), bad params each named (-32602),
 * --exec-allow on the command line and repeated in a --config file, a
 * bad row refused at start.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "nkv_host.h"
#include "http_get.h"
#include "rpc_proc.h"

static struct rpc_proc T;
static const char mod[] = "return function(v, i) return i .. v:sub(1, 2) end";

static void sha_hex(const char *s, char *hex)
{
	unsigned char d[32];
	unsigned int n = 32, i;

	EVP_Digest(s, strlen(s), d, &n, EVP_sha256(), NULL);
	for (i = 0; i < 32; i++)
		sprintf(hex + 2 * i, "%02x", d[i]);
}

static void stop(void)
{
	rpc_proc_stop(&T);
}

static void start(void)
{
	cr_assert_eq(rpc_proc_start(&T, NULL), 0, "nkv-target did not start (see its log)");
}

/* Store the module under "mod" and a value under "v"; Exec op_id on "v". */
static int exec_once(uint32_t op_id, char *out, uint32_t *olen, int store)
{
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	struct nkv_result r;
	int rc;

	cr_assert_eq(nkv_ctrl_connect(T.uri, NULL, &c), 0);
	cr_assert_eq(nkv_qpair_create(c, NULL, &q), 0);
	if (store) {
		cr_assert_eq(nkv_store(q, "mod", 3, mod, (uint32_t)strlen(mod), 0, &r), 0);
		cr_assert_eq(nkv_store(q, "v", 1, "xyz", 3, 0, &r), 0);
	}
	rc = nkv_exec(q, "v", 1, op_id, "in:", 3, out, 16, olen);
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	return rc;
}

static struct json_object *call(const char *method, const char *params, int code)
{
	struct json_object *r = rpc_call(&T, method, params);

	cr_assert_not_null(r, "%s: no response", method);
	cr_assert_eq(rpc_code(r), code, "%s %s: code %d (%s), want %d", method, params,
		     rpc_code(r), rpc_msg(r), code);
	return r;
}

static int listed(uint32_t nsid, uint32_t op_id)
{
	struct json_object *r = call("exec_list", NULL, 0), *e, *row, *v;
	size_t i;
	int found = 0;

	cr_assert(json_object_object_get_ex(rpc_result(r), "entries", &e));
	for (i = 0; i < json_object_array_length(e); i++) {
		row = json_object_array_get_idx(e, i);
		json_object_object_get_ex(row, "nsid", &v);
		if (json_object_get_int64(v) != nsid)
			continue;
		json_object_object_get_ex(row, "op_id", &v);
		found |= json_object_get_int64(v) == op_id;
	}
	json_object_put(r);
	return found;
}

Test(exec_rpc, allow_list_exec_deny, .init = start, .fini = stop, .timeout = 60)
{
	char hex[65], params[512], out[16];
	struct json_object *r;
	uint32_t olen = 0;

	sha_hex(mod, hex);
	snprintf(params, sizeof(params), "{\"nsid\":1,\"op_id\":4,\"digest\":\"%s\",\"key\":\"6d6f64\","
		 "\"max_wall_ms\":250}", hex);
	r = call("exec_allow", params, 0);
	cr_assert_eq(rpc_int(rpc_result(r), "max_wall_ms"), 250);
	cr_assert_eq(rpc_int(rpc_result(r), "max_memory"), 64ll << 20, "the default filled in");
	json_object_put(r);
	cr_assert(listed(1, 4));
	cr_assert_eq(exec_once(4, out, &olen, 1), 0);
	cr_assert_eq(olen, 5);
	cr_assert_eq(memcmp(out, "in:xy", 5), 0);
	json_object_put(call("exec_deny", "{\"nsid\":1,\"op_id\":4}", 0));
	cr_assert(!listed(1, 4));
	cr_assert_eq(exec_once(4, out, &olen, 0), 0x1c0, "denied: not allowlisted");
	json_object_put(call("exec_deny", "{\"nsid\":1,\"op_id\":4}", -32002));
	r = call("exec_list", NULL, 0);
	cr_assert_geq(rpc_int(json_object_object_get(rpc_result(r), "stats"), "ok"), 1);
	cr_assert_geq(rpc_int(json_object_object_get(rpc_result(r), "stats"), "not_allowed"), 1);
	json_object_put(r);
	cr_assert(rpc_proc_log_has(&T, "event=exec_failed nsid=1 op_id=4 status=0x1c0"),
		  "the refusal is one log line");
}

Test(exec_rpc, bad_params_named, .init = start, .fini = stop, .timeout = 60)
{
	char hex[65], p[512];

	sha_hex(mod, hex);
	snprintf(p, sizeof(p), "{\"nsid\":1,\"op_id\":1,\"digest\":\"abc\",\"key\":\"6d\"}");
	json_object_put(call("exec_allow", p, -32602));
	snprintf(p, sizeof(p), "{\"nsid\":1,\"op_id\":1,\"digest\":\"%s\",\"key\":\"zz\"}", hex);
	json_object_put(call("exec_allow", p, -32602));
	snprintf(p, sizeof(p), "{\"nsid\":0,\"op_id\":1,\"digest\":\"%s\",\"key\":\"6d\"}", hex);
	json_object_put(call("exec_allow", p, -32602));
	snprintf(p, sizeof(p), "{\"nsid\":1,\"op_id\":1,\"digest\":\"%s\",\"key\":\"6d\","
		 "\"max_wall_ms\":999999999}", hex);
	json_object_put(call("exec_allow", p, -32602));
	snprintf(p, sizeof(p), "{\"nsid\":1,\"op_id\":1,\"digest\":\"%s\",\"key\":\"6d\","
		 "\"color\":1}", hex);
	json_object_put(call("exec_allow", p, -32602));
	json_object_put(call("exec_allow", "{\"nsid\":1}", -32602));
	cr_assert(!listed(1, 1), "nothing added by a refused call");
}

Test(exec_rpc, command_line_and_config_file, .fini = stop, .timeout = 60)
{
	char hex[65], row[200], row2[200], row3[200], cfg[] = "/tmp/nkv-exec-cfg-XXXXXX";
	int fd = mkstemp(cfg);
	FILE *f = fdopen(fd, "w");

	sha_hex(mod, hex);
	snprintf(row, sizeof(row), "1:7:%s:6d6f64", hex);
	snprintf(row2, sizeof(row2), "1:8:%s:6d6f64:1000:1048576:100:50", hex);
	fprintf(f, "exec-allow = %s\nexec-allow = %s\n", row, row2);
	fclose(f);
	/* A digest no module has: allowlisted all the same (checked at run). */
	snprintf(row3, sizeof(row3), "1:9:%064d:6d", 0);
	cr_assert_eq(rpc_proc_start(&T, (const char *const[]){ "--config", cfg, NULL }), 0);
	cr_assert(listed(1, 7) && listed(1, 8), "both file rows");
	rpc_proc_stop(&T);
	/* The command line's rows join the file's, as the tenant rules do. */
	cr_assert_eq(rpc_proc_start(&T, (const char *const[]){ "--config", cfg, "--exec-allow",
							       row3, NULL }), 0);
	cr_assert(listed(1, 9), "the command line's row");
	cr_assert(listed(1, 7) && listed(1, 8), "and the file's");
	rpc_proc_stop(&T);
	cr_assert_eq(rpc_proc_start(&T, (const char *const[]){ "--exec-allow", "1:2:nothex:6d",
							       NULL }), -ECHILD,
		     "a bad row: the target exits");
	cr_assert(rpc_proc_log_has(&T, "--exec-allow"), "and says which option");
	unlink(cfg);
}

/* SIGHUP re-reads the file: a row it dropped is denied, a new one allowed,
 * one set through the control socket for another op-ID stays. */
Test(exec_rpc, sighup_syncs_the_file_rows, .fini = stop, .timeout = 60)
{
	char hex[65], p[512], cfg[] = "/tmp/nkv-exec-hup-XXXXXX";
	int fd = mkstemp(cfg), i;
	FILE *f = fdopen(fd, "w");

	sha_hex(mod, hex);
	fprintf(f, "exec-allow = 1:7:%s:6d6f64\nexec-allow = 1:8:%s:6d6f64\n", hex, hex);
	fclose(f);
	cr_assert_eq(rpc_proc_start(&T, (const char *const[]){ "--config", cfg, NULL }), 0);
	snprintf(p, sizeof(p), "{\"nsid\":1,\"op_id\":20,\"digest\":\"%s\",\"key\":\"6d6f64\"}", hex);
	json_object_put(call("exec_allow", p, 0));
	cr_assert(listed(1, 7) && listed(1, 8) && listed(1, 20));
	f = fopen(cfg, "w");
	fprintf(f, "exec-allow = 1:7:%s:6d6f64\nexec-allow = 1:9:%s:6d6f64\n", hex, hex);
	fclose(f);
	kill(T.pid, SIGHUP);
	for (i = 0; i < 500 && !rpc_proc_log_has(&T, "event=reload result=ok"); i++)
		usleep(10000);
	cr_assert(rpc_proc_log_has(&T, "event=reload result=ok"), "the reload was logged");
	cr_assert(listed(1, 7), "kept");
	cr_assert(!listed(1, 8), "dropped from the file: denied");
	cr_assert(listed(1, 9), "added to the file: allowed");
	cr_assert(listed(1, 20), "the control socket's row stays");
	unlink(cfg);
}

/* The metrics endpoint counts Exec calls by result. */
Test(exec_rpc, metrics_count_calls, .fini = stop, .timeout = 60)
{
	static char text[1 << 18];
	char hex[65], row[200], out[16];
	uint32_t olen;
	uint16_t port;

	sha_hex(mod, hex);
	snprintf(row, sizeof(row), "1:4:%s:6d6f64", hex);
	cr_assert_eq(rpc_proc_start(&T, (const char *const[]){ "--metrics", "127.0.0.1:0",
							       "--exec-allow", row, NULL }), 0);
	port = http_metrics_port(T.log);
	cr_assert_neq(port, 0);
	cr_assert_eq(exec_once(4, out, &olen, 1), 0);
	cr_assert_eq(exec_once(5, out, &olen, 0), 0x1c0);
	cr_assert_eq(http_get(port, "/metrics", text, sizeof(text)), 200);
	cr_assert(strstr(text, "nkv_exec_calls_total{result=\"ok\"} 1\n"), "%s", text);
	cr_assert(strstr(text, "nkv_exec_calls_total{result=\"not_allowed\"} 1\n"), "%s", text);
	cr_assert(strstr(text, "nkv_exec_modules_cached 1\n"), "%s", text);
}

/* A read-only tenant (access ro, issue 48) may Exec: Exec never writes. */
Test(exec_rpc, read_only_tenant_execs, .init = start, .fini = stop, .timeout = 60)
{
	char hex[65], p[512], out[16];
	struct nkv_qpair *q;
	struct nkv_ctrl *c;
	struct nkv_result r;
	uint32_t olen = 0;

	sha_hex(mod, hex);
	snprintf(p, sizeof(p), "{\"nsid\":1,\"op_id\":4,\"digest\":\"%s\",\"key\":\"6d6f64\"}", hex);
	json_object_put(call("exec_allow", p, 0));
	cr_assert_eq(exec_once(4, out, &olen, 1), 0, "stored while rw");
	snprintf(p, sizeof(p), "{\"nsid\":1,\"uid\":%u,\"access\":\"ro\"}", (unsigned)getuid());
	json_object_put(call("access_set", p, 0));
	cr_assert_eq(nkv_ctrl_connect(T.uri, NULL, &c), 0);
	cr_assert_eq(nkv_qpair_create(c, NULL, &q), 0);
	cr_assert_eq(nkv_store(q, "v", 1, "w", 1, 0, &r), 0);
	cr_assert_eq(r.status, 0x182, "this tenant is read-only");
	cr_assert_eq(nkv_exec(q, "v", 1, 4, "ro:", 3, out, sizeof(out), &olen), 0);
	cr_assert_eq(olen, 5);
	cr_assert_eq(memcmp(out, "ro:xy", 5), 0);
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
}
