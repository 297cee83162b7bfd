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

/*
 * Values in VRAM over pcie: nkv.ko imports a dma-buf of VRAM and the pcie
 * transport maps one (struct nkv_dmamem.dmabuf), proven in the VM with an
 * exporter of a PCIe BAR; what is missing is the runtime's side, VRAM
 * exported as a dma-buf, and a GPU to prove the whole path.
 */
static const char *nkv_h_gpu_data_pcie(const struct nkv_gpu_caps *caps)
{
	if (!strcmp(caps->name, "hip"))
		return "values in GPU memory over PCIe: nkv.ko and the pcie transport import "
		       "a dma-buf of VRAM, but this build does not yet export VRAM as one "
		       "(hsa_amd_portable_export_dmabuf) and no GPU has proven the path";
	return "values in GPU memory over PCIe: nkv.ko and the pcie transport import a "
	       "dma-buf of VRAM, but this build does not yet export VRAM as one "
	       "(cuMemGetHandleForAddressRange, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD) and "
	       "no GPU has proven the path";
}

/* Why bit @bit cannot be honoured, or NULL when it can. */
static const char *nkv_h_gpu_refusal(const struct nkv_gpu_caps *caps, int pcie, uint32_t bit)
{
	switch (bit) {
	case NKV_MEM_SQ:
	case NKV_MEM_CQ:
		return pcie ? "the controller would DMA the ring in GPU memory: nkv.ko imports "
			      "VRAM as a dma-buf, but the library places no ring there yet"
			    : "the controller is another process (vfio-user): it cannot map "
			      "GPU memory to read the SQ or write the CQ";
	case NKV_MEM_DB:
		return caps->host_maps_vram
			       ? "a shadow doorbell page in GPU memory the forwarder could map "
				 "(large BAR) is not built yet: no AMD GPU has proven it"
			       : "the doorbell forwarder would poll a shadow page in GPU memory, "
				 "and this GPU gives user space no CPU mapping of its memory";
	case NKV_MEM_DATA:
		return pcie ? nkv_h_gpu_data_pcie(caps)
			    : "values in GPU memory over vfio-user travel by DMA messages "
			      "(NKV_CTRL_VALUES_BY_MESSAGES, proven on the emulated arena), "
			      "but no GPU memory source copying with the runtime is written "
			      "yet and no GPU has proven it";
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
