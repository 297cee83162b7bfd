/* SPDX-License-Identifier: MIT */
/*
 * test_metrics.c - nkv-target's metrics endpoint (--metrics,
 * src/target/metrics/, docs/metrics.md) against the built program: a
 * libnkv client Stores, Retrieves and misses; the scrape must count
 * exactly that, pass `promtool check metrics`, and a real Prometheus
 * server scraping it every second must answer the same through its
 * HTTP API. promtool and prometheus are skipped by name where absent.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <json-c/json.h>

#include "http_get.h"
#include "nkv_host.h"
#include "rpc_proc.h"

#define NSTORES 7
#define VAL "metrics-value"	/* 13 bytes */
#define NS "nsid=\"1\",name=\"gpukv\",backend=\"mem\""

static struct rpc_proc T;
static uint16_t port;
static char *scrape;

static void start(void)
{
	const char *extra[] = { "--metrics", "127.0.0.1:0", NULL };

	cr_assert_eq(rpc_proc_start(&T, extra), 0, "nkv-target did not start (see its log)");
	port = http_metrics_port(T.log);
	cr_assert_neq(port, 0, "no event=metrics_listening port= in %s", T.log);
	scrape = malloc(1 << 20);
	cr_assert_not_null(scrape);
}

static void prom_stop(void);

static void stop(void)
{
	prom_stop();	/* before its directory goes */
	rpc_proc_stop(&T);
	free(scrape);
}

TestSuite(metrics, .init = start, .fini = stop, .timeout = 120);

/* NSTORES Stores of distinct keys, one Retrieve that hits, one that
 * misses (a Key Does Not Exist error): what the series must show. */
static void workload(void)
{
	struct nkv_qpair_opts o = { .size = sizeof(o), .depth = 4 };
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	struct nkv_result res;
	char key[16], got[64];
	int i;

	cr_assert_eq(nkv_ctrl_connect(T.uri, NULL, &c), 0, "cannot connect");
	cr_assert_eq(nkv_qpair_create(c, &o, &q), 0);
	for (i = 0; i < NSTORES; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		cr_assert_eq(nkv_store(q, key, (uint32_t)strlen(key), VAL, sizeof(VAL) - 1, 0, &res), 0);
		cr_assert_eq(res.status, 0);
	}
	cr_assert_eq(nkv_retrieve(q, "k0", 2, got, sizeof(got), &res), 0);
	cr_assert_eq(res.status, 0);
	cr_assert_eq(nkv_retrieve(q, "none", 4, got, sizeof(got), &res), 0);
	cr_assert_neq(res.status, 0, "a missing key was found");
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
}

static double series(const char *s)
{
	return http_series(scrape, s);
}

static void get_scrape(void)
{
	cr_assert_eq(http_get(port, "/metrics", scrape, 1 << 20), 200, "GET /metrics");
}

Test(metrics, scrape_counts_what_the_client_did)
{
	workload();
	get_scrape();
	cr_expect_eq(series("nkv_commands_total{" NS ",op=\"store\"}"), NSTORES);
	cr_expect_eq(series("nkv_commands_total{" NS ",op=\"retrieve\"}"), 2);
	cr_expect_eq(series("nkv_commands_total{" NS ",op=\"delete\"}"), 0);
	cr_expect_eq(series("nkv_namespace_keys{" NS "}"), NSTORES);
	cr_expect_eq(series("nkv_namespace_capacity_bytes{" NS "}"), 64 << 20);
	cr_expect_gt(series("nkv_namespace_used_bytes{" NS "}"), NSTORES * (sizeof(VAL) - 1));
	cr_expect_eq(series("nkv_data_bytes_total{" NS ",direction=\"in\"}"),
		     NSTORES * (sizeof(VAL) - 1));
	cr_expect_eq(series("nkv_data_bytes_total{" NS ",direction=\"out\"}"), sizeof(VAL) - 1);
	/* KV 1.0: Key Does Not Exist is generic status (SCT 0) 87h. */
	cr_expect_eq(series("nkv_command_errors_total{" NS ",op=\"retrieve\",status=\"0x087\"}"), 1,
		     "%s", strstr(scrape, "nkv_command_errors_total{") ?: "no error series");
	cr_expect_eq(series("nkv_command_duration_seconds_count{" NS ",op=\"store\"}"), NSTORES);
	cr_expect_eq(series("nkv_command_duration_seconds_bucket{" NS ",op=\"store\",le=\"+Inf\"}"),
		     NSTORES);
	cr_expect_eq(series("nkv_backend_duration_seconds_count{" NS ",op=\"store\"}"), NSTORES);
	cr_expect_gt(series("nkv_command_duration_seconds_sum{" NS ",op=\"store\"}"), 0);
	cr_expect_eq(series("nkv_transport_accepted_total{transport=\"vfio-user\"}"), 1);
	cr_expect_eq(series("nkv_transport_refused_total{transport=\"vfio-user\"}"), 0);
	cr_expect_gt(series("nkv_vfio_user_busy_seconds_total"), 0);
	cr_expect_eq(series("nkv_vfio_user_dma_messages_total"), 0);
	cr_expect_gt(series("process_resident_memory_bytes"), 1 << 20);
	cr_expect_gt(series("process_open_fds"), 2);
	cr_expect_gt(series("process_start_time_seconds"), 1.6e9);
}

