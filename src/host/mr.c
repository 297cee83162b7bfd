/* SPDX-License-Identifier: MIT */
/*
 * mr.c - memory regions: the caller's memory registered once with the
 * controller's transport, its device-visible descriptor (struct
 * nkv_dev_mr, nkv_mr.h) and its PRP table.
 *
 * The PRP table lets a PRP-only controller read a long range of a region
 * without a per-command list: table page t holds the controller addresses
 * of data pages 511 t .. 511 t + 510 and chains to page t + 1 in its last
 * entry, so PRP2 may point into it at the entry after the range's first
 * page (nkv_runs_prp() says when the chain entries fall where the
 * controller expects them). It costs 8 bytes per 4 KiB page, 0.2 %.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "host/host.h"

struct nkv_mr {
	struct nkv_ctrl *c;
	struct nkv_h_buf b;	/* the region; src set: nkv_mem_alloc's */
	struct nkv_h_memsrc *gsrc;	/* nkv_mem_alloc of GPU memory: its source */
	int dmabuf_fd;		/* a registered GPU region's export, or -1 */
	struct nkv_h_buf tab;	/* its PRP table (3 pages or more) */
	struct nkv_dev_mr dev;	/* the host's view */
	uint32_t flags;		/* NKV_MEM_READ / _WRITE */
	int busy;		/* atomic: synchronous commands using it */
	/* A GPU runtime's copies (qpair_gpu.c's way): 0 where none. */
	uint64_t gpu_dev, gpu_pages, gpu_tab;
	void *gpu_reg;
	struct nkv_mr *next;
};

#define NKV_H_MR_FLAGS (NKV_MEM_READ | NKV_MEM_WRITE | NKV_MEM_MESSAGES | NKV_MEM_DEVICE)

static uint32_t nkv_h_mr_prot(uint32_t flags)
{
	uint32_t p = (flags & NKV_MEM_READ ? NKV_DMAMEM_READ : 0u) |
		     (flags & NKV_MEM_WRITE ? NKV_DMAMEM_WRITE : 0u);

	return p ? p : NKV_DMAMEM_READ | NKV_DMAMEM_WRITE;
}

/* The table: page t, entry j = data page 511 t + j; entry 511 chains. */
static int nkv_h_mr_table(struct nkv_mr *mr)
{
	size_t np = mr->b.m.npages, per = NKV_MR_TAB_PER_PAGE;
	size_t tp = (np + per - 1) / per, t, j;
	int rc;

	if (np < 3)
		return 0;	/* PRP1 and PRP2 carry every range */
	rc = nkv_h_buf_alloc(mr->c, mr->c->host, tp * NKV_PAGE_SIZE, &mr->tab);
	if (rc)
		return rc;
	for (t = 0; t < tp; t++) {
		uint64_t *e = (uint64_t *)((uint8_t *)mr->tab.m.va + t * NKV_PAGE_SIZE);

		for (j = 0; j < per && t * per + j < np; j++)
			e[j] = mr->b.m.iova[t * per + j];
		e[per] = t + 1 < tp ? mr->tab.m.iova[t + 1] : 0;
	}
	return 0;
}

/* Copies of the descriptor and its tables in device memory, and the
 * region reachable from kernels, where a GPU runtime (not the emulated
 * one) was built in. */
