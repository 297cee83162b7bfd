/* SPDX-License-Identifier: MIT */
/*
 * loop_util.h - what the reference loops (bench/rocksdb/rocks_loop,
 * bench/nvmf/nvmf_loop) share: the clock they time batches by, and the
 * sort their percentiles come from.
 */
#ifndef NKV_BENCH_LOOP_UTIL_H
#define NKV_BENCH_LOOP_UTIL_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in ns, as nkv-bench times a batch. */
static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* qsort's comparison for batch latencies. */
static inline int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

#endif /* NKV_BENCH_LOOP_UTIL_H */
