/* SPDX-License-Identifier: MIT */
/*
 * test_service.c - nkv-target as a systemd service (share/systemd/,
 * docs/service.md): the unit files pass `systemd-analyze verify` (skipped
 * where it is absent), the tmpfiles entry makes /run/nkv under a test
 * root, and the target tells readiness, reloading and stopping on
 * NOTIFY_SOCKET (sd_notify) at the right moments.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "rpc_proc.h"

static char dir[64], src[1024], bin[1024];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/nkv-svc-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	/* The tests run from BUILD/tests; the unit files are in the tree. */
	cr_assert_eq(rpc_proc_srcdir("share/systemd/nkv-target.service.in", src, sizeof(src)), 0);
	cr_assert_eq(rpc_proc_bindir(bin, sizeof(bin)), 0);
}

static void teardown(void)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(service, .init = setup, .fini = teardown, .timeout = 60);

/* share/systemd/name.in as make install writes it: @BINDIR@ the built
 * nkv-target's directory (BUILD/bin), @SYSCONFDIR@ the test's; into dir/as. */
static void unit(const char *name, const char *as)
{
	char cmd[3 * 1024 + 512];

	snprintf(cmd, sizeof(cmd), "sed -e 's|@BINDIR@|%s|g' -e 's|@SYSCONFDIR@|%s|g' "
		 "%s/share/systemd/%s.in > %s/%s", bin, dir, src, name, dir, as);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* systemd-analyze verify on dir/as: its exit status, and nothing said. */
static void verify(const char *as)
{
	char cmd[512], out[4096] = "";
	FILE *f;
	size_t n;

	snprintf(cmd, sizeof(cmd), "cd %s && systemd-analyze verify --man=no ./%s 2>&1", dir, as);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	cr_expect_eq(pclose(f), 0, "%s: %s", as, out);
	cr_expect_eq(n, 0, "%s: systemd-analyze says:\n%s", as, out);
}

Test(service, unit_files_pass_systemd_analyze_verify)
{
	if (access("/usr/bin/systemd-analyze", X_OK) && access("/bin/systemd-analyze", X_OK))
		cr_skip_test("systemd-analyze absent");
	unit("nkv-target.service", "nkv-target.service");
	unit("nkv-target@.service", "nkv-target@.service");
	unit("nkv-target@.service", "nkv-target@demo.service");
	verify("nkv-target.service");
	verify("nkv-target@.service");
	verify("nkv-target@demo.service");
}

Test(service, verify_catches_a_broken_unit)
{
	char cmd[512];
	FILE *f;

	if (access("/usr/bin/systemd-analyze", X_OK) && access("/bin/systemd-analyze", X_OK))
		cr_skip_test("systemd-analyze absent");
	/* The check itself: a unit naming a missing program fails it. */
	snprintf(cmd, sizeof(cmd), "%s/broken.service", dir);
	f = fopen(cmd, "w");
	cr_assert_not_null(f);
	fputs("[Service]\nType=notify\nExecStart=/nonexistent/nkv-target\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cd %s && systemd-analyze verify --man=no ./broken.service "
		 ">/dev/null 2>&1", dir);
	cr_expect_neq(system(cmd), 0);
}

Test(service, tmpfiles_entry_makes_the_socket_directory)
{
	char cmd[4 * 1024 + 512], path[128];
	struct stat st;

	if (access("/usr/bin/systemd-tmpfiles", X_OK) && access("/bin/systemd-tmpfiles", X_OK))
		cr_skip_test("systemd-tmpfiles absent");
	if (geteuid())
		cr_skip_test("systemd-tmpfiles --root needs root to give /run/nkv its owner");
	snprintf(cmd, sizeof(cmd), "systemd-tmpfiles --create --root=%s "
		 "%s/share/systemd/nkv-tmpfiles.conf", dir, src);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	snprintf(path, sizeof(path), "%s/run/nkv", dir);
	cr_assert_eq(stat(path, &st), 0, "no %s", path);
	cr_expect(S_ISDIR(st.st_mode));
	cr_expect_eq(st.st_mode & 07777, 0755);
}

/* A datagram socket standing in for systemd's notify socket. */
static int notify_socket(char *path, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	snprintf(path, len, "%s/notify", dir);
	cr_assert_lt(strlen(path), sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* The next notification holding what, within 5 s: 1, or 0. */
static int notified(int fd, const char *what)
{
	char msg[512];
	ssize_t n;

	while ((n = recv(fd, msg, sizeof(msg) - 1, 0)) > 0) {
		msg[n] = 0;
		if (strstr(msg, what))
			return 1;
	}
	return 0;
}

Test(service, sd_notify_ready_reloading_stopping)
{
	char path[128], conf[128];
	const char *extra[] = { "--config", conf, "--metrics", "0", NULL };
	struct rpc_proc t;
	struct stat st;
	FILE *f;
	int fd = notify_socket(path, sizeof(path));

	snprintf(conf, sizeof(conf), "%s/t.conf", dir);
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fputs("log-level = warn\n", f);
	fclose(f);
	setenv("NOTIFY_SOCKET", path, 1);
	cr_assert_eq(rpc_proc_start(&t, extra), 0, "target did not start");
	unsetenv("NOTIFY_SOCKET");
	cr_expect(notified(fd, "READY=1"), "no READY=1");
	/* Ready means listening: both sockets are there, the port logged. */
	cr_expect_eq(stat(t.vsock, &st), 0);
	cr_expect_eq(stat(t.rsock, &st), 0);
	cr_expect(rpc_proc_log_has(&t, "event=metrics_listening"));
	cr_assert_eq(kill(t.pid, SIGHUP), 0);
	cr_expect(notified(fd, "RELOADING=1"), "no RELOADING=1 at SIGHUP");
	cr_expect(notified(fd, "READY=1"), "no READY=1 after the reload");
	cr_assert_eq(kill(t.pid, SIGTERM), 0);
	cr_expect(notified(fd, "STOPPING=1"), "no STOPPING=1 at SIGTERM");
	rpc_proc_stop(&t);
	cr_expect_eq(t.status, 0, "SIGTERM: exit %d, want a clean 0", t.status);
	close(fd);
}
