/* SPDX-License-Identifier: MIT */
/*
 * server.c - GET /metrics over HTTP, served by libmicrohttpd on a thread
 * of its own (its internal polling thread): a scrape renders every
 * collector, the hot path is never touched. Anything but GET /metrics
 * gets 404 or 405; a few connections at once, each with a time limit, so
 * a stuck client cannot hold the endpoint.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "target/metrics/metrics.h"

#define NKV_METRICS_MAX_CLIENTS 8	/* scrapers at once */
#define NKV_METRICS_TIMEOUT_S 10	/* a connection idle this long is closed */

struct nkv_metrics_server {
	struct MHD_Daemon *d;
};

int nkv_metrics_addr_parse(const char *s, uint32_t *ip_be, uint16_t *port)
{
	const char *colon = strrchr(s, ':');
	char host[64], *end;
	unsigned long p;
	struct in_addr a;

	if (colon && (size_t)(colon - s) >= sizeof(host))
		return -EINVAL;
	snprintf(host, sizeof(host), "%.*s", colon ? (int)(colon - s) : 0, s);
	if (!*host)
		snprintf(host, sizeof(host), "127.0.0.1");
	s = colon ? colon + 1 : s;
	errno = 0;
	p = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || p > 65535 || inet_pton(AF_INET, host, &a) != 1)
		return -EINVAL;
	*ip_be = a.s_addr;
	*port = (uint16_t)p;
	return 0;
}

static enum MHD_Result nkv_metrics_reply(struct MHD_Connection *conn, unsigned code,
					 const char *text)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text,
								 MHD_RESPMEM_PERSISTENT);
	enum MHD_Result rc;

	if (!r)
		return MHD_NO;
	rc = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result nkv_metrics_handler(void *cls, struct MHD_Connection *conn,
					   const char *url, const char *method,
					   const char *version, const char *upload_data,
					   size_t *upload_size, void **con_cls)
{
	struct nkv_metrics_buf b;
	struct MHD_Response *r;
	enum MHD_Result rc;

	(void)cls; (void)version; (void)upload_data; (void)con_cls;
	if (*upload_size)	/* a body on a GET: not read, not kept */
		*upload_size = 0;
	if (strcmp(url, "/metrics"))
		return nkv_metrics_reply(conn, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return nkv_metrics_reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "GET /metrics only\n");
	nkv_metrics_render(&b);
	if (b.oom) {
		free(b.p);
		return nkv_metrics_reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	r = MHD_create_response_from_buffer(b.len, b.p ? b.p : (void *)"", b.p ?
					    MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!r) {
		free(b.p);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; version=0.0.4; charset=utf-8");
	rc = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return rc;
}

int nkv_metrics_server_start(const char *addr, struct nkv_metrics_server **out,
			     uint16_t *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct nkv_metrics_server *s;
	const union MHD_DaemonInfo *info;
	uint16_t p;
	int rc = nkv_metrics_addr_parse(addr, &sin.sin_addr.s_addr, &p);

	if (rc)
		return rc;
	sin.sin_port = htons(p);
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	errno = 0;
	s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, p, NULL, NULL,
				nkv_metrics_handler, NULL,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sin,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)NKV_METRICS_MAX_CLIENTS,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)NKV_METRICS_TIMEOUT_S,
				MHD_OPTION_END);
	if (!s->d) {
		rc = errno ? -errno : -EADDRINUSE;
		free(s);
		return rc;
	}
	info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	*port = info ? info->port : p;
	*out = s;
	return 0;
}

void nkv_metrics_server_stop(struct nkv_metrics_server *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->d);
	free(s);
}
