/* SPDX-License-Identifier: MIT */
/* fault_table.c - see fault_table.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fault_table.h"
#include "nkv_errno.h"
#include "nkv_host.h"

static int ft_skipped(const char *p, size_t n, const char *const *skip)
{
	size_t i;

	for (i = 0; skip && skip[i]; i++)
		if (n >= strlen(skip[i]) && !strncmp(p, skip[i], strlen(skip[i])))
			return 1;
	return 0;
}

void ft_from_run(struct ft_cell *c, const struct tool_run *r, const char *const *skip)
{
	const char *p = r->out;

	if (r->status >= 0)
		snprintf(c->code, sizeof(c->code), "exit %d", r->status);
	else
		snprintf(c->code, sizeof(c->code), "signal %d", -r->status);
	c->line[0] = 0;
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (n && !ft_skipped(p, n, skip)) {
			snprintf(c->line, sizeof(c->line), "%.*s", (int)n, p);
			break;
		}
		p = nl ? nl + 1 : NULL;
	}
	c->secs = r->secs;
}

static const char *ft_name(int e)
{
	switch (e) {
	case 0:
		return "0";
	case ENOTCONN:
		return "ENOTCONN";
	case ETIMEDOUT:
		return "ETIMEDOUT";
	case EIO:
		return "EIO";
	case EBADMSG:
		return "EBADMSG";
	default:
		return NULL;
	}
}

const char *ft_errno(int rc)
{
	static __thread char buf[32];
	const char *n = ft_name(-rc);

	if (!rc)
		return "0";
	if (n && rc < 0)
		snprintf(buf, sizeof(buf), "-%s", n);
	else
		snprintf(buf, sizeof(buf), "%d", rc);
	return buf;
}

const char *ft_nkv_err(int32_t err)
{
	static __thread char buf[32];
	const char *n = ft_name(-err);

	if (!err)
		return "0";
	if (n && err < 0)
		snprintf(buf, sizeof(buf), "NKV_%s", n);
	else
		snprintf(buf, sizeof(buf), "%d", err);
	return buf;
}

int ft_check(const struct ft_cell *c)
{
	int ok = !strcmp(c->code, c->want_code) && c->secs <= c->max_s &&
		 (c->want_line[0] ? strstr(c->line, c->want_line) != NULL : !c->line[0]);

	printf("FAULT  %s | %s | want %s '%s' <= %.1f s | got %s '%s' %.2f s | %s\n", c->fault,
	       c->client, c->want_code, c->want_line, c->max_s, c->code, c->line, c->secs,
	       ok ? "ok" : "DIFFERS");
	fflush(stdout);
	return ok;
}

void ft_left_out(const char *fault, const char *client, const char *why)
{
	printf("FAULT  %s | %s | left out: %s\n", fault, client, why);
	fflush(stdout);
}

static pthread_mutex_t ft_log_lock = PTHREAD_MUTEX_INITIALIZER;
static char ft_log_line[512];

static void ft_log_fn(void *ctx, const char *line)
{
	(void)ctx;
	pthread_mutex_lock(&ft_log_lock);
	if (!ft_log_line[0])
		snprintf(ft_log_line, sizeof(ft_log_line), "nkv: %s", line);
	pthread_mutex_unlock(&ft_log_lock);
}

void ft_log_capture(void)
{
	nkv_set_log(ft_log_fn, NULL);
}

void ft_log_reset(void)
{
	pthread_mutex_lock(&ft_log_lock);
	ft_log_line[0] = 0;
	pthread_mutex_unlock(&ft_log_lock);
}

void ft_log_first(char *line, size_t len)
{
	pthread_mutex_lock(&ft_log_lock);
	snprintf(line, len, "%s", ft_log_line);
	pthread_mutex_unlock(&ft_log_lock);
}
