/* SPDX-License-Identifier: MIT */
/*
 * test_vfu_hostile.c - clients that misbehave against a live server
 * (issue 18), each beside a good client that must keep being served.
 *
 * Linked with -Wl,--wrap=pthread_create (tests/vfio-user/part.mk), so a
 * test can fail, or delay the return of, the creation of the server's
 * connection threads: races and failures that chance would rarely show
 * become certain.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "vfio-user/msg.h"
#include "vfu_util.h"

/* ---- the pthread_create hook (the linker's __wrap_ / __real_ names) ---- */
static int hook_fail;		/* atomic: creations fail with EAGAIN */
static unsigned hook_delay_us;	/* atomic: sleep after a creation */
static unsigned hook_created;	/* atomic: creations so far (release) */
static pthread_t hook_last;	/* atomic: the latest created */

int __real_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	unsigned us = __atomic_load_n(&hook_delay_us, __ATOMIC_ACQUIRE);
	int rc;

	if (__atomic_load_n(&hook_fail, __ATOMIC_ACQUIRE))
		return EAGAIN;
	rc = __real_pthread_create(t, a, fn, arg);
	if (rc)
		return rc;
	__atomic_store(&hook_last, t, __ATOMIC_RELEASE);
	__atomic_add_fetch(&hook_created, 1, __ATOMIC_RELEASE);
	if (us)
		usleep(us);
	return 0;
}

/* ---- server, raw client ---- */
static struct tl_server srv;
static FILE *srv_log;

static void log_to_file(struct nkv_vfu_server_opts *o)
{
	srv_log = tmpfile();
	o->log = srv_log;
	o->log_level = NKV_VFU_LOG_INFO;
}

static void up(void) { cr_assert_eq(vt_server_start_with(&srv, 0, log_to_file), 0); }

/* Short time limits, so that a test sees each one pass. */
static void short_limits(struct nkv_vfu_server_opts *o)
{
	log_to_file(o);
	o->handshake_ms = 300;
	o->idle_ms = 300;
	o->msg_ms = 500;
}

static void up_short(void) { cr_assert_eq(vt_server_start_with(&srv, 0, short_limits), 0); }
static void down(void)
{
	tl_server_stop(&srv);
	fclose(srv_log);
}

