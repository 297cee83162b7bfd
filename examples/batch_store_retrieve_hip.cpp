// SPDX-License-Identifier: MIT
/*
 * batch_store_retrieve_hip.cpp - example 1 for a GPU: one wavefront
 * stores 256 values (each lane packs one SQE, one SQ doorbell per batch,
 * one lane reaps the batch's completions), then retrieves and checks
 * them. The kernel body is kv_kernels.h's ex_batch(); the cpu engine runs
 * the same one in batch_store_retrieve_cpu.c.
 *
 * Build: hipcc --offload-arch=gfx90a -I/usr/local/include \
 *          batch_store_retrieve_hip.cpp $(pkg-config --libs nkv)
 * Needs an nkv built with a GPU runtime (nkv_ctrl_info.vram_is_emulated
 * = 0): the queue pair's descriptor, rings and slots must be memory the
 * GPU reaches. Run: ./a.out vfio-user:/tmp/nkv.sock
 */
#include "ex_hip.h"

#define EX_KEYS 256u

// One block = one wavefront that owns the queue pair.
__global__ void ex_batch_kernel(struct nkv_dev_qp *qp, const struct ex_args *a, int store)
{
	ex_batch(qp, a, store);
}

int main(int argc, char **argv)
{
	const char *uri = ex_uri(argc, argv, argv[0]);
	struct nkv_ctrl_info info;
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	struct ex_key keys[EX_KEYS] = {};
	struct ex_out out[EX_KEYS];
	struct ex_args args = {}, *d_args;
	struct ex_key *d_keys;
	struct ex_out *d_out;
	int wave, bad = 0;
	uint32_t i;

	if (!uri)
		return 2;
	EX_HIP(hipDeviceGetAttribute(&wave, hipDeviceAttributeWarpSize, 0));
	// Values land in VRAM (memory mode 0x8); one 4 KiB slot per lane.
	c = ex_connect(uri, 1, &info);
	if (!c)
		return 1;
	q = ex_qpair(c, (uint32_t)wave);
	if (!q)
		return 1;
	for (i = 0; i < EX_KEYS; i++)
		keys[i].len = (uint32_t)snprintf((char *)keys[i].bytes, 16, "ex1-key%u", i);
	EX_HIP(hipMalloc(&d_keys, sizeof(keys)));
	EX_HIP(hipMalloc(&d_out, sizeof(out)));
	EX_HIP(hipMalloc(&d_args, sizeof(args)));
	EX_HIP(hipMemcpy(d_keys, keys, sizeof(keys), hipMemcpyHostToDevice));
	args.keys = (uint64_t)(uintptr_t)d_keys;
	args.out = (uint64_t)(uintptr_t)d_out;
	args.count = EX_KEYS;
	args.nsid = info.nsid;
	args.value_size = 4096;
	args.seed = 0x5eed;
	EX_HIP(hipMemcpy(d_args, &args, sizeof(args), hipMemcpyHostToDevice));
	for (int store = 1; store >= 0; store--) {
		// One block of one wavefront: the queue pair has one owner.
		hipLaunchKernelGGL(ex_batch_kernel, dim3(1), dim3(wave), 0, 0,
				   nkv_qpair_dev(q), d_args, store);
		EX_HIP(hipDeviceSynchronize());
		EX_HIP(hipMemcpy(out, d_out, sizeof(out), hipMemcpyDeviceToHost));
		for (i = 0; i < EX_KEYS; i++)
			bad += out[i].err || out[i].status || out[i].bad;
	}
	printf("stored and retrieved %u values in batches of %d lanes: %s\n", EX_KEYS, wave,
	       bad ? "FAILED" : "all bytes match");
	EX_HIP(hipFree(d_keys));
	EX_HIP(hipFree(d_out));
	EX_HIP(hipFree(d_args));
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	return bad ? 1 : 0;
}
