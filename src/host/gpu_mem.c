/* SPDX-License-Identifier: MIT */
/*
 * gpu_mem.c - GPU memory from the runtime as a memory source (memory mode
 * 0x8 on a real GPU; dmamem.c has host RAM and the emulated arena). Two
 * ways the controller reaches it:
 *  - by messages (vfio-user, NKV_CTRL_VALUES_BY_MESSAGES): registered
 *    without an fd; the library's socket thread serves the controller's
 *    DMA_READ / DMA_WRITE with the runtime's synchronous copies (a
 *    host-to-device copy returns once the bytes are visible to kernels);
 *  - as a dma-buf (pcie): the runtime exports the allocation and nkv.ko
 *    imports it for peer-to-peer DMA.
 * Its addresses are device pointers: the host never dereferences them.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "host/host.h"

struct nkv_h_gpumem {
	struct nkv_h_memsrc src;	/* first: the ops take this */
	const struct nkv_gpu_ops *g;
};

static int nkv_h_gpumem_alloc(struct nkv_h_memsrc *s, size_t len, struct nkv_dmamem *m)
{
	struct nkv_h_gpumem *gm = (struct nkv_h_gpumem *)s;
	uint64_t base = 0, dev;
	/* Runtimes align to 256 bytes; the controller takes whole pages. */
	int rc = gm->g->dev_alloc(len + NKV_PAGE_SIZE, &base);

	if (rc)
		return rc;
	dev = (base + NKV_PAGE_SIZE - 1u) & ~(uint64_t)(NKV_PAGE_SIZE - 1u);
	m->src_priv = base;
	m->va = (void *)(uintptr_t)dev;
	m->len = len;
	m->fd = -1;
	m->fd_offset = 0;
	m->dmabuf = 0;
	/* The emulated runtime's device memory is host memory: pinned as it
	 * is. A GPU's is exported. */
	if (!s->by_messages && !s->emulated) {
		rc = gm->g->export_dmabuf ? gm->g->export_dmabuf(dev, len, &m->fd) : -EOPNOTSUPP;
		if (rc) {
			gm->g->dev_free(base);
			return rc;
		}
		m->dmabuf = 1;
	}
	return 0;
}

static void nkv_h_gpumem_free(struct nkv_h_memsrc *s, struct nkv_dmamem *m)
{
	struct nkv_h_gpumem *gm = (struct nkv_h_gpumem *)s;

	if (m->fd >= 0)
		close(m->fd);
	gm->g->dev_free(m->src_priv);
}

static void nkv_h_gpumem_destroy(struct nkv_h_memsrc *s)
{
	free(s);
}

/* Bytes between host memory and byte @off of device memory @m with the
 * runtime @ctx (struct nkv_gpu_ops): a message's copy. */
int nkv_h_gpu_copy(void *ctx, const struct nkv_dmamem *m, size_t off, void *host, size_t len,
		   int to_mem)
{
	const struct nkv_gpu_ops *g = ctx;
	uint64_t dev = (uint64_t)(uintptr_t)m->va + off;

	return to_mem ? g->to_dev(dev, host, len) : g->from_dev(host, dev, len);
}

/* The transport's copy for a message: @ctx is the source. */
static int nkv_h_gpumem_copy(void *ctx, const struct nkv_dmamem *m, size_t off, void *host,
			     size_t len, int to_mem)
{
	return nkv_h_gpu_copy((void *)((struct nkv_h_gpumem *)ctx)->g, m, off, host, len, to_mem);
}

static const struct nkv_h_memsrc_ops nkv_h_gpumem_ops = {
	.name = "gpu",
	.alloc = nkv_h_gpumem_alloc,
	.free = nkv_h_gpumem_free,
	.destroy = nkv_h_gpumem_destroy,
	.copy = nkv_h_gpumem_copy,
};

struct nkv_h_memsrc *nkv_h_memsrc_gpu(const struct nkv_gpu_ops *g, int by_messages,
				      int emulated)
{
	struct nkv_h_gpumem *gm = calloc(1, sizeof(*gm));

	if (!gm)
		return NULL;
	gm->src.ops = &nkv_h_gpumem_ops;
	gm->src.is_device = 1;
	gm->src.emulated = emulated;
	gm->src.by_messages = by_messages;
	gm->g = g;
	return &gm->src;
}
