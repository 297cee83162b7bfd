/* SPDX-License-Identifier: MIT */
/*
 * log.c - the library's one-line messages, where they go (the
 * application's nkv_set_log callback; without one, nowhere unless asked
 * for: NKV_LOG=stderr or the trace), and its debug trace switch.
 *
 * The trace is on when NKV_TRACE=1 is in the environment or after
 * nkv_set_trace(1); a controller connected with opts->trace traces too.
 * The same variable switches nkv-target's trace, so one setting shows
 * both sides of a conversation.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"

/* -1: not decided yet (read NKV_TRACE on first use). Relaxed atomics: a
 * switch may flip while other threads log. */
static int nkv_h_trace_flag = -1;

int nkv_h_trace_on(void)
{
	int v = __atomic_load_n(&nkv_h_trace_flag, __ATOMIC_RELAXED);

	if (v < 0) {
		const char *e = getenv("NKV_TRACE");

		v = e && *e && strcmp(e, "0") != 0;
		__atomic_store_n(&nkv_h_trace_flag, v, __ATOMIC_RELAXED);
	}
	return v;
}

void nkv_set_trace(int on)
{
	__atomic_store_n(&nkv_h_trace_flag, on ? 1 : 0, __ATOMIC_RELAXED);
}

/* The application's log callback (nkv_set_log), or NULL for the default.
 * One lock so a line never reaches a callback that was just replaced. */
static pthread_mutex_t nkv_h_log_lock = PTHREAD_MUTEX_INITIALIZER;
static nkv_log_fn nkv_h_log_fn;
static void *nkv_h_log_ctx;

void nkv_set_log(nkv_log_fn fn, void *ctx)
{
	pthread_mutex_lock(&nkv_h_log_lock);
	nkv_h_log_fn = fn;
	nkv_h_log_ctx = ctx;
	pthread_mutex_unlock(&nkv_h_log_lock);
}

/* The default, without a callback: a library inside an application
 * writes nothing on its own; NKV_LOG=stderr (or 1) asks for the lines,
 * and so does switching the trace on. -1: NKV_LOG not read yet. */
static int nkv_h_log_env = -1;

static int nkv_h_log_to_stderr(void)
{
	int v = __atomic_load_n(&nkv_h_log_env, __ATOMIC_RELAXED);

	if (v < 0) {
		const char *e = getenv("NKV_LOG");

		v = e && (!strcmp(e, "stderr") || !strcmp(e, "1"));
		__atomic_store_n(&nkv_h_log_env, v, __ATOMIC_RELAXED);
	}
	return v || nkv_h_trace_on();
}

void nkv_h_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&nkv_h_log_lock);
	if (nkv_h_log_fn)
		nkv_h_log_fn(nkv_h_log_ctx, line);
	else if (nkv_h_log_to_stderr())	/* one write per line: no interleaving */
		fprintf(stderr, "nkv: %s\n", line);
	pthread_mutex_unlock(&nkv_h_log_lock);
}

void nkv_h_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
