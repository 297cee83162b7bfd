/* SPDX-License-Identifier: MIT */
/*
 * Many NVMe/TCP hosts at once, and the nkv-target program itself.
 * many: 16 threads, each its own association (admin + I/O connection),
 * each a storm of Stores and Retrieves of its own keys (1 byte .. 2 MiB,
 * inline and head-form keys), every byte checked, while another host
 * connects and vanishes mid-Store again and again. program: nkv-target
 * --listen tcp:0 as a user runs it, the bound port read from its log,
 * a Store and Retrieve over it, then SIGTERM to its PID and a clean exit.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

#include "delay_be.h"
#include "target/backends/registry.h"
#include "target/tcp/server.h"
#include "tcp_host.h"
#include "tcp_srv.h"

#define HOSTS 16
#define ROUNDS 40

static struct nkv_subsys *SS;
static struct nkv_tcp_server *S;
static uint16_t PORT;
static int STOP;	/* atomic */

static int DELAYED;	/* namespace 1 behind delay_be: completions from its thread */

static void setup(void)
{
	struct nkv_be_conf kv = { sizeof(kv), .capacity = 512 << 20, .max_value = 4 << 20 };
	char err[256];
	struct nkv_be *be = nkv_be_create("mem", &kv, err, sizeof(err));

	cr_assert(be, "%s", err);
	if (DELAYED)
		cr_assert(be = delay_be_create(be, 8, 200));
	cr_assert_eq(tcp_srv_start(be, NULL, &SS, &S, &PORT), 0);
}

static void teardown(void)
{
	tcp_srv_stop(SS, S);
}

static uint32_t lcg(uint32_t *x)
{
	*x = *x * 1664525u + 1013904223u;
	return *x >> 8;
}

struct worker {
	int id;
	int failures;
	char why[128];
};

static void fail(struct worker *w, const char *why, uint32_t a, uint32_t b)
{
	if (!w->failures++)
		snprintf(w->why, sizeof(w->why), "host %d: %s (%u, %u)", w->id, why, a, b);
}

/* One round: a key of this host's, a value of a size drawn log-uniformly
 * up to 2 MiB, stored, read back and compared, sometimes deleted. */
static void round_once(struct worker *w, struct th *io, uint32_t *x, uint8_t *v, uint8_t *back)
{
	char key[64];
	uint32_t klen, n, i, dw0, got;
	uint16_t st;

	klen = (uint32_t)snprintf(key, sizeof(key), "h%02d-k%03u%s", w->id, lcg(x) % 50,
				  lcg(x) & 1 ? "-and-a-long-tail-past-16" : "");
	n = 1u + lcg(x) % (1u << (lcg(x) % 22));
	for (i = 0; i < n; i++)
		v[i] = (uint8_t)(lcg(x) ^ (uint32_t)w->id);
	st = th_store(io, key, klen, v, n);
	if (st)
		return fail(w, "store", st, n);
	st = th_retrieve(io, key, klen, back, n, &dw0, &got);
	if (st || dw0 != n || got != n || memcmp(v, back, n))
		return fail(w, "retrieve", st, n);
	if (lcg(x) % 4 == 0 && (st = th_kv_simple(io, NKV_KV_DELETE, key, klen)))
		fail(w, "delete", st, n);
}

static void *storm(void *arg)
{
	struct worker *w = arg;
	uint8_t *v = malloc(2u << 20), *back = malloc(2u << 20);
	uint32_t x = (uint32_t)w->id * 7919u + 1;
	struct th a, io;
	int r;

	if (th_admin(&a, PORT, w->id & 1, w->id & 2, TH_SUBNQN, 0) || th_io(&io, &a, 1)) {
		fail(w, "connect", 0, 0);
	} else {
		for (r = 0; r < ROUNDS && !w->failures; r++)
			round_once(w, &io, &x, v, back);
	}
	th_close(&io);
	th_close(&a);
	free(v);
	free(back);
	return NULL;
}

