/* SPDX-License-Identifier: MIT */
/*
 * bench.h - nkv-bench's internals: options (opts.c), the embedded target
 * (target.c), runs of the bench kernel on the cpu engine (run.c) and the
 * report (report.c). Program-private; nothing here is library API.
 */
#ifndef NKV_BENCH_H
#define NKV_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nkv_host.h"
#include "device/bench_kernels.h"
#include "tools/tool.h"	/* the exit statuses (NKV_EXIT_*) */

/* The widest batch: a block of 1023 threads, one doorbell (a queue of
 * 1024 entries holds 1023 commands). */
#define NKV_BENCH_MAX_BATCH 1023u
/* Threads of every queue pair's block together, on the cpu engine one
 * fiber each. */
#define NKV_BENCH_MAX_THREADS 4096u
/* Batches of one launch whose times nkv-bench keeps (8 bytes each). */
#define NKV_BENCH_MAX_BATCHES (1ull << 27)

enum nkv_bench_engine {
	NKV_BENCH_ENGINE_AUTO = 0,
	NKV_BENCH_ENGINE_CPU = 1,
	NKV_BENCH_ENGINE_GPU = 2,
};

/* How generated keys are made (--key-order). */
enum nkv_bench_key_order {
	NKV_BENCH_KEYS_SEQ = 0,		/* PREFIX + zero-padded index: sorted */
	NKV_BENCH_KEYS_HASH = 1,	/* 16-byte hash of (PREFIX, index): random */
	NKV_BENCH_KEYS_SHA256 = 2,	/* SHA-256 of (PREFIX, index): 32 bytes */
};

/* What is measured (--workload). */
enum nkv_bench_workload {
	NKV_BENCH_WORKLOAD_KV = 0,	/* --kv-op over the keys (the default) */
	NKV_BENCH_WORKLOAD_PREFIX = 1,	/* an LLM KV cache's requests (prefix.c) */
};

/* --workload prefix's flags (prefix.c parses them); ids above getopt's
 * characters and opts.c's own. */
enum {
	NKV_BENCH_OPT_WORKLOAD = 0x400,
	NKV_BENCH_OPT_BLOCKS,
	NKV_BENCH_OPT_HIT_RATIO,
	NKV_BENCH_OPT_LAYERS,
};

struct nkv_bench_opts {
	uint8_t opc;			/* NKV_KV_* */
	uint32_t nsid;			/* --nsid; 0: the first KV namespace */
	const char *op_name;
	int workload;			/* enum nkv_bench_workload */
	uint32_t blocks;		/* prefix: blocks per request (--blocks) */
	double hit_ratio;		/* prefix: share of them stored first */
	uint32_t layers;		/* prefix: values per block (--layers) */
	int prefix_flags;		/* --blocks/--hit-ratio/--layers given */
	uint32_t memory_mode;
	struct nkv_bk_key *keys;	/* all keys, in order (malloc'd) */
	uint32_t num_keys;
	int keys_given;			/* --keys used */
	const char *key_prefix;
	int key_order;			/* enum nkv_bench_key_order */
	uint32_t key_size;		/* --key-size: every generated key's bytes;
					 * 0: the order's own */
	uint32_t batch;
	uint32_t value_size;
	uint32_t buf_size;		/* bytes per value slot */
	uint32_t queue_length;
	uint32_t num_queues;
	uint32_t iterations;
	uint32_t warmup;		/* passes of the op before the measured ones */
	uint32_t seed;
	int verify;
	int fill_once;			/* --fill once: measured Stores send slots as they are */
	uint64_t poll_ns;
	int engine;			/* enum nkv_bench_engine */
	const char *target;		/* NULL: embedded */
	int json;
	int quiet;			/* no progress line */
	uint32_t timeout_ms;		/* per batch; 0: the library's default */
	int cpu_device;			/* --cpus: device code's CPU, or -1 */
	int cpu_target;			/* --cpus: the embedded target's, or -1 */
	uint32_t poll_sched;		/* --poll-sched: enum nkv_cpu_sched */
	int values_by_messages;		/* NKV_CTRL_VALUES_BY_MESSAGES */
	uint32_t ttl_s;			/* --ttl: every Store's TTL, seconds; 0: none */
	int dest_region;		/* --dest region: values in one registered
					 * region, queue pairs without slots */
	uint32_t scatter;		/* --scatter: runs per value (region) */
	uint32_t op_id;			/* --op-id: Exec's CDW13 */
	int op_id_given;
	const char *exec_input;		/* --exec-input: Exec's input bytes ("") */
	const char *exec_module;	/* --exec-module FILE: stored (and, on the
					 * embedded target, allowlisted) first */
};

/* Parse argv into o. 0, or NKV_EXIT_USAGE after printing why;
 * -1 when --help was printed (exit 0). */