static int nkv_h_mr_gpu(struct nkv_mr *mr)
{
	struct nkv_ctrl *c = mr->c;
	const struct nkv_gpu_ops *g = c->gpu;
	struct nkv_dev_mr d = mr->dev;
	size_t np = mr->b.m.npages;
	uint64_t base = 0;
	int rc;

	if (c->gpu_rc || c->gpu_caps.emulated)
		return 0;
	/* GPU memory is where kernels reach it already; host memory is
	 * registered with the runtime. */
	if (mr->flags & NKV_MEM_DEVICE) {
		base = (uint64_t)(uintptr_t)mr->b.m.va;
	} else {
		rc = g->host_register(mr->b.m.va, mr->b.m.len, 0, &base);
		if (rc)
			return rc;
		mr->gpu_reg = mr->b.m.va;
	}
	d.addr = base;
	rc = g->dev_alloc(np * 8u, &mr->gpu_pages);
	if (!rc)
		rc = g->to_dev(mr->gpu_pages, mr->b.m.iova, np * 8u);
	if (!rc && mr->dev.tab_pages)
		rc = g->dev_alloc((size_t)mr->dev.tab_pages * 8u, &mr->gpu_tab);
	if (!rc && mr->dev.tab_pages)
		rc = g->to_dev(mr->gpu_tab, mr->tab.m.iova, (size_t)mr->dev.tab_pages * 8u);
	d.pages_addr = mr->gpu_pages;
	d.tab_addr = mr->gpu_tab;
	if (!rc)
		rc = g->dev_alloc(sizeof(d), &mr->gpu_dev);
	if (!rc)
		rc = g->to_dev(mr->gpu_dev, &d, sizeof(d));
	return rc;
}

static void nkv_h_mr_free(struct nkv_mr *mr)
{
	const struct nkv_gpu_ops *g = mr->c->gpu;

	if (mr->gpu_reg)
		g->host_unregister(mr->gpu_reg);
	if (mr->gpu_dev)
		g->dev_free(mr->gpu_dev);
	if (mr->gpu_pages)
		g->dev_free(mr->gpu_pages);
	if (mr->gpu_tab)
		g->dev_free(mr->gpu_tab);
	nkv_h_buf_free(mr->c, &mr->tab);
	nkv_h_buf_free(mr->c, &mr->b);
	if (mr->dmabuf_fd >= 0)
		close(mr->dmabuf_fd);
	if (mr->gsrc)
		mr->gsrc->ops->destroy(mr->gsrc);
	free(mr);
}

/* Registered (mr->b mapped): the table, the descriptor, the list. Under
 * c->lock. */
static int nkv_h_mr_finish(struct nkv_mr *mr, struct nkv_mr **out)
{
	struct nkv_ctrl *c = mr->c;
	int rc = nkv_h_mr_table(mr);

	mr->dev.addr = (uint64_t)(uintptr_t)mr->b.m.va;
	mr->dev.len = mr->b.m.len;
	mr->dev.iova = mr->b.m.iova[0];
	mr->dev.pages_addr = (uint64_t)(uintptr_t)mr->b.m.iova;
	mr->dev.npages = (uint32_t)mr->b.m.npages;
	mr->dev.flags = (mr->flags & NKV_MEM_READ ? NKV_DEV_MR_READ : 0u) |
			(mr->flags & NKV_MEM_WRITE ? NKV_DEV_MR_WRITE : 0u) |
			(mr->b.m.contiguous ? NKV_DEV_MR_CONTIG : 0u);
	if (!rc && mr->tab.mapped) {
		mr->dev.tab_addr = (uint64_t)(uintptr_t)mr->tab.m.iova;
		mr->dev.tab_pages = (uint32_t)mr->tab.m.npages;
	}
	if (!rc)
		rc = nkv_h_mr_gpu(mr);
	if (rc) {
		nkv_h_log("memory region of %zu bytes: %s", mr->b.m.len, strerror(-rc));
		nkv_h_mr_free(mr);
		return rc;
	}
	mr->next = c->mrs;
	c->mrs = mr;
	*out = mr;
	return 0;
}

static int nkv_h_mr_args(struct nkv_ctrl *c, const void *addr, size_t len, uint32_t flags,
			 struct nkv_mr **out, const char *what)
{
	if (!c || !out)
		return -EINVAL;
	*out = NULL;
	if (flags & ~NKV_H_MR_FLAGS) {
		nkv_h_log("%s: unknown flags %#x", what, flags & ~NKV_H_MR_FLAGS);
		return -EINVAL;
	}
	if (!len || (addr && ((uintptr_t)addr | len) % NKV_PAGE_SIZE)) {
		nkv_h_log("%s: %p + %zu bytes is not whole 4 KiB pages (the controller maps "
			  "whole pages)", what, addr, len);
		return -EINVAL;
	}
	return 0;
}