/* A host that connects, starts a 1 MiB Store and vanishes, again and again. */
static void *vanisher(void *arg)
{
	uint8_t *v = calloc(1, 1u << 20);
	struct th a, io;
	struct nkv_tcp_cmd c;
	int *n = arg;

	while (!__atomic_load_n(&STOP, __ATOMIC_ACQUIRE)) {
		if (th_admin(&a, PORT, 0, 0, TH_SUBNQN, 0) || th_io(&io, &a, 1))
			break;
		memset(&c, 0, sizeof(c));
		c.ch.type = NKV_TCP_CMD;
		c.sqe.cdw0 = NKV_KV_STORE | (1u << 14) | (1u << 16);
		c.sqe.nsid = 1;
		c.sqe.cdw2 = 0x76;
		c.sqe.cdw10 = 1u << 20;
		c.sqe.cdw11 = 1;
		nkv_sqe_sgl1_set(&c.sqe, 0, 1u << 20, 0);
		c.sqe.prp2 |= (uint64_t)NKV_TCP_SGL_TRANSPORT << 56;
		th_send_pdu(&io, &c, sizeof(c), NULL, 0);
		th_close(&io);
		th_close(&a);
		__atomic_add_fetch(n, 1, __ATOMIC_RELAXED);
	}
	free(v);
	return NULL;
}

/* The control socket's view meanwhile (connection_list through the
 * server's control side): listings from another thread while every
 * connection comes and goes; how many answered. */
static void *lister(void *arg)
{
	struct nkv_tcp_conn_info *in = calloc(64, sizeof(*in));
	int *answered = arg, n;

	while (in && !__atomic_load_n(&STOP, __ATOMIC_ACQUIRE)) {
		n = nkv_tcp_server_conns(S, in, 64, 1000);
		if (n >= 0)
			__atomic_add_fetch(answered, 1, __ATOMIC_RELAXED);
		usleep(2000);
	}
	free(in);
	return NULL;
}

static void storm_all(void)
{
	struct worker w[HOSTS];
	pthread_t t[HOSTS], vt, lt;
	struct nkv_tcp_server_stats st;
	int i, vanished = 0, listed = 0;

	__atomic_store_n(&STOP, 0, __ATOMIC_RELEASE);
	pthread_create(&vt, NULL, vanisher, &vanished);
	pthread_create(&lt, NULL, lister, &listed);
	for (i = 0; i < HOSTS; i++) {
		w[i] = (struct worker){ .id = i };
		pthread_create(&t[i], NULL, storm, &w[i]);
	}
	for (i = 0; i < HOSTS; i++)
		pthread_join(t[i], NULL);
	__atomic_store_n(&STOP, 1, __ATOMIC_RELEASE);
	pthread_join(vt, NULL);
	pthread_join(lt, NULL);
	cr_expect(listed > 0, "the connections were listed during the storm");
	for (i = 0; i < HOSTS; i++)
		cr_expect_eq(w[i].failures, 0, "%s", w[i].why);
	cr_assert_gt(__atomic_load_n(&vanished, __ATOMIC_RELAXED), 0,
		     "the vanishing host came at least once");
	nkv_tcp_server_stats(S, &st);
	cr_assert_geq(st.accepted, 2 * HOSTS);
	cr_assert_geq(st.commands, 2 * HOSTS * ROUNDS, "every round's Store and Retrieve ran");
}

Test(many, sixteen_hosts_storm, .init = setup, .fini = teardown, .timeout = 240)
{
	storm_all();
}

/* connection_close's part: a host's association listed with its host
 * NQN and queue, ended by its admin connection's id (the host sees its
 * connections closed), then no longer listed; an unknown id -ENOENT. */
Test(many, a_connection_listed_and_ended, .init = setup, .fini = teardown, .timeout = 60)
{
	struct nkv_tcp_conn_info in[8];
	struct th a, io;
	uint32_t admin = 0;
	int n, i;

	cr_assert_eq(th_admin(&a, PORT, 0, 0, TH_SUBNQN, 0), 0);
	cr_assert_eq(th_io(&io, &a, 1), 0);
	n = nkv_tcp_server_conns(S, in, 8, 1000);
	cr_assert_eq(n, 2, "its admin and I/O connections");
	for (i = 0; i < n; i++) {
		cr_expect(in[i].connected);
		cr_expect(in[i].hostnqn[0], "the host NQN recorded");
		if (in[i].qid == 0)
			admin = in[i].id;
	}
	cr_assert_neq(admin, 0);
	cr_expect_eq(nkv_tcp_server_close_conn(S, 999999, 1000), -ENOENT);
	cr_assert_eq(nkv_tcp_server_close_conn(S, admin, 1000), 0);
	cr_expect_eq(th_wait_close(&a), 1, "the admin connection closed");
	cr_expect_eq(th_wait_close(&io), 1, "and its association's I/O connection");
	for (i = 0; i < 100 && (n = nkv_tcp_server_conns(S, in, 8, 1000)) > 0; i++)
		usleep(10000);
	cr_expect_eq(n, 0, "none listed once ended");
	th_close(&io);
	th_close(&a);
}

