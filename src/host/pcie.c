// SPDX-License-Identifier: MIT
/*
 * pcie.c - the "pcie" transport: a PCIe NVMe controller bound to kmod/nkv.ko.
 *
 * The module gives this process the whole controller: BAR0 is mmapped
 * (registers and doorbells), and host memory is pinned and DMA-mapped by
 * ioctl, returning one device address per 4 KiB page. Closing the file
 * makes the module disable the controller before it unpins anything.
 *
 * An address is "/dev/nkvN" or a PCI address ("0000:02:00.0"); for the
 * latter the device node is found through sysfs. A controller held by
 * another driver is reported with the commands that move it, never moved.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pciaccess.h>

#include "nkv_kmod.h"
#include "nkv_wire.h"
#include "host/host.h"
#include "host/pcie.h"
#include "host/transport.h"

#define NKV_PCI_CLASS_NVME 0x010802u
#define NKV_SYSFS_PCI "/sys/bus/pci"

struct nkv_pcie {
	int fd;
	volatile uint8_t *bar;
	size_t bar_len;
	struct nkv_kmod_info info;
};

/* struct nkv_tr is opaque to the layers above; here it is a nkv_pcie. */
static struct nkv_pcie *nkv_pcie_of(struct nkv_tr *tr)
{
	return (struct nkv_pcie *)tr;
}

int nkv_pcie_fd(struct nkv_tr *tr)
{
	return nkv_pcie_of(tr)->fd;
}

