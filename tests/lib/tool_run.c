/* SPDX-License-Identifier: MIT */
/* tool_run.c - see tool_run.h. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tool_run.h"

static double tool_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* BUILD/tests/<this test> -> BUILD/bin/@tool, or BUILD/@tool for a path
 * (examples/first_retrieve_cpu). */
static int tool_path(char *path, size_t len, const char *tool)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -errno;
	exe[n] = 0;
	snprintf(path, len, "%s/../%s%s", dirname(exe), strchr(tool, '/') ? "" : "bin/", tool);
	return access(path, X_OK) ? -ENOENT : 0;
}

/* Read the child's output until EOF or the deadline (then kill it). */
static void tool_collect(pid_t pid, int fd, struct tool_run *r, double t0, uint32_t timeout_ms)
{
	size_t used = 0;
	int st = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (tool_now() - t0 > timeout_ms / 1e3) {
			kill(pid, SIGKILL);
			break;
		}
		if (poll(&p, 1, 100) <= 0)
			continue;
		n = read(fd, r->out + used, sizeof(r->out) - 1 - used);
		if (n <= 0)
			break;
		used += (size_t)n;
		if (used == sizeof(r->out) - 1)
			break;
	}
	r->out[used] = 0;
	close(fd);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	r->secs = tool_now() - t0;
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

static void tool_child(int fd, const char *path, const char *tool, const char *const *args,
		       const char *const *env)
{
	const char *argv[64];
	const char *base = strrchr(tool, '/');
	size_t i;

	dup2(fd, 1);
	dup2(fd, 2);
	argv[0] = base ? base + 1 : tool;
	for (i = 0; args && args[i] && i + 2 < sizeof(argv) / sizeof(argv[0]); i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	for (i = 0; env && env[i]; i++)
		putenv((char *)env[i]);
	execv(path, (char *const *)argv);
	_exit(127);
}

int tool_run(struct tool_run *r, const char *tool, const char *const *args,
	     const char *const *env, uint32_t timeout_ms)
{
	char path[PATH_MAX + 32];
	int fds[2], rc = tool_path(path, sizeof(path), tool);
	double t0 = tool_now();
	pid_t pid;

	memset(r, 0, sizeof(*r));
	if (rc) {
		snprintf(r->out, sizeof(r->out), "%s not built", path);
		return rc;
	}
	if (pipe(fds))
		return -errno;
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		close(fds[0]);
		close(fds[1]);
		return rc;
	}
	if (pid == 0) {
		close(fds[0]);
		tool_child(fds[1], path, tool, args, env);
	}
	close(fds[1]);
	tool_collect(pid, fds[0], r, t0, timeout_ms);
	return 0;
}

const char *tool_line(const struct tool_run *r, const char *prefix, char *line, size_t len)
{
	const char *p = r->out;
	size_t plen = strlen(prefix);

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (n >= plen && !strncmp(p, prefix, plen)) {
			snprintf(line, len, "%.*s", (int)n, p);
			return line;
		}
		p = nl ? nl + 1 : NULL;
	}
	return NULL;
}
