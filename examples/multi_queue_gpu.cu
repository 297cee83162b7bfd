// SPDX-License-Identifier: MIT
/*
 * multi_queue_gpu.cu - example 2 on a GPU: four queue pairs, one block of
 * one wave each (a queue pair has one owner), store then retrieve, each
 * wave with two batches in flight on its queue pair (nkv_wave_submit()
 * twice, nkv_wave_wait() for the second batch first). The kernel body is
 * kv_kernels.h's ex_batch2(); multi_queue_cpu.c runs the same one on the
 * cpu engine. One source for nvcc and hipcc (see
 * batch_store_retrieve_gpu.cu for the build lines).
 */
#include "ex_gpu.h"

#define EX_QUEUES 4u
#define EX_KEYS_PER_QUEUE 128u
#define EX_KEYS (EX_QUEUES * EX_KEYS_PER_QUEUE)

// Block b: one wave, queue pair qps[b], arguments args[b].
__global__ void ex_multi_kernel(struct nkv_dev_qp *const *qps, const struct ex_args *args,
				int store)
{
	ex_batch2(qps[blockIdx.x], &args[blockIdx.x], store);
}

int main(int argc, char **argv)
{
	const char *uri;
	struct nkv_ctrl *c;
	struct nkv_qpair *q[EX_QUEUES];
	struct nkv_dev_qp *qps[EX_QUEUES], **d_qps;
	static struct ex_key keys[EX_KEYS];
	static struct ex_out out[EX_KEYS];
	struct ex_args args[EX_QUEUES], *d_args;
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
	c = ex_connect(uri, EX_QUEUES);
	if (!c)
		return EX_EXIT_SETUP;
	for (i = 0; i < EX_QUEUES; i++) {
		// A value slot per lane and batch in flight.
		q[i] = ex_qpair_dev(c, 2u * (uint32_t)wave, &qps[i]);
		if (!q[i])
			return EX_EXIT_SETUP;
	}
	for (i = 0; i < EX_KEYS; i++)
		keys[i].len = (uint32_t)snprintf((char *)keys[i].bytes, 16, "ex2-key%u", i);
	EX_GPU(ex_gpu_put(&d_keys, keys, sizeof(keys)));
	EX_GPU(EX_RT(Malloc)(&d_out, sizeof(out)));
	// The descriptors are device pointers: copied as values, never read here.
	EX_GPU(ex_gpu_put(&d_qps, qps, sizeof(qps)));
	for (i = 0; i < EX_QUEUES; i++)
		args[i] = ex_args_of(d_keys + i * EX_KEYS_PER_QUEUE, d_out + i * EX_KEYS_PER_QUEUE,
				     EX_KEYS_PER_QUEUE, 0x5eed + i);
	EX_GPU(ex_gpu_put(&d_args, args, sizeof(args)));
	for (int store = 1; store >= 0; store--) {
		ex_multi_kernel<<<EX_QUEUES, wave>>>(d_qps, d_args, store);
		EX_GPU(EX_RT(DeviceSynchronize)());
		EX_GPU(EX_RT(Memcpy)(out, d_out, sizeof(out), EX_RT(MemcpyDeviceToHost)));
		rc = ex_worse(rc, ex_check(store ? "store" : "retrieve", out, EX_KEYS, NULL));
	}
	printf("%u queue pairs, one wave each, two batches in flight: %u values stored and "
	       "retrieved: %s\n", EX_QUEUES, EX_KEYS, rc ? "FAILED" : "all bytes match");
	EX_GPU(EX_RT(Free)(d_keys));
	EX_GPU(EX_RT(Free)(d_out));
	EX_GPU(EX_RT(Free)(d_args));
	EX_GPU(EX_RT(Free)(d_qps));
	for (i = 0; i < EX_QUEUES; i++)
		nkv_qpair_destroy(q[i]);
	nkv_ctrl_close(c);
	return rc;
}
