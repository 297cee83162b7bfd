// SPDX-License-Identifier: MIT
/*
 * nkv_vmtest - runs inside the QEMU guest against QEMU's emulated NVMe
 * controller bound to nkv.ko, through the pcie transport and the module's
 * ioctls. Static, so the busybox initramfs needs nothing else.
 *
 *   nkv_vmtest rw DEV EXPECT [iommu]  bring-up, I/O queue pair, batched
 *                                     writes + reads of LFSR data, verify,
 *                                     queue wrap; EXPECT gets the data for
 *                                     a later compare through /dev/nvme0n1
 *   nkv_vmtest hammer DEV             bring-up, then writes until killed
 *   nkv_vmtest badargs DEV            every ioctl/mmap error path
 *   nkv_vmtest unbind DEV PCIADDR     unbind nkv while the file is open
 *
 * DEV is /dev/nkvN or a PCI address. The controller code here (the
 * vt_ctrl_* and vt_io_* functions) is the minimal subset the test needs;
 * when the host library (nkv_host.h) lands, these calls map one to one
 * onto its controller bring-up and queue-pair API.
 * Exit status 0 = pass; every failure prints one "FAIL:" line.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "nkv_dev.h"
#include "nkv_kmod.h"
#include "nkv_wire.h"
#include "host/pcie.h"
#include "host/transport.h"

#define VT_ADMIN_DEPTH 32u
#define VT_IO_DEPTH 16u		/* small, so the test wraps the rings */
#define VT_BATCH 8u		/* commands per doorbell write */
#define VT_CMDS 32u		/* commands per pass, 8 KiB each */
#define VT_CMD_PAGES 2u		/* PRP1 + PRP2 */
#define VT_DATA_PAGES (VT_CMDS * VT_CMD_PAGES)
#define VT_SLBA_BYTES (1u << 20)	/* I/O starts 1 MiB into the disk */
#define VT_TIMEOUT_MS 5000

/* Pages of the one DMA region: queues, identify page, write and read data. */
enum { VT_PG_ASQ, VT_PG_ACQ, VT_PG_IOSQ, VT_PG_IOCQ, VT_PG_ID, VT_PG_WR,
	VT_PG_RD = VT_PG_WR + VT_DATA_PAGES, VT_PAGES = VT_PG_RD + VT_DATA_PAGES };

#define FAIL(...) do { printf("FAIL: " __VA_ARGS__); printf("\n"); return -1; } while (0)

struct vt_queue {
	uint16_t qid;
	uint16_t depth;
	uint16_t sq_tail;
	uint16_t cq_head;
	uint32_t phase;
	uint16_t next_cid;
	struct nkv_sqe *sq;
	volatile struct nkv_cqe *cq;
	volatile uint32_t *sq_db;
	volatile uint32_t *cq_db;
};

struct vt {
	const struct nkv_transport_ops *ops;
	struct nkv_tr *tr;
	uint64_t cap;
	struct nkv_dmamem mem;
	uint8_t *pages;
	struct vt_queue aq;
	struct vt_queue ioq;
	uint32_t lba_bytes;
};

static uint64_t vt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void *vt_page(struct vt *v, unsigned int pg)
{
	return v->pages + (size_t)pg * NKV_PAGE_SIZE;
}

static uint64_t vt_iova(struct vt *v, unsigned int pg)
{
	return v->mem.iova[pg];
}

static uint32_t vt_reg32(struct vt *v, uint32_t off)
{
	uint64_t val = ~0ull;

	v->ops->reg_read(v->tr, off, 4, &val);
	return (uint32_t)val;
}

/* Wait until (CSTS & mask) == want, within CAP.TO. */
static int vt_wait_csts(struct vt *v, uint32_t mask, uint32_t want)
{
	uint64_t deadline = vt_now_ms() + (nkv_cap_to(v->cap) + 1u) * 500u;
	uint32_t csts;

	for (;;) {
		csts = vt_reg32(v, NKV_REG_CSTS);
		if (csts == 0xffffffffu || (csts & NKV_CSTS_CFS))
			FAIL("controller fatal or gone, CSTS=0x%x", csts);
		if ((csts & mask) == want)
			return 0;
		if (vt_now_ms() > deadline)
			FAIL("CSTS 0x%x never reached 0x%x/0x%x", csts, want, mask);
		usleep(1000);
	}
}

