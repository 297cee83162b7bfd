/* SPDX-License-Identifier: MIT */
/* vfu_util.c - see vfu_util.h. Every wait here is bounded. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include "vfu_util.h"

#define VT_PAGES 64

int vt_server_start(struct tl_server *s, int no_sparse)
{
	return vt_server_start_with(s, no_sparse, NULL);
}

int vt_server_start_with(struct tl_server *s, int no_sparse,
			 void (*tweak)(struct nkv_vfu_server_opts *o))
{
	struct nkv_tgt_embed_opts eo;

	tl_server_opts(&eo);
	eo.server.ctrl.max_ioq = 4;
	eo.server.no_sparse_mmap = no_sparse;
	eo.server.max_conns = 4;
	if (tweak)
		tweak(&eo.server);
	return tl_server_start(s, "nkv-vfu-test", &eo);
}

int vt_idle_threads(int pid)
{
	char dir[64];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(dir, sizeof(dir), "/proc/%d/task", pid ? pid : (int)getpid());
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && sched_getscheduler(atoi(e->d_name)) == SCHED_IDLE)
			n++;
	closedir(d);
	return n;
}

/* A bare socket to the server at @path, replies bounded by a 3 s receive
 * timeout: for tests that speak the protocol by hand. fd or -errno. */
int vt_raw_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { 3, 0 };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

void *vt_page(struct vt_nvme *n, unsigned page)
{
	return (uint8_t *)n->mem.va + (size_t)page * NKV_PAGE_SIZE;
}

uint64_t vt_iova(struct vt_nvme *n, unsigned page)
{
	return n->mem.iova[page];
}

static void vt_db(struct vt_nvme *n, unsigned idx, uint32_t v)
{
	__atomic_store_n(&n->db[(size_t)idx << n->dstrd], v, __ATOMIC_RELEASE);
}

void vt_submit(struct vt_nvme *n, uint16_t qid, struct nkv_sqe *sqe)
{
	struct nkv_sqe *ring = vt_page(n, qid ? VT_IOSQ : VT_ASQ);

	sqe->cdw0 = nkv_sqe_cdw0((uint8_t)sqe->cdw0, ++n->cid);
	ring[n->sq_tail[qid]] = *sqe;
	n->sq_tail[qid] = (n->sq_tail[qid] + 1) % VT_QD;
	vt_db(n, 2u * qid, n->sq_tail[qid]);
}

int vt_cmd(struct vt_nvme *n, uint16_t qid, struct nkv_sqe *sqe, uint32_t *dw0)
{
	volatile struct nkv_cqe *cq = vt_page(n, qid ? VT_IOCQ : VT_ACQ);
	uint64_t t0;
	uint32_t dw3;

	vt_submit(n, qid, sqe);
	t0 = tl_now_ms();
	for (;;) {
		dw3 = __atomic_load_n(&cq[n->cq_head[qid]].dw3, __ATOMIC_ACQUIRE);
		if (nkv_cqe_phase(dw3) == n->phase[qid])
			break;
		if (tl_now_ms() - t0 > 3000)
			return -1;
		usleep(10);
	}
	if (dw0)
		*dw0 = cq[n->cq_head[qid]].dw0;
	n->cq_head[qid] = (n->cq_head[qid] + 1) % VT_QD;
	if (n->cq_head[qid] == 0)
		n->phase[qid] ^= 1;
	vt_db(n, 2u * qid + 1, n->cq_head[qid]);
	return nkv_cqe_status(dw3);
}

void vt_kv_sqe(struct nkv_sqe *s, uint8_t opc, const char *key, uint64_t prp, uint32_t len)
{
	uint8_t k[16] = { 0 };
	size_t kl = strlen(key);

	memset(s, 0, sizeof(*s));
	memcpy(k, key, kl);
	s->cdw0 = opc;
	s->nsid = 1;
	memcpy(&s->cdw2, k, 4);
	memcpy(&s->cdw3, k + 4, 4);
	memcpy(&s->cdw14, k + 8, 4);
	memcpy(&s->cdw15, k + 12, 4);
	s->prp1 = prp;
	s->cdw10 = len;
	s->cdw11 = (uint32_t)kl;
}

