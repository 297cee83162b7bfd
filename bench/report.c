/* SPDX-License-Identifier: MIT */
/*
 * report.c - what nkv-bench prints: the setup (engine, target, where each
 * structure lives), latency per command, IOPS, bytes/s, doorbells per
 * command and outcomes by status; as text for people or JSON for tools.
 *
 * Latency: device code times each batch from just before its submit
 * until every lane holds its completion; each command of the batch is
 * attributed that time (an upper bound of its own round trip).
 * Percentiles are over commands. The headline IOPS and bytes/s divide by
 * the run's wall time (what a user gets from all queue pairs together);
 * the rate over the time spent inside batches, summed per queue pair, is
 * printed beside it, labelled (JSON: iops, iops_busy).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

struct nkv_bench_pt {
	double ns;
	uint32_t cmds;
};

static int nkv_bench_pt_cmp(const void *a, const void *b)
{
	double x = ((const struct nkv_bench_pt *)a)->ns, y = ((const struct nkv_bench_pt *)b)->ns;

	return x < y ? -1 : x > y;
}

/* The smallest latency with at least frac of the commands at or below it. */
static double nkv_bench_pct(const struct nkv_bench_pt *p, uint64_t n, uint64_t cmds, double frac)
{
	double want = frac * (double)cmds, seen = 0;
	uint64_t i;

	for (i = 0; i < n; i++) {
		seen += p[i].cmds;
		if (seen >= want)
			return p[i].ns;
	}
	return n ? p[n - 1].ns : 0;
}

void nkv_bench_lat_stats(const struct nkv_bench_phase *ph, struct nkv_bench_lat *l)
{
	struct nkv_bench_pt *p;
	uint64_t i, cmds = 0;
	double sum = 0;

	memset(l, 0, sizeof(*l));
	if (!ph->nlat)
		return;
	p = malloc(ph->nlat * sizeof(*p));
	if (!p)
		return;
	for (i = 0; i < ph->nlat; i++) {
		p[i].ns = ph->lat_ns[i];
		p[i].cmds = ph->lat_cmds[i];
		cmds += p[i].cmds;
		sum += p[i].ns * p[i].cmds;
	}
	qsort(p, ph->nlat, sizeof(*p), nkv_bench_pt_cmp);
	l->min = p[0].ns;
	l->max = p[ph->nlat - 1].ns;
	l->avg = cmds ? sum / (double)cmds : 0;
	l->p50 = nkv_bench_pct(p, ph->nlat, cmds, 0.50);
	l->p99 = nkv_bench_pct(p, ph->nlat, cmds, 0.99);
	free(p);
}

/* A miss (87h) is expected for Retrieve/Exist/Delete: counted, not fatal. */
static int nkv_bench_miss_ok(uint8_t opc)
{
	return opc == NKV_KV_RETRIEVE || opc == NKV_KV_EXIST || opc == NKV_KV_DELETE;
}

const char *nkv_bench_dev_err_str(int err)
{
	switch (err) {
	case NKV_ETIMEDOUT:
		return "timed out: no completion within --timeout-ms (is the target alive? "
		       "raise --timeout-ms for a slow backend)";
	case NKV_ENOTCONN:
		return "the controller is gone: its connection closed, or its registers read "
		       "all-ones or CSTS.CFS (-ENOTCONN)";
	case NKV_EIO:
		return "not sent: the queue pair had failed earlier (a timeout or a bad completion)";
	case NKV_ENOSPC:
		return "not sent: no free command identifier";
	case NKV_EMSGSIZE:
		return "not sent: a key outside 1..16 bytes";
	case NKV_ERANGE:
		return "not sent: a value larger than its buffer (raise --data-buffer-size)";
	case NKV_EINVAL:
		return "not sent: an invalid command argument";
	default:
		return "device error";
	}
}

const char *nkv_bench_dev_err_why(const struct nkv_bench_opts *o, uint32_t wait_ms, int err,
				  char *buf, size_t len)
{
	if (err != NKV_ETIMEDOUT)
		return nkv_bench_dev_err_str(err);
	snprintf(buf, len, "timed out: no completion within %s%u ms (is the target alive? raise "
		 "--timeout-ms for a slow backend)", o->timeout_ms ? "--timeout-ms " :
		 "the default wait of ", wait_ms);
	return buf;
}

