/* SPDX-License-Identifier: MIT */
/*
 * test_config.c - nkv-target's configuration file (--config FILE,
 * src/target/config/, docs/service.md) against the built program: every
 * key taken and printed back by --print-config (which round-trips), the
 * command line winning, bad keys and values named with their line
 * (exit 2), the installed example accepted, and SIGHUP applying the
 * live keys to a running target and naming the rest.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rpc_proc.h"
#include "tool_run.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/nkv-cfg-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(config, .init = setup, .fini = teardown, .timeout = 60);

/* dir/name holding text; its path in path. */
static void write_file(const char *name, const char *text, char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/%s", dir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

/* nkv-target --config path [more...] --print-config. */
static void print_config(struct tool_run *r, const char *path, const char *more)
{
	const char *args[] = { "--config", path, "--print-config", more, more ? "64M" : NULL, NULL };

	cr_assert_eq(tool_run_split(r, "nkv-target", args, NULL, 10000), 0, "%s", r->out);
}

/* Every key of nkv-target's own and a backend's, each with a value its
 * option takes: each must come back as "key = value". */
static const char *const every_key[][2] = {
	{ "socket", "/tmp/x/v.sock" }, { "socket-mode", "0660" }, { "socket-group", "0" },
	{ "backend", "mem" }, { "capacity", "2G" }, { "max-value", "1M" }, { "max-keys", "1000" },
	{ "nvm-ns", "1M" }, { "ns-map", "1=a,3=b:ro" }, { "queue-depth", "256" },
	{ "poll-interval-ns", "50000" }, { "max-conns", "8" }, { "no-sparse-mmap", "true" },
	{ "allow-unsealed-dma", "true" }, { "trace", "true" }, { "log-level", "debug" },
	{ "handshake-timeout-ms", "2000" }, { "idle-timeout-ms", "3000" },
	{ "msg-timeout-ms", "4000" }, { "max-dma-maps", "32" }, { "max-dma-bytes", "1G" },
	{ "max-queue-pairs", "4" }, { "doorbell-stride", "8" }, { "poll-sched", "idle" },
	{ "rpc-socket", "/tmp/x/r.sock" }, { "rpc-socket-mode", "0600" },
	{ "metrics", "127.0.0.1:0" }, { "evict", "lru" }, { "listen", "tcp:127.0.0.1:0" },
	{ "nqn", "nqn.2026-01.io.nkv:cfg" },
	{ "access", "nsid=1 uid=1000 access=ro" }, { "access-default", "nsid=1 access=rw" },
	{ "quota", "nsid=1 gid=100 bytes=1048576 keys=10" },
	{ "exec-allow", "1:7:0000000000000000000000000000000000000000000000000000000000000000:6d" },
	{ "exec-workers", "3" },
};

Test(config, every_key_is_taken_and_printed)
{
	char text[4096] = "[nkv-target]\n", path[128], want[160];
	struct tool_run r;
	size_t i, n = sizeof(every_key) / sizeof(every_key[0]);

	for (i = 0; i < n; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s = %s\n",
			 every_key[i][0], every_key[i][1]);
	write_file("all.conf", text, path, sizeof(path));
	print_config(&r, path, NULL);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	for (i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "\n%s = %s\n", every_key[i][0], every_key[i][1]);
		cr_expect_not_null(strstr(r.out, want), "key %s not printed back:\n%s",
				   every_key[i][0], r.out);
	}
}

Test(config, print_config_round_trips)
{
	char path[128], again[128];
	struct tool_run r1, r2;

	write_file("a.conf", "; a comment\ncapacity = 8M\nlog-level = warn\ntrace = false\n"
		   "ns-map = 1=one,2=two\n", path, sizeof(path));
	print_config(&r1, path, NULL);
	cr_assert_eq(r1.status, 0, "%s", r1.err);
	cr_expect_not_null(strstr(r1.out, "\n# trace =\n"), "false flag should stay unset");
	write_file("b.conf", r1.out, again, sizeof(again));
	print_config(&r2, again, NULL);
	cr_assert_eq(r2.status, 0, "%s", r2.err);
	cr_expect_str_eq(r2.out, r1.out, "printed configuration does not round-trip");
}

Test(config, command_line_wins)
{
	char path[128];
	struct tool_run r;

	write_file("c.conf", "capacity = 8M\n", path, sizeof(path));
	print_config(&r, path, "--capacity");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "\ncapacity = 64M\n"), "%s", r.out);
}

/* --listen repeats: a line per listener printed, round-tripping; the
 * command line's listeners replace the file's, as any key's value. */
