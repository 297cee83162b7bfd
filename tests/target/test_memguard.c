/* SPDX-License-Identifier: MIT */
/*
 * test_memguard.c - the SIGBUS-safe copy: a copy touching a page that
 * vanished (memfd truncated under its mapping) returns -EFAULT, and is
 * repeatable; a SIGBUS outside a guarded copy still kills the process
 * (checked in a child), whether raised by a fault or sent by kill().
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "target/core/memguard.h"

#define PG 4096u

/* Two pages of a memfd, the second cut off by a truncate. */
static uint8_t *half_gone(int *fd)
{
	uint8_t *p;

	*fd = memfd_create("memguard-test", MFD_CLOEXEC);
	cr_assert_geq(*fd, 0);
	cr_assert_eq(ftruncate(*fd, 2 * PG), 0);
	p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	cr_assert_neq(p, MAP_FAILED);
	memset(p, 0x5a, PG);
	cr_assert_eq(ftruncate(*fd, PG), 0);
	return p;
}

Test(memguard, vanished_page_is_efault)
{
	uint8_t buf[64], *p;
	struct iovec iov[2];
	uint64_t f0;
	int fd, i;

	cr_assert_eq(nkv_guard_init(), 0);
	p = half_gone(&fd);
	f0 = nkv_guard_faults();
	cr_expect_eq(nkv_guard_copy(buf, p, sizeof(buf)), 0);
	cr_expect_eq(buf[0], 0x5a);
	/* Again and again: the recovery point is re-armed each time. */
	for (i = 0; i < 3; i++) {
		cr_expect_eq(nkv_guard_copy(buf, p + PG, sizeof(buf)), -EFAULT);
		cr_expect_eq(nkv_guard_copy(p + PG + 8, buf, sizeof(buf)), -EFAULT);
	}
	cr_expect_eq(nkv_guard_copy_publish(p + PG, buf, 12, (uint32_t *)(p + PG + 12), 1),
		     -EFAULT);
	/* The payload fits, the flag lies past the end: fails, payload in. */
	cr_expect_eq(nkv_guard_copy_publish(p + PG - 12, buf, 12, (uint32_t *)(p + PG), 1),
		     -EFAULT);
	cr_expect_eq(memcmp(p + PG - 12, buf, 12), 0);
	cr_expect_eq(nkv_guard_copy_publish(p, buf, 12, (uint32_t *)(p + 12), 7), 0);
	cr_expect_eq(*(uint32_t *)(p + 12), 7);
	cr_expect_eq(memcmp(p, buf, 12), 0);
	/* A copy that straddles the end fails as a whole. */
	iov[0] = (struct iovec){ p + PG - 16, 16 };
	iov[1] = (struct iovec){ p + PG, 16 };
	cr_expect_eq(nkv_guard_gather(buf, iov, 2, 32), -EFAULT);
	cr_expect_eq(nkv_guard_scatter(iov, 1, buf, 16), 0);
	cr_expect_eq(nkv_guard_faults() - f0, 9);
	munmap(p, 2 * PG);
	close(fd);
}

/* At an offset: the segments before it are skipped whole or in part, and
 * a copy that reaches a vanished page still fails. */
Test(memguard, scatter_at_offset)
{
	uint8_t a[8], b[8], src[6] = { 1, 2, 3, 4, 5, 6 }, *p;
	struct iovec iov[2] = { { a, sizeof(a) }, { b, sizeof(b) } };
	int fd;

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	cr_assert_eq(nkv_guard_scatter_at(iov, 2, 5, src, 6), 0);
	cr_expect_eq(memcmp(a + 5, src, 3), 0);
	cr_expect_eq(memcmp(b, src + 3, 3), 0);
	cr_expect_eq(a[4], 0);
	cr_expect_eq(b[3], 0);
	cr_assert_eq(nkv_guard_scatter_at(iov, 2, 10, src, 2), 0);
	cr_expect_eq(b[2], 1);
	cr_expect_eq(b[3], 2);
	cr_assert_eq(nkv_guard_init(), 0);
	p = half_gone(&fd);
	iov[0] = (struct iovec){ p, PG };
	iov[1] = (struct iovec){ p + PG, 16 };
	cr_expect_eq(nkv_guard_scatter_at(iov, 2, PG - 2, src, 6), -EFAULT);
	cr_expect_eq(memcmp(p + PG - 2, src, 2), 0);
	munmap(p, 2 * PG);
	close(fd);
}

static int child_status(void (*fn)(void))
{
	pid_t pid = fork();
	int st = 0;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return st;
}

static void unguarded_fault(void)
{
	volatile uint8_t *p;
	int fd;

	nkv_guard_init();
	p = half_gone(&fd);
	(void)p[PG];	/* no recovery point: must kill us */
}

static void sent_sigbus(void)
{
	nkv_guard_init();
	kill(getpid(), SIGBUS);
	pause();
}

/* Killed by SIGBUS, or (under ASan) by the sanitizer's SIGBUS handler,
 * installed before ours and chained to: it reports and exits non-zero. */
static int killed(int st)
{
	return (WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS) ||
	       (WIFEXITED(st) && WEXITSTATUS(st) != 0);
}

Test(memguard, other_sigbus_still_kills)
{
	int st = child_status(unguarded_fault);

	cr_expect(killed(st), "status %#x", st);
	st = child_status(sent_sigbus);
	cr_expect(killed(st), "status %#x", st);
}
