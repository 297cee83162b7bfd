/* SPDX-License-Identifier: MIT */
/*
 * gpu_emul.c - the GPU runtime of a build without one: device memory is
 * host memory, registration gives the host address, copies are memcpy.
 * The cpu engine then runs device queue pairs (nkv_qpair_create_dev) through
 * the same host-library paths a GPU runtime takes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/gpu.h"

static int emul_init(struct nkv_gpu_caps *caps, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	caps->name = "emulated";
	caps->emulated = 1;
	caps->host_maps_vram = 1;
	caps->dmabuf_export = 0;
	return 0;
}

static int emul_host_register(void *va, size_t len, int iomem, uint64_t *dev)
{
	(void)len;
	(void)iomem;
	*dev = (uint64_t)(uintptr_t)va;
	return 0;
}

static void emul_host_unregister(void *va)
{
	(void)va;
}

static int emul_dev_alloc(size_t len, uint64_t *dev)
{
	void *p = aligned_alloc(256, (len + 255u) & ~(size_t)255u);

	if (!p)
		return -ENOMEM;
	memset(p, 0, len);
	*dev = (uint64_t)(uintptr_t)p;
	return 0;
}

static void emul_dev_free(uint64_t dev)
{
	free((void *)(uintptr_t)dev);
}

static int emul_to_dev(uint64_t dev, const void *src, size_t len)
{
	memcpy((void *)(uintptr_t)dev, src, len);
	return 0;
}

static int emul_from_dev(void *dst, uint64_t dev, size_t len)
{
	memcpy(dst, (const void *)(uintptr_t)dev, len);
	return 0;
}

static const struct nkv_gpu_ops emul_ops = {
	.name = "emulated",
	.init = emul_init,
	.host_register = emul_host_register,
	.host_unregister = emul_host_unregister,
	.dev_alloc = emul_dev_alloc,
	.dev_free = emul_dev_free,
	.to_dev = emul_to_dev,
	.from_dev = emul_from_dev,
};

const struct nkv_gpu_ops *nkv_h_gpu(void)
{
	return &emul_ops;
}
