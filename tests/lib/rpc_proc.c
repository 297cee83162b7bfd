/* SPDX-License-Identifier: MIT */
/*
 * rpc_proc.c - nkv-target as a process, and a JSON-RPC client (rpc_proc.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "rpc_proc.h"

int rpc_proc_bindir(char *path, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -errno;
	exe[n] = 0;
	snprintf(path, len, "%s/../bin", dirname(exe));
	return 0;
}

int rpc_proc_srcdir(const char *rel, char *path, size_t len)
{
	char probe[PATH_MAX + 64];
	int up;

	if (!getcwd(path, len))
		return -errno;
	for (up = 0; up < 5; up++) {
		snprintf(probe, sizeof(probe), "%s/%s", path, rel);
		if (!access(probe, F_OK))
			return 0;
		if (strlen(path) + 4 > len)
			break;
		strcat(path, "/..");
	}
	return -ENOENT;
}

static int rpc_proc_bin(char *path, size_t len)
{
	char dir[PATH_MAX];
	int rc = rpc_proc_bindir(dir, sizeof(dir));

	if (!rc)
		snprintf(path, len, "%s/nkv-target", dir);
	return rc;
}

static void rpc_proc_exec(const struct rpc_proc *t, const char *bin, const char *const *extra,
			  int tcp)
{
	const char *argv[32] = { bin, "--socket", t->vsock, "--rpc-socket", t->rsock,
				 "--capacity", "64M", "--log-level", "warn" };
	int i, fd = open(t->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (tcp) {	/* the tcp_listening line is logged at info */
		argv[1] = "--listen";
		argv[2] = "tcp:127.0.0.1:0";
		argv[8] = "info";
	}
	for (i = 0; extra && extra[i] && i < 16; i++)
		argv[9 + i] = extra[i];
	if (fd >= 0)
		dup2(fd, 2);
	/* A test that crashes runs no .fini: the target goes with it, and
	 * with it the test's output pipe it inherited (else a reader of
	 * that pipe waits for ever). */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	execv(bin, (char *const *)argv);
	_exit(127);
}

/* The port of the log's event=tcp_listening line, or 0. */
static uint16_t rpc_proc_port(const struct rpc_proc *t)
{
	char buf[4096];
	const char *p;
	ssize_t n;
	int fd = open(t->log, O_RDONLY);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	p = strstr(buf, "event=tcp_listening");
	p = p ? strstr(p, " port=") : NULL;
	return p ? (uint16_t)atoi(p + 6) : 0;
}

static int rpc_proc_start_as(struct rpc_proc *t, const char *const *extra, int tcp)
{
	char bin[PATH_MAX + 32];
	struct stat st;
	int i, rc = rpc_proc_bin(bin, sizeof(bin));

	if (rc)
		return rc;
	memset(t, 0, sizeof(*t));
	t->status = -1;
	snprintf(t->dir, sizeof(t->dir), "/tmp/nkv-rpc-XXXXXX");
	if (!mkdtemp(t->dir))
		return -errno;
	snprintf(t->vsock, sizeof(t->vsock), "%s/v.sock", t->dir);
	snprintf(t->rsock, sizeof(t->rsock), "%s/r.sock", t->dir);
	snprintf(t->uri, sizeof(t->uri), "vfio-user:%s", t->vsock);
	snprintf(t->log, sizeof(t->log), "%s/target.log", t->dir);
	t->pid = fork();
	if (t->pid < 0)
		return -errno;
	if (!t->pid)
		rpc_proc_exec(t, bin, extra, tcp);
	for (i = 0; i < 500; i++) {
		if (tcp && !stat(t->rsock, &st) && (t->port = rpc_proc_port(t)))
			return 0;
		if (!tcp && !stat(t->vsock, &st) && !stat(t->rsock, &st))
			return 0;
		if (!rpc_proc_alive(t))
			return -ECHILD;
		usleep(10000);
	}
	return -ETIMEDOUT;
}

int rpc_proc_start(struct rpc_proc *t, const char *const *extra)
{
	return rpc_proc_start_as(t, extra, 0);
}

int rpc_proc_start_tcp(struct rpc_proc *t, const char *const *extra)
{
	return rpc_proc_start_as(t, extra, 1);
}

int rpc_proc_alive(struct rpc_proc *t)
{
	int st;

	if (t->pid <= 0 || t->status >= 0)
		return 0;
	if (waitpid(t->pid, &st, WNOHANG) != t->pid)
		return 1;
	t->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return 0;
}

void rpc_proc_stop(struct rpc_proc *t)
{
	char cmd[128];
	int i;

	if (rpc_proc_alive(t)) {
		kill(t->pid, SIGTERM);
		for (i = 0; i < 500 && rpc_proc_alive(t); i++)
			usleep(10000);
		if (i == 500) {
			kill(t->pid, SIGKILL);
			waitpid(t->pid, NULL, 0);
		}
	}
	t->pid = 0;
	if (t->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", t->dir);
		(void)!system(cmd);
	}
}

int rpc_proc_log_has(const struct rpc_proc *t, const char *text)
{
	static char buf[1 << 20];
	int i, found = 0;

	for (i = 0; i < 200 && !found; i++) {
		FILE *f = fopen(t->log, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = 0;
		found = strstr(buf, text) != NULL;
		if (!found)
			usleep(10000);
	}
	return found;
}

int rpc_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

int rpc_send(int fd, const char *text)
{
	size_t len = strlen(text), off = 0;

	while (off < len) {
		ssize_t n = send(fd, text + off, len - off, MSG_NOSIGNAL);

		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			off += (size_t)n;
	}
	return 0;
}

struct json_object *rpc_read(int fd, int timeout_ms)
{
	char line[1 << 16];
	size_t len = 0;

	while (len < sizeof(line) - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, timeout_ms) <= 0 || recv(fd, &line[len], 1, 0) != 1)
			return NULL;
		if (line[len] == '\n')
			break;
		len++;
	}
	line[len] = 0;
	return json_tokener_parse(line);
}

struct json_object *rpc_call(const struct rpc_proc *t, const char *method, const char *params)
{
	char req[4096];
	struct json_object *r;
	int fd = rpc_connect(t->rsock);

	if (fd < 0)
		return NULL;
	snprintf(req, sizeof(req), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\"%s%s}\n", method,
		 params ? ",\"params\":" : "", params ? params : "");
	r = rpc_send(fd, req) ? NULL : rpc_read(fd, 10000);
	close(fd);
	return r;
}

int rpc_code(struct json_object *resp)
{
	struct json_object *e, *c;

	if (!json_object_object_get_ex(resp, "error", &e) ||
	    !json_object_object_get_ex(e, "code", &c))
		return 0;
	return json_object_get_int(c);
}

const char *rpc_msg(struct json_object *resp)
{
	struct json_object *e, *m;

	if (!json_object_object_get_ex(resp, "error", &e) ||
	    !json_object_object_get_ex(e, "message", &m))
		return "";
	return json_object_get_string(m);
}

struct json_object *rpc_result(struct json_object *resp)
{
	struct json_object *r;

	return json_object_object_get_ex(resp, "result", &r) ? r : NULL;
}

long long rpc_int(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return -1;
	return (long long)json_object_get_int64(v);
}