int nkv_bench_parse(int argc, char **argv, struct nkv_bench_opts *o);
void nkv_bench_opts_free(struct nkv_bench_opts *o);
void nkv_bench_usage(FILE *f);
const char *nkv_bench_op_name(uint8_t opc);
const char *nkv_bench_key_order_name(int order);
/* Key i of --key-order hash: @len (8..255) bytes of a hash of (prefix,
 * i); the first 16 are the same whatever @len. */
void nkv_bench_hash_key(const char *prefix, uint64_t i, uint8_t *key, uint32_t len);
/* Key i of --key-order sha256: SHA-256 of prefix then i (8 bytes, little
 * endian), 32 bytes. 0, or -EIO when libcrypto fails. */
int nkv_bench_sha256_key(const char *prefix, uint64_t i, uint8_t key[32]);

/* --exec-module (exec.c): store it, and allowlist it on the embedded
 * target. 0 or a negative errno (said on stderr). */
int nkv_bench_exec_module(const struct nkv_bench_opts *o, const char *uri, int embedded);

/* The embedded nkv-target: a thread of this process on a private socket. */
struct nkv_bench_target;
int nkv_bench_target_start(const struct nkv_bench_opts *o, struct nkv_bench_target **out,
			   char *err, size_t errlen);
const char *nkv_bench_target_uri(const struct nkv_bench_target *t);
const char *nkv_bench_target_socket(const struct nkv_bench_target *t);
void nkv_bench_target_stop(struct nkv_bench_target *t);
/* Time its connection threads spent in controller passes that found
 * work (nkv_vfu_server_stats.busy_ns), so far. */
uint64_t nkv_bench_target_busy_ns(struct nkv_bench_target *t);

/* Everything one launch (a phase) measured. */
struct nkv_bench_phase {
	uint8_t opc;
	uint32_t wait_ms;		/* the queue pairs' I/O wait (--timeout-ms) */
	uint32_t iterations;
	uint64_t commands;		/* completions */
	uint64_t ok;
	uint64_t bytes;
	uint64_t dev_errors;
	uint64_t lost;			/* of dev_errors: sent, never completed */
	int32_t last_dev_error;
	uint64_t verify_fail;
	uint64_t len_fail;		/* verify failures that were a stored length */
	uint32_t bad_idx;		/* the lowest key index that failed verify, */
	int32_t bad_off;		/* -1: its length (bad_len) was wrong; else the */
	uint32_t bad_len;		/* offset of its first differing byte (a */
	uint32_t bad_entry;		/* List: where its payload stops parsing,
					 * entry bad_entry at byte bad_off) */
	uint64_t other_status;
	uint32_t first_other;		/* the first of them a controller answered
					 * (SCT << 8 | SC); 0: none (prefix: a
					 * Retrieve's DW0 counts there too) */
	uint64_t by_status[16];
	uint64_t sq_doorbells;		/* SQ tail writes by device code */
	uint64_t cq_doorbells;		/* CQ head writes by device code */
	uint64_t fwd_sq_doorbells;	/* forwarder: writes that reached the target */
	uint64_t batches;
	uint64_t busy_ns;		/* sum over waves of batch times */
	uint64_t wall_ns;		/* the launch, start to end */
	double *lat_ns;			/* per batch (all waves) */
	uint32_t *lat_cmds;		/* commands in that batch */
	uint64_t nlat;
	uint32_t failed_qps;		/* queue pairs failed by device code */
	uint64_t expected;		/* statuses the workload expects (prefix:
					 * the lookup's 87h, a content-addressed
					 * Store's 89h): not unexpected */
	uint64_t wrong;			/* prefix: requests whose lookup found
					 * another number of hits than stored */
};

struct nkv_bench_run;
int nkv_bench_run_open(const struct nkv_bench_opts *o, const char *uri,
		       struct nkv_bench_run **out, char *err, size_t errlen);
int nkv_bench_run_info(struct nkv_bench_run *r, struct nkv_ctrl_info *info);
/* What crosses the network (nkv_qpair_info.remote), or "" (run.c). */
void nkv_bench_run_remote(struct nkv_bench_run *r, char *buf, size_t len);
/* One launch of @iterations passes of @opc over every key. flags:
 * NKV_BK_*. 0, or a negative errno when the launch itself failed. */
int nkv_bench_run_phase(struct nkv_bench_run *r, uint8_t opc, uint32_t iterations,
			uint32_t flags, int show_progress, struct nkv_bench_phase *ph);
/* Add b into a (same op); frees nothing. */
int nkv_bench_phase_merge(struct nkv_bench_phase *a, const struct nkv_bench_phase *b);
void nkv_bench_phase_free(struct nkv_bench_phase *ph);
void nkv_bench_run_close(struct nkv_bench_run *r);
/* Why the last phase failed with @rc: the words the launcher or the
 * preparation left (nkv_bench_run_say), else strerror. */
