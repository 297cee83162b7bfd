/* SPDX-License-Identifier: MIT */
/*
 * gpu.h - nkv-bench's GPU engine: the bench kernel (bench_kernels.h, the
 * body the cpu engine runs) launched on a real GPU, one block of one wave
 * per queue pair. gpu_cuda.cu (make GPU=cuda) and gpu_hip.cpp (GPU=hip)
 * implement it; gpu_none.c says the build has none.
 */
#ifndef NKV_BENCH_GPU_H
#define NKV_BENCH_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "device/bench_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Host memory the kernel reads or writes (keys, counters, batch times,
 * progress): the launcher maps it for the GPU for one launch. */
struct nkv_bench_gpu_range {
	void *host;
	size_t len;
};

/* Is there a GPU? 0 and its wave size, or -ENODEV with why. */
int nkv_bench_gpu_probe(uint32_t *wave_size, char *why, size_t whylen);

/*
 * Run the bench kernel: block q of @batch threads runs nkv_bk_run(qps[q],
 * args[q]) when the batch fits one wave, nkv_bk_run_block() when it is
 * wider (one doorbell per batch either way), qps[] being device pointers
 * (nkv_qpair_create_dev() queue pairs).
 * The addresses in @args are host addresses inside @ranges; the launcher
 * maps the ranges and hands the kernel translated copies. Returns when
 * the kernel has finished (its own waits are bounded by the queue pairs'
 * timeouts). 0, or a negative errno with why in err: -EINVAL a batch
 * wider than a block (1024), -ENODEV no GPU, -EIO a launch or kernel
 * error.
 */
int nkv_bench_gpu_launch(struct nkv_dev_qp *const *qps, const struct nkv_bk_args *args,
			 uint32_t nq, uint32_t batch, const struct nkv_bench_gpu_range *ranges,
			 uint32_t nranges, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* NKV_BENCH_GPU_H */
