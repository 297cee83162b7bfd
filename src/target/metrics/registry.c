/* SPDX-License-Identifier: MIT */
/*
 * registry.c - the collectors a scrape runs, and the Prometheus text
 * exposition format (0.0.4) they write through.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/metrics/metrics.h"

static struct {
	const char *name;
	nkv_metrics_collect_fn fn;
	void *arg;
} nkv_metrics_reg[NKV_METRICS_MAX_COLLECTORS];
static unsigned nkv_metrics_nreg;
static pthread_mutex_t nkv_metrics_lock = PTHREAD_MUTEX_INITIALIZER;

static void nkv_metrics_printf(struct nkv_metrics_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void nkv_metrics_printf(struct nkv_metrics_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = b->cap - b->len;
		char *p;

		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0 || b->oom)
			return;
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		p = realloc(b->p, b->cap * 2 + (size_t)n + 4096);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = b->cap * 2 + (size_t)n + 4096;
	}
}

void nkv_metrics_family(struct nkv_metrics_buf *b, const char *name, const char *type,
			const char *help)
{
	nkv_metrics_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Integers exactly (a counter past 2^53 loses nothing it can print). */
static void nkv_metrics_value(struct nkv_metrics_buf *b, double v)
{
	if (isinf(v))
		nkv_metrics_printf(b, "%s\n", v > 0 ? "+Inf" : "-Inf");
	else if (v == (double)(long long)v && fabs(v) < 9.007199254740992e15)
		nkv_metrics_printf(b, "%lld\n", (long long)v);
	else
		nkv_metrics_printf(b, "%.17g\n", v);
}

void nkv_metrics_sample(struct nkv_metrics_buf *b, const char *name, const char *labels,
			double v)
{
	if (labels && *labels)
		nkv_metrics_printf(b, "%s{%s} ", name, labels);
	else
		nkv_metrics_printf(b, "%s ", name);
	nkv_metrics_value(b, v);
}

void nkv_metrics_label(char *labels, size_t len, const char *key, const char *value)
{
	size_t n = strlen(labels);

	n += (size_t)snprintf(labels + n, n < len ? len - n : 0, "%s%s=\"", n ? "," : "", key);
	for (; *value && n + 3 < len; value++) {
		/* The text format escapes these three in label values. */
		if (*value == '\\' || *value == '"' || *value == '\n') {
			labels[n++] = '\\';
			labels[n++] = *value == '\n' ? 'n' : *value;
		} else {
			labels[n++] = *value;
		}
	}
	if (n + 1 < len) {
		labels[n++] = '"';
		labels[n] = 0;
	}
}

void nkv_metrics_histogram(struct nkv_metrics_buf *b, const char *name, const char *labels,
			   const uint64_t *bucket, const double *le, unsigned n, double sum)
{
	char lb[512];
	uint64_t cum = 0;
	unsigned i;

	for (i = 0; i <= n; i++) {
		cum += bucket[i];
		snprintf(lb, sizeof(lb), "%s%sle=\"", labels, *labels ? "," : "");
		if (i < n)
			snprintf(lb + strlen(lb), sizeof(lb) - strlen(lb), "%.9g\"", le[i]);
		else
			snprintf(lb + strlen(lb), sizeof(lb) - strlen(lb), "+Inf\"");
		nkv_metrics_printf(b, "%s_bucket{%s} %llu\n", name, lb, (unsigned long long)cum);
	}
	if (*labels)
		nkv_metrics_printf(b, "%s_sum{%s} ", name, labels);
	else
		nkv_metrics_printf(b, "%s_sum ", name);
	nkv_metrics_value(b, sum);
	if (*labels)
		nkv_metrics_printf(b, "%s_count{%s} %llu\n", name, labels, (unsigned long long)cum);
	else
		nkv_metrics_printf(b, "%s_count %llu\n", name, (unsigned long long)cum);
}

int nkv_metrics_register(const char *name, nkv_metrics_collect_fn fn, void *arg)
{
	unsigned i;
	int rc = 0;

	pthread_mutex_lock(&nkv_metrics_lock);
	for (i = 0; i < nkv_metrics_nreg; i++)
		if (!strcmp(nkv_metrics_reg[i].name, name))
			rc = -EEXIST;
	if (!rc && nkv_metrics_nreg == NKV_METRICS_MAX_COLLECTORS)
		rc = -ENOSPC;
	if (!rc) {
		nkv_metrics_reg[nkv_metrics_nreg].name = name;
		nkv_metrics_reg[nkv_metrics_nreg].fn = fn;
		nkv_metrics_reg[nkv_metrics_nreg++].arg = arg;
	}
	pthread_mutex_unlock(&nkv_metrics_lock);
	return rc;
}

