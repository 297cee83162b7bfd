/* SPDX-License-Identifier: MIT */
/*
 * log.c - the library's one-line messages and its debug trace switch.
 *
 * The trace is on when NKV_TRACE=1 is in the environment or after
 * nkv_set_trace(1); a controller connected with opts->trace traces too.
 * The same variable switches nkv-target's trace, so one setting shows
 * both sides of a conversation.
 */
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

void nkv_h_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One write per line so lines of several threads do not interleave. */
	fprintf(stderr, "nkv: %s\n", line);
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
