/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * nkv_kmod.h - user-space interface of kmod/nkv.ko (the "pcie" transport).
 *
 * Shared by the kernel module and the host library. Every field is __u64 or
 * __u32, naturally aligned, with no pointers (user addresses travel as
 * __u64), so the layout is the same for 32- and 64-bit callers; the static
 * asserts below run in both the kernel and the user build.
 *
 * A device node /dev/nkv<N> exists per controller bound to the module. One
 * process opens it (exclusive open: EBUSY; EPERM without vfio's DMA
 * isolation, EOPNOTSUPP where DMA would bounce), mmaps BAR0 (offset 0, uncached; the
 * doorbells at 0x1000+ included), and registers DMA memory with
 * NKV_IOC_MAP. Closing the file (or the process dying) disables the
 * controller (CC.EN = 0, waits for CSTS.RDY = 0) and turns bus mastering
 * off before any page is unpinned.
 */
#ifndef NKV_KMOD_H
#define NKV_KMOD_H

#include <linux/types.h>
#include <linux/ioctl.h>

#ifdef __KERNEL__
#include <linux/build_bug.h>
#include <linux/stddef.h>
#define NKV_KMOD_ASSERT(cond, msg) static_assert(cond, msg)
#elif defined(__cplusplus)
#include <cstddef>
#define NKV_KMOD_ASSERT(cond, msg) static_assert(cond, msg)
#else
#include <stddef.h>
#define NKV_KMOD_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* Bumped on any incompatible change; NKV_IOC_INFO reports it. 2: UNMAP
 * drops the handle but the pages stay pinned and charged until the
 * controller is quiesced; NKV_KMOD_INFO_IOMMU means a translating domain. */
#define NKV_KMOD_ABI 2

/* The page granule of NKV_IOC_MAP: one DMA address per 4 KiB. */
#define NKV_KMOD_PAGE_SHIFT 12
#define NKV_KMOD_PAGE_SIZE (1u << NKV_KMOD_PAGE_SHIFT)

/* NKV_IOC_INFO: what the controller is and what this open file holds. */
struct nkv_kmod_info {
	__u32 abi;		/* out: NKV_KMOD_ABI */
	__u32 flags;		/* out: NKV_KMOD_INFO_* */
	__u64 bar0_size;	/* out: bytes mmap may cover */
	__u32 domain;		/* out: PCI address domain:bus:dev.fn */
	__u32 bus;
	__u32 dev;
	__u32 fn;
	__u32 vendor;		/* out: PCI vendor / device ID */
	__u32 device;
	__u32 class_code;	/* out: 24-bit class, 0x010802 for NVMe */
	__u32 rsvd;
	__u64 pin_limit;	/* out: bytes this file may pin */
	__u64 pinned;		/* out: bytes this file has pinned now */
};

/*
 * What holds for this open file. By default open succeeds only when the
 * first three all hold (vfio's conditions); NKV_KMOD_INFO_UNSAFE says the
 * module parameter allow_unsafe_dma lifted that for this opener.
 */
/* DMA addresses are IOVAs of a translating IOMMU domain (not identity). */
#define NKV_KMOD_INFO_IOMMU (1u << 0)
/* Interrupt remapping / isolated MSI: DMA cannot forge interrupts. */
#define NKV_KMOD_INFO_INTR_REMAP (1u << 1)
/* The controller is the only device in its IOMMU group. */
#define NKV_KMOD_INFO_GROUP_ALONE (1u << 2)
/* Opened without the above, through allow_unsafe_dma (kernel tainted). */
#define NKV_KMOD_INFO_UNSAFE (1u << 3)

NKV_KMOD_ASSERT(sizeof(struct nkv_kmod_info) == 64, "nkv_kmod_info size");
NKV_KMOD_ASSERT(offsetof(struct nkv_kmod_info, bar0_size) == 8, "info.bar0_size");
NKV_KMOD_ASSERT(offsetof(struct nkv_kmod_info, domain) == 16, "info.domain");
NKV_KMOD_ASSERT(offsetof(struct nkv_kmod_info, vendor) == 32, "info.vendor");
NKV_KMOD_ASSERT(offsetof(struct nkv_kmod_info, class_code) == 40, "info.class_code");
NKV_KMOD_ASSERT(offsetof(struct nkv_kmod_info, pin_limit) == 48, "info.pin_limit");
NKV_KMOD_ASSERT(offsetof(struct nkv_kmod_info, pinned) == 56, "info.pinned");

