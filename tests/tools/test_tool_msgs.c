// SPDX-License-Identifier: MIT
/*
 * test_tool_msgs - what nkv-bench and nkv-probe say, and how they exit,
 * when the controller lies, dies or stays silent (issue 35): the first
 * line of the message names what happened with the numbers, and the exit
 * status follows the one table (0 ok, 1 data or status failure, 2 bad
 * flags, 3 setup or controller failure). The controllers are nkv-target
 * served here, some with a backend that lies (liar_be.h); the programs
 * are the ones built next to this test (BUILD/bin/).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "host_util.h"
#include "target/backends/registry.h"
#include "target/core/ns.h"
#include "tool_run.h"

#define MSG_TIMEOUT_MS 60000

/* nkv-bench on the cpu engine against @uri, quiet, with @extra flags
 * (NULL-terminated, up to 12). */
static void bench(struct tool_run *r, const char *uri, const char *const *extra)
{
	const char *args[24] = { "--engine", "cpu", "--quiet" };
	size_t n = 3, i;

	if (uri) {
		args[n++] = "--target";
		args[n++] = uri;
	}
	for (i = 0; extra[i] && n + 1 < sizeof(args) / sizeof(args[0]); i++)
		args[n++] = extra[i];
	args[n] = NULL;
	cr_assert_eq(tool_run(r, "nkv-bench", args, NULL, MSG_TIMEOUT_MS), 0, "%s", r->out);
}

/* Whether @r has a line that starts with @want. */
static int says(const struct tool_run *r, const char *want)
{
	char line[1024];

	return tool_line(r, want, line, sizeof(line)) != NULL;
}

/* A controller that answers DW0 = 0 for every Retrieve: the keys this
 * run stored with 4096 bytes come back "0 bytes long". Said as the
 * controller's misreport, never as a --value-size to pass. */
Test(bench_msgs, dw0_zero_on_retrieve_is_the_controllers, .timeout = 120)
{
	static const char *const run[] = { "--kv-op", "retrieve", "--num-keys", "32",
					   "--batch-size", "16", "--iterations", "1", NULL };
	static const char *const no_verify[] = { "--kv-op", "retrieve", "--num-keys", "32",
						 "--batch-size", "16", "--iterations", "1",
						 "--no-verify", NULL };
	struct ht_server_opts o = { .lie_retrieve = 1 };
	struct tl_server s;
	struct tool_run r;

	cr_assert_eq(ht_server_start(&s, &o), 0);
	/* The keys are missing: stored first (4096 bytes), then retrieved. */
	bench(&r, s.uri, run);
	cr_expect_eq(r.status, 1, "a value that does not verify: exit %d:\n%s", r.status, r.out);
	cr_expect(says(&r, "nkv-bench: FAILED: 32 values do not verify: the controller answered "
		       "DW0 = 0 for key 0 (nkvb-00) stored with 4096 bytes (the controller "
		       "misreports the value length)"), "%s", r.out);
	cr_expect_null(strstr(r.out, "--value-size 0"), "%s", r.out);
	/* Now they are there: the read-back before the run says it. */
	bench(&r, s.uri, run);
	cr_expect_eq(r.status, 1, "exit %d:\n%s", r.status, r.out);
	cr_expect(says(&r, "nkv-bench: before the run: the controller answered DW0 = 0 for key 0 "
		       "(nkvb-00), which it holds"), "%s", r.out);
	cr_expect_null(strstr(r.out, "--value-size 0"), "%s", r.out);
	/* The read-back is verification: --no-verify skips it. */
	bench(&r, s.uri, no_verify);
	tl_server_stop(&s);
	cr_expect_eq(r.status, 0, "--no-verify: exit %d:\n%s", r.status, r.out);
	cr_expect_null(strstr(r.out, "before the run"), "%s", r.out);
}

