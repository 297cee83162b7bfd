/* SPDX-License-Identifier: MIT */
/*
 * placement.c - the memory-mode mask: which memory source each structure
 * comes from, and which doorbell path device code uses.
 *
 *   bit 0x1 SQ rings, 0x2 CQ rings, 0x4 the doorbell shadow page,
 *   0x8 value buffers: set = device memory ("VRAM"), clear = host RAM.
 *
 * The GPU runtime (gpu.h) is initialised here. On a real GPU each mode bit
 * is honoured or refused by the table in gpu_modes.c (docs/gpu.md), never
 * quietly turned into host RAM. Without a GPU (a build without a runtime,
 * or a runtime that found none), device memory is the emulated arena
 * (dmamem.c), said once at connect. Doorbells: a mapped doorbell page with bit 0x4
 * clear is written directly by device code; otherwise device code writes
 * a shadow page (device memory with 0x4, else host RAM) and the doorbell
 * forwarder copies every change to the controller, through the mapped
 * page when there is one, else as register writes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"

/* Virtual size of the emulated arena; sparse, so only use costs memory. */
#define NKV_H_ARENA_DEFAULT (4ull << 30)

struct nkv_h_memsrc *nkv_h_place(struct nkv_ctrl *c, uint32_t mode, uint32_t bit)
{
	if (bit == NKV_MEM_DATA && c->dev_msg && (mode & bit))
		return c->dev_msg;
	return (mode & bit) ? c->dev : c->host;
}

/* Device memory for @mode: refused on a real GPU (gpu_modes.c), else the
 * emulated arena, made on first need (connect, or a queue pair's own
 * memory mode). Caller holds c->lock or is the bring-up. */
int nkv_h_place_dev(struct nkv_ctrl *c, uint32_t mode, char *err, size_t errlen)
{
	const char *e = getenv("NKV_DEVICE_ARENA_MB");
	size_t arena = e && atol(e) > 0 ? (size_t)atol(e) << 20 : NKV_H_ARENA_DEFAULT;
	char why[256];
	int rc;

	if (!mode)
		return 0;
	if (!c->gpu_rc && !c->gpu_caps.emulated) {
		/* A real GPU: the table decides; it honours values (0x8)
		 * alone, in GPU memory reached by messages (vfio-user) or
		 * exported as a dma-buf (pcie). */
		rc = nkv_h_gpu_mode_check(&c->gpu_caps, c->ops->name, mode, c->flags, why,
					  sizeof(why));
		if (rc) {
			nkv_h_err(err, errlen, "%s", why);
			return rc;
		}
		if (!c->dev) {
			c->dev = nkv_h_memsrc_gpu(c->gpu, !c->ops->maps_va, 0);
			if (!c->dev)
				return -ENOMEM;
			nkv_h_log("memory-mode %#x: values in %s GPU memory, %s", mode,
				  c->gpu_caps.name, c->ops->maps_va
				  ? "exported as a dma-buf for nkv.ko (peer-to-peer)"
				  : "reached by DMA messages served with the runtime's copies");
		}
		return 0;
	}
	if (!c->dev) {
		c->dev = nkv_h_memsrc_arena(arena);
		if (!c->dev) {
			nkv_h_err(err, errlen, "memory-mode %#x: cannot create the device arena (%zu MiB)",
				  mode, arena >> 20);
			return -ENOMEM;
		}
		c->info.vram_is_emulated = c->dev->emulated;
		nkv_h_log("memory-mode %#x: no GPU (%s), device arena in host memory stands in for VRAM",
			  mode, c->gpu_rc ? c->gpu_err : "built without a GPU runtime");
	}
	if ((c->flags & NKV_CTRL_VALUES_BY_MESSAGES) && (mode & NKV_MEM_DATA) && !c->dev_msg) {
		c->dev_msg = nkv_h_memsrc_arena_by_messages(arena);
		if (!c->dev_msg) {
			nkv_h_err(err, errlen, "values by messages: cannot create the device arena");
			return -ENOMEM;
		}
		nkv_h_log("values by messages: the controller reaches the value arena only through DMA_READ/WRITE messages");
	}
	return 0;
}

