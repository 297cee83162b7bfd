/* SPDX-License-Identifier: MIT */
/*
 * The rocksdb backend through the nkv-target program, killed: a Store and
 * Delete storm (4 KiB and 2 MiB values, several clients, each over its
 * own connection) while nkv-target is SIGKILLed at a random point, then
 * restarted on the same directory, for NKV_CRASH_ROUNDS rounds (default
 * 20). Every command whose completion a client saw must be reflected
 * exactly (the value byte for byte, or absent after its Delete); a
 * command in flight at the kill may have happened or not; no key may
 * return a value it was never given.
 *
 * And at a clean restart, the start-up line that says what the database
 * kept (event=recovered: keys, bytes, open_ms).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "nkv_host.h"
#include "storm_val.h"
#include "target/backends/registry.h"
#include "target/backends/rocksdb.h"

TestSuite(rocks_crash, .timeout = 240);

#define CLIENTS 3
#define KEYS 8
#define BIG STORM_BIG

static struct storm_key ks[CLIENTS][KEYS];
static char dir[64], sock[128], target[512];
static pid_t tpid;
static unsigned long acks;	/* atomic: completions seen, all rounds */

/* nkv-target on dir, its stderr on errfd (-1: ours) at level. */
static void start_target_log(int errfd, const char *level)
{
	struct stat st;
	int i;

	unlink(sock);
	tpid = fork();
	cr_assert_geq(tpid, 0);
	if (!tpid) {
		if (errfd >= 0)
			dup2(errfd, 2);
		execl(target, "nkv-target", "--socket", sock, "--backend", "rocksdb", "--db", dir,
		      "--capacity", "8G", "--max-value", "4M", "--log-level", level, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 1000 && stat(sock, &st); i++)
		usleep(10000);
	cr_assert_eq(stat(sock, &st), 0, "nkv-target did not start");
}

static void start_target(void)
{
	start_target_log(-1, "error");
}

static void kill_target(void)
{
	int status;

	kill(tpid, SIGKILL);
	waitpid(tpid, &status, 0);
}

static int connect_qp(struct nkv_ctrl **c, struct nkv_qpair **q)
{
	struct nkv_qpair_opts o = { .size = sizeof(o), .depth = 4, .slot_size = BIG };
	char uri[160];

	snprintf(uri, sizeof(uri), "vfio-user:%s", sock);
	if (nkv_ctrl_connect(uri, NULL, c))
		return -1;
	if (nkv_qpair_create(*c, &o, q)) {
		nkv_ctrl_close(*c);
		return -1;
	}
	return 0;
}

struct client {
	int id;
	unsigned seed;
	uint32_t next;	/* the next version to store */
};

/* Storm until the target dies (any call fails). */
static void *client_run(void *arg)
{
	struct client *cl = arg;
	uint8_t *buf = malloc(BIG);
	struct nkv_result res;
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	char key[16];
	int k, rc;

	if (!buf || connect_qp(&c, &q)) {
		free(buf);
		return NULL;
	}
	for (;;) {
		k = rand_r(&cl->seed) % KEYS;
		storm_key_name(key, sizeof(key), cl->id, k);
		if (rand_r(&cl->seed) % 4 == 0) {
			ks[cl->id][k].sent = 0;
			rc = nkv_delete(q, key, (uint32_t)strlen(key), &res);
		} else {
			uint32_t v = cl->next++;

			storm_fill(buf, cl->id, k, v);
			ks[cl->id][k].sent = v;
			rc = nkv_store(q, key, (uint32_t)strlen(key), buf, storm_len(v), 0, &res);
		}
		if (rc || (res.status && res.status != NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS)))
			break;	/* the target is gone: this one stays in flight */
		ks[cl->id][k].acked = ks[cl->id][k].sent;
		__atomic_add_fetch(&acks, 1, __ATOMIC_RELAXED);
	}
	nkv_ctrl_close(c);
	free(buf);
	return NULL;
}

/* After a restart: each key holds its acked version or its in-flight
 * one, nothing else; both become that. */
static void verify(void)
{
	uint8_t *got = malloc(BIG), *want = malloc(BIG);
	struct nkv_result res;
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	char key[16];
	int ci, k;
	int64_t v;

	cr_assert(got && want);
	cr_assert_eq(connect_qp(&c, &q), 0);
	for (ci = 0; ci < CLIENTS; ci++)
		for (k = 0; k < KEYS; k++) {
			struct storm_key *s = &ks[ci][k];

			storm_key_name(key, sizeof(key), ci, k);
			cr_assert_eq(nkv_retrieve(q, key, (uint32_t)strlen(key), got, BIG, &res), 0);
			if (res.status) {
				cr_assert_eq(res.status, NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS));
				cr_assert(!s->acked || !s->sent, "%s: acked v%u lost", key, s->acked);
				s->acked = s->sent = 0;
				continue;
			}
			v = storm_match(s, ci, k, got, res.dw0, want);
			cr_assert(v >= 0, "%s: a value never given, or torn (acked v%u, sent v%u, %u B)",
				  key, s->acked, s->sent, res.dw0);
			s->acked = s->sent = (uint32_t)v;
		}
	nkv_ctrl_close(c);
	free(got);
	free(want);
}

/* The database, SIGKILLed with no command in flight after verify(),
 * opened by the backend itself: its key and byte counts (the key index
 * rebuilt from the database) are exactly those of the keys verify()
 * found. */
