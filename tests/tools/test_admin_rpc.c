// SPDX-License-Identifier: MIT
/*
 * test_admin_rpc - nkv-admin rpc run as a user runs it, against the built
 * nkv-target with a control socket (tests/lib/rpc_proc.h): a result
 * printed as pretty JSON with exit 0, an error response on stderr with
 * exit 1, params that are not an object exit 2, no target exit 3.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "rpc_proc.h"
#include "tool_run.h"

static struct rpc_proc T;

static void start(void)
{
	cr_assert_eq(rpc_proc_start(&T, NULL), 0, "nkv-target did not start");
}

static void stop(void)
{
	rpc_proc_stop(&T);
}

TestSuite(admin_rpc, .init = start, .fini = stop, .timeout = 60);

/* nkv-admin rpc --socket PATH method [params], stdout and stderr apart. */
static void adm_rpc(struct tool_run *r, const char *path, const char *method, const char *params)
{
	const char *const args[] = { "rpc", "--socket", path, method, params, NULL };

	cr_assert_eq(tool_run_split(r, "nkv-admin", args, NULL, 20000), 0, "%s", r->out);
}

Test(admin_rpc, result_as_pretty_json)
{
	struct json_object *o;
	struct tool_run r;

	adm_rpc(&r, T.rsock, "namespace_list", NULL);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	cr_expect(strstr(r.out, "\n  {\n"), "not pretty:\n%s", r.out);
	o = json_tokener_parse(r.out);
	cr_assert(json_object_is_type(o, json_type_array), "%s", r.out);
	cr_expect_eq(rpc_int(json_object_array_get_idx(o, 0), "nsid"), 1);
	json_object_put(o);

	adm_rpc(&r, T.rsock, "target_set", "{\"idle_timeout_ms\": 30000}");
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	cr_expect(strstr(r.out, "\"idle_timeout_ms\": 30000"), "%s", r.out);
}

Test(admin_rpc, error_response_exits_1)
{
	struct tool_run r;

	adm_rpc(&r, T.rsock, "stats_get", "{\"nsid\": 9}");
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "nkv-admin: rpc stats_get: error -32002: no namespace 9"),
		  "%s", r.err);
	cr_expect_eq(r.out[0], 0, "nothing on stdout: %s", r.out);
	adm_rpc(&r, T.rsock, "no_such_method", NULL);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "error -32601"), "%s", r.err);
}

Test(admin_rpc, bad_params_exit_2_no_target_exit_3)
{
	struct tool_run r;
	char gone[200];

	adm_rpc(&r, T.rsock, "stats_get", "[1]");
	cr_expect_eq(r.status, 2);
	cr_expect(strstr(r.err, "must be an object"), "%s", r.err);
	adm_rpc(&r, T.rsock, "stats_get", "{oops");
	cr_expect_eq(r.status, 2);
	snprintf(gone, sizeof(gone), "%s/none.sock", T.dir);
	adm_rpc(&r, gone, "rpc_list", NULL);
	cr_expect_eq(r.status, 3);
	cr_expect(strstr(r.err, "cannot connect"), "%s", r.err);
}