static int vt_wait_rdy(struct vt_nvme *n, uint32_t want)
{
	uint64_t t0 = tl_now_ms(), v = 0;

	while (tl_now_ms() - t0 < 3000) {
		if (n->ops->reg_read(n->tr, NKV_REG_CSTS, 4, &v))
			return -EIO;
		if ((v & NKV_CSTS_RDY) == want)
			return 0;
		usleep(200);
	}
	return -ETIMEDOUT;
}

static int vt_mem(struct vt_nvme *n, unsigned flags)
{
	unsigned mfd = MFD_CLOEXEC | MFD_ALLOW_SEALING;

	n->mem.len = (size_t)vt_mem_pages(flags) * NKV_PAGE_SIZE;
	if (flags & VT_MEM_HUGETLB)
		mfd |= MFD_HUGETLB;
	n->mem.fd = memfd_create("vt-dma", mfd);
	/* Sealed unless asked: memory that cannot shrink under the target. */
	if (n->mem.fd < 0 || ftruncate(n->mem.fd, (off_t)n->mem.len) ||
	    (!(flags & VT_MEM_UNSEALED) &&
	     fcntl(n->mem.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW)))
		return -errno;
	n->mem.va = mmap(NULL, n->mem.len, PROT_READ | PROT_WRITE, MAP_SHARED, n->mem.fd, 0);
	if (n->mem.va == MAP_FAILED)
		return -errno;
	return n->ops->dma_map(n->tr, &n->mem);
}

static int vt_doorbells(struct vt_nvme *n)
{
	struct nkv_dbfwd_opts fo = { .size = sizeof(fo) };
	size_t len = 0;

	n->db = n->ops->doorbells(n->tr, &len);
	if (n->db)
		return 0;
	n->shadow = aligned_alloc(NKV_PAGE_SIZE, NKV_PAGE_SIZE);
	if (!n->shadow)
		return -ENOMEM;
	memset(n->shadow, 0, NKV_PAGE_SIZE);
	n->fwd_tr.ops = n->ops;
	n->fwd_tr.tr = n->tr;
	fo.shadow = n->shadow;
	fo.len = 4u << (2 + n->dstrd);	/* qid 0 and 1: four doorbells */
	fo.write = nkv_dbfwd_transport_write;
	fo.arg = &n->fwd_tr;
	n->db = n->shadow;
	return nkv_dbfwd_start(&fo, &n->fwd);
}

static int vt_admin(struct vt_nvme *n, uint8_t opc, uint32_t cdw10, uint32_t cdw11, uint64_t prp)
{
	struct nkv_sqe s = { 0 };

	s.cdw0 = opc;
	s.cdw10 = cdw10;
	s.cdw11 = cdw11;
	s.prp1 = prp;
	return vt_cmd(n, 0, &s, NULL);
}

unsigned vt_mem_pages(unsigned flags)
{
	return flags & VT_MEM_HUGETLB ? 1024 : VT_PAGES;	/* 2 huge pages */
}

int vt_nvme_up(struct vt_nvme *n, const char *path)
{
	return vt_nvme_up_mem(n, path, 0);
}

