/* SPDX-License-Identifier: MIT */
/*
 * run.c - nkv-bench's runs: connect, one queue pair per wave, launch the
 * bench kernel (src/device/bench_kernels.h: the same body hipcc and nvcc
 * compile) on the cpu engine or a GPU (gpu.h), collect counters and batch
 * times.
 *
 * Doorbells are counted where device code writes them: the cpu engine's
 * MMIO hook sees every SQ tail and CQ head store of every lane; on a GPU
 * the kernel counts its own in the descriptor (the host cannot see mapped
 * doorbells). With a forwarder the library's counters (nkv_qpair_stats)
 * also say how many writes reached the controller.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "gpu.h"
#include "nkv_cpu.h"

#define NKV_BENCH_MAX_QUEUES 64u
/* A batch wider than this many lanes is a block of waves of it (the
 * cpu engine's; a GPU's waves are its own). */
#define NKV_BENCH_CPU_WAVE 32u

struct nkv_bench_run {
	const struct nkv_bench_opts *o;
	struct nkv_ctrl *ctrl;
	struct nkv_ctrl_info info;
	uint32_t nq;
	struct nkv_qpair *qp[NKV_BENCH_MAX_QUEUES];
	struct nkv_bk_args args[NKV_BENCH_MAX_QUEUES];
	struct nkv_bk_lane lanes[NKV_BENCH_MAX_QUEUES][NKV_BENCH_MAX_BATCH];
	uint32_t progress[NKV_BENCH_MAX_QUEUES];
	volatile uint32_t *sq_db[NKV_BENCH_MAX_QUEUES];
	volatile uint32_t *cq_db[NKV_BENCH_MAX_QUEUES];
	/* Doorbell writes per queue pair: each has one writer, its wave's
	 * leader lane; a cache line each, so waves share none. */
	struct {
		uint64_t sq, cq;
	} __attribute__((aligned(64))) dbw[NKV_BENCH_MAX_QUEUES];
	uint32_t wait_ms;	/* the queue pairs' I/O wait, as the library set it */
	int launch_rc;
	int done;
	/* GPU engine: the phase's batch times, in one block the launcher
	 * maps with the run itself (a page-aligned allocation). */
	uint64_t *lat_all;
	size_t lat_len;
	/* --dest region: the region and every slot's runs in it. */
	struct nkv_mr *mr;
	struct nkv_dev_iov *runs;
	char why[256];		/* the last failure in words, or "" */
};

static int nkv_bench_on_gpu(const struct nkv_bench_run *r)
{
	return r->o->engine == NKV_BENCH_ENGINE_GPU;
}

static uint64_t nkv_bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One more on a counter only this thread writes: a plain load and store
 * (the launcher reads it after the launch). A locked add here, right
 * after the doorbell store, made x86 wait until the doorbell's cache line
 * came over from the target's core: half a ping-pong per doorbell, two
 * per batch-1 command. */
static void nkv_bench_count(uint64_t *c)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/* The MMIO hook: which queue's doorbell did a lane just write? */
static void nkv_bench_db_hook(void *ctx, volatile uint32_t *addr, uint32_t v)
{
	struct nkv_bench_run *r = ctx;
	uint32_t i;

	(void)v;
	for (i = 0; i < r->nq; i++) {
		if (addr == r->sq_db[i]) {
			nkv_bench_count(&r->dbw[i].sq);
			return;
		}
		if (addr == r->cq_db[i]) {
			nkv_bench_count(&r->dbw[i].cq);
			return;
		}
	}
}

static uint64_t nkv_bench_db_writes(const struct nkv_bench_run *r, int cq)
{
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; i < r->nq; i++)
		n += __atomic_load_n(cq ? &r->dbw[i].cq : &r->dbw[i].sq, __ATOMIC_RELAXED);
	return n;
}

/* The longest key of the run (explicit keys may differ in length). */
static uint32_t nkv_bench_longest_key(const struct nkv_bench_opts *o)
{
	uint32_t i, m = 0;

	for (i = 0; i < o->num_keys; i++)
		m = o->keys[i].len > m ? o->keys[i].len : m;
	return m;
}

