/* SPDX-License-Identifier: MIT */
/*
 * dma.c - client memory: DMA regions (DMA_MAP and DMA_UNMAP, budgets,
 * what an fd must be) and DMA messages (DMA_READ and DMA_WRITE for
 * memory mapped without an fd, waiting for their replies while holding
 * the client's requests).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#include "target/vfio-user/vfu.h"

uint32_t nkv_vfu_max_maps(const struct nkv_vfu_server *s)
{
	uint32_t v = s->o.max_dma_maps ? s->o.max_dma_maps : NKV_VFU_DMA_MAPS;

	return v < NKV_VFU_MAX_DMA_MAPS ? v : NKV_VFU_MAX_DMA_MAPS;
}

/* Would one more region of size bytes exceed the connection's budget? */
static int nkv_vfu_dma_budget(struct nkv_vfu_conn *c, uint64_t size)
{
	const struct nkv_vfu_server *s = c->s;
	uint64_t max = s->o.max_dma_bytes ? s->o.max_dma_bytes : NKV_VFU_DMA_BYTES;

	if (c->nmaps < nkv_vfu_max_maps(s) && size <= max && c->mapped <= max - size)
		return 0;
	nkv_vfu_clog(c, NKV_VFU_LOG_WARN,
		     "event=dma_map_refused conn=%u reason=budget maps=%u/%u bytes=%llu+%llu/%llu",
		     c->id, c->nmaps, nkv_vfu_max_maps(s), (unsigned long long)c->mapped,
		     (unsigned long long)size, (unsigned long long)max);
	return -ENOSPC;
}

static struct nkv_vfu_map *nkv_vfu_find_map(struct nkv_vfu_conn *c, uint64_t iova, uint64_t len)
{
	uint32_t i;

	for (i = 0; i < c->nmaps; i++)
		if (c->maps[i].iova == iova && c->maps[i].len == len)
			return &c->maps[i];
	return NULL;
}

/* The fd must really hold [offset, offset + size) now: a range past its
 * end could never be used. (Pages that vanish later, by a truncate or a
 * punched hole, are survived: memguard.h.) */
static int nkv_vfu_fd_covers(int fd, uint64_t offset, uint64_t size)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size < offset + size)
		return -EINVAL;
	if (S_ISSOCK(st.st_mode) || S_ISDIR(st.st_mode) || S_ISFIFO(st.st_mode))
		return -EBADF;
	return 0;
}

/*
 * Can the pages of this fd never vanish under our mapping? Only shmem
 * (a memfd) sealed against shrinking: a hole punched in it reads back
 * zeros, never SIGBUS. hugetlbfs raises SIGBUS at a hole when its pool is
 * empty, seals or not. Such regions are NKV_DMA_STABLE: threads the
 * target does not own (librados') may touch them.
 */
static int nkv_vfu_fd_stable(int fd)
{
	struct statfs sf;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstatfs(fd, &sf) < 0)
		return 0;
	return sf.f_type != HUGETLBFS_MAGIC;
}

/* Character and block devices are not memory the client shares with us:
 * /dev/zero maps as fresh anonymous memory the client never sees (every
 * transfer silently lost), others reach hardware. A dma-buf is an
 * anonymous inode, not a device. */
static int nkv_vfu_fd_not_device(struct nkv_vfu_conn *c, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
		return 0;
	nkv_vfu_clog(c, NKV_VFU_LOG_WARN,
		     "event=dma_map_refused conn=%u reason=device_fd_is_not_dma_memory(use_a_sealed_memfd_or_dma-buf)",
		     c->id);
	return -EPERM;
}

