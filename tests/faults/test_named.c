// SPDX-License-Identifier: MIT
/*
 * test_named - issue 51: every failure named. The examples and nkv's
 * programs, run as a user runs them, against controllers that misbehave
 * as third-party ones do: Retrieve's DW0 always 0 (liar_be.h), one that
 * stops completing after 4 I/O commands (delay_be.h), one whose KML is
 * 16, one whose largest value is 4 KiB, one that answers every I/O
 * command 06h Internal Error (liar_be.h), one that offers dword-aligned
 * SGLs only (SGLS 10b). Each case wants an exit status from the README's
 * table and a stable part of the first line on stderr; and every case
 * with a non-zero exit is held to one rule: its first line on stderr
 * names what failed, with the numbers (it has a digit). One line per
 * case is printed:
 *   NAMED  controller | program | want exit N 'part' | got exit N 'line' | ok
 */
#include <criterion/criterion.h>
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host_util.h"
#include "tool_run.h"

#define NM_RUN_MS 60000u
#define NM_URI "@URI"	/* an argument replaced by the controller's URI */

/* Lines a run prints on stderr before anything can fail: the library's
 * note that host memory stands in for VRAM (no GPU here). */
static const char *const nm_notes[] = { "nkv: memory-mode 0x8: no GPU", NULL };

struct nm_case {
	const char *ctrl;		/* the controller, in words */
	struct ht_server_opts o;	/* and as the test target makes it */
	const char *prog;		/* nkv-bench, or examples/NAME */
	const char *args[20];		/* NM_URI: the controller's */
	int want_exit;
	const char *want_err;		/* a part of the first stderr line */
	const char *want_out;		/* a part of stdout, or NULL */
	const char *not_out;		/* never in stdout, or NULL */
	const char *want_err2;		/* another part of that line, or NULL */
	int no_numbers;			/* the failure has no number to name (a
					 * socket path nobody serves) */
};

/* The first line of @err that is not a note; "" when there is none. */
static void nm_first_line(const char *err, char *line, size_t len)
{
	const char *p = err;

	line[0] = 0;
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		size_t i;
		int note = 0;

		for (i = 0; nm_notes[i]; i++)
			note |= n >= strlen(nm_notes[i]) && !strncmp(p, nm_notes[i], strlen(nm_notes[i]));
		if (n && !note) {
			snprintf(line, len, "%.*s", (int)n, p);
			return;
		}
		p = nl ? nl + 1 : NULL;
	}
}

static int nm_has_digit(const char *s)
{
	for (; *s; s++)
		if (isdigit((unsigned char)*s))
			return 1;
	return 0;
}

static void nm_run(const struct nm_case *c)
{
	const char *args[24];
	struct tl_server s;
	static struct tool_run r;
	char line[512], cmd[256] = "";
	size_t i, n = 0;
	int ok;

	alarm(120);	/* a hang becomes a crash, not a stuck suite */
	/* One that holds commands is a child, killed at the end: its held
	 * ops would outlive its controllers at an orderly stop. */
	cr_assert_eq(c->o.stop_after ? ht_server_fork(&s, &c->o) : ht_server_start(&s, &c->o), 0);
	for (i = 0; c->args[i]; i++) {
		args[i] = strcmp(c->args[i], NM_URI) ? c->args[i] : s.uri;
		n += (size_t)snprintf(cmd + n, n < sizeof(cmd) ? sizeof(cmd) - n : 0, " %s",
				      strcmp(c->args[i], NM_URI) ? c->args[i] : "URI");
	}
	args[i] = NULL;
	cr_assert_eq(tool_run_split(&r, c->prog, args, NULL, NM_RUN_MS), 0, "%s", r.out);
	tl_server_stop(&s);
	nm_first_line(r.err, line, sizeof(line));
	ok = r.status == c->want_exit && strstr(line, c->want_err) &&
	     (!c->want_err2 || strstr(line, c->want_err2)) &&
	     (!c->want_out || strstr(r.out, c->want_out)) &&
	     (!c->not_out || !strstr(r.out, c->not_out)) &&
	     (!r.status || (line[0] && (c->no_numbers || nm_has_digit(line))));
	printf("NAMED  %s | %s%s | want exit %d '%s' | got exit %d '%s' %.2f s | %s\n", c->ctrl,
	       c->prog, cmd, c->want_exit, c->want_err, r.status, line, r.secs,
	       ok ? "ok" : "DIFFERS");
	fflush(stdout);
	cr_expect(ok, "%s against %s: exit %d, first stderr line '%s'\nstdout:\n%s\nstderr:\n%s",
		  c->prog, c->ctrl, r.status, line, r.out, r.err);
}

