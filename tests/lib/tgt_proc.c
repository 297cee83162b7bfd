/* SPDX-License-Identifier: MIT */
/* tgt_proc.c - a real nkv-target process for tests (tgt_proc.h). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "tgt_proc.h"

static void tgt_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int tgt_log_count(const char *path, const char *needle)
{
	FILE *f = fopen(path, "re");
	char line[4096];
	int n = 0;

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return n;
}

int tgt_log_wait(const char *path, const char *needle, int n, uint32_t ms)
{
	uint32_t t;

	for (t = 0; t <= ms; t += 20) {
		if (tgt_log_count(path, needle) >= n)
			return 1;
		tgt_sleep_ms(20);
	}
	return 0;
}

/* The port of the last event=tcp_listening line, or 0. */
static uint16_t tgt_proc_port(const char *path)
{
	FILE *f = fopen(path, "re");
	char line[4096];
	unsigned port = 0;
	const char *p;

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "event=tcp_listening") && (p = strstr(line, " port=")))
			port = (unsigned)atoi(p + 6);
	if (f)
		fclose(f);
	return (uint16_t)port;
}

static void tgt_proc_exec(const char *log, uint16_t port, const char *const *args)
{
	char exe[PATH_MAX], bin[PATH_MAX + 32], listen[32];
	const char *argv[64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600), i = 0, j;

	exe[n > 0 ? n : 0] = 0;
	snprintf(bin, sizeof(bin), "%s/../bin/nkv-target", dirname(exe));
	snprintf(listen, sizeof(listen), "tcp:127.0.0.1:%u", port);
	argv[i++] = bin;
	argv[i++] = "--listen";
	argv[i++] = listen;
	for (j = 0; args && args[j] && i < 62; j++)
		argv[i++] = args[j];
	argv[i] = NULL;
	dup2(fd, 1);
	dup2(fd, 2);
	/* A test that crashes takes its targets with it: none is left. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	execv(bin, (char *const *)argv);
	_exit(127);
}

int tgt_proc_start(struct tgt_proc *p, uint16_t port, const char *const *args)
{
	int t, st;

	if (!p->log[0]) {
		snprintf(p->log, sizeof(p->log), "/tmp/nkv-tgt-proc-XXXXXX");
		t = mkstemp(p->log);
		if (t < 0)
			return -errno;
		close(t);
	}
	truncate(p->log, 0);
	p->port = 0;
	p->pid = fork();
	if (p->pid < 0)
		return -errno;
	if (!p->pid)
		tgt_proc_exec(p->log, port, args);
	for (t = 0; t < 500; t++) {
		p->port = tgt_proc_port(p->log);
		if (p->port)
			return 0;
		if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
			p->pid = 0;
			return -ECHILD;
		}
		tgt_sleep_ms(20);
	}
	tgt_proc_kill(p);
	return -ETIMEDOUT;
}

static void tgt_proc_end(struct tgt_proc *p, int sig, unsigned grace_ms)
{
	unsigned t;
	int st;

	if (p->pid <= 0)
		return;
	kill(p->pid, SIGCONT);	/* a test may have stopped it */
	kill(p->pid, sig);
	for (t = 0; t < grace_ms; t += 10) {
		if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
			p->pid = 0;
			return;
		}
		tgt_sleep_ms(10);
	}
	kill(p->pid, SIGKILL);
	waitpid(p->pid, &st, 0);
	p->pid = 0;
}

void tgt_proc_stop(struct tgt_proc *p)
{
	tgt_proc_end(p, SIGTERM, 5000);
}

void tgt_proc_kill(struct tgt_proc *p)
{
	tgt_proc_end(p, SIGKILL, 5000);
}

void tgt_proc_free(struct tgt_proc *p)
{
	tgt_proc_stop(p);
	if (p->log[0])
		unlink(p->log);
	p->log[0] = 0;
}
