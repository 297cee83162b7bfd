/* SPDX-License-Identifier: MIT */
/*
 * metrics.h - nkv-target's Prometheus endpoint (--metrics ADDR:PORT,
 * docs/metrics.md): a registry of collectors, the text they write, and
 * the HTTP server (libmicrohttpd) that serves GET /metrics.
 *
 * A part of the target adds its series by registering one collector
 * (nkv_metrics_register) or, for a transport, one stats function
 * (nkv_metrics_transport_add): the server never names a series.
 *
 *   registry.c   the collectors, and the text format writer
 *   server.c     libmicrohttpd: /metrics, everything else 404
 *   process.c    process_*: CPU, memory, descriptors, start time
 *   target.c     nkv_*: namespaces (core/metrics.h), transports, backends
 *
 * Threading: collectors run on the server's thread, one scrape at a
 * time, under the registry's lock; registering takes the same lock, so
 * any thread may register at any time.
 */
#ifndef NKV_TGT_METRICS_METRICS_H
#define NKV_TGT_METRICS_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* A scrape's text, grown as written; on no memory it stays short and
 * the scrape answers 500. */
struct nkv_metrics_buf {
	char *p;
	size_t len, cap;
	int oom;
};

/* A family's HELP and TYPE lines (type "counter", "gauge", "histogram"). */
void nkv_metrics_family(struct nkv_metrics_buf *b, const char *name, const char *type,
			const char *help);
/* One sample: name{labels} value. labels is "" or the inside of the
 * braces, already escaped (nkv_metrics_label). */
void nkv_metrics_sample(struct nkv_metrics_buf *b, const char *name, const char *labels,
			double v);
/* Append ,key="value" (the first without the comma) to labels (size
 * len), value escaped as the text format wants. */
void nkv_metrics_label(char *labels, size_t len, const char *key, const char *value);
/* A histogram's _bucket, _sum and _count lines from n finite buckets
 * (not cumulative, upper bounds le[]) and an +Inf one at bucket[n]. */
void nkv_metrics_histogram(struct nkv_metrics_buf *b, const char *name, const char *labels,
			   const uint64_t *bucket, const double *le, unsigned n, double sum);

typedef void (*nkv_metrics_collect_fn)(void *arg, struct nkv_metrics_buf *b);

#define NKV_METRICS_MAX_COLLECTORS 32

/* Add a collector, run at each scrape in registration order. 0, -EEXIST
 * (name registered), -ENOSPC. */
int nkv_metrics_register(const char *name, nkv_metrics_collect_fn fn, void *arg);
/* Render every collector into b (b zeroed first; the caller frees b->p). */
void nkv_metrics_render(struct nkv_metrics_buf *b);

/* A transport's counters, as it keeps them. */
struct nkv_metrics_transport_stats {
	uint64_t conns;		/* connections open now */
	uint64_t accepted;	/* connections accepted */
	uint64_t refused;	/* clients refused (over the connection cap, bad handshake) */
	uint64_t closed;	/* connections ended */
	uint64_t dropped;	/* of them, ended by the target (bad stream, timeout) */
};
typedef void (*nkv_metrics_transport_fn)(void *arg, struct nkv_metrics_transport_stats *st);
/* Add a transport ("vfio-user", "tcp") to the nkv_transport_* series.
 * 0, -EEXIST, -ENOSPC. */
int nkv_metrics_transport_add(const char *name, nkv_metrics_transport_fn fn, void *arg);

/* process.c: register the process_* collector. */
int nkv_metrics_process_register(void);

struct nkv_metrics_server;
/* Serve GET /metrics on addr ("ADDR:PORT" or "PORT"; ADDR an IPv4
 * address, default 127.0.0.1; PORT 0 picks a free one). *port: the port
 * bound. 0, -EINVAL (addr malformed), or the bind's negative errno. */
int nkv_metrics_server_start(const char *addr, struct nkv_metrics_server **out,
			     uint16_t *port);
/* Stop serving (NULL: nothing); returns once no scrape is running. */
void nkv_metrics_server_stop(struct nkv_metrics_server *s);
/* "ADDR:PORT" into an IPv4 address and port: 0, or -EINVAL. */
int nkv_metrics_addr_parse(const char *s, uint32_t *ip_be, uint16_t *port);

#endif /* NKV_TGT_METRICS_METRICS_H */
