/* SPDX-License-Identifier: MIT */
/*
 * http_get.h - a tiny HTTP/1.0 GET on 127.0.0.1, for the suites that
 * scrape nkv-target's metrics and query a Prometheus server; and the
 * port a target logged for its metrics endpoint.
 */
#ifndef NKV_TEST_HTTP_GET_H
#define NKV_TEST_HTTP_GET_H

#include <stddef.h>
#include <stdint.h>

/* GET path from 127.0.0.1:port; the body into buf (NUL-terminated),
 * the status code returned, or a negative errno. 5 s at most. */
int http_get(uint16_t port, const char *path, char *buf, size_t len);

/* The port= of the first "event=metrics_listening" line of log, within
 * 5 s; 0 when none came. */
uint16_t http_metrics_port(const char *log);

/* A port free on 127.0.0.1 now (bound to 0, read, closed): for a
 * program that takes a port; it may be taken again before it binds,
 * so the caller retries. 0 on failure. */
uint16_t http_free_port(void);

/* The value of the first line of text that starts with series (the
 * name and its labels exactly as written, then a space), or -1. */
double http_series(const char *text, const char *series);

#endif /* NKV_TEST_HTTP_GET_H */
