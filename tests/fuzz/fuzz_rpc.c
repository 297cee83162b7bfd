/* SPDX-License-Identifier: MIT */
/*
 * fuzz_rpc.c - nkv-target's control socket (src/target/rpc/) on arbitrary
 * byte streams: one RPC server (nkv_rpc_server_start) on a private
 * socket for the whole run, with the registry's rpc_list and a method of
 * this harness's own whose params cover every type a table can ask for.
 * Per input: connect, send the bytes (reading meanwhile, as the server
 * stops reading while its responses wait), half-close, read to the end.
 * Every response line must be a JSON-RPC 2.0 object with an id member and
 * exactly one of result and error; the server must close the connection
 * (no hang), never crash or leak. max_request is 512 bytes here, so that
 * inputs reach the size limit.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "target/core/backend.h"
#include "target/rpc/rpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct nkv_rpc_server *fz_srv;
static char fz_path[108];

static void fz_echo(struct nkv_rpc_call *call)
{
	uint64_t a;

	if (nkv_rpc_param_u64(call, "a", 0, 1000, &a) < 0)
		return;
	call->result = json_object_get(call->params);
}

static const struct nkv_rpc_param fz_params[] = {
	{ "a", json_type_int, 1, "0..1000" },
	{ "b", json_type_string, 0, "" },
	{ "c", json_type_boolean, 0, "" },
	{ "d", json_type_object, 0, "" },
	{ "e", json_type_array, 0, "" },
	{ NULL, json_type_null, 0, NULL },
};

static void fz_stop(void)
{
	nkv_rpc_server_stop(fz_srv);
}

static void fz_start(void)
{
	struct nkv_rpc_server_opts o = { .size = sizeof(o), .path = fz_path, .max_request = 512 };
	pid_t holder;

	snprintf(fz_path, sizeof(fz_path), "/tmp/nkv-fuzz-rpc-%d.sock", (int)getpid());
	nkv_be_log_set(NKV_BE_LOG_ERROR, NULL, NULL);
	if (nkv_rpc_register("fz_echo", "the params back", fz_params, fz_echo) ||
	    nkv_rpc_server_start(&o, &fz_srv, &holder))
		abort();
	atexit(fz_stop);
}

static int fz_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	strcpy(sa.sun_path, fz_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		abort();
	return fd;
}

/* One response line: JSON-RPC 2.0, an id, a result or an error. */
static void fz_check_line(const char *line)
{
	struct json_object *r = json_tokener_parse(line), *v;
	int res, err;

	if (!json_object_is_type(r, json_type_object) ||
	    !json_object_object_get_ex(r, "jsonrpc", &v) ||
	    strcmp(json_object_get_string(v), "2.0") || !json_object_object_get_ex(r, "id", NULL))
		abort();
	res = json_object_object_get_ex(r, "result", NULL);
	err = json_object_object_get_ex(r, "error", &v);
	if (res == err || (err && !json_object_object_get_ex(v, "code", NULL)))
		abort();
	json_object_put(r);
}

/* Split what came back into lines and check each; keep a partial one. */
static size_t fz_check(char *buf, size_t len)
{
	size_t start = 0, i;

	for (i = 0; i < len; i++)
		if (buf[i] == '\n') {
			buf[i] = 0;
			fz_check_line(buf + start);
			start = i + 1;
		}
	memmove(buf, buf + start, len - start);
	return len - start;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char in[1 << 20];
	size_t sent = 0, got = 0;
	int fd, shut = 0;

	if (!fz_srv)
		fz_start();
	fd = fz_connect();
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN | (sent < size ? POLLOUT : 0) };
		ssize_t n;
		int r;

		if (sent == size && !shut)
			shut = !shutdown(fd, SHUT_WR);
		r = poll(&p, 1, 10000);
		/* libFuzzer's -timeout ticks SIGALRM: an interrupted wait is
		 * not a server that hangs (CI once aborted on one). */
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			abort();	/* the server hangs */
		if ((p.revents & POLLOUT) && sent < size) {
			n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
			if (n > 0)
				sent += (size_t)n;
			else if (n < 0 && errno != EAGAIN)
				sent = size;	/* the server closed: read what it said */
		}
		if (p.revents & (POLLIN | POLLHUP)) {
			n = recv(fd, in + got, sizeof(in) - 1 - got, 0);
			if (n == 0 || (n < 0 && errno != EAGAIN))
				break;
			if (n > 0)
				got = fz_check(in, got + (size_t)n);
		}
	}
	close(fd);
	return 0;
}
