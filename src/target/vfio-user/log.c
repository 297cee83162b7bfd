/* SPDX-License-Identifier: MIT */
/*
 * log.c - the vfio-user server's log: one line per event, and a rate
 * limit per connection on the lines a client's messages cause.
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "target/vfio-user/vfu.h"

static void nkv_vfu_vlog(struct nkv_vfu_server *s, int level, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
static void nkv_vfu_vlog(struct nkv_vfu_server *s, int level, const char *fmt, va_list ap)
{
	static const char *const lv[] = { "error", "warn", "info", "debug" };
	char line[512];
	struct timespec ts;
	int n;

	if (level > __atomic_load_n(&s->o.log_level, __ATOMIC_RELAXED))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(line, sizeof(line), "ts=%lld.%06ld level=%s ", (long long)ts.tv_sec,
		     ts.tv_nsec / 1000, lv[level]);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	/* One write per line keeps concurrent connections' lines whole. */
	fprintf(s->o.log ? s->o.log : stderr, "%s\n", line);
	fflush(s->o.log ? s->o.log : stderr);
}

void nkv_vfu_log(struct nkv_vfu_server *s, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	nkv_vfu_vlog(s, level, fmt, ap);
	va_end(ap);
}

/*
 * A line caused by what one client sends: a token bucket per connection
 * (NKV_VFU_LOG_BURST, refilled NKV_VFU_LOG_PER_S a second) keeps a client
 * that repeats bad messages from filling the disk; lines over it are
 * counted, reported when logging resumes and when the connection closes.
 * Debug lines pass: whoever asks for every message gets them.
 */
static int nkv_vfu_log_ok(struct nkv_vfu_conn *c, int level)
{
	int max = __atomic_load_n(&c->s->o.log_level, __ATOMIC_RELAXED);
	uint64_t now, add;

	if (level > max || level == NKV_VFU_LOG_DEBUG)
		return level <= max;
	now = nkv_vfu_now_ns();
	add = (now - c->log_refill_ns) * NKV_VFU_LOG_PER_S / 1000000000ull;
	if (add) {
		c->log_tokens = add >= NKV_VFU_LOG_BURST - c->log_tokens ? NKV_VFU_LOG_BURST
									 : c->log_tokens + (uint32_t)add;
		c->log_refill_ns = now;
	}
	if (!c->log_tokens) {
		c->log_dropped++;
		c->log_dropped_total++;
		return 0;
	}
	c->log_tokens--;
	if (c->log_dropped)
		nkv_vfu_log(c->s, NKV_VFU_LOG_WARN, "event=log_suppressed conn=%u lines=%llu",
			    c->id, (unsigned long long)c->log_dropped);
	c->log_dropped = 0;
	return 1;
}

void nkv_vfu_clog(struct nkv_vfu_conn *c, int level, const char *fmt, ...)
{
	va_list ap;

	if (!nkv_vfu_log_ok(c, level))
		return;
	va_start(ap, fmt);
	nkv_vfu_vlog(c->s, level, fmt, ap);
	va_end(ap);
}

/* A controller failure (the core's, or ours below) gets one log line. */
void nkv_vfu_log_failed(struct nkv_vfu_conn *c)
{
	const char *why = c->ctrl ? nkv_tgt_ctrl_failed(c->ctrl) : NULL;

	if (why && why != c->failed_logged)
		nkv_vfu_log(c->s, NKV_VFU_LOG_WARN,
			    "event=controller_fatal conn=%u csts=%#x pci_command=%#x reason=%s",
			    c->id, (uint32_t)nkv_tgt_ctrl_reg_read(c->ctrl, NKV_REG_CSTS, 4),
			    nkv_vfu_command(c), why);
	c->failed_logged = why;
}
