/* SPDX-License-Identifier: MIT */
/*
 * gpu_modes.c - which memory-mode bits a real GPU honours, per transport
 * (docs/gpu.md has the same table): values (0x8) in GPU memory, by DMA
 * messages over vfio-user or as a dma-buf over pcie where the runtime
 * exports one; the rings and the doorbell shadow nowhere yet. Every
 * refusal says why; none falls back to host RAM. Without a GPU (the emulated runtime) every bit is
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
 * exporter of a PCIe BAR; the runtime exports VRAM as one where it can
 * (caps.dmabuf_export: CUDA's cuMemGetHandleForAddressRange). No GPU has
 * proven the whole path yet.
 */
static const char *nkv_h_gpu_data_pcie(const struct nkv_gpu_caps *caps)
{
	if (caps->dmabuf_export)
		return NULL;
	if (!strcmp(caps->name, "hip"))
		return "values in GPU memory over PCIe: nkv.ko and the pcie transport import "
		       "a dma-buf of VRAM, but ROCm 5.2 cannot export VRAM as one "
		       "(no hsa_amd_portable_export_dmabuf)";
	return "values in GPU memory over PCIe: nkv.ko and the pcie transport import a "
	       "dma-buf of VRAM, but this driver does not export VRAM as one "
	       "(cuMemGetHandleForAddressRange, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD)";
}

/* Why bit @bit cannot be honoured, or NULL when it can. */
static const char *nkv_h_gpu_refusal(const struct nkv_gpu_caps *caps, int pcie, uint32_t bit,
				     uint32_t ctrl_flags)
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
		if (pcie)
			return nkv_h_gpu_data_pcie(caps);
		return ctrl_flags & NKV_CTRL_VALUES_BY_MESSAGES
			       ? NULL
			       : "values in GPU memory over vfio-user travel only by DMA messages "
				 "the library serves with the runtime's copies: connect with "
				 "NKV_CTRL_VALUES_BY_MESSAGES (nkv-bench --values-by-messages)";
	default:
		return "unknown memory-mode bit";
	}
}

int nkv_h_gpu_mode_check(const struct nkv_gpu_caps *caps, const char *transport,
			 uint32_t mode, uint32_t ctrl_flags, char *why, size_t whylen)
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
		const char *no = mode & bit ? nkv_h_gpu_refusal(caps, pcie, bit, ctrl_flags) : NULL;

		if (no) {
			snprintf(why, whylen, "memory-mode bit %#x on %s over %s: %s", bit,
				 caps->name, transport ? transport : "?", no);
			return -EOPNOTSUPP;
		}
	}
	return 0;
}
