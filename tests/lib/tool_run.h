/* SPDX-License-Identifier: MIT */
/*
 * tool_run.h - run one of nkv's programs as a user runs it: the binary
 * built next to the test (BUILD/bin/), its stdout and stderr together,
 * within a deadline. For the suites that check what a program says and
 * how it exits.
 */
#ifndef NKV_TEST_TOOL_RUN_H
#define NKV_TEST_TOOL_RUN_H

#include <stdint.h>

#define TOOL_OUT_MAX 16384

struct tool_run {
	int status;			/* exit status, or -signal */
	char out[TOOL_OUT_MAX];		/* stdout and stderr together (tool_run_split:
					 * stdout alone) */
	char err[TOOL_OUT_MAX];		/* tool_run_split: stderr alone; else "" */
	double secs;			/* from start to exit */
};

/* Run BUILD/bin/@tool (a path, such as examples/first_retrieve_cpu:
 * BUILD/@tool) with @args (NULL-terminated, not counting argv[0]),
 * @env (NULL-terminated "NAME=value" additions, or NULL); killed after
 * @timeout_ms. 0, or -ENOENT when the program is not built (@r->out then
 * says where it was looked for), or another negative errno. */
int tool_run(struct tool_run *r, const char *tool, const char *const *args,
	     const char *const *env, uint32_t timeout_ms);

/* tool_run, with stdout in @r->out and stderr in @r->err apart: for
 * checking what a program's first line on stderr says. */
int tool_run_split(struct tool_run *r, const char *tool, const char *const *args,
		   const char *const *env, uint32_t timeout_ms);

/* The first line of @r's output that starts with @prefix (copied into
 * @line, @len bytes, without its newline), or NULL. */
const char *tool_line(const struct tool_run *r, const char *prefix, char *line, size_t len);

#endif /* NKV_TEST_TOOL_RUN_H */
