/* SPDX-License-Identifier: MIT */
/*
 * test_tenant_vfu.c - tenants with real uids: the built nkv-target
 * (tests/lib/rpc_proc.c), its rules set through the control socket, and
 * libnkv clients in forked children that set their gid and uid first
 * (no users are created: the kernel takes any number), so the target
 * learns them from SO_PEERCRED as it would any other process's. Needs
 * root to change uid: skipped by name otherwise.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "http_get.h"
#include "nkv_host.h"
#include "rpc_proc.h"
#include "tl_client.h"

static struct rpc_proc T;
static uint16_t mport;	/* its --metrics port */

static void start(void)
{
	if (geteuid())
		return;
	cr_assert_eq(rpc_proc_start(&T, (const char *const[]){ "--socket-mode", "0666", "--metrics",
								"127.0.0.1:0", NULL }), 0,
		     "nkv-target did not start (see its log)");
	mport = http_metrics_port(T.log);
	cr_assert_neq(mport, 0);
	/* Let other uids reach the socket in the test's directory. */
	cr_assert_eq(chmod(T.dir, 0755), 0);
}

static void stop(void)
{
	if (!geteuid())
		rpc_proc_stop(&T);
}

TestSuite(tenant_vfu, .init = start, .fini = stop, .timeout = 60);

#define NEED_ROOT()								\
	do {									\
		if (geteuid())							\
			cr_skip_test("changing uid needs root (running as %u)",	\
				     (unsigned)geteuid());			\
	} while (0)

static void call_ok(const char *method, const char *params)
{
	struct json_object *r = rpc_call(&T, method, params);

	cr_assert_not_null(r, "%s: no response", method);
	cr_assert_eq(rpc_code(r), 0, "%s %s: error %d %s", method, params, rpc_code(r), rpc_msg(r));
	json_object_put(r);
}

/* What a child reports: its exit status. */
enum {
	OK = 0,
	E_CRED = 10,	/* setgid/setuid failed */
	E_CONNECT,	/* connect gave something else than wanted */
	E_STORE,
	E_RETRIEVE,
	E_SYNC,
};

static int become_and_connect(uint32_t uid, uint32_t gid, struct tl_client *cl)
{
	if (setgroups(0, NULL) || setgid(gid) || setuid(uid))
		_exit(E_CRED);
	return tl_client_open(T.uri, cl);
}

static uint16_t st_store(struct tl_client *cl, const char *key, uint32_t len)
{
	static char v[4096];
	struct nkv_result res;

	memset(v, 'x', sizeof(v));
	if (nkv_store(cl->q, key, (uint32_t)strlen(key), v, len, 0, &res))
		_exit(E_STORE);
	return res.status;
}

static uint16_t st_retrieve(struct tl_client *cl, const char *key)
{
	char v[4096];
	struct nkv_result res;

	if (nkv_retrieve(cl->q, key, (uint32_t)strlen(key), v, sizeof(v), &res))
		_exit(E_RETRIEVE);
	return res.status;
}

/* Run fn(arg) as uid:gid in a child; its exit status. */
static int as_child(uint32_t uid, uint32_t gid, int (*fn)(uint32_t, uint32_t))
{
	int status;
	pid_t p = fork();

	cr_assert_geq(p, 0);
	if (!p)
		_exit(fn(uid, gid));
	cr_assert_eq(waitpid(p, &status, 0), p);
	cr_assert(WIFEXITED(status), "the child died: %d", status);
	return WEXITSTATUS(status);
}

static int denied_client(uint32_t uid, uint32_t gid)
{
	struct tl_client cl;

	/* ns 1 is the only namespace: absent for it, nothing to connect to */
	return become_and_connect(uid, gid, &cl) == -ENODEV ? OK : E_CONNECT;
}

static int ro_client(uint32_t uid, uint32_t gid)
{
	struct tl_client cl;

	if (become_and_connect(uid, gid, &cl))
		return E_CONNECT;
	if (!nkv_status_read_only(st_store(&cl, "ro-key", 100)))
		return E_STORE;
	if (st_retrieve(&cl, "seed"))
		return E_RETRIEVE;
	return OK;
}

static int rw_client(uint32_t uid, uint32_t gid)
{
	struct tl_client cl;

	if (become_and_connect(uid, gid, &cl))
		return E_CONNECT;
	if (st_store(&cl, "rw-key", 100) || st_retrieve(&cl, "rw-key"))
		return E_STORE;
	return OK;
}

static int seed_client(uint32_t uid, uint32_t gid)
{
	struct tl_client cl;

	if (become_and_connect(uid, gid, &cl))
		return E_CONNECT;
	return st_store(&cl, "seed", 100) ? E_STORE : OK;
}

