// SPDX-License-Identifier: MIT
/*
 * ceph_cluster.c - start and stop the test cluster through the project's
 * script, so tests exercise exactly what developers run.
 */
#include <criterion/criterion.h>

#include "ceph_cluster.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int nkv_test_sh(int timeout_s, char *out, size_t outlen, const char *fmt, ...)
{
	char cmd[4096], full[4300];
	size_t n = 0;
	va_list ap;
	FILE *p;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	/* timeout(1) bounds every external command: no test may hang. */
	snprintf(full, sizeof(full), "timeout -k 2 %d sh -c '%s' 2>&1", timeout_s, cmd);
	p = popen(full, "r");
	if (!p)
		return -1;
	if (out && outlen) {
		n = fread(out, 1, outlen - 1, p);
		out[n] = '\0';
	}
	while (fgetc(p) != EOF)
		;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The script, from the repo root (the test suite's cwd) or above the
 * binary (build/.../tests/NAME). */
static int nkv_test_script(char *path, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n;
	int up;
	char *s;

	snprintf(path, len, "scripts/ceph-dev-cluster.sh");
	if (access(path, X_OK) == 0)
		return 0;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	for (up = 0; up < 6; up++) {
		s = strrchr(exe, '/');
		if (!s)
			break;
		*s = '\0';
		if ((size_t)snprintf(path, len, "%.3800s/scripts/ceph-dev-cluster.sh", exe) < len &&
		    access(path, X_OK) == 0)
			return 0;
	}
	return -1;
}

int nkv_test_cluster_start(struct nkv_test_cluster *c, const char *extra,
			   char *why, size_t whylen)
{
	char script[PATH_MAX], out[4096];
	const char *tmp = getenv("TMPDIR");
	size_t n;
	int rv;

	memset(c, 0, sizeof(*c));
	if (nkv_test_script(script, sizeof(script)) < 0) {
		snprintf(why, whylen, "scripts/ceph-dev-cluster.sh not found");
		return -1;
	}
	snprintf(c->dir, sizeof(c->dir), "%s/nkv-ceph-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(c->dir)) {
		snprintf(why, whylen, "mkdtemp failed");
		c->dir[0] = '\0';
		return -1;
	}
	snprintf(c->conf, sizeof(c->conf), "%s/ceph.conf", c->dir);
	rv = nkv_test_sh(60, out, sizeof(out), "%s start %s %s", script, c->dir,
			 extra ? extra : "");
	if (rv == 0)
		return 0;
	/* Keep the tail: it names the failing daemon and its log lines. */
	n = strlen(out);
	snprintf(why, whylen, "cluster did not start (exit %d): %s", rv,
		 n > 600 ? out + n - 600 : out);
	nkv_test_cluster_stop(c);
	return -1;
}

void nkv_test_cluster_stop(struct nkv_test_cluster *c)
{
	char script[PATH_MAX];

	if (!c->dir[0])
		return;
	if (nkv_test_script(script, sizeof(script)) == 0)
		nkv_test_sh(30, NULL, 0, "%s stop %s >/dev/null", script, c->dir);
	nkv_test_sh(30, NULL, 0, "rm -rf %s", c->dir);
	c->dir[0] = '\0';
}

pid_t nkv_test_cluster_osd_pid(const struct nkv_test_cluster *c)
{
	char path[400];
	FILE *f;
	long pid = -1;

	snprintf(path, sizeof(path), "%s/run/osd.0.pid", c->dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = -1;
	fclose(f);
	return (pid_t)pid;
}

int nkv_test_cluster_main(int argc, char *argv[], const char *name)
{
	struct criterion_test_set *tests = criterion_initialize();
	struct nkv_test_cluster c = { 0 };
	char why[1024];
	int rv = 0;

	if (criterion_handle_args(argc, argv, true)) {
		if (nkv_test_cluster_start(&c, NULL, why, sizeof(why)) == 0) {
			setenv("NKV_TEST_CEPH_CONF", c.conf, 1);
		} else {
			fprintf(stderr, "%s: %s\n", name, why);
			setenv("NKV_TEST_CEPH_SKIP", why, 1);
		}
		rv = !criterion_run_all_tests(tests);
		nkv_test_cluster_stop(&c);
	}
	criterion_finalize(tests);
	return rv;
}
