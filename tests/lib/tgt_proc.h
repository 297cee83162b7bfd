/* SPDX-License-Identifier: MIT */
/*
 * tgt_proc.h - a real nkv-target process for tests (BUILD/bin/nkv-target,
 * as a user runs it): started with --listen tcp:127.0.0.1:PORT (0: an
 * ephemeral port, read back from its event=tcp_listening line), its
 * output in a file the test can search, stopped by its PID (and killed
 * with the test's process, should that die first: PR_SET_PDEATHSIG).
 */
#ifndef NKV_TEST_TGT_PROC_H
#define NKV_TEST_TGT_PROC_H

#include <stdint.h>
#include <sys/types.h>

struct tgt_proc {
	pid_t pid;
	uint16_t port;
	char log[128];		/* its stdout and stderr */
};

/* Start nkv-target --listen tcp:127.0.0.1:port plus args (NULL-ended);
 * wait (10 s at most) for it to listen. 0 or -errno (the process then
 * ended). */
int tgt_proc_start(struct tgt_proc *p, uint16_t port, const char *const *args);
/* SIGTERM, then SIGKILL after 5 s; reaped. The log file stays for
 * tgt_proc_grep until tgt_proc_free. */
void tgt_proc_stop(struct tgt_proc *p);
/* SIGKILL now (a crash), reaped. */
void tgt_proc_kill(struct tgt_proc *p);
void tgt_proc_free(struct tgt_proc *p);
/* How many lines of a log file hold needle. */
int tgt_log_count(const char *path, const char *needle);
/* Wait up to ms for tgt_log_count(path, needle) >= n: 1 or 0. */
int tgt_log_wait(const char *path, const char *needle, int n, uint32_t ms);

#endif /* NKV_TEST_TGT_PROC_H */