/* --value-size 0 is refused, with a reason that agrees with the above. */
Test(bench_msgs, value_size_0_is_refused, .timeout = 30)
{
	static const char *const args[] = { "--value-size", "0", NULL };
	struct tool_run r;

	bench(&r, NULL, args);
	cr_expect_eq(r.status, 2, "exit %d:\n%s", r.status, r.out);
	cr_expect(strstr(r.out, "nkv-bench: bad value '0' for --value-size: expected 1..64M (a "
			 "value has 1 byte to 64 MiB)"), "%s", r.out);
}

/* A List payload padded wrongly: where it stops parsing, not "byte 0". */
Test(bench_msgs, malformed_list_names_entry_and_offset, .timeout = 120)
{
	static const char *const run[] = { "--kv-op", "list", "--num-keys", "16", "--batch-size",
					   "16", "--iterations", "1", NULL };
	struct ht_server_opts o = { .lie_list = 1 };
	struct tl_server s;
	struct tool_run r;

	cr_assert_eq(ht_server_start(&s, &o), 0);
	bench(&r, s.uri, run);
	tl_server_stop(&s);
	cr_expect_eq(r.status, 1, "exit %d:\n%s", r.status, r.out);
	cr_expect(says(&r, "nkv-bench: FAILED: 16 List payloads do not parse: the List payload "
		       "from key 0 (nkvb-00) stops parsing at entry 1, byte 12 (DW0 2)"), "%s",
		  r.out);
	cr_expect(strstr(r.out, "  VERIFY      16 List payloads do not parse: "), "%s", r.out);
}

/* More passes than nkv-bench keeps batch times of is a usage error,
 * said before anything starts. */
Test(bench_msgs, too_many_iterations_is_usage, .timeout = 30)
{
	static const char *const args[] = { "--num-keys", "1024", "--batch-size", "1",
					    "--queue-length", "4", "--iterations", "1073741824",
					    NULL };
	struct tool_run r;

	bench(&r, NULL, args);
	cr_expect_eq(r.status, 2, "exit %d:\n%s", r.status, r.out);
	cr_expect(strstr(r.out, "nkv-bench: --iterations 1073741824 x 1024 batches per pass "),
		  "%s", r.out);
	cr_expect(strstr(r.out, "use --iterations 131071 or less"), "%s", r.out);
}

/* "The target is full" only when it says so: 81h. */
Test(bench_msgs, full_target_is_said_on_81h, .timeout = 120)
{
	static const char *const run[] = { "--kv-op", "retrieve", "--num-keys", "256",
					   "--batch-size", "16", "--iterations", "1", NULL };
	struct ht_server_opts o = { .capacity = 256u << 10 };
	struct tl_server s;
	struct tool_run r;
	char line[512];

	cr_assert_eq(ht_server_start(&s, &o), 0);
	bench(&r, s.uri, run);
	tl_server_stop(&s);
	cr_expect_eq(r.status, 1, "a status: exit %d:\n%s", r.status, r.out);
	cr_assert(tool_line(&r, "nkv-bench: storing the keys first failed: ", line, sizeof(line)),
		  "%s", r.out);
	cr_expect(strstr(line, " of 256 keys answered 81h (capacity exceeded): the target is "
			 "full"), "%s", line);
}

struct killer {
	struct tl_server *s;
	unsigned after_ms;
};

static void *kill_later(void *arg)
{
	struct killer *k = arg;

	usleep(k->after_ms * 1000u);
	tl_server_kill(k->s);
	return NULL;
}

/* The controller SIGKILLed during a Delete run: what happened, with the
 * numbers, exit 3; never "0 of 0 stored; is the target full?". */
