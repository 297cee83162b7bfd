/* SPDX-License-Identifier: MIT */
/*
 * test_rpc.c - nkv-target's control socket (src/target/rpc/, docs/rpc.md)
 * against the built program, spawned with a mem backend on a temporary
 * socket and ended by its PID: every method, JSON-RPC's errors, and
 * hostile clients (malformed JSON, a 10 MiB request, 1,000 connections
 * at once, a slow sender) while a libnkv client Stores and Retrieves on
 * the vfio-user socket, which must keep working throughout.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "nkv_host.h"
#include "rpc_proc.h"
#include "tl_client.h"

static struct rpc_proc T;

static void start(void)
{
	cr_assert_eq(rpc_proc_start(&T, NULL), 0, "nkv-target did not start (see its log)");
}

static void stop(void)
{
	rpc_proc_stop(&T);
}

TestSuite(rpc, .init = start, .fini = stop, .timeout = 60);

/* Store key=val and read it back: 0 when both succeed and match. */
static int store_retrieve(struct tl_client *cl, const char *key, const char *val)
{
	struct nkv_result res;
	char got[64] = "";
	int rc = nkv_store(cl->q, key, (uint32_t)strlen(key), val, (uint32_t)strlen(val), 0, &res);

	if (rc || res.status)
		return rc ? rc : -EIO;
	rc = nkv_retrieve(cl->q, key, (uint32_t)strlen(key), got, sizeof(got), &res);
	if (rc || res.status)
		return rc ? rc : -EIO;
	return res.dw0 == strlen(val) && !memcmp(got, val, strlen(val)) ? 0 : -EBADMSG;
}

/* One Store/Retrieve on a fresh client: the data path serves. */
static void assert_data_path(const char *key)
{
	struct tl_client cl;

	cr_assert_eq(tl_client_open(T.uri, &cl), 0, "a vfio-user client cannot connect");
	cr_assert_eq(store_retrieve(&cl, key, "value-1"), 0, "Store/Retrieve failed");
	tl_client_close(&cl);
}

static struct json_object *call_ok(const char *method, const char *params)
{
	struct json_object *r = rpc_call(&T, method, params);

	cr_assert_not_null(r, "%s: no response", method);
	cr_assert_eq(rpc_code(r), 0, "%s: error %d %s", method, rpc_code(r), rpc_msg(r));
	cr_assert_not_null(rpc_result(r), "%s: no result", method);
	return r;
}

static void call_err(const char *method, const char *params, int code, const char *has)
{
	struct json_object *r = rpc_call(&T, method, params);

	cr_assert_not_null(r, "%s: no response", method);
	cr_assert_eq(rpc_code(r), code, "%s %s: code %d (%s), want %d", method,
		     params ? params : "", rpc_code(r), rpc_msg(r), code);
	cr_assert_not_null(strstr(rpc_msg(r), has), "%s: message '%s' lacks '%s'", method,
			   rpc_msg(r), has);
	json_object_put(r);
}

static int has_method(struct json_object *list, const char *name)
{
	size_t i;

	for (i = 0; i < json_object_array_length(list); i++) {
		struct json_object *m = json_object_array_get_idx(list, i), *n;

		if (json_object_object_get_ex(m, "name", &n) &&
		    !strcmp(json_object_get_string(n), name) &&
		    json_object_object_get_ex(m, "params", NULL))
			return 1;
	}
	return 0;
}

Test(rpc, rpc_list_names_every_method_with_params)
{
	static const char *const names[] = { "rpc_list", "namespace_list", "namespace_set",
		"namespace_add", "namespace_remove", "stats_get", "connection_list",
		"connection_close", "log_level_set", "target_set" };
	struct json_object *r = call_ok("rpc_list", NULL);
	unsigned i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		cr_expect(has_method(rpc_result(r), names[i]), "rpc_list lacks %s", names[i]);
	json_object_put(r);
}