int vt_nvme_up_mem(struct vt_nvme *n, const char *path, unsigned flags)
{
	char err[256];
	uint64_t cap;
	uint32_t cc;
	int rc;

	memset(n, 0, sizeof(*n));
	n->mem.fd = -1;
	n->phase[0] = n->phase[1] = 1;
	n->ops = &nkv_transport_vfio_user;
	rc = n->ops->open(path, &n->tr, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "open: %s\n", err);
		return rc;
	}
	/* Doorbells are CAP.DSTRD apart (nkv-target: a cache line). */
	if (n->ops->reg_read(n->tr, NKV_REG_CAP, 8, &cap))
		return -EIO;
	n->dstrd = nkv_cap_dstrd(cap);
	if ((rc = vt_mem(n, flags)) || (rc = vt_doorbells(n)))
		return rc;
	if (n->ops->reg_write(n->tr, NKV_REG_CC, 0, 4) || vt_wait_rdy(n, 0))
		return -EIO;
	n->ops->reg_write(n->tr, NKV_REG_AQA, nkv_aqa(VT_QD, VT_QD), 4);
	n->ops->reg_write(n->tr, NKV_REG_ASQ, vt_iova(n, VT_ASQ), 8);
	n->ops->reg_write(n->tr, NKV_REG_ACQ, vt_iova(n, VT_ACQ), 8);
	cc = 1u | NKV_CC_CSS_IOCS << NKV_CC_CSS_SHIFT | 6u << NKV_CC_IOSQES_SHIFT |
	     4u << NKV_CC_IOCQES_SHIFT;
	if (n->ops->reg_write(n->tr, NKV_REG_CC, cc, 4) || vt_wait_rdy(n, 1))
		return -EIO;
	if (vt_admin(n, NKV_ADM_SET_FEATURES, NKV_FID_NUM_QUEUES, 0, 0))
		return -EIO;
	if (vt_admin(n, NKV_ADM_CREATE_CQ, nkv_queue_cdw10(1, VT_QD), NKV_QUEUE_PC,
		     vt_iova(n, VT_IOCQ)))
		return -EIO;
	if (vt_admin(n, NKV_ADM_CREATE_SQ, nkv_queue_cdw10(1, VT_QD), nkv_create_sq_cdw11(1),
		     vt_iova(n, VT_IOSQ)))
		return -EIO;
	return 0;
}

void vt_nvme_down(struct vt_nvme *n)
{
	if (n->fwd)
		nkv_dbfwd_stop(n->fwd);
	free(n->shadow);
	if (n->tr) {
		if (n->mem.iova) {
			n->ops->reg_write(n->tr, NKV_REG_CC, 0, 4);
			vt_wait_rdy(n, 0);
			n->ops->dma_unmap(n->tr, &n->mem);
		}
		n->ops->close(n->tr);
	}
	if (n->mem.va && n->mem.va != MAP_FAILED)
		munmap(n->mem.va, n->mem.len);
	if (n->mem.fd >= 0)
		close(n->mem.fd);
}

/* PRP1/PRP2 for len bytes from data page first; a PRP list in list_page
 * when more than two pages. */
static void vt_prps(struct vt_nvme *n, struct nkv_sqe *s, unsigned first, uint32_t len,
		    unsigned list_page)
{
	uint32_t pages = (len + NKV_PAGE_SIZE - 1) / NKV_PAGE_SIZE, i;
	uint64_t *l = vt_page(n, list_page);

	s->prp1 = vt_iova(n, first);
	s->prp2 = 0;
	if (pages == 2)
		s->prp2 = vt_iova(n, first + 1);
	if (pages > 2) {
		for (i = 1; i < pages; i++)
			l[i - 1] = vt_iova(n, first + i);
		s->prp2 = vt_iova(n, list_page);
	}
}