Test(bench_msgs, controller_killed_during_delete, .timeout = 120)
{
	static const char *const run[] = { "--kv-op", "delete", "--num-keys", "256",
					   "--batch-size", "16", "--iterations", "100000",
					   "--timeout-ms", "1000", NULL };
	struct tl_server s;
	struct killer k = { &s, 1500 };
	struct tool_run r;
	pthread_t th;
	char line[512];

	cr_assert_eq(ht_server_fork(&s, NULL), 0);
	cr_assert_eq(pthread_create(&th, NULL, kill_later, &k), 0);
	bench(&r, s.uri, run);
	pthread_join(th, NULL);
	cr_expect_eq(r.status, 3, "the controller went away: exit %d:\n%s", r.status, r.out);
	cr_assert(tool_line(&r, "nkv-bench: FAILED: ", line, sizeof(line)) ||
		  tool_line(&r, "nkv-bench: storing the keys first failed after ", line,
			    sizeof(line)), "%s", r.out);
	/* Until the library sees the closed connection, a timeout. */
	cr_expect(strstr(line, "the controller is gone") ||
		  strstr(line, "no completion within --timeout-ms 1000 ms"), "%s", line);
	cr_expect(strstr(line, " of 256 keys") || strstr(line, " commands"), "%s", line);
	cr_expect_null(strstr(r.out, "is the target full"), "%s", r.out);
	cr_expect_null(strstr(r.out, "0 of 0"), "%s", r.out);
	cr_log_info("killed mid-delete: %.2f s, %s", r.secs, line);
}

/* A socket whose listener never answers: bound and listening, nothing
 * accepted or read. With @fill, one connection fills its listen queue
 * first, so the next one is not even taken. Returns the listening fd
 * (the filler, if any, in *@filler). */
static int silent_listener(const char *path, int fill, int *filler)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(fd, 0), 0);
	*filler = -1;
	if (fill) {
		*filler = socket(AF_UNIX, SOCK_STREAM, 0);
		cr_assert_eq(connect(*filler, (struct sockaddr *)&sa, sizeof(sa)), 0);
	}
	return fd;
}

/* nkv-probe and nkv-bench say the same first words of a controller that
 * does not answer VERSION, taken or not: exit 3 within about the wait. */
static void silent(int fill)
{
	static const char *const env[] = { "NKV_VFU_TIMEOUT_MS=500", NULL };
	char path[64], uri[80], line[512];
	const char *const args[] = { uri, NULL };
	const char *const bargs[] = { "--engine", "cpu", "--target", uri, "--num-keys", "4",
				      "--batch-size", "4", NULL };
	const char *const want = "vfio-user: no reply to VERSION within 500 ms";
	struct tool_run r;
	int fd, filler;

	snprintf(path, sizeof(path), "/tmp/nkv-msgs-%d.sock", (int)getpid());
	snprintf(uri, sizeof(uri), "vfio-user:%s", path);
	fd = silent_listener(path, fill, &filler);
	cr_assert_eq(tool_run(&r, "nkv-probe", args, env, MSG_TIMEOUT_MS), 0, "%s", r.out);
	cr_expect_eq(r.status, 3, "exit %d:\n%s", r.status, r.out);
	cr_expect(tool_line(&r, "nkv-probe: ", line, sizeof(line)) &&
		  !strncmp(line + 11, want, strlen(want)), "%s", r.out);
	cr_expect_lt(r.secs, 5.0, "gave up after %.2f s", r.secs);
	cr_expect_null(strstr(r.out, "Resource temporarily unavailable"), "%s", r.out);
	if (fill) {	/* the probe's connection now waits in the queue too */
		close(filler);
		close(fd);
		fd = silent_listener(path, fill, &filler);
	}
	cr_assert_eq(tool_run(&r, "nkv-bench", bargs, env, MSG_TIMEOUT_MS), 0, "%s", r.out);
	cr_expect_eq(r.status, 3, "exit %d:\n%s", r.status, r.out);
	cr_expect(tool_line(&r, "nkv-bench: ", line, sizeof(line)) &&
		  !strncmp(line + 11, want, strlen(want)), "%s", r.out);
	if (filler >= 0)
		close(filler);
	close(fd);
	unlink(path);
}

Test(probe_msgs, no_reply_to_version, .timeout = 60) { silent(0); }
Test(probe_msgs, connection_not_taken, .timeout = 60) { silent(1); }

