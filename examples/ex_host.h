/* SPDX-License-Identifier: MIT */
/*
 * ex_host.h - the host side every example shares (the GPU ones through
 * ex_gpu.h): connect, make keys, check results. Static helpers (valid C
 * and C++); copy what you need.
 * Build against an installed nkv:
 *   cc -std=c11 example_cpu.c $(pkg-config --cflags --libs nkv) -pthread
 */
#ifndef NKV_EXAMPLES_EX_HOST_H
#define NKV_EXAMPLES_EX_HOST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkv_host.h"
#include "kv_kernels.h"

/* Exit statuses, the same table as nkv's programs (README "Exit
 * status"); a larger one wins when two things failed. */
enum {
	EX_EXIT_OK = 0,
	EX_EXIT_FAIL = 1,	/* data or status failure: a value that does not
				 * verify, an NVMe error status */
	EX_EXIT_USAGE = 2,	/* bad arguments */
	EX_EXIT_SETUP = 3,	/* setup or controller failure: cannot connect,
				 * the controller gone, a timeout */
};

#define EX_EXIT_HELP \
	"exit status: 0 ok; 1 data or status failure (a value that does not verify,\n" \
	"an NVMe error status); 2 bad flags or arguments; 3 setup or controller\n" \
	"failure (cannot connect, controller gone, timeout, admin command failed)\n"

static inline int ex_worse(int a, int b)
{
	return a > b ? a : b;
}

/* The library says nothing unless asked (nkv_set_log): its lines, such
 * as why a setting was refused, on stderr as "nkv: ...". */
static inline void ex_log_line(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "nkv: %s\n", line);
}

static inline void ex_log_stderr(void)
{
	nkv_set_log(ex_log_line, NULL);
}

/* The target: argv[1], else $NKV_TARGET; NULL (and the usage said) when
 * there is none or it is not a vfio-user:, pcie: or tcp: URI. */
static inline const char *ex_uri(int argc, char **argv, const char *prog)
{
	const char *u = argc > 1 ? argv[1] : getenv("NKV_TARGET");

	if (u && (!strncmp(u, "vfio-user:", 10) || !strncmp(u, "pcie:", 5) ||
		  !strncmp(u, "tcp:", 4)))
		return u;
	fprintf(stderr, "usage: %s URI   (e.g. vfio-user:/tmp/nkv.sock; start one with\n"
		"  nkv-target --socket /tmp/nkv.sock), or set NKV_TARGET\n%s", prog, EX_EXIT_HELP);
	return NULL;
}

/* Connect with the default options but for @queues I/O queue pairs:
 * where each queue pair's memory goes is said when it is created. */
static inline struct nkv_ctrl *ex_connect(const char *uri, uint32_t queues)
{
	struct nkv_ctrl_opts o;
	struct nkv_ctrl *c = NULL;
	char err[256] = "";
	int rc;

	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	o.io_queues = queues;
	o.err = err;
	o.errlen = sizeof(err);
	rc = nkv_ctrl_connect(uri, &o, &c);
	if (rc) {
		fprintf(stderr, "cannot connect to %s: %s\n", uri, err[0] ? err : strerror(-rc));
		return NULL;
	}
	return c;
}

/* Depth and value slots of the examples' queue pairs: @slots buffers of
 * 4 KiB (one per lane and batch in flight), placed by @memory_mode. */
static inline struct nkv_qpair_opts ex_qpair_opts(uint32_t slots, uint32_t memory_mode)
{
	struct nkv_qpair_opts o;

	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	o.depth = 128;
	o.slots = slots;
	o.slot_size = 4096;
	o.memory_mode = memory_mode;
	return o;
}

/* A queue pair for the cpu engine (and the synchronous API), @slots value
 * buffers in the device arena (NKV_MEM_DATA: emulated VRAM without a
 * GPU). nkv_qpair_dev(q) is then the host pointer the cpu engine's lanes
 * use as their descriptor. */
static inline struct nkv_qpair *ex_qpair(struct nkv_ctrl *c, uint32_t slots)
{
	struct nkv_qpair_opts o = ex_qpair_opts(slots, NKV_MEM_DATA);
	struct nkv_qpair *q = NULL;
	int rc = nkv_qpair_create(c, &o, &q);

	if (rc)
		fprintf(stderr, "cannot create a queue pair: %s\n", strerror(-rc));
	return q;
}