const char *nkv_bench_errno_str(int rc)
{
	switch (rc) {
	case -ENOTCONN:
		return nkv_bench_dev_err_str(NKV_ENOTCONN);
	case -ETIMEDOUT:
		return "timed out (-ETIMEDOUT)";
	default:
		return strerror(-rc);
	}
}

int nkv_bench_exit_of(int rc)
{
	switch (rc) {
	case 0:
		return NKV_EXIT_OK;
	case -E2BIG:		/* more batches than nkv-bench keeps: --iterations */
		return NKV_EXIT_USAGE;
	case -EMSGSIZE:		/* a stored value of another length */
	case -ENOSPC:		/* 81h: the target is full */
	case -EREMOTEIO:	/* another status the controller answered */
		return NKV_EXIT_FAIL;
	default:		/* the controller gone or silent, a launch failed */
		return NKV_EXIT_SETUP;
	}
}

/* Device errors that mean the controller, not the command: gone or silent. */
static int nkv_bench_ctrl_err(int err)
{
	return err == NKV_ENOTCONN || err == NKV_ETIMEDOUT || err == NKV_EIO;
}

int nkv_bench_phase_exit(const struct nkv_bench_opts *o, const struct nkv_bench_phase *ph)
{
	if (ph->failed_qps || (ph->dev_errors && nkv_bench_ctrl_err(ph->last_dev_error)))
		return NKV_EXIT_SETUP;
	return nkv_bench_unexpected(o, ph) ? NKV_EXIT_FAIL : NKV_EXIT_OK;
}

/* A Retrieve's DW0 that no Store can have made (0: a value has at least
 * a byte), or any other length for keys this run stored itself: the
 * controller misreports the value length. */
static int nkv_bench_misreports(const struct nkv_bench_phase *ph, int stored)
{
	return ph->bad_off < 0 && (ph->bad_len == 0 || stored);
}

void nkv_bench_verify_why(const struct nkv_bench_opts *o, int stored,
			  const struct nkv_bench_phase *ph, char *buf, size_t len)
{
	char key[40];

	nkv_bench_key_str(o, ph->bad_idx, key, sizeof(key));
	if (ph->opc == NKV_KV_LIST)
		snprintf(buf, len, "the List payload from key %u (%s) stops parsing at entry %u, "
			 "byte %d (DW0 %u)", ph->bad_idx, key, ph->bad_entry, ph->bad_off,
			 ph->bad_len);
	else if (nkv_bench_misreports(ph, stored) && stored)
		snprintf(buf, len, "the controller answered DW0 = %u for key %u (%s) stored with "
			 "%u bytes (the controller misreports the value length)", ph->bad_len,
			 ph->bad_idx, key, o->value_size);
	else if (nkv_bench_misreports(ph, stored))
		snprintf(buf, len, "the controller answered DW0 = 0 for key %u (%s), which it "
			 "holds: no value is stored with 0 bytes (the controller misreports the "
			 "value length; --value-size is %u)", ph->bad_idx, key, o->value_size);
	else if (ph->bad_off < 0)
		snprintf(buf, len, "the target holds key %u (%s) with a %u-byte value, and "
			 "--value-size is %u: pass --value-size %u, or store the keys again with "
			 "this size (--kv-op store)", ph->bad_idx, key, ph->bad_len, o->value_size,
			 ph->bad_len);
	else
		snprintf(buf, len, "first key %u (%s) differs at byte %d of %u", ph->bad_idx, key,
			 ph->bad_off, ph->bad_len);
}

const char *nkv_bench_status_name(uint32_t st, char *buf, size_t len)
{
	snprintf(buf, len, "%s (status %#x: SCT %Xh, SC %02Xh)", nkv_status_str((uint16_t)st), st,
		 st >> 8 & 0x7u, st & 0xffu);
	return buf;
}

/* Commands sent and what came of them: "4 of 8 commands submitted
 * completed, 4 never did; 1 queue pair failed". */