Test(tenant_vfu, uid_rules_hide_protect_and_serve)
{
	NEED_ROOT();
	cr_assert_eq(as_child(40000, 40000, seed_client), OK);
	call_ok("access_set", "{\"nsid\":1,\"uid\":40001,\"access\":\"none\"}");
	call_ok("access_set", "{\"nsid\":1,\"uid\":40002,\"access\":\"ro\"}");
	call_ok("access_set", "{\"nsid\":1,\"gid\":40100,\"access\":\"none\"}");
	cr_assert_eq(as_child(40001, 40001, denied_client), OK, "a denied uid connected");
	cr_assert_eq(as_child(40002, 40002, ro_client), OK, "ro");
	cr_assert_eq(as_child(40003, 40003, rw_client), OK, "no rule: rw");
	cr_assert_eq(as_child(40004, 40100, denied_client), OK, "a denied gid connected");
}

/* A connected client whose access is taken away: its next command is
 * refused (Invalid Namespace), counted and logged. */
static int sync_fd[2][2];

static int revoked_client(uint32_t uid, uint32_t gid)
{
	struct tl_client cl;
	char b = 'r';

	/* Only its own ends: a parent that dies ends the wait (EOF). */
	close(sync_fd[0][0]);
	close(sync_fd[1][1]);
	if (become_and_connect(uid, gid, &cl))
		return E_CONNECT;
	if (st_store(&cl, "mine", 100))
		return E_STORE;
	if (write(sync_fd[0][1], &b, 1) != 1 || read(sync_fd[1][0], &b, 1) != 1)
		return E_SYNC;
	if (st_retrieve(&cl, "mine") != NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_INVALID_NS))
		return E_RETRIEVE;
	return OK;
}

Test(tenant_vfu, revoked_access_refuses_the_next_command)
{
	struct json_object *r, *ns, *ten, *one;
	char *scrape;
	int status;
	size_t i;
	char b;
	pid_t p;

	NEED_ROOT();
	cr_assert_eq(pipe(sync_fd[0]), 0);
	cr_assert_eq(pipe(sync_fd[1]), 0);
	p = fork();
	cr_assert_geq(p, 0);
	if (!p)
		_exit(revoked_client(40010, 40010));
	close(sync_fd[0][1]);
	close(sync_fd[1][0]);
	cr_assert_eq(read(sync_fd[0][0], &b, 1), 1, "the child did not get to store");
	/* While it is connected: connection_list shows who it is. */
	r = rpc_call(&T, "connection_list", NULL);
	one = json_object_array_get_idx(rpc_result(r), 0);
	cr_assert_eq(rpc_int(one, "uid"), 40010, "%s", json_object_to_json_string(r));
	cr_assert_eq(rpc_int(one, "gid"), 40010);
	cr_assert_eq(rpc_int(one, "pid"), p);
	json_object_put(r);
	call_ok("access_set", "{\"nsid\":1,\"uid\":40010,\"access\":\"none\"}");
	cr_assert_eq(write(sync_fd[1][1], "g", 1), 1);
	cr_assert_eq(waitpid(p, &status, 0), p);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == OK, "child: %d", status);
	cr_assert(rpc_proc_log_has(&T, "event=access_denied nsid=1 tenant=uid:40010"));
	/* metering_get: what it stored, moved, and was refused. */
	r = rpc_call(&T, "metering_get", "{\"nsid\":1}");
	cr_assert_eq(rpc_code(r), 0, "%s", rpc_msg(r));
	ns = json_object_array_get_idx(json_object_object_get(rpc_result(r), "namespaces"), 0);
	ten = json_object_object_get(ns, "tenants");
	for (one = NULL, i = 0; i < json_object_array_length(ten); i++)
		if (!strcmp(json_object_get_string(json_object_object_get(
				json_object_array_get_idx(ten, i), "tenant")), "uid:40010"))
			one = json_object_array_get_idx(ten, i);
	cr_assert_not_null(one, "%s", json_object_to_json_string(r));
	cr_assert_eq(rpc_int(one, "denied"), 1);
	cr_assert_eq(rpc_int(one, "keys"), 1);
	cr_assert_eq(rpc_int(one, "bytes_in"), 100);
	json_object_put(r);
	/* The same as Prometheus series. */
	scrape = malloc(1 << 20);
	cr_assert_not_null(scrape);
	cr_assert_eq(http_get(mport, "/metrics", scrape, 1 << 20), 200);
	cr_assert_not_null(strstr(scrape, "nkv_access_denied_total{nsid=\"1\",tenant=\"uid:40010\"} 1\n"),
			   "%s", scrape);
	cr_assert_not_null(strstr(scrape, "nkv_tenant_stored_byte_seconds_total{nsid=\"1\","
				  "tenant=\"uid:40010\",tier=\"durable\"} "));
	cr_assert_not_null(strstr(scrape, "nkv_tenant_moved_bytes_total{nsid=\"1\","
				  "tenant=\"uid:40010\",direction=\"in\"} 100\n"));
	free(scrape);
}