static void vt_queue_init(struct vt *v, struct vt_queue *q, uint16_t qid, uint16_t depth,
			  unsigned int sq_pg, unsigned int cq_pg)
{
	size_t dblen;
	volatile uint32_t *db = v->ops->doorbells(v->tr, &dblen);
	uint32_t dstrd = nkv_cap_dstrd(v->cap);

	memset(q, 0, sizeof(*q));
	q->qid = qid;
	q->depth = depth;
	q->phase = 1;
	q->sq = vt_page(v, sq_pg);
	q->cq = vt_page(v, cq_pg);
	memset(q->sq, 0, NKV_PAGE_SIZE);
	memset((void *)q->cq, 0, NKV_PAGE_SIZE);
	q->sq_db = db + (nkv_sq_db_off(qid, dstrd) - NKV_REG_DBS) / 4;
	q->cq_db = db + (nkv_cq_db_off(qid, dstrd) - NKV_REG_DBS) / 4;
}

/* Copy one SQE into the ring; the caller rings the doorbell per batch. */
static uint16_t vt_push(struct vt_queue *q, struct nkv_sqe *sqe)
{
	uint16_t cid = q->next_cid++;

	sqe->cdw0 = nkv_sqe_cdw0((uint8_t)sqe->cdw0, cid);
	q->sq[q->sq_tail] = *sqe;
	q->sq_tail = (uint16_t)((q->sq_tail + 1u) % q->depth);
	return cid;
}