static void nm_table(const struct nm_case *t, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		nm_run(&t[i]);
}

#define NM_N(t) (sizeof(t) / sizeof((t)[0]))

/* ---- the controllers ---- */

#define DW0_ZERO "Retrieve DW0 always 0", { .lie_retrieve = 1 }
#define STOPS "stops completing after 4 I/O commands", { .stop_after = 4 }
#define KML16 "KML 16", { .kml = 16 }
#define MAXV4K "largest value 4096 bytes", { .max_value = 4096 }
#define ERR06 "every I/O command answered 06h", { .lie_status = 1 }
#define SGLS2 "SGLS 10b (dword-aligned SGLs)", { .sgls = NKV_SGLS_DWORD_ALIGNED }

#define PC "examples/prefix_cache_cpu"
#define FR "examples/first_retrieve_cpu"
#define MQ "examples/multi_queue_cpu"
#define BSR "examples/batch_store_retrieve_cpu"
#define CL "examples/cache_lookup_cpu"
#define BENCH "nkv-bench", { "--engine", "cpu", "--quiet", "--target", NM_URI, "--iterations", \
			     "1", "--num-keys", "8", "--batch-size", "8"

/* Items 1 and 4: DW0 0 on every Retrieve. */
Test(named, dw0_zero, .timeout = 150)
{
	static const struct nm_case t[] = {
		{ DW0_ZERO, PC, { "--ci", NM_URI }, 1,
		  "request 2 (loaded): 192 of 192 values: 192 short: layer 0 block 0: the "
		  "controller answered DW0 = 0 for a page of 8192 bytes", "loaded 0 of 192 values",
		  NULL },
		{ DW0_ZERO, FR, { NM_URI }, 1,
		  "32 of 32 lanes failed: lane 0 (first-00): Retrieve answered DW0 = 0 for a "
		  "value of 64 bytes", NULL, NULL },
		{ DW0_ZERO, BSR, { NM_URI }, 1, "retrieve: key 0: the controller returned length 0",
		  NULL, NULL },
		{ DW0_ZERO, MQ, { NM_URI }, 1, "retrieve: key 0: the controller returned length 0",
		  NULL, "0 SQ doorbells for 0 commands" },
		{ DW0_ZERO, CL, { NM_URI }, 1, "the controller returned length 0", NULL, NULL },
	};

	nm_table(t, NM_N(t));
}

/* Items 2, 3 and 9: flags the controller cannot serve, refused (exit 2)
 * before anything is sent, naming the limit. */
Test(named, limits, .timeout = 150)
{
	static const struct nm_case t[] = {
		{ KML16, PC, { "--ci", "--hash", "sha256", NM_URI }, 2,
		  "--hash sha256: keys of 32 bytes are longer than the controller's limit of 16 "
		  "bytes (KML)", NULL, NULL },
		{ KML16, BENCH, "--key-order", "sha256", NULL }, 2,
		  "keys of 32 bytes are longer than the controller's limit of 16 bytes (KML)",
		  NULL, NULL },
		{ MAXV4K, PC, { "--ci", NM_URI }, 2,
		  "pages of 8192 bytes are larger than the controller's limit of 4096 bytes "
		  "(max value)", NULL, NULL },
		{ MAXV4K, BENCH, "--value-size", "4096", "--data-buffer-size", "8192", NULL }, 2,
		  "--data-buffer-size: a buffer of 8192 bytes is larger than the controller's "
		  "limit of 4096 bytes (max value)", NULL, NULL },
	};

	nm_table(t, NM_N(t));
}

/* Items 5 and 8: a controller that stops completing. */
Test(named, stops_completing, .timeout = 150)
{
	static const struct nm_case t[] = {
		{ STOPS, BENCH, "--kv-op", "store", "--timeout-ms", "1000", NULL }, 3,
		  "nkv-bench: FAILED: timed out: no completion within --timeout-ms 1000 ms",
		  "results: 4 of 8 commands submitted completed, 4 never did; 1 queue pair "
		  "failed", NULL },
		{ STOPS, BENCH, "--kv-op", "store", "--timeout-ms", "1000", "--json", NULL }, 3,
		  "4 of 8 commands submitted completed, 4 never did; 1 queue pair failed (4 "
		  "unexpected outcomes", "\"commands\":4,\"submitted\":8,", NULL },
		{ STOPS, FR, { NM_URI }, 3, "32 of 32 lanes failed: lane ", NULL, NULL,
		  "Store did not complete: Connection timed out (error -110)" },
		{ STOPS, MQ, { NM_URI }, 3, "did not run: no completion in time: timed out (error "
		  "-110)", NULL, "0 SQ doorbells for 0 commands" },
		{ STOPS, PC, { "--ci", NM_URI }, 3, "request 1: 252 of 256 values: 252 failed: "
		  "layer ", NULL, NULL, "did not run: no completion in time: timed out (error -110)" },
	};

	nm_table(t, NM_N(t));
}

