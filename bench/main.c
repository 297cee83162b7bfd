/* SPDX-License-Identifier: MIT */
/*
 * main.c - nkv-bench: the main job's tool. Starts an embedded nkv-target
 * unless --target names one, connects with the memory mode, makes sure
 * the keys exist when the measured op needs them (Exist tells), then
 * measures the op and reports (report.c). See docs/bench.md.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "gpu.h"

/* gpu if one is usable (and asked for, or by default), else cpu with a
 * note; --engine gpu without a GPU is a usage error that says why. A
 * batch wider than the GPU's wave is a block of waves, as on the cpu
 * engine (the launcher's nkv_bk_run_block_kernel). */
static int nkv_bench_engine(struct nkv_bench_opts *o, const char **note)
{
	static char why[256];
	uint32_t wave = 0;
	int gpu = !nkv_bench_gpu_probe(&wave, why, sizeof(why));

	*note = NULL;
	if (o->engine == NKV_BENCH_ENGINE_GPU && !gpu) {
		fprintf(stderr, "nkv-bench: --engine gpu: %s; use --engine cpu\n", why);
		return NKV_EXIT_USAGE;
	}
	if (o->engine == NKV_BENCH_ENGINE_AUTO && !gpu) {
		*note = "(no GPU here: the cpu engine runs the same kernel body)";
		if (!o->json)
			fprintf(stderr, "nkv-bench: note: %s, using --engine cpu\n", why);
	}
	o->engine = gpu && o->engine != NKV_BENCH_ENGINE_CPU ? NKV_BENCH_ENGINE_GPU
							    : NKV_BENCH_ENGINE_CPU;
	return 0;
}

/* Pin the calling thread to cpu, or give it back every CPU of all when
 * cpu < 0. Threads it creates afterwards inherit the set (--cpus). */
static int nkv_bench_pin(int cpu, const cpu_set_t *all)
{
	cpu_set_t one;
	int rc;

	CPU_ZERO(&one);
	if (cpu >= 0)
		CPU_SET(cpu, &one);
	rc = pthread_setaffinity_np(pthread_self(), sizeof(one), cpu >= 0 ? &one : all);
	if (rc)
		fprintf(stderr, "nkv-bench: --cpus: cannot pin to CPU %d: %s\n", cpu, strerror(rc));
	return rc ? -rc : 0;
}

/* The calling thread's CPUs as a list ("0-1", "3"), as a report shows it. */
static void nkv_bench_cpu_list(char *buf, size_t len)
{
	cpu_set_t set;
	size_t n = 0;
	int c, first;

	buf[0] = '\0';
	if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set))
		return;
	for (c = 0; c < CPU_SETSIZE && n + 16 < len; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		for (first = c; c + 1 < CPU_SETSIZE && CPU_ISSET(c + 1, &set); c++)
			;
		n += (size_t)snprintf(buf + n, len - n, "%s%d", n ? "," : "", first);
		if (c > first)
			n += (size_t)snprintf(buf + n, len - n, "-%d", c);
	}
}

/* Why a phase that prepares the run (@what: every key's Store, or Exist)
 * did not do all it should, in words with the numbers, into the run's
 * why. @rc: the phase's own error; @fine: of its @keys commands, those
 * that went as they should. The errno says whose the failure is (nkv_bench_exit_of): the
 * controller gone or silent (-ENOTCONN, -ETIMEDOUT, -EIO), or its
 * answers (-ENOSPC: 81h, the target is full; -EREMOTEIO: another
 * status). 0 when all went well. */
