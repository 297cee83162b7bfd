/* SPDX-License-Identifier: MIT */
/*
 * loop_util.h - what the reference loops (bench/rocksdb/rocks_loop,
 * bench/nvmf/nvmf_loop) share: the clock they time batches by, the sort
 * their percentiles come from, and the options every one of them takes.
 */
#ifndef NKV_BENCH_LOOP_UTIL_H
#define NKV_BENCH_LOOP_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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

/* --op put|get, --size BYTES, --batch N, --keys N, --iters N: 1 when k
 * is one of them (v stored in its field), else 0. */
static inline int loop_opt(const char *k, const char *v, const char **op, size_t *size,
			   unsigned *batch, unsigned *keys, unsigned *iters)
{
	if (!strcmp(k, "--op"))
		*op = v;
	else if (!strcmp(k, "--size"))
		*size = strtoull(v, NULL, 0);
	else if (!strcmp(k, "--batch"))
		*batch = (unsigned)strtoul(v, NULL, 0);
	else if (!strcmp(k, "--keys"))
		*keys = (unsigned)strtoul(v, NULL, 0);
	else if (!strcmp(k, "--iters"))
		*iters = (unsigned)strtoul(v, NULL, 0);
	else
		return 0;
	return 1;
}

/* Those options make a run: put or get, a size, whole batches of keys. */
static inline int loop_opts_ok(const char *op, size_t size, unsigned batch, unsigned keys,
			       unsigned iters)
{
	return op && (!strcmp(op, "put") || !strcmp(op, "get")) && size && batch && keys &&
	       iters && keys % batch == 0;
}

#endif /* NKV_BENCH_LOOP_UTIL_H */