static int nkv_bench_fits(const struct nkv_bench_run *r, char *err, size_t errlen)
{
	const struct nkv_ctrl_info *in = &r->info;

	if (in->csi != 1) {
		snprintf(err, errlen, "namespace %u is not a Key Value namespace (csi %u)",
			 in->nsid, in->csi);
		return -ENODEV;
	}
	if (nkv_bench_longest_key(r->o) > in->max_key) {
		snprintf(err, errlen, "keys of %u bytes are longer than the controller's limit of "
			 "%u bytes (KML)", nkv_bench_longest_key(r->o), in->max_key);
		return -EINVAL;
	}
	if (in->max_value && r->o->value_size > in->max_value) {
		snprintf(err, errlen, "--value-size: a value of %u bytes is larger than the "
			 "controller's limit of %u bytes (max value)", r->o->value_size, in->max_value);
		return -EMSGSIZE;
	}
	if (in->max_xfer && r->o->buf_size > in->max_xfer) {
		snprintf(err, errlen, "--data-buffer-size: a buffer of %u bytes is larger than the "
			 "controller's limit of %u bytes (MDTS)", r->o->buf_size, in->max_xfer);
		return -EMSGSIZE;
	}
	/* The library refuses a slot larger than either limit. */
	if (in->max_value && r->o->buf_size > in->max_value) {
		snprintf(err, errlen, "--data-buffer-size: a buffer of %u bytes is larger than the "
			 "controller's limit of %u bytes (max value)", r->o->buf_size, in->max_value);
		return -EMSGSIZE;
	}
	if (r->o->queue_length > in->mqes) {
		snprintf(err, errlen, "--queue-length %u is larger than the controller allows (%u, CAP.MQES+1)",
			 r->o->queue_length, in->mqes);
		return -EMSGSIZE;
	}
	if (in->io_queues < r->o->num_queues) {
		snprintf(err, errlen, "the controller granted %u I/O queue pairs, --num-queues wants %u",
			 in->io_queues, r->o->num_queues);
		return -EMSGSIZE;
	}
	return 0;
}

/* The I/O wait the library gave @q: --timeout-ms, or its default. */
static int nkv_bench_wait_of(struct nkv_qpair *q, uint32_t *wait_ms)
{
	struct nkv_qpair_info info = { .size = sizeof(info) };
	int rc = nkv_qpair_get_info(q, &info);

	*wait_ms = rc ? 0 : info.timeout_ms;
	return rc;
}

static int nkv_bench_qpairs(struct nkv_bench_run *r, char *err, size_t errlen)
{
	struct nkv_qpair_opts qo = { .size = sizeof(qo) };
	const struct nkv_bench_opts *o = r->o;
	uint32_t i, first = 0;
	int rc;

	qo.depth = o->queue_length;
	qo.slots = o->dest_region ? 0 : o->batch;
	qo.slot_size = o->dest_region ? 0 : o->buf_size;
	qo.flags = o->dest_region ? NKV_QPAIR_NO_SLOTS : 0;
	/* Device code gives up after timeout_ms of wall clock without a
	 * completion (no poll count: time only). */
	qo.poll_budget = 0;
	qo.timeout_ms = o->timeout_ms;
	for (i = 0; i < r->nq; i++) {
		struct nkv_dev_qp *d;
		uint32_t n = o->num_keys / r->nq + (i < o->num_keys % r->nq);

		rc = nkv_bench_on_gpu(r) ? nkv_qpair_create_dev(r->ctrl, &qo, &r->qp[i], &d)
					 : nkv_qpair_create(r->ctrl, &qo, &r->qp[i]);
		if (rc) {
			snprintf(err, errlen, "cannot create I/O queue pair %u: %s", i + 1, strerror(-rc));
			return rc;
		}
		rc = nkv_bench_wait_of(r->qp[i], &r->wait_ms);
		if (rc) {
			snprintf(err, errlen, "queue pair %u: no info: %s", i + 1, strerror(-rc));
			return rc;
		}
		/* The cpu engine's doorbell hook, from a host queue pair's
		 * descriptor; a GPU's is device memory the host does not read. */
		if (!nkv_bench_on_gpu(r)) {
			d = nkv_qpair_dev(r->qp[i]);
			r->sq_db[i] = (volatile uint32_t *)(uintptr_t)d->sq_db_addr;
			r->cq_db[i] = (volatile uint32_t *)(uintptr_t)d->cq_db_addr;
		}
		/* Wave i takes a contiguous share of the keys. */
		r->args[i].keys_addr = (uint64_t)(uintptr_t)(o->keys + first);
		r->args[i].lanes_addr = (uint64_t)(uintptr_t)r->lanes[i];
		r->args[i].progress_addr = (uint64_t)(uintptr_t)&r->progress[i];
		r->args[i].count = n;
		r->args[i].key_base = first;
		r->args[i].batch = o->batch;
		r->args[i].value_size = o->value_size;
		r->args[i].seed = o->seed;
		r->args[i].ttl_s = o->ttl_s;
		r->args[i].op_id = o->op_id;
		if (o->exec_input) {
			r->args[i].exec_ilen = (uint32_t)strlen(o->exec_input);
			memcpy(r->args[i].exec_in, o->exec_input, r->args[i].exec_ilen);
		}
		first += n;
	}
	return 0;
}

