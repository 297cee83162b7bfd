/* SPDX-License-Identifier: MIT */
/*
 * vmtest.h - shared bits of the guest test program (tests/vm/): the
 * library-driven wave cases (nkv_vmtest.c) and the raw module cases
 * (vm_kmod.c).
 */
#ifndef NKV_VMTEST_H
#define NKV_VMTEST_H

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

#endif