const char *nkv_bench_run_why(const struct nkv_bench_run *r, int rc);
void nkv_bench_run_say(struct nkv_bench_run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A Retrieve of the first batch of every wave, values checked: what the
 * target holds before the measured run trusts it. */
int nkv_bench_run_probe(struct nkv_bench_run *r, struct nkv_bench_phase *ph);
/* What an nkv_dev.h error means for a run, and what to try (report.c). */
const char *nkv_bench_dev_err_str(int err);
/* The same with the run's numbers (--timeout-ms), into @buf if need be. */
const char *nkv_bench_dev_err_why(const struct nkv_bench_opts *o, uint32_t wait_ms, int err,
				  char *buf, size_t len);
/* A status in words with its fields, into @buf: "Internal Error (status
 * 0x6: SCT 0h, SC 06h)". */
const char *nkv_bench_status_name(uint32_t st, char *buf, size_t len);
/* A host errno in words: the controller gone, a timeout, else strerror. */
const char *nkv_bench_errno_str(int rc);
/* The exit status (NKV_EXIT_*) of a run that ended with @rc: the
 * controller's answers (-EMSGSIZE a stored length, -ENOSPC 81h,
 * -EREMOTEIO another status) are 1, -E2BIG (--iterations) 2, the
 * controller gone or silent and everything else 3. */
int nkv_bench_exit_of(int rc);
/* The exit status of a measured phase: 3 when the controller went away
 * or stopped answering, 1 for other unexpected outcomes, else 0. */
int nkv_bench_phase_exit(const struct nkv_bench_opts *o, const struct nkv_bench_phase *ph);
/* The first verify failure in words, with the numbers (@stored: this
 * run stored every key with --value-size, so any other length is the
 * controller's). */
void nkv_bench_verify_why(const struct nkv_bench_opts *o, int stored,
			  const struct nkv_bench_phase *ph, char *buf, size_t len);
/* Why a measured phase failed, most telling first: the controller gone
 * or silent, a value or List payload, a status. */
void nkv_bench_fail_why(const struct nkv_bench_opts *o, int stored,
			const struct nkv_bench_phase *ph, char *buf, size_t len);
/* Key @idx as text: its bytes when printable, else hex (report.c). */
void nkv_bench_key_str(const struct nkv_bench_opts *o, uint32_t idx, char *buf, size_t len);

/* Latency statistics per command (batch time attributed to each command
 * of the batch). */
struct nkv_bench_lat {
	double min, avg, p50, p99, max;	/* nanoseconds */
};
void nkv_bench_lat_stats(const struct nkv_bench_phase *ph, struct nkv_bench_lat *l);

/* What --workload prefix measured (prefix.c). */
struct nkv_bench_prefix_res;

/* What the report shows besides the measured phase. */
struct nkv_bench_setup {
	const char *target_desc;	/* "embedded nkv-target ..." or the URI */
	const char *engine_note;	/* why this engine, or NULL */
	uint64_t keys_present;		/* before the run (Exist), or UINT64_MAX */
	uint64_t keys_stored;		/* stored by the setup phase */
	const struct nkv_ctrl_info *info;
	char device_cpus[64];		/* CPUs device code may run on (a list) */
	char target_cpus[64];		/* the embedded target's, or "" */
	int64_t target_busy_ns;		/* embedded target's busy time in the
					 * measured phase, or -1 (external) */
	const struct nkv_bench_prefix_res *prefix;	/* --workload prefix, or NULL */
};
/* This run stored every key with --value-size before the measured op. */
int nkv_bench_stored_all(const struct nkv_bench_opts *o, const struct nkv_bench_setup *s);
void nkv_bench_report_text(FILE *f, const struct nkv_bench_opts *o,
			   const struct nkv_bench_setup *s, const struct nkv_bench_phase *ph);
void nkv_bench_report_json(FILE *f, const struct nkv_bench_opts *o,
			   const struct nkv_bench_setup *s, const struct nkv_bench_phase *ph);
/* Unexpected outcomes of commands: statuses other than success (and
 * 87h where a miss is expected), device errors (a command that never
 * completed, or was not sent), verification failures. A failed queue
 * pair is no command's outcome: it is counted apart (failed_qps). */
uint64_t nkv_bench_unexpected(const struct nkv_bench_opts *o, const struct nkv_bench_phase *ph);

/* --workload prefix (prefix.c). */
/* One of the NKV_BENCH_OPT_* flags: 0, or NKV_EXIT_USAGE after
 * printing why. */
int nkv_bench_prefix_opt(int opt, const char *arg, struct nkv_bench_opts *o);
/* Cross-flag rules of the workload, after the others. */
int nkv_bench_prefix_check(struct nkv_bench_opts *o);
/* The run, with the target at @uri (@t: the embedded one, or NULL) and
 * the setup so far in @s; reports; the process's exit status. */
int nkv_bench_prefix_main(const struct nkv_bench_opts *o, struct nkv_bench_setup *s,
			  const char *uri, struct nkv_bench_target *t);
/* The JSON's "prefix" object, and what it says of the keys. */
void nkv_bench_prefix_json(FILE *f, const struct nkv_bench_prefix_res *p);
void nkv_bench_prefix_keys(const struct nkv_bench_prefix_res *p, const char **order,
			   uint32_t *keys, uint32_t *key_size);

#endif /* NKV_BENCH_H */