static void nkv_bench_sent_why(const struct nkv_bench_phase *ph, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "%llu of %llu commands submitted completed, %llu "
				    "never did", (unsigned long long)ph->commands,
				    (unsigned long long)(ph->commands + ph->lost),
				    (unsigned long long)ph->lost);

	if (ph->dev_errors > ph->lost && n < len)
		n += (size_t)snprintf(buf + n, len - n, ", %llu not sent",
				      (unsigned long long)(ph->dev_errors - ph->lost));
	if (ph->failed_qps && n < len)
		snprintf(buf + n, len - n, "; %u queue pair%s failed", ph->failed_qps,
			 ph->failed_qps == 1 ? "" : "s");
}

/* The first status other than success (and an expected miss), as
 * "N answered <name> (XXh)"; "" when there is none. */
static void nkv_bench_status_why(const struct nkv_bench_phase *ph, char *buf, size_t len)
{
	char name[96];
	unsigned i;

	buf[0] = 0;
	for (i = 0; i < 16; i++)
		if (ph->by_status[i] && !(i == 7 && nkv_bench_miss_ok(ph->opc)))
			break;
	if (i < 16)
		snprintf(buf, len, "%llu commands answered %s (%02Xh)",
			 (unsigned long long)ph->by_status[i],
			 nkv_status_str(NKV_STATUS(NKV_SCT_GENERIC, 0x80 + i)), 0x80 + i);
	else if (ph->other_status && ph->first_other)
		snprintf(buf, len, "%llu commands answered a status outside 80h..8Fh, the first %s",
			 (unsigned long long)ph->other_status, nkv_bench_status_name(ph->first_other,
			 name, sizeof(name)));
	else if (ph->other_status)
		snprintf(buf, len, "%llu commands answered a status outside 80h..8Fh",
			 (unsigned long long)ph->other_status);
}

void nkv_bench_fail_why(const struct nkv_bench_opts *o, int stored,
			const struct nkv_bench_phase *ph, char *buf, size_t len)
{
	char why[320], sent[160];

	if (ph->dev_errors || ph->failed_qps) {
		nkv_bench_sent_why(ph, sent, sizeof(sent));
		snprintf(buf, len, "%s: %s", ph->dev_errors ?
			 nkv_bench_dev_err_why(o, ph->wait_ms, ph->last_dev_error, why, sizeof(why)) :
			 "a queue pair failed (a timeout or a bad completion)", sent);
		return;
	}
	if (ph->verify_fail) {
		nkv_bench_verify_why(o, stored, ph, why, sizeof(why));
		snprintf(buf, len, "%llu %s: %s", (unsigned long long)ph->verify_fail,
			 ph->opc == NKV_KV_LIST ? "List payloads do not parse" : "values do not verify",
			 why);
		return;
	}
	nkv_bench_status_why(ph, why, sizeof(why));
	if (!why[0])
		snprintf(why, sizeof(why), "%llu requests found another number of hits than stored",
			 (unsigned long long)ph->wrong);
	snprintf(buf, len, "%s", why);
}

void nkv_bench_key_str(const struct nkv_bench_opts *o, uint32_t idx, char *buf, size_t len)
{
	const struct nkv_bk_key *k = &o->keys[idx];
	size_t n = 0;
	uint32_t i, printable = 1;

	for (i = 0; i < k->len; i++)
		printable &= k->key[i] >= 0x20 && k->key[i] < 0x7f && k->key[i] != '"';
	for (i = 0; i < k->len && n + 3 < len; i++)
		n += (size_t)snprintf(buf + n, len - n, printable ? "%c" : "%02x", k->key[i]);
	if (!k->len && len)
		buf[0] = 0;
}

uint64_t nkv_bench_unexpected(const struct nkv_bench_opts *o, const struct nkv_bench_phase *ph)
{
	uint64_t n = ph->dev_errors + ph->verify_fail + ph->other_status + ph->wrong;
	unsigned i;

	(void)o;
	for (i = 0; i < 16; i++)
		if (!(i == 7 && nkv_bench_miss_ok(ph->opc)))
			n += ph->by_status[i];
	return n - ph->expected;
}

int nkv_bench_stored_all(const struct nkv_bench_opts *o, const struct nkv_bench_setup *s)
{
	return s->keys_stored >= o->num_keys;
}

