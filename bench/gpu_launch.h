/* SPDX-License-Identifier: MIT */
/*
 * gpu_launch.h - nkv-bench's GPU launcher, written once for the CUDA and
 * HIP runtimes, whose APIs differ only in their prefix: the including
 * file defines NKV_RT(name) (cuda##name / hip##name) and NKV_RT_PROP (the
 * device-properties type) first. Compiled by nvcc or hipcc.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu.h"

#define NKV_BENCH_GPU_MAX_RANGES 8u

/* A batch of at most a wave: one wave per block owns qps[block]. */
__global__ void nkv_bk_run_kernel(struct nkv_dev_qp *const *qps, const struct nkv_bk_args *args)
{
	nkv_bk_run(qps[blockIdx.x], &args[blockIdx.x]);
}

/* A wider batch: the whole block owns qps[block], one doorbell per batch.
 * (1024, 1): the compiler must leave room for 1024 threads without
 * spilling (the block batch's 0-stack rule). */
__global__ void __launch_bounds__(1024, 1)
nkv_bk_run_block_kernel(struct nkv_dev_qp *const *qps, const struct nkv_bk_args *args)
{
	nkv_bk_run_block(qps[blockIdx.x], &args[blockIdx.x]);
}

static int nkv_bench_gpu_err(NKV_RT(Error_t) e, const char *what, char *err, size_t errlen)
{
	if (e == NKV_RT(Success))
		return 0;
	snprintf(err, errlen, "%s: %s", what, NKV_RT(GetErrorString)(e));
	return e == NKV_RT(ErrorNoDevice) ? -ENODEV : e == NKV_RT(ErrorInvalidValue) ? -EINVAL : -EIO;
}

static int nkv_bench_gpu_device(void)
{
	const char *e = getenv("NKV_GPU_DEVICE");

	return e ? atoi(e) : 0;
}

extern "C" int nkv_bench_gpu_probe(uint32_t *wave_size, char *why, size_t whylen)
{
	NKV_RT_PROP p;
	int n = 0, dev = nkv_bench_gpu_device();

	*wave_size = 0;
	if (NKV_RT(GetDeviceCount)(&n) != NKV_RT(Success) || n <= dev || dev < 0) {
		snprintf(why, whylen, "no GPU device %d (%d found)", dev, n);
		return -ENODEV;
	}
	if (nkv_bench_gpu_err(NKV_RT(GetDeviceProperties)(&p, dev), "device properties", why, whylen))
		return -ENODEV;
	*wave_size = (uint32_t)p.warpSize;
	return 0;
}

/* Registered ranges: host base, length, device base. */
struct nkv_bench_gpu_map {
	uint8_t *host[NKV_BENCH_GPU_MAX_RANGES];
	size_t len[NKV_BENCH_GPU_MAX_RANGES];
	uint64_t dev[NKV_BENCH_GPU_MAX_RANGES];
	uint32_t n;
};

static uint64_t nkv_bench_gpu_xlate(const struct nkv_bench_gpu_map *m, uint64_t host)
{
	uint32_t i;

	for (i = 0; i < m->n; i++)
		if (host >= (uint64_t)(uintptr_t)m->host[i] &&
		    host < (uint64_t)(uintptr_t)m->host[i] + m->len[i])
			return m->dev[i] + (host - (uint64_t)(uintptr_t)m->host[i]);
	return 0;
}

static int nkv_bench_gpu_map_ranges(struct nkv_bench_gpu_map *m, const struct nkv_bench_gpu_range *r,
				    uint32_t n, char *err, size_t errlen)
{
	int rc = 0;

	for (m->n = 0; m->n < n && !rc; m->n++) {
		void *d = NULL;

		rc = nkv_bench_gpu_err(NKV_RT(HostRegister)(r[m->n].host, r[m->n].len,
							    NKV_RT(HostRegisterMapped)),
				       "registering bench memory", err, errlen);
		if (!rc)
			rc = nkv_bench_gpu_err(NKV_RT(HostGetDevicePointer)(&d, r[m->n].host, 0),
					       "its device address", err, errlen);
		m->host[m->n] = (uint8_t *)r[m->n].host;
		m->len[m->n] = r[m->n].len;
		m->dev[m->n] = (uint64_t)(uintptr_t)d;
	}
	return rc;
}

static void nkv_bench_gpu_unmap(struct nkv_bench_gpu_map *m)
{
	while (m->n)
		(void)NKV_RT(HostUnregister)(m->host[--m->n]);
}

