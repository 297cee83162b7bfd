/* SPDX-License-Identifier: MIT */
/*
 * pingpong.c - reference points for bench/run-bench.sh, measured on the
 * same machine in the same run as nkv-bench:
 *
 *   pingpong rtt [ROUNDS [CPU_A CPU_B]]
 *                             two threads bounce one cache line: thread A
 *                             writes n, thread B answers n + 1; one round
 *                             trip = the floor of any cross-thread
 *                             doorbell + completion exchange.
 *   pingpong memcpy [SIZE [CPU]]
 *                             single-core memcpy of SIZE-byte blocks
 *                             (default 4096) between two 64 MiB buffers:
 *                             the rate a value copy costs.
 *
 * With CPUs given, each thread is pinned to its CPU before it starts
 * timing (bench/compare.py states the placement); -1 leaves a thread to
 * the scheduler. Prints one JSON object, "cpus" saying where each thread
 * was pinned. Timing uses CLOCK_MONOTONIC, like nkv-bench.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A spin-wait hint where the CPU has one. */
#if defined(__x86_64__) || defined(__i386__)
#define PP_PAUSE() __builtin_ia32_pause()
#else
#define PP_PAUSE() __atomic_signal_fence(__ATOMIC_SEQ_CST)
#endif

static uint64_t pp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The line both threads write, alone in its cache line. */
static struct {
	_Alignas(64) uint64_t v;
	char pad[56];
} pp_line;

static uint64_t pp_rounds;

/* Pin the calling thread to cpu (-1: leave it); 0 or a message and -1. */
static int pp_pin(int cpu)
{
	cpu_set_t set;
	int rc;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (rc) {
		fprintf(stderr, "pingpong: cannot pin a thread to CPU %d: %s\n", cpu, strerror(rc));
		return -1;
	}
	return 0;
}

/* A CPU number 0..CPU_SETSIZE-1 or -1 (not pinned); else -2. */
static int pp_cpu_arg(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < -1 || v >= CPU_SETSIZE)
		return -2;
	return (int)v;
}

static int pp_cpu_b = -1;
static int pp_echo_rc;

static void *pp_echo(void *arg)
{
	uint64_t i;

	(void)arg;
	if (pp_pin(pp_cpu_b)) {
		__atomic_store_n(&pp_echo_rc, -1, __ATOMIC_RELEASE);
		return NULL;
	}
	for (i = 0; i < pp_rounds; i++) {
		uint64_t want = 2 * i + 1;

		while (__atomic_load_n(&pp_line.v, __ATOMIC_ACQUIRE) != want)
			PP_PAUSE();
		__atomic_store_n(&pp_line.v, want + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int pp_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int pp_rtt(uint64_t rounds, int cpu_a, int cpu_b)
{
	uint64_t *t = malloc(rounds * sizeof(*t)), i, sum = 0;
	pthread_t th;

	if (!t || pp_pin(cpu_a))
		return 1;
	pp_rounds = rounds;
	pp_cpu_b = cpu_b;
	if (pthread_create(&th, NULL, pp_echo, NULL))
		return 1;
	for (i = 0; i < rounds; i++) {
		uint64_t t0 = pp_now_ns(), want = 2 * i + 2;

		__atomic_store_n(&pp_line.v, want - 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&pp_line.v, __ATOMIC_ACQUIRE) != want &&
		       !__atomic_load_n(&pp_echo_rc, __ATOMIC_ACQUIRE))
			PP_PAUSE();
		if (__atomic_load_n(&pp_echo_rc, __ATOMIC_ACQUIRE))
			break;
		t[i] = pp_now_ns() - t0;
		sum += t[i];
	}
	pthread_join(th, NULL);
	if (pp_echo_rc) {
		free(t);
		return 1;
	}
	qsort(t, rounds, sizeof(*t), pp_cmp);
	printf("{\"test\":\"rtt\",\"cpus\":[%d,%d],\"rounds\":%llu,\"min_ns\":%llu,\"avg_ns\":%.1f,"
	       "\"p50_ns\":%llu,\"p99_ns\":%llu,\"max_ns\":%llu}\n", cpu_a, cpu_b, (unsigned long long)rounds,
	       (unsigned long long)t[0], (double)sum / (double)rounds,
	       (unsigned long long)t[rounds / 2], (unsigned long long)t[rounds * 99 / 100],
	       (unsigned long long)t[rounds - 1]);
	free(t);
	return 0;
}

static int pp_memcpy(size_t bs, int cpu)
{
	const size_t span = 64u << 20;
	size_t nblk = span / bs, i = 0;
	uint8_t *src = malloc(span), *dst = malloc(span);
	uint64_t t0, t, n = 0;

	if (!src || !dst || !nblk || pp_pin(cpu))
		return 1;
	memset(src, 0x5a, span);
	memset(dst, 0, span);	/* fault every page in before timing */
	t0 = pp_now_ns();
	do {
		int k;

		for (k = 0; k < 256; k++, n++, i = (i + 1) % nblk)
			memcpy(dst + i * bs, src + i * bs, bs);
		t = pp_now_ns() - t0;
	} while (t < 500000000ull);
	printf("{\"test\":\"memcpy\",\"cpus\":[%d],\"block\":%zu,\"blocks\":%llu,\"ns\":%llu,"
	       "\"blocks_per_s\":%.1f,\"bytes_per_s\":%.1f,\"check\":%u}\n", cpu, bs,
	       (unsigned long long)n, (unsigned long long)t, (double)n * 1e9 / (double)t,
	       (double)n * (double)bs * 1e9 / (double)t, dst[(n - 1) % nblk * bs]);
	free(src);
	free(dst);
	return 0;
}

static void pp_usage(void)
{
	fprintf(stderr, "usage: pingpong rtt [ROUNDS [CPU_A CPU_B]] | "
		"pingpong memcpy [BLOCK_BYTES [CPU]]\n"
		"  CPU: pin that thread to this CPU number; -1 leaves it unpinned\n");
}

int main(int argc, char **argv)
{
	int a = -1, b = -1;

	if (argc >= 2 && !strcmp(argv[1], "rtt") && (argc == 2 || argc == 3 || argc == 5)) {
		if (argc == 5 && ((a = pp_cpu_arg(argv[3])) < -1 || (b = pp_cpu_arg(argv[4])) < -1)) {
			fprintf(stderr, "pingpong: bad CPU '%s %s': a CPU number or -1\n", argv[3], argv[4]);
			return 2;
		}
		return pp_rtt(argc > 2 && atoll(argv[2]) > 0 ? (uint64_t)atoll(argv[2]) : 200000, a, b);
	}
	if (argc >= 2 && !strcmp(argv[1], "memcpy") && argc <= 4) {
		if (argc == 4 && (a = pp_cpu_arg(argv[3])) < -1) {
			fprintf(stderr, "pingpong: bad CPU '%s': a CPU number or -1\n", argv[3]);
			return 2;
		}
		return pp_memcpy(argc > 2 && atol(argv[2]) > 0 ? (size_t)atol(argv[2]) : 4096, a);
	}
	pp_usage();
	return 2;
}