static const char *nkv_bench_where(const struct nkv_ctrl_info *in, uint32_t bit)
{
	if (!(in->memory_mode & bit))
		return "host RAM";
	return in->vram_is_emulated ? "VRAM (emulated: device arena in host RAM)" : "VRAM";
}

static void nkv_bench_doorbell_desc(const struct nkv_ctrl_info *in, char *buf, size_t len)
{
	if (in->doorbells_mapped)
		snprintf(buf, len, "controller doorbell page, written directly by device code");
	else
		snprintf(buf, len, "shadow page in %s, copied to the controller by the host forwarder",
			 nkv_bench_where(in, NKV_MEM_DB));
}

static double nkv_bench_rate(uint64_t n, uint64_t ns)
{
	return ns ? (double)n * 1e9 / (double)ns : 0;
}

static void nkv_bench_si(char *buf, size_t len, double v, const char *unit)
{
	static const char *const pre[] = { "", "k", "M", "G", "T" };
	unsigned i = 0;

	while (v >= 1000.0 && i < 4) {
		v /= 1000.0;
		i++;
	}
	snprintf(buf, len, "%.3g %s%s", v, pre[i], unit);
}

static void nkv_bench_text_setup(FILE *f, const struct nkv_bench_opts *o,
				 const struct nkv_bench_setup *s)
{
	const struct nkv_ctrl_info *in = s->info;
	char db[160];

	fprintf(f, "nkv-bench: %s, %u keys x %u B values, batch %u, %u queue%s x %u entries, %u iteration%s",
		o->op_name, o->num_keys, o->value_size, o->batch, o->num_queues,
		o->num_queues > 1 ? "s" : "", o->queue_length, o->iterations,
		o->iterations > 1 ? "s" : "");
	if (o->warmup)
		fprintf(f, " after %u not measured", o->warmup);
	fprintf(f, "\n");
	if (o->batch <= NKV_WAVE_MAX)
		fprintf(f, "  engine      cpu: %u wave%s x %u lanes (fibers)", o->num_queues,
			o->num_queues > 1 ? "s" : "", o->batch);
	else
		fprintf(f, "  engine      cpu: %u block%s of %u threads, waves of 32 (fibers)",
			o->num_queues, o->num_queues > 1 ? "s" : "", o->batch);
	fprintf(f, ", kernel body src/device/bench_kernels.h%s%s\n",
		s->engine_note ? "\n              " : "", s->engine_note ? s->engine_note : "");
	fprintf(f, "  target      %s\n", s->target_desc);
	fprintf(f, "  placement   device code on CPU%s %s%s%s, target %s%s%s\n",
		strpbrk(s->device_cpus, ",-") ? "s" : "", s->device_cpus,
		o->cpu_device >= 0 ? " (--cpus)" : "",
		o->poll_sched == NKV_CPU_SCHED_IDLE ? " at SCHED_IDLE" : "",
		!s->target_cpus[0] ? "another process" : "on CPU",
		!s->target_cpus[0] ? "" : strpbrk(s->target_cpus, ",-") ? "s " : " ", s->target_cpus);
	fprintf(f, "  controller  %s \"%s\", KV nsid %u, max value %u B, %u I/O queues granted\n",
		in->transport, in->model, in->nsid, in->max_value, in->io_queues);
	nkv_bench_doorbell_desc(in, db, sizeof(db));
	fprintf(f, "  memory      mode 0x%x: SQ %s, CQ %s,\n"
		   "              doorbells %s,\n"
		   "              values %s\n",
		in->memory_mode, nkv_bench_where(in, NKV_MEM_SQ), nkv_bench_where(in, NKV_MEM_CQ),
		db, nkv_bench_where(in, NKV_MEM_DATA));
	if (o->values_by_messages)
		fprintf(f, "              values reached by vfio-user DMA_READ/WRITE messages\n");
	if (!o->keys_given && o->key_order != NKV_BENCH_KEYS_SEQ)
		fprintf(f, "  keys        %u-byte %s of (%s, index), in random order\n",
			o->keys[0].len, o->key_order == NKV_BENCH_KEYS_SHA256 ? "SHA-256s" : "hashes",
			o->key_prefix);
	else if (!o->keys_given && o->key_size)
		fprintf(f, "  keys        %u bytes each\n", o->key_size);
	if (s->keys_present != UINT64_MAX)
		fprintf(f, "  setup       the target had %llu of %u keys%s\n",
			(unsigned long long)s->keys_present, o->num_keys,
			s->keys_stored ? "; stored them all first" : "");
	if (o->ttl_s)
		fprintf(f, "  ttl         every Store with a TTL of %u s (--ttl): the keys age out\n",
			o->ttl_s);
	if (o->dest_region)
		fprintf(f, "  dest        values in one registered region (nkv_mem_alloc), %u run%s "
			"each, no slots\n", o->scatter, o->scatter == 1 ? "" : "s spread over it");
	else
		fprintf(f, "  dest        values in each queue pair's slots\n");
	if (o->fill_once)
		fprintf(f, "  values      --fill once: keys stored with their patterns first (not\n"
			   "              measured), then the slots sent as they are; a key may\n"
			   "              now hold another key's pattern (store again before a --verify)\n");
}

