/* SPDX-License-Identifier: MIT */
/*
 * proto.h - vfio-user wire format (protocol 0.1), shared by nkv-target's
 * server and the host library's client.
 *
 * Source: the vfio-user protocol specification (QEMU
 * docs/interop/vfio-user.rst). Every message is a 16-byte header and a
 * command-specific payload, host endian, on an AF_UNIX stream socket;
 * file descriptors travel as SCM_RIGHTS ancillary data. Region, IRQ and
 * capability-chain structures are the kernel's <linux/vfio.h> ones, which
 * the protocol reuses; their layout is asserted here too.
 */
#ifndef NKV_VFU_PROTO_H
#define NKV_VFU_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <linux/vfio.h>

#include "nkv_wire.h"

#define NKV_VFU_MAJOR 0
#define NKV_VFU_MINOR 1

enum nkv_vfu_cmd {
	NKV_VFU_VERSION = 1,
	NKV_VFU_DMA_MAP = 2,
	NKV_VFU_DMA_UNMAP = 3,
	NKV_VFU_DEVICE_GET_INFO = 4,
	NKV_VFU_DEVICE_GET_REGION_INFO = 5,
	NKV_VFU_DEVICE_GET_REGION_IO_FDS = 6,
	NKV_VFU_DEVICE_GET_IRQ_INFO = 7,
	NKV_VFU_DEVICE_SET_IRQS = 8,
	NKV_VFU_REGION_READ = 9,
	NKV_VFU_REGION_WRITE = 10,
	NKV_VFU_DMA_READ = 11,
	NKV_VFU_DMA_WRITE = 12,
	NKV_VFU_DEVICE_RESET = 13,
	NKV_VFU_REGION_WRITE_MULTI = 15,
	NKV_VFU_DEVICE_FEATURE = 16,
	NKV_VFU_MIG_DATA_READ = 17,
	NKV_VFU_MIG_DATA_WRITE = 18,
};

/* Message header. flags: type[3:0] (0 command, 1 reply), no_reply[4],
 * error[5]; error is an errno, valid in a reply with the error bit. */
struct nkv_vfu_hdr {
	uint16_t msg_id;
	uint16_t cmd;
	uint32_t size;		/* whole message, header included */
	uint32_t flags;
	uint32_t error;
};
NKV_ASSERT_SIZE(struct nkv_vfu_hdr, 16);
NKV_ASSERT_OFF(struct nkv_vfu_hdr, msg_id, 0);
NKV_ASSERT_OFF(struct nkv_vfu_hdr, cmd, 2);
NKV_ASSERT_OFF(struct nkv_vfu_hdr, size, 4);
NKV_ASSERT_OFF(struct nkv_vfu_hdr, flags, 8);
NKV_ASSERT_OFF(struct nkv_vfu_hdr, error, 12);

#define NKV_VFU_TYPE_COMMAND 0u
#define NKV_VFU_TYPE_REPLY 1u
#define NKV_VFU_F_NO_REPLY (1u << 4)
#define NKV_VFU_F_ERROR (1u << 5)
static inline uint32_t nkv_vfu_type(uint32_t flags) { return (uint32_t)NKV_GET(flags, 0, 4); }

/* VERSION: major, minor, then optional NUL-terminated JSON. */
struct nkv_vfu_version {
	uint16_t major;
	uint16_t minor;
};
NKV_ASSERT_SIZE(struct nkv_vfu_version, 4);
NKV_ASSERT_OFF(struct nkv_vfu_version, minor, 2);

/* DMA_MAP request (the reply has no payload); an fd when mappable. */
struct nkv_vfu_dma_map {
	uint32_t argsz;
	uint32_t flags;		/* NKV_VFU_DMA_READ/WRITE */
	uint64_t offset;	/* into the fd */
	uint64_t addr;		/* IOVA */
	uint64_t size;
};
NKV_ASSERT_SIZE(struct nkv_vfu_dma_map, 32);
NKV_ASSERT_OFF(struct nkv_vfu_dma_map, flags, 4);
NKV_ASSERT_OFF(struct nkv_vfu_dma_map, offset, 8);
NKV_ASSERT_OFF(struct nkv_vfu_dma_map, addr, 16);
NKV_ASSERT_OFF(struct nkv_vfu_dma_map, size, 24);
#define NKV_VFU_DMA_F_READ (1u << 0)
#define NKV_VFU_DMA_F_WRITE (1u << 1)

/* DMA_UNMAP request and reply (the reply echoes the entry). */
struct nkv_vfu_dma_unmap {
	uint32_t argsz;
	uint32_t flags;		/* NKV_VFU_UNMAP_ALL; dirty bitmaps unsupported */
	uint64_t addr;
	uint64_t size;
};
NKV_ASSERT_SIZE(struct nkv_vfu_dma_unmap, 24);
NKV_ASSERT_OFF(struct nkv_vfu_dma_unmap, addr, 8);
NKV_ASSERT_OFF(struct nkv_vfu_dma_unmap, size, 16);
#define NKV_VFU_UNMAP_DIRTY_BITMAP (1u << 0)
#define NKV_VFU_UNMAP_ALL (1u << 1)

/* DEVICE_GET_INFO: the first 16 bytes of the kernel's vfio_device_info. */
struct nkv_vfu_device_info {
	uint32_t argsz;
	uint32_t flags;		/* VFIO_DEVICE_FLAGS_RESET | _PCI */
	uint32_t num_regions;
	uint32_t num_irqs;
};
NKV_ASSERT_SIZE(struct nkv_vfu_device_info, 16);
NKV_ASSERT_OFF(struct nkv_vfu_device_info, num_regions, 8);
NKV_ASSERT_OFF(struct nkv_vfu_device_info, num_irqs, 12);
NKV_STATIC_ASSERT(offsetof(struct vfio_device_info, num_irqs) == 12, "vfio_device_info prefix");

