/* SPDX-License-Identifier: MIT */
/*
 * fuzz_tcp_conn.c - nkv-target's NVMe/TCP transport on arbitrary byte
 * streams: per input, a whole server (nkv_tcp_server_*) on 127.0.0.1 and
 * an ephemeral port, against a real subsystem (a mem backend), reached
 * as a host reaches it. It must answer, send a C2HTermReq or close,
 * never crash, hang or leak (memory: LeakSanitizer; fds: checked after
 * every input, once the server has stopped).
 *
 * Input: byte 0 = how far the harness brings the connection before the
 * fuzzer's bytes: 0 nothing (the bytes start with what should be an
 * ICReq); bit 0 an ICReq and an admin Connect, CC.EN = 1 (the bytes are
 * admin capsules); bit 1 then an I/O queue connection of that controller
 * (the bytes go there: KV commands, R2T/H2CData); bit 2 header and data
 * digests negotiated. The rest is sent as it is, the write side shut,
 * and everything the target says read until it closes.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "target/backends/registry.h"
#include "target/tcp/server.h"
#include "tcp_host.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct nkv_subsys *fz_ss;

static int fz_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

static struct nkv_subsys *fz_subsys(void)
{
	struct nkv_be_conf kv = { sizeof(kv), .capacity = 16 << 20, .max_value = 1 << 20 };
	char err[128];

	if (!fz_ss) {
		fz_ss = nkv_subsys_create(NULL);
		if (!fz_ss || nkv_subsys_add_ns(fz_ss, 1, nkv_be_create("mem", &kv, err, sizeof(err))))
			abort();
	}
	return fz_ss;
}

/* The harness could not set the connection up (not the target's answer
 * to the fuzzer's bytes, which are not sent yet): say which step and
 * what it returned (-errno, or an NVMe status for Connect), then stop,
 * so a rare failure on a loaded machine is not a bare signal. */
static void fz_setup_failed(const char *step, uint8_t mode, int rc)
{
	fprintf(stderr, "fuzz_tcp_conn: setup failed before the input was sent: %s "
		"(mode %u, returned %d%s%s)\n", step, mode, rc, rc < 0 ? ": " : "",
		rc < 0 ? strerror(-rc) : "");
	abort();
}

/* Bring the connection as far as mode says; the one the bytes go to. */
static struct th *fz_prepare(uint8_t mode, uint16_t port, struct th *a, struct th *io)
{
	int dg = !!(mode & 4), rc;
	const char *step;

	if (!(mode & 3)) {
		if ((rc = th_open(a, port, 2000)) != 0)
			fz_setup_failed("connect", mode, rc);
		return a;
	}
	if ((rc = th_admin(a, port, dg, dg, TH_SUBNQN, 0)) != 0)
		fz_setup_failed("admin queue (ICReq, Connect, CC.EN)", mode, rc);
	if (!(mode & 2))
		return a;
	if ((rc = th_io_steps(io, a, 1, &step)) != 0) {
		char what[64];

		snprintf(what, sizeof(what), "I/O queue %s", step);
		fz_setup_failed(what, mode, rc);
	}
	return io;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nkv_tcp_server_opts o = { sizeof(o), .ss = fz_subsys() };
	struct nkv_tcp_server *s;
	struct th a, io, *t;
	uint8_t buf[4096];
	int fds = fz_open_fds();
	uint16_t port;

	if (!size)
		return 0;
	o.ctrl.size = sizeof(o.ctrl);
	o.log_level = -1;	/* quiet: the fuzzer's bytes would fill the log */
	if (nkv_tcp_server_create(&o, &s) || nkv_tcp_server_listen(s, NULL, 0, &port) ||
	    nkv_tcp_server_start(s))
		abort();
	memset(&io, 0, sizeof(io));
	io.fd = -1;
	t = fz_prepare(data[0], port, &a, &io);
	if (size > 1)
		th_send(t, data + 1, (uint32_t)(size - 1));
	shutdown(t->fd, SHUT_WR);
	/* Until the target closes (or 10 s pass without a byte). */
	for (;;) {
		ssize_t n = recv(t->fd, buf, sizeof(buf), 0);

		if (n <= 0 && !(n < 0 && errno == EINTR))
			break;
	}
	th_close(&io);
	th_close(&a);
	nkv_tcp_server_stop(s);
	if (fz_open_fds() != fds)
		abort();	/* an fd the server did not close */
	return 0;
}
