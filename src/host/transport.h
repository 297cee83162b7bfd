/* SPDX-License-Identifier: MIT */
/*
 * transport.h - how the host library reaches a controller (library-private).
 *
 * Each transport (vfio-user, pcie) fills one table of operations; the
 * controller bring-up, queue creation and memory placement above it are
 * written once. A transport gives register access, the doorbell page when
 * the controller offers it as memory, and DMA registration of host memory.
 */
#ifndef NKV_HOST_TRANSPORT_H
#define NKV_HOST_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

struct nkv_tr;

/*
 * A block of memory the controller may DMA to/from. The library allocates
 * it (memfd for host RAM; the device arena or a dma-buf for "VRAM") and the
 * transport registers it and fills the addresses the controller must use.
 */
struct nkv_dmamem {
	void *va;		/* CPU (or device-visible) address */
	size_t len;		/* multiple of the 4 KiB page */
	int fd;			/* backing fd (memfd / dma-buf), -1 if none */
	uint64_t fd_offset;	/* offset of va within fd */
	/* fd is a dma-buf of device memory (VRAM from the GPU runtime): the
	 * pcie transport imports [fd_offset, fd_offset + len) of it for
	 * peer-to-peer DMA and va is not used; vfio-user refuses it. */
	int dmabuf;
	/* Filled by the transport's dma_map: the controller-visible address
	 * of page i is iova[i] (npages entries); contiguous is set when
	 * iova[i] == iova[0] + i * 4096 for all i. */
	uint64_t *iova;
	size_t npages;
	int contiguous;
	void *tr_priv;		/* the transport's */
	/*
	 * Memory the controller's process cannot map (a GPU's, or the
	 * emulated arena in its "messages only" mode): registered without an
	 * fd, and the controller reaches it through the transport's messages
	 * (vfio-user DMA_READ/WRITE), which the transport serves with copy
	 * when set, else memcpy at va. copy moves len bytes between host
	 * memory and byte off of this block: to_mem 1 writes the block and
	 * returns only once the bytes are visible to device code (a GPU
	 * runtime's synchronous copy), 0 reads it. 0 or a negative errno.
	 * Transports that can only share memory refuse it (-EOPNOTSUPP).
	 */
	int by_messages;
	int (*copy)(void *ctx, const struct nkv_dmamem *m, size_t off, void *host,
		    size_t len, int to_mem);
	void *copy_ctx;
	/* What the controller may do with it: NKV_DMAMEM_READ / _WRITE
	 * (0: both). A transport that can say so to the controller does
	 * (vfio-user DMA_MAP flags); the library checks it either way. */
	uint32_t prot;
	uint64_t src_priv;	/* the memory source's (gpu_mem.c: the allocation) */
};
#define NKV_DMAMEM_READ 0x1u	/* the controller reads it (Store data) */
#define NKV_DMAMEM_WRITE 0x2u	/* the controller writes it (Retrieve data) */

struct nkv_transport_ops {
	const char *name;	/* URI scheme: "vfio-user", "pcie" */
	/* addr is the URI without "scheme:". 0 or a negative errno; errors
	 * also leave a one-line reason in err (errlen bytes). */
	int (*open)(const char *addr, struct nkv_tr **out, char *err, size_t errlen);
	void (*close)(struct nkv_tr *tr);
	/* BAR0 register access (size 4 or 8). */
	int (*reg_read)(struct nkv_tr *tr, uint32_t off, unsigned size, uint64_t *val);
	int (*reg_write)(struct nkv_tr *tr, uint32_t off, uint64_t val, unsigned size);
	/* Pointer to BAR0 + 0x1000 mapped in this process, covering len
	 * bytes of doorbells, or NULL when the controller offers none (the
	 * library then runs a doorbell forwarder over reg_write). */
	volatile uint32_t *(*doorbells)(struct nkv_tr *tr, size_t *len);
	int (*dma_map)(struct nkv_tr *tr, struct nkv_dmamem *m);
	int (*dma_unmap)(struct nkv_tr *tr, struct nkv_dmamem *m);
	/* Is the controller still reachable? 0, or a negative errno. Cheap
	 * and callable from any thread: the watch (watch.c) calls it every
	 * few milliseconds, so it sends no message. */
	int (*alive)(struct nkv_tr *tr);
	/* 1 when a register read is a load from a mapping (pcie): cheap, no
	 * message, safe from any thread, so the watch reads CSTS too; 0 when
	 * each is a message a stalled controller would hold (vfio-user). */
	int mapped_regs;
	/* 1 when dma_map takes any page-aligned memory of this process by
	 * its address (pcie pins it); 0 when the controller must map an fd
	 * (vfio-user), so memory without one goes by messages or not at all. */
	int maps_va;
};

extern const struct nkv_transport_ops nkv_transport_vfio_user;
extern const struct nkv_transport_ops nkv_transport_pcie;
/* tcp:HOST:PORT[/NQN]: a local controller forwarding to a remote NVMe/TCP
 * one, reached over vfio-user (tcp_local.c). What crosses the network,
 * for nkv_qpair_get_info: */
extern const struct nkv_transport_ops nkv_transport_tcp;
const char *nkv_h_tcp_desc(const struct nkv_tr *tr);

#endif /* NKV_HOST_TRANSPORT_H */