static int nkv_bench_setup_fail(struct nkv_bench_run *r, const struct nkv_bench_opts *o,
				const char *what, int rc, const struct nkv_bench_phase *ph,
				uint64_t fine, uint64_t keys)
{
	char why[256];
	unsigned i;

	if (rc) {
		snprintf(why, sizeof(why), "%s", nkv_bench_run_why(r, rc));
		nkv_bench_run_say(r, "%s failed: %s", what, why);
		return rc;
	}
	if (ph->dev_errors || ph->failed_qps) {
		nkv_bench_run_say(r, "%s failed after %llu of %llu keys: %s", what,
				  (unsigned long long)fine, (unsigned long long)keys, ph->dev_errors ?
				  nkv_bench_dev_err_why(o, ph->wait_ms, ph->last_dev_error, why, sizeof(why)) :
				  "a queue pair failed (a bad completion)");
		return ph->last_dev_error == NKV_ENOTCONN ? -ENOTCONN :
		       ph->last_dev_error == NKV_ETIMEDOUT ? -ETIMEDOUT : -EIO;
	}
	if (fine == keys)
		return 0;
	if (ph->by_status[1]) {	/* only 81h says the target is full */
		nkv_bench_run_say(r, "%s failed: %llu of %llu keys answered 81h (capacity "
				  "exceeded): the target is full", what,
				  (unsigned long long)ph->by_status[1], (unsigned long long)keys);
		return -ENOSPC;
	}
	for (i = 0; i < 16 && !ph->by_status[i]; i++)
		;
	if (i < 16)
		nkv_bench_run_say(r, "%s failed: %llu of %llu keys answered %s (%02Xh)", what,
				  (unsigned long long)ph->by_status[i], (unsigned long long)keys,
				  nkv_status_str(NKV_STATUS(NKV_SCT_GENERIC, 0x80 + i)), 0x80 + i);
	else
		nkv_bench_run_say(r, "%s failed: %llu of %llu keys answered a status outside "
				  "80h..8Fh, the first %s", what, (unsigned long long)ph->other_status,
				  (unsigned long long)keys, nkv_bench_status_name(ph->first_other, why,
				  sizeof(why)));
	return -EREMOTEIO;
}

/* Exist over every key; how many the target has. */
static int nkv_bench_count_present(struct nkv_bench_run *r, const struct nkv_bench_opts *o,
				   uint64_t *present)
{
	struct nkv_bench_phase ph;
	int rc = nkv_bench_run_phase(r, NKV_KV_EXIST, 1, 0, 0, &ph);

	*present = ph.ok;
	/* A miss (87h) is an answer too. */
	rc = nkv_bench_setup_fail(r, o, "checking which keys exist (Exist)", rc, &ph,
				  ph.ok + ph.by_status[7], o->num_keys);
	nkv_bench_phase_free(&ph);
	return rc;
}

/* Store every key's pattern (not measured). */
static int nkv_bench_store_all(struct nkv_bench_run *r, const struct nkv_bench_opts *o)
{
	struct nkv_bench_phase ph;
	int rc = nkv_bench_run_phase(r, NKV_KV_STORE, 1, NKV_BK_FILL, 0, &ph);

	rc = nkv_bench_setup_fail(r, o, "storing the keys first", rc, &ph, ph.ok, o->num_keys);
	nkv_bench_phase_free(&ph);
	return rc;
}

/* Keys that exist may hold values of another size than --value-size (a
 * store with other options earlier): a Retrieve of each wave's first
 * batch says so before the measured run turns it into verify failures.
 * Part of verification: --no-verify skips it. */
static int nkv_bench_check_sizes(struct nkv_bench_run *r, const struct nkv_bench_opts *o)
{
	struct nkv_bench_phase ph;
	char why[320];
	int rc = nkv_bench_run_probe(r, &ph);

	if (rc || ph.dev_errors || ph.failed_qps)
		rc = nkv_bench_setup_fail(r, o, "reading back each wave's first batch "
					  "(Retrieve)", rc, &ph, ph.ok, ph.commands + ph.dev_errors);
	else if (ph.len_fail) {
		nkv_bench_verify_why(o, 0, &ph, why, sizeof(why));
		nkv_bench_run_say(r, "before the run: %s", why);
		rc = -EMSGSIZE;
	}
	nkv_bench_phase_free(&ph);
	return rc;
}

/* Retrieve/Exist/List need the keys: store them when any is missing. */
static int nkv_bench_prepare(struct nkv_bench_run *r, const struct nkv_bench_opts *o,
			     struct nkv_bench_setup *s)
{
	int rc;