static void vt_ring_sq(struct vt_queue *q)
{
	/* SQE stores before the tail write that publishes them. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*q->sq_db = q->sq_tail;
}

/* Reap one completion: phase first, then (acquire) the payload. */
static int vt_reap(struct vt_queue *q, uint16_t *cid, uint16_t *status, uint32_t *dw0)
{
	uint64_t deadline = vt_now_ms() + VT_TIMEOUT_MS;
	volatile struct nkv_cqe *e = &q->cq[q->cq_head];
	uint32_t dw3;

	for (;;) {
		dw3 = e->dw3;
		if (nkv_cqe_phase(dw3) == q->phase)
			break;
		if (vt_now_ms() > deadline)
			FAIL("qid %u: no completion at head %u", q->qid, q->cq_head);
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	dw3 = e->dw3;
	*cid = nkv_cqe_cid(dw3);
	*status = nkv_cqe_status(dw3);
	if (dw0)
		*dw0 = e->dw0;
	q->cq_head = (uint16_t)((q->cq_head + 1u) % q->depth);
	if (q->cq_head == 0)
		q->phase ^= 1u;
	return 0;
}

static void vt_ring_cq(struct vt_queue *q)
{
	*q->cq_db = q->cq_head;
}

static int vt_admin(struct vt *v, struct nkv_sqe *sqe, uint32_t *dw0)
{
	uint16_t cid, got, status;
	uint8_t opc = (uint8_t)sqe->cdw0;

	cid = vt_push(&v->aq, sqe);
	vt_ring_sq(&v->aq);
	if (vt_reap(&v->aq, &got, &status, dw0))
		FAIL("admin opcode 0x%x timed out", opc);
	vt_ring_cq(&v->aq);
	if (got != cid || status)
		FAIL("admin opcode 0x%x: cid %u/%u status 0x%x", opc, got, cid, status);
	return 0;
}

static int vt_ctrl_enable(struct vt *v)
{
	uint32_t cc;

	v->cap = 0;
	v->ops->reg_read(v->tr, NKV_REG_CAP, 8, &v->cap);
	if (nkv_cap_mqes(v->cap) + 1u < VT_IO_DEPTH || !(nkv_cap_css(v->cap) & NKV_CAP_CSS_NVM))
		FAIL("CAP 0x%llx unusable", (unsigned long long)v->cap);
	/* nkv.ko disabled it at bind and on every release; make sure. */
	cc = vt_reg32(v, NKV_REG_CC);
	v->ops->reg_write(v->tr, NKV_REG_CC, cc & ~1u, 4);
	if (vt_wait_csts(v, NKV_CSTS_RDY, 0))
		return -1;
	vt_queue_init(v, &v->aq, 0, VT_ADMIN_DEPTH, VT_PG_ASQ, VT_PG_ACQ);
	v->ops->reg_write(v->tr, NKV_REG_AQA, nkv_aqa(VT_ADMIN_DEPTH, VT_ADMIN_DEPTH), 4);
	v->ops->reg_write(v->tr, NKV_REG_ASQ, vt_iova(v, VT_PG_ASQ), 8);
	v->ops->reg_write(v->tr, NKV_REG_ACQ, vt_iova(v, VT_PG_ACQ), 8);
	cc = (1u << NKV_CC_EN_SHIFT) | (NKV_CC_CSS_NVM << NKV_CC_CSS_SHIFT) |
	     (6u << NKV_CC_IOSQES_SHIFT) | (4u << NKV_CC_IOCQES_SHIFT);
	v->ops->reg_write(v->tr, NKV_REG_CC, cc, 4);
	return vt_wait_csts(v, NKV_CSTS_RDY, NKV_CSTS_RDY);
}

static int vt_identify(struct vt *v, uint8_t cns, uint32_t nsid)
{
	struct nkv_sqe sqe = { .cdw0 = NKV_ADM_IDENTIFY, .nsid = nsid };

	sqe.prp1 = vt_iova(v, VT_PG_ID);
	sqe.cdw10 = nkv_identify_cdw10(cns, 0);
	return vt_admin(v, &sqe, NULL);
}

static int vt_ctrl_identify(struct vt *v)
{
	const struct nkv_id_ctrl *id = vt_page(v, VT_PG_ID);
	const struct nkv_id_ns_nvm *ns = vt_page(v, VT_PG_ID);
	uint32_t lbads;

	if (vt_identify(v, NKV_CNS_CTRL, 0))
		return -1;
	printf("identify: vid 0x%04x mn '%.40s' sn '%.20s' nn %u\n", id->vid, id->mn, id->sn, id->nn);
	if (id->nn < 1)
		FAIL("no namespaces");
	if (vt_identify(v, NKV_CNS_NS, 1))
		return -1;
	lbads = ns->lbaf[ns->flbas & 0xfu].lbads;
	if (lbads < 9 || lbads > 12)
		FAIL("LBA size 2^%u unsupported here", lbads);
	v->lba_bytes = 1u << lbads;
	printf("identify: ns1 %llu blocks of %u bytes\n", (unsigned long long)ns->nsze, v->lba_bytes);
	if (ns->nsze * v->lba_bytes < VT_SLBA_BYTES + VT_DATA_PAGES * NKV_PAGE_SIZE)
		FAIL("namespace too small");
	return 0;
}

static int vt_io_create(struct vt *v)
{
	struct nkv_sqe sqe = { .cdw0 = NKV_ADM_SET_FEATURES };
	uint16_t qid = 1;

	sqe.cdw10 = NKV_FID_NUM_QUEUES;
	sqe.cdw11 = nkv_num_queues(1, 1);
	if (vt_admin(v, &sqe, NULL))
		return -1;
	vt_queue_init(v, &v->ioq, qid, VT_IO_DEPTH, VT_PG_IOSQ, VT_PG_IOCQ);
	memset(&sqe, 0, sizeof(sqe));
	sqe.cdw0 = NKV_ADM_CREATE_CQ;
	sqe.prp1 = vt_iova(v, VT_PG_IOCQ);
	sqe.cdw10 = nkv_queue_cdw10(qid, VT_IO_DEPTH);
	sqe.cdw11 = NKV_QUEUE_PC;	/* polled: no interrupts */
	if (vt_admin(v, &sqe, NULL))
		return -1;
	memset(&sqe, 0, sizeof(sqe));
	sqe.cdw0 = NKV_ADM_CREATE_SQ;
	sqe.prp1 = vt_iova(v, VT_PG_IOSQ);
	sqe.cdw10 = nkv_queue_cdw10(qid, VT_IO_DEPTH);
	sqe.cdw11 = nkv_create_sq_cdw11(qid);
	return vt_admin(v, &sqe, NULL);
}

static int vt_io_delete(struct vt *v)
{
	struct nkv_sqe sqe = { .cdw0 = NKV_ADM_DELETE_SQ, .cdw10 = 1 };

	if (vt_admin(v, &sqe, NULL))
		return -1;
	memset(&sqe, 0, sizeof(sqe));
	sqe.cdw0 = NKV_ADM_DELETE_CQ;
	sqe.cdw10 = 1;
	return vt_admin(v, &sqe, NULL);
}

/* Galois LFSR, taps 32,22,2,1: cheap data that differs in every dword. */
static uint32_t vt_lfsr(uint32_t x)
{
	return (x >> 1) ^ (-(x & 1u) & 0x80200003u);
}

static void vt_fill(uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed | 1u, *w = (uint32_t *)p;
	size_t i;

	for (i = 0; i < len / 4; i++) {
		x = vt_lfsr(x);
		w[i] = x;
	}
}

/* One NVM command of VT_CMD_PAGES pages for command index i, prepared by
 * the device hot-path header (nkv_dev.h); vt_push() sets the CID. */
static void vt_rw_sqe(struct vt *v, struct nkv_sqe *sqe, uint8_t opc, unsigned int i,
		      unsigned int base_pg)
{
	uint32_t per_cmd = VT_CMD_PAGES * NKV_PAGE_SIZE;
	uint64_t slba = (VT_SLBA_BYTES + (uint64_t)i * per_cmd) / v->lba_bytes;
	unsigned int pg = base_pg + i * VT_CMD_PAGES;

	/* Two pages: PRP2 is the second page itself, no PRP list. */
	nkv_prep_nvm_rw(sqe, opc, 1, 0, slba, per_cmd / v->lba_bytes, vt_iova(v, pg),
			vt_iova(v, pg + 1));
}

/* Submit VT_CMDS commands in batches of VT_BATCH: one SQ doorbell write
 * per batch, then reap the batch and write the CQ head doorbell once. */
static int vt_io_pass(struct vt *v, uint8_t opc, unsigned int base_pg)
{
	struct nkv_sqe sqe;
	unsigned int i, b;
	uint16_t cid, status;
	uint32_t inflight;

	for (b = 0; b < VT_CMDS; b += VT_BATCH) {
		inflight = 0;
		for (i = b; i < b + VT_BATCH; i++) {
			vt_rw_sqe(v, &sqe, opc, i, base_pg);
			vt_push(&v->ioq, &sqe);
			inflight |= 1u << (v->ioq.next_cid - 1u) % 32u;
		}
		vt_ring_sq(&v->ioq);
		for (i = 0; i < VT_BATCH; i++) {
			if (vt_reap(&v->ioq, &cid, &status, NULL))
				return -1;
			if (status)
				FAIL("opcode 0x%x cid %u status 0x%x", opc, cid, status);
			if (!(inflight & (1u << cid % 32u)))
				FAIL("completion for cid %u not in flight", cid);
			inflight &= ~(1u << cid % 32u);
		}
		vt_ring_cq(&v->ioq);
	}
	return 0;
}

static int vt_open(struct vt *v, const char *dev)
{
	char err[512] = "";
	size_t len = (size_t)VT_PAGES * NKV_PAGE_SIZE;
	int ret;

	memset(v, 0, sizeof(*v));
	v->ops = &nkv_transport_pcie;
	ret = v->ops->open(dev, &v->tr, err, sizeof(err));
	if (ret)
		FAIL("open %s: %d %s", dev, ret, err);
	v->pages = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (v->pages == MAP_FAILED)
		FAIL("mmap %zu bytes", len);
	memset(v->pages, 0, len);
	v->mem.va = v->pages;
	v->mem.len = len;
	v->mem.fd = -1;
	ret = v->ops->dma_map(v->tr, &v->mem);
	if (ret)
		FAIL("dma_map: %d", ret);
	printf("dma_map: %zu pages, iova[0] 0x%llx, contiguous %d\n", v->mem.npages,
	       (unsigned long long)v->mem.iova[0], v->mem.contiguous);
	return 0;
}

static int vt_close(struct vt *v)
{
	int ret = v->ops->dma_unmap(v->tr, &v->mem);

	v->ops->close(v->tr);
	if (ret)
		FAIL("dma_unmap: %d", ret);
	return 0;
}

static int vt_bringup(struct vt *v, const char *dev)
{
	if (vt_open(v, dev) || vt_ctrl_enable(v) || vt_ctrl_identify(v) || vt_io_create(v))
		return -1;
	return 0;
}

static int vt_write_expect(struct vt *v, const char *path)
{
	size_t len = (size_t)VT_DATA_PAGES * NKV_PAGE_SIZE;
	FILE *f = fopen(path, "wb");

	if (!f)
		FAIL("cannot write %s", path);
	if (fwrite(vt_page(v, VT_PG_WR), 1, len, f) != len) {
		fclose(f);
		FAIL("short write to %s", path);
	}
	return fclose(f) ? -1 : 0;
}

static int vt_check_iommu(struct vt *v, int want)
{
	struct nkv_kmod_info info;
	int fd = nkv_pcie_fd(v->tr);

	if (ioctl(fd, NKV_IOC_INFO, &info))
		FAIL("info: %s", strerror(errno));
	printf("info: %04x:%04x class %06x bar0 %llu iommu %u\n", info.vendor, info.device,
	       info.class_code, (unsigned long long)info.bar0_size, info.flags & NKV_KMOD_INFO_IOMMU);
	if (!!(info.flags & NKV_KMOD_INFO_IOMMU) != want)
		FAIL("IOMMU flag %u, expected %d", info.flags, want);
	return 0;
}

static int vt_mode_rw(const char *dev, const char *expect, int iommu)
{
	size_t len = (size_t)VT_DATA_PAGES * NKV_PAGE_SIZE;
	struct vt v;
	unsigned int pass;

	if (vt_bringup(&v, dev) || vt_check_iommu(&v, iommu))
		return -1;
	/* Two passes with different data: the second proves the first
	 * was overwritten and the rings wrapped several times. */
	for (pass = 0; pass < 2; pass++) {
		vt_fill(vt_page(&v, VT_PG_WR), len, 0x6b76u + pass * 0x1000193u);
		memset(vt_page(&v, VT_PG_RD), 0xee, len);
		if (vt_io_pass(&v, NKV_NVM_WRITE, VT_PG_WR) || vt_io_pass(&v, NKV_NVM_READ, VT_PG_RD))
			return -1;
		if (memcmp(vt_page(&v, VT_PG_WR), vt_page(&v, VT_PG_RD), len))
			FAIL("pass %u: read data differs from written data", pass);
	}
	printf("rw: %u commands of %u KiB verified, sq wrapped %u times\n", 4u * VT_CMDS,
	       VT_CMD_PAGES * 4u, 4u * VT_CMDS / VT_IO_DEPTH);
	if (vt_write_expect(&v, expect) || vt_io_delete(&v))
		return -1;
	return vt_close(&v);
}

/* Writes until killed (bounded to 60 s so a lost kill cannot hang). */
static int vt_mode_hammer(const char *dev)
{
	size_t len = (size_t)VT_DATA_PAGES * NKV_PAGE_SIZE;
	uint64_t end = vt_now_ms() + 60000u;
	struct vt v;
	unsigned long n = 0;

	if (vt_bringup(&v, dev))
		return -1;
	vt_fill(vt_page(&v, VT_PG_WR), len, 0x55aa);
	while (vt_now_ms() < end) {
		if (vt_io_pass(&v, NKV_NVM_WRITE, VT_PG_WR))
			return -1;
		if (n++ == 0) {
			printf("HAMMER-RUNNING\n");
			fflush(stdout);
		}
	}
	FAIL("hammer was not killed within 60 s");
}

static int vt_expect_map(int fd, void *addr, uint64_t len, uint64_t npages, uint32_t flags,
			 uint64_t *iova, int want, const char *what)
{
	struct nkv_kmod_map m = {
		.addr = (uintptr_t)addr, .len = len, .npages = npages,
		.iova_ptr = (uintptr_t)iova, .flags = flags,
	};
	int ret = ioctl(fd, NKV_IOC_MAP, &m) ? errno : 0;

	if (ret != want)
		FAIL("map %s: got %s, want %s", what, strerror(ret), strerror(want));
	printf("ok: map %s -> %s\n", what, want ? strerror(want) : "success");
	if (!ret) {
		struct nkv_kmod_unmap u = { .handle = m.handle };

		if (!m.handle || ioctl(fd, NKV_IOC_UNMAP, &u))
			FAIL("unmap of %s", what);
	}
	return 0;
}

static int vt_expect_errno(int ret, int want, const char *what)
{
	int got = ret ? errno : 0;

	if (got != want)
		FAIL("%s: got %s, want %s", what, strerror(got), strerror(want));
	printf("ok: %s -> %s\n", what, want ? strerror(want) : "success");
	return 0;
}

/* The pin limit is the module parameter max_pinned_mb, read back via info. */
static int vt_bad_limits(int fd, uint64_t limit, uint64_t *iova)
{
	size_t big = (size_t)limit + 2 * NKV_PAGE_SIZE, half = (size_t)limit / 2 + NKV_PAGE_SIZE;
	uint8_t *p = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint64_t *many = calloc(big / NKV_PAGE_SIZE, sizeof(*many));
	struct nkv_kmod_map m = { .addr = (uintptr_t)p, .len = half, .npages = half / NKV_PAGE_SIZE };
	struct nkv_kmod_unmap u;
	int ret = 0;

	if (p == MAP_FAILED || !many)
		FAIL("cannot reserve %zu bytes", big);
	m.iova_ptr = (uintptr_t)many;
	ret |= vt_expect_map(fd, p, big, big / NKV_PAGE_SIZE, 0, many, E2BIG, "past the pin limit");
	if (ioctl(fd, NKV_IOC_MAP, &m))
		FAIL("map of half the limit: %s", strerror(errno));
	ret |= vt_expect_map(fd, p + half, half, half / NKV_PAGE_SIZE, 0, many, E2BIG,
			     "two halves past the limit");
	u.handle = m.handle;
	ret |= vt_expect_errno(ioctl(fd, NKV_IOC_UNMAP, &u), 0, "unmap first half");
	ret |= vt_expect_map(fd, p + half, half, half / NKV_PAGE_SIZE, 0, many, 0,
			     "second half after unmap");
	ret |= vt_expect_errno(ioctl(fd, NKV_IOC_UNMAP, &u), EINVAL, "unmap twice");
	(void)iova;
	free(many);
	munmap(p, big);
	return ret;
}

static int vt_bad_mmaps(int fd, uint64_t bar)
{
	void *p;
	int ret = 0;

	p = mmap(NULL, bar + NKV_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ret |= vt_expect_errno(p == MAP_FAILED, EINVAL, "mmap past BAR0");
	p = mmap(NULL, NKV_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, bar);
	ret |= vt_expect_errno(p == MAP_FAILED, EINVAL, "mmap at offset BAR0 size");
	p = mmap(NULL, NKV_PAGE_SIZE, PROT_READ, MAP_PRIVATE, fd, 0);
	ret |= vt_expect_errno(p == MAP_FAILED, EINVAL, "mmap MAP_PRIVATE");
	p = mmap(NULL, bar, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ret |= vt_expect_errno(p == MAP_FAILED, 0, "mmap all of BAR0");
	if (p != MAP_FAILED) {
		uint32_t vs = ((volatile uint32_t *)p)[NKV_REG_VS / 4];

		printf("ok: VS through mmap 0x%x\n", vs);
		if (vs < NKV_VS(1, 0, 0) || vs == 0xffffffffu)
			ret = -1;
		munmap(p, bar);
	}
	return ret;
}

static int vt_mode_badargs(const char *dev)
{
	struct nkv_kmod_info info;
	struct nkv_kmod_dmabuf db = { 0 };
	struct nkv_kmod_unmap u = { .handle = 12345 };
	uint64_t iova[8];
	uint8_t *p, *ro;
	int fd, ret = 0;

	fd = open(dev, O_RDWR);
	if (fd < 0)
		FAIL("open %s: %s", dev, strerror(errno));
	ret |= vt_expect_errno(open(dev, O_RDWR) >= 0 ? 0 : -1, EBUSY, "second open");
	if (ioctl(fd, NKV_IOC_INFO, &info))
		FAIL("info: %s", strerror(errno));
	if (info.class_code != 0x010802 || info.abi != NKV_KMOD_ABI || info.bar0_size < 8192)
		FAIL("info: class %06x abi %u bar %llu", info.class_code, info.abi,
		     (unsigned long long)info.bar0_size);
	p = mmap(NULL, 8 * NKV_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro = mmap(NULL, NKV_PAGE_SIZE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || ro == MAP_FAILED)
		FAIL("mmap");
	ret |= vt_expect_map(fd, p, 4 * NKV_PAGE_SIZE, 4, 0, iova, 0, "4 good pages");
	ret |= vt_expect_map(fd, p + 1, NKV_PAGE_SIZE, 1, 0, iova, EINVAL, "unaligned address");
	ret |= vt_expect_map(fd, p, 0, 0, 0, iova, EINVAL, "zero length");
	ret |= vt_expect_map(fd, p, 100, 1, 0, iova, EINVAL, "unaligned length");
	ret |= vt_expect_map(fd, p, 2 * NKV_PAGE_SIZE, 3, 0, iova, EINVAL, "count mismatch");
	ret |= vt_expect_map(fd, p, NKV_PAGE_SIZE, 1, 0x80, iova, EINVAL, "unknown flag");
	ret |= vt_expect_map(fd, p, NKV_PAGE_SIZE, 1, 0, NULL, EINVAL, "no iova array");
	ret |= vt_expect_map(fd, ro, NKV_PAGE_SIZE, 1, 0, iova, EFAULT, "read-only memory");
	ret |= vt_expect_map(fd, (void *)0x1000, NKV_PAGE_SIZE, 1, 0, iova, EFAULT, "unmapped memory");
	ret |= vt_bad_limits(fd, info.pin_limit, iova);
	ret |= vt_expect_errno(ioctl(fd, NKV_IOC_UNMAP, &u), EINVAL, "unmap unknown handle");
	u.handle = 0;
	ret |= vt_expect_errno(ioctl(fd, NKV_IOC_UNMAP, &u), EINVAL, "unmap handle 0");
	ret |= vt_expect_errno(ioctl(fd, NKV_IOC_DMABUF_IMPORT, &db), EOPNOTSUPP, "dma-buf import");
	ret |= vt_expect_errno(ioctl(fd, _IO('N', 0xaf), 0), ENOTTY, "unknown ioctl");
	ret |= vt_bad_mmaps(fd, info.bar0_size);
	if (ioctl(fd, NKV_IOC_INFO, &info) || info.pinned)
		FAIL("pinned %llu bytes left after all unmaps", (unsigned long long)info.pinned);
	close(fd);
	return ret;
}

/* Unbind nkv while this process holds the device open and mapped. */
static int vt_mode_unbind(const char *dev, const char *pciaddr)
{
	struct nkv_kmod_info info;
	struct vt v;
	int fd, ret = 0;

	if (vt_open(&v, dev))
		return -1;
	if (v.ops->alive(v.tr))
		FAIL("not alive before unbind");
	fd = open("/sys/bus/pci/drivers/nkv/unbind", O_WRONLY);
	if (fd < 0 || write(fd, pciaddr, strlen(pciaddr)) < 0)
		FAIL("unbind %s: %s", pciaddr, strerror(errno));
	close(fd);
	fd = nkv_pcie_fd(v.tr);
	ret |= vt_expect_errno(ioctl(fd, NKV_IOC_INFO, &info), ENODEV, "info after unbind");
	if (v.ops->alive(v.tr) != -ENODEV)
		FAIL("alive after unbind is not -ENODEV");
	if (v.ops->dma_unmap(v.tr, &v.mem) != -ENODEV)
		FAIL("unmap after unbind is not -ENODEV");
	printf("ok: alive and unmap after unbind -> ENODEV\n");
	v.ops->close(v.tr);
	return ret;
}

int main(int argc, char **argv)
{
	int ret = -1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4 && !strcmp(argv[1], "rw"))
		ret = vt_mode_rw(argv[2], argv[3], argc > 4 && !strcmp(argv[4], "iommu"));
	else if (argc == 3 && !strcmp(argv[1], "hammer"))
		ret = vt_mode_hammer(argv[2]);
	else if (argc == 3 && !strcmp(argv[1], "badargs"))
		ret = vt_mode_badargs(argv[2]);
	else if (argc == 4 && !strcmp(argv[1], "unbind"))
		ret = vt_mode_unbind(argv[2], argv[3]);
	else
		fprintf(stderr, "usage: %s rw|hammer|badargs|unbind DEV [...]\n", argv[0]);
	return ret ? 1 : 0;
}