int nkv_vfu_h_dma_map(struct nkv_vfu_conn *c, struct nkv_vfu_msg *m)
{
	struct nkv_vfu_dma_map dm;
	struct nkv_vfu_map *nm;
	uint32_t prot = 0;
	int mprot = 0, rc, fd;
	void *p;

	if (m->len != sizeof(dm) || m->nfds > 1)
		return -EINVAL;
	memcpy(&dm, m->payload, sizeof(dm));
	if (dm.argsz != sizeof(dm) || !dm.size || (dm.flags & ~3u) || !dm.flags)
		return -EINVAL;
	if ((dm.addr | dm.size | dm.offset) & (NKV_PAGE_SIZE - 1) ||
	    dm.addr + dm.size < dm.addr || dm.offset + dm.size < dm.offset ||
	    dm.size > (1ull << 40))
		return -EINVAL;
	rc = nkv_vfu_dma_budget(c, dm.size);
	if (rc)
		return rc;
	fd = m->nfds ? m->fds[0] : -1;
	rc = fd >= 0 ? nkv_vfu_fd_covers(fd, dm.offset, dm.size) : 0;
	if (!rc && fd >= 0)
		rc = nkv_vfu_fd_not_device(c, fd);
	if (rc)
		return rc;
	if (dm.flags & NKV_VFU_DMA_F_READ) {
		prot |= NKV_DMA_READ;
		mprot |= PROT_READ;
	}
	if (dm.flags & NKV_VFU_DMA_F_WRITE) {
		prot |= NKV_DMA_WRITE;
		mprot |= PROT_READ | PROT_WRITE;
	}
	/* Unsealed memfds and files are accepted too: their pages may vanish,
	 * which memguard.h survives; sealed shmem stays the fast path. */
	if (fd < 0 || nkv_vfu_fd_stable(fd))
		prot |= NKV_DMA_STABLE;
	/* No fd: memory we cannot map (a GPU's, say), reached with DMA_READ
	 * and DMA_WRITE messages. The controller works on a local shadow,
	 * reserved here and populated only where commands put data. */
	if (fd < 0)
		prot |= NKV_DMA_MSG;
	nkv_vfu_log(c->s, NKV_VFU_LOG_DEBUG,
		    "event=dma_map conn=%u iova=%#llx size=%#llx stable=%d path=%s",
		    c->id, (unsigned long long)dm.addr, (unsigned long long)dm.size,
		    !!(prot & NKV_DMA_STABLE), fd < 0 ? "messages" : "fd");
	nm = realloc(c->maps, (c->nmaps + 1) * sizeof(*c->maps));
	if (!nm)
		return -ENOMEM;
	c->maps = nm;
	if (fd < 0)
		p = mmap(NULL, dm.size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	else
		p = mmap(NULL, dm.size, mprot, MAP_SHARED, fd, (off_t)dm.offset);
	if (p == MAP_FAILED)
		return -errno;
	rc = nkv_dma_map(c->dma, dm.addr, dm.size, p, prot);
	if (rc) {
		munmap(p, dm.size);
		return rc;
	}
	c->maps[c->nmaps].iova = dm.addr;
	c->maps[c->nmaps].len = dm.size;
	c->maps[c->nmaps].ptr = p;
	c->nmaps++;
	c->mapped += dm.size;
	return nkv_vfu_reply_alloc(c, 0);
}

static int nkv_vfu_unmap_one(struct nkv_vfu_conn *c, struct nkv_vfu_map *mp)
{
	int rc;

	if (c->ctrl && nkv_tgt_ctrl_dma_busy(c->ctrl, mp->iova, mp->len))
		return -EBUSY;
	rc = nkv_dma_unmap(c->dma, mp->iova, mp->len);
	if (rc)
		return rc;
	munmap(mp->ptr, mp->len);
	c->mapped -= mp->len;
	*mp = c->maps[--c->nmaps];
	return 0;
}

int nkv_vfu_h_dma_unmap(struct nkv_vfu_conn *c, struct nkv_vfu_msg *m)
{
	struct nkv_vfu_dma_unmap du;
	struct nkv_vfu_map *mp;
	uint32_t i;
	int rc;

	if (m->len != sizeof(du))
		return -EINVAL;
	memcpy(&du, m->payload, sizeof(du));
	if (du.argsz < sizeof(du))
		return -EINVAL;
	if (du.flags & NKV_VFU_UNMAP_DIRTY_BITMAP)
		return -ENOTSUP;
	if (du.flags & ~NKV_VFU_UNMAP_ALL)
		return -EINVAL;
	if (du.flags & NKV_VFU_UNMAP_ALL) {
		if (du.addr || du.size)
			return -EINVAL;
		for (i = 0; i < c->nmaps; i++)
			if (c->ctrl && nkv_tgt_ctrl_dma_busy(c->ctrl, c->maps[i].iova, c->maps[i].len))
				return -EBUSY;
		while (c->nmaps) {
			rc = nkv_vfu_unmap_one(c, &c->maps[0]);
			if (rc)
				return rc;
		}
	} else {
		mp = nkv_vfu_find_map(c, du.addr, du.size);
		if (!mp)
			return -ENOENT;
		rc = nkv_vfu_unmap_one(c, mp);
		if (rc)
			return rc;
	}
	rc = nkv_vfu_reply_alloc(c, sizeof(du));
	if (!rc)
		memcpy(c->rbuf, &du, sizeof(du));
	return rc;
}

/* The DMA message path failed the stream: the connection ends. */
static int nkv_vfu_dma_fail(struct nkv_vfu_conn *c, int rc, const char *why)
{
	c->dma_dead = rc;
	c->end_reason = why;
	return rc;
}

/* Wait for the reply to our request h, holding client requests that come
 * first. 0 with the reply in *r, or a negative errno (the stream is lost). */
static int nkv_vfu_dma_wait(struct nkv_vfu_conn *c, const struct nkv_vfu_hdr *h,
			    struct nkv_vfu_msg *r, const struct nkv_vfu_bounds *b)
{
	for (;;) {
		int rc = nkv_vfu_recv_bounded(c->fd, r, NKV_VFU_MAX_MSG, b);

		if (rc == -ETIMEDOUT)
			return nkv_vfu_dma_fail(c, rc, "dma_reply_timeout");
		if (rc) {
			nkv_vfu_msg_free(r);
			return nkv_vfu_dma_fail(c, rc, rc == -ECANCELED ? NULL : "dma_reply_lost");
		}
		if (nkv_vfu_type(r->hdr.flags) == NKV_VFU_TYPE_REPLY) {
			if (r->hdr.msg_id == h->msg_id && r->hdr.cmd == h->cmd && !r->nfds)
				return 0;
			nkv_vfu_msg_free(r);
			return nkv_vfu_dma_fail(c, -EPROTO, "unexpected_reply");
		}
		if (c->nheld == NKV_VFU_HELD) {
			nkv_vfu_msg_free(r);
			return nkv_vfu_dma_fail(c, -ENOBUFS, "too_many_requests_during_dma");
		}
		c->held[c->nheld++] = *r;
	}
}

/* One DMA_READ or DMA_WRITE of at most max_xfer bytes, and its reply. */
static int nkv_vfu_dma_msg(struct nkv_vfu_conn *c, uint64_t iova, void *buf,
			   uint64_t len, int to_client)
{
	struct nkv_vfu_bounds b = { .stop_fd = c->s->stop_fd };
	struct nkv_vfu_dma_rw rw = { iova, len }, back;
	struct nkv_vfu_hdr h = { c->next_req_id++, to_client ? NKV_VFU_DMA_WRITE : NKV_VFU_DMA_READ,
				 0, NKV_VFU_TYPE_COMMAND, 0 };
	size_t want = sizeof(rw) + (to_client ? 0 : len);
	struct nkv_vfu_msg r;
	uint8_t *out = NULL;
	int rc;

	b.deadline_ns = nkv_vfu_now_ns() + nkv_vfu_ms(&c->s->o.msg_ms, NKV_VFU_MSG_MS);
	if (to_client) {
		out = malloc(sizeof(rw) + len);
		if (!out)
			return -ENOMEM;
		memcpy(out, &rw, sizeof(rw));
		memcpy(out + sizeof(rw), buf, len);
	}
	rc = nkv_vfu_send_bounded(c->fd, &h, to_client ? (void *)out : (void *)&rw,
				  to_client ? sizeof(rw) + len : sizeof(rw), NULL, 0, &b);
	free(out);
	if (rc)
		return nkv_vfu_dma_fail(c, rc, rc == -ETIMEDOUT ? "dma_request_timeout" : "dma_request_lost");
	rc = nkv_vfu_dma_wait(c, &h, &r, &b);
	if (rc)
		return rc;
	if (r.hdr.flags & NKV_VFU_F_ERROR) {
		rc = r.hdr.error ? -(int)r.hdr.error : -EIO;
	} else if (r.len != want) {
		rc = -EIO;	/* short, or long */
	} else {
		memcpy(&back, r.payload, sizeof(back));
		rc = back.addr == iova && back.count == len ? 0 : -EIO;
		if (!rc && !to_client)
			memcpy(buf, r.payload + sizeof(rw), len);
	}
	pthread_mutex_lock(&c->s->lock);
	c->s->st.dma_msgs++;
	c->s->st.dma_bytes += rc ? 0 : len;
	pthread_mutex_unlock(&c->s->lock);
	if (rc)
		nkv_vfu_clog(c, NKV_VFU_LOG_WARN,
			     "event=dma_msg_failed conn=%u cmd=%s iova=%#llx count=%llu reply_len=%zu errno=%d",
			     c->id, nkv_vfu_cmd_name(h.cmd), (unsigned long long)iova,
			     (unsigned long long)len, r.len, -rc);
	nkv_vfu_msg_free(&r);
	return rc;
}

/* nkv_tgt_xfer_fn: data of a region mapped without an fd, on the
 * connection thread, in pieces the client accepts. */
int nkv_vfu_dma_xfer(void *ctx, uint64_t iova, void *buf, uint64_t len, int to_client)
{
	struct nkv_vfu_conn *c = ctx;
	uint8_t *p = buf;
	int rc;

	while (len) {
		uint64_t n = len < c->max_xfer ? len : c->max_xfer;

		if (c->dma_dead)
			return -EIO;
		rc = nkv_vfu_dma_msg(c, iova, p, n, to_client);
		if (rc)
			return rc;
		iova += n;
		p += n;
		len -= n;
	}
	return 0;
}