Test(metrics, other_paths_and_methods_refused)
{
	char buf[256];

	cr_expect_eq(http_get(port, "/", buf, sizeof(buf)), 404);
	cr_expect_eq(http_get(port, "/metrics/x", buf, sizeof(buf)), 404);
	get_scrape();	/* and it still serves */
}

Test(metrics, promtool_check_metrics_passes)
{
	char path[160], cmd[512];
	FILE *f;
	int st;

	if (access("/usr/bin/promtool", X_OK))
		cr_skip_test("promtool absent (Debian's prometheus package)");
	workload();
	get_scrape();
	snprintf(path, sizeof(path), "%s/scrape.txt", T.dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(scrape, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check metrics < %s > %s.out 2>&1", path, path);
	st = system(cmd);
	cr_expect_eq(st, 0, "promtool check metrics failed: see %s.out", path);
}

Test(metrics, bad_address_exits_2)
{
	static const char *const bad[] = { "1.2.3:80", "127.0.0.1:65536", "localhost:80", "x" };
	struct rpc_proc t;
	unsigned i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *extra[] = { "--metrics", bad[i], NULL };

		cr_expect_eq(rpc_proc_start(&t, extra), -ECHILD, "--metrics %s started", bad[i]);
		cr_expect_eq(t.status, 2, "--metrics %s: exit %d", bad[i], t.status);
		cr_expect(rpc_proc_log_has(&t, "bad value"), "--metrics %s: no reason", bad[i]);
		rpc_proc_stop(&t);
	}
}

/* A Prometheus server of the test's own: its config, storage and log
 * in T.dir, its web port free a moment ago (retried if taken). */
static pid_t prom_pid;
static uint16_t prom_port;

static pid_t prom_spawn(uint16_t web)
{
	char conf[160], data[160], logp[160], cf[200], sd[200], la[64];
	FILE *f;
	pid_t pid;

	snprintf(conf, sizeof(conf), "%s/prometheus.yml", T.dir);
	snprintf(data, sizeof(data), "%s/prom-data", T.dir);
	snprintf(logp, sizeof(logp), "%s/prometheus.log", T.dir);
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f, "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
		"scrape_configs:\n  - job_name: nkv\n    static_configs:\n"
		"      - targets: ['127.0.0.1:%u']\n", port);
	fclose(f);
	snprintf(cf, sizeof(cf), "--config.file=%s", conf);
	snprintf(sd, sizeof(sd), "--storage.tsdb.path=%s", data);
	snprintf(la, sizeof(la), "--web.listen-address=127.0.0.1:%u", web);
	pid = fork();
	if (!pid) {
		int fd = open(logp, O_WRONLY | O_CREAT | O_APPEND, 0644);

		dup2(fd, 1);
		dup2(fd, 2);
		execl("/usr/bin/prometheus", "prometheus", cf, sd, la, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void prom_stop(void)
{
	int i;

	if (prom_pid <= 0)
		return;
	kill(prom_pid, SIGTERM);
	for (i = 0; i < 300 && waitpid(prom_pid, NULL, WNOHANG) != prom_pid; i++)
		usleep(20000);
	if (i == 300) {
		kill(prom_pid, SIGKILL);
		waitpid(prom_pid, NULL, 0);
	}
	prom_pid = 0;
}

/* Its /-/ready answers 200 within 30 s: 1; it exited (a port taken): 0. */
static int prom_ready(void)
{
	char buf[512];
	int i;

	for (i = 0; i < 300; i++) {
		if (waitpid(prom_pid, NULL, WNOHANG) == prom_pid) {
			prom_pid = 0;
			return 0;
		}
		if (http_get(prom_port, "/-/ready", buf, sizeof(buf)) == 200)
			return 1;
		usleep(100000);
	}
	return 0;
}

/* The one value a PromQL instant query answers, or -1 (none yet). */
static double prom_query(const char *q_encoded)
{
	static char body[1 << 16];
	char path[512];
	struct json_object *j, *d, *r, *v;
	double val = -1;

	snprintf(path, sizeof(path), "/api/v1/query?query=%s", q_encoded);
	if (http_get(prom_port, path, body, sizeof(body)) != 200)
		return -1;
	j = json_tokener_parse(body);
	if (j && json_object_object_get_ex(j, "data", &d) &&
	    json_object_object_get_ex(d, "result", &r) && json_object_array_length(r) == 1 &&
	    json_object_object_get_ex(json_object_array_get_idx(r, 0), "value", &v))
		val = atof(json_object_get_string(json_object_array_get_idx(v, 1)));
	json_object_put(j);
	return val;
}

/* The query's value once it equals want, within 30 s; else the last. */
static double prom_wait(const char *q, double want)
{
	double v = -1;
	int i;

	for (i = 0; i < 150 && v != want; i++) {
		v = prom_query(q);
		if (v != want)
			usleep(200000);
	}
	return v;
}

Test(metrics, prometheus_server_scrapes_and_answers)
{
	int tries;

	if (access("/usr/bin/prometheus", X_OK))
		cr_skip_test("prometheus absent (Debian's prometheus package)");
	workload();
	for (tries = 0; tries < 3 && !prom_pid; tries++) {
		prom_port = http_free_port();
		cr_assert_neq(prom_port, 0);
		prom_pid = prom_spawn(prom_port);
		if (!prom_ready())
			prom_stop();
	}
	cr_assert_gt(prom_pid, 0, "prometheus did not start (see %s/prometheus.log)", T.dir);
	/* nkv_commands_total{op="store"} */
	cr_expect_eq(prom_wait("nkv_commands_total%7Bop%3D%22store%22%7D", NSTORES), NSTORES);
	cr_expect_eq(prom_wait("nkv_namespace_keys", NSTORES), NSTORES);
	/* nkv_command_errors_total{op="retrieve"} */
	cr_expect_eq(prom_wait("nkv_command_errors_total%7Bop%3D%22retrieve%22%7D", 1), 1);
	cr_expect_eq(prom_wait("sum(nkv_command_duration_seconds_count)", NSTORES + 2),
		     NSTORES + 2);
	cr_expect_eq(prom_wait("up%7Bjob%3D%22nkv%22%7D", 1), 1);
	prom_stop();
}

/* A key stored with a 1 s TTL and read after it passed: one expiry. */
Test(metrics, ttl_expiry_counted)
{
	struct nkv_qpair_opts o = { .size = sizeof(o), .depth = 4 };
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	struct nkv_result res;
	char got[16];

	cr_assert_eq(nkv_ctrl_connect(T.uri, NULL, &c), 0);
	cr_assert_eq(nkv_qpair_create(c, &o, &q), 0);
	cr_assert_eq(nkv_store_ttl(q, "ttl", 3, "v", 1, NKV_STORE_TTL, 1, &res), 0);
	cr_assert_eq(res.status, 0);
	get_scrape();
	cr_expect_eq(series("nkv_backend_ttl_keys{" NS "}"), 1);
	usleep(1100000);
	cr_assert_eq(nkv_retrieve(q, "ttl", 3, got, sizeof(got), &res), 0);
	cr_expect_neq(res.status, 0, "an expired key was found");
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	get_scrape();
	cr_expect_eq(series("nkv_backend_ttl_expiries_total{" NS "}"), 1);
}

/* RocksDB's own properties, per namespace, on a database of the test's. */
Test(metrics, rocksdb_figures_shown)
{
	char db[128], *buf = malloc(1 << 20);
	const char *extra[] = { "--metrics", "0", "--backend", "rocksdb", "--db", db, NULL };
	struct rpc_proc t;
	uint16_t p;

	cr_assert_not_null(buf);
	snprintf(db, sizeof(db), "%s/db", T.dir);
	cr_assert_eq(rpc_proc_start(&t, extra), 0, "rocksdb target did not start");
	p = http_metrics_port(t.log);
	cr_assert_neq(p, 0);
	cr_assert_eq(http_get(p, "/metrics", buf, 1 << 20), 200);
#define RNS "nsid=\"1\",name=\"gpukv\",backend=\"rocksdb\""
	cr_expect_eq(http_series(buf, "nkv_backend_rocksdb_write_stopped{" RNS "}"), 0);
	cr_expect_geq(http_series(buf, "nkv_backend_rocksdb_running_compactions{" RNS "}"), 0);
	cr_expect_geq(http_series(buf, "nkv_backend_rocksdb_compaction_pending{" RNS "}"), 0);
	cr_expect_eq(http_series(buf, "nkv_backend_rocksdb_writes_total{" RNS "}"), 0);
	cr_expect_eq(http_series(buf, "nkv_backend_rocksdb_owner_records_total{" RNS "}"), 0);
	cr_expect_eq(http_series(buf, "nkv_backend_rocksdb_log_syncs_apart_total{" RNS "}"), 0);
	cr_expect_eq(http_series(buf, "nkv_namespace_keys{" RNS "}"), 0);
	rpc_proc_stop(&t);
	free(buf);
}

/* nper Stores on a connection of its own: how many succeeded. */
static void *store_thread(void *arg)
{
	struct nkv_qpair_opts o = { .size = sizeof(o), .depth = 4 };
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	struct nkv_result res;
	long i, ok = 0, nper = (long)arg;
	char key[24];

	if (nkv_ctrl_connect(T.uri, NULL, &c))
		return (void *)0;
	if (!nkv_qpair_create(c, &o, &q)) {
		for (i = 0; i < nper; i++) {
			snprintf(key, sizeof(key), "t%ld", i);
			ok += !nkv_store(q, key, (uint32_t)strlen(key), VAL, sizeof(VAL) - 1, 0,
					 &res) && !res.status;
		}
		nkv_qpair_destroy(q);
	}
	nkv_ctrl_close(c);
	return (void *)ok;
}

/* Each connection's poll thread counts into tables of its own, summed at
 * the scrape: connections at once, and ones that ended (their threads
 * gone, their tables taken by later ones), all add up. */
Test(metrics, counts_of_parallel_and_ended_connections_add_up)
{
	pthread_t th[3];
	void *ok;
	long total = 0;
	int i, round;

	for (round = 0; round < 2; round++) {
		for (i = 0; i < 3; i++)
			cr_assert_eq(pthread_create(&th[i], NULL, store_thread, (void *)50L), 0);
		for (i = 0; i < 3; i++) {
			pthread_join(th[i], &ok);
			total += (long)ok;
		}
	}
	cr_assert_eq(total, 300, "stores failed: %ld of 300", total);
	get_scrape();
	cr_expect_eq(series("nkv_commands_total{" NS ",op=\"store\"}"), 300);
	cr_expect_eq(series("nkv_command_duration_seconds_count{" NS ",op=\"store\"}"), 300);
	cr_expect_eq(series("nkv_data_bytes_total{" NS ",direction=\"in\"}"), 300 * (sizeof(VAL) - 1));
	cr_expect_eq(series("nkv_transport_accepted_total{transport=\"vfio-user\"}"), 6);
}

/* A port another listener holds: exit 3 naming it, the socket removed. */
Test(metrics, port_taken_exits_3)
{
	char addr[32];
	const char *extra[] = { "--metrics", addr, NULL };
	struct rpc_proc t;

	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);	/* the suite's target's */
	cr_expect_eq(rpc_proc_start(&t, extra), -ECHILD, "a second target bound %s", addr);
	cr_expect_eq(t.status, 3, "exit %d", t.status);
	cr_expect(rpc_proc_log_has(&t, "cannot serve --metrics"), "no reason logged");
	cr_expect_neq(access(t.vsock, F_OK), 0, "its vfio-user socket was left behind");
	rpc_proc_stop(&t);
	get_scrape();	/* the first target still serves */
}
