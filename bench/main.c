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
 * note; --engine gpu without a GPU, or with a batch wider than its wave,
 * is a usage error that says why. */
static int nkv_bench_engine(struct nkv_bench_opts *o, const char **note)
{
	static char why[256];
	uint32_t wave = 0;
	int gpu = !nkv_bench_gpu_probe(&wave, why, sizeof(why));

	*note = NULL;
	if (o->engine == NKV_BENCH_ENGINE_GPU && !gpu) {
		fprintf(stderr, "nkv-bench: --engine gpu: %s; use --engine cpu\n", why);
		return NKV_BENCH_EXIT_USAGE;
	}
	if (gpu && o->engine != NKV_BENCH_ENGINE_CPU && o->batch > wave) {
		fprintf(stderr, "nkv-bench: --batch-size %u on this GPU: a batch is one wave, and its "
			"waves have %u lanes; use --batch-size %u or less (or --engine cpu)\n",
			o->batch, wave, wave);
		return NKV_BENCH_EXIT_USAGE;
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

/* Exist over every key; how many the target has. */
static int nkv_bench_count_present(struct nkv_bench_run *r, uint64_t *present)
{
	struct nkv_bench_phase ph;
	int rc = nkv_bench_run_phase(r, NKV_KV_EXIST, 1, 0, 0, &ph);

	*present = ph.ok;
	if (!rc && (ph.dev_errors || ph.failed_qps || ph.commands != ph.ok + ph.by_status[7]))
		rc = -EIO;
	nkv_bench_phase_free(&ph);
	return rc;
}

/* Store every key's pattern (not measured). */
static int nkv_bench_store_all(struct nkv_bench_run *r)
{
	struct nkv_bench_phase ph;
	int rc = nkv_bench_run_phase(r, NKV_KV_STORE, 1, NKV_BK_FILL, 0, &ph);

	if (!rc && (ph.dev_errors || ph.failed_qps || ph.ok != ph.commands))
		rc = -EIO;
	if (rc)
		fprintf(stderr, "nkv-bench: storing the keys first failed: %llu of %llu stored%s%s; "
			"is the target full?\n", (unsigned long long)ph.ok,
			(unsigned long long)ph.commands, ph.dev_errors ? ": " : "",
			ph.dev_errors ? nkv_bench_dev_err_str(ph.last_dev_error) : "");
	nkv_bench_phase_free(&ph);
	return rc;
}

/* Keys that exist may hold values of another size than --value-size (a
 * store with other options earlier): a Retrieve of each wave's first
 * batch says so before the measured run turns it into verify failures. */
static int nkv_bench_check_sizes(struct nkv_bench_run *r, const struct nkv_bench_opts *o)
{
	struct nkv_bench_phase ph;
	char key[40];
	int rc = nkv_bench_run_probe(r, &ph);

	if (!rc && ph.len_fail) {
		nkv_bench_key_str(o, ph.bad_idx, key, sizeof(key));
		nkv_bench_run_say(r, "the target holds key %u (%s) with a %u-byte value, and "
				  "--value-size is %u: pass --value-size %u, or store the keys "
				  "again with this size (--kv-op store)", ph.bad_idx, key,
				  ph.bad_len, o->value_size, ph.bad_len);
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
		return nkv_bench_store_all(r);
	}
	if (o->opc == NKV_KV_STORE || o->opc == NKV_KV_DELETE)
		return 0;
	rc = nkv_bench_count_present(r, &s->keys_present);
	if (rc) {
		fprintf(stderr, "nkv-bench: checking which keys exist failed (%s)\n", strerror(-rc));
		return rc;
	}
	if (s->keys_present == o->num_keys)
		return o->opc == NKV_KV_RETRIEVE ? nkv_bench_check_sizes(r, o) : 0;
	s->keys_stored = o->num_keys;
	return nkv_bench_store_all(r);
}

/* Delete: every iteration stores the keys (not measured), then deletes
 * them (measured). Everything else: one launch of all iterations. */
/* --warmup passes of the measured op, not measured: a Store then lands
 * in memory the target has touched before, as in a cache that runs. */
static int nkv_bench_warmup(struct nkv_bench_run *r, const struct nkv_bench_opts *o)
{
	uint32_t flags = NKV_BK_FILL, i;
	int rc = 0;

	for (i = 0; i < o->warmup && !rc; i++) {
		struct nkv_bench_phase ph;

		rc = nkv_bench_run_phase(r, o->opc, 1, flags, 0, &ph);
		if (!rc && (ph.dev_errors || ph.failed_qps))
			rc = -EIO;
		nkv_bench_phase_free(&ph);
	}
	if (rc)
		fprintf(stderr, "nkv-bench: warm-up pass %u failed\n", i);
	return rc;
}

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
	for (it = 0; it < o->iterations && !rc; it++) {
		struct nkv_bench_phase one;

		rc = nkv_bench_store_all(r);
		if (!rc)
			rc = nkv_bench_run_phase(r, NKV_KV_DELETE, 1, flags, show, &one);
		if (!rc)
			rc = nkv_bench_phase_merge(ph, &one);
		nkv_bench_phase_free(&one);
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
	char err[256] = "", desc[256];
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
		return NKV_BENCH_EXIT_SETUP;
	if (!uri) {
		rc = nkv_bench_target_start(o, &t, err, sizeof(err));
		if (rc) {
			fprintf(stderr, "nkv-bench: %s\n", err);
			return NKV_BENCH_EXIT_SETUP;
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
		return NKV_BENCH_EXIT_SETUP;
	}
	nkv_bench_cpu_list(s.device_cpus, sizeof(s.device_cpus));
	if (o->workload == NKV_BENCH_WORKLOAD_PREFIX) {
		rc = nkv_bench_prefix_main(o, &s, uri, t);
		nkv_bench_target_stop(t);
		return rc;
	}
	rc = nkv_bench_run_open(o, uri, &r, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "nkv-bench: %s\n", err[0] ? err : strerror(-rc));
		nkv_bench_target_stop(t);
		/* Flags the controller cannot serve are the user's to change. */
		return rc == -EMSGSIZE || rc == -EOPNOTSUPP ? NKV_BENCH_EXIT_USAGE
							    : NKV_BENCH_EXIT_SETUP;
	}
	nkv_bench_run_info(r, &info);
	s.info = &info;
	rc = nkv_bench_prepare(r, o, &s);
	if (!rc)
		rc = nkv_bench_warmup(r, o);
	s.target_busy_ns = t ? -(int64_t)nkv_bench_target_busy_ns(t) : -1;
	if (!rc)
		rc = nkv_bench_measure(r, o, &ph);
	if (t)
		s.target_busy_ns += (int64_t)nkv_bench_target_busy_ns(t);
	if (rc) {
		fprintf(stderr, "nkv-bench: the run failed: %s\n", nkv_bench_run_why(r, rc));
		rc = NKV_BENCH_EXIT_FAIL;
	} else {
		if (o->json)
			nkv_bench_report_json(stdout, o, &s, &ph);
		else
			nkv_bench_report_text(stdout, o, &s, &ph);
		/* Out now: the teardown may wait on a controller that is gone. */
		fflush(stdout);
		rc = nkv_bench_unexpected(o, &ph) ? NKV_BENCH_EXIT_FAIL : NKV_BENCH_EXIT_OK;
		if (rc)
			fprintf(stderr, "nkv-bench: FAILED: %llu unexpected outcomes "
				"(see the outcomes line)\n",
				(unsigned long long)nkv_bench_unexpected(o, &ph));
	}
	nkv_bench_phase_free(&ph);
	nkv_bench_run_close(r);
	nkv_bench_target_stop(t);
	return rc;
}

int main(int argc, char **argv)
{
	struct nkv_bench_opts o;
	int rc = nkv_bench_parse(argc, argv, &o);

	if (rc < 0) {
		nkv_bench_opts_free(&o);
		return 0;	/* --help */
	}
	if (!rc)
		rc = nkv_bench_main(&o);
	nkv_bench_opts_free(&o);
	return rc;
}