static void setup_delayed(void)
{
	DELAYED = 1;
	setup();
}

/* The same storm with completions from another thread, out of order and
 * late (delay_be): the poll thread sleeps in epoll and the backend's
 * done() wakes it through the controller's wake fd. */
Test(many, sixteen_hosts_storm_async_backend, .init = setup_delayed, .fini = teardown,
     .timeout = 240)
{
	storm_all();
}

/* BUILD/bin/nkv-target beside BUILD/tests/<this test>. */
static int target_path(char *path, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -1;
	exe[n] = 0;
	snprintf(path, len, "%s/../bin/nkv-target", dirname(exe));
	return access(path, X_OK);
}

/* Read the child's stderr until its tcp_listening line: the port. */
static uint16_t read_port(FILE *f)
{
	char line[512];
	const char *p;

	while (fgets(line, sizeof(line), f))
		if (strstr(line, "event=tcp_listening") && (p = strstr(line, " port=")))
			return (uint16_t)atoi(p + 6);
	return 0;
}

static pid_t CHILD;

/* However the test ends, the target it started ends with it. */
static void child_end(void)
{
	if (CHILD > 0) {
		kill(CHILD, SIGKILL);
		waitpid(CHILD, NULL, 0);
	}
	CHILD = 0;
}

Test(program, nkv_target_listen_tcp, .fini = child_end, .timeout = 60)
{
	char path[PATH_MAX];
	uint8_t v[100000], back[100000];
	int fds[2], status;
	uint32_t dw0, got;
	struct th a, io;
	uint16_t port;
	pid_t pid;
	FILE *f;

	if (target_path(path, sizeof(path)))
		cr_skip_test("nkv-target is not built (make programs)");
	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		dup2(fds[1], 2);
		close(fds[0]);
		execl(path, "nkv-target", "--listen", "tcp:0", "--nqn", "nqn.2026-01.io.nkv:test",
		      "--capacity", "64M", (char *)NULL);
		_exit(127);
	}
	CHILD = pid;
	close(fds[1]);
	f = fdopen(fds[0], "r");
	port = read_port(f);
	cr_assert_neq(port, 0, "nkv-target logged the port it bound");
	memset(v, 0x61, sizeof(v));
	cr_assert_eq(th_admin(&a, port, 1, 1, "nqn.2026-01.io.nkv:test", 0), 0);
	cr_assert_eq(th_io(&io, &a, 1), 0);
	cr_assert_neq(th_connect(&io, 2, a.cntlid, TH_HOSTNQN, TH_SUBNQN, 0), 0,
		      "the default NQN is not served: --nqn replaced it");
	cr_assert_eq(th_store(&io, "prog", 4, v, sizeof(v)), 0);
	cr_assert_eq(th_retrieve(&io, "prog", 4, back, sizeof(back), &dw0, &got), 0);
	cr_assert_eq(memcmp(v, back, sizeof(v)), 0);
	th_close(&io);
	th_close(&a);
	cr_assert_eq(kill(pid, SIGTERM), 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	CHILD = 0;
	fclose(f);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "clean exit: %#x", status);
}

/* Run nkv-target with argv; its exit status, its stderr's start in out. */
static int run_target_stderr(const char *path, char *const argv[], char *out, size_t len)
{
	char sink[256];
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	if (!pid) {
		dup2(fds[1], 2);
		close(fds[0]);
		execv(path, argv);
		_exit(127);
	}
	close(fds[1]);
	/* All of it (the usage follows): a closed pipe would SIGPIPE it. */
	n = read(fds[0], out, len - 1);
	out[n > 0 ? n : 0] = 0;
	while (read(fds[0], sink, sizeof(sink)) > 0)
		;
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return status;
}

/* --listen values that cannot be served: exit 2, saying what is wanted. */
Test(program, bad_listen_values, .timeout = 30)
{
	static const char *const bad[] = { "tcp:", "tcp:notaport", "tcp:1.2.3.4:70000", "udp:1",
					   "vfio-user:" };
	char path[PATH_MAX], out[4096];
	size_t i;
	int status;

	if (target_path(path, sizeof(path)))
		cr_skip_test("nkv-target is not built (make programs)");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = { "nkv-target", "--listen", (char *)bad[i], NULL };

		status = run_target_stderr(path, argv, out, sizeof(out));
		cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 2, "--listen %s: %#x",
			  bad[i], status);
		cr_expect(strstr(out, "for --listen: want tcp:[ADDR:]PORT"), "--listen %s:\n%s",
			  bad[i], out);
	}
}
