// SPDX-License-Identifier: MIT
/*
 * multi_queue_hip.cpp - example 2 for a GPU: 4 workgroups of one
 * wavefront each, workgroup b owning queue pair b and its own 128 keys.
 * A queue pair's ring state has no atomics: one wave per queue pair,
 * never two. The cpu engine runs the same body in multi_queue_cpu.c.
 *
 * Build: hipcc --offload-arch=gfx90a multi_queue_hip.cpp $(pkg-config --cflags --libs nkv)
 * Run:   ./a.out vfio-user:/tmp/nkv.sock   (nkv built with a GPU runtime)
 */
#include "ex_hip.h"

#define EX_QUEUES 4u
#define EX_KEYS_PER_QUEUE 128u
#define EX_KEYS (EX_QUEUES * EX_KEYS_PER_QUEUE)

// Block b: one wavefront, queue pair qps[b], arguments args[b].
__global__ void ex_multi_kernel(struct nkv_dev_qp *const *qps, const struct ex_args *args,
				int store)
{
	ex_batch(qps[blockIdx.x], &args[blockIdx.x], store);
}

int main(int argc, char **argv)
{
	const char *uri = ex_uri(argc, argv, argv[0]);
	struct nkv_ctrl_info info;
	struct nkv_ctrl *c;
	struct nkv_qpair *q[EX_QUEUES];
	struct nkv_dev_qp *qps[EX_QUEUES], **d_qps;
	static struct ex_key keys[EX_KEYS];
	static struct ex_out out[EX_KEYS];
	struct ex_args args[EX_QUEUES] = {}, *d_args;
	struct ex_key *d_keys;
	struct ex_out *d_out;
	int wave, bad = 0;
	uint32_t i;

	if (!uri)
		return 2;
	EX_HIP(hipDeviceGetAttribute(&wave, hipDeviceAttributeWarpSize, 0));
	// Values land in VRAM (memory mode 0x8); one 4 KiB slot per lane.
	c = ex_connect(uri, EX_QUEUES, &info);
	if (!c)
		return 1;
	for (i = 0; i < EX_QUEUES; i++) {
		q[i] = ex_qpair(c, (uint32_t)wave);
		if (!q[i])
			return 1;
		qps[i] = nkv_qpair_dev(q[i]);
	}
	for (i = 0; i < EX_KEYS; i++)
		keys[i].len = (uint32_t)snprintf((char *)keys[i].bytes, 16, "ex2-key%u", i);
	EX_HIP(hipMalloc(&d_keys, sizeof(keys)));
	EX_HIP(hipMalloc(&d_out, sizeof(out)));
	EX_HIP(hipMalloc(&d_args, sizeof(args)));
	EX_HIP(hipMalloc(&d_qps, sizeof(qps)));
	EX_HIP(hipMemcpy(d_keys, keys, sizeof(keys), hipMemcpyHostToDevice));
	EX_HIP(hipMemcpy(d_qps, qps, sizeof(qps), hipMemcpyHostToDevice));
	for (i = 0; i < EX_QUEUES; i++) {
		args[i].keys = (uint64_t)(uintptr_t)(d_keys + i * EX_KEYS_PER_QUEUE);
		args[i].out = (uint64_t)(uintptr_t)(d_out + i * EX_KEYS_PER_QUEUE);
		args[i].count = EX_KEYS_PER_QUEUE;
		args[i].nsid = info.nsid;
		args[i].value_size = 4096;
		args[i].seed = 0x5eed + i;
	}
	EX_HIP(hipMemcpy(d_args, args, sizeof(args), hipMemcpyHostToDevice));
	for (int store = 1; store >= 0; store--) {
		hipLaunchKernelGGL(ex_multi_kernel, dim3(EX_QUEUES), dim3(wave), 0, 0,
				   d_qps, d_args, store);
		EX_HIP(hipDeviceSynchronize());
		EX_HIP(hipMemcpy(out, d_out, sizeof(out), hipMemcpyDeviceToHost));
		for (i = 0; i < EX_KEYS; i++)
			bad += out[i].err || out[i].status || out[i].bad;
	}
	printf("%u queue pairs, one wavefront each: %u values stored and retrieved: %s\n",
	       EX_QUEUES, EX_KEYS, bad ? "FAILED" : "all bytes match");
	EX_HIP(hipFree(d_keys));
	EX_HIP(hipFree(d_out));
	EX_HIP(hipFree(d_args));
	EX_HIP(hipFree(d_qps));
	for (i = 0; i < EX_QUEUES; i++)
		nkv_qpair_destroy(q[i]);
	nkv_ctrl_close(c);
	return bad ? 1 : 0;
}