/*
 * --dest region: one region for every slot of every queue pair. With
 * --scatter N a value is N runs, run k in band k of the region (band k
 * holds run k of every slot, page aligned), so a value's runs lie N bands
 * apart; every run but the last a whole number of words (the pattern's,
 * nkv_bk_fill_runs).
 */
static int nkv_bench_region(struct nkv_bench_run *r, char *err, size_t errlen)
{
	const struct nkv_bench_opts *o = r->o;
	uint32_t n = o->scatter, each = o->value_size / n / 4u * 4u, k;
	uint64_t slots = (uint64_t)r->nq * o->batch, s;
	uint64_t stride = ((uint64_t)(o->value_size - each * (n - 1u)) + 4095u) & ~4095ull;
	const struct nkv_dev_mr *dm;
	void *base;
	int rc;

	rc = nkv_mem_alloc(r->ctrl, stride * slots * n, 0, &r->mr, &base);
	if (rc) {
		snprintf(err, errlen, "--dest region: cannot register a region of %llu bytes: %s",
			 (unsigned long long)(stride * slots * n), strerror(-rc));
		return rc;
	}
	r->runs = calloc(slots * n, sizeof(*r->runs));
	if (!r->runs)
		return -ENOMEM;
	dm = nkv_mem_dev(r->mr);
	for (s = 0; s < slots; s++)
		for (k = 0; k < n; k++)
			r->runs[s * n + k] = nkv_dev_run(dm, (k * slots + s) * stride,
							 k + 1u < n ? each
								    : o->value_size - each * (n - 1u));
	for (k = 0; k < r->nq; k++) {
		r->args[k].scatter = n;
		r->args[k].runs_addr = (uint64_t)(uintptr_t)&r->runs[(uint64_t)k * o->batch * n];
	}
	return 0;
}

/* --ttl needs a namespace that advertises TTL: else the Stores would
 * all be refused (-EOPNOTSUPP), so it is a usage error said up front. */
static int nkv_bench_ttl_ok(struct nkv_bench_run *r, char *err, size_t errlen)
{
	struct nkv_ns_ext e = { .size = sizeof(e) };
	int rc;

	if (!r->o->ttl_s)
		return 0;
	rc = nkv_ctrl_ns_ext(r->ctrl, 0, &e);
	if (rc == -ENODEV || (!rc && !(e.store_opts & NKV_STORE_TTL))) {
		snprintf(err, errlen, "--ttl %u: namespace %u of the controller does not advertise "
			 "TTL Stores (%s); run without --ttl", r->o->ttl_s, r->info.nsid,
			 rc ? "not a KV namespace" : e.advertised ? "its vendor options leave it out"
								  : "vendor options not advertised");
		return -EOPNOTSUPP;
	}
	if (rc)
		snprintf(err, errlen, "reading namespace %u's options: %s", r->info.nsid,
			 strerror(-rc));
	return rc;
}

int nkv_bench_run_open(const struct nkv_bench_opts *o, const char *uri,
		       struct nkv_bench_run **out, char *err, size_t errlen)
{
	struct nkv_ctrl_opts co = { .size = sizeof(co) };
	/* Page aligned and sized: a GPU launcher maps it whole. */
	size_t len = (sizeof(struct nkv_bench_run) + 4095u) & ~(size_t)4095u;
	struct nkv_bench_run *r = aligned_alloc(4096, len);
	int rc;

