/* SPDX-License-Identifier: MIT */
/*
 * vmtest.h - shared bits of the guest test program (tests/vm/): the
 * library-driven wave cases (nkv_vmtest.c) and the raw module cases
 * (vm_kmod.c).
 */
#ifndef NKV_VMTEST_H
#define NKV_VMTEST_H

#include <stdint.h>
#include <stdio.h>

#define FAIL(...) do { printf("FAIL: " __VA_ARGS__); printf("\n"); return -1; } while (0)

/* Every module ioctl and mmap error path on /dev/nkvN. */
int vt_mode_badargs(const char *dev);
/* Unbind nkv from pciaddr while dev is open, DMA-mapped and BAR-mapped. */
int vt_mode_unbind(const char *dev, const char *pciaddr);
/* The IOMMU flag the module reports for dev (a node or PCI address) must
 * be want; opens and closes the device (nothing else may hold it). */
int vt_check_iommu(const char *dev, int want);

/* Safe-by-default cases of nkv.ko (vm_safety.c). */
int vs_mode_open(const char *dev, const char *want, const char *flags, int norawio);
int vs_mode_retain(const char *dev);
int vs_mode_uffd(const char *dev);
int vs_mode_filepin(const char *dev, const char *file);
int vs_mode_fork(const char *dev);
int vs_mode_msix(const char *dev, const char *pciaddr);
int vs_mode_reset(const char *dev, const char *pciaddr);

/* dma-buf import cases (vm_p2p.c), against tests/vm/nkv_p2pexp.ko. */
struct nkv_kmod_dmabuf;
/* A dma-buf fd of [offset, offset + len) of the ivshmem BAR, or -1. */
int vp_export(uint64_t offset, uint64_t len);
/* NKV_IOC_DMABUF_IMPORT of [offset, offset + len) of dfd on fd: 0 or errno. */
int vp_import(int fd, int dfd, uint64_t offset, uint64_t len, uint64_t *iova,
	      struct nkv_kmod_dmabuf *d);
int vp_check_import(const struct nkv_kmod_dmabuf *d, const uint64_t *iova);
int vp_bar2(uint64_t *start);
int vp_mode_import(const char *dev, const char *want);
int vp_mode_teardown(const char *dev, const char *pciaddr);
int vp_mode_revoke(const char *dev, const char *pciaddr);

#endif
