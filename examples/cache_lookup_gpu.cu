// SPDX-License-Identifier: MIT
/*
 * cache_lookup_gpu.cu - example 3 on a GPU: a KV-cache lookup. A wave
 * stores 128 values; the host deletes every second key (through a host
 * queue pair of its own: the synchronous API refuses a device one); then
 * the wave asks Exist for all, Retrieves only the hits and computes the
 * misses. kv_kernels.h's ex_cache_lookup(); cache_lookup_cpu.c runs it on
 * the cpu engine. One source for nvcc and hipcc.
 */
#include "ex_gpu.h"

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
	const char *uri;
	struct nkv_result r;
	struct nkv_ctrl *c;
	struct nkv_qpair *q, *hq = NULL;
	struct nkv_dev_qp *qp;
	struct ex_key keys[EX_KEYS] = {};
	struct ex_out out[EX_KEYS];
	struct ex_args args, *d_args;
	struct ex_key *d_keys;
	struct ex_out *d_out;
	uint32_t i, hits = 0, misses = 0, wrong = 0;
	int wave = 0, rc;

	ex_log_stderr();
	uri = ex_uri(argc, argv, argv[0]);
	if (!uri)
		return EX_EXIT_USAGE;
	if (ex_gpu_wave(&wave))
		return EX_EXIT_SETUP;
	c = ex_connect(uri, 2);
	if (!c)
		return EX_EXIT_SETUP;
	q = ex_qpair_dev(c, (uint32_t)wave, &qp);
	// The host's own queue pair: default options (memory mode 0).
	if (!q || nkv_qpair_create(c, NULL, &hq))
		return EX_EXIT_SETUP;
	for (i = 0; i < EX_KEYS; i++)
		keys[i].len = (uint32_t)snprintf((char *)keys[i].bytes, 16, "ex3-key%u", i);
	EX_GPU(ex_gpu_put(&d_keys, keys, sizeof(keys)));
	EX_GPU(EX_RT(Malloc)(&d_out, sizeof(out)));
	args = ex_args_of(d_keys, d_out, EX_KEYS, 0xcac4e);
	EX_GPU(ex_gpu_put(&d_args, &args, sizeof(args)));
	ex_store_kernel<<<1, wave>>>(qp, d_args);
	EX_GPU(EX_RT(DeviceSynchronize)());
	for (i = 1; i < EX_KEYS; i += 2) {
		if (nkv_delete(hq, keys[i].bytes, keys[i].len, &r)) {
			fprintf(stderr, "delete: key %u: the controller did not answer\n", i);
			return EX_EXIT_SETUP;
		}
		if (r.status) {
			fprintf(stderr, "delete: key %u: %s\n", i, nkv_status_str(r.status));
			return EX_EXIT_FAIL;
		}
	}
	ex_lookup_kernel<<<1, wave>>>(qp, d_args);
	EX_GPU(EX_RT(DeviceSynchronize)());
	EX_GPU(EX_RT(Memcpy)(out, d_out, sizeof(out), EX_RT(MemcpyDeviceToHost)));
	rc = ex_check("lookup", out, EX_KEYS, &misses);
	for (i = 0; i < EX_KEYS; i++) {
		hits += out[i].hit;
		wrong += out[i].hit != !(i & 1) || out[i].bad || out[i].err;
	}
	printf("cache lookup of %u keys: %u hits, %u misses, %u wrong\n", EX_KEYS, hits,
	       EX_KEYS - hits, wrong);
	if (wrong)
		rc = ex_worse(rc, EX_EXIT_FAIL);
	EX_GPU(EX_RT(Free)(d_keys));
	EX_GPU(EX_RT(Free)(d_out));
	EX_GPU(EX_RT(Free)(d_args));
	nkv_qpair_destroy(q);
	nkv_qpair_destroy(hq);
	nkv_ctrl_close(c);
	return rc;
}