/* DEVICE_GET_REGION_INFO: struct vfio_region_info, then the capability
 * chain (struct vfio_info_cap_header; offsets from the info's start). */
NKV_ASSERT_SIZE(struct vfio_region_info, 32);
NKV_ASSERT_OFF(struct vfio_region_info, index, 8);
NKV_ASSERT_OFF(struct vfio_region_info, cap_offset, 12);
NKV_ASSERT_OFF(struct vfio_region_info, size, 16);
NKV_ASSERT_OFF(struct vfio_region_info, offset, 24);
NKV_ASSERT_SIZE(struct vfio_info_cap_header, 8);
NKV_ASSERT_OFF(struct vfio_info_cap_header, version, 2);
NKV_ASSERT_OFF(struct vfio_info_cap_header, next, 4);
NKV_ASSERT_SIZE(struct vfio_region_info_cap_sparse_mmap, 16);
NKV_ASSERT_OFF(struct vfio_region_info_cap_sparse_mmap, nr_areas, 8);
NKV_ASSERT_OFF(struct vfio_region_info_cap_sparse_mmap, areas, 16);
NKV_ASSERT_SIZE(struct vfio_region_sparse_mmap_area, 16);
#define NKV_VFU_SPARSE_MMAP_VERSION 1

/* DEVICE_GET_IRQ_INFO / DEVICE_SET_IRQS: the kernel structs. */
NKV_ASSERT_SIZE(struct vfio_irq_info, 16);
NKV_ASSERT_OFF(struct vfio_irq_info, count, 12);
NKV_ASSERT_SIZE(struct vfio_irq_set, 20);
NKV_ASSERT_OFF(struct vfio_irq_set, start, 12);
NKV_ASSERT_OFF(struct vfio_irq_set, count, 16);

/* REGION_READ / REGION_WRITE: this, then count data bytes (the read
 * reply and the write request carry data; the others do not). */
struct nkv_vfu_region_rw {
	uint64_t offset;
	uint32_t region;
	uint32_t count;
};
NKV_ASSERT_SIZE(struct nkv_vfu_region_rw, 16);
NKV_ASSERT_OFF(struct nkv_vfu_region_rw, region, 8);
NKV_ASSERT_OFF(struct nkv_vfu_region_rw, count, 12);

/* DMA_READ / DMA_WRITE, server to client, for a region mapped without an
 * fd: this, then count data bytes (the DMA_READ reply and the DMA_WRITE
 * request carry data; the others do not). */
struct nkv_vfu_dma_rw {
	uint64_t addr;		/* IOVA */
	uint64_t count;
};
NKV_ASSERT_SIZE(struct nkv_vfu_dma_rw, 16);
NKV_ASSERT_OFF(struct nkv_vfu_dma_rw, count, 8);

/* PCI region indices (VFIO_PCI_*_REGION_INDEX) we use. */
#define NKV_VFU_BAR0 VFIO_PCI_BAR0_REGION_INDEX
#define NKV_VFU_CONFIG VFIO_PCI_CONFIG_REGION_INDEX

/* Limits nkv uses on both sides. */
#define NKV_VFU_MAX_XFER (1u << 20)		/* max_data_xfer_size default */
#define NKV_VFU_MAX_MSG (NKV_VFU_MAX_XFER + 4096u)	/* any message, header included */
#define NKV_VFU_MAX_FDS 8			/* max_msg_fds */
#define NKV_VFU_MAX_DMA_MAPS 1024

/* PCI configuration space (type-0 header) offsets nkv-target fills. */
#define NKV_PCI_VENDOR_ID 0x00
#define NKV_PCI_DEVICE_ID 0x02
#define NKV_PCI_COMMAND 0x04
#define NKV_PCI_STATUS 0x06
#define NKV_PCI_REVISION 0x08
#define NKV_PCI_CLASS 0x09	/* prog-if, subclass, base class (3 bytes) */
#define NKV_PCI_HEADER_TYPE 0x0e
#define NKV_PCI_BAR0 0x10
#define NKV_PCI_SUBSYS_VENDOR 0x2c
#define NKV_PCI_SUBSYS_ID 0x2e
#define NKV_PCI_CAP_PTR 0x34
#define NKV_PCI_INTERRUPT_PIN 0x3d	/* 0: no INTx, 1..4: INTA#..INTD# */
#define NKV_PCI_STATUS_CAP_LIST (1u << 4)
/* Command register bits (PCI Local Bus 3.0 6.2.2; PCIe Base 7.5.1.1.3). */
#define NKV_PCI_CMD_MEMORY (1u << 1)		/* Memory Space Enable */
#define NKV_PCI_CMD_MASTER (1u << 2)		/* Bus Master Enable: may DMA */
#define NKV_PCI_CMD_PARITY (1u << 6)		/* Parity Error Response */
#define NKV_PCI_CMD_SERR (1u << 8)		/* SERR# Enable */
#define NKV_PCI_CMD_INTX_DISABLE (1u << 10)	/* Interrupt Disable: no INTx */
#define NKV_PCI_CLASS_NVME 0x010802u	/* mass storage, NVM, NVMe I/O */
#define NKV_PCI_CFG_SIZE 256u

#endif /* NKV_VFU_PROTO_H */
