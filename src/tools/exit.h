/* SPDX-License-Identifier: MIT */
/*
 * exit.h - one table of exit statuses for every nkv program (nkv-bench,
 * nkv-admin, nkv-probe, nkv-target), and the words each --help ends
 * with. The examples keep their own copy in examples/ex_host.h (they
 * build against an installed nkv, without src/). README "Exit status".
 */
#ifndef NKV_TOOLS_EXIT_H
#define NKV_TOOLS_EXIT_H

/* Exit statuses (README "Exit status"), the same for every program. */
enum {
	NKV_EXIT_OK = 0,
	NKV_EXIT_FAIL = 1,	/* data or status failure: a value that does
				 * not verify, an NVMe error status */
	NKV_EXIT_USAGE = 2,	/* bad flags or arguments */
	NKV_EXIT_SETUP = 3,	/* setup or controller failure: cannot connect,
				 * the controller gone, a timeout, a failed
				 * admin command */
};

/* The table as each --help ends it. */
#define NKV_EXIT_HELP \
	"exit status: 0 ok; 1 data or status failure (a value that does not verify,\n" \
	"an NVMe error status); 2 bad flags or arguments; 3 setup or controller\n" \
	"failure (cannot connect, controller gone, timeout, admin command failed)\n"

/* What PROG --version prints: "PROG (nkv) 0.6.0", the Makefile's VERSION
 * (its -DNKV_VERSION on the programs' main files). */
#define NKV_VERSION_LINE(prog) prog " (nkv) " NKV_VERSION "\n"

#endif /* NKV_TOOLS_EXIT_H */