/* Item 7: a status outside 80h..8Fh, named. */
Test(named, status_06h, .timeout = 150)
{
	static const struct nm_case t[] = {
		{ ERR06, BENCH, "--kv-op", "store", NULL }, 1,
		  "nkv-bench: FAILED: 8 commands answered a status outside 80h..8Fh, the first "
		  "Internal Error (status 0x6: SCT 0h, SC 06h)",
		  "8 other status (the first Internal Error (status 0x6: SCT 0h, SC 06h))", NULL },
		{ ERR06, BENCH, "--kv-op", "store", "--json", NULL }, 1,
		  "nkv-bench: FAILED: 8 commands answered a status outside 80h..8Fh, the first "
		  "Internal Error", "\"first_other_status\":6,\"first_other_status_name\":"
		  "\"Internal Error\"", NULL },
		{ ERR06, BENCH, "--kv-op", "retrieve", NULL }, 1, "8 of 8 keys answered a status "
		  "outside 80h..8Fh, the first Internal Error (status 0x6: SCT 0h, SC 06h)", NULL,
		  NULL },
		{ ERR06, BSR, { NM_URI }, 1, "store: key 0: the controller answered ", NULL, NULL },
		{ ERR06, FR, { NM_URI }, 1, "32 of 32 lanes failed: lane 0 (first-00): Store "
		  "answered ", NULL, NULL },
		{ ERR06, MQ, { NM_URI }, 1, "store: key 0: the controller answered ", NULL,
		  "0 SQ doorbells for 0 commands" },
		{ ERR06, PC, { "--ci", NM_URI }, 1, "request 1: 256 of 256 values: 256 failed: "
		  "layer 0 block 0: the controller answered Internal Error (status 0x6)", NULL, NULL },
		{ ERR06, CL, { NM_URI }, 1, "the controller answered Internal Error (status 0x6)",
		  NULL, NULL },
	};

	nm_table(t, NM_N(t));
}

/* The rule for the programs' own refusals: a socket nobody serves (3),
 * flags out of range (2). */
#define NOBODY "vfio-user:/tmp/nkv-named-nobody.sock"
Test(named, programs_refuse, .timeout = 60)
{
	static const struct nm_case t[] = {
		{ "none", { 0 }, "nkv-probe", { NOBODY }, 3, "cannot connect to "
		  "/tmp/nkv-named-nobody.sock", NULL, NULL, NULL, 1 },
		{ "none", { 0 }, "nkv-admin", { "info", NOBODY }, 3, "cannot connect to "
		  "/tmp/nkv-named-nobody.sock", NULL, NULL, NULL, 1 },
		{ "none", { 0 }, "nkv-bench", { "--batch-size", "0" }, 2, "bad value '0' for "
		  "--batch-size: expected 1..1023", NULL, NULL },
		{ "none", { 0 }, "nkv-target", { "--socket", "/tmp/nkv-named-x.sock",
		  "--queue-depth", "1" }, 2, "--queue-depth", NULL, NULL },
		{ "none", { 0 }, FR, { NOBODY }, 3, "cannot connect to " NOBODY, NULL, NULL, NULL,
		  1 },
		{ "none", { 0 }, PC, { "--ci", NOBODY }, 3, "cannot connect to " NOBODY, NULL, NULL,
		  NULL, 1 },
	};

	nm_table(t, NM_N(t));
}

/* Item 6: SGLS 10b is SGL support (dword alignment), not its absence. */
Test(named, sgls_dword_aligned, .timeout = 60)
{
	static const struct nm_case t[] = {
		{ SGLS2, "nkv-probe", { NM_URI }, 0, "",
		  "SGLs               supported, dword-aligned only (SGLS 0x2)", "not supported" },
		{ SGLS2, "nkv-admin", { "info", NM_URI }, 0, "",
		  "SGLs               supported, dword-aligned only (SGLS 0x2)", "not supported" },
	};

	nm_table(t, NM_N(t));
}