/* The kernel's copies: args with device addresses, the qps array. */
static int nkv_bench_gpu_stage(const struct nkv_bench_gpu_map *m, struct nkv_dev_qp *const *qps,
			       const struct nkv_bk_args *args, uint32_t nq, void **dqps,
			       void **dargs, char *err, size_t errlen)
{
	struct nkv_bk_args a[64];
	uint32_t q;
	int rc;

	for (q = 0; q < nq; q++) {
		a[q] = args[q];
		a[q].keys_addr = nkv_bench_gpu_xlate(m, args[q].keys_addr);
		a[q].lat_addr = nkv_bench_gpu_xlate(m, args[q].lat_addr);
		a[q].lanes_addr = nkv_bench_gpu_xlate(m, args[q].lanes_addr);
		a[q].progress_addr = nkv_bench_gpu_xlate(m, args[q].progress_addr);
		if (!a[q].keys_addr || !a[q].lat_addr || !a[q].lanes_addr || !a[q].progress_addr) {
			snprintf(err, errlen, "queue pair %u: bench memory outside the mapped ranges", q);
			return -EINVAL;
		}
	}
	rc = nkv_bench_gpu_err(NKV_RT(Malloc)(dargs, nq * sizeof(*a)), "device memory", err, errlen);
	if (!rc)
		rc = nkv_bench_gpu_err(NKV_RT(Memcpy)(*dargs, a, nq * sizeof(*a),
						      NKV_RT(MemcpyHostToDevice)), "copy", err, errlen);
	if (!rc)
		rc = nkv_bench_gpu_err(NKV_RT(Malloc)(dqps, nq * sizeof(*qps)), "device memory",
				       err, errlen);
	if (!rc)
		rc = nkv_bench_gpu_err(NKV_RT(Memcpy)(*dqps, qps, nq * sizeof(*qps),
						      NKV_RT(MemcpyHostToDevice)), "copy", err, errlen);
	return rc;
}

/* Launch and wait; the host thread polls (the caller shows progress
 * from the mapped progress words meanwhile). */
static int nkv_bench_gpu_run(void *dqps, void *dargs, uint32_t nq, uint32_t batch, uint32_t wave,
			     char *err, size_t errlen)
{
	NKV_RT(Error_t) e;

	if (batch <= wave)
		nkv_bk_run_kernel<<<nq, batch>>>((struct nkv_dev_qp *const *)dqps,
						 (const struct nkv_bk_args *)dargs);
	else
		nkv_bk_run_block_kernel<<<nq, batch>>>((struct nkv_dev_qp *const *)dqps,
						       (const struct nkv_bk_args *)dargs);
	e = NKV_RT(GetLastError)();
	if (e != NKV_RT(Success))
		return nkv_bench_gpu_err(e, "kernel launch", err, errlen);
	while ((e = NKV_RT(StreamQuery)(0)) == NKV_RT(ErrorNotReady))
		usleep(200);
	return nkv_bench_gpu_err(e, "bench kernel", err, errlen);
}

extern "C" int nkv_bench_gpu_launch(struct nkv_dev_qp *const *qps, const struct nkv_bk_args *args,
				    uint32_t nq, uint32_t batch,
				    const struct nkv_bench_gpu_range *ranges, uint32_t nranges,
				    char *err, size_t errlen)
{
	struct nkv_bench_gpu_map m;
	void *dqps = NULL, *dargs = NULL;
	uint32_t wave = 0;
	int rc = nkv_bench_gpu_probe(&wave, err, errlen);

	memset(&m, 0, sizeof(m));
	if (rc)
		return rc;
	if (batch == 0 || batch > 1024 || nq == 0 || nq > 64 ||
	    nranges > NKV_BENCH_GPU_MAX_RANGES) {
		snprintf(err, errlen, "--batch-size %u x %u queue pairs on this GPU: a batch is one "
			 "block of at most 1024 threads (waves of %u)", batch, nq, wave);
		return -EINVAL;
	}
	/* CUDA and HIP keep the current device per thread. */
	rc = nkv_bench_gpu_err(NKV_RT(SetDevice)(nkv_bench_gpu_device()), "set device", err, errlen);
	if (!rc)
		rc = nkv_bench_gpu_map_ranges(&m, ranges, nranges, err, errlen);
	if (!rc)
		rc = nkv_bench_gpu_stage(&m, qps, args, nq, &dqps, &dargs, err, errlen);
	if (!rc)
		rc = nkv_bench_gpu_run(dqps, dargs, nq, batch, wave, err, errlen);
	(void)NKV_RT(Free)(dqps);
	(void)NKV_RT(Free)(dargs);
	nkv_bench_gpu_unmap(&m);
	return rc;
}