Test(rpc, socket_is_0600_and_one_target_per_path)
{
	struct rpc_proc t2;
	const char *extra[] = { "--rpc-socket", T.rsock, "--log-level", "info", NULL };
	struct stat st;
	char log[512] = "";
	FILE *f;

	cr_assert_eq(stat(T.rsock, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0600);
	/* A second target on the same --rpc-socket (its own vfio-user one):
	 * exits 3, naming the first's PID; the first keeps its socket. */
	cr_assert_eq(rpc_proc_start(&t2, extra), -ECHILD, "the second target did not exit");
	cr_expect_eq(t2.status, 3);
	f = fopen(t2.log, "r");
	cr_assert_not_null(f);
	cr_expect_gt(fread(log, 1, sizeof(log) - 1, f), 0);
	fclose(f);
	cr_expect_not_null(strstr(log, "is served by another target"), "%s", log);
	cr_expect_null(strstr(log, "event=namespace"), "the lock is taken before any backend "
		       "opens:\n%s", log);
	rpc_proc_stop(&t2);
	json_object_put(call_ok("rpc_list", NULL));
}

Test(rpc, socket_mode_as_asked)
{
	struct rpc_proc t2;
	struct stat st;

	cr_assert_eq(rpc_proc_start(&t2, (const char *const[]){ "--rpc-socket-mode", "0660",
							      NULL }), 0);
	cr_assert_eq(stat(t2.rsock, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0660);
	rpc_proc_stop(&t2);
	cr_assert_eq(rpc_proc_start(&t2, (const char *const[]){ "--rpc-socket-mode", "0999",
							      NULL }), -ECHILD);
	cr_expect_eq(t2.status, 2, "a bad mode is a usage error");
	rpc_proc_stop(&t2);
}

Test(rpc, not_a_socket_is_refused)
{
	struct rpc_proc t2;
	char path[160], log[512] = "";
	const char *extra[] = { "--rpc-socket", path, NULL };
	FILE *f;

	snprintf(path, sizeof(path), "%s/plain-file", T.dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fclose(f);
	cr_assert_eq(rpc_proc_start(&t2, extra), -ECHILD);
	cr_expect_eq(t2.status, 3);
	f = fopen(t2.log, "r");
	cr_assert_not_null(f);
	cr_expect_gt(fread(log, 1, sizeof(log) - 1, f), 0);
	fclose(f);
	cr_expect_not_null(strstr(log, "exists and is not a socket"), "%s", log);
	rpc_proc_stop(&t2);
	cr_expect_eq(access(path, F_OK), 0, "the file was removed");
}

Test(rpc, namespace_list_follows_stores)
{
	struct json_object *r = call_ok("namespace_list", NULL), *ns, *v;
	struct tl_client cl;

	cr_assert_eq(json_object_array_length(rpc_result(r)), 1);
	ns = json_object_array_get_idx(rpc_result(r), 0);
	cr_expect_eq(rpc_int(ns, "nsid"), 1);
	cr_expect_eq(rpc_int(ns, "capacity"), 64 << 20);
	cr_expect_eq(rpc_int(ns, "keys"), 0);
	cr_assert(json_object_object_get_ex(ns, "backend", &v));
	cr_expect_str_eq(json_object_get_string(v), "mem");
	cr_assert(json_object_object_get_ex(ns, "read_only", &v));
	cr_expect_not(json_object_get_boolean(v));
	json_object_put(r);

	cr_assert_eq(tl_client_open(T.uri, &cl), 0);
	cr_assert_eq(store_retrieve(&cl, "k1", "hello"), 0);
	r = call_ok("namespace_list", NULL);
	ns = json_object_array_get_idx(rpc_result(r), 0);
	cr_expect_eq(rpc_int(ns, "keys"), 1);
	cr_expect_gt(rpc_int(ns, "bytes"), 0);
	json_object_put(r);
	tl_client_close(&cl);
}

Test(rpc, stats_get_counts_connections_and_namespaces)
{
	struct json_object *r, *res, *arr, *c;
	struct tl_client cl;

	cr_assert_eq(tl_client_open(T.uri, &cl), 0);
	cr_assert_eq(store_retrieve(&cl, "k2", "world"), 0);
	r = call_ok("stats_get", NULL);
	res = rpc_result(r);
	cr_assert(json_object_object_get_ex(res, "connections", &arr));
	cr_assert_eq(json_object_array_length(arr), 1);
	c = json_object_array_get_idx(arr, 0);
	cr_expect_gt(rpc_int(c, "commands"), 2, "the admin and I/O commands it ran");
	cr_expect_gt(rpc_int(c, "bytes"), 0);
	cr_expect_gt(rpc_int(c, "dma_maps"), 0);
	cr_assert(json_object_object_get_ex(res, "namespaces", &arr));
	cr_expect_eq(rpc_int(json_object_array_get_idx(arr, 0), "keys"), 1);
	cr_assert(json_object_object_get_ex(res, "vfio_user", &c));
	cr_expect_eq(rpc_int(c, "conns"), 1);
	cr_assert(json_object_object_get_ex(res, "rpc", &c));
	cr_expect_geq(rpc_int(c, "requests"), 1);
	json_object_put(r);

	r = call_ok("stats_get", "{\"nsid\":1}");
	cr_assert(json_object_object_get_ex(rpc_result(r), "namespaces", &arr));
	cr_expect_eq(json_object_array_length(arr), 1);
	cr_expect_not(json_object_object_get_ex(rpc_result(r), "connections", NULL));
	json_object_put(r);
	call_err("stats_get", "{\"nsid\":7}", -32002, "no namespace 7");
	tl_client_close(&cl);
}

/* The listed connections' first id, or -1. */
static long long first_conn(void)
{
	struct json_object *r = call_ok("connection_list", NULL);
	long long id = -1;

	if (json_object_array_length(rpc_result(r)))
		id = rpc_int(json_object_array_get_idx(rpc_result(r), 0), "id");
	json_object_put(r);
	return id;
}

Test(rpc, connection_close_ends_a_client)
{
	struct json_object *r, *c;
	struct nkv_result res;
	struct tl_client cl;
	char params[64];
	long long id;
	int i, rc = 0;

	cr_assert_eq(tl_client_open(T.uri, &cl), 0);
	r = call_ok("connection_list", NULL);
	cr_assert_eq(json_object_array_length(rpc_result(r)), 1);
	c = json_object_array_get_idx(rpc_result(r), 0);
	id = rpc_int(c, "id");
	cr_assert_gt(id, 0);
	cr_expect(json_object_get_boolean(json_object_object_get(c, "enabled")));
	json_object_put(r);

	snprintf(params, sizeof(params), "{\"id\":%lld}", id);
	json_object_put(call_ok("connection_close", params));
	/* The client learns it as it learns of a dropped connection. */
	for (i = 0; i < 200 && !rc; i++) {
		rc = nkv_store(cl.q, "k3", 2, "v", 1, 0, &res);
		usleep(10000);
	}
	cr_expect_neq(rc, 0, "the closed client's Store still succeeds");
	cr_expect(rpc_proc_log_has(&T, "event=conn_end conn=1 reason=closed_by_rpc"));
	for (i = 0; i < 200 && first_conn() != -1; i++)
		usleep(10000);
	cr_expect_eq(first_conn(), -1, "the connection is still listed");
	tl_client_close(&cl);
	call_err("connection_close", params, -32002, "no connection");
	assert_data_path("k4");
}

Test(rpc, log_level_set)
{
	struct json_object *r = call_ok("log_level_set", "{\"level\":\"debug\"}");

	cr_expect_str_eq(json_object_get_string(json_object_object_get(rpc_result(r), "was")),
			 "warn");
	cr_expect_str_eq(json_object_get_string(json_object_object_get(rpc_result(r), "level")),
			 "debug");
	json_object_put(r);
	/* A debug line, which warn (the suite's level) drops, now appears. */
	json_object_put(call_ok("rpc_list", NULL));
	cr_expect(rpc_proc_log_has(&T, "level=debug event=rpc_conn_open"));
	call_err("log_level_set", "{\"level\":\"loud\"}", -32602, "level");
	call_err("log_level_set", NULL, -32602, "missing param 'level'");
}

Test(rpc, target_set_max_conns_takes_effect_at_next_accept)
{
	struct json_object *r = call_ok("target_set", "{\"max_conns\":1}");
	struct tl_client a, b;

	cr_expect_eq(rpc_int(rpc_result(r), "max_conns"), 1);
	cr_expect_eq(rpc_int(rpc_result(r), "msg_timeout_ms"), 5000, "others as they were");
	json_object_put(r);
	cr_assert_eq(tl_client_open(T.uri, &a), 0);
	cr_expect_neq(tl_client_open(T.uri, &b), 0, "a second client past max_conns 1");
	json_object_put(call_ok("target_set", "{\"max_conns\":16}"));
	cr_assert_eq(tl_client_open(T.uri, &b), 0);
	cr_expect_eq(store_retrieve(&b, "k5", "v5"), 0);
	tl_client_close(&b);
	tl_client_close(&a);
}

Test(rpc, target_set_handshake_timeout_for_the_next_connection)
{
	struct json_object *r = call_ok("target_set", "{\"handshake_timeout_ms\":200,"
					"\"poll_interval_ns\":50000}");
	char b;
	int fd;

	cr_expect_eq(rpc_int(rpc_result(r), "handshake_timeout_ms"), 200);
	cr_expect_eq(rpc_int(rpc_result(r), "poll_interval_ns"), 50000);
	json_object_put(r);
	/* Says nothing: closed by the target well before the default 10 s. */
	fd = rpc_connect(T.vsock);
	cr_assert_geq(fd, 0);
	cr_expect_eq(rpc_read(fd, 3000), NULL);
	cr_expect_eq(recv(fd, &b, 1, MSG_DONTWAIT), 0, "not closed by the target");
	close(fd);
	assert_data_path("k6");
	call_err("target_set", "{}", -32602, "nothing to set");
	call_err("target_set", "{\"max_conns\":0}", -32602, "max_conns");
	call_err("target_set", "{\"poll_interval_ns\":\"fast\"}", -32602, "integer");
	call_err("target_set", "{\"queue_depth\":8}", -32602, "unknown param 'queue_depth'");
}

static struct json_object *ns_of(struct json_object *list, long long nsid);
static int changed_within(struct nkv_ctrl *c, unsigned ms);

Test(rpc, namespace_set_and_remove_refuse_bad_params)
{
	call_err("namespace_set", "{\"nsid\":9,\"capacity\":1}", -32002, "no namespace 9");
	call_err("namespace_set", "{\"nsid\":1}", -32602, "nothing to set");
	call_err("namespace_set", "{\"nsid\":1,\"capacity\":0}", -32602, "capacity");
	call_err("namespace_set", "{\"nsid\":1,\"max_keys\":4294967296}", -32602, "max_keys");
	call_err("namespace_set", "{\"nsid\":1,\"evict\":\"fifo\"}", -32602, "neither");
	call_err("namespace_set", "{\"nsid\":1,\"evict\":1}", -32602, "evict");
	/* mem reserves address space for 4x its start capacity (64 MiB). */
	call_err("namespace_set", "{\"nsid\":1,\"capacity\":281474976710656}", -32602,
		 "reserved at start");
	call_err("namespace_remove", "{\"nsid\":9}", -32002, "no namespace 9");
	call_err("namespace_remove", "{\"nsid\":0}", -32602, "nsid");
	call_err("namespace_remove", "{}", -32602, "nsid");
	assert_data_path("after");
}

/* Store a 1000-byte value under key: its status (0: stored). */
static uint16_t put_k(struct tl_client *cl, const char *key)
{
	static char val[1000];
	struct nkv_result res;

	memset(val, key[0], sizeof(val));
	if (nkv_store(cl->q, key, (uint32_t)strlen(key), val, sizeof(val), 0, &res))
		return 0xffff;
	return res.status;
}

/* key's Retrieve: 0 stored (its 1000 bytes checked), its status, or 0xffff. */
static uint16_t get_k(struct tl_client *cl, const char *key)
{
	char got[1000];
	struct nkv_result res;
	size_t i;

	if (nkv_retrieve(cl->q, key, (uint32_t)strlen(key), got, sizeof(got), &res))
		return 0xffff;
	if (res.status)
		return res.status;
	for (i = 0; i < sizeof(got); i++)
		if (got[i] != key[0])
			return 0xfffe;
	return res.dw0 == sizeof(got) ? 0 : 0xfffe;
}

static struct json_object *set_ok(const char *params)
{
	return call_ok("namespace_set", params);
}

#define FULL NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_CAPACITY_EXCEEDED)
#define NOKEY NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS)

/* Each limit changed on a running target, seen by a connected client:
 * Identify (after the Namespace Attribute Changed notice), Stores
 * refused then served, the LRU switched on and off; nothing stored lost
 * by a change itself. */
static void limits_live(const char *nsmap)
{
	struct nkv_ns_info nsi[4];
	struct json_object *r;
	struct tl_client cl;
	char k[8];
	int i;

	rpc_proc_stop(&T);
	cr_assert_eq(rpc_proc_start(&T, (const char *const[]){ "--ns-map", nsmap, "--capacity",
							     "1M", "--log-level", "info", NULL }), 0);
	cr_assert_eq(tl_client_open(T.uri, &cl), 0);
	for (i = 0; i < 8; i++) {
		snprintf(k, sizeof(k), "a%d", i);
		cr_assert_eq(put_k(&cl, k), 0, "%s", k);
	}
	/* Capacity below what is stored: Stores 81h, every value still there. */
	r = set_ok("{\"nsid\":1,\"capacity\":4096}");
	cr_expect_eq(rpc_int(rpc_result(r), "capacity"), 4096);
	json_object_put(r);
	cr_expect(rpc_proc_log_has(&T, "event=namespace_set nsid=1 capacity=4096"));
	cr_assert_eq(changed_within(cl.c, 3000), 1, "the client is told");
	cr_assert_eq(nkv_ctrl_namespaces(cl.c, nsi, 4), 1);
	cr_expect_eq(nsi[0].capacity, 4096, "Identify's NSZE follows");
	i = put_k(&cl, "b0");
	cr_expect_eq(i, FULL, "a Store over the new capacity: %x", i);
	for (i = 0; i < 8; i++) {
		snprintf(k, sizeof(k), "a%d", i);
		cr_expect_eq(get_k(&cl, k), 0, "%s kept", k);
	}
	/* LRU on: the Store fits by evicting, oldest first (the LRU starts
	 * in key order: a0 first). */
	r = set_ok("{\"nsid\":1,\"evict\":\"lru\"}");
	cr_expect_str_eq(json_object_get_string(json_object_object_get(rpc_result(r), "evict")),
			 "lru");
	json_object_put(r);
	cr_expect_eq(put_k(&cl, "b0"), 0, "stored by evicting");
	cr_expect_eq(get_k(&cl, "b0"), 0);
	cr_expect_eq(get_k(&cl, "a0"), NOKEY, "the oldest evicted");
	r = call_ok("namespace_list", NULL);
	cr_expect_leq(rpc_int(ns_of(rpc_result(r), 1), "keys"), 4, "down to the capacity");
	cr_expect_geq(rpc_int(ns_of(rpc_result(r), 1), "evictions"), 5);
	json_object_put(r);
	/* Raised again, LRU off: more Stores fit, none evicted. */
	json_object_put(set_ok("{\"nsid\":1,\"capacity\":1048576,\"evict\":\"none\"}"));
	for (i = 0; i < 8; i++) {
		snprintf(k, sizeof(k), "c%d", i);
		cr_expect_eq(put_k(&cl, k), 0, "%s", k);
	}
	cr_expect_eq(get_k(&cl, "b0"), 0, "b0 kept");
	/* max_keys below the count: a new key 81h, a replaced one stored. */
	r = set_ok("{\"nsid\":1,\"max_keys\":3}");
	cr_expect_eq(rpc_int(rpc_result(r), "max_keys"), 3);
	cr_expect_str_eq(json_object_get_string(json_object_object_get(rpc_result(r), "evict")),
			 "none");
	json_object_put(r);
	cr_assert_eq(changed_within(cl.c, 3000), 1);
	cr_assert_eq(nkv_ctrl_namespaces(cl.c, nsi, 4), 1);
	cr_expect_eq(nsi[0].max_keys, 3, "Identify's MNK follows");
	cr_expect_eq(put_k(&cl, "d0"), FULL, "a new key past max_keys");
	cr_expect_eq(put_k(&cl, "c0"), 0, "a key replaced is no new key");
	json_object_put(set_ok("{\"nsid\":1,\"max_keys\":0}"));
	cr_expect_eq(put_k(&cl, "d0"), 0, "no limit again");
	tl_client_close(&cl);
}

Test(rpc, namespace_set_limits_live_on_mem)
{
	limits_live("1=one");
}

Test(rpc, namespace_set_limits_live_on_rocksdb)
{
	char map[128], dir[] = "/tmp/nkv-nsset-XXXXXX", rm[64];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(map, sizeof(map), "1=one:backend=rocksdb:db=%s/db", dir);
	limits_live(map);
	rpc_proc_stop(&T);	/* the database closed before its directory goes */
	snprintf(rm, sizeof(rm), "rm -rf %s", dir);
	cr_expect_eq(system(rm), 0);
}

/* Capacity lowered and raised again under a Store/Retrieve storm: every
 * Store is acknowledged (and reads back whole) or answered 81h while the
 * capacity is low; none lost, none failed otherwise. */
struct full_storm {
	struct tl_client cl;
	pthread_t thr;
	int stop;		/* atomic */
	int acked, full, bad;
};

static void *full_storm_main(void *arg)
{
	struct full_storm *s = arg;
	char k[16];
	uint16_t st;
	int i;

	for (i = 0; !__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE); i++) {
		snprintf(k, sizeof(k), "%c%d", 'a' + i % 26, i);
		st = put_k(&s->cl, k);
		if (st == FULL) {
			s->full++;
			continue;
		}
		if (st || get_k(&s->cl, k))
			s->bad++;
		else
			__atomic_add_fetch(&s->acked, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int acked_past(struct full_storm *s, int n, unsigned ms)
{
	int start = __atomic_load_n(&s->acked, __ATOMIC_ACQUIRE);
	unsigned i;

	for (i = 0; i < ms && __atomic_load_n(&s->acked, __ATOMIC_ACQUIRE) < start + n; i++)
		usleep(1000);
	return __atomic_load_n(&s->acked, __ATOMIC_ACQUIRE) >= start + n;
}

/* A fresh target of capacity bytes, and the storm on it, storing. */
static void storm_start(struct full_storm *s, const char *capacity, int n)
{
	rpc_proc_stop(&T);
	cr_assert_eq(rpc_proc_start(&T, (const char *const[]){ "--capacity", capacity, NULL }), 0);
	cr_assert_eq(tl_client_open(T.uri, &s->cl), 0);
	cr_assert_eq(pthread_create(&s->thr, NULL, full_storm_main, s), 0);
	cr_expect(acked_past(s, n, 20000), "the storm stores");
}

/* The storm stopped: nothing it stored lost, the target alive. */
static void storm_end(struct full_storm *s)
{
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	pthread_join(s->thr, NULL);
	cr_expect_eq(s->bad, 0, "no Store lost or failed otherwise, every value whole");
	tl_client_close(&s->cl);
	cr_expect(rpc_proc_alive(&T));
}

Test(rpc, namespace_set_capacity_under_a_store_storm, .timeout = 120)
{
	struct full_storm s = { 0 };
	struct json_object *r;
	int acked, full;

	storm_start(&s, "16M", 100);
	r = set_ok("{\"nsid\":1,\"capacity\":65536}");
	json_object_put(r);
	usleep(200000);
	acked = __atomic_load_n(&s.acked, __ATOMIC_ACQUIRE);
	usleep(200000);
	cr_expect_leq(__atomic_load_n(&s.acked, __ATOMIC_ACQUIRE), acked + 1,
		      "nothing stored past the lowered capacity");
	full = s.full;
	cr_expect_gt(full, 0, "Stores answered 81h");
	json_object_put(set_ok("{\"nsid\":1,\"capacity\":67108864}"));
	cr_expect(acked_past(&s, 100, 20000), "Stores served again once raised");
	storm_end(&s);
}


/* A client Storing (and reading each value back) while its namespace is
 * removed: each pair before the removal whole, every command after it
 * answered Invalid Namespace (none lost, none hanging). */
struct storm {
	struct tl_client cl;
	int acked;		/* Store + Retrieve pairs that matched */
	int refused;		/* commands answered Invalid Namespace after */
	int bad;		/* anything else: a mismatch, an error, success after refusal */
	int go;			/* atomic: enough pairs done, remove now */
};

/* Store s<i> and read it back: 0 both matched, 1 either answered Invalid
 * Namespace (the removal came between), -1 anything else. */
static int storm_pair(struct storm *s, int i)
{
	char key[16], val[32], got[32] = "";
	struct nkv_result res;
	uint32_t kl, vl;

	kl = (uint32_t)snprintf(key, sizeof(key), "s%d", i);
	vl = (uint32_t)snprintf(val, sizeof(val), "v%d", i);
	if (nkv_store(s->cl.q, key, kl, val, vl, 0, &res))
		return -1;
	if (res.status)
		return res.status == NKV_SC_INVALID_NS ? 1 : -1;
	if (nkv_retrieve(s->cl.q, key, kl, got, sizeof(got), &res))
		return -1;
	if (res.status)
		return res.status == NKV_SC_INVALID_NS ? 1 : -1;
	return res.dw0 == vl && !memcmp(got, val, vl) ? 0 : -1;
}

static void *storm_main(void *arg)
{
	struct storm *s = arg;
	struct nkv_result res;
	int i;

	for (i = 0; s->refused < 50 && i < 1000000; i++) {
		if (!s->refused) {
			int rc = storm_pair(s, i);

			if (!rc)
				s->acked++;
			else if (rc < 0)
				s->bad++;
			else
				s->refused++;
			if (s->acked == 200)
				__atomic_store_n(&s->go, 1, __ATOMIC_RELEASE);
			continue;
		}
		if (nkv_store(s->cl.q, "late", 4, "x", 1, 0, &res) || res.status != NKV_SC_INVALID_NS)
			s->bad++;
		else
			s->refused++;
	}
	return NULL;
}

Test(rpc, namespace_remove_under_a_store_storm, .timeout = 120)
{
	struct storm s = { 0 };
	struct json_object *r;
	struct nkv_result res;
	struct nkv_ns_info nsi[8];
	struct tl_client other;
	char buf[32];
	pthread_t t;
	int i;

	rpc_proc_stop(&T);
	cr_assert_eq(rpc_proc_start(&T, (const char *const[]){ "--ns-map", "2=two,5=five",
							     "--log-level", "info", NULL }), 0);
	cr_assert_eq(tl_client_open(T.uri, &s.cl), 0);	/* on nsid 2, the first */
	cr_assert_eq(pthread_create(&t, NULL, storm_main, &s), 0);
	for (i = 0; i < 30000 && !__atomic_load_n(&s.go, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	r = call_ok("namespace_remove", "{\"nsid\":2}");
	cr_expect_eq(rpc_int(rpc_result(r), "nsid"), 2);
	json_object_put(r);
	pthread_join(t, NULL);
	cr_expect_geq(s.acked, 200, "the storm ran before the removal");
	cr_expect_eq(s.refused, 50, "every command after it answered");
	cr_expect_eq(s.bad, 0, "no mismatch, error, or success after Invalid Namespace");
	/* The first refusal's status, seen again directly. */
	cr_assert_eq(nkv_retrieve(s.cl.q, "s1", 2, buf, sizeof(buf), &res), 0);
	cr_expect_eq(res.status, NKV_SC_INVALID_NS);
	cr_expect(rpc_proc_log_has(&T, "event=namespace_changed nsid=2"));
	cr_expect_eq(nkv_ctrl_namespaces(s.cl.c, nsi, 8), 1, "Identify no longer lists it");
	cr_expect_eq(nsi[0].nsid, 5);
	r = call_ok("namespace_list", NULL);
	cr_expect_null(ns_of(rpc_result(r), 2));
	cr_expect_not_null(ns_of(rpc_result(r), 5));
	json_object_put(r);
	call_err("namespace_remove", "{\"nsid\":2}", -32002, "no namespace 2");
	tl_client_close(&s.cl);
	/* The others serve on; the nsid can be added again, empty. */
	cr_assert_eq(tl_client_open(T.uri, &other), 0);
	cr_expect_eq(store_retrieve(&other, "on5", "five"), 0);
	tl_client_close(&other);
	r = call_ok("namespace_add", "{\"nsid\":2,\"name\":\"again\"}");
	cr_expect_eq(rpc_int(rpc_result(r), "keys"), 0);
	json_object_put(r);
	/* Under make SAN=asan the target is the ASan build: an error ends it. */
	cr_expect(rpc_proc_alive(&T), "the target is still up");
}

/* Until c's library has met a Namespace Attribute Changed notice (its
 * AER completes on the target's poll thread, a moment after the RPC). */
static int changed_within(struct nkv_ctrl *c, unsigned ms)
{
	unsigned i;
	int rc = 0;

	for (i = 0; i < ms && !(rc = nkv_ctrl_ns_changed(c)); i++)
		usleep(1000);
	return rc;
}

Test(rpc, a_connected_client_is_told_of_add_and_remove)
{
	struct nkv_ns_info nsi[8];
	struct json_object *r;
	struct tl_client old;

	cr_assert_eq(tl_client_open(T.uri, &old), 0);	/* connected before either */
	cr_expect_eq(nkv_ctrl_ns_changed(old.c), 0, "nothing changed yet");
	r = call_ok("namespace_add", "{\"nsid\":3,\"name\":\"three\"}");
	json_object_put(r);
	cr_assert_eq(changed_within(old.c, 3000), 1, "the add is noticed");
	cr_expect_eq(nkv_ctrl_ns_changed(old.c), 0, "told once");
	cr_assert_eq(nkv_ctrl_namespaces(old.c, nsi, 8), 2);
	cr_expect_eq(nsi[1].nsid, 3);
	r = call_ok("namespace_remove", "{\"nsid\":3}");
	json_object_put(r);
	cr_assert_eq(changed_within(old.c, 3000), 1, "the removal is noticed (the log was read)");
	cr_assert_eq(nkv_ctrl_namespaces(old.c, nsi, 8), 1);
	cr_expect_eq(nsi[0].nsid, 1);
	cr_expect_eq(store_retrieve(&old, "still", "here"), 0, "the client's own namespace serves on");
	tl_client_close(&old);
}

/* Controllers read their MDTS at connect: a namespace whose values need
 * a larger transfer is refused, one that fits is not. */
Test(rpc, namespace_add_within_the_transfer_size)
{
	struct json_object *r;

	rpc_proc_stop(&T);
	cr_assert_eq(rpc_proc_start(&T, (const char *const[]){ "--max-value", "1M", NULL }), 0);
	call_err("namespace_add", "{\"nsid\":2,\"name\":\"big\",\"max_value\":2097152}",
		 -32602, "does not fit the transfer size");
	r = call_ok("namespace_add", "{\"nsid\":2,\"name\":\"small\",\"max_value\":65536}");
	cr_expect_eq(rpc_int(rpc_result(r), "max_value"), 65536);
	json_object_put(r);
}

/* The namespace nsid in a namespace_list result, or NULL. */
static struct json_object *ns_of(struct json_object *list, long long nsid)
{
	size_t i;

	for (i = 0; i < json_object_array_length(list); i++)
		if (rpc_int(json_object_array_get_idx(list, i), "nsid") == nsid)
			return json_object_array_get_idx(list, i);
	return NULL;
}

/* A target serving only nsid 5: a namespace added as 2 is the first KV
 * one, the one a new libnkv client picks. */
Test(rpc, namespace_add_serves_a_new_namespace_live)
{
	struct json_object *r, *ns;
	struct nkv_ns_info nsi[8];
	struct nkv_ctrl_info info;
	struct tl_client old, cl;
	int n;

	rpc_proc_stop(&T);
	cr_assert_eq(rpc_proc_start(&T, (const char *const[]){ "--ns-map", "5=five", "--log-level", "info", NULL }), 0);
	cr_assert_eq(tl_client_open(T.uri, &old), 0);	/* connected before the add */
	r = call_ok("namespace_add", "{\"nsid\":2,\"name\":\"two\",\"capacity\":1048576,"
		    "\"evict\":\"lru\"}");
	cr_expect_eq(rpc_int(rpc_result(r), "nsid"), 2);
	cr_expect_eq(rpc_int(rpc_result(r), "capacity"), 1048576);
	json_object_put(r);
	cr_expect(rpc_proc_log_has(&T, "event=namespace_changed nsid=2"));

	/* Identify shows it, to the old client too; a new one uses it. */
	n = nkv_ctrl_namespaces(old.c, nsi, 8);
	cr_assert_eq(n, 2);
	cr_expect_eq(nsi[0].nsid, 2);
	cr_expect_eq(nsi[0].capacity, 1048576);
	cr_expect_eq(store_retrieve(&old, "on5", "five"), 0, "the namespace in use still serves");
	cr_assert_eq(tl_client_open(T.uri, &cl), 0);
	cr_assert_eq(nkv_ctrl_get_info(cl.c, &info), 0);
	cr_expect_eq(info.nsid, 2);
	cr_expect_eq(store_retrieve(&cl, "on2", "two"), 0);
	r = call_ok("namespace_list", NULL);
	ns = ns_of(rpc_result(r), 2);
	cr_assert_not_null(ns);
	cr_expect_eq(rpc_int(ns, "keys"), 1);
	cr_expect_eq(rpc_int(ns_of(rpc_result(r), 5), "keys"), 1);
	json_object_put(r);
	tl_client_close(&cl);
	tl_client_close(&old);

	call_err("namespace_add", "{\"nsid\":2,\"name\":\"again\"}", -32602, "nsid 2 is in use");
	call_err("namespace_add", "{\"nsid\":33,\"name\":\"x\"}", -32602, "nsid");
	call_err("namespace_add", "{\"nsid\":3,\"name\":\"\"}", -32602, "name");
	call_err("namespace_add", "{\"nsid\":3,\"name\":\"x\",\"backend\":\"nope\"}", -32602,
		 "nope");
	call_err("namespace_add", "{\"nsid\":3,\"name\":\"x\",\"pool\":\"p\"}", -32602, "pool");
	call_err("namespace_add", "{\"nsid\":3,\"name\":\"x\",\"evict\":1}", -32602, "evict");
	call_err("namespace_add", "{\"nsid\":3}", -32602, "missing param 'name'");
	r = call_ok("namespace_list", NULL);
	cr_expect_eq(json_object_array_length(rpc_result(r)), 2, "a refused add left a namespace");
	json_object_put(r);
	assert_data_path("after");
}

/* text on a connection of its own: the response's code. */
static int raw_code(const char *text, int *closed)
{
	struct json_object *r;
	int fd = rpc_connect(T.rsock), code = 1;
	char b;

	cr_assert_geq(fd, 0);
	cr_assert_eq(rpc_send(fd, text), 0);
	r = rpc_read(fd, 10000);
	cr_assert_not_null(r, "no response to %s", text);
	code = rpc_code(r);
	cr_expect(json_object_object_get_ex(r, "id", NULL), "a response without an id member");
	json_object_put(r);
	if (closed)
		*closed = rpc_read(fd, 2000) == NULL && recv(fd, &b, 1, MSG_DONTWAIT) == 0;
	close(fd);
	return code;
}

Test(rpc, jsonrpc_errors)
{
	int closed = 0;

	cr_expect_eq(raw_code("{bad json}\n", &closed), -32700);
	cr_expect(closed, "a parse error leaves the connection open");
	cr_expect(rpc_proc_log_has(&T, "reason=parse_error"));
	cr_expect_eq(raw_code("[1,2]\n", NULL), -32600);
	cr_expect_eq(raw_code("42\n", NULL), -32600);
	cr_expect_eq(raw_code("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"rpc_list\"}", NULL), -32600);
	cr_expect_eq(raw_code("{\"jsonrpc\":\"2.0\",\"id\":1}", NULL), -32600);
	cr_expect_eq(raw_code("{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"rpc_list\"}", NULL),
		     -32600);
	cr_expect_eq(raw_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"nope\"}", NULL), -32601);
	cr_expect_eq(raw_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"stats_get\","
			      "\"params\":[1]}", NULL), -32602);
	call_err("stats_get", "{\"nsid\":-1}", -32602, "nsid");
	call_err("stats_get", "{\"nsid\":1,\"x\":2}", -32602, "unknown param 'x'");
}

Test(rpc, notification_gets_no_response_and_requests_pipeline)
{
	int fd = rpc_connect(T.rsock);
	struct json_object *r;

	cr_assert_geq(fd, 0);
	/* A notification, then two requests in one write, no delimiter. */
	cr_assert_eq(rpc_send(fd, "{\"jsonrpc\":\"2.0\",\"method\":\"rpc_list\"}"
			      "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"namespace_list\"}"
			      "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"rpc_list\"}\n"), 0);
	r = rpc_read(fd, 5000);
	cr_assert_not_null(r);
	cr_expect_str_eq(json_object_get_string(json_object_object_get(r, "id")), "a");
	json_object_put(r);
	r = rpc_read(fd, 5000);
	cr_assert_not_null(r);
	cr_expect_eq(rpc_int(r, "id"), 7);
	json_object_put(r);
	close(fd);
}

/* ---- hostile clients; the data path and the RPC keep serving ---- */

Test(rpc, request_of_10mib_is_refused_and_closed)
{
	size_t total = 10u << 20, sent = 0;
	char *big = malloc(65536);
	struct json_object *r;
	int fd = rpc_connect(T.rsock), rc = 0;
	time_t t0 = time(NULL);

	cr_assert_not_null(big);
	cr_assert_geq(fd, 0);
	memset(big, 'A', 65536);
	cr_assert_eq(rpc_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"rpc_list\","
			      "\"params\":{\"x\":\""), 0);
	/* The target stops reading past 1 MiB: the send fails or blocks. */
	while (sent < total && time(NULL) - t0 < 10) {
		ssize_t n = send(fd, big, 65536, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EAGAIN) {
			r = rpc_read(fd, 100);
			if (r) {
				rc = rpc_code(r);
				json_object_put(r);
				break;
			}
			continue;
		}
		if (n < 0)
			break;
		sent += (size_t)n;
	}
	if (!rc && (r = rpc_read(fd, 2000))) {
		rc = rpc_code(r);
		json_object_put(r);
	}
	cr_expect(sent < total, "the target took all 10 MiB");
	/* The error line, unless the reset overtook it. */
	cr_expect(rc == -32600 || rc == 0, "code %d", rc);
	cr_expect(rpc_proc_log_has(&T, "reason=request_too_large"));
	close(fd);
	free(big);
	assert_data_path("big");
	json_object_put(call_ok("rpc_list", NULL));
	cr_assert(rpc_proc_alive(&T));
}

Test(rpc, thousand_connections_refused_past_the_cap)
{
	struct rlimit rl = { 4096, 4096 };
	static int fds[1000];
	struct json_object *r;
	struct tl_client cl;
	int i, refused = 0, open_ok = 0;

	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < 2048) {
		rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	cr_assert_eq(tl_client_open(T.uri, &cl), 0);	/* a client from before the flood */
	for (i = 0; i < 1000; i++) {
		fds[i] = rpc_connect(T.rsock);
		open_ok += fds[i] >= 0;
	}
	cr_expect_eq(open_ok, 1000);
	/* The data path serves, on the old client and a new one. */
	cr_expect_eq(store_retrieve(&cl, "flood", "v"), 0);
	assert_data_path("flood2");
	for (i = 0; i < 1000; i++) {
		if (fds[i] < 0)
			continue;
		r = rpc_read(fds[i], 50);
		if (r && rpc_code(r) == -32000)
			refused++;
		json_object_put(r);
	}
	/* 64 held, the rest told why and closed */
	cr_expect_geq(refused, 900, "only %d refused with -32000", refused);
	cr_expect(rpc_proc_log_has(&T, "event=rpc_conn_refused reason=max_conns max=64"));
	for (i = 0; i < 1000; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	for (i = 0; i < 100 && !(r = rpc_call(&T, "rpc_list", NULL)); i++)
		usleep(20000);
	cr_expect_not_null(r, "the RPC server does not serve after the flood");
	cr_expect_eq(rpc_code(r), 0);
	json_object_put(r);
	tl_client_close(&cl);
	cr_assert(rpc_proc_alive(&T));
}

struct dribble {
	int fd;
	int code;
};

/* One byte every 50 ms of a request that would take 10 s. */
static void *dribbler(void *arg)
{
	struct dribble *d = arg;
	const char *req = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"rpc_list\",\"params\":"
			  "{\"pad\":\"................................................"
			  "....................................................................."
			  "....................................................................."
			  "..............................................\"}}\n";
	struct json_object *r;
	size_t i;

	for (i = 0; req[i]; i++) {
		if (send(d->fd, &req[i], 1, MSG_NOSIGNAL) != 1)
			break;
		r = rpc_read(d->fd, 50);
		if (r) {
			d->code = rpc_code(r);
			json_object_put(r);
			break;
		}
	}
	return NULL;
}

Test(rpc, slow_sender_is_cut_off, .timeout = 30)
{
	struct dribble d = { rpc_connect(T.rsock), 0 };
	struct tl_client cl;
	pthread_t t;
	int n = 0;

	cr_assert_geq(d.fd, 0);
	cr_assert_eq(tl_client_open(T.uri, &cl), 0);
	cr_assert_eq(pthread_create(&t, NULL, dribbler, &d), 0);
	/* Meanwhile the data path and other RPC clients are served. */
	for (n = 0; n < 20; n++) {
		char key[16];

		snprintf(key, sizeof(key), "slow%d", n);
		cr_expect_eq(store_retrieve(&cl, key, "v"), 0);
		json_object_put(call_ok("namespace_list", NULL));
		usleep(100000);
	}
	pthread_join(t, NULL);
	cr_expect_eq(d.code, -32600, "the slow request got %d, want -32600 after 5 s", d.code);
	cr_expect(rpc_proc_log_has(&T, "reason=request_timeout"));
	close(d.fd);
	tl_client_close(&cl);
	cr_assert(rpc_proc_alive(&T));
}

static const char *backend_of(struct json_object *list, long long nsid)
{
	struct json_object *ns = ns_of(list, nsid), *v;

	return ns && json_object_object_get_ex(ns, "backend", &v) ? json_object_get_string(v) : "";
}

/* --ns-map entries name their backend and its options; --backend stays
 * the default; a bad entry stops the target before it serves, saying why. */
Test(rpc, ns_map_names_a_backend_per_namespace)
{
	char map[256], dir[] = "/tmp/nkv-nsmap-XXXXXX", rm[64];
	struct json_object *r;
	struct tl_client cl;
	struct rpc_proc bad;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(map, sizeof(map), "1=one,2=two:backend=rocksdb:db=%s/db2,3=three:ro:evict=lru",
		 dir);
	rpc_proc_stop(&T);
	cr_assert_eq(rpc_proc_start(&T, (const char *const[]){ "--ns-map", map, NULL }), 0);
	r = call_ok("namespace_list", NULL);
	cr_expect_str_eq(backend_of(rpc_result(r), 1), "mem");
	cr_expect_str_eq(backend_of(rpc_result(r), 2), "rocksdb");
	cr_expect_str_eq(backend_of(rpc_result(r), 3), "mem");
	cr_expect(json_object_get_boolean(json_object_object_get(ns_of(rpc_result(r), 3),
								 "read_only")));
	json_object_put(r);
	cr_assert_eq(tl_client_open(T.uri, &cl), 0);
	cr_expect_eq(store_retrieve(&cl, "k", "v"), 0);
	tl_client_close(&cl);
	rpc_proc_stop(&T);	/* the database closed before its directory goes */
	snprintf(rm, sizeof(rm), "rm -rf %s", dir);
	cr_expect_eq(system(rm), 0);

	cr_expect_eq(rpc_proc_start(&bad, (const char *const[]){ "--ns-map", "1=a:backend=nope",
								 NULL }), -ECHILD);
	cr_expect_eq(bad.status, 2, "a usage error");
	cr_expect(rpc_proc_log_has(&bad, "nope"), "the log names the unknown backend");
	rpc_proc_stop(&bad);
	cr_expect_eq(rpc_proc_start(&bad, (const char *const[]){ "--ns-map", "1=a:bogus",
								 NULL }), -ECHILD);
	cr_expect(rpc_proc_log_has(&bad, "suffix 'bogus'"));
	rpc_proc_stop(&bad);
	cr_expect_eq(rpc_proc_start(&bad, (const char *const[]){ "--ns-map", "1=a:db=/x",
								 NULL }), -ECHILD);
	cr_expect(rpc_proc_log_has(&bad, "db"), "mem takes no db option: said");
	rpc_proc_stop(&bad);
}

/* The tcp connection of a connection_list result with qid 0 (the admin
 * queue): its id, or -1. */
static long long tcp_admin_id(struct json_object *list, int *tcp_conns)
{
	long long id = -1;
	size_t i;

	*tcp_conns = 0;
	for (i = 0; i < json_object_array_length(list); i++) {
		struct json_object *o = json_object_array_get_idx(list, i), *v;

		if (!json_object_object_get_ex(o, "transport", &v) ||
		    strcmp(json_object_get_string(v), "tcp"))
			continue;
		(*tcp_conns)++;
		if (rpc_int(o, "qid") == 0 && json_object_object_get_ex(o, "hostnqn", &v) &&
		    strlen(json_object_get_string(v)) > 0)
			id = rpc_int(o, "id");
	}
	return id;
}

/* A target on tcp: alone serves the control socket: its NVMe/TCP
 * connections listed (host NQN, queue) and one ended, the TCP server's
 * counters in stats_get, target_set (vfio-user's settings) refused. */
Test(rpc, tcp_only_target_lists_and_ends_tcp_connections, .timeout = 60)
{
	struct nkv_qpair_opts qo = { .size = sizeof(qo), .depth = 4 };
	struct json_object *r, *st;
	struct tl_client cl;
	char uri[64], params[96];
	long long admin;
	int n, i;

	rpc_proc_stop(&T);
	cr_assert_eq(rpc_proc_start_tcp(&T, NULL), 0, "a tcp-only target with --rpc-socket");
	snprintf(uri, sizeof(uri), "tcp:127.0.0.1:%u", T.port);
	cr_assert_eq(nkv_ctrl_connect(uri, NULL, &cl.c), 0);
	cr_assert_eq(nkv_qpair_create(cl.c, &qo, &cl.q), 0);
	cr_assert_eq(store_retrieve(&cl, "overtcp", "v"), 0);
	r = call_ok("connection_list", NULL);
	admin = tcp_admin_id(rpc_result(r), &n);
	json_object_put(r);
	cr_expect_geq(n, 2, "the front's admin and I/O connections");
	cr_assert_geq(admin, 1, "the admin queue listed with its host NQN");
	r = call_ok("stats_get", NULL);
	cr_expect(json_object_object_get_ex(rpc_result(r), "nvme_tcp", &st));
	cr_expect_geq(rpc_int(st, "commands"), 2);
	cr_expect_geq(rpc_int(st, "assocs"), 1);
	cr_expect_not(json_object_object_get_ex(rpc_result(r), "vfio_user", NULL),
		      "no vfio-user listener: no such part");
	json_object_put(r);
	call_err("target_set", "{\"max_conns\":4}", -32001, "NVMe/TCP only");
	call_err("connection_close", "{\"id\":1,\"transport\":\"vfio-user\"}", -32602,
		 "not a transport this target listens on");
	snprintf(params, sizeof(params), "{\"id\":%lld}", admin);
	r = call_ok("connection_close", params);
	cr_expect_str_eq(json_object_get_string(json_object_object_get(rpc_result(r),
								       "transport")), "tcp");
	json_object_put(r);
	cr_expect(rpc_proc_log_has(&T, "event=tcp_conn_closed_by_rpc"));
	for (i = 0; i < 200; i++) {	/* gone from the list once the poll thread ended it */
		r = call_ok("connection_list", NULL);
		n = 0;
		if (json_object_array_length(rpc_result(r)) == 0 ||
		    tcp_admin_id(rpc_result(r), &n) != admin) {
			json_object_put(r);
			break;
		}
		json_object_put(r);
		usleep(10000);
	}
	cr_expect_lt(i, 200, "the closed admin queue is no longer listed");
	tl_client_close(&cl);
	cr_expect(rpc_proc_alive(&T));
}

/* Issue 46's goal: each live setting changed on a running target under
 * load, its effect seen by a client, nothing lost. One client storms
 * Store/Retrieve pairs (every value read back whole, or 81h while the
 * capacity is low) while each setting changes in turn and a second
 * client observes it: the log level (a debug line), max_conns (a new
 * client refused, the storm's connection kept), the handshake timeout (a
 * silent client closed early), the idle and message timeouts, the poll
 * interval, and the namespace's capacity, max_keys and eviction. */
Test(rpc, every_live_setting_under_a_storm, .timeout = 120)
{
	struct full_storm s = { 0 };
	struct tl_client b;
	char c;
	int fd;

	storm_start(&s, "64M", 50);

	json_object_put(call_ok("log_level_set", "{\"level\":\"debug\"}"));
	json_object_put(call_ok("rpc_list", NULL));
	cr_expect(rpc_proc_log_has(&T, "level=debug"), "a debug line appears");
	json_object_put(call_ok("log_level_set", "{\"level\":\"warn\"}"));

	json_object_put(call_ok("target_set", "{\"max_conns\":1}"));
	cr_expect_neq(tl_client_open(T.uri, &b), 0, "a second client past max_conns 1");
	json_object_put(call_ok("target_set", "{\"max_conns\":16}"));
	cr_assert_eq(tl_client_open(T.uri, &b), 0, "served again at 16");
	cr_expect_eq(store_retrieve(&b, "second", "client"), 0);
	tl_client_close(&b);

	json_object_put(call_ok("target_set", "{\"handshake_timeout_ms\":200,"
				"\"idle_timeout_ms\":30000,\"msg_timeout_ms\":2000,"
				"\"poll_interval_ns\":20000}"));
	fd = rpc_connect(T.vsock);	/* says nothing: closed at the new handshake limit */
	cr_assert_geq(fd, 0);
	cr_expect_eq(rpc_read(fd, 3000), NULL);
	cr_expect_eq(recv(fd, &c, 1, MSG_DONTWAIT), 0, "closed by the target within 3 s");
	close(fd);
	cr_expect(acked_past(&s, 50, 20000), "the storm goes on at the new poll interval");

	json_object_put(set_ok("{\"nsid\":1,\"capacity\":65536}"));
	usleep(200000);
	cr_expect_gt(s.full, 0, "Stores past the lowered capacity answered 81h");
	json_object_put(set_ok("{\"nsid\":1,\"evict\":\"lru\"}"));
	cr_expect(acked_past(&s, 50, 20000), "stored again by evicting");
	json_object_put(set_ok("{\"nsid\":1,\"capacity\":67108864,\"evict\":\"none\","
			       "\"max_keys\":100000}"));
	cr_expect(acked_past(&s, 50, 20000), "stored again once raised");
	storm_end(&s);
}
