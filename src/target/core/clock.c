/* SPDX-License-Identifier: MIT */
/*
 * clock.c - the clock TTLs run on (backend.h): CLOCK_MONOTONIC in
 * milliseconds, so a wall-clock step never ages a key early or late, or
 * a test's own clock, so expiry is tested without sleeping. And the
 * plain monotonic clock the poll loops and the control socket's timers
 * read (poller.h), never replaced.
 */
#include <time.h>

#include "backend.h"
#include "poller.h"

uint64_t nkv_tgt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t (*nkv_be_clock)(void);	/* atomic; NULL: the real clock */

uint64_t nkv_be_now_ms(void)
{
	uint64_t (*fn)(void) = __atomic_load_n(&nkv_be_clock, __ATOMIC_ACQUIRE);
	struct timespec ts;

	if (fn)
		return fn();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void nkv_be_clock_set(uint64_t (*now_ms)(void))
{
	__atomic_store_n(&nkv_be_clock, now_ms, __ATOMIC_RELEASE);
}