static struct nkv_mr *nkv_h_mr_new(struct nkv_ctrl *c, uint32_t flags)
{
	struct nkv_mr *mr = calloc(1, sizeof(*mr));

	if (!mr)
		return NULL;
	mr->c = c;
	mr->flags = flags & (NKV_MEM_READ | NKV_MEM_WRITE);
	if (!mr->flags)
		mr->flags = NKV_MEM_READ | NKV_MEM_WRITE;
	mr->flags |= flags & NKV_MEM_DEVICE;
	mr->b.m.fd = -1;
	mr->tab.m.fd = -1;
	mr->dmabuf_fd = -1;
	return mr;
}

/* Register the caller's memory described in mr->b.m; under no lock. */
static int nkv_h_mr_reg(struct nkv_mr *mr, struct nkv_mr **out, const char *what)
{
	struct nkv_ctrl *c = mr->c;
	int rc;

	mr->b.m.prot = nkv_h_mr_prot(mr->flags);
	pthread_mutex_lock(&c->lock);
	rc = c->dead ? -ENOTCONN : nkv_h_buf_register(c, &mr->b, what);
	if (!rc)
		rc = nkv_h_mr_finish(mr, out);
	else {
		nkv_h_log("%s of %zu bytes: the controller refused it: %s", what, mr->b.m.len,
			  strerror(-rc));
		free(mr);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* Why GPU memory cannot be registered here, or NULL. */
static const char *nkv_h_mr_gpu_no(const struct nkv_ctrl *c, uint32_t flags)
{
	if (c->gpu_rc)
		return "there is no GPU runtime to reach it with";
	if (!c->ops->maps_va && !(flags & NKV_MEM_MESSAGES))
		return "a vfio-user controller reaches GPU memory only by messages the library "
		       "serves with the runtime's copies: add NKV_MEM_MESSAGES";
	if (c->ops->maps_va && !c->gpu_caps.emulated && !c->gpu->export_dmabuf)
		return "this runtime cannot export GPU memory as a dma-buf for nkv.ko";
	return NULL;
}

/* Register GPU memory [addr, addr + len): by messages served with the
 * runtime's copies (vfio-user), as the runtime's dma-buf export (pcie),
 * or, on the emulated runtime, as the host memory it is. */
static int nkv_h_mr_reg_gpu(struct nkv_ctrl *c, void *addr, size_t len, uint32_t flags,
			    struct nkv_mr **out)
{
	const char *no = nkv_h_mr_gpu_no(c, flags);
	struct nkv_mr *mr;
	int rc;

	if (no) {
		nkv_h_log("nkv_mem_register(NKV_MEM_DEVICE): %s", no);
		return c->gpu_rc ? -ENODEV : -EOPNOTSUPP;
	}
	mr = nkv_h_mr_new(c, flags & ~NKV_MEM_MESSAGES);
	if (!mr)
		return -ENOMEM;
	mr->b.m.va = addr;
	mr->b.m.len = len;
	if (!c->ops->maps_va) {
		mr->b.m.by_messages = 1;
		mr->b.m.copy = nkv_h_gpu_copy;
		mr->b.m.copy_ctx = (void *)c->gpu;
	} else if (!c->gpu_caps.emulated) {
		rc = c->gpu->export_dmabuf((uint64_t)(uintptr_t)addr, len, &mr->dmabuf_fd);
		if (rc) {
			nkv_h_log("nkv_mem_register(NKV_MEM_DEVICE): the %s runtime's dma-buf "
				  "export failed: %s", c->gpu_caps.name, strerror(-rc));
			free(mr);
			return rc;
		}
		mr->b.m.fd = mr->dmabuf_fd;
		mr->b.m.dmabuf = 1;
	}
	return nkv_h_mr_reg(mr, out, "GPU memory");
}

int nkv_mem_register(struct nkv_ctrl *c, void *addr, size_t len, uint32_t flags,
		     struct nkv_mr **out)
{
	struct nkv_mr *mr;
	int rc = nkv_h_mr_args(c, addr, len, flags, out, "nkv_mem_register");

	if (rc)
		return rc;
	if (!addr)
		return -EINVAL;
	if (flags & NKV_MEM_DEVICE)
		return nkv_h_mr_reg_gpu(c, addr, len, flags, out);
	if (!c->ops->maps_va && !(flags & NKV_MEM_MESSAGES)) {
		nkv_h_log("nkv_mem_register: %s cannot share memory without an fd with the "
			  "controller's process: use nkv_mem_register_fd() or nkv_mem_alloc(), or "
			  "NKV_MEM_MESSAGES to let it reach the memory by messages (a copy each way)",
			  c->ops->name);
		return -EOPNOTSUPP;
	}
	mr = nkv_h_mr_new(c, flags);
	if (!mr)
		return -ENOMEM;
	mr->b.m.va = addr;
	mr->b.m.len = len;
	mr->b.m.by_messages = !c->ops->maps_va;
	return nkv_h_mr_reg(mr, out, mr->b.m.by_messages ? "caller memory, by messages"
							  : "caller memory");
}

int nkv_mem_register_fd(struct nkv_ctrl *c, int fd, uint64_t fd_off, void *addr, size_t len,
			uint32_t flags, struct nkv_mr **out)
{
	struct nkv_mr *mr;
	struct stat st;
	int rc = nkv_h_mr_args(c, addr, len, flags, out, "nkv_mem_register_fd");

	if (rc)
		return rc;
	if (flags & NKV_MEM_DEVICE) {
		nkv_h_log("nkv_mem_register_fd: GPU memory has no fd to map: nkv_mem_register() "
			  "with NKV_MEM_DEVICE");
		return -EINVAL;
	}
	if (!addr || fd < 0 || fd_off % NKV_PAGE_SIZE || fstat(fd, &st) < 0 ||
	    (S_ISREG(st.st_mode) && (uint64_t)st.st_size < fd_off + len)) {
		nkv_h_log("nkv_mem_register_fd: fd %d at offset %llu does not hold %zu bytes (or "
			  "the offset is not page aligned)", fd, (unsigned long long)fd_off, len);
		return -EINVAL;
	}
	mr = nkv_h_mr_new(c, flags & ~NKV_MEM_MESSAGES);
	if (!mr)
		return -ENOMEM;
	mr->b.m.va = addr;
	mr->b.m.len = len;
	/* pcie pins by address; vfio-user hands the controller the fd. */
	mr->b.m.fd = c->ops->maps_va ? -1 : fd;
	mr->b.m.fd_offset = fd_off;
	return nkv_h_mr_reg(mr, out, "caller memory from an fd");
}

int nkv_mem_alloc(struct nkv_ctrl *c, size_t len, uint32_t flags, struct nkv_mr **out,
		  void **addr)
{
	const char *no;
	struct nkv_mr *mr;
	int rc = nkv_h_mr_args(c, NULL, len ? len : 1, flags, out, "nkv_mem_alloc");

	if (rc || !addr || !len)
		return rc ? rc : -EINVAL;
	*addr = NULL;
	no = flags & NKV_MEM_DEVICE ? nkv_h_mr_gpu_no(c, flags | NKV_MEM_MESSAGES) : NULL;
	if (no) {
		nkv_h_log("nkv_mem_alloc(NKV_MEM_DEVICE): %s", no);
		return c->gpu_rc ? -ENODEV : -EOPNOTSUPP;
	}
	mr = nkv_h_mr_new(c, flags & ~NKV_MEM_MESSAGES);
	if (!mr)
		return -ENOMEM;
	/* GPU memory the library allocates is its own to reach: by messages
	 * over vfio-user, exported over pcie (gpu_mem.c). */
	if (flags & NKV_MEM_DEVICE) {
		mr->gsrc = nkv_h_memsrc_gpu(c->gpu, !c->ops->maps_va, c->gpu_caps.emulated);
		if (!mr->gsrc) {
			free(mr);
			return -ENOMEM;
		}
	}
	pthread_mutex_lock(&c->lock);
	rc = c->dead ? -ENOTCONN
		     : nkv_h_buf_alloc_prot(c, mr->gsrc ? mr->gsrc : c->host, len,
					    nkv_h_mr_prot(mr->flags), &mr->b);
	if (!rc)
		rc = nkv_h_mr_finish(mr, out);
	else {
		nkv_h_log("nkv_mem_alloc of %zu bytes: %s", len, strerror(-rc));
		if (mr->gsrc)
			mr->gsrc->ops->destroy(mr->gsrc);
		free(mr);
	}
	pthread_mutex_unlock(&c->lock);
	if (!rc)
		*addr = (*out)->b.m.va;
	return rc;
}

/* Why @mr may not go now: 0, or -EBUSY (logged). Under c->lock. */
static int nkv_h_mr_idle(struct nkv_mr *mr)
{
	struct nkv_ctrl *c = mr->c;
	uint32_t i;

	if (__atomic_load_n(&mr->busy, __ATOMIC_ACQUIRE)) {
		nkv_h_log("nkv_mem_deregister: a synchronous command uses the region");
		return -EBUSY;
	}
	for (i = 1; i <= c->granted; i++) {
		struct nkv_qpair *q = c->qps[i];

		if (q && !q->on_device && __atomic_load_n(&q->dev->inflight, __ATOMIC_ACQUIRE)) {
			nkv_h_log("nkv_mem_deregister: queue pair %u has %u commands in flight",
				  i, q->dev->inflight);
			return -EBUSY;
		}
	}
	return 0;
}

int nkv_mem_deregister(struct nkv_mr *mr)
{
	struct nkv_ctrl *c;
	struct nkv_mr **p;
	int rc;

	if (!mr)
		return 0;
	c = mr->c;
	pthread_mutex_lock(&c->lock);
	rc = nkv_h_mr_idle(mr);
	if (!rc) {
		for (p = &c->mrs; *p && *p != mr; p = &(*p)->next)
			;
		if (*p)
			*p = mr->next;
		nkv_h_mr_free(mr);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void nkv_h_mr_close_all(struct nkv_ctrl *c)
{
	while (c->mrs) {
		struct nkv_mr *mr = c->mrs;

		c->mrs = mr->next;
		nkv_h_mr_free(mr);
	}
}

int nkv_mem_info(struct nkv_mr *mr, struct nkv_mr_info *info)
{
	struct nkv_mr_info i;

	if (!mr || !info || info->size < offsetof(struct nkv_mr_info, prp_table))
		return -EINVAL;
	memset(&i, 0, sizeof(i));
	i.size = info->size < sizeof(i) ? info->size : sizeof(i);
	i.addr = mr->b.m.va;
	i.len = mr->b.m.len;
	i.flags = mr->flags & (NKV_MEM_READ | NKV_MEM_WRITE);
	i.by_messages = (uint32_t)mr->b.m.by_messages;
	i.contiguous = (uint32_t)mr->b.m.contiguous;
	i.prp_table = mr->dev.tab_pages ? 1u : 0u;
	i.device = mr->flags & NKV_MEM_DEVICE ? 1u : 0u;
	memcpy(info, &i, i.size);
	return 0;
}

const struct nkv_dev_mr *nkv_mem_dev(struct nkv_mr *mr)
{
	if (!mr)
		return NULL;
	return mr->gpu_dev ? (const struct nkv_dev_mr *)(uintptr_t)mr->gpu_dev : &mr->dev;
}

/* For the synchronous API (sync_mr.c): the host view, and the use count. */
const struct nkv_dev_mr *nkv_h_mr_host(const struct nkv_mr *mr, const struct nkv_ctrl *c)
{
	return mr && mr->c == c ? &mr->dev : NULL;
}

void nkv_h_mr_use(struct nkv_mr *mr, int d)
{
	__atomic_fetch_add(&mr->busy, d, __ATOMIC_ACQ_REL);
}
