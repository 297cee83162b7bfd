/* SPDX-License-Identifier: MIT */
/*
 * memguard.h - the one path by which nkv-target's threads touch a client's
 * memory, surviving a page that vanished under the mapping.
 *
 * A client can take pages away after registering them: truncating an
 * unsealed memfd or file (a later access raises SIGBUS past the new end),
 * punching a hole in a hugetlb memfd when the pool is empty (SIGBUS on
 * the next fault). Every copy to or from client memory runs inside a
 * per-thread recovery point: a SIGBUS raised by that copy, in that thread,
 * at an address inside the ranges being copied, unwinds to the caller as
 * -EFAULT. Any other SIGBUS goes to the handler installed before ours, or
 * kills the process as it would have without us.
 *
 * Thread safety: every function may be called from any thread (backend
 * and library threads included); nkv_guard_init() installs the handler
 * once per process.
 */
#ifndef NKV_TGT_MEMGUARD_H
#define NKV_TGT_MEMGUARD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Install the SIGBUS handler (idempotent). 0 or a negative errno. */
int nkv_guard_init(void);

/* memcpy; either side may be client memory. 0, or -EFAULT (a page of
 * either range vanished: dst may hold part of the data). */
int nkv_guard_copy(void *dst, const void *src, size_t n);

/* Copy n bytes to dst, then store v at flag with release ordering (a
 * CQE: DW0-DW2, then the dword with the phase), under one recovery
 * point. Either side may be client memory. 0 or -EFAULT (dst may hold
 * part of the data; flag is written last, so a fault leaves it as it
 * was unless the fault was in the store itself). */
int nkv_guard_copy_publish(void *dst, const void *src, size_t n, uint32_t *flag, uint32_t v);

/* Gather len bytes of iov into dst / scatter len bytes of src into iov
 * (segments in order, stopping at len). 0 or -EFAULT. */
int nkv_guard_gather(void *dst, const struct iovec *iov, int cnt, uint64_t len);
int nkv_guard_scatter(const struct iovec *iov, int cnt, const void *src, uint64_t len);
/* The same scatter, starting off bytes into the segments (a List entry
 * appended after those before it). */
int nkv_guard_scatter_at(const struct iovec *iov, int cnt, uint64_t off, const void *src,
			 uint64_t len);

/* SIGBUS faults recovered so far in this process. */
uint64_t nkv_guard_faults(void);

#endif /* NKV_TGT_MEMGUARD_H */
