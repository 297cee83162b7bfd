/* SPDX-License-Identifier: MIT */
/*
 * fault_table.h - one cell of issue 35's table of faults: a fault, a
 * client (nkv-bench, the sync API, device code, an example), what it
 * should give (a code, a stable part of the first line it says, the
 * longest it may take to give up) and what it gave. Each cell prints
 * one line, so the CI log holds the table as measured:
 *   FAULT  fault | client | want <code> '<line part>' <= N s | got <code> '<line>' S s | ok
 * The suites that fill it: tests/faults/test_faults.c, and the stopped
 * cluster's row in tests/rados/test_rados_e2e.c.
 */
#ifndef NKV_TEST_FAULT_TABLE_H
#define NKV_TEST_FAULT_TABLE_H

#include <stdint.h>

#include "tool_run.h"

struct ft_cell {
	const char *fault;
	const char *client;
	const char *want_code;	/* exactly: "exit 3", "-ENOTCONN", "err NKV_ETIMEDOUT" */
	const char *want_line;	/* a part of the first line; "" = says nothing */
	double max_s;		/* gives up within this */
	char code[128];		/* what it gave, the same way */
	char line[512];		/* its first line ("" = none) */
	double secs;
};

/* A program's outcome: "exit N" (or "signal N") and the first line of its
 * message: its first line that starts with none of @skip (NULL-terminated
 * prefixes of the lines every run prints: a report of what it ran). */
void ft_from_run(struct ft_cell *c, const struct tool_run *r, const char *const *skip);
/* An errno as its name: "-ENOTCONN", "0", or the number. */
const char *ft_errno(int rc);
/* An nkv_errno.h code as its name: "NKV_ENOTCONN", "0", or the number. */
const char *ft_nkv_err(int32_t err);
/* Print the cell's line; 1 when it gave what it should, else 0. */
int ft_check(const struct ft_cell *c);
/* A cell left out, and why (printed). */
void ft_left_out(const char *fault, const char *client, const char *why);

/* The library's log (nkv_set_log) into a buffer: the first line said
 * since the last ft_log_reset() (any thread). */
void ft_log_capture(void);
void ft_log_reset(void);
void ft_log_first(char *line, size_t len);

#endif /* NKV_TEST_FAULT_TABLE_H */