void nkv_metrics_render(struct nkv_metrics_buf *b)
{
	unsigned i;

	memset(b, 0, sizeof(*b));
	pthread_mutex_lock(&nkv_metrics_lock);
	for (i = 0; i < nkv_metrics_nreg; i++)
		nkv_metrics_reg[i].fn(nkv_metrics_reg[i].arg, b);
	pthread_mutex_unlock(&nkv_metrics_lock);
}

/* The transports: one collector that writes every transport's line of
 * each family, so each family stays one block as the format wants. */
#define NKV_METRICS_MAX_TRANSPORTS 8
static struct {
	const char *name;
	nkv_metrics_transport_fn fn;
	void *arg;
} nkv_metrics_tr[NKV_METRICS_MAX_TRANSPORTS];
static unsigned nkv_metrics_ntr;

static const struct {
	const char *name, *type, *help;
	size_t off;
} nkv_metrics_tr_series[] = {
	{ "nkv_transport_connections", "gauge", "Client connections open now.",
	  offsetof(struct nkv_metrics_transport_stats, conns) },
	{ "nkv_transport_accepted_total", "counter", "Client connections accepted.",
	  offsetof(struct nkv_metrics_transport_stats, accepted) },
	{ "nkv_transport_refused_total", "counter",
	  "Clients refused (over the connection cap).",
	  offsetof(struct nkv_metrics_transport_stats, refused) },
	{ "nkv_transport_closed_total", "counter", "Client connections ended.",
	  offsetof(struct nkv_metrics_transport_stats, closed) },
	{ "nkv_transport_dropped_total", "counter",
	  "Client connections ended by the target (bad stream, timeout).",
	  offsetof(struct nkv_metrics_transport_stats, dropped) },
};

/* Runs under nkv_metrics_lock, which also guards nkv_metrics_tr. */
static void nkv_metrics_tr_collect(void *arg, struct nkv_metrics_buf *b)
{
	struct nkv_metrics_transport_stats st[NKV_METRICS_MAX_TRANSPORTS];
	char lb[128];
	unsigned i, f;

	(void)arg;
	for (i = 0; i < nkv_metrics_ntr; i++) {
		memset(&st[i], 0, sizeof(st[i]));
		nkv_metrics_tr[i].fn(nkv_metrics_tr[i].arg, &st[i]);
	}
	for (f = 0; f < sizeof(nkv_metrics_tr_series) / sizeof(nkv_metrics_tr_series[0]); f++) {
		nkv_metrics_family(b, nkv_metrics_tr_series[f].name, nkv_metrics_tr_series[f].type,
				   nkv_metrics_tr_series[f].help);
		for (i = 0; i < nkv_metrics_ntr; i++) {
			lb[0] = 0;
			nkv_metrics_label(lb, sizeof(lb), "transport", nkv_metrics_tr[i].name);
			nkv_metrics_sample(b, nkv_metrics_tr_series[f].name, lb,
					   (double)*(const uint64_t *)((const char *)&st[i] +
								       nkv_metrics_tr_series[f].off));
		}
	}
}

int nkv_metrics_transport_add(const char *name, nkv_metrics_transport_fn fn, void *arg)
{
	unsigned i;
	int rc = 0, first;

	pthread_mutex_lock(&nkv_metrics_lock);
	first = !nkv_metrics_ntr;
	for (i = 0; i < nkv_metrics_ntr; i++)
		if (!strcmp(nkv_metrics_tr[i].name, name))
			rc = -EEXIST;
	if (!rc && nkv_metrics_ntr == NKV_METRICS_MAX_TRANSPORTS)
		rc = -ENOSPC;
	if (!rc) {
		nkv_metrics_tr[nkv_metrics_ntr].name = name;
		nkv_metrics_tr[nkv_metrics_ntr].fn = fn;
		nkv_metrics_tr[nkv_metrics_ntr++].arg = arg;
	}
	pthread_mutex_unlock(&nkv_metrics_lock);
	if (!rc && first)
		rc = nkv_metrics_register("transports", nkv_metrics_tr_collect, NULL);
	return rc;
}
