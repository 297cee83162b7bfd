/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * nkv_kmod.h - user-space interface of kmod/nkv.ko (the "pcie" transport).
 *
 * Shared by the kernel module and the host library. Every field is __u64 or
 * __u32 (or a char array for a name), naturally aligned, with no pointers (user addresses travel as
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
 * controller is quiesced; NKV_KMOD_INFO_IOMMU means a translating domain.
 * 3: NKV_IOC_DMABUF_IMPORT implemented, its structure reports the
 * exporter's name. */
#define NKV_KMOD_ABI 3

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
 * NKV_IOC_DMABUF_IMPORT: import [offset, offset + len) of a dma-buf (a
 * GPU's VRAM, another device's BAR) for the controller to reach
 * peer-to-peer, with the same output as NKV_IOC_MAP: one device address
 * per 4 KiB unit into iova_ptr, a handle for NKV_IOC_UNMAP. The module
 * attaches dynamically with peer-to-peer allowed, pins the buffer and
 * takes the addresses from the DMA side of the exporter's scatterlist.
 * It refuses memory the exporter backs with system RAM (struct pages that
 * are not PCI P2PDMA pages): the caller asked for device memory.
 * exporter receives the exporter's name (dma_buf->exp_name, e.g.
 * "amdgpu"), so the caller can tell whose memory it got. Like NKV_IOC_MAP,
 * UNMAP drops the handle and the buffer stays attached until the
 * controller is quiesced (close, reset, unbind). Should the exporter move
 * or revoke the buffer anyway, the module stops the controller first and
 * the owner's calls return EIO.
 * Errors: EINVAL (alignment, zero length, count mismatch, unknown flags,
 * range past the buffer's end, fd not a dma-buf), EBADF (not an open fd),
 * EOPNOTSUPP (the exporter refused a peer-to-peer attachment or handed
 * back system memory: the kernel log names the exporter), E2BIG (more
 * than NKV_KMOD_MAX_IMPORTS live and retired imports), EPERM, ENODEV, EIO
 * as for NKV_IOC_MAP, or what the exporter's map returned.
 */
struct nkv_kmod_dmabuf {
	__u32 fd;		/* in: dma-buf file descriptor */
	__u32 flags;		/* in: 0; out: NKV_KMOD_MAP_* */
	__u64 offset;		/* in: byte offset into the dma-buf, 4 KiB aligned */
	__u64 len;		/* in: bytes, 4 KiB multiple */
	__u64 iova_ptr;		/* in: user address of __u64[npages] */
	__u64 npages;		/* in: len / 4096 */
	__u64 handle;		/* out: for NKV_IOC_UNMAP */
	char exporter[32];	/* out: exporter's name, NUL-terminated */
};

/* out: the addresses are device memory reached peer-to-peer. */
#define NKV_KMOD_MAP_P2P (1u << 1)

/* Imports one open file may hold, live and retired together. */
#define NKV_KMOD_MAX_IMPORTS 256

NKV_KMOD_ASSERT(sizeof(struct nkv_kmod_dmabuf) == 80, "nkv_kmod_dmabuf size");
NKV_KMOD_ASSERT(offsetof(struct nkv_kmod_dmabuf, offset) == 8, "dmabuf.offset");
NKV_KMOD_ASSERT(offsetof(struct nkv_kmod_dmabuf, iova_ptr) == 24, "dmabuf.iova_ptr");
NKV_KMOD_ASSERT(offsetof(struct nkv_kmod_dmabuf, handle) == 40, "dmabuf.handle");
NKV_KMOD_ASSERT(offsetof(struct nkv_kmod_dmabuf, exporter) == 48, "dmabuf.exporter");

/* 'N' 0xa0-0xaf: free in Documentation/userspace-api/ioctl/ioctl-number.rst. */
#define NKV_IOC_MAGIC 'N'
#define NKV_IOC_INFO _IOR(NKV_IOC_MAGIC, 0xa0, struct nkv_kmod_info)
#define NKV_IOC_MAP _IOWR(NKV_IOC_MAGIC, 0xa1, struct nkv_kmod_map)
#define NKV_IOC_UNMAP _IOW(NKV_IOC_MAGIC, 0xa2, struct nkv_kmod_unmap)
#define NKV_IOC_DMABUF_IMPORT _IOWR(NKV_IOC_MAGIC, 0xa3, struct nkv_kmod_dmabuf)

#endif /* NKV_KMOD_H */
