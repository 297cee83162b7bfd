/* SPDX-License-Identifier: MIT */
/*
 * first_retrieve_cpu.c - first_retrieve_gpu.cu's kernel on the cpu engine:
 * each of the 32 lanes of one wave stores a 64-byte value under a key of
 * its own, retrieves it and checks the bytes; main prints what each lane
 * got. Here a first device Retrieve takes six calls from connect:
 * nkv_ctrl_connect, nkv_qpair_create (a host queue pair), nkv_qpair_dev
 * (its descriptor, a host pointer the lanes use), nkv_cpu_launch,
 * nkv_wave_enter and nkv_wave_retrieve. Only nkv_host.h, nkv_dev.h and
 * nkv_cpu.h:
 *   cc -std=c11 first_retrieve_cpu.c $(pkg-config --cflags --libs nkv) -pthread
 *   ./a.out vfio-user:/tmp/nkv.sock
 * Exit status, as nkv's programs (README "Exit status"): 0 ok, 1 a value
 * or status wrong, 2 bad arguments, 3 no controller, or it failed.
 */
#include <stdio.h>
#include <string.h>

#include "nkv_cpu.h"
#include "nkv_dev.h"
#include "nkv_host.h"

#define LANES 32u
#define VALUE_SIZE 64u

struct lane_out {
	uint8_t key[8];		/* "first-NN", NN the lane: written by the lane */
	struct nkv_dev_result store, retrieve;	/* per command: err, else the NVMe status */
	uint32_t bad;		/* bytes that differ from what the lane stored */
};

struct launch {
	struct nkv_dev_qp *qp;
	struct lane_out *out;
};

/* Every lane of the launch runs this, as a GPU's lanes run the kernel
 * (whose key lives in the output, where a GPU needs no scratch for it). */
static void first_retrieve_lane(void *arg)
{
	const struct launch *a = arg;
	struct nkv_wave w = nkv_wave_enter();	/* at entry, where the lanes are converged */
	uint32_t lane = nkv_wave_rank(w), slot = nkv_wave_slot(w, 0), i, bad = 0;
	uint8_t *v = nkv_dev_value(a->qp, slot);	/* this lane's value buffer */
	struct lane_out *o = &a->out[lane];

	memcpy(o->key, "first-00", 8);
	o->key[6] += (uint8_t)(lane / 10);
	o->key[7] += (uint8_t)(lane % 10);
	for (i = 0; i < VALUE_SIZE; i++)
		v[i] = (uint8_t)(lane + i);
	/* Collective: every lane calls; one SQ doorbell for the wave's batch. */
	o->store = nkv_wave_store(w, a->qp, 1, slot, o->key, 8, 0, VALUE_SIZE);
	memset(v, 0, VALUE_SIZE);	/* so the bytes checked below are the controller's */
	/* A lane whose Store failed calls too, with have = 0: no command, err 0. */
	o->retrieve = nkv_wave_retrieve(w, a->qp, !o->store.err && !o->store.status, slot,
					o->key, 8);
	for (i = 0; i < VALUE_SIZE; i++)
		bad += v[i] != (uint8_t)(lane + i);
	o->bad = bad;
}

/* What went wrong for lane @l, most telling first: a command that did
 * not run (the controller gone or silent), a status, the length, the
 * bytes. */
static void lane_why(const struct lane_out *l, char *buf, size_t len)
{
	const struct nkv_dev_result *r = l->store.err || l->store.status ? &l->store : &l->retrieve;
	const char *cmd = r == &l->store ? "Store" : "Retrieve";

	if (r->err)
		snprintf(buf, len, "%s did not complete: %s (error %d)", cmd, strerror(-r->err),
			 r->err);
	else if (r->status)
		snprintf(buf, len, "%s answered %s (status %#x)", cmd, nkv_status_str(r->status),
			 r->status);
	else if (r->dw0 != VALUE_SIZE)
		snprintf(buf, len, "Retrieve answered DW0 = %u for a value of %u bytes", r->dw0,
			 VALUE_SIZE);
	else
		snprintf(buf, len, "%u of %u bytes differ from what it stored", l->bad, VALUE_SIZE);
}

/* How telling lane @l's failure is: a command with no completion (the
 * controller gone or silent), a status, one not sent after its queue
 * pair failed (-EIO), a length or bytes. */
static int lane_rank(const struct lane_out *l)
{
	int32_t err = l->store.err ? l->store.err : l->retrieve.err;

	if (err && err != NKV_EIO)
		return 4;
	if (l->store.status || l->retrieve.status)
		return 3;
	return err ? 2 : 1;
}

/* The library prints nothing unasked: its lines, here on stderr. */
static void log_line(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "nkv: %s\n", line);
}

int main(int argc, char **argv)
{
	struct nkv_cpu_cfg cfg = { .size = sizeof(cfg), .waves = 1, .wave_size = LANES };
	/* Values in the device arena (emulated VRAM without a GPU). */
	struct nkv_qpair_opts o = { .size = sizeof(o), .memory_mode = NKV_MEM_DATA };
	struct lane_out out[LANES];
	const struct lane_out *l = out;
	struct launch a = { NULL, out };
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	uint32_t i, bad = 0, gone = 0, first = LANES;
	char why[160];
	int rc;

	nkv_set_log(log_line, NULL);
	if (argc < 2) {
		fprintf(stderr, "usage: %s vfio-user:/tmp/nkv.sock\n", argv[0]);
		return 2;
	}
	rc = nkv_ctrl_connect(argv[1], NULL, &c);	/* defaults */
	if (rc) {
		fprintf(stderr, "cannot connect to %s: %s\n", argv[1], strerror(-rc));
		return 3;
	}
	rc = nkv_qpair_create(c, &o, &q);
	if (!rc) {
		a.qp = nkv_qpair_dev(q);
		rc = nkv_cpu_launch(&cfg, first_retrieve_lane, &a);
	}
	if (rc) {
		fprintf(stderr, "no queue pair or no launch: %s\n", strerror(-rc));
		return 3;
	}
	for (i = 0; i < LANES; i++, l++) {
		printf("lane %2u %.8s: Store %d/%#x, Retrieve %d/%#x, %u bytes, %u differ\n", i,
		       l->key, l->store.err, l->store.status, l->retrieve.err, l->retrieve.status,
		       l->retrieve.dw0, l->bad);
		/* No Retrieve (the Store failed): dw0 0. */
		if (l->retrieve.err || l->retrieve.status || l->retrieve.dw0 != VALUE_SIZE || l->bad) {
			bad++;
			if (first == LANES || lane_rank(l) > lane_rank(&out[first]))
				first = i;
		}
		/* A command that did not run: the controller gone or silent. */
		gone += l->store.err != 0 || l->retrieve.err != 0;
	}
	puts(bad ? "FAILED" : "every lane stored and retrieved its value: all bytes match");
	fflush(stdout);	/* before the library's lines on teardown, if any */
	if (bad) {	/* what failed, with the numbers, before any teardown line */
		lane_why(&out[first], why, sizeof(why));
		fprintf(stderr, "%u of %u lanes failed: lane %u (%.8s): %s\n", bad, LANES, first,
			out[first].key, why);
	}
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	return gone ? 3 : bad ? 1 : 0;
}