static void nkv_bench_text_status(FILE *f, const struct nkv_bench_phase *ph)
{
	char name[96];
	unsigned i;

	fprintf(f, "  outcomes    %llu ok", (unsigned long long)ph->ok);
	for (i = 0; i < 16; i++)
		if (ph->by_status[i])
			fprintf(f, ", %llu %s (%02Xh)", (unsigned long long)ph->by_status[i],
				nkv_status_str(NKV_STATUS(NKV_SCT_GENERIC, 0x80 + i)), 0x80 + i);
	if (ph->other_status && ph->first_other)
		fprintf(f, ", %llu other status (the first %s)", (unsigned long long)ph->other_status,
			nkv_bench_status_name(ph->first_other, name, sizeof(name)));
	else if (ph->other_status)
		fprintf(f, ", %llu other status", (unsigned long long)ph->other_status);
	if (ph->dev_errors)
		fprintf(f, ", %llu did not complete (%s; error %d)",
			(unsigned long long)ph->dev_errors, nkv_bench_dev_err_str(ph->last_dev_error),
			ph->last_dev_error);
	fprintf(f, ", %llu verify failures\n", (unsigned long long)ph->verify_fail);
	if (ph->failed_qps)
		fprintf(f, "  FAILED      %u queue pair(s) failed (timeout, bad completion or "
			"controller gone)\n", ph->failed_qps);
}

/* The first verify failure: which key, length or content (or where a
 * List payload stops parsing), and why. */
static void nkv_bench_text_verify(FILE *f, const struct nkv_bench_opts *o,
				  const struct nkv_bench_setup *s, const struct nkv_bench_phase *ph)
{
	char why[320];

	if (!ph->verify_fail)
		return;
	nkv_bench_verify_why(o, nkv_bench_stored_all(o, s), ph, why, sizeof(why));
	if (ph->opc == NKV_KV_LIST)
		fprintf(f, "  VERIFY      %llu List payloads do not parse: %s\n",
			(unsigned long long)ph->verify_fail, why);
	else
		fprintf(f, "  VERIFY      %llu values differ (%llu by length): %s\n",
			(unsigned long long)ph->verify_fail, (unsigned long long)ph->len_fail, why);
}

