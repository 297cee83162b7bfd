// SPDX-License-Identifier: MIT
/*
 * first_retrieve_gpu.cu - a whole nkv GPU program, kernel included: each
 * lane of one wave stores a 64-byte value under a key of its own, reads it
 * back and checks the bytes; the host copies the results back and prints
 * them. A first device Retrieve takes five calls from connect:
 * nkv_ctrl_connect, nkv_qpair_create_dev, the launch, nkv_wave_enter and
 * nkv_wave_retrieve (the kernel stores first, so there is something to
 * retrieve). Only nkv_host.h, nkv_dev.h and the GPU runtime; one source:
 *   nvcc -arch=sm_90 -x cu first_retrieve_gpu.cu $(pkg-config --cflags --libs nkv)
 *   hipcc --offload-arch=gfx90a -x hip first_retrieve_gpu.cu $(pkg-config --cflags --libs nkv)
 * with an nkv built for that runtime (make GPU=cuda / hip); run it as
 * ./a.out vfio-user:/tmp/nkv.sock. On the cpu engine: first_retrieve_cpu.c.
 * Exit status, as nkv's programs (README "Exit status"): 0 ok, 1 a value
 * or status wrong, 2 bad arguments, 3 no controller or GPU, or it failed.
 */
#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#define RT(name) hip##name
#else
#include <cuda_runtime.h>
#define RT(name) cuda##name
#endif
#include <stdio.h>
#include <string.h>

#include "nkv_dev.h"
#include "nkv_host.h"

#define LANES 32u	// a wave on NVIDIA; on AMD CDNA a wave of 32 of its 64 lanes
#define VALUE_SIZE 64u

struct lane_out {
	uint8_t key[8];		// "first-NN", NN the lane: written by the lane
	struct nkv_dev_result store, retrieve;	// per command: err, else the NVMe status
	uint32_t bad;		// bytes that differ from what the lane stored
};

__global__ void first_retrieve_kernel(struct nkv_dev_qp *qp, struct lane_out *out)
{
	struct nkv_wave w = nkv_wave_enter();	// at entry, where the lanes are converged
	uint32_t lane = nkv_wave_rank(w), slot = nkv_wave_slot(w, 0), i, bad = 0;
	uint8_t *v = (uint8_t *)nkv_dev_value(qp, slot);	// this lane's value buffer
	struct lane_out *o = &out[lane];	// the key too: a local array would cost scratch

	memcpy(o->key, "first-00", 8);
	o->key[6] += (uint8_t)(lane / 10);
	o->key[7] += (uint8_t)(lane % 10);
	for (i = 0; i < VALUE_SIZE; i++)
		v[i] = (uint8_t)(lane + i);
	// Collective: every lane calls; one SQ doorbell for the wave's batch.
	o->store = nkv_wave_store(w, qp, 1, slot, o->key, 8, 0, VALUE_SIZE);
	memset(v, 0, VALUE_SIZE);	// so the bytes checked below are the controller's
	// A lane whose Store failed calls too, with have = 0: no command, err 0.
	o->retrieve = nkv_wave_retrieve(w, qp, !o->store.err && !o->store.status, slot, o->key, 8);
	for (i = 0; i < VALUE_SIZE; i++)
		bad += v[i] != (uint8_t)(lane + i);
	o->bad = bad;
}

// What went wrong for lane @l, most telling first: a command that did
// not run (the controller gone or silent), a status, the length, the
// bytes.
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

// How telling lane @l's failure is: a command with no completion (the
// controller gone or silent), a status, one not sent after its queue
// pair failed (-EIO), a length or bytes.
static int lane_rank(const struct lane_out *l)
{
	int32_t err = l->store.err ? l->store.err : l->retrieve.err;

	if (err && err != NKV_EIO)
		return 4;
	if (l->store.status || l->retrieve.status)
		return 3;
	return err ? 2 : 1;
}

// The library prints nothing unasked: its lines, here on stderr.
static void log_line(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "nkv: %s\n", line);
}

int main(int argc, char **argv)
{
	struct nkv_qpair_opts o = {};
	struct lane_out out[LANES], *d_out = NULL;
	const struct lane_out *l = out;
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	struct nkv_dev_qp *qp;	// a device pointer: passed to the kernel, never read here
	uint32_t i, bad = 0, gone = 0, first = LANES;
	char why[160];
	int rc;

	nkv_set_log(log_line, NULL);
	if (argc < 2) {
		fprintf(stderr, "usage: %s vfio-user:/tmp/nkv.sock\n", argv[0]);
		return 2;
	}
	rc = nkv_ctrl_connect(argv[1], NULL, &c);	// 1: defaults
	if (rc) {
		fprintf(stderr, "cannot connect to %s: %s\n", argv[1], strerror(-rc));
		return 3;
	}
	o.size = sizeof(o);	// the other options: their defaults
	o.memory_mode = 0;	// rings and values in host RAM registered with the GPU
	rc = nkv_qpair_create_dev(c, &o, &q, &qp);	// 2
	if (rc || RT(Malloc)(&d_out, sizeof(out)) != RT(Success)) {
		fprintf(stderr, "no queue pair (%s) or no GPU memory\n", strerror(-rc));
		return 3;
	}
	first_retrieve_kernel<<<1, LANES>>>(qp, d_out);	// 3; 4 and 5 are in the kernel
	// The copy waits for the kernel, and reports its failure too.
	if (RT(Memcpy)(out, d_out, sizeof(out), RT(MemcpyDeviceToHost)) != RT(Success)) {
		fprintf(stderr, "kernel: %s\n", RT(GetErrorString)(RT(GetLastError)()));
		return 3;
	}
	for (i = 0; i < LANES; i++, l++) {
		printf("lane %2u %.8s: Store %d/%#x, Retrieve %d/%#x, %u bytes, %u differ\n", i,
		       l->key, l->store.err, l->store.status, l->retrieve.err, l->retrieve.status,
		       l->retrieve.dw0, l->bad);
		// No Retrieve (the Store failed): dw0 0.
		if (l->retrieve.err || l->retrieve.status || l->retrieve.dw0 != VALUE_SIZE || l->bad) {
			bad++;
			if (first == LANES || lane_rank(l) > lane_rank(&out[first]))
				first = i;
		}
		// A command that did not run: the controller gone or silent.
		gone += l->store.err != 0 || l->retrieve.err != 0;
	}
	puts(bad ? "FAILED" : "every lane stored and retrieved its value: all bytes match");
	fflush(stdout);	// before the library's lines on teardown, if any
	if (bad) {	// what failed, with the numbers, before any teardown line
		lane_why(&out[first], why, sizeof(why));
		fprintf(stderr, "%u of %u lanes failed: lane %u (%.8s): %s\n", bad, LANES, first,
			out[first].key, why);
	}
	if (RT(Free)(d_out) != RT(Success)) {
		fprintf(stderr, "freeing %zu bytes of GPU memory failed: %s\n", sizeof(out),
			RT(GetErrorString)(RT(GetLastError)()));
		gone++;
	}
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	return gone ? 3 : bad ? 1 : 0;
}