/*
 * NKV_IOC_MAP: pin [addr, addr + len) for the device and DMA-map it.
 * addr and len are multiples of the kernel's page size (4 KiB on x86; 16
 * or 64 KiB on some arm64 and ppc64 kernels: sysconf(_SC_PAGESIZE)),
 * len > 0, npages == len / 4096 whatever that page size, and iova_ptr
 * points to npages __u64s that receive the device address of each 4 KiB
 * unit. Errors: EINVAL (alignment, zero length, count mismatch, unknown
 * flags), E2BIG (past the per-file pin limit), EFAULT (memory not mapped
 * writable; from 6.5 the kernel also refuses file-backed pins this way),
 * EOPNOTSUPP (file-backed memory: only anonymous, shmem/memfd and hugetlb
 * memory is pinned), EPERM (not the opener's process), ENOMEM,
 * ENODEV (controller unbound), EIO (controller reset under the owner).
 */
struct nkv_kmod_map {
	__u64 addr;		/* in: user virtual address */
	__u64 len;		/* in: bytes */
	__u64 iova_ptr;		/* in: user address of __u64[npages] */
	__u64 npages;		/* in: len / 4096 */
	__u64 handle;		/* out: for NKV_IOC_UNMAP, never 0 */
	__u32 flags;		/* in: 0; out: NKV_KMOD_MAP_* */
	__u32 rsvd;		/* in: 0 */
};

/* out: iova[i] == iova[0] + i * 4096 for every page. */
#define NKV_KMOD_MAP_CONTIGUOUS (1u << 0)

NKV_KMOD_ASSERT(sizeof(struct nkv_kmod_map) == 48, "nkv_kmod_map size");
NKV_KMOD_ASSERT(offsetof(struct nkv_kmod_map, len) == 8, "map.len");
NKV_KMOD_ASSERT(offsetof(struct nkv_kmod_map, iova_ptr) == 16, "map.iova_ptr");
NKV_KMOD_ASSERT(offsetof(struct nkv_kmod_map, npages) == 24, "map.npages");
NKV_KMOD_ASSERT(offsetof(struct nkv_kmod_map, handle) == 32, "map.handle");
NKV_KMOD_ASSERT(offsetof(struct nkv_kmod_map, flags) == 40, "map.flags");

/*
 * NKV_IOC_UNMAP: drop the handle of one NKV_IOC_MAP. EINVAL for an unknown
 * handle, EPERM from another process (a forked child). The module cannot
 * know whether commands in flight still name the memory, so the pages stay
 * pinned, DMA-mapped and charged to the pin limit (info.pinned) until the
 * module itself has quiesced the controller: on close, reset or unbind.
 */
struct nkv_kmod_unmap {
	__u64 handle;
};

NKV_KMOD_ASSERT(sizeof(struct nkv_kmod_unmap) == 8, "nkv_kmod_unmap size");

/*
 * NKV_IOC_DMABUF_IMPORT: reserved for importing a dma-buf fd (VRAM) and
 * returning its peer-to-peer DMA addresses, same output as NKV_IOC_MAP.
 * Not implemented yet: returns EOPNOTSUPP. The layout is fixed now so the
 * library can probe for it.
 */
struct nkv_kmod_dmabuf {
	__u32 fd;		/* in: dma-buf file descriptor */
	__u32 flags;		/* in: 0; out: NKV_KMOD_MAP_* */
	__u64 offset;		/* in: byte offset into the dma-buf, 4 KiB aligned */
	__u64 len;		/* in: bytes, 4 KiB multiple */
	__u64 iova_ptr;		/* in: user address of __u64[npages] */
	__u64 npages;		/* in: len / 4096 */
	__u64 handle;		/* out: for NKV_IOC_UNMAP */
};

NKV_KMOD_ASSERT(sizeof(struct nkv_kmod_dmabuf) == 48, "nkv_kmod_dmabuf size");
NKV_KMOD_ASSERT(offsetof(struct nkv_kmod_dmabuf, offset) == 8, "dmabuf.offset");
NKV_KMOD_ASSERT(offsetof(struct nkv_kmod_dmabuf, iova_ptr) == 24, "dmabuf.iova_ptr");
NKV_KMOD_ASSERT(offsetof(struct nkv_kmod_dmabuf, handle) == 40, "dmabuf.handle");

/* 'N' 0xa0-0xaf: free in Documentation/userspace-api/ioctl/ioctl-number.rst. */
#define NKV_IOC_MAGIC 'N'
#define NKV_IOC_INFO _IOR(NKV_IOC_MAGIC, 0xa0, struct nkv_kmod_info)
#define NKV_IOC_MAP _IOWR(NKV_IOC_MAGIC, 0xa1, struct nkv_kmod_map)
#define NKV_IOC_UNMAP _IOW(NKV_IOC_MAGIC, 0xa2, struct nkv_kmod_unmap)
#define NKV_IOC_DMABUF_IMPORT _IOWR(NKV_IOC_MAGIC, 0xa3, struct nkv_kmod_dmabuf)

#endif /* NKV_KMOD_H */
