/* SPDX-License-Identifier: MIT */
/*
 * admin_rpc.c - nkv-admin rpc (admin_rpc.h): build the request with
 * json-c, send it as one line, read one response with json-c's streaming
 * tokener (the target's framing: a JSON value per response, a newline
 * after it), print its result or its error.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <json-c/json.h>

#include "tools/admin_rpc.h"
#include "tools/exit.h"

#define NKV_ADMIN_RPC_TIMEOUT_MS 30000
#define NKV_ADMIN_RPC_MAX_RESPONSE (64u << 20)

static int nkv_admin_rpc_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

static int nkv_admin_rpc_send(int fd, const char *method, struct json_object *params)
{
	struct json_object *req = json_object_new_object();
	const char *txt;
	size_t len, off = 0;
	int rc = 0;

	json_object_object_add(req, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(req, "id", json_object_new_int(1));
	json_object_object_add(req, "method", json_object_new_string(method));
	if (params)
		json_object_object_add(req, "params", json_object_get(params));
	txt = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	len = strlen(txt);
	while (off < len && !rc) {
		ssize_t n = send(fd, txt + off, len - off, MSG_NOSIGNAL);

		if (n < 0 && errno != EINTR)
			rc = -errno;
		else if (n > 0)
			off += (size_t)n;
	}
	if (!rc && send(fd, "\n", 1, MSG_NOSIGNAL) != 1)
		rc = -errno;
	json_object_put(req);
	return rc;
}

/* One JSON value from fd within the timeout: *out, or a negative errno
 * (-ETIMEDOUT, -ECONNRESET: closed before a whole one, -EBADMSG: not
 * JSON, -EMSGSIZE). */
static int nkv_admin_rpc_recv(int fd, struct json_object **out)
{
	json_tokener *tok = json_tokener_new();
	size_t total = 0;
	char buf[65536];
	int rc = -ECONNRESET;

	*out = NULL;
	while (tok) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, NKV_ADMIN_RPC_TIMEOUT_MS) == 0) {
			rc = -ETIMEDOUT;
			break;
		}
		n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			break;
		total += (size_t)n;
		*out = json_tokener_parse_ex(tok, buf, (int)n);
		if (json_tokener_get_error(tok) == json_tokener_success) {
			rc = *out ? 0 : -EBADMSG;
			break;
		}
		if (json_tokener_get_error(tok) != json_tokener_continue) {
			rc = -EBADMSG;
			break;
		}
		if (total > NKV_ADMIN_RPC_MAX_RESPONSE) {
			rc = -EMSGSIZE;
			break;
		}
	}
	json_tokener_free(tok);
	return rc;
}

/* The response: its result printed (0), or its error (1). */
static int nkv_admin_rpc_show(const char *method, struct json_object *resp)
{
	struct json_object *v, *code, *msg;

	if (json_object_object_get_ex(resp, "result", &v)) {
		printf("%s\n", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PRETTY |
							      JSON_C_TO_STRING_SPACED |
							      JSON_C_TO_STRING_NOSLASHESCAPE));
		return NKV_EXIT_OK;
	}
	if (json_object_object_get_ex(resp, "error", &v) &&
	    json_object_object_get_ex(v, "code", &code) &&
	    json_object_object_get_ex(v, "message", &msg)) {
		fprintf(stderr, "nkv-admin: rpc %s: error %d: %s\n", method,
			json_object_get_int(code), json_object_get_string(msg));
		return NKV_EXIT_FAIL;
	}
	fprintf(stderr, "nkv-admin: rpc %s: a response with neither result nor error: %s\n",
		method, json_object_to_json_string(resp));
	return NKV_EXIT_FAIL;
}

/* The params argument: an object, or NULL with the reason printed. */
static struct json_object *nkv_admin_rpc_params(const char *arg)
{
	enum json_tokener_error err;
	struct json_object *p = json_tokener_parse_verbose(arg, &err);

	if (!p && err != json_tokener_success) {
		fprintf(stderr, "nkv-admin: rpc: JSON params '%s': %s\n", arg,
			json_tokener_error_desc(err));
		return NULL;
	}
	if (!json_object_is_type(p, json_type_object)) {
		fprintf(stderr, "nkv-admin: rpc: JSON params must be an object, e.g. "
			"'{\"nsid\": 1}'\n");
		json_object_put(p);
		return NULL;
	}
	return p;
}

static int nkv_admin_rpc_call(const char *path, const char *method, struct json_object *params)
{
	struct json_object *resp = NULL;
	int fd = nkv_admin_rpc_connect(path), rc;

	if (fd < 0) {
		fprintf(stderr, "nkv-admin: rpc: cannot connect to %s: %s\n", path, strerror(-fd));
		return NKV_EXIT_SETUP;
	}
	rc = nkv_admin_rpc_send(fd, method, params);
	if (!rc)
		rc = nkv_admin_rpc_recv(fd, &resp);
	close(fd);
	if (rc) {
		fprintf(stderr, "nkv-admin: rpc %s: no response from %s: %s\n", method, path,
			rc == -ECONNRESET ? "connection closed" : strerror(-rc));
		return NKV_EXIT_SETUP;
	}
	rc = nkv_admin_rpc_show(method, resp);
	json_object_put(resp);
	return rc;
}

int nkv_admin_rpc(int argc, char **argv)
{
	struct json_object *params = NULL;
	int rc;

	if (argc < 3 || argc > 4 || strcmp(argv[0], "--socket")) {
		fprintf(stderr, "usage: nkv-admin rpc --socket PATH METHOD [JSON]\n");
		return NKV_EXIT_USAGE;
	}
	if (argc == 4 && !(params = nkv_admin_rpc_params(argv[3])))
		return NKV_EXIT_USAGE;
	rc = nkv_admin_rpc_call(argv[1], argv[2], params);
	json_object_put(params);
	return rc;
}