/* Nothing there at all: a setup failure (3); a URI that is not one: 2. */
Test(probe_msgs, exit_statuses, .timeout = 30)
{
	const char *const none[] = { "vfio-user:/nonexistent/nkv-probe-msgs.sock", NULL };
	const char *const pcie[] = { "pcie:/dev/nkv0", NULL };
	struct tool_run r;

	cr_assert_eq(tool_run(&r, "nkv-probe", none, NULL, MSG_TIMEOUT_MS), 0);
	cr_expect_eq(r.status, 3, "exit %d:\n%s", r.status, r.out);
	cr_expect(strstr(r.out, "nkv-probe: vfio-user: cannot connect to "
			 "/nonexistent/nkv-probe-msgs.sock: No such file or directory\n"), "%s",
		  r.out);
	cr_assert_eq(tool_run(&r, "nkv-probe", pcie, NULL, MSG_TIMEOUT_MS), 0);
	cr_expect_eq(r.status, 2, "exit %d:\n%s", r.status, r.out);
}

/* Every program's --help states the one table. */
Test(tool_msgs, help_states_the_exit_table, .timeout = 30)
{
	static const char *const tools[] = { "nkv-bench", "nkv-admin", "nkv-probe", "nkv-target" };
	const char *const help[] = { "--help", NULL };
	struct tool_run r;
	size_t i;

	for (i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		cr_assert_eq(tool_run(&r, tools[i], help, NULL, MSG_TIMEOUT_MS), 0, "%s", r.out);
		cr_expect_eq(r.status, 0, "%s --help: exit %d", tools[i], r.status);
		cr_expect(strstr(r.out, "exit status: 0 ok; 1 data or status failure (a value that "
				 "does not verify,\nan NVMe error status); 2 bad flags or arguments; "
				 "3 setup or controller\nfailure (cannot connect, controller gone, "
				 "timeout, admin command failed)\n"), "%s --help:\n%s", tools[i], r.out);
	}
}

/* --nsid picks the namespace a run uses (the report names it); one that
 * is not active is a setup failure (exit 3) saying so. */
Test(bench_msgs, nsid_picks_the_namespace, .timeout = 120)
{
	static const char *const two[] = { "--kv-op", "store", "--num-keys", "16", "--batch-size",
					   "16", "--iterations", "1", "--nsid", "2", NULL };
	static const char *const nine[] = { "--kv-op", "store", "--num-keys", "16", "--nsid", "9",
					    NULL };
	static const char *const zero[] = { "--nsid", "0", NULL };
	struct nkv_be_conf kv = { sizeof(kv), .capacity = 16 << 20, .max_value = 1 << 20 };
	struct ht_server_opts o = { 0 };
	char err[256];
	struct nkv_be *be;
	struct tl_server s;
	struct tool_run r;

	cr_assert_eq(ht_server_start(&s, &o), 0);
	be = nkv_be_create("mem", &kv, err, sizeof(err));
	cr_assert_not_null(be, "%s", err);
	cr_assert_eq(nkv_subsys_ns_attach(nkv_tgt_embed_ss(s.tgt), 2, be), 0);
	bench(&r, s.uri, two);
	cr_expect_eq(r.status, 0, "exit %d:\n%s", r.status, r.out);
	cr_expect_eq(be->ops->keys_used(be), 16, "the run stored into namespace 2");
	bench(&r, s.uri, nine);
	tl_server_stop(&s);
	cr_expect_eq(r.status, 3, "exit %d:\n%s", r.status, r.out);
	cr_expect(strstr(r.out, "namespace 9 is not an active KV or NVM namespace"), "%s", r.out);
	bench(&r, NULL, zero);
	cr_expect_eq(r.status, 2, "exit %d:\n%s", r.status, r.out);
	cr_expect(strstr(r.out, "bad value '0' for --nsid"), "%s", r.out);
}
