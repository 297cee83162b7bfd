/* SPDX-License-Identifier: MIT */
/*
 * The values of the Store/Delete crash storms (tests/vfio-user/
 * test_rocks_crash.c and tests/vm/nkv_storm.c): version v of client c's
 * key k has a length and bytes that only (c, k, v) give, so a check after
 * a crash knows which version a value is, and that it is whole.
 */
#ifndef NKV_TESTS_STORM_VAL_H
#define NKV_TESTS_STORM_VAL_H

#include <stdint.h>
#include <string.h>

#define STORM_BIG (2u << 20)
#define STORM_SMALL 4096u

/* Every 5th version is 2 MiB, the others 4 KiB. */
static inline uint32_t storm_len(uint32_t v)
{
	return v % 5 == 0 ? STORM_BIG : STORM_SMALL;
}

static inline void storm_fill(uint8_t *p, int c, int k, uint32_t v)
{
	uint32_t i, len = storm_len(v), x = v * 2654435761u ^ (uint32_t)(c * 131 + k);

	for (i = 0; i < len; i += 4) {
		x = x * 1103515245u + 12345u;
		memcpy(p + i, &x, 4);
	}
}

#endif