void nkv_bench_report_text(FILE *f, const struct nkv_bench_opts *o,
			   const struct nkv_bench_setup *s, const struct nkv_bench_phase *ph)
{
	struct nkv_bench_lat l;
	char iops[32], bw[32];
	double cmds = ph->commands ? (double)ph->commands : 1;

	nkv_bench_text_setup(f, o, s);
	nkv_bench_lat_stats(ph, &l);
	nkv_bench_si(iops, sizeof(iops), nkv_bench_rate(ph->commands, ph->wall_ns), "");
	nkv_bench_si(bw, sizeof(bw), nkv_bench_rate(ph->bytes, ph->wall_ns), "B/s");
	if (ph->dev_errors || ph->failed_qps) {
		char sent[160];

		nkv_bench_sent_why(ph, sent, sizeof(sent));
		fprintf(f, "results: %s, in %llu batches, %.3f s wall\n", sent,
			(unsigned long long)ph->batches, (double)ph->wall_ns / 1e9);
	} else {
		fprintf(f, "results: %llu commands in %llu batches, %.3f s wall\n",
			(unsigned long long)ph->commands, (unsigned long long)ph->batches,
			(double)ph->wall_ns / 1e9);
	}
	fprintf(f, "  latency     per command (its batch: submit -> last completion), us:\n"
		   "              min %.2f  avg %.2f  p50 %.2f  p99 %.2f  max %.2f\n",
		l.min / 1e3, l.avg / 1e3, l.p50 / 1e3, l.p99 / 1e3, l.max / 1e3);
	fprintf(f, "  throughput  %s IOPS, %s over the run's wall time (busy time inside "
		   "batches, summed over %u queue pair%s: %.3g IOPS)\n", iops, bw, o->num_queues,
		o->num_queues == 1 ? "" : "s", nkv_bench_rate(ph->commands, ph->busy_ns));
	fprintf(f, "  doorbells   SQ %.4f/cmd (%llu for %llu commands; 1/B = %.4f), CQ %.4f/cmd",
		(double)ph->sq_doorbells / cmds, (unsigned long long)ph->sq_doorbells,
		(unsigned long long)ph->commands, 1.0 / o->batch, (double)ph->cq_doorbells / cmds);
	if (!s->info->doorbells_mapped)
		fprintf(f, "; forwarder delivered %llu SQ writes",
			(unsigned long long)ph->fwd_sq_doorbells);
	fputc('\n', f);
	if (s->target_busy_ns >= 0)
		fprintf(f, "  target      %.0f ns of its poll thread per command (time in passes "
			"that found work)\n", (double)s->target_busy_ns / cmds);
	nkv_bench_text_status(f, ph);
	nkv_bench_text_verify(f, o, s, ph);
}

static void nkv_bench_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

