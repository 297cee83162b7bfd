/* SPDX-License-Identifier: MIT */
/*
 * gpu_modes.c - which memory-mode bits a real GPU honours, per transport
 * (docs/gpu.md has the same table). Every refusal says why; none falls
 * back to host RAM. Without a GPU (the emulated runtime) every bit is
 * honoured by the device arena in host RAM, and the library says so.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "host/gpu.h"
#include "nkv_host.h"

/* Why bit @bit cannot be honoured, or NULL when it can. */
static const char *nkv_h_gpu_refusal(const struct nkv_gpu_caps *caps, int pcie, uint32_t bit)
{
	switch (bit) {
	case NKV_MEM_SQ:
	case NKV_MEM_CQ:
		return pcie ? "the controller would DMA the ring in GPU memory: that needs a "
			      "peer-to-peer dma-buf import in nkv.ko, which this build lacks"
			    : "the controller is another process (vfio-user): it cannot map "
			      "GPU memory to read the SQ or write the CQ";
	case NKV_MEM_DB:
		return caps->host_maps_vram
			       ? "a shadow doorbell page in GPU memory the forwarder could map "
				 "(large BAR) is not built yet: no AMD GPU has proven it"
			       : "the doorbell forwarder would poll a shadow page in GPU memory, "
				 "and this GPU gives user space no CPU mapping of its memory";
	case NKV_MEM_DATA:
		return pcie ? "values in GPU memory over PCIe need a peer-to-peer dma-buf "
			      "import in nkv.ko, which this build lacks"
			    : "values in GPU memory over vfio-user need a target that reaches "
			      "them by DMA messages, which this build lacks";
	default:
		return "unknown memory-mode bit";
	}
}

int nkv_h_gpu_mode_check(const struct nkv_gpu_caps *caps, const char *transport,
			 uint32_t mode, char *why, size_t whylen)
{
	int pcie = transport && !strcmp(transport, "pcie");
	uint32_t bit;

	if (mode & ~NKV_MEM_ALL) {
		snprintf(why, whylen, "memory mode %#x has bits outside 0xf", mode);
		return -EINVAL;
	}
	if (caps->emulated)
		return 0;
	for (bit = 1; bit <= NKV_MEM_DATA; bit <<= 1) {
		if (mode & bit) {
			snprintf(why, whylen, "memory-mode bit %#x on %s over %s: %s", bit,
				 caps->name, transport ? transport : "?",
				 nkv_h_gpu_refusal(caps, pcie, bit));
			return -EOPNOTSUPP;
		}
	}
	return 0;
}
