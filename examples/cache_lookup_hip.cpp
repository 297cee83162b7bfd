// SPDX-License-Identifier: MIT
/*
 * cache_lookup_hip.cpp - example 3 for a GPU: the KV store as a cache.
 * All 128 keys are stored, the odd ones deleted again (synchronous API,
 * between launches); then one wavefront looks every key up: Exist for
 * the whole batch, Retrieve only for the hits, misses (87h) computed
 * instead. Same body as cache_lookup_cpu.c (kv_kernels.h).
 *
 * Build: hipcc --offload-arch=gfx90a cache_lookup_hip.cpp $(pkg-config --cflags --libs nkv)
 * Run:   ./a.out vfio-user:/tmp/nkv.sock   (nkv built with a GPU runtime)
 */
#include "ex_hip.h"

#define EX_KEYS 128u

__global__ void ex_store_kernel(struct nkv_dev_qp *qp, const struct ex_args *a)
{
	ex_batch(qp, a, 1);
}

__global__ void ex_lookup_kernel(struct nkv_dev_qp *qp, const struct ex_args *a)
{
	ex_cache_lookup(qp, a);
}

int main(int argc, char **argv)
{
	const char *uri = ex_uri(argc, argv, argv[0]);
	struct nkv_ctrl_info info;
	struct nkv_result r;
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	struct ex_key keys[EX_KEYS] = {};
	struct ex_out out[EX_KEYS];
	struct ex_args args = {}, *d_args;
	struct ex_key *d_keys;
	struct ex_out *d_out;
	uint32_t i, hits = 0, wrong = 0;
	int wave;

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
		keys[i].len = (uint32_t)snprintf((char *)keys[i].bytes, 16, "ex3-key%u", i);
	EX_HIP(hipMalloc(&d_keys, sizeof(keys)));
	EX_HIP(hipMalloc(&d_out, sizeof(out)));
	EX_HIP(hipMalloc(&d_args, sizeof(args)));
	EX_HIP(hipMemcpy(d_keys, keys, sizeof(keys), hipMemcpyHostToDevice));
	args.keys = (uint64_t)(uintptr_t)d_keys;
	args.out = (uint64_t)(uintptr_t)d_out;
	args.count = EX_KEYS;
	args.nsid = info.nsid;
	args.value_size = 4096;
	args.seed = 0xcac4e;
	EX_HIP(hipMemcpy(d_args, &args, sizeof(args), hipMemcpyHostToDevice));
	hipLaunchKernelGGL(ex_store_kernel, dim3(1), dim3(wave), 0, 0, nkv_qpair_dev(q), d_args);
	EX_HIP(hipDeviceSynchronize());
	for (i = 1; i < EX_KEYS; i += 2)
		if (nkv_delete(q, keys[i].bytes, keys[i].len, &r) || r.status)
			return 1;
	hipLaunchKernelGGL(ex_lookup_kernel, dim3(1), dim3(wave), 0, 0, nkv_qpair_dev(q), d_args);
	EX_HIP(hipDeviceSynchronize());
	EX_HIP(hipMemcpy(out, d_out, sizeof(out), hipMemcpyDeviceToHost));
	for (i = 0; i < EX_KEYS; i++) {
		hits += out[i].hit;
		wrong += out[i].hit != !(i & 1) || out[i].bad || out[i].err;
	}
	printf("cache lookup of %u keys: %u hits, %u misses, %u wrong\n", EX_KEYS, hits,
	       EX_KEYS - hits, wrong);
	EX_HIP(hipFree(d_keys));
	EX_HIP(hipFree(d_out));
	EX_HIP(hipFree(d_args));
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	return wrong ? 1 : 0;
}