/* "0000:02:00.0" or "02:00.0" -> canonical "0000:02:00.0"; 0 or -EINVAL. */
static int nkv_pcie_canon(const char *addr, char out[16])
{
	unsigned int dom = 0, bus, dev, fn;
	char tail;

	if (sscanf(addr, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) == 4) {
		if (strlen(addr) != 12)
			return -EINVAL;
	} else if (sscanf(addr, "%x:%x.%x%c", &bus, &dev, &fn, &tail) == 3) {
		if (strlen(addr) != 7)
			return -EINVAL;
		dom = 0;
	} else {
		return -EINVAL;
	}
	if (dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7 || strchr(addr, ' '))
		return -EINVAL;
	snprintf(out, 16, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return 0;
}

/* Name of the driver holding the device at sysfs dir @devdir, "" if none. */
static void nkv_pcie_driver_of(const char *devdir, char *drv, size_t len)
{
	char path[256], link[256];
	ssize_t n;
	const char *base;

	drv[0] = '\0';
	snprintf(path, sizeof(path), "%s/driver", devdir);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return;
	link[n] = '\0';
	base = strrchr(link, '/');
	snprintf(drv, len, "%.31s", base ? base + 1 : link);	/* names are short */
}

/* The nkvN misc device under a bound controller's sysfs dir. */
static int nkv_pcie_find_misc(const char *devdir, char *node, size_t nodelen)
{
	char path[256];
	struct dirent *de;
	DIR *d;
	int ret = -ENODEV;

	snprintf(path, sizeof(path), "%s/misc", devdir);
	d = opendir(path);
	if (!d)
		return -ENODEV;
	while ((de = readdir(d))) {
		/* Our misc names are "nkv" and a small number. */
		if (!strncmp(de->d_name, "nkv", 3) && strlen(de->d_name) < 16) {
			snprintf(node, nodelen, "/dev/%.15s", de->d_name);
			ret = 0;
			break;
		}
	}
	closedir(d);
	return ret;
}

static const char *nkv_pcie_sysfs = NKV_SYSFS_PCI;

void nkv_pcie_set_sysfs_root(const char *dir)
{
	nkv_pcie_sysfs = dir ? dir : NKV_SYSFS_PCI;
}

int nkv_pcie_devnode(const char *addr, char *node, size_t nodelen, char *err, size_t errlen)
{
	char canon[16], devdir[192], drv[32];
	struct stat st;

	if (nkv_pcie_canon(addr, canon)) {
		nkv_h_err(err, errlen, "'%s' is not a PCI address (want 0000:02:00.0)", addr);
		return -EINVAL;
	}
	snprintf(devdir, sizeof(devdir), "%s/devices/%s", nkv_pcie_sysfs, canon);
	if (stat(devdir, &st)) {
		nkv_h_err(err, errlen, "no PCI device %s", canon);
		return -ENODEV;
	}
	nkv_pcie_driver_of(devdir, drv, sizeof(drv));
	if (!drv[0]) {
		nkv_h_err(err, errlen,
			     "%s has no driver; bind it: echo nkv > %s/driver_override; echo %s > %s/drivers_probe",
			     canon, devdir, canon, nkv_pcie_sysfs);
		return -ENODEV;
	}
	if (strcmp(drv, "nkv")) {
		nkv_h_err(err, errlen,
			     "%s is held by driver '%s'; to give it to nkv: echo %s > %s/drivers/%s/unbind; echo nkv > %s/driver_override; echo %s > %s/drivers_probe",
			     canon, drv, canon, nkv_pcie_sysfs, drv, devdir, canon, nkv_pcie_sysfs);
		return -EBUSY;
	}
	if (nkv_pcie_find_misc(devdir, node, nodelen)) {
		nkv_h_err(err, errlen, "%s is bound to nkv but has no nkv device node", canon);
		return -ENODEV;
	}
	return 0;
}

static int nkv_pcie_open_node(struct nkv_pcie *p, const char *node, char *err, size_t errlen)
{
	int e;

	p->fd = open(node, O_RDWR | O_CLOEXEC);
	if (p->fd < 0) {
		e = errno;
		nkv_h_err(err, errlen, "%s: %s%s", node, strerror(e),
			     e == ENOENT ? " (nkv.ko loaded and a controller bound?)" :
			     e == EBUSY ? " (another process owns this controller)" :
			     e == EPERM ? " (no DMA isolation: needs a translating IOMMU with interrupt remapping, alone in its IOMMU group, or nkv's allow_unsafe_dma=1 and CAP_SYS_RAWIO; see the kernel log)" :
			     e == EOPNOTSUPP ? " (DMA would bounce through swiotlb or is not coherent; see the kernel log)" : "");
		return -e;
	}
	if (ioctl(p->fd, NKV_IOC_INFO, &p->info)) {
		e = errno;
		nkv_h_err(err, errlen, "%s: info ioctl: %s (not an nkv device?)", node, strerror(e));
		return -e;
	}
	if (p->info.abi != NKV_KMOD_ABI) {
		nkv_h_err(err, errlen, "%s: module ABI %u, library wants %u", node,
			     p->info.abi, NKV_KMOD_ABI);
		return -EPROTO;
	}
	return 0;
}

static int nkv_pcie_map_bar(struct nkv_pcie *p, const char *node, char *err, size_t errlen)
{
	void *bar;

	if (p->info.bar0_size < 2 * NKV_PAGE_SIZE) {
		nkv_h_err(err, errlen, "%s: BAR0 of %llu bytes has no doorbells", node,
			     (unsigned long long)p->info.bar0_size);
		return -ENODEV;
	}
	p->bar_len = p->info.bar0_size;
	bar = mmap(NULL, p->bar_len, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
	if (bar == MAP_FAILED) {
		int e = errno;

		nkv_h_err(err, errlen, "%s: mmap BAR0: %s", node, strerror(e));
		return -e;
	}
	p->bar = bar;
	return 0;
}

static void nkv_pcie_close(struct nkv_tr *tr)
{
	struct nkv_pcie *p = nkv_pcie_of(tr);

	if (!p)
		return;
	if (p->bar)
		munmap((void *)p->bar, p->bar_len);
	if (p->fd >= 0)
		close(p->fd);	/* the module quiesces the controller here */
	free(p);
}

static int nkv_pcie_alive(struct nkv_tr *tr);

static int nkv_pcie_open(const char *addr, struct nkv_tr **out, char *err, size_t errlen)
{
	char node[64];
	struct nkv_pcie *p;
	int ret;

	*out = NULL;
	if (!addr || !addr[0]) {
		nkv_h_err(err, errlen, "empty pcie address");
		return -EINVAL;
	}
	if (addr[0] == '/') {
		snprintf(node, sizeof(node), "%s", addr);
	} else {
		ret = nkv_pcie_devnode(addr, node, sizeof(node), err, errlen);
		if (ret)
			return ret;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		nkv_h_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->fd = -1;
	ret = nkv_pcie_open_node(p, node, err, errlen);
	if (!ret)
		ret = nkv_pcie_map_bar(p, node, err, errlen);
	if (!ret && nkv_pcie_alive((struct nkv_tr *)p)) {
		nkv_h_err(err, errlen, "%s: controller reads all-ones (gone?)", node);
		ret = -ENODEV;
	}
	if (ret) {
		nkv_pcie_close((struct nkv_tr *)p);
		return ret;
	}
	*out = (struct nkv_tr *)p;
	return 0;
}

static int nkv_pcie_reg_check(struct nkv_pcie *p, uint32_t off, unsigned int size)
{
	if ((size != 4 && size != 8) || off % size || (size_t)off + size > p->bar_len)
		return -EINVAL;
	return 0;
}

/*
 * 64-bit registers are accessed as two 32-bit halves, low first, as the
 * NVMe spec allows and some controllers require.
 */
static int nkv_pcie_reg_read(struct nkv_tr *tr, uint32_t off, unsigned int size, uint64_t *val)
{
	struct nkv_pcie *p = nkv_pcie_of(tr);
	volatile uint32_t *r;
	uint64_t lo;

	if (nkv_pcie_reg_check(p, off, size))
		return -EINVAL;
	r = (volatile uint32_t *)(p->bar + off);
	lo = r[0];
	*val = size == 8 ? lo | ((uint64_t)r[1] << 32) : lo;
	return 0;
}

static int nkv_pcie_reg_write(struct nkv_tr *tr, uint32_t off, uint64_t val, unsigned int size)
{
	struct nkv_pcie *p = nkv_pcie_of(tr);
	volatile uint32_t *r;

	if (nkv_pcie_reg_check(p, off, size))
		return -EINVAL;
	r = (volatile uint32_t *)(p->bar + off);
	/* Earlier stores to DMA memory (queue entries) must reach the
	 * system before the device sees this write. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	r[0] = (uint32_t)val;
	if (size == 8)
		r[1] = (uint32_t)(val >> 32);
	return 0;
}

static volatile uint32_t *nkv_pcie_doorbells(struct nkv_tr *tr, size_t *len)
{
	struct nkv_pcie *p = nkv_pcie_of(tr);

	if (len)
		*len = p->bar_len - NKV_REG_DBS;
	return (volatile uint32_t *)(p->bar + NKV_REG_DBS);
}

/*
 * m->iova may be supplied by the caller (npages entries at least) or left
 * NULL for the transport to allocate, as the vfio-user transport does.
 * Host memory is pinned (NKV_IOC_MAP), a dma-buf (m->dmabuf) imported.
 * tr_priv keeps the module's handle shifted left by one, bit 0 set when
 * the iova array is ours to free.
 */
/*
 * A dma-buf of device memory: NKV_IOC_DMABUF_IMPORT. The module refuses
 * one the exporter backs with system RAM (EOPNOTSUPP); a success must say
 * peer-to-peer, so the library never takes RAM for VRAM.
 */
static int nkv_pcie_import(struct nkv_pcie *p, struct nkv_dmamem *m, size_t npages,
			   uint64_t *handle, uint32_t *flags)
{
	struct nkv_kmod_dmabuf req = { 0 };
	struct nkv_kmod_unmap u;

	if (m->fd < 0)
		return -EBADF;
	req.fd = (uint32_t)m->fd;
	req.offset = m->fd_offset;
	req.len = m->len;
	req.npages = npages;
	req.iova_ptr = (uintptr_t)m->iova;
	if (ioctl(p->fd, NKV_IOC_DMABUF_IMPORT, &req))
		return -errno;
	if (!(req.flags & NKV_KMOD_MAP_P2P)) {
		u.handle = req.handle;
		(void)ioctl(p->fd, NKV_IOC_UNMAP, &u);
		return -EOPNOTSUPP;
	}
	nkv_h_trace("imported %zu bytes of a dma-buf of %.32s, peer-to-peer", m->len,
		    req.exporter);
	*handle = req.handle;
	*flags = req.flags;
	return 0;
}

/* Host memory: NKV_IOC_MAP pins and maps it. */
static int nkv_pcie_pin(struct nkv_pcie *p, struct nkv_dmamem *m, size_t npages,
			uint64_t *handle, uint32_t *flags)
{
	struct nkv_kmod_map req = { 0 };

	if (!m->va || (uintptr_t)m->va % NKV_PAGE_SIZE)
		return -EINVAL;
	req.addr = (uintptr_t)m->va;
	req.len = m->len;
	req.npages = npages;
	req.iova_ptr = (uintptr_t)m->iova;
	if (ioctl(p->fd, NKV_IOC_MAP, &req))
		return -errno;
	*handle = req.handle;
	*flags = req.flags;
	return 0;
}

static int nkv_pcie_dma_map(struct nkv_tr *tr, struct nkv_dmamem *m)
{
	struct nkv_pcie *p = nkv_pcie_of(tr);
	uint64_t handle = 0;
	uint32_t flags = 0;
	size_t npages;
	int owned, rc;

	if (!m || !m->len || m->len % NKV_PAGE_SIZE)
		return -EINVAL;
	if (m->by_messages)
		return -EOPNOTSUPP;	/* a device DMAs, it sends no messages */
	npages = m->len / NKV_PAGE_SIZE;
	if (m->iova && m->npages < npages)
		return -EINVAL;
	owned = !m->iova;
	if (owned) {
		m->iova = calloc(npages, sizeof(*m->iova));
		if (!m->iova)
			return -ENOMEM;
	}
	rc = m->dmabuf ? nkv_pcie_import(p, m, npages, &handle, &flags)
		       : nkv_pcie_pin(p, m, npages, &handle, &flags);
	if (rc) {
		if (owned) {
			free(m->iova);
			m->iova = NULL;
		}
		return rc;
	}
	m->npages = npages;
	m->contiguous = !!(flags & NKV_KMOD_MAP_CONTIGUOUS);
	m->tr_priv = (void *)(uintptr_t)((handle << 1) | (uint64_t)owned);
	return 0;
}

static int nkv_pcie_dma_unmap(struct nkv_tr *tr, struct nkv_dmamem *m)
{
	struct nkv_pcie *p = nkv_pcie_of(tr);
	uintptr_t priv = (uintptr_t)m->tr_priv;
	struct nkv_kmod_unmap req = { .handle = priv >> 1 };
	int ret = 0;

	if (!req.handle)
		return -EINVAL;
	if (ioctl(p->fd, NKV_IOC_UNMAP, &req))
		ret = -errno;
	if (priv & 1u) {
		free(m->iova);
		m->iova = NULL;
		m->npages = 0;
	}
	m->tr_priv = NULL;
	return ret;
}

/*
 * Asks the module first: after an unbind the BAR mapping is gone and a
 * read of it would raise SIGBUS. Then CSTS: all-ones means the device
 * dropped off the bus.
 */
static int nkv_pcie_alive(struct nkv_tr *tr)
{
	struct nkv_pcie *p = nkv_pcie_of(tr);
	struct nkv_kmod_info info;
	uint64_t csts = 0;

	if (ioctl(p->fd, NKV_IOC_INFO, &info))
		return -errno;
	if (nkv_pcie_reg_read(tr, NKV_REG_CSTS, 4, &csts))
		return -ENODEV;
	return csts == 0xffffffffu ? -ENODEV : 0;
}

const struct nkv_transport_ops nkv_transport_pcie = {
	.name = "pcie",
	.open = nkv_pcie_open,
	.close = nkv_pcie_close,
	.reg_read = nkv_pcie_reg_read,
	.reg_write = nkv_pcie_reg_write,
	.doorbells = nkv_pcie_doorbells,
	.maps_va = 1,
	.dma_map = nkv_pcie_dma_map,
	.dma_unmap = nkv_pcie_dma_unmap,
	.alive = nkv_pcie_alive,
	.mapped_regs = 1,
};

static void nkv_pcie_fill(struct pci_device *d, struct nkv_pcie_ctrl *c)
{
	char devdir[192];

	memset(c, 0, sizeof(*c));
	snprintf(c->addr, sizeof(c->addr), "%04x:%02x:%02x.%x", d->domain, d->bus, d->dev,
		 d->func);
	c->vendor = d->vendor_id;
	c->device = d->device_id;
	snprintf(devdir, sizeof(devdir), "%s/devices/%s", NKV_SYSFS_PCI, c->addr);
	nkv_pcie_driver_of(devdir, c->driver, sizeof(c->driver));
	if (!strcmp(c->driver, "nkv"))
		nkv_pcie_find_misc(devdir, c->devnode, sizeof(c->devnode));
}

int nkv_pcie_list(struct nkv_pcie_ctrl *out, size_t max, size_t *count)
{
	struct pci_id_match match = {
		.vendor_id = PCI_MATCH_ANY,
		.device_id = PCI_MATCH_ANY,
		.subvendor_id = PCI_MATCH_ANY,
		.subdevice_id = PCI_MATCH_ANY,
		.device_class = NKV_PCI_CLASS_NVME,
		.device_class_mask = 0xffffff,
	};
	struct pci_device_iterator *it;
	struct pci_device *d;
	size_t n = 0;
	int ret;

	*count = 0;
	ret = pci_system_init();
	if (ret)
		return ret > 0 ? -ret : -ENOENT;
	it = pci_id_match_iterator_create(&match);
	if (!it) {
		pci_system_cleanup();
		return -ENOMEM;
	}
	while ((d = pci_device_next(it))) {
		if (n < max)
			nkv_pcie_fill(d, &out[n]);
		n++;
	}
	pci_iterator_destroy(it);
	pci_system_cleanup();
	*count = n;
	return 0;
}