Test(config, listen_repeats_and_command_line_replaces)
{
	const char *file = "listen = tcp:127.0.0.1:4420\nlisten = tcp:127.0.0.1:8009\n";
	char path[128], again[128];
	struct tool_run r1, r2, r3;
	const char *cli[] = { "--config", path, "--listen", "tcp:127.0.0.1:0", "--print-config",
			      NULL };

	write_file("l.conf", file, path, sizeof(path));
	print_config(&r1, path, NULL);
	cr_assert_eq(r1.status, 0, "%s", r1.err);
	cr_expect_not_null(strstr(r1.out, "\nlisten = tcp:127.0.0.1:4420\nlisten = tcp:127.0.0.1:8009\n"),
			   "%s", r1.out);
	write_file("l2.conf", r1.out, again, sizeof(again));
	print_config(&r2, again, NULL);
	cr_assert_eq(r2.status, 0, "%s", r2.err);
	cr_expect_str_eq(r2.out, r1.out, "printed listeners do not round-trip");
	cr_assert_eq(tool_run_split(&r3, "nkv-target", cli, NULL, 10000), 0);
	cr_assert_eq(r3.status, 0, "%s", r3.err);
	cr_expect_not_null(strstr(r3.out, "\nlisten = tcp:127.0.0.1:0\n"), "%s", r3.out);
	cr_expect_null(strstr(r3.out, "4420"), "the file's listeners stayed:\n%s", r3.out);
}

/* text in a file: exit 2, stderr holding msg (the file:line included). */
static void refused(const char *text, const char *msg)
{
	char path[128], where[300];
	struct tool_run r;
	const char *args[] = { "--config", path, NULL };

	write_file("bad.conf", text, path, sizeof(path));
	cr_assert_eq(tool_run_split(&r, "nkv-target", args, NULL, 10000), 0);
	cr_expect_eq(r.status, 2, "'%s': exit %d", text, r.status);
	snprintf(where, sizeof(where), "%s:%s", path, msg);
	cr_expect_not_null(strstr(r.err, where), "'%s': stderr lacks '%s':\n%s", text, where, r.err);
}

