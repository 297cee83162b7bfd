/* SPDX-License-Identifier: MIT */
/*
 * The values of the Store/Delete crash storms (tests/vfio-user/
 * test_rocks_crash.c and tests/vm/nkv_storm.c): version v of client c's
 * key k has a length and bytes that only (c, k, v) give, so a check after
 * a crash knows which version a value is, and that it is whole; and the
 * rule both checks apply to what a key holds after the crash.
 */
#ifndef NKV_TESTS_STORM_VAL_H
#define NKV_TESTS_STORM_VAL_H

#include <stdint.h>
#include <stdio.h>
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

/* A key's state: version 0 is absent (never stored, or deleted). */
struct storm_key {
	uint32_t acked;		/* the last version whose completion was seen */
	uint32_t sent;		/* the one in flight (== acked when none) */
};

/* Client c's key k: "c<c>k<k>". */
static inline void storm_key_name(char *key, size_t len, int c, int k)
{
	snprintf(key, len, "c%dk%d", c, k);
}

/* Which of its two allowed versions (acked, or the one in flight) the
 * @len bytes a key of client c returned are: that version, whole; or -1
 * (a value never given, or torn). @want is scratch of STORM_BIG bytes. */
static inline int64_t storm_match(const struct storm_key *s, int c, int k, const uint8_t *got,
				  uint32_t len, uint8_t *want)
{
	uint32_t cand[2] = { s->acked, s->sent };
	int i;

	for (i = 0; i < 2; i++) {
		if (!cand[i] || len != storm_len(cand[i]))
			continue;
		storm_fill(want, c, k, cand[i]);
		if (!memcmp(got, want, len))
			return cand[i];
	}
	return -1;
}

#endif