static void check_counts(void)
{
	struct nkv_be_param p[1] = { { "db", dir } };
	struct nkv_be_conf c = { sizeof(c), .capacity = 8ull << 30, .max_value = 4u << 20,
				 .params = p, .nparams = 1 };
	uint64_t keys = 0, bytes = 0;
	struct nkv_be *be;
	char err[256], key[16];
	int ci, k;

	for (ci = 0; ci < CLIENTS; ci++)
		for (k = 0; k < KEYS; k++)
			if (ks[ci][k].acked) {
				storm_key_name(key, sizeof(key), ci, k);
				keys++;
				bytes += nkv_be_rocks_key_cost((uint32_t)strlen(key),
							       storm_len(ks[ci][k].acked));
			}
	be = nkv_be_create("rocksdb", &c, err, sizeof(err));
	cr_assert_not_null(be, "%s", err);
	cr_assert_eq(be->ops->keys_used(be), keys, "keys recounted after SIGKILL");
	cr_assert_eq(be->ops->bytes_used(be), bytes, "bytes recounted after SIGKILL");
	be->ops->destroy(be);
}


/* The built nkv-target, a fresh database directory and a socket. */
static void find_target(void)
{
	ssize_t n = readlink("/proc/self/exe", target, sizeof(target) - 40);

	cr_assert_gt(n, 0);
	target[n] = 0;
	strcpy(strrchr(target, '/'), "/../bin/nkv-target");
	if (access(target, X_OK))
		cr_skip_test("no nkv-target next to the tests (%s)", target);
	snprintf(dir, sizeof(dir), "/tmp/nkv-crash-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s.sock", dir);
}

/* Remove the database and the socket, and the lock a killed target left. */
static void remove_all(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s' '%s.lock'", dir, sock, sock);
	cr_assert_eq(system(cmd), 0);
}

/* SIGTERM the target; everything it wrote to the pipe rfd until then. */
static void stop_target_read(int rfd, char *out, size_t size)
{
	size_t len = 0;
	ssize_t n;
	int st;

	kill(tpid, SIGTERM);
	while (len < size - 1 && (n = read(rfd, out + len, size - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = 0;
	close(rfd);
	cr_assert_eq(waitpid(tpid, &st, 0), tpid);
	cr_assert(WIFEXITED(st) && !WEXITSTATUS(st), "wait status %#x: %s", st, out);
}

/* A failed assertion leaves no target behind. */
static void kill_leftover(void)
{
	if (tpid > 0 && !waitpid(tpid, NULL, WNOHANG)) {
		kill(tpid, SIGKILL);
		waitpid(tpid, NULL, 0);
	}
}

/* At start, each namespace says what it holds: what the database kept
 * (keys and bytes, as the stats line said at the last shutdown) and how
 * long its open took. */
Test(rocks_crash, a_restart_says_what_it_recovered, .fini = kill_leftover)
{
	static uint8_t val[4096];
	char out[16384], want[128];
	const char *stats, *rec;
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	unsigned long long bytes = 0, open_ms = 0;
	int p[2], k;

	find_target();
	cr_assert_eq(pipe(p), 0);
	start_target_log(p[1], "info");
	close(p[1]);
	cr_assert_eq(connect_qp(&c, &q), 0);
	for (k = 0; k < 3; k++) {
		struct nkv_result res;
		char key[8];

		snprintf(key, sizeof(key), "rec-%d", k);
		memset(val, 'a' + k, sizeof(val));
		cr_assert_eq(nkv_store(q, key, (uint32_t)strlen(key), val, sizeof(val), 0, &res), 0);
		cr_assert_eq(res.status, 0);
	}
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	stop_target_read(p[0], out, sizeof(out));
	cr_assert(strstr(out, "event=recovered nsid=1 name=gpukv backend=rocksdb keys=0 bytes=0 "
			      "open_ms="), "a new database holds nothing: %s", out);
	stats = strstr(out, "event=stats nsid=1 backend=rocksdb keys=3 bytes=");
	cr_assert_not_null(stats, "%s", out);
	cr_assert_eq(sscanf(stats, "event=stats nsid=1 backend=rocksdb keys=3 bytes=%llu", &bytes),
		     1);
	cr_assert_gt(bytes, 3 * sizeof(val));
	cr_assert_eq(pipe(p), 0);
	start_target_log(p[1], "info");
	close(p[1]);
	stop_target_read(p[0], out, sizeof(out));
	snprintf(want, sizeof(want), "level=info event=recovered nsid=1 name=gpukv backend=rocksdb "
		 "keys=3 bytes=%llu open_ms=", bytes);
	rec = strstr(out, want);
	cr_assert_not_null(rec, "want '%s' in: %s", want, out);
	cr_assert_eq(sscanf(rec + strlen(want), "%llu", &open_ms), 1);
	cr_log_info("reopened: 3 keys, %llu bytes, open_ms=%llu\n", bytes, open_ms);
	remove_all();
}

Test(rocks_crash, acknowledged_commands_survive_sigkill)
{
	const char *env = getenv("NKV_CRASH_ROUNDS");
	int rounds = env ? atoi(env) : 20, r, i;
	struct client cl[CLIENTS];
	pthread_t thr[CLIENTS];
	unsigned seed = (unsigned)time(NULL);

	find_target();
	cr_log_info("seed %u", seed);
	for (i = 0; i < CLIENTS; i++)
		cl[i] = (struct client){ i, seed + (unsigned)i, 1 };
	start_target();
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < CLIENTS; i++)
			cr_assert_eq(pthread_create(&thr[i], NULL, client_run, &cl[i]), 0);
		usleep(50000 + (useconds_t)(rand_r(&seed) % 400000));
		kill_target();
		for (i = 0; i < CLIENTS; i++)
			pthread_join(thr[i], NULL);
		start_target();
		verify();
	}
	kill_target();
	check_counts();
	cr_log_info("%lu completions seen in %d rounds", acks, rounds);
	cr_assert_geq(acks, (unsigned long)rounds, "the storm ran");
	remove_all();
}
