/* SPDX-License-Identifier: MIT */
/*
 * dmamem.c - memory the controller may DMA to: where it comes from (a
 * memory source) and its registration with the transport.
 *
 * Host RAM: one sealed memfd per buffer, so the transport can pass the fd
 * (vfio-user DMA_MAP) or pin the pages (pcie); sealing against shrinking
 * keeps a controller that mapped it from faulting.
 * Device memory without a GPU: one separate arena memfd, carved into
 * page-aligned extents first fit, each registered on its own exactly as a
 * dma-buf slice of VRAM would be. Freed extents are punched out of the
 * memfd so their pages go back.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "host/host.h"

/*
 * Buffers are whole kernel pages as well as whole 4 KiB controller pages:
 * nkv.ko pins and maps kernel pages, 16 or 64 KiB on some arm64 and ppc64
 * kernels, and refuses a range that is not a multiple of them.
 */
static size_t nkv_h_page_round(size_t len)
{
	long k = sysconf(_SC_PAGESIZE);
	size_t pg = k > NKV_PAGE_SIZE ? (size_t)k : NKV_PAGE_SIZE;

	return (len + pg - 1) & ~(pg - 1);
}

/* ---- host RAM: a memfd per buffer ---- */

static int nkv_h_host_alloc(struct nkv_h_memsrc *s, size_t len, struct nkv_dmamem *m)
{
	int fd = memfd_create("nkv-host", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void *va;

	(void)s;
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	/* Targets refuse memory that could shrink under them (SIGBUS). */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	va = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (va == MAP_FAILED) {
		int e = errno;

		close(fd);
		return -e;
	}
	m->va = va;
	m->len = len;
	m->fd = fd;
	m->fd_offset = 0;
	m->dmabuf = 0;
	return 0;
}

static void nkv_h_host_free(struct nkv_h_memsrc *s, struct nkv_dmamem *m)
{
	(void)s;
	munmap(m->va, m->len);
	close(m->fd);
}

static void nkv_h_host_destroy(struct nkv_h_memsrc *s)
{
	free(s);
}

static const struct nkv_h_memsrc_ops nkv_h_host_ops = {
	.name = "host",
	.alloc = nkv_h_host_alloc,
	.free = nkv_h_host_free,
	.destroy = nkv_h_host_destroy,
};

struct nkv_h_memsrc *nkv_h_memsrc_host(void)
{
	struct nkv_h_memsrc *s = calloc(1, sizeof(*s));

	if (s)
		s->ops = &nkv_h_host_ops;
	return s;
}

/* ---- the emulated device arena ---- */

struct nkv_h_extent {
	size_t off, len;
};

struct nkv_h_arena {
	struct nkv_h_memsrc src;	/* first: the ops take this */
	pthread_mutex_t lock;
	int fd;
	uint8_t *base;
	size_t len;
	struct nkv_h_extent *ext;	/* allocated extents, sorted by off */
	size_t next, cap;
};

/* First gap of len bytes between the sorted extents; its index in *at. */
static int nkv_h_arena_fit(struct nkv_h_arena *a, size_t len, size_t *off, size_t *at)
{
	size_t pos = 0, i;

	for (i = 0; i <= a->next; i++) {
		size_t end = i < a->next ? a->ext[i].off : a->len;

		if (end - pos >= len) {
			*off = pos;
			*at = i;
			return 0;
		}
		if (i < a->next)
			pos = a->ext[i].off + a->ext[i].len;
	}
	return -ENOMEM;
}

static int nkv_h_arena_alloc(struct nkv_h_memsrc *s, size_t len, struct nkv_dmamem *m)
{
	struct nkv_h_arena *a = (struct nkv_h_arena *)s;
	size_t off, at;
	int rc;

	pthread_mutex_lock(&a->lock);
	rc = nkv_h_arena_fit(a, len, &off, &at);
	if (!rc && a->next == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 16;
		struct nkv_h_extent *e = realloc(a->ext, cap * sizeof(*e));

		if (!e)
			rc = -ENOMEM;
		else {
			a->ext = e;
			a->cap = cap;
		}
	}
	if (!rc) {
		memmove(&a->ext[at + 1], &a->ext[at], (a->next - at) * sizeof(*a->ext));
		a->ext[at].off = off;
		a->ext[at].len = len;
		a->next++;
		m->va = a->base + off;
		m->len = len;
		m->fd = a->fd;
		m->fd_offset = off;
		m->dmabuf = 0;	/* the arena is a memfd, even standing in for VRAM */
	}
	pthread_mutex_unlock(&a->lock);
	return rc;
}

static void nkv_h_arena_free(struct nkv_h_memsrc *s, struct nkv_dmamem *m)
{
	struct nkv_h_arena *a = (struct nkv_h_arena *)s;
	size_t off = (size_t)m->fd_offset, i;

	pthread_mutex_lock(&a->lock);
	for (i = 0; i < a->next; i++) {
		if (a->ext[i].off != off)
			continue;
		memmove(&a->ext[i], &a->ext[i + 1], (a->next - i - 1) * sizeof(*a->ext));
		a->next--;
		/* Give the pages back; the next user gets zeroes. */
		fallocate(a->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			  (off_t)off, (off_t)m->len);
		break;
	}
	pthread_mutex_unlock(&a->lock);
}

static void nkv_h_arena_destroy(struct nkv_h_memsrc *s)
{
	struct nkv_h_arena *a = (struct nkv_h_arena *)s;

	munmap(a->base, a->len);
	close(a->fd);
	free(a->ext);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

static const struct nkv_h_memsrc_ops nkv_h_arena_ops = {
	.name = "device-arena",
	.alloc = nkv_h_arena_alloc,
	.free = nkv_h_arena_free,
	.destroy = nkv_h_arena_destroy,
};

struct nkv_h_memsrc *nkv_h_memsrc_arena(size_t arena_len)
{
	struct nkv_h_arena *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->len = nkv_h_page_round(arena_len);
	a->fd = memfd_create("nkv-device-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (a->fd < 0 || ftruncate(a->fd, (off_t)a->len) < 0 ||
	    fcntl(a->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail;
	/* Sparse: only touched pages cost memory. */
	a->base = mmap(NULL, a->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
		       a->fd, 0);
	if (a->base == MAP_FAILED)
		goto fail;
	pthread_mutex_init(&a->lock, NULL);
	a->src.ops = &nkv_h_arena_ops;
	a->src.is_device = 1;
	a->src.emulated = 1;
	return &a->src;
fail:
	if (a->fd >= 0)
		close(a->fd);
	free(a);
	return NULL;
}

struct nkv_h_memsrc *nkv_h_memsrc_arena_by_messages(size_t arena_len)
{
	struct nkv_h_memsrc *s = nkv_h_memsrc_arena(arena_len);

	if (s)
		s->by_messages = 1;
	return s;
}

/* ---- registered buffers ---- */

int nkv_h_buf_alloc(struct nkv_ctrl *c, struct nkv_h_memsrc *src, size_t len,
		    struct nkv_h_buf *b)
{
	return nkv_h_buf_alloc_prot(c, src, len, 0, b);
}

int nkv_h_buf_alloc_prot(struct nkv_ctrl *c, struct nkv_h_memsrc *src, size_t len,
			 uint32_t prot, struct nkv_h_buf *b)
{
	int rc;

	memset(b, 0, sizeof(*b));
	b->m.fd = -1;
	b->m.prot = prot;
	if (!len)
		return -EINVAL;
	rc = src->ops->alloc(src, nkv_h_page_round(len), &b->m);
	if (rc)
		return rc;
	b->src = src;
	b->m.by_messages = src->by_messages;
	b->m.copy = src->ops->copy;
	b->m.copy_ctx = src;
	/* Zero already (memsrc_ops.alloc): not touched here, so a 64 MiB
	 * value buffer costs memory only where values land. */
	rc = c->ops->dma_map(c->tr, &b->m);
	if (rc) {
		nkv_h_trace("dma_map of %zu bytes (%s) failed: %d", b->m.len, src->ops->name, rc);
		nkv_h_buf_free(c, b);
		return rc;
	}
	b->mapped = 1;
	nkv_h_trace("registered %zu bytes of %s memory at iova %#llx%s%s", b->m.len,
		    src->ops->name, (unsigned long long)b->m.iova[0],
		    b->m.contiguous ? "" : " (per-page addresses)",
		    b->m.by_messages ? ", reached by messages" : "");
	return 0;
}

int nkv_h_buf_register(struct nkv_ctrl *c, struct nkv_h_buf *b, const char *what)
{
	int rc = c->ops->dma_map(c->tr, &b->m);

	if (rc) {
		nkv_h_trace("dma_map of %zu bytes (%s) failed: %d", b->m.len, what, rc);
		return rc;
	}
	b->mapped = 1;
	nkv_h_trace("registered %zu bytes of %s at iova %#llx%s%s", b->m.len, what,
		    (unsigned long long)b->m.iova[0],
		    b->m.contiguous ? "" : " (per-page addresses)",
		    b->m.by_messages ? ", reached by messages" : "");
	return 0;
}

void nkv_h_buf_free(struct nkv_ctrl *c, struct nkv_h_buf *b)
{
	if (!b->src && !b->mapped)
		return;
	if (b->mapped) {
		int rc = c->ops->dma_unmap(c->tr, &b->m);

		/* A controller still using it (or gone) keeps its mapping;
		 * freeing our side is still right: the memfd lives on in
		 * the peer as long as it maps it. */
		if (rc)
			nkv_h_trace("dma_unmap of %zu bytes: %d", b->m.len, rc);
		if (b->m.iova && b->m.tr_priv == b->m.iova)
			free(b->m.iova);
	}
	/* Memory the caller registered (no source) stays the caller's. */
	if (b->src)
		b->src->ops->free(b->src, &b->m);
	memset(b, 0, sizeof(*b));
	b->m.fd = -1;
}

uint64_t nkv_h_buf_iova(const struct nkv_h_buf *b, size_t off)
{
	return b->m.iova[off / NKV_PAGE_SIZE] + (off % NKV_PAGE_SIZE);
}
