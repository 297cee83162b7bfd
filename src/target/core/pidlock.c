/* SPDX-License-Identifier: MIT */
/* pidlock.c - see pidlock.h. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "target/core/pidlock.h"

/* The PID recorded in fd's file; 0 if none. */
static pid_t nkv_pidlock_read(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	long v;

	if (n <= 0)
		return 0;
	buf[n] = 0;
	v = strtol(buf, NULL, 10);
	return v > 0 && v < (1l << 30) ? (pid_t)v : 0;
}

/* The holder of a lock on the file st describes, from /proc/locks. */
static pid_t nkv_pidlock_proc(const struct stat *st)
{
	FILE *f = fopen("/proc/locks", "re");
	char line[256], type[16], mand[16], rw[16];
	unsigned long long ino;
	unsigned maj, min;
	pid_t pid = 0;
	long p;

	if (!f)
		return 0;
	while (!pid && fgets(line, sizeof(line), f)) {
		const char *s = strchr(line, ':');

		/* "ID: FLOCK  ADVISORY  WRITE PID MAJ:MIN:INO START END";
		 * a waiter's line has "->" before the type: not a holder */
		if (!s || strstr(s, "->") ||
		    sscanf(s + 1, "%15s %15s %15s %ld %x:%x:%llu", type, mand, rw, &p, &maj, &min,
			   &ino) != 7)
			continue;
		if (p > 0 && ino == (unsigned long long)st->st_ino &&
		    maj == major(st->st_dev) && min == minor(st->st_dev))
			pid = (pid_t)p;
	}
	fclose(f);
	return pid;
}

pid_t nkv_lock_holder(const char *path)
{
	struct stat st;
	pid_t pid;
	int fd, i;

	if (stat(path, &st))
		return 0;
	pid = nkv_pidlock_proc(&st);
	if (pid)
		return pid;
	/* A holder that has just taken the lock writes its PID next. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	for (i = 0; fd >= 0 && i < 20; i++) {
		pid = nkv_pidlock_read(fd);
		if (pid && !kill(pid, 0))
			break;
		pid = 0;
		usleep(5000);
	}
	if (fd >= 0)
		close(fd);
	return pid;
}

void nkv_lock_holder_name(pid_t pid, char *buf, size_t len)
{
	char p[64];
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/comm", (int)pid);
	f = fopen(p, "re");
	if (!f || !fgets(buf, (int)len, f))
		snprintf(buf, len, "?");
	buf[strcspn(buf, "\n")] = 0;
	if (f)
		fclose(f);
}

/* Does path still name the file open as fd (not removed by a holder
 * that released it since we opened it)? */
static int nkv_pidlock_same(const char *path, int fd)
{
	struct stat a, b;

	return !fstat(fd, &a) && a.st_nlink && !stat(path, &b) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

int nkv_pidlock_take(const char *path, pid_t *holder, pid_t *stale)
{
	char pid[24];
	int fd, e, tries, n;

	*holder = *stale = 0;
	for (tries = 0; tries < 100; tries++) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0)
			return -errno;
		if (flock(fd, LOCK_EX | LOCK_NB)) {
			e = errno;
			if (e == EWOULDBLOCK && !nkv_pidlock_same(path, fd)) {
				close(fd);	/* its holder is leaving: the next file */
				continue;
			}
			close(fd);
			if (e == EWOULDBLOCK)
				*holder = nkv_lock_holder(path);
			return -e;
		}
		if (nkv_pidlock_same(path, fd))
			break;
		close(fd);	/* removed by the holder we waited for: take again */
	}
	if (tries == 100)
		return -EAGAIN;
	/* A clean release removes the file: a PID still in it was left by a
	 * holder that died holding the lock. */
	*stale = nkv_pidlock_read(fd);
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, pid, (size_t)n, 0) != n) {
		e = errno ? errno : EIO;
		close(fd);
		return -e;
	}
	return fd;
}

void nkv_pidlock_release(const char *path, int fd)
{
	if (fd < 0)
		return;
	if (nkv_pidlock_same(path, fd))
		unlink(path);
	close(fd);
}