	s->keys_present = UINT64_MAX;
	if (o->opc == NKV_KV_STORE && o->fill_once) {
		/* Every slot then holds a pattern the measured Stores send. */
		s->keys_stored = o->num_keys;
		return nkv_bench_store_all(r, o);
	}
	if (o->opc == NKV_KV_STORE || o->opc == NKV_KV_DELETE)
		return 0;
	rc = nkv_bench_count_present(r, o, &s->keys_present);
	if (rc)
		return rc;
	if (s->keys_present == o->num_keys)
		return o->opc == NKV_KV_RETRIEVE && o->verify ? nkv_bench_check_sizes(r, o) : 0;
	s->keys_stored = o->num_keys;
	return nkv_bench_store_all(r, o);
}

/* --warmup passes of the measured op, not measured: a Store then lands
 * in memory the target has touched before, as in a cache that runs. */
static int nkv_bench_warmup(struct nkv_bench_run *r, const struct nkv_bench_opts *o)
{
	uint32_t flags = NKV_BK_FILL, i;
	char what[64];
	int rc = 0;

	for (i = 0; i < o->warmup && !rc; i++) {
		struct nkv_bench_phase ph;

		rc = nkv_bench_run_phase(r, o->opc, 1, flags, 0, &ph);
		if (rc || ph.dev_errors || ph.failed_qps) {
			snprintf(what, sizeof(what), "warm-up pass %u of %u", i + 1, o->warmup);
			rc = nkv_bench_setup_fail(r, o, what, rc, &ph, ph.commands,
						  o->num_keys);
		}
		nkv_bench_phase_free(&ph);
	}
	return rc;
}

/* Delete: every iteration stores the keys (not measured), then deletes
 * them (measured), and stops at a Delete pass the controller failed (the
 * report says how). Everything else: one launch of all iterations. */
static int nkv_bench_measure(struct nkv_bench_run *r, const struct nkv_bench_opts *o,
			     struct nkv_bench_phase *ph)
{
	uint32_t flags = (o->verify ? NKV_BK_VERIFY : 0) | (o->fill_once ? 0 : NKV_BK_FILL);
	int show = !o->quiet && !o->json, rc = 0;
	uint32_t it;

	if (o->opc != NKV_KV_DELETE)
		return nkv_bench_run_phase(r, o->opc, o->iterations, flags, show, ph);
	memset(ph, 0, sizeof(*ph));
	ph->opc = NKV_KV_DELETE;
	for (it = 0; it < o->iterations && !rc && !ph->failed_qps && !ph->dev_errors; it++) {
		struct nkv_bench_phase one;

		memset(&one, 0, sizeof(one));
		rc = nkv_bench_store_all(r, o);
		if (!rc)
			rc = nkv_bench_run_phase(r, NKV_KV_DELETE, 1, flags, show, &one);
		if (!rc)
			rc = nkv_bench_phase_merge(ph, &one);
		nkv_bench_phase_free(&one);
	}
	return rc;
}

/* The report, and the exit status of what it shows: a first line on
 * stderr that says what failed, with the numbers. */
static int nkv_bench_report(const struct nkv_bench_opts *o, const struct nkv_bench_setup *s,
			    const struct nkv_bench_phase *ph)
{
	char why[400];
	int rc;

	if (o->json)
		nkv_bench_report_json(stdout, o, s, ph);
	else
		nkv_bench_report_text(stdout, o, s, ph);
	/* Out now: the teardown may wait on a controller that is gone. */
	fflush(stdout);
	rc = nkv_bench_phase_exit(o, ph);
	if (rc) {
		nkv_bench_fail_why(o, nkv_bench_stored_all(o, s), ph, why, sizeof(why));
		fprintf(stderr, "nkv-bench: FAILED: %s (%llu unexpected outcomes, see the "
			"outcomes line)\n", why, (unsigned long long)nkv_bench_unexpected(o, ph));
	}
	return rc;
}

