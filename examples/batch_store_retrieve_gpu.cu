// SPDX-License-Identifier: MIT
/*
 * batch_store_retrieve_gpu.cu - example 1 on a GPU: one wave stores 256
 * values (one nkv_wave_store() per round: each lane builds one SQE, one
 * SQ doorbell per batch, the leader reaps the batch's completions), then
 * retrieves and checks them. The kernel body is kv_kernels.h's
 * ex_batch(); the cpu engine runs the same one in
 * batch_store_retrieve_cpu.c. One source for both GPUs:
 *
 *   nvcc -arch=sm_90 -x cu batch_store_retrieve_gpu.cu $(pkg-config --cflags --libs nkv)
 *   hipcc --offload-arch=gfx90a -x hip batch_store_retrieve_gpu.cu $(pkg-config ...)
 *
 * against an nkv built with the same GPU runtime (make GPU=cuda / hip).
 * Run: ./a.out vfio-user:/tmp/nkv.sock
 */
#include "ex_gpu.h"

#define EX_KEYS 256u

// One block = one wave that owns the queue pair.
__global__ void ex_batch_kernel(struct nkv_dev_qp *qp, const struct ex_args *a, int store)
{
	ex_batch(qp, a, store);
}

int main(int argc, char **argv)
{
	const char *uri;
	struct nkv_qpair_stats st = {};
	struct nkv_ctrl *c;
	struct nkv_qpair *q;
	struct nkv_dev_qp *qp;
	struct ex_key keys[EX_KEYS] = {};
	struct ex_out out[EX_KEYS];
	struct ex_args args, *d_args;
	struct ex_key *d_keys;
	struct ex_out *d_out;
	int wave = 0, rc = EX_EXIT_OK;
	uint32_t i;

	ex_log_stderr();
	uri = ex_uri(argc, argv, argv[0]);
	if (!uri)
		return EX_EXIT_USAGE;
	if (ex_gpu_wave(&wave))
		return EX_EXIT_SETUP;
	c = ex_connect(uri, 1);
	if (!c)
		return EX_EXIT_SETUP;
	q = ex_qpair_dev(c, (uint32_t)wave, &qp);	// one value slot per lane
	if (!q)
		return EX_EXIT_SETUP;
	for (i = 0; i < EX_KEYS; i++)
		keys[i].len = (uint32_t)snprintf((char *)keys[i].bytes, 16, "ex1-key%u", i);
	EX_GPU(ex_gpu_put(&d_keys, keys, sizeof(keys)));
	EX_GPU(EX_RT(Malloc)(&d_out, sizeof(out)));
	args = ex_args_of(d_keys, d_out, EX_KEYS, 0x5eed);
	EX_GPU(ex_gpu_put(&d_args, &args, sizeof(args)));
	for (int store = 1; store >= 0; store--) {
		// One block of one wave: the queue pair has one owner.
		ex_batch_kernel<<<1, wave>>>(qp, d_args, store);
		EX_GPU(EX_RT(DeviceSynchronize)());
		EX_GPU(EX_RT(Memcpy)(out, d_out, sizeof(out), EX_RT(MemcpyDeviceToHost)));
		if (nkv_qpair_failed(q))
			fprintf(stderr, "queue pair failed: reason %u\n", nkv_qpair_failed(q));
		rc = ex_worse(rc, ex_check(store ? "store" : "retrieve", out, EX_KEYS, NULL));
	}
	// Device code's own counters, read by the library (no kernel runs now).
	if (nkv_qpair_get_stats(q, &st))
		rc = EX_EXIT_SETUP;
	printf("stored and retrieved %u values in batches of %d lanes: %s; %llu SQ doorbells "
	       "for %llu commands\n", EX_KEYS, wave, rc ? "FAILED" : "all bytes match",
	       (unsigned long long)st.dev_sq_doorbells, (unsigned long long)st.dev_commands);
	EX_GPU(EX_RT(Free)(d_keys));
	EX_GPU(EX_RT(Free)(d_out));
	EX_GPU(EX_RT(Free)(d_args));
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	return rc;
}
