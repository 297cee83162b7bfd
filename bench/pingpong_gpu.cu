// SPDX-License-Identifier: MIT
/*
 * pingpong_gpu.cu - the GPU reference point beside bench/pingpong.c: one
 * GPU thread and one host thread bounce a counter through a word of pinned
 * (mapped) host memory: the host writes n, the GPU answers n + 1. One
 * round trip is the floor of any exchange between device code and a
 * controller that polls host memory (a doorbell and its completion).
 * Plain volatile loads and stores with system-scope fences: an atomic on
 * host memory is not atomic for the host over PCIe.
 *
 *   pingpong-gpu [ROUNDS]      (default 100000; prints one JSON object)
 *
 * One source for nvcc and hipcc: make GPU=cuda bench-tools (or GPU=hip).
 */
#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#define PG_RT(name) hip##name
#define PG_HOST_MAPPED(p, len) hipHostMalloc((p), (len), hipHostMallocMapped)
#else
#include <cuda_runtime.h>
#define PG_RT(name) cuda##name
#define PG_HOST_MAPPED(p, len) cudaHostAlloc((p), (len), cudaHostAllocMapped)
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t pg_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Answer every odd value with the next even one; stop after @rounds.
 * Bounded: gives up after 2^31 empty polls in a row. */
__global__ void pg_kernel(volatile uint64_t *w, uint64_t rounds)
{
	uint64_t n, spins = 0;

	for (n = 1; n < 2 * rounds; n += 2) {
		while (*w != n) {
			if (++spins > (1ull << 31))
				return;
		}
		spins = 0;
		__threadfence_system();
		*w = n + 1;
		__threadfence_system();
	}
}

static int pg_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	uint64_t rounds = argc > 1 ? strtoull(argv[1], NULL, 0) : 100000, i, n, sum = 0;
	volatile uint64_t *w = NULL;
	uint64_t *lat;
	void *d = NULL;

	if (!rounds || !(lat = (uint64_t *)calloc(rounds, sizeof(*lat))))
		return 2;
	if (PG_HOST_MAPPED((void **)&w, 64) != PG_RT(Success) ||
	    PG_RT(HostGetDevicePointer)(&d, (void *)w, 0) != PG_RT(Success)) {
		fprintf(stderr, "pingpong-gpu: no GPU, or no mapped host memory\n");
		return 1;
	}
	*w = 0;
	pg_kernel<<<1, 1>>>((volatile uint64_t *)d, rounds);
	for (i = 0, n = 1; i < rounds; i++, n += 2) {
		uint64_t t0 = pg_now_ns(), spins = 0;

		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		*w = n;
		while (*w != n + 1) {
			if (++spins > (1ull << 31)) {
				fprintf(stderr, "pingpong-gpu: the GPU stopped answering at round %llu\n",
					(unsigned long long)i);
				return 1;
			}
		}
		lat[i] = pg_now_ns() - t0;
		sum += lat[i];
	}
	if (PG_RT(DeviceSynchronize)() != PG_RT(Success))
		return 1;
	qsort(lat, rounds, sizeof(*lat), pg_cmp);
	printf("{\"test\":\"gpu_rtt\",\"rounds\":%llu,\"min_ns\":%llu,\"avg_ns\":%.1f,"
	       "\"p50_ns\":%llu,\"p99_ns\":%llu}\n", (unsigned long long)rounds,
	       (unsigned long long)lat[0], (double)sum / (double)rounds,
	       (unsigned long long)lat[rounds / 2], (unsigned long long)lat[rounds * 99 / 100]);
	return 0;
}