	if (!r)
		return -ENOMEM;
	memset(r, 0, len);
	r->o = o;
	r->nq = o->num_queues;
	co.memory_mode = o->memory_mode;
	co.flags = o->values_by_messages ? NKV_CTRL_VALUES_BY_MESSAGES : 0;
	co.io_queues = o->num_queues;
	co.nsid = o->nsid;
	co.err = err;
	co.errlen = errlen;
	rc = nkv_ctrl_connect(uri, &co, &r->ctrl);
	if (rc) {
		if (!err[0])
			snprintf(err, errlen, "cannot connect to %s: %s", uri, strerror(-rc));
		free(r);
		return rc;
	}
	rc = nkv_ctrl_get_info(r->ctrl, &r->info);
	if (!rc)
		rc = nkv_bench_fits(r, err, errlen);
	if (!rc)
		rc = nkv_bench_ttl_ok(r, err, errlen);
	if (!rc)
		rc = nkv_bench_qpairs(r, err, errlen);
	if (!rc && o->dest_region)
		rc = nkv_bench_region(r, err, errlen);
	if (rc) {
		nkv_bench_run_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

int nkv_bench_run_info(struct nkv_bench_run *r, struct nkv_ctrl_info *info)
{
	*info = r->info;
	return 0;
}

void nkv_bench_run_remote(struct nkv_bench_run *r, char *buf, size_t len)
{
	struct nkv_qpair_info qi = { .size = sizeof(qi) };

	buf[0] = 0;
	if (r->nq && !nkv_qpair_get_info(r->qp[0], &qi))
		snprintf(buf, len, "%s", qi.remote);
}

static void nkv_bench_lane_main(void *arg)
{
	struct nkv_bench_run *r = arg;
	uint32_t w = nkv_cpu_wave_id();

	nkv_bk_run(nkv_qpair_dev(r->qp[w]), &r->args[w]);
}

/* A batch wider than a wave: block q of the launch owns queue pair q. */
static void nkv_bench_block_main(void *arg)
{
	struct nkv_bench_run *r = arg;
	uint32_t q = nkv_cpu_block_id();

	nkv_bk_run_block(nkv_qpair_dev(r->qp[q]), &r->args[q]);
}

/* The GPU engine: one block of @batch threads per queue pair (one wave
 * when the batch fits one, nkv_bk_run; else nkv_bk_run_block). What the kernel
 * touches in host memory: the run (counters, progress, args), the keys,
 * the batch times. */
static int nkv_bench_gpu(struct nkv_bench_run *r, size_t lat_len)
{
	const struct nkv_bench_opts *o = r->o;
	struct nkv_bench_gpu_range rg[3] = {
		{ r, (sizeof(*r) + 4095u) & ~(size_t)4095u },
		{ o->keys, (size_t)o->num_keys * sizeof(*o->keys) },
		{ r->lat_all, lat_len },
	};
	struct nkv_dev_qp *qps[NKV_BENCH_MAX_QUEUES];
	uint32_t i;

	for (i = 0; i < r->nq; i++)
		qps[i] = nkv_qpair_dev(r->qp[i]);
	return nkv_bench_gpu_launch(qps, r->args, r->nq, o->batch, rg, 3, r->why,
				    sizeof(r->why));
}

static void *nkv_bench_launch_thread(void *arg)
{
	struct nkv_bench_run *r = arg;
	struct nkv_cpu_cfg cfg = { .size = sizeof(cfg) };

	if (nkv_bench_on_gpu(r)) {
		r->launch_rc = nkv_bench_gpu(r, r->lat_len);
		__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	cfg.mode = NKV_CPU_FIBERS;
	cfg.sched = r->o->poll_sched;
	if (r->o->batch <= NKV_WAVE_MAX) {
		/* A batch is one wave, one wave per queue pair. */
		cfg.waves = r->nq;
		cfg.wave_size = r->o->batch;
		r->launch_rc = nkv_cpu_launch(&cfg, nkv_bench_lane_main, r);
	} else {
		/* A block of waves per queue pair, one doorbell per batch. */
		cfg.wave_size = NKV_BENCH_CPU_WAVE;
		cfg.block_size = r->o->batch;
		cfg.waves = r->nq * ((r->o->batch + NKV_BENCH_CPU_WAVE - 1) / NKV_BENCH_CPU_WAVE);
		r->launch_rc = nkv_cpu_launch(&cfg, nkv_bench_block_main, r);
	}
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static uint64_t nkv_bench_batches(const struct nkv_bench_run *r, uint32_t w)
{
	return (uint64_t)r->args[w].iterations *
	       ((r->args[w].count + r->o->batch - 1) / r->o->batch);
}

/* Wait for the launch; a progress line on a TTY or after 2 s. */
static void nkv_bench_wait(struct nkv_bench_run *r, pthread_t th, uint64_t total, int show)
{
	uint64_t t0 = nkv_bench_now_ns(), now;
	int printed = 0, tty = isatty(2);

	for (;;) {
		struct timespec ts;
		uint64_t done = 0;
		uint32_t w;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 250000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (!pthread_timedjoin_np(th, NULL, &ts))
			break;
		now = nkv_bench_now_ns();
		if (!show || (!tty && now - t0 < 2000000000ull))
			continue;
		for (w = 0; w < r->nq; w++)
			done += __atomic_load_n(&r->progress[w], __ATOMIC_RELAXED);
		fprintf(stderr, "%snkv-bench: %s %3.0f%% (%llu/%llu batches, %.1f s)%s",
			tty ? "\r" : "", nkv_bench_op_name((uint8_t)r->args[0].opc),
			100.0 * (double)done / (double)total, (unsigned long long)done,
			(unsigned long long)total, (double)(now - t0) / 1e9, tty ? "" : "\n");
		printed = 1;
	}
	if (printed && tty)
		fputc('\n', stderr);
}

/* Counters and batch times of every wave into ph. */
static int nkv_bench_collect(struct nkv_bench_run *r, uint64_t **lat, struct nkv_bench_phase *ph)
{
	uint32_t w, l;
	uint64_t b, n = 0;

	for (w = 0; w < r->nq; w++)
		n += nkv_bench_batches(r, w);
	ph->lat_ns = calloc(n ? n : 1, sizeof(*ph->lat_ns));
	ph->lat_cmds = calloc(n ? n : 1, sizeof(*ph->lat_cmds));
	if (!ph->lat_ns || !ph->lat_cmds)
		return -ENOMEM;
	for (w = 0; w < r->nq; w++) {
		uint32_t count = r->args[w].count, nb = (count + r->o->batch - 1) / r->o->batch;
		uint64_t done = __atomic_load_n(&r->progress[w], __ATOMIC_RELAXED);

		for (b = 0; b < done; b++) {
			uint32_t first = (uint32_t)(b % nb) * r->o->batch;

			ph->lat_ns[ph->nlat] = (double)lat[w][b];
			ph->lat_cmds[ph->nlat++] = count - first < r->o->batch ? count - first : r->o->batch;
			ph->busy_ns += lat[w][b];
		}
		ph->batches += done;
		for (l = 0; l < r->o->batch; l++) {
			const struct nkv_bk_lane *c = &r->lanes[w][l];
			unsigned i;

			ph->commands += c->commands;
			ph->ok += c->ok;
			ph->bytes += c->bytes;
			ph->dev_errors += c->dev_errors;
			ph->lost += c->lost;
			if (c->last_dev_error)
				ph->last_dev_error = c->last_dev_error;
			if (c->verify_fail && (!ph->verify_fail || c->bad_idx < ph->bad_idx)) {
				ph->bad_idx = c->bad_idx;
				ph->bad_off = c->bad_off;
				ph->bad_len = c->bad_len;
				ph->bad_entry = c->bad_entry;
			}
			ph->verify_fail += c->verify_fail;
			ph->len_fail += c->len_fail;
			if (c->other_status && !ph->first_other)
				ph->first_other = c->first_other;
			ph->other_status += c->other_status;
			for (i = 0; i < 16; i++)
				ph->by_status[i] += c->by_status[i];
		}
	}
	return 0;
}

static uint64_t nkv_bench_fwd_sq(struct nkv_bench_run *r)
{
	struct nkv_qpair_stats st;
	uint64_t n = 0;
	uint32_t w;

	for (w = 0; w < r->nq; w++)
		if (!nkv_qpair_get_stats(r->qp[w], &st))
			n += st.sq_doorbells;
	return n;
}

/* Doorbells device code counted in its descriptors (SQ, or CQ when @cq),
 * summed over the queue pairs; the GPU engine's count. */
static uint64_t nkv_bench_dev_db(struct nkv_bench_run *r, int cq)
{
	struct nkv_qpair_stats st;
	uint64_t n = 0;
	uint32_t w;

	for (w = 0; w < r->nq; w++)
		if (!nkv_qpair_get_stats(r->qp[w], &st))
			n += cq ? st.dev_cq_doorbells : st.dev_sq_doorbells;
	return n;
}

/* Queue pairs device code failed in the phase that just ended. */
static uint32_t nkv_bench_count_failed(struct nkv_bench_run *r)
{
	uint32_t w, n = 0;

	for (w = 0; w < r->nq; w++)
		n += nkv_qpair_failed(r->qp[w]) != NKV_QP_OK;
	return n;
}

/* Before a phase, not after one: a controller that stopped answering is
 * reported as soon as the device gave up, not after a reset that waits
 * on it too. 0, or the reset's error. */
static int nkv_bench_reset_failed(struct nkv_bench_run *r)
{
	uint32_t w;
	int rc;

	for (w = 0; w < r->nq; w++) {
		if (nkv_qpair_failed(r->qp[w]) == NKV_QP_OK)
			continue;
		rc = nkv_qpair_reset(r->qp[w]);
		if (rc) {
			nkv_bench_run_say(r, "queue pair %u failed earlier and cannot be reset: %s",
					  w + 1, nkv_bench_errno_str(rc));
			return rc;
		}
	}
	return 0;
}

static int nkv_bench_launch(struct nkv_bench_run *r, uint64_t total, int show)
{
	pthread_t th;
	int rc;

	nkv_cpu_set_mmio_hook(nkv_bench_db_hook, r);
	rc = pthread_create(&th, NULL, nkv_bench_launch_thread, r);
	if (rc) {
		nkv_cpu_set_mmio_hook(NULL, NULL);
		return -rc;
	}
	nkv_bench_wait(r, th, total, show);
	nkv_cpu_set_mmio_hook(NULL, NULL);
	return r->launch_rc;
}

int nkv_bench_run_phase(struct nkv_bench_run *r, uint8_t opc, uint32_t iterations,
			uint32_t flags, int show_progress, struct nkv_bench_phase *ph)
{
	uint64_t *lat[NKV_BENCH_MAX_QUEUES] = { NULL }, total = 0, t0, fwd0, sq0, cq0;
	uint32_t w;
	int rc = 0;

	memset(ph, 0, sizeof(*ph));
	ph->opc = opc;
	ph->wait_ms = r->wait_ms;
	ph->iterations = iterations;
	rc = nkv_bench_reset_failed(r);
	if (rc)
		return rc;
	memset(r->lanes, 0, sizeof(r->lanes));
	memset(r->progress, 0, sizeof(r->progress));
	memset(r->dbw, 0, sizeof(r->dbw));
	for (w = 0; w < r->nq; w++) {
		r->args[w].opc = opc;
		r->args[w].iterations = iterations;
		r->args[w].flags = flags;
		total += nkv_bench_batches(r, w) + 1;
	}
	/* Every wave's batch times in one page-aligned block (a GPU maps it). */
	r->lat_len = (total * sizeof(uint64_t) + 4095u) & ~(size_t)4095u;
	r->lat_all = total > NKV_BENCH_MAX_BATCHES ? NULL : aligned_alloc(4096, r->lat_len);
	if (!r->lat_all) {
		rc = total > NKV_BENCH_MAX_BATCHES ? -E2BIG : -ENOMEM;
		nkv_bench_run_say(r, "%llu batches (--iterations x keys / --batch-size) is more "
				  "than the %llu whose times nkv-bench keeps: lower --iterations",
				  (unsigned long long)total, NKV_BENCH_MAX_BATCHES);
	} else {
		memset(r->lat_all, 0, r->lat_len);
	}
	for (w = 0, total = 0; w < r->nq && !rc; w++) {
		lat[w] = r->lat_all + total;
		r->args[w].lat_addr = (uint64_t)(uintptr_t)lat[w];
		total += nkv_bench_batches(r, w) + 1;
	}
	total -= r->nq;
	fwd0 = nkv_bench_fwd_sq(r);
	sq0 = nkv_bench_dev_db(r, 0);
	cq0 = nkv_bench_dev_db(r, 1);
	t0 = nkv_bench_now_ns();
	if (!rc)
		rc = nkv_bench_launch(r, total, show_progress);
	ph->wall_ns = nkv_bench_now_ns() - t0;
	if (!rc)
		rc = nkv_bench_collect(r, lat, ph);
	ph->sq_doorbells = nkv_bench_db_writes(r, 0);
	ph->cq_doorbells = nkv_bench_db_writes(r, 1);
	if (nkv_bench_on_gpu(r)) {
		ph->sq_doorbells = nkv_bench_dev_db(r, 0) - sq0;
		ph->cq_doorbells = nkv_bench_dev_db(r, 1) - cq0;
	}
	ph->fwd_sq_doorbells = nkv_bench_fwd_sq(r) - fwd0;
	ph->failed_qps = nkv_bench_count_failed(r);
	free(r->lat_all);
	r->lat_all = NULL;
	return rc;
}

int nkv_bench_phase_merge(struct nkv_bench_phase *a, const struct nkv_bench_phase *b)
{
	double *l = realloc(a->lat_ns, (a->nlat + b->nlat + 1) * sizeof(*l));
	uint32_t *c;
	unsigned i;

	if (!l)
		return -ENOMEM;
	a->lat_ns = l;
	c = realloc(a->lat_cmds, (a->nlat + b->nlat + 1) * sizeof(*c));
	if (!c)
		return -ENOMEM;
	a->lat_cmds = c;
	memcpy(a->lat_ns + a->nlat, b->lat_ns, b->nlat * sizeof(*l));
	memcpy(a->lat_cmds + a->nlat, b->lat_cmds, b->nlat * sizeof(*c));
	a->nlat += b->nlat;
	a->iterations += b->iterations;
	a->commands += b->commands;
	a->ok += b->ok;
	a->bytes += b->bytes;
	a->dev_errors += b->dev_errors;
	a->lost += b->lost;
	if (b->last_dev_error)
		a->last_dev_error = b->last_dev_error;
	if (b->verify_fail && (!a->verify_fail || b->bad_idx < a->bad_idx)) {
		a->bad_idx = b->bad_idx;
		a->bad_off = b->bad_off;
		a->bad_len = b->bad_len;
		a->bad_entry = b->bad_entry;
	}
	a->verify_fail += b->verify_fail;
	a->len_fail += b->len_fail;
	if (!a->first_other)
		a->first_other = b->first_other;
	a->other_status += b->other_status;
	for (i = 0; i < 16; i++)
		a->by_status[i] += b->by_status[i];
	a->sq_doorbells += b->sq_doorbells;
	a->cq_doorbells += b->cq_doorbells;
	a->fwd_sq_doorbells += b->fwd_sq_doorbells;
	a->batches += b->batches;
	a->busy_ns += b->busy_ns;
	a->wall_ns += b->wall_ns;
	a->failed_qps += b->failed_qps;
	return 0;
}

void nkv_bench_phase_free(struct nkv_bench_phase *ph)
{
	free(ph->lat_ns);
	free(ph->lat_cmds);
	ph->lat_ns = NULL;
	ph->lat_cmds = NULL;
}

const char *nkv_bench_run_why(const struct nkv_bench_run *r, int rc)
{
	return r->why[0] ? r->why : strerror(-rc);
}

void nkv_bench_run_say(struct nkv_bench_run *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
}

int nkv_bench_run_probe(struct nkv_bench_run *r, struct nkv_bench_phase *ph)
{
	uint32_t count[NKV_BENCH_MAX_QUEUES], w;
	int rc;

	for (w = 0; w < r->nq; w++) {
		count[w] = r->args[w].count;
		r->args[w].count = count[w] < r->o->batch ? count[w] : r->o->batch;
	}
	rc = nkv_bench_run_phase(r, NKV_KV_RETRIEVE, 1, NKV_BK_VERIFY, 0, ph);
	for (w = 0; w < r->nq; w++)
		r->args[w].count = count[w];
	return rc;
}

void nkv_bench_run_close(struct nkv_bench_run *r)
{
	uint32_t i;

	if (!r)
		return;
	for (i = 0; i < r->nq; i++)
		nkv_qpair_destroy(r->qp[i]);
	nkv_mem_deregister(r->mr);
	free(r->runs);
	nkv_ctrl_close(r->ctrl);
	free(r);
}
