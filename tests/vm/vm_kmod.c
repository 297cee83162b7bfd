// SPDX-License-Identifier: MIT
/*
 * vm_kmod.c - guest cases that talk to nkv.ko below the host library:
 * every ioctl/mmap error path, and an unbind while the device is open,
 * through the pcie transport's ops table and the module's own ioctls.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nkv_kmod.h"
#include "nkv_wire.h"
#include "host/pcie.h"
#include "host/transport.h"
#include "vmtest.h"

#define VT_PAGES 16u

/* One open transport with one DMA-mapped block of host memory. */
struct vt {
	const struct nkv_transport_ops *ops;
	struct nkv_tr *tr;
	struct nkv_dmamem mem;
	uint8_t *pages;
};

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


int vt_check_iommu(const char *dev, int want)
{
	struct nkv_kmod_info info;
	struct vt v;
	int ret;

	if (vt_open(&v, dev))
		return -1;
	ret = ioctl(nkv_pcie_fd(v.tr), NKV_IOC_INFO, &info) ? -errno : 0;
	vt_close(&v);
	if (ret)
		FAIL("info: %s", strerror(-ret));
	printf("info: %04x:%04x class %06x bar0 %llu iommu %u\n", info.vendor, info.device,
	       info.class_code, (unsigned long long)info.bar0_size, info.flags & NKV_KMOD_INFO_IOMMU);
	if (!!(info.flags & NKV_KMOD_INFO_IOMMU) != want)
		FAIL("IOMMU flag %u, expected %d", info.flags, want);
	return 0;
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
	/* Unmapped pages stay pinned and charged until the module quiesces. */
	ret |= vt_expect_map(fd, p + half, half, half / NKV_PAGE_SIZE, 0, many, E2BIG,
			     "second half after unmap (still charged until close)");
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

/* NKV_IOC_DMABUF_IMPORT's argument checks, before any dma-buf is touched. */
static int vt_bad_imports(int fd, uint64_t *iova)
{
	struct nkv_kmod_dmabuf db = { .fd = (uint32_t)fd, .len = NKV_PAGE_SIZE, .npages = 1,
				      .iova_ptr = (uintptr_t)iova };
	int ret = 0;

	db.len = 0;
	ret |= vt_expect_errno(ioctl(fd, NKV_IOC_DMABUF_IMPORT, &db), EINVAL, "import zero length");
	db.len = NKV_PAGE_SIZE;
	db.offset = 100;
	ret |= vt_expect_errno(ioctl(fd, NKV_IOC_DMABUF_IMPORT, &db), EINVAL, "import unaligned offset");
	db.offset = 0;
	db.npages = 2;
	ret |= vt_expect_errno(ioctl(fd, NKV_IOC_DMABUF_IMPORT, &db), EINVAL, "import count mismatch");
	db.npages = 1;
	db.flags = 1;
	ret |= vt_expect_errno(ioctl(fd, NKV_IOC_DMABUF_IMPORT, &db), EINVAL, "import unknown flag");
	db.flags = 0;
	ret |= vt_expect_errno(ioctl(fd, NKV_IOC_DMABUF_IMPORT, &db), EINVAL, "import of a non-dma-buf fd");
	db.fd = 999;
	ret |= vt_expect_errno(ioctl(fd, NKV_IOC_DMABUF_IMPORT, &db), EBADF, "import of a closed fd");
	return ret;
}

int vt_mode_badargs(const char *dev)
{
	struct nkv_kmod_info info;
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
	ret |= vt_bad_imports(fd, iova);
	ret |= vt_expect_errno(ioctl(fd, _IO('N', 0xaf), 0), ENOTTY, "unknown ioctl");
	ret |= vt_bad_mmaps(fd, info.bar0_size);
	close(fd);
	/* The close quiesced the controller and released every range. */
	fd = open(dev, O_RDWR);
	if (fd < 0 || ioctl(fd, NKV_IOC_INFO, &info) || info.pinned)
		FAIL("pinned %llu bytes left after close", (unsigned long long)info.pinned);
	close(fd);
	return ret;
}

/* Unbind nkv while this process holds the device open and mapped. */
int vt_mode_unbind(const char *dev, const char *pciaddr)
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