void nkv_bench_report_json(FILE *f, const struct nkv_bench_opts *o,
			   const struct nkv_bench_setup *s, const struct nkv_bench_phase *ph)
{
	const struct nkv_ctrl_info *in = s->info;
	const char *order = o->keys_given ? "explicit" : nkv_bench_key_order_name(o->key_order);
	uint32_t keys = o->num_keys, key_size = o->num_keys ? o->keys[0].len : 0;
	struct nkv_bench_lat l;
	unsigned i;

	if (s->prefix)
		nkv_bench_prefix_keys(s->prefix, &order, &keys, &key_size);
	nkv_bench_lat_stats(ph, &l);
	fprintf(f, "{\"workload\":\"%s\",\"op\":\"%s\",\"key_order\":\"%s\",\"key_size\":%u,"
		"\"engine\":\"%s\",\"memory_mode\":%u,"
		"\"vram_emulated\":%s,\"doorbells_mapped\":%s,\"values_by_messages\":%s,"
		"\"target\":", s->prefix ? "prefix" : "kv", o->op_name, order, key_size,
		o->engine == NKV_BENCH_ENGINE_GPU ? "gpu" : "cpu", in->memory_mode,
		in->vram_is_emulated ? "true" : "false", in->doorbells_mapped ? "true" : "false",
		o->values_by_messages ? "true" : "false");
	nkv_bench_json_str(f, s->target_desc);
	fprintf(f, ",\"cpus\":{\"pinned\":%s,\"sched\":\"%s\",\"device\":",
		o->cpu_device >= 0 ? "true" : "false",
		o->poll_sched == NKV_CPU_SCHED_IDLE ? "idle" : "normal");
	nkv_bench_json_str(f, s->device_cpus);
	fprintf(f, ",\"target\":");
	if (s->target_cpus[0])
		nkv_bench_json_str(f, s->target_cpus);
	else
		fprintf(f, "null");
	fprintf(f, "},\"keys\":%u,\"keys_present\":%lld,\"keys_stored\":%llu,\"batch_size\":%u,"
		"\"value_size\":%u,\"data_buffer_size\":%u,\"queue_length\":%u,\"num_queues\":%u,"
		"\"iterations\":%u,\"warmup\":%u,\"verify\":%s,\"fill\":\"%s\",\"ttl_s\":%u,"
		"\"dest\":\"%s\",\"scatter\":%u,",
		keys, s->keys_present == UINT64_MAX ? -1LL : (long long)s->keys_present,
		(unsigned long long)s->keys_stored, o->batch, o->value_size, o->buf_size,
		o->queue_length, o->num_queues, o->iterations, o->warmup,
		o->verify ? "true" : "false", o->fill_once ? "once" : "each", o->ttl_s,
		o->dest_region ? "region" : "slots", o->dest_region ? o->scatter : 1u);
	fprintf(f, "\"commands\":%llu,\"submitted\":%llu,\"batches\":%llu,\"ok\":%llu,\"bytes\":%llu,"
		"\"wall_ns\":%llu,\"busy_ns\":%llu,\"iops\":%.1f,\"iops_wall\":%.1f,\"iops_busy\":%.1f,"
		"\"bytes_per_s\":%.1f,",
		(unsigned long long)ph->commands, (unsigned long long)(ph->commands + ph->lost),
		(unsigned long long)ph->batches,
		(unsigned long long)ph->ok, (unsigned long long)ph->bytes,
		(unsigned long long)ph->wall_ns, (unsigned long long)ph->busy_ns,
		nkv_bench_rate(ph->commands, ph->wall_ns), nkv_bench_rate(ph->commands, ph->wall_ns),
		nkv_bench_rate(ph->commands, ph->busy_ns), nkv_bench_rate(ph->bytes, ph->wall_ns));
	if (s->target_busy_ns >= 0)
		fprintf(f, "\"target_busy_ns\":%lld,\"target_busy_ns_per_cmd\":%.1f,",
			(long long)s->target_busy_ns, ph->commands ?
			(double)s->target_busy_ns / (double)ph->commands : 0.0);
	else
		fprintf(f, "\"target_busy_ns\":null,\"target_busy_ns_per_cmd\":null,");
	fprintf(f, "\"latency_ns\":{\"min\":%.0f,\"avg\":%.0f,\"p50\":%.0f,\"p99\":%.0f,\"max\":%.0f},",
		l.min, l.avg, l.p50, l.p99, l.max);
	fprintf(f, "\"sq_doorbells\":%llu,\"cq_doorbells\":%llu,\"fwd_sq_doorbells\":%llu,"
		"\"sq_doorbells_per_cmd\":%.6f,",
		(unsigned long long)ph->sq_doorbells, (unsigned long long)ph->cq_doorbells,
		(unsigned long long)ph->fwd_sq_doorbells,
		ph->commands ? (double)ph->sq_doorbells / (double)ph->commands : 0.0);
	fprintf(f, "\"errors\":{\"by_status\":{");
	for (i = 0; i < 16; i++)
		fprintf(f, "%s\"0x%02x\":%llu", i ? "," : "", 0x80 + i,
			(unsigned long long)ph->by_status[i]);
	fprintf(f, "},\"other_status\":%llu,\"first_other_status\":%u,\"first_other_status_name\":",
		(unsigned long long)ph->other_status, ph->first_other);
	if (ph->first_other)
		nkv_bench_json_str(f, nkv_status_str((uint16_t)ph->first_other));
	else
		fprintf(f, "null");
	fprintf(f, ",\"never_completed\":%llu,\"not_sent\":%llu,"
		"\"device_errors\":%llu,\"device_error\":%d,"
		"\"verify_failures\":%llu,\"length_failures\":%llu,\"first_bad_key\":%lld,"
		"\"first_bad_offset\":%d,\"first_bad_length\":%u,\"first_bad_entry\":%u,"
		"\"failed_queue_pairs\":%u},\"misses\":%llu,\"unexpected\":%llu",
		(unsigned long long)ph->lost, (unsigned long long)(ph->dev_errors - ph->lost),
		(unsigned long long)ph->dev_errors,
		ph->last_dev_error, (unsigned long long)ph->verify_fail,
		(unsigned long long)ph->len_fail, ph->verify_fail ? (long long)ph->bad_idx : -1LL,
		ph->bad_off, ph->bad_len, ph->bad_entry, ph->failed_qps,
		(unsigned long long)ph->by_status[7],
		(unsigned long long)nkv_bench_unexpected(o, ph));
	if (s->prefix)
		nkv_bench_prefix_json(f, s->prefix);
	fprintf(f, "}\n");
}
