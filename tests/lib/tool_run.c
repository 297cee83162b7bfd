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

/* Read the child's output (stdout and stderr into @fd, or stderr apart
 * into @efd >= 0) until EOF or the deadline (then kill it). */
static void tool_collect(pid_t pid, int fd, int efd, struct tool_run *r, double t0,
			 uint32_t timeout_ms)
{
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = efd, .events = POLLIN } };
	char *buf[2] = { r->out, r->err };
	size_t used[2] = { 0, 0 };
	int st = 0, i, open = efd >= 0 ? 2 : 1;

	while (open) {
		if (tool_now() - t0 > timeout_ms / 1e3) {
			kill(pid, SIGKILL);
			break;
		}
		if (poll(p, efd >= 0 ? 2 : 1, 100) <= 0)
			continue;
		for (i = 0; i < 2; i++) {
			ssize_t n;

			if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(p[i].fd, buf[i] + used[i], TOOL_OUT_MAX - 1 - used[i]);
			if (n > 0)
				used[i] += (size_t)n;
			if (n <= 0 || used[i] == TOOL_OUT_MAX - 1) {
				close(p[i].fd);
				p[i].fd = -1;
				open--;
			}
		}
	}
	for (i = 0; i < 2; i++) {
		buf[i][used[i]] = 0;
		if (p[i].fd >= 0)
			close(p[i].fd);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	r->secs = tool_now() - t0;
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

static void tool_child(int fd, int efd, const char *path, const char *tool,
		       const char *const *args, const char *const *env)
{
	const char *argv[64];
	const char *base = strrchr(tool, '/');
	size_t i;

	dup2(fd, 1);
	dup2(efd >= 0 ? efd : fd, 2);
	argv[0] = base ? base + 1 : tool;
	for (i = 0; args && args[i] && i + 2 < sizeof(argv) / sizeof(argv[0]); i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	for (i = 0; env && env[i]; i++)
		putenv((char *)env[i]);
	execv(path, (char *const *)argv);
	_exit(127);
}

static int tool_start(struct tool_run *r, const char *tool, const char *const *args,
		      const char *const *env, uint32_t timeout_ms, int split)
{
	char path[PATH_MAX + 32];
	int fds[2], efds[2] = { -1, -1 }, rc = tool_path(path, sizeof(path), tool);
	double t0 = tool_now();
	pid_t pid;

	memset(r, 0, sizeof(*r));
	if (rc) {
		snprintf(r->out, sizeof(r->out), "%s not built", path);
		return rc;
	}
	if (pipe(fds))
		return -errno;
	if (split && pipe(efds)) {
		rc = -errno;
		close(fds[0]);
		close(fds[1]);
		return rc;
	}
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		close(fds[0]);
		close(fds[1]);
		if (split) {
			close(efds[0]);
			close(efds[1]);
		}
		return rc;
	}
	if (pid == 0) {
		close(fds[0]);
		if (split)
			close(efds[0]);
		tool_child(fds[1], efds[1], path, tool, args, env);
	}
	close(fds[1]);
	if (split)
		close(efds[1]);
	tool_collect(pid, fds[0], efds[0], r, t0, timeout_ms);
	return 0;
}

int tool_run(struct tool_run *r, const char *tool, const char *const *args,
	     const char *const *env, uint32_t timeout_ms)
{
	return tool_start(r, tool, args, env, timeout_ms, 0);
}

int tool_run_split(struct tool_run *r, const char *tool, const char *const *args,
		   const char *const *env, uint32_t timeout_ms)
{
	return tool_start(r, tool, args, env, timeout_ms, 1);
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
