/* SPDX-License-Identifier: MIT */
/*
 * stats.c - per-queue counters, the error log ring and the trace.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core.h"
#include "metrics.h"

void nkv_tgt_stat_cmd(struct nkv_tgt_ctrl *c, const struct nkv_tgt_cmd *cmd)
{
	struct nkv_tgt_qstats *q = &c->qstats[cmd->sqid];
	int i;

	nkv_tgt_metrics_cmd(c, cmd);
	q->commands++;
	if (!cmd->status) {
		q->bytes += cmd->bytes;
		return;
	}
	q->errors++;
	for (i = 0; i < NKV_TGT_STAT_ERRS; i++) {
		if (q->err[i].count && q->err[i].status != cmd->status)
			continue;
		q->err[i].status = cmd->status;
		q->err[i].count++;
		return;
	}
}

void nkv_tgt_errlog_add(struct nkv_tgt_ctrl *c, const struct nkv_tgt_cmd *cmd)
{
	struct nkv_error_log *e = &c->errlog[c->err_count % NKV_TGT_ERRLOG];

	memset(e, 0, sizeof(*e));
	e->error_count = ++c->err_count;
	e->sqid = cmd->sqid;
	e->cid = nkv_sqe_cid(&cmd->sqe);
	e->status = (uint16_t)(cmd->status << 1);	/* phase bit 0 */
	e->param_loc = 0xffff;				/* not pinpointed */
	e->nsid = cmd->sqe.nsid;
}

int nkv_tgt_ctrl_stats(const struct nkv_tgt_ctrl *c, uint16_t qid,
		       struct nkv_tgt_qstats *out)
{
	if (qid > c->max_ioq)
		return -EINVAL;
	*out = c->qstats[qid];
	return 0;
}

void nkv_tgt_ctrl_set_trace(struct nkv_tgt_ctrl *c, int on,
			    nkv_tgt_trace_fn fn, void *arg)
{
	c->trace = on;
	c->trace_fn = fn;
	c->trace_arg = arg;
}

void nkv_tgt_tracef(struct nkv_tgt_ctrl *c, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (c->trace_fn)
		c->trace_fn(c->trace_arg, line);
	else
		fprintf(stderr, "nkv-target[%u]: %s\n", c->cntlid, line);
}