/* Keys "<prefix><n>" for n in [first, first + count). */
static inline struct ex_key *ex_keys(const char *prefix, uint32_t first, uint32_t count)
{
	struct ex_key *k = (struct ex_key *)calloc(count, sizeof(*k));
	uint32_t i;

	for (i = 0; k && i < count; i++)
		k[i].len = (uint32_t)snprintf((char *)k[i].bytes, sizeof(k[i].bytes), "%s%u",
					      prefix, first + i);
	return k;
}

/* A device error in words: the controller gone or silent, or the
 * command's own mistake. */
static inline const char *ex_err_str(int32_t err)
{
	switch (err) {
	case NKV_ENOTCONN:
		return "the controller is gone";
	case NKV_ETIMEDOUT:
		return "no completion in time: timed out";
	case NKV_EIO:
		return "the queue pair had failed earlier";
	default:
		return "the command was refused before it was sent";
	}
}

/* How telling a failed result is: no completion (the controller gone or
 * silent), a status, not sent after its queue pair failed, a value. */
static inline int ex_rank(const struct ex_out *o)
{
	if (o->err && o->err != NKV_EIO)
		return 4;
	if (o->status)
		return 3;
	return o->err ? 2 : 1;
}

/* Result @i in words, on stderr. */
static inline void ex_say(const char *what, const struct ex_out *o, uint32_t i)
{
	if (o->err)
		fprintf(stderr, "%s: key %u: did not run: %s (error %d)\n", what, i,
			ex_err_str(o->err), o->err);
	else if (o->status)
		fprintf(stderr, "%s: key %u: the controller answered %s (status %#x)\n",
			what, i, nkv_status_str(o->status), o->status);
	else if (o->bad_at == EX_LEN_BAD)
		fprintf(stderr, "%s: key %u: the controller returned length %u, not the %u "
			"bytes stored\n", what, i, o->len, o->want);
	else
		fprintf(stderr, "%s: key %u: the value differs from what was stored at "
			"byte %u of %u\n", what, i, o->bad_at, o->want);
}

/* Results: how many ok, how many 87h, anything else is a failure; the
 * first failures are named, the most telling one first (a command with
 * no completion before one not sent after it): the key, and the device
 * error, the status, or whether the returned length or which byte of
 * the value was wrong. The exit status they make: 0, EX_EXIT_FAIL (a
 * status, a value), or EX_EXIT_SETUP (the controller gone or silent). */
static inline int ex_check(const char *what, const struct ex_out *out, uint32_t n, uint32_t *misses)
{
	uint32_t i, bad = 0, miss = 0, lead = n;
	int rc = EX_EXIT_OK;

	for (i = 0; i < n; i++) {
		const struct ex_out *o = &out[i];

		if (o->status == NKV_STATUS(NKV_SCT_GENERIC, 0x87)) {
			miss++;
			continue;
		}
		if (!o->err && !o->status && !o->bad)
			continue;
		rc = ex_worse(rc, o->err == NKV_ENOTCONN || o->err == NKV_ETIMEDOUT ||
				  o->err == NKV_EIO ? EX_EXIT_SETUP : EX_EXIT_FAIL);
		if (lead == n || ex_rank(o) > ex_rank(&out[lead]))
			lead = i;
	}
	if (lead < n)
		ex_say(what, &out[lead], lead);
	for (i = 0; i < n && bad < 4; i++) {	/* five in all */
		const struct ex_out *o = &out[i];

		if (i == lead || o->status == NKV_STATUS(NKV_SCT_GENERIC, 0x87) ||
		    (!o->err && !o->status && !o->bad))
			continue;
		bad++;
		ex_say(what, o, i);
	}
	if (misses) {
		*misses = miss;
	} else if (miss) {
		fprintf(stderr, "%s: %u keys answered 87h (key does not exist)\n", what, miss);
		rc = ex_worse(rc, EX_EXIT_FAIL);
	}
	return rc;
}

#endif /* NKV_EXAMPLES_EX_HOST_H */