static void vt_pattern(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t i, x = seed * 2654435761u + 1;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

/* Is key (kl bytes) in the List payload at p? */
static int vt_listed(const uint8_t *p, uint32_t len, const char *key)
{
	uint32_t count, off = NKV_LIST_HDR_SIZE, i;

	memcpy(&count, p, 4);
	for (i = 0; i < count && off + 2 <= len; i++) {
		uint16_t kl;

		memcpy(&kl, p + off, 2);
		if (kl == strlen(key) && off + 2 + kl <= len && !memcmp(p + off + 2, key, kl))
			return 1;
		off += nkv_list_entry_size(kl);
	}
	return 0;
}

#define VT_EO_SRC (VT_DATA + 2)		/* value pages (4) + list page */
#define VT_EO_DST (VT_DATA + 8)		/* read-back pages (4) + list page */

int vt_every_op(struct vt_nvme *n, const char *tag, char *why, size_t whylen)
{
	static const uint32_t sizes[] = { 1, 100, 4096, 5000, 4 * 4096 - 9 };
	const unsigned nsz = sizeof(sizes) / sizeof(sizes[0]);
	uint8_t want[4 * 4096];
	char key[17];
	struct nkv_sqe s;
	uint32_t dw0;
	unsigned i;
	int st;

#define VT_FAIL(...) do { snprintf(why, whylen, __VA_ARGS__); return -1; } while (0)
	for (i = 0; i < nsz; i++) {
		snprintf(key, sizeof(key), "%s%u", tag, i);
		vt_pattern(vt_page(n, VT_EO_SRC), sizes[i], i + 1);
		vt_kv_sqe(&s, NKV_KV_STORE, key, 0, sizes[i]);
		vt_prps(n, &s, VT_EO_SRC, sizes[i], VT_EO_SRC + 4);
		if ((st = vt_cmd(n, 1, &s, NULL)))
			VT_FAIL("store %s (%u bytes): status %#x", key, sizes[i], st);
		vt_kv_sqe(&s, NKV_KV_EXIST, key, 0, 0);
		if ((st = vt_cmd(n, 1, &s, NULL)))
			VT_FAIL("exist %s: status %#x", key, st);
	}
	for (i = 0; i < nsz; i++) {
		snprintf(key, sizeof(key), "%s%u", tag, i);
		vt_pattern(want, sizes[i], i + 1);
		memset(vt_page(n, VT_EO_DST), 0, 4 * NKV_PAGE_SIZE);
		vt_kv_sqe(&s, NKV_KV_RETRIEVE, key, 0, 4 * NKV_PAGE_SIZE);
		vt_prps(n, &s, VT_EO_DST, 4 * NKV_PAGE_SIZE, VT_EO_DST + 4);
		dw0 = 0;
		if ((st = vt_cmd(n, 1, &s, &dw0)) || dw0 != sizes[i])
			VT_FAIL("retrieve %s: status %#x size %u of %u", key, st, dw0, sizes[i]);
		if (memcmp(vt_page(n, VT_EO_DST), want, sizes[i]))
			VT_FAIL("retrieve %s: bytes differ", key);
		/* A short buffer gets the first bytes, DW0 the full size. */
		memset(vt_page(n, VT_EO_DST), 0, NKV_PAGE_SIZE);
		vt_kv_sqe(&s, NKV_KV_RETRIEVE, key, vt_iova(n, VT_EO_DST), 64);
		if ((st = vt_cmd(n, 1, &s, &dw0)) || dw0 != sizes[i] ||
		    memcmp(vt_page(n, VT_EO_DST), want, sizes[i] < 64 ? sizes[i] : 64))
			VT_FAIL("short retrieve %s: status %#x size %u", key, st, dw0);
	}
	memset(vt_page(n, VT_EO_DST), 0, NKV_PAGE_SIZE);
	vt_kv_sqe(&s, NKV_KV_LIST, "", vt_iova(n, VT_EO_DST), NKV_PAGE_SIZE);
	if ((st = vt_cmd(n, 1, &s, NULL)))
		VT_FAIL("list: status %#x", st);
	for (i = 0; i < nsz; i++) {
		snprintf(key, sizeof(key), "%s%u", tag, i);
		if (!vt_listed(vt_page(n, VT_EO_DST), NKV_PAGE_SIZE, key))
			VT_FAIL("list: %s missing", key);
	}
	for (i = 0; i < nsz; i++) {
		snprintf(key, sizeof(key), "%s%u", tag, i);
		vt_kv_sqe(&s, NKV_KV_DELETE, key, 0, 0);
		if ((st = vt_cmd(n, 1, &s, NULL)))
			VT_FAIL("delete %s: status %#x", key, st);
		vt_kv_sqe(&s, NKV_KV_EXIST, key, 0, 0);
		if ((st = vt_cmd(n, 1, &s, NULL)) != NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS))
			VT_FAIL("exist after delete %s: status %#x", key, st);
	}
#undef VT_FAIL
	return 0;
}