/* Whether the server's log holds a line with s. */
static int logged(const char *s)
{
	char line[512];
	int found = 0;

	fflush(srv_log);
	rewind(srv_log);
	while (!found && fgets(line, sizeof(line), srv_log))
		found = strstr(line, s) != NULL;
	fseek(srv_log, 0, SEEK_END);
	return found;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct nkv_vfu_server_stats stats(void)
{
	struct nkv_vfu_server_stats st;

	nkv_vfu_server_stats(srv.srv, &st);
	return st;
}

/* Wait (bounded: sanitizers on a loaded machine are slow) until `closed`
 * connections have been freed. */
static void wait_closed(uint64_t closed)
{
	uint64_t t0 = now_ms();

	while (stats().closed < closed && now_ms() - t0 < 15000)
		usleep(1000);
	cr_assert_eq(stats().closed, closed);
}

static int raw_connect(void)
{
	int fd = vt_raw_connect(srv.path);

	cr_assert_geq(fd, 0);
	return fd;
}

/* A good client: up, one Store and Retrieve of 4 KiB, down. */
static void good_client_served(void)
{
	struct vt_nvme n;
	struct nkv_sqe s;

	cr_assert_eq(vt_nvme_up(&n, srv.path), 0);
	memset(vt_page(&n, VT_DATA), 0x5a, 4096);
	vt_kv_sqe(&s, NKV_KV_STORE, "good", vt_iova(&n, VT_DATA), 4096);
	cr_assert_eq(vt_cmd(&n, 1, &s, NULL), 0);
	vt_kv_sqe(&s, NKV_KV_RETRIEVE, "good", vt_iova(&n, VT_DATA + 1), 4096);
	cr_assert_eq(vt_cmd(&n, 1, &s, NULL), 0);
	cr_assert_eq(memcmp(vt_page(&n, VT_DATA), vt_page(&n, VT_DATA + 1), 4096), 0);
	vt_nvme_down(&n);
}

/* ---- finding 9: signals, refused and dropped clients ---- */
static void on_signal(int sig) { (void)sig; }

/* An embedding program's signal handler (no SA_RESTART) interrupts the
 * connection thread's ppoll: the connection must carry on. The eventfd
 * drain after the sleep used to overwrite errno (EINTR -> EAGAIN), and
 * the connection ended with no log line. */
Test(vfu_hostile, signals_never_end_a_connection, .init = up, .fini = down)
{
	struct sigaction sa = { .sa_handler = on_signal };
	unsigned before = __atomic_load_n(&hook_created, __ATOMIC_ACQUIRE);
	struct vt_nvme n;
	struct nkv_sqe s;
	pthread_t conn;
	int i;

	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cr_assert_eq(vt_nvme_up(&n, srv.path), 0);
	cr_assert_eq(__atomic_load_n(&hook_created, __ATOMIC_ACQUIRE), before + 1,
		     "one thread: the connection's");
	__atomic_load(&hook_last, &conn, __ATOMIC_ACQUIRE);
	/* The idle thread sleeps in ppoll most of the time: 200 signals
	 * land there many times over. */
	for (i = 0; i < 200; i++) {
		cr_assert_eq(pthread_kill(conn, SIGUSR1), 0);
		usleep(500);
	}
	memset(vt_page(&n, VT_DATA), 7, 4096);
	vt_kv_sqe(&s, NKV_KV_STORE, "sig", vt_iova(&n, VT_DATA), 4096);
	cr_assert_eq(vt_cmd(&n, 1, &s, NULL), 0, "the connection survived the signals");
	cr_assert_eq(stats().closed, 0);
	cr_assert_eq(stats().dropped, 0);
	vt_nvme_down(&n);
}

Test(vfu_hostile, failed_thread_is_logged_and_counted, .init = up, .fini = down)
{
	char b;
	int fd;

	__atomic_store_n(&hook_fail, 1, __ATOMIC_RELEASE);
	fd = raw_connect();
	cr_assert_eq(read(fd, &b, 1), 0, "closed by the server");
	__atomic_store_n(&hook_fail, 0, __ATOMIC_RELEASE);
	close(fd);
	cr_assert_eq(stats().failed, 1);
	cr_assert_eq(stats().accepted, 0);
	cr_assert(logged("event=conn_failed reason=thread_create errno=11"));
	good_client_served();
}

Test(vfu_hostile, dropped_client_is_logged_and_counted, .init = up, .fini = down)
{
	struct nkv_vfu_hdr h = { .cmd = NKV_VFU_VERSION, .size = 0x7fffffff };
	int fd = raw_connect();

	cr_assert_eq(write(fd, &h, sizeof(h)), (ssize_t)sizeof(h));
	wait_closed(1);
	close(fd);
	cr_assert_eq(stats().dropped, 1);
	cr_assert(logged("event=conn_end conn=1 reason=Message too long"));
	good_client_served();
	cr_assert_eq(stats().dropped, 1, "a client's own close is not a drop");
}

/* ---- finding 1: a connection that ends before pthread_create returns ---- */

/* The hook holds the accept thread in pthread_create for 50 ms while the
 * new connection's client has already gone: its thread ends and frees
 * its struct before the accept thread goes on. Reading the struct after
 * pthread_create (the bug) is a use after free that ASan reports every
 * time (build/asan/tests/test_vfu_hostile); without ASan the stale read
 * usually passes unnoticed. */
Test(vfu_hostile, conn_ends_before_its_thread_create_returns, .init = up, .fini = down)
{
	int i;

	__atomic_store_n(&hook_delay_us, 50000, __ATOMIC_RELEASE);
	for (i = 1; i <= 3; i++) {
		close(raw_connect());
		wait_closed((uint64_t)i);
	}
	__atomic_store_n(&hook_delay_us, 0, __ATOMIC_RELEASE);
	cr_assert_eq(stats().accepted, 3);
	cr_assert(logged("event=conn_open conn=3"), "the id logged is the right one");
	good_client_served();
}

/* ---- findings 4 and 5: time limits ---- */

static int raw_negotiated(void)
{
	struct nkv_vfu_hdr h = { .msg_id = 1, .cmd = NKV_VFU_VERSION };
	struct nkv_vfu_version v = { 0, 1 };
	struct nkv_vfu_msg m;
	int fd = raw_connect();

	cr_assert_eq(nkv_vfu_send(fd, &h, &v, sizeof(v), NULL, 0), 0);
	cr_assert_eq(nkv_vfu_recv(fd, &m, NKV_VFU_MAX_MSG), 0);
	cr_assert_eq(m.hdr.flags & NKV_VFU_F_ERROR, 0);
	nkv_vfu_msg_free(&m);
	return fd;
}

/* ms until the server closes fd (reads see EOF), at most 3000. */
static uint64_t ms_until_closed(int fd)
{
	uint64_t t0 = now_ms();
	char b;

	while (read(fd, &b, 1) != 0 && now_ms() - t0 < 3000)
		;
	return now_ms() - t0;
}

/* max_conns (4) connections that never say VERSION used to lock every
 * other client out for ever; each now goes after handshake_ms. */
Test(vfu_hostile, silent_connections_cannot_hold_max_conns, .init = up_short, .fini = down)
{
	int fd[4], i;

	for (i = 0; i < 4; i++)
		fd[i] = raw_connect();
	for (i = 0; i < 4; i++) {
		cr_assert_lt(ms_until_closed(fd[i]), 2000, "closed after the handshake limit");
		close(fd[i]);
	}
	wait_closed(4);
	cr_assert_eq(stats().dropped, 4);
	cr_assert(logged("reason=handshake_timeout"));
	good_client_served();
}

Test(vfu_hostile, disabled_controller_idle_limit, .init = up_short, .fini = down)
{
	int fd = raw_negotiated();

	cr_assert_lt(ms_until_closed(fd), 2000);
	close(fd);
	wait_closed(1);
	cr_assert_eq(stats().dropped, 1);
	cr_assert(logged("reason=idle_timeout_controller_disabled"));
	good_client_served();
}

/* An enabled controller is not idle however long the client is silent:
 * doorbells in shared memory are not messages. */
Test(vfu_hostile, enabled_controller_has_no_idle_limit, .init = up_short, .fini = down)
{
	struct vt_nvme n;
	struct nkv_sqe s;

	cr_assert_eq(vt_nvme_up(&n, srv.path), 0);
	usleep(800000);
	vt_kv_sqe(&s, NKV_KV_STORE, "late", vt_iova(&n, VT_DATA), 4096);
	cr_assert_eq(vt_cmd(&n, 1, &s, NULL), 0);
	cr_assert_eq(stats().dropped, 0);
	vt_nvme_down(&n);
}

/* One byte every 100 ms: each recv sees progress, so a per-recv timeout
 * never fires; the whole-message limit (500 ms) does. */
static uint64_t drip_until_closed(int fd, const void *msg, size_t len, unsigned gap_ms)
{
	uint64_t t0 = now_ms();
	size_t i;

	for (i = 0; i < len; i++) {
		if (send(fd, (const char *)msg + i, 1, MSG_NOSIGNAL) != 1)
			break;
		usleep(gap_ms * 1000);
	}
	return now_ms() - t0;
}

Test(vfu_hostile, slow_drip_hits_the_whole_message_limit, .init = up_short, .fini = down)
{
	struct {
		struct nkv_vfu_hdr h;
		struct nkv_vfu_region_rw rw;
	} msg = { { 2, NKV_VFU_REGION_READ, sizeof(msg), 0, 0 }, { 0, NKV_VFU_BAR0, 4 } };
	int fd = raw_negotiated();
	uint64_t ms = drip_until_closed(fd, &msg, sizeof(msg), 100);

	close(fd);
	cr_assert_lt(ms, 2000, "closed mid-message after %llu ms", (unsigned long long)ms);
	wait_closed(1);
	cr_assert(logged("reason=message_timeout"));
	good_client_served();
}

/* nkv-target with the mem backend ends within 2 s of SIGTERM whatever a
 * client does: here one drips a 1 MiB message a byte at a time, so its
 * thread is mid-recv, and another is idle. (A correctness bound.) */
/* nkv-target on sock with the options in extra (NULL-terminated, at most
 * 8; NULL: none), its stderr on errfd (-1: this one's). */
static pid_t spawn_target_err(const char *sock, const char *const *extra, int errfd)
{
	char exe[512], bin[600];
	const char *argv[16] = { bin, "--socket", sock, "--log-level", "error" };
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	pid_t pid;
	int i;

	cr_assert_gt(n, 0);
	exe[n] = 0;
	*strrchr(exe, '/') = 0;	/* .../tests */
	snprintf(bin, sizeof(bin), "%s/../bin/nkv-target", exe);
	for (i = 0; extra && extra[i] && i < 8; i++)
		argv[5 + i] = extra[i];
	pid = fork();
	if (pid == 0) {
		if (errfd >= 0)
			dup2(errfd, 2);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static pid_t spawn_target(const char *sock, const char *const *extra)
{
	return spawn_target_err(sock, extra, -1);
}

/* Everything a spawned target wrote to the pipe @fd until it closed its
 * end (it exited), NUL-terminated in @out; closes @fd. */
static void read_to_eof(int fd, char *out, size_t size)
{
	size_t len = 0;
	ssize_t n;

	while (len < size - 1 && (n = read(fd, out + len, size - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = 0;
	close(fd);
}

/* Wait (bounded) for the socket file of a spawned target. */
static void wait_socket(const char *sock)
{
	int i;

	for (i = 0; i < 300 && access(sock, F_OK); i++)
		usleep(10000);
	cr_assert_eq(access(sock, F_OK), 0, "nkv-target listens");
}

Test(vfu_hostile, sigterm_ends_target_within_2s_despite_a_drip)
{
	struct nkv_vfu_hdr h = { 3, NKV_VFU_REGION_WRITE, 1u << 20, 0, 0 };
	struct nkv_vfu_version v = { 0, 1 };
	struct nkv_vfu_msg m;
	uint64_t t0, i;
	pid_t pid;
	int st = 0, fd, idle;

	snprintf(srv.path, sizeof(srv.path), "/tmp/nkv-hostile-%d.sock", (int)getpid());
	pid = spawn_target(srv.path, NULL);
	cr_assert_gt(pid, 0);
	wait_socket(srv.path);
	fd = raw_connect();
	idle = raw_connect();
	cr_assert_eq(nkv_vfu_send(fd, &(struct nkv_vfu_hdr){ .msg_id = 1, .cmd = NKV_VFU_VERSION },
				  &v, sizeof(v), NULL, 0), 0);
	cr_assert_eq(nkv_vfu_recv(fd, &m, NKV_VFU_MAX_MSG), 0);
	nkv_vfu_msg_free(&m);
	cr_assert_eq(send(fd, &h, sizeof(h), MSG_NOSIGNAL), (ssize_t)sizeof(h));
	usleep(300000);
	t0 = now_ms();
	cr_assert_eq(kill(pid, SIGTERM), 0);
	/* Keep dripping: every byte would restart a per-recv timeout. */
	while (waitpid(pid, &st, WNOHANG) == 0 && now_ms() - t0 < 5000) {
		(void)!send(fd, "x", 1, MSG_NOSIGNAL);
		usleep(50000);
	}
	i = now_ms() - t0;
	if (i >= 5000) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	close(fd);
	close(idle);
	cr_assert_lt(i, 2000, "nkv-target took %llu ms after SIGTERM", (unsigned long long)i);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* ---- finding 8: an idle disabled controller sleeps ---- */

/* A connection whose controller is not enabled has nothing to poll: it
 * used to wake every poll interval (20 us here: ~25000 times in 0.5 s);
 * it now sleeps until a message, a completion or its time limit. An
 * enabled one still polls its doorbells every interval. */
Test(vfu_hostile, disabled_controller_sleeps_without_wakeups, .init = up, .fini = down)
{
	struct nkv_vfu_region_rw rw = { NKV_REG_CSTS, NKV_VFU_BAR0, 4 };
	struct nkv_vfu_hdr h = { .msg_id = 5, .cmd = NKV_VFU_REGION_READ };
	struct nkv_vfu_msg m;
	uint64_t before, t0;
	struct vt_nvme n;
	int fd = raw_negotiated();

	usleep(100000);	/* past the spins after VERSION */
	before = stats().sleeps;
	usleep(500000);
	cr_assert_leq(stats().sleeps - before, 3, "%llu wake-ups in 0.5 s",
		      (unsigned long long)(stats().sleeps - before));
	/* A message still wakes it at once. */
	t0 = now_ms();
	cr_assert_eq(nkv_vfu_send(fd, &h, &rw, sizeof(rw), NULL, 0), 0);
	cr_assert_eq(nkv_vfu_recv(fd, &m, NKV_VFU_MAX_MSG), 0);
	cr_assert_eq(m.hdr.flags & NKV_VFU_F_ERROR, 0);
	nkv_vfu_msg_free(&m);
	cr_assert_lt(now_ms() - t0, 1000);
	close(fd);
	wait_closed(1);
	cr_assert_eq(vt_nvme_up(&n, srv.path), 0);
	before = stats().sleeps;
	usleep(100000);
	cr_assert_gt(stats().sleeps - before, 10, "an enabled controller polls");
	vt_nvme_down(&n);
}

/* ---- finding 7: per-connection log lines are rate-limited ---- */

static int count_logged(const char *s)
{
	char line[512];
	int n = 0;

	fflush(srv_log);
	rewind(srv_log);
	while (fgets(line, sizeof(line), srv_log))
		n += strstr(line, s) != NULL;
	fseek(srv_log, 0, SEEK_END);
	return n;
}

/* 300 bad messages: each gets its error reply, but at most the burst of
 * lines (plus what the refill allows meanwhile) reaches the log; every
 * other line is counted, so logged + suppressed = 300 exactly. */
Test(vfu_hostile, log_lines_per_connection_are_rate_limited, .init = up, .fini = down)
{
	struct nkv_vfu_hdr h = { .cmd = 99 };
	unsigned long long suppressed = 0;
	char line[512], *p;
	struct nkv_vfu_msg m;
	int fd = raw_negotiated(), i, lines;

	for (i = 0; i < 300; i++) {
		h.msg_id = (uint16_t)i;
		cr_assert_eq(nkv_vfu_send(fd, &h, NULL, 0, NULL, 0), 0);
		cr_assert_eq(nkv_vfu_recv(fd, &m, NKV_VFU_MAX_MSG), 0);
		cr_assert_eq(m.hdr.error, ENOSYS);
		nkv_vfu_msg_free(&m);
	}
	close(fd);
	wait_closed(1);
	lines = count_logged("event=msg_error conn=1 ");
	cr_assert_leq(lines, 100, "%d lines logged", lines);
	fflush(srv_log);
	rewind(srv_log);
	while (fgets(line, sizeof(line), srv_log))
		if ((p = strstr(line, "event=conn_closed conn=1 log_suppressed=")))
			cr_assert_eq(sscanf(p, "event=conn_closed conn=1 log_suppressed=%llu",
					    &suppressed), 1);
	cr_assert_eq((unsigned long long)lines + suppressed, 300, "%d logged, %llu suppressed",
		     lines, suppressed);
}

/* ---- finding 2: DMA budgets per connection ---- */

/* DMA_MAP of [0, size) of mfd at iova: the reply's errno, 0 = mapped. */
static int raw_map(int fd, int mfd, uint64_t iova, uint64_t size)
{
	struct nkv_vfu_dma_map dm = { sizeof(dm), 3, 0, iova, size };
	struct nkv_vfu_hdr h = { .msg_id = 9, .cmd = NKV_VFU_DMA_MAP };
	struct nkv_vfu_msg m;
	int rc;

	cr_assert_eq(nkv_vfu_send(fd, &h, &dm, sizeof(dm), &mfd, 1), 0);
	cr_assert_eq(nkv_vfu_recv(fd, &m, NKV_VFU_MAX_MSG), 0);
	rc = (m.hdr.flags & NKV_VFU_F_ERROR) ? (int)m.hdr.error : 0;
	nkv_vfu_msg_free(&m);
	return rc;
}

/* A sealed sparse memfd of len bytes: costs nothing until touched. */
static int sparse_memfd(uint64_t len)
{
	int mfd = memfd_create("sparse", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	cr_assert_geq(mfd, 0);
	cr_assert_eq(ftruncate(mfd, (off_t)len), 0);
	cr_assert_eq(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	return mfd;
}

/* With the defaults (64 GiB, 256 regions), a 1 TiB sparse memfd used to
 * map 200 times over, exhausting the target's address space. */
Test(vfu_hostile, dma_budget_defaults_refuse_a_huge_sparse_map, .init = up, .fini = down)
{
	int fd = raw_negotiated(), mfd = sparse_memfd(1ull << 40);

	cr_assert_eq(raw_map(fd, mfd, 0, 1ull << 40), ENOSPC);
	cr_assert_eq(raw_map(fd, mfd, 0, 32ull << 30), 0, "within the budget");
	cr_assert_eq(raw_map(fd, mfd, 1ull << 40, 32ull << 30), 0);
	cr_assert_eq(raw_map(fd, mfd, 2ull << 40, 4096), ENOSPC, "64 GiB used");
	cr_assert(logged("event=dma_map_refused conn=1 reason=budget"));
	close(mfd);
	good_client_served();
	close(fd);
}

static void small_budgets(struct nkv_vfu_server_opts *o)
{
	log_to_file(o);
	o->max_dma_maps = 3;
	o->max_dma_bytes = 1u << 20;
}

static void up_small(void) { cr_assert_eq(vt_server_start_with(&srv, 0, small_budgets), 0); }

Test(vfu_hostile, dma_budgets_are_options_and_unmap_gives_back, .init = up_small, .fini = down)
{
	struct nkv_vfu_dma_unmap du = { sizeof(du), 0, 0, 1u << 20 };
	struct nkv_vfu_hdr h = { .msg_id = 10, .cmd = NKV_VFU_DMA_UNMAP };
	struct nkv_vfu_msg m;
	int fd = raw_negotiated(), mfd = sparse_memfd(4u << 20);

	cr_assert_eq(raw_map(fd, mfd, 0, 1u << 20), 0);
	cr_assert_eq(raw_map(fd, mfd, 1u << 20, 4096), ENOSPC, "1 MiB mapped");
	cr_assert_eq(nkv_vfu_send(fd, &h, &du, sizeof(du), NULL, 0), 0);
	cr_assert_eq(nkv_vfu_recv(fd, &m, NKV_VFU_MAX_MSG), 0);
	cr_assert_eq(m.hdr.flags & NKV_VFU_F_ERROR, 0, "unmap gives the bytes back");
	nkv_vfu_msg_free(&m);
	cr_assert_eq(raw_map(fd, mfd, 0, 4096), 0);
	cr_assert_eq(raw_map(fd, mfd, 1u << 20, 4096), 0);
	cr_assert_eq(raw_map(fd, mfd, 2u << 20, 4096), 0);
	cr_assert_eq(raw_map(fd, mfd, 3u << 20, 4096), ENOSPC, "3 regions");
	close(mfd);
	close(fd);
}

/* ---- a connect/close storm beside good clients (ASan and TSan stages) ---- */

struct good_arg {
	int id;
	int rounds;		/* Store + Retrieve pairs that matched */
	int bad;		/* lost or wrong values, failed commands */
	int stop;		/* atomic */
};

/* A good client: 4 KiB Store/Retrieve of a value naming the round. */
static void *good_loop(void *p)
{
	struct good_arg *g = p;
	struct vt_nvme n;
	struct nkv_sqe s;
	char key[16];

	if (vt_nvme_up(&n, srv.path)) {
		g->bad++;
		return NULL;
	}
	while (!__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE)) {
		int r = __atomic_load_n(&g->rounds, __ATOMIC_RELAXED);

		snprintf(key, sizeof(key), "g%d-%d", g->id, r % 64);
		memset(vt_page(&n, VT_DATA), r & 0xff, 4096);
		vt_kv_sqe(&s, NKV_KV_STORE, key, vt_iova(&n, VT_DATA), 4096);
		if (vt_cmd(&n, 1, &s, NULL))
			g->bad++;
		memset(vt_page(&n, VT_DATA + 1), 0, 4096);
		vt_kv_sqe(&s, NKV_KV_RETRIEVE, key, vt_iova(&n, VT_DATA + 1), 4096);
		if (vt_cmd(&n, 1, &s, NULL) ||
		    memcmp(vt_page(&n, VT_DATA), vt_page(&n, VT_DATA + 1), 4096))
			g->bad++;
		__atomic_add_fetch(&g->rounds, 1, __ATOMIC_RELEASE);
	}
	vt_nvme_down(&n);
	return NULL;
}

/* Until g has done more than `past` rounds (up to 20 s): 1 when it did. */
static int rounds_past(struct good_arg *g, int past)
{
	int i;

	for (i = 0; i < 2000 && __atomic_load_n(&g->rounds, __ATOMIC_ACQUIRE) <= past; i++)
		usleep(10000);
	return __atomic_load_n(&g->rounds, __ATOMIC_ACQUIRE) > past;
}

static void storm_limits(struct nkv_vfu_server_opts *o)
{
	log_to_file(o);
	o->log_level = NKV_VFU_LOG_ERROR;
	o->max_conns = 64;
}

static void up_storm(void) { cr_assert_eq(vt_server_start_with(&srv, 0, storm_limits), 0); }

/* 300 clients that connect and go: at once, after VERSION, or after a
 * torn header; none may disturb the two good clients. */
Test(vfu_hostile, connect_close_storm_beside_good_clients, .init = up_storm, .fini = down,
     .timeout = 120)
{
	struct nkv_vfu_hdr torn = { .cmd = NKV_VFU_VERSION, .size = 64 };
	struct good_arg g[2] = { { .id = 0 }, { .id = 1 } };
	struct nkv_vfu_server_stats st;
	pthread_t t[2];
	int i, fd, before[2];

	for (i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, good_loop, &g[i]), 0);
	/* Both good clients serving before the storm, and served again after
	 * it: the storm (300 connects in a few ms) cannot end before they
	 * begin and pass unseen. */
	for (i = 0; i < 2; i++)
		cr_assert(rounds_past(&g[i], 0), "good client %d never served", i);
	for (i = 0; i < 300; i++) {
		fd = i % 3 == 1 ? raw_negotiated() : raw_connect();
		if (i % 3 == 2)
			(void)!write(fd, &torn, 8);
		close(fd);
	}
	for (i = 0; i < 2; i++)
		before[i] = __atomic_load_n(&g[i].rounds, __ATOMIC_ACQUIRE);
	for (i = 0; i < 2; i++)
		cr_assert(rounds_past(&g[i], before[i] + 1), "good client %d served after the storm", i);
	for (i = 0; i < 2; i++) {
		__atomic_store_n(&g[i].stop, 1, __ATOMIC_RELEASE);
		pthread_join(t[i], NULL);
		cr_assert_eq(g[i].bad, 0, "good client %d: %d bad of %d", i, g[i].bad, g[i].rounds);
	}
	wait_closed(302);
	st = stats();
	cr_assert_eq(st.accepted, 302);
	cr_assert_eq(st.failed + st.refused, 0);
}

/* The limits are nkv-target options: the budget announced in the VERSION
 * reply and enforced, the handshake limit, out-of-range values refused. */
Test(vfu_hostile, nkv_target_limit_options)
{
	static const char *const opts[] = { "--max-dma-maps", "2", "--max-dma-bytes", "8K",
					    "--handshake-timeout-ms", "200", NULL };
	static const char *const bad[] = { "--max-dma-maps", "2000", NULL };
	struct nkv_vfu_hdr h = { .msg_id = 1, .cmd = NKV_VFU_VERSION };
	struct nkv_vfu_version v = { 0, 1 };
	struct nkv_vfu_msg m;
	int st = 0, fd, mfd = sparse_memfd(1u << 20), silent;
	pid_t pid;

	snprintf(srv.path, sizeof(srv.path), "/tmp/nkv-hostile-opt-%d.sock", (int)getpid());
	pid = spawn_target(srv.path, opts);
	wait_socket(srv.path);
	silent = raw_connect();
	fd = raw_connect();
	cr_assert_eq(nkv_vfu_send(fd, &h, &v, sizeof(v), NULL, 0), 0);
	cr_assert_eq(nkv_vfu_recv(fd, &m, NKV_VFU_MAX_MSG), 0);
	cr_assert_gt(m.len, sizeof(v));
	cr_assert(strstr((const char *)m.payload + sizeof(v), "\"max_dma_maps\":2}"), "%s",
		  (const char *)m.payload + sizeof(v));
	nkv_vfu_msg_free(&m);
	cr_assert_eq(raw_map(fd, mfd, 0, 4096), 0);
	cr_assert_eq(raw_map(fd, mfd, 1u << 20, 8192), ENOSPC, "8K budget");
	cr_assert_eq(raw_map(fd, mfd, 2u << 20, 4096), 0);
	cr_assert_eq(raw_map(fd, mfd, 3u << 20, 4096), ENOSPC, "2 regions");
	cr_assert_lt(ms_until_closed(silent), 2000, "--handshake-timeout-ms");
	close(silent);
	close(fd);
	close(mfd);
	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	pid = spawn_target(srv.path, bad);
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "--max-dma-maps 2000 is refused");
}

/* --poll-sched idle: a client's connection thread polls at SCHED_IDLE
 * (no other thread of the target does); an unknown class is refused. */
Test(vfu_hostile, nkv_target_poll_sched_option)
{
	static const char *const opts[] = { "--poll-sched", "idle", NULL };
	static const char *const bad[] = { "--poll-sched", "fifo", NULL };
	struct nkv_vfu_hdr h = { .msg_id = 1, .cmd = NKV_VFU_VERSION };
	struct nkv_vfu_version v = { 0, 1 };
	struct nkv_vfu_msg m;
	int st = 0, fd;
	pid_t pid;

	snprintf(srv.path, sizeof(srv.path), "/tmp/nkv-hostile-sched-%d.sock", (int)getpid());
	pid = spawn_target(srv.path, opts);
	wait_socket(srv.path);
	cr_expect_eq(vt_idle_threads(pid), 0);
	fd = raw_connect();
	cr_assert_eq(nkv_vfu_send(fd, &h, &v, sizeof(v), NULL, 0), 0);
	cr_assert_eq(nkv_vfu_recv(fd, &m, NKV_VFU_MAX_MSG), 0);
	nkv_vfu_msg_free(&m);
	cr_expect_eq(vt_idle_threads(pid), 1);
	close(fd);
	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	pid = spawn_target(srv.path, bad);
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "--poll-sched fifo is refused");
}

/* A backend's option given with another --backend is refused (exit 2),
 * naming the option and the backend, not silently ignored. */
Test(vfu_hostile, nkv_target_refuses_another_backends_option)
{
	static const char *const bad[] = { "--backend", "mem", "--pool", "kvpool", NULL };
	char out[8192];
	int st = 0, pfd[2];
	pid_t pid;

	snprintf(srv.path, sizeof(srv.path), "/tmp/nkv-hostile-beopt-%d.sock", (int)getpid());
	cr_assert_eq(pipe(pfd), 0);
	pid = spawn_target_err(srv.path, bad, pfd[1]);
	close(pfd[1]);
	read_to_eof(pfd[0], out, sizeof(out));
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "--pool with --backend mem is refused");
	cr_assert(strstr(out, "option --pool is not an option of the mem backend"), "%s", out);
	cr_assert_neq(access(srv.path, F_OK), 0, "it never listened");
}

/* At start, at log level info, nkv-target prints what it runs with: a
 * line per namespace (backend, limits, :ro, the command time it
 * advertises, the backend's own settings) and the server's limits. */
Test(vfu_hostile, nkv_target_prints_its_limits_at_start)
{
	static const char *const opts[] = { "--log-level", "info", "--ns-map",
					    "1=weights:ro,3=scratch", "--evict", "lru",
					    "--max-keys", "1000", NULL };
	char out[8192];
	int st = 0, pfd[2];
	pid_t pid;

	snprintf(srv.path, sizeof(srv.path), "/tmp/nkv-hostile-start-%d.sock", (int)getpid());
	cr_assert_eq(pipe(pfd), 0);
	pid = spawn_target_err(srv.path, opts, pfd[1]);
	close(pfd[1]);
	wait_socket(srv.path);
	kill(pid, SIGTERM);
	read_to_eof(pfd[0], out, sizeof(out));
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "wait status %#x; %s", st, out);
	cr_expect(strstr(out, "level=info event=namespace nsid=1 name=weights csi=kv backend=mem "
			      "read_only=1 capacity=1073741824 max_value=67108864 max_keys=1000 "
			      "cmd_timeout_ms=0 evict=lru\n"), "%s", out);
	cr_expect(strstr(out, "event=namespace nsid=3 name=scratch csi=kv backend=mem read_only=0 "),
		  "%s", out);
	cr_expect(strstr(out, "level=info event=listening socket=/tmp/nkv-hostile-start-"), "%s", out);
	cr_expect(strstr(out, " max_conns=16 queue_depth=1024 max_queue_pairs=64 max_xfer=134217728 "
			      "cap_to_ms=10000 doorbell_stride=64 poll_interval_ns=100000 "
			      "poll_sched=normal handshake_timeout_ms=10000 idle_timeout_ms=60000 "
			      "msg_timeout_ms=5000 max_dma_maps=256 max_dma_bytes=68719476736 "), "%s",
		  out);
	/* Below info (spawn_target's --log-level error): none of them. */
	cr_assert_eq(pipe(pfd), 0);
	pid = spawn_target_err(srv.path, NULL, pfd[1]);
	close(pfd[1]);
	wait_socket(srv.path);
	kill(pid, SIGTERM);
	read_to_eof(pfd[0], out, sizeof(out));
	waitpid(pid, &st, 0);
	cr_expect_not(strstr(out, "event=namespace"), "%s", out);
	cr_expect_not(strstr(out, "event=listening"), "%s", out);
}

/* --ns-map N=NAME:ro is taken (the core's test_kv_opts shows what it
 * does); another suffix is a usage error naming it, before listening. */
Test(vfu_hostile, nkv_target_ns_map_read_only_suffix)
{
	static const char *const ro[] = { "--ns-map", "1=weights:ro,2=scratch", NULL };
	static const char *const bad[] = { "--ns-map", "1=weights:rw", NULL };
	char out[8192];
	int st = 0, pfd[2];
	pid_t pid;

	snprintf(srv.path, sizeof(srv.path), "/tmp/nkv-hostile-nsro-%d.sock", (int)getpid());
	pid = spawn_target(srv.path, ro);
	wait_socket(srv.path);
	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_eq(pipe(pfd), 0);
	pid = spawn_target_err(srv.path, bad, pfd[1]);
	close(pfd[1]);
	read_to_eof(pfd[0], out, sizeof(out));
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "--ns-map 1=weights:rw is refused");
	cr_assert(strstr(out, "suffix 'rw' is not ro"), "%s", out);
	cr_assert_neq(access(srv.path, F_OK), 0, "it never listened");
}
