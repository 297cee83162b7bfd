/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * nkv_p2pexp.h - the ioctl of tests/vm/nkv_p2pexp.ko (test-only dma-buf
 * exporter of QEMU's ivshmem BAR), shared with the guest test program.
 */
#ifndef NKV_P2PEXP_H
#define NKV_P2PEXP_H

#include <linux/types.h>
#include <linux/ioctl.h>

/* NKV_P2PEXP_EXPORT: a dma-buf fd for [offset, offset + len) of BAR2. */
struct nkv_p2pexp_req {
	__u64 offset;	/* in: bytes into BAR2, page aligned */
	__u64 len;	/* in: bytes, page multiple */
	__s32 fd;	/* out: the dma-buf, O_CLOEXEC */
	__u32 rsvd;	/* in: 0 */
};

#define NKV_P2PEXP_EXPORT _IOWR('N', 0xb0, struct nkv_p2pexp_req)

/* NKV_P2PEXP_REVOKE: tell every importer of the dma-buf fd (an int) that
 * it moves away (dma_buf_move_notify), as a GPU driver does on reset. */
#define NKV_P2PEXP_REVOKE _IOW('N', 0xb1, int)

#endif
