/* SPDX-License-Identifier: MIT */
/*
 * gpu.h - the GPU runtime the host library was built with (library-
 * private): what it asks of CUDA or HIP to hand queue pairs to device
 * code. One table of operations per runtime, chosen at build time
 * (make GPU=cuda | GPU=hip); the plain build has the emulated one
 * (gpu_emul.c), in which "device memory" is host memory and every copy a
 * memcpy, so device queue pairs run on the cpu engine in CI exactly as
 * they would on a GPU, minus the GPU.
 *
 * Addresses device code uses are uint64_t (as in struct nkv_dev_qp).
 */
#ifndef NKV_HOST_GPU_H
#define NKV_HOST_GPU_H

#include <stddef.h>
#include <stdint.h>

/* What the platform offers; decides which memory-mode bits are honoured
 * (nkv_h_gpu_mode_check, docs/gpu.md). */
struct nkv_gpu_caps {
	const char *name;	/* "cuda", "hip", "emulated" */
	int emulated;		/* no GPU: device memory is host RAM */
	int host_maps_vram;	/* this process can map device memory for CPU
				 * access (AMD large BAR): 1 / 0 */
	int dmabuf_export;	/* device memory can be exported as a dma-buf
				 * (export_dmabuf works): 1 / 0 */
};

struct nkv_gpu_ops {
	const char *name;
	/* Pick the device (NKV_GPU_DEVICE, default 0) and read its caps.
	 * 0, -ENODEV (no GPU / no driver), or -EIO; why in err. */
	int (*init)(struct nkv_gpu_caps *caps, char *err, size_t errlen);
	/* Make host memory [va, va+len) reachable from device code (page
	 * locked, mapped); @iomem for a device BAR (a PCIe doorbell page).
	 * The device address in *dev. */
	int (*host_register)(void *va, size_t len, int iomem, uint64_t *dev);
	void (*host_unregister)(void *va);
	/* Device memory, zeroed. */
	int (*dev_alloc)(size_t len, uint64_t *dev);
	void (*dev_free)(uint64_t dev);
	/* Copies between host and device memory (not while a kernel uses it). */
	int (*to_dev)(uint64_t dev, const void *src, size_t len);
	int (*from_dev)(void *dst, uint64_t dev, size_t len);
	/* Device memory [dev, dev + len) (page aligned) as a dma-buf fd the
	 * caller closes, for nkv.ko to import (peer-to-peer); NULL where the
	 * runtime has no such export (caps.dmabuf_export 0). 0 or -errno. */
	int (*export_dmabuf)(uint64_t dev, size_t len, int *fd);
};

/* The runtime this libnkv was built with (never NULL). */
const struct nkv_gpu_ops *nkv_h_gpu(void);

/*
 * May memory-mode @mode be honoured on a platform with @caps over the
 * transport named @transport ("vfio-user", "pcie"), the controller
 * connected with @ctrl_flags (NKV_CTRL_*)? 0, or -EOPNOTSUPP with the
 * reason in why (whylen bytes). The table is docs/gpu.md's.
 */
int nkv_h_gpu_mode_check(const struct nkv_gpu_caps *caps, const char *transport,
			 uint32_t mode, uint32_t ctrl_flags, char *why, size_t whylen);

struct nkv_h_memsrc;
/* GPU memory from the runtime @g as a memory source (gpu_mem.c): values
 * reached by messages the library serves with the runtime's copies
 * (@by_messages, vfio-user), or exported as dma-bufs (pcie); @emulated:
 * the runtime's device memory is host memory. NULL out of memory. */
struct nkv_h_memsrc *nkv_h_memsrc_gpu(const struct nkv_gpu_ops *g, int by_messages,
				      int emulated);

#endif /* NKV_HOST_GPU_H */
