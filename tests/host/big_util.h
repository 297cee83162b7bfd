/* SPDX-License-Identifier: MIT */
/*
 * big_util.h - values to 64 MiB through the synchronous API (issue 30),
 * shared by the suites that run them fd-mapped (test_host_sync) and by
 * messages (test_host_msgs); the library's log captured, to check what a
 * refusal says.
 */
#ifndef NKV_TEST_BIG_UTIL_H
#define NKV_TEST_BIG_UTIL_H

#include <stdint.h>

#include "nkv_host.h"

#define BIG_MIB (1u << 20)
/* 1 B, 4 KiB, 4 KiB + 1, 2 MiB + 4 KiB + 1 (the first value whose PRP
 * list chains to a second page), 16 MiB, 64 MiB. */
#define BIG_NSIZES 6
extern const uint32_t big_sizes[BIG_NSIZES];

/*
 * Every op at every size of big_sizes up to max, on qp, byte for byte:
 * Store, Retrieve (the whole value, then a 4097-byte prefix with the full
 * size in DW0), Exist; List into buffers of 1 B (85h), 4 KiB, 4 KiB + 1
 * and 2 MiB + 4 KiB + 1 that all name every key; Delete, then Exist 87h.
 * One value of each size: the 16 and 64 MiB ones once each way.
 */
void big_every_op(struct nkv_qpair *qp, uint32_t max);

/* Capture the library's log lines (nkv_set_log) until big_log_stop. */
void big_log_start(void);
/* Everything logged since big_log_start, lines joined by '\n'. */
const char *big_log(void);
void big_log_stop(void);

#endif