static int nkv_bench_main(struct nkv_bench_opts *o)
{
	struct nkv_bench_setup s = { 0 };
	struct nkv_bench_target *t = NULL;
	struct nkv_bench_run *r = NULL;
	struct nkv_bench_phase ph = { 0 };
	struct nkv_ctrl_info info;
	char err[256] = "", desc[512], remote[192];
	const char *uri = o->target;
	cpu_set_t all;
	int rc;

	rc = nkv_bench_engine(o, &s.engine_note);
	if (rc)
		return rc;
	/* The target's threads inherit the CPU they are started on, device
	 * code (the launch thread, the waves) the one pinned after that. */
	if (pthread_getaffinity_np(pthread_self(), sizeof(all), &all) ||
	    (!uri && o->cpu_target >= 0 && nkv_bench_pin(o->cpu_target, &all)))
		return NKV_EXIT_SETUP;
	if (!uri) {
		rc = nkv_bench_target_start(o, &t, err, sizeof(err));
		if (rc) {
			fprintf(stderr, "nkv-bench: %s\n", err);
			return NKV_EXIT_SETUP;
		}
		uri = nkv_bench_target_uri(t);
		nkv_bench_cpu_list(s.target_cpus, sizeof(s.target_cpus));
		snprintf(desc, sizeof(desc), "embedded nkv-target (mem backend, threads of this "
			 "process) on %s, idle poll %llu ns", nkv_bench_target_socket(t),
			 (unsigned long long)o->poll_ns);
	} else {
		snprintf(desc, sizeof(desc), "%s", uri);
	}
	s.target_desc = desc;
	if (nkv_bench_pin(o->cpu_device, &all)) {
		nkv_bench_target_stop(t);
		return NKV_EXIT_SETUP;
	}
	nkv_bench_cpu_list(s.device_cpus, sizeof(s.device_cpus));
	if (o->workload == NKV_BENCH_WORKLOAD_PREFIX) {
		rc = nkv_bench_prefix_main(o, &s, uri, t);
		nkv_bench_target_stop(t);
		return rc;
	}
	rc = nkv_bench_exec_module(o, uri, t != NULL);
	if (rc) {
		nkv_bench_target_stop(t);
		return NKV_EXIT_SETUP;
	}
	rc = nkv_bench_run_open(o, uri, &r, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "nkv-bench: %s\n", err[0] ? err : nkv_bench_errno_str(rc));
		nkv_bench_target_stop(t);
		/* Flags the controller cannot serve are the user's to change;
		 * so is a --target URI the library refuses. */
		return rc == -EMSGSIZE || rc == -EOPNOTSUPP ? NKV_EXIT_USAGE
							    : nkv_tool_connect_exit(rc);
	}
	nkv_bench_run_info(r, &info);
	s.info = &info;
	nkv_bench_run_remote(r, remote, sizeof(remote));
	if (remote[0])	/* a tcp: URI: say what crosses the network */
		snprintf(desc + strlen(desc), sizeof(desc) - strlen(desc), " (%s)", remote);
	rc = nkv_bench_prepare(r, o, &s);
	if (!rc)
		rc = nkv_bench_warmup(r, o);
	s.target_busy_ns = t ? -(int64_t)nkv_bench_target_busy_ns(t) : -1;
	if (!rc)
		rc = nkv_bench_measure(r, o, &ph);
	if (t)
		s.target_busy_ns += (int64_t)nkv_bench_target_busy_ns(t);
	if (rc) {
		fprintf(stderr, "nkv-bench: %s\n", nkv_bench_run_why(r, rc));
		rc = nkv_bench_exit_of(rc);
	} else {
		rc = nkv_bench_report(o, &s, &ph);
	}
	nkv_bench_phase_free(&ph);
	nkv_bench_run_close(r);
	nkv_bench_target_stop(t);
	return rc;
}

int main(int argc, char **argv)
{
	struct nkv_bench_opts o;
	int rc;

	nkv_tool_log_stderr();
	rc = nkv_bench_parse(argc, argv, &o);

	if (rc < 0) {
		nkv_bench_opts_free(&o);
		return 0;	/* --help */
	}
	if (!rc)
		rc = nkv_bench_main(&o);
	nkv_bench_opts_free(&o);
	return rc;
}
