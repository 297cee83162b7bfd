/* SPDX-License-Identifier: MIT */
/*
 * be_log.c - where backends' log lines go (backend.h): a level and a
 * sink set once by the program (nkv-target: its --log-level, stderr) or
 * by a test that reads them; the same "ts=... level=..." form as the
 * vfio-user server's lines, so one log reads as one.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "backend.h"

/* One lock: a line never reaches a sink that was just replaced, and
 * lines of several threads never interleave. */
static pthread_mutex_t nkv_be_log_lock = PTHREAD_MUTEX_INITIALIZER;
static int nkv_be_log_level = NKV_BE_LOG_WARN;
static nkv_be_log_fn nkv_be_log_sink;
static void *nkv_be_log_ctx;

void nkv_be_log_set(int level, nkv_be_log_fn fn, void *ctx)
{
	pthread_mutex_lock(&nkv_be_log_lock);
	nkv_be_log_level = level;
	nkv_be_log_sink = fn;
	nkv_be_log_ctx = ctx;
	pthread_mutex_unlock(&nkv_be_log_lock);
}

int nkv_be_log_get_level(void)
{
	int lv;

	pthread_mutex_lock(&nkv_be_log_lock);
	lv = nkv_be_log_level;
	pthread_mutex_unlock(&nkv_be_log_lock);
	return lv;
}

static void nkv_be_log_stderr(int level, const char *line)
{
	static const char *const lv[] = { "error", "warn", "info", "debug" };
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(stderr, "ts=%lld.%06ld level=%s %s\n", (long long)ts.tv_sec, ts.tv_nsec / 1000,
		lv[level < 0 ? 0 : level > 3 ? 3 : level], line);
	fflush(stderr);
}

void nkv_be_log(int level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&nkv_be_log_lock);
	if (level <= nkv_be_log_level) {
		if (nkv_be_log_sink)
			nkv_be_log_sink(nkv_be_log_ctx, level, line);
		else
			nkv_be_log_stderr(level, line);
	}
	pthread_mutex_unlock(&nkv_be_log_lock);
}