int nkv_h_place_init(struct nkv_ctrl *c, char *err, size_t errlen)
{
	c->host = nkv_h_memsrc_host();
	if (!c->host) {
		nkv_h_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->info.memory_mode = c->mode;
	c->gpu = nkv_h_gpu();
	c->gpu_rc = c->gpu->init(&c->gpu_caps, c->gpu_err, sizeof(c->gpu_err));
	snprintf(c->info.gpu, sizeof(c->info.gpu), "%s", c->gpu->name);
	c->info.gpu_error = c->gpu_rc;
	if (c->gpu_rc)
		nkv_h_trace("%s runtime: %s", c->gpu->name, c->gpu_err);
	return nkv_h_place_dev(c, c->mode, err, errlen);
}

void nkv_h_place_fini(struct nkv_ctrl *c)
{
	if (c->dev)
		c->dev->ops->destroy(c->dev);
	if (c->dev_msg)
		c->dev_msg->ops->destroy(c->dev_msg);
	c->dev_msg = NULL;
	if (c->host)
		c->host->ops->destroy(c->host);
	c->dev = c->host = NULL;
}

/* The forwarder's output: the mapped page, or a register write. Runs on
 * the forwarder thread (and on flushing threads), so it touches no
 * controller state but the per-queue counters. */
static int nkv_h_fwd_write(void *arg, uint32_t off, uint32_t val)
{
	struct nkv_ctrl *c = arg;
	uint32_t idx = (off - NKV_REG_DBS) / c->db_stride;
	int rc = 0;

	/* An unbound pcie device's mapping is gone: a store would SIGBUS. */
	if (__atomic_load_n(&c->gone, __ATOMIC_ACQUIRE))
		return -ENOTCONN;
	if (c->dbmap)
		__atomic_store_n(&c->dbmap[(off - NKV_REG_DBS) / 4u], val, __ATOMIC_RELEASE);
	else
		rc = c->ops->reg_write(c->tr, off, val, 4);
	if (!rc)
		nkv_h_stats_doorbell(c, idx, val);
	return rc;
}

int nkv_h_doorbells_init(struct nkv_ctrl *c, char *err, size_t errlen)
{
	struct nkv_dbfwd_opts fo = { .size = sizeof(fo) };
	size_t need = (size_t)2 * (c->granted + 1) * c->db_stride;
	struct nkv_h_memsrc *src = nkv_h_place(c, c->mode, NKV_MEM_DB);
	int rc;

	if (c->dbmap && c->dbmap_len >= need && !(c->mode & NKV_MEM_DB)) {
		c->info.doorbells_mapped = 1;
		return 0;
	}
	rc = nkv_h_buf_alloc(c, src, need, &c->shadow);
	if (rc) {
		nkv_h_err(err, errlen, "cannot allocate the doorbell shadow page: %s", strerror(-rc));
		return rc;
	}
	c->shadow_va = c->shadow.m.va;
	fo.shadow = c->shadow_va;
	fo.len = need;
	fo.write = nkv_h_fwd_write;
	fo.arg = c;
	rc = nkv_dbfwd_start(&fo, &c->fwd);
	if (rc) {
		nkv_h_err(err, errlen, "cannot start the doorbell forwarder: %s", strerror(-rc));
		return rc;
	}
	nkv_h_trace("doorbells: shadow page in %s memory, forwarded %s",
		    src->ops->name, c->dbmap ? "to the mapped page" : "as register writes");
	return 0;
}

void nkv_h_doorbells_fini(struct nkv_ctrl *c)
{
	if (c->fwd)
		nkv_dbfwd_stop(c->fwd);
	c->fwd = NULL;
	c->shadow_va = NULL;
	nkv_h_buf_free(c, &c->shadow);
}

volatile uint32_t *nkv_h_db_addr(struct nkv_ctrl *c, uint32_t idx)
{
	volatile uint32_t *base = c->shadow_va ? c->shadow_va : c->dbmap;

	return base + (size_t)idx * c->db_stride / 4u;
}

int nkv_h_db_flush(struct nkv_ctrl *c)
{
	return c->fwd ? nkv_dbfwd_flush(c->fwd) : 0;
}