Test(config, bad_keys_and_values_named_with_their_line)
{
	refused("capacity = 1M\n\nbogus = 1\n", "3: unknown key 'bogus'");
	refused("capacity = 12Q\n", "1: key 'capacity'");
	refused("log-level = loud\n", "1: key 'log-level'");
	refused("trace = maybe\n", "1: key 'trace': want true or false");
	refused("socket-mode = 999\n", "1: key 'socket-mode': want octal");
	refused("metrics = 1.2.3:4\n", "1: key 'metrics'");
	refused("[other]\ncapacity = 1M\n", "2: unknown section [other]");
	refused("capacity = 1M\ncapacity = 2M\n", "2: key 'capacity' given twice");
	refused("capacity = 1M\n  log-level = warn\n", "2: an indented line continues the value of "
		"'capacity'");
	refused("# c\ncapacity\n", "2: not 'key = value'");
	refused("config = /etc/x\n", "1: unknown key 'config'");
	refused("print-config = true\n", "1: unknown key 'print-config'");
	refused("capacity = 1M\nns-map = 1=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		",2=b\n", "2: line longer than");
	refused("evict = lru\npool = x\n", "2: key 'pool' is not an option of the mem backend");
}

Test(config, missing_file_exits_2)
{
	struct tool_run r;
	const char *args[] = { "--config", "/nonexistent/nkv.conf", NULL };

	cr_assert_eq(tool_run_split(&r, "nkv-target", args, NULL, 10000), 0);
	cr_expect_eq(r.status, 2);
	cr_expect_not_null(strstr(r.err, "cannot read /nonexistent/nkv.conf"), "%s", r.err);
}

Test(config, installed_example_is_valid)
{
	struct tool_run r;
	char src[1024], path[1100];
	const char *args[] = { "--config", path, "--print-config", NULL };

	/* The tests run from BUILD/tests; the example is in the source tree. */
	cr_assert_eq(rpc_proc_srcdir("share/nkv/nkv-target.conf.example", src, sizeof(src)), 0);
	snprintf(path, sizeof(path), "%s/share/nkv/nkv-target.conf.example", src);
	cr_assert_eq(tool_run_split(&r, "nkv-target", args, NULL, 10000), 0);
	cr_expect_eq(r.status, 0, "the example is refused: %s", r.err);
}

/* A running target with a file; the file rewritten; SIGHUP. */
Test(config, sighup_applies_live_keys_and_names_the_rest)
{
	char path[128];
	const char *extra[] = { "--config", path, NULL };
	struct rpc_proc t;
	struct json_object *r, *res;

	write_file("live.conf", "poll-interval-ns = 100000\nidle-timeout-ms = 60000\n", path,
		   sizeof(path));
	cr_assert_eq(rpc_proc_start(&t, extra), 0, "target did not start");
	write_file("live.conf", "poll-interval-ns = 200000\nidle-timeout-ms = 7000\n"
		   "max-dma-maps = 8\n", path, sizeof(path));
	cr_assert_eq(kill(t.pid, SIGHUP), 0);
	cr_expect(rpc_proc_log_has(&t, "event=reload key=poll-interval-ns was=100000 now=200000 "
				   "applied=live"), "no live reload line");
	cr_expect(rpc_proc_log_has(&t, "event=reload key=max-dma-maps was=(default) now=8 "
				   "applied=needs_restart"), "no restart line");
	cr_expect(rpc_proc_log_has(&t, " changed=3\n"), "no result line");
	/* The server runs with them: target_set returns every live value. */
	r = rpc_call(&t, "target_set", "{\"msg_timeout_ms\": 5000}");
	cr_assert_not_null(r);
	res = rpc_result(r);
	cr_assert_not_null(res, "%s", rpc_msg(r));
	cr_expect_eq(rpc_int(res, "poll_interval_ns"), 200000);
	cr_expect_eq(rpc_int(res, "idle_timeout_ms"), 7000);
	json_object_put(r);
	/* A value set through the control socket survives a reload that
	 * does not touch its key; the one the file changes is applied. */
	r = rpc_call(&t, "target_set", "{\"max_conns\": 9}");
	cr_assert_not_null(r);
	json_object_put(r);
	write_file("live.conf", "poll-interval-ns = 200000\nidle-timeout-ms = 8000\n"
		   "max-dma-maps = 8\n", path, sizeof(path));
	cr_assert_eq(kill(t.pid, SIGHUP), 0);
	cr_expect(rpc_proc_log_has(&t, "key=idle-timeout-ms was=7000 now=8000 applied=live"));
	/* The result line comes after the settings are applied. */
	cr_expect(rpc_proc_log_has(&t, "event=reload result=ok"), "no result line");
	/* idle-timeout-ms, and max-dma-maps again: it still needs a restart. */
	cr_expect(rpc_proc_log_has(&t, " changed=2\n"), "the second reload's result line");
	r = rpc_call(&t, "target_set", "{\"msg_timeout_ms\": 5000}");
	cr_assert_not_null(r);
	res = rpc_result(r);
	cr_assert_not_null(res, "%s", rpc_msg(r));
	cr_expect_eq(rpc_int(res, "idle_timeout_ms"), 8000);
	cr_expect_eq(rpc_int(res, "max_conns"), 9, "the RPC's max_conns was undone by SIGHUP");
	json_object_put(r);
	/* A bad file changes nothing and the target keeps serving. */
	write_file("live.conf", "poll-interval-ns = fast\n", path, sizeof(path));
	cr_assert_eq(kill(t.pid, SIGHUP), 0);
	cr_expect(rpc_proc_log_has(&t, "event=reload result=failed"), "no failure line");
	cr_expect(rpc_proc_alive(&t), "a bad file stopped the target");
	rpc_proc_stop(&t);
}

Test(config, sighup_without_config_is_logged)
{
	struct rpc_proc t;

	cr_assert_eq(rpc_proc_start(&t, NULL), 0);
	cr_assert_eq(kill(t.pid, SIGHUP), 0);
	cr_expect(rpc_proc_log_has(&t, "event=reload result=skipped reason=no_config"));
	cr_expect(rpc_proc_alive(&t), "SIGHUP stopped the target");
	rpc_proc_stop(&t);
}

/* Every key --print-config lists has a row in every_key above, so a new
 * option cannot arrive without its key being tested. */
Test(config, every_printed_key_is_in_the_table)
{
	char path[128], key[64];
	struct tool_run r;
	const char *p;
	size_t i, n = sizeof(every_key) / sizeof(every_key[0]);

	write_file("empty.conf", "", path, sizeof(path));
	print_config(&r, path, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (p = strstr(r.out, "\n# "); p; p = strstr(p + 1, "\n# ")) {
		if (sscanf(p, "\n# %63s =", key) != 1 || strstr(p, " =\n") != strchr(p + 3, ' '))
			continue;	/* a comment of the header, not a key */
		for (i = 0; i < n && strcmp(every_key[i][0], key); i++)
			;
		cr_expect_lt(i, n, "key '%s' has no row in every_key", key);
	}
}
