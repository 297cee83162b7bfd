/* SPDX-License-Identifier: MIT */
/*
 * http_get.c - see http_get.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_get.h"

static int http_connect(uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

int http_get(uint16_t port, const char *path, char *buf, size_t len)
{
	char req[2048], *body;
	size_t got = 0;
	ssize_t n;
	int fd = http_connect(port), code = -EBADMSG;

	if (fd < 0)
		return fd;
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		close(fd);
		return -EIO;
	}
	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = 0;
	sscanf(buf, "HTTP/1.%*d %d", &code);
	body = strstr(buf, "\r\n\r\n");
	if (body)
		memmove(buf, body + 4, strlen(body + 4) + 1);
	return code;
}

uint16_t http_metrics_port(const char *log)
{
	char line[512];
	unsigned port = 0;
	int i;

	for (i = 0; i < 500 && !port; i++) {
		FILE *f = fopen(log, "r");
		const char *p;

		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, "event=metrics_listening") && (p = strstr(line, " port=")))
				port = (unsigned)atoi(p + 6);
		if (f)
			fclose(f);
		if (!port)
			usleep(10000);
	}
	return (uint16_t)port;
}

uint16_t http_free_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	uint16_t port = 0;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && !bind(fd, (struct sockaddr *)&sin, sizeof(sin)) &&
	    !getsockname(fd, (struct sockaddr *)&sin, &sl))
		port = ntohs(sin.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

double http_series(const char *text, const char *series)
{
	size_t n = strlen(series);
	const char *p;

	for (p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, series, n) && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return -1;
}
