// SPDX-License-Identifier: MIT
/* e2e_util.c - see e2e_util.h. Every wait here is bounded. */
#include "e2e_util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nkv_cpu.h"

double e2e_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Test binaries live in BUILD/tests, the program in BUILD/bin: the same
 * build (plain or ASan) is always the one tested. */
int e2e_target_bin(char *path, size_t len, char *why, size_t whylen)
{
	const char *env = getenv("NKV_TARGET_BIN");
	char exe[PATH_MAX];
	ssize_t n;
	char *s;

	if (env && *env) {
		snprintf(path, len, "%s", env);
	} else {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0) {
			snprintf(why, whylen, "cannot read /proc/self/exe");
			return -1;
		}
		exe[n] = '\0';
		s = strrchr(exe, '/');
		if (s)
			*s = '\0';
		snprintf(path, len, "%.3900s/../bin/nkv-target", exe);
	}
	if (access(path, X_OK)) {
		snprintf(why, whylen, "nkv-target not built at %s (make programs)", path);
		return -1;
	}
	return 0;
}

static void e2e_exec(const struct e2e_tgt *t, const char *bin, const char *conf,
		     const char *ns_map, unsigned op_timeout_s)
{
	char opt[16];
	int fd = open(t->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	/* A test that dies (alarm, crash) takes its target with it. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	snprintf(opt, sizeof(opt), "%u", op_timeout_s);
	/* op_timeout_s 0: nkv-target's own default (no --op-timeout). */
	execl(bin, bin, "--socket", t->sock, "--backend", "rados", "--conf", conf,
	      "--pool", "kvpool", "--ns-map", ns_map, "--mount-timeout", "5",
	      "--log-level", "warn", op_timeout_s ? "--op-timeout" : (char *)NULL, opt,
	      (char *)NULL);
	fprintf(stderr, "exec %s: %s\n", bin, strerror(errno));
	_exit(127);
}

int e2e_tgt_start(struct e2e_tgt *t, const char *conf, const char *ns_map,
		  unsigned op_timeout_s, char *why, size_t whylen)
{
	char bin[PATH_MAX], tail[512];
	struct stat sb;
	double dl;
	int st;

	memset(t, 0, sizeof(*t));
	t->pid = -1;
	if (e2e_target_bin(bin, sizeof(bin), why, whylen))
		return -1;
	snprintf(t->dir, sizeof(t->dir), "/tmp/nkv-e2e-XXXXXX");
	if (!mkdtemp(t->dir)) {
		snprintf(why, whylen, "mkdtemp: %s", strerror(errno));
		return -1;
	}
	snprintf(t->sock, sizeof(t->sock), "%s/t.sock", t->dir);
	snprintf(t->uri, sizeof(t->uri), "vfio-user:%s", t->sock);
	snprintf(t->log, sizeof(t->log), "%s/target.log", t->dir);
	t->pid = fork();
	if (t->pid < 0) {
		snprintf(why, whylen, "fork: %s", strerror(errno));
		return -1;
	}
	if (t->pid == 0)
		e2e_exec(t, bin, conf, ns_map, op_timeout_s);
	/* The socket appears once every namespace's backend is connected. */
	dl = e2e_now() + 20;
	while (e2e_now() < dl) {
		if (stat(t->sock, &sb) == 0 && S_ISSOCK(sb.st_mode))
			return 0;
		if (!e2e_tgt_alive(t, &st))
			break;
		usleep(20000);
	}
	e2e_tgt_log(t, tail, sizeof(tail));
	snprintf(why, whylen, "nkv-target did not come up: %s", tail);
	e2e_tgt_stop(t, 5);
	return -1;
}

int e2e_tgt_alive(struct e2e_tgt *t, int *st)
{
	int s = 0;
	pid_t r;

	if (t->pid <= 0)
		return 0;
	r = waitpid(t->pid, &s, WNOHANG);
	if (r == 0)
		return 1;
	if (st)
		*st = s;
	t->pid = -1;
	return 0;
}

static int e2e_code(int s)
{
	if (WIFEXITED(s))
		return WEXITSTATUS(s);
	return WIFSIGNALED(s) ? 128 + WTERMSIG(s) : 255;
}

int e2e_tgt_stop(struct e2e_tgt *t, int limit_s)
{
	double dl = e2e_now() + limit_s;
	int s = 0, code = 255;
	pid_t pid = t->pid, r = 0;

	if (pid > 0) {
		kill(pid, SIGTERM);
		while ((r = waitpid(pid, &s, WNOHANG)) == 0 && e2e_now() < dl)
			usleep(20000);
		if (r == pid) {
			code = e2e_code(s);
		} else {
			kill(pid, SIGKILL);
			waitpid(pid, &s, 0);
		}
		t->pid = -1;
	}
	if (t->dir[0] && !getenv("NKV_TEST_KEEP")) {
		char lock[sizeof(t->sock) + 8];

		/* A target killed here leaves its PATH.lock (else it removes it). */
		snprintf(lock, sizeof(lock), "%s.lock", t->sock);
		unlink(lock);
		unlink(t->sock);
		unlink(t->log);
		rmdir(t->dir);
		t->dir[0] = '\0';
	}
	return code;
}

void e2e_tgt_log(const struct e2e_tgt *t, char *buf, size_t len)
{
	FILE *f = fopen(t->log, "r");
	long sz;
	size_t n = 0;

	buf[0] = '\0';
	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	sz = ftell(f);
	fseek(f, sz > (long)len - 1 ? sz - (long)len + 1 : 0, SEEK_SET);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

int e2e_tgt_log_has(const struct e2e_tgt *t, const char *what)
{
	FILE *f = fopen(t->log, "r");
	char line[1024];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, what) != NULL;
	fclose(f);
	return found;
}

void e2e_hex(const void *key, uint32_t klen, char *out)
{
	const uint8_t *k = key;
	uint32_t i;

	for (i = 0; i < klen; i++)
		sprintf(out + 2 * i, "%02x", k[i]);
	out[2 * klen] = '\0';
}

struct e2e_wave_job {
	struct nkv_dev_qp *qp;
	const struct nkv_wk_args *a;
};

/* Every lane walks the batches together (converged), W keys at a time. */
static void e2e_wave_lane(void *arg)
{
	struct e2e_wave_job *j = arg;
	struct nkv_wk_args a = *j->a;
	uint32_t w = nkv_cpu_wave_size();

	for (a.first = j->a->first; a.first < a.count; a.first += w)
		nkv_wk_kv_batch(j->qp, &a);
}

int e2e_wave(struct nkv_qpair *q, uint32_t lanes, const struct nkv_wk_args *a)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), NKV_CPU_FIBERS, 1, lanes, 0 };
	struct e2e_wave_job j = { nkv_qpair_dev(q), a };

	return nkv_cpu_launch(&cfg, e2e_wave_lane, &j);
}
