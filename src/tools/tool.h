/* SPDX-License-Identifier: MIT */
/*
 * tool.h - what the host library's programs share (nkv-bench, nkv-admin,
 * nkv-probe): the exit statuses (tools/exit.h), where the library's
 * lines go, and the exit status of a failed connect. Program-private;
 * not library API.
 */
#ifndef NKV_TOOLS_TOOL_H
#define NKV_TOOLS_TOOL_H

#include <errno.h>
#include <stdio.h>

#include "nkv_host.h"
#include "tools/exit.h"

/* The library's lines on stderr, "nkv: ..." as before: a program asks
 * for them (the library says nothing unasked, nkv_set_log). */
static inline void nkv_tool_log_line(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "nkv: %s\n", line);
}

static inline void nkv_tool_log_stderr(void)
{
	nkv_set_log(nkv_tool_log_line, NULL);
}

/* The exit status of a failed nkv_ctrl_connect: a URI or option the
 * library refused is the user's to fix (-EINVAL, -EPROTONOSUPPORT: the
 * scheme), everything else is setup or the controller. */
static inline int nkv_tool_connect_exit(int rc)
{
	return rc == -EINVAL || rc == -EPROTONOSUPPORT ? NKV_EXIT_USAGE : NKV_EXIT_SETUP;
}

#endif /* NKV_TOOLS_TOOL_H */