static int quota_client(uint32_t uid, uint32_t gid)
{
	struct tl_client cl;

	if (become_and_connect(uid, gid, &cl))
		return E_CONNECT;
	if (st_store(&cl, "q1", 1000))
		return E_STORE;
	return st_store(&cl, "q2", 1000) == NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_CAPACITY_EXCEEDED)
		       ? OK : E_STORE;
}

Test(tenant_vfu, quota_set_over_rpc)
{
	NEED_ROOT();
	call_ok("quota_set", "{\"nsid\":1,\"uid\":40020,\"keys\":1}");
	cr_assert_eq(as_child(40020, 40020, quota_client), OK);
	cr_assert_eq(as_child(40021, 40021, rw_client), OK, "another uid is not limited");
}

/* The methods' params are checked before anything changes. */
Test(tenant_vfu, bad_params_are_refused)
{
	static const char *const bad[][2] = {
		{ "access_set", "{\"nsid\":1,\"access\":\"rw\"}" },
		{ "access_set", "{\"nsid\":1,\"uid\":1,\"gid\":1,\"access\":\"rw\"}" },
		{ "access_set", "{\"nsid\":1,\"uid\":1,\"access\":\"write\"}" },
		{ "access_set", "{\"nsid\":33,\"uid\":1,\"access\":\"rw\"}" },
		{ "access_set", "{\"nsid\":1,\"hostnqn\":\"\",\"access\":\"rw\"}" },
		{ "access_set", "{\"nsid\":1,\"uid\":1,\"access\":\"rw\",\"who\":1}" },
		{ "access_default_set", "{\"nsid\":1,\"access\":\"maybe\"}" },
		{ "quota_set", "{\"nsid\":1,\"bytes\":5}" },
		{ "quota_set", "{\"nsid\":1,\"uid\":1,\"bytes\":-1}" },
		{ "metering_get", "{\"nsid\":7}" },
	};
	struct json_object *r;
	size_t i;

	NEED_ROOT();
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = rpc_call(&T, bad[i][0], bad[i][1]);
		cr_assert_not_null(r);
		cr_assert_neq(rpc_code(r), 0, "%s %s was taken", bad[i][0], bad[i][1]);
		json_object_put(r);
	}
	r = rpc_call(&T, "access_list", NULL);
	cr_assert_eq(rpc_code(r), 0);
	cr_assert_eq(json_object_array_length(json_object_object_get(rpc_result(r), "namespaces")), 0,
		     "a refused call left a rule: %s", json_object_to_json_string(r));
	json_object_put(r);
}

/* The same rules from the config file (--config; keys as the options,
 * values as the RPC params), shown by access_list, enforced. */
Test(tenant_cfg, config_file_rules)
{
	struct rpc_proc t2;
	struct json_object *r;
	char conf[96];
	FILE *f;

	NEED_ROOT();
	snprintf(conf, sizeof(conf), "/tmp/nkv-tenant-%d.conf", (int)getpid());
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fputs("[nkv-target]\n"
	      "access = nsid=1 uid=40030 access=none\n"
	      "access = nsid=1 gid=40131 access=ro\n"
	      "access-default = nsid=1 access=rw\n"
	      "quota = nsid=1 uid=40032 keys=1\n", f);
	fclose(f);
	cr_assert_eq(rpc_proc_start(&t2, (const char *const[]){ "--socket-mode", "0666",
								 "--config", conf, NULL }), 0);
	unlink(conf);
	cr_assert_eq(chmod(t2.dir, 0755), 0);
	T = t2;		/* the children connect to T */
	r = rpc_call(&t2, "access_list", "{\"nsid\":1}");
	cr_assert_eq(rpc_code(r), 0);
	cr_assert_eq(json_object_array_length(json_object_object_get(
			     json_object_array_get_idx(json_object_object_get(rpc_result(r),
									     "namespaces"), 0),
			     "rules")), 2, "%s", json_object_to_json_string(r));
	json_object_put(r);
	cr_assert_eq(as_child(40030, 40030, denied_client), OK);
	cr_assert_eq(as_child(40032, 40032, quota_client), OK);
	rpc_proc_stop(&t2);
}
