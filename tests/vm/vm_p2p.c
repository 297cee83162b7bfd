// SPDX-License-Identifier: MIT
/*
 * vm_p2p.c - guest cases of NKV_IOC_DMABUF_IMPORT against the test-only
 * exporter tests/vm/nkv_p2pexp.ko (QEMU's ivshmem BAR as dma-bufs): the
 * exporter's fd, the import, refusals, and teardown with an import held.
 * The Read that lands in the BAR is in nkv_vmtest.c (it needs the
 * library's queue pairs); run.sh checks the host file behind the BAR.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "nkv_kmod.h"
#include "nkv_p2pexp.h"
#include "vmtest.h"

#define VP_EXPORTER "/dev/nkv_p2pexp"
#define VP_BUFINFO "/sys/kernel/debug/dma_buf/bufinfo"
#define VP_LEN (64u << 10)

int vp_export(uint64_t offset, uint64_t len)
{
	struct nkv_p2pexp_req r = { .offset = offset, .len = len };
	int fd = open(VP_EXPORTER, O_RDWR | O_CLOEXEC), ret;

	if (fd < 0)
		FAIL("open %s: %s", VP_EXPORTER, strerror(errno));
	ret = ioctl(fd, NKV_P2PEXP_EXPORT, &r);
	close(fd);
	if (ret)
		FAIL("export [%llu, +%llu): %s", (unsigned long long)offset,
		     (unsigned long long)len, strerror(errno));
	return r.fd;
}

int vp_import(int fd, int dfd, uint64_t offset, uint64_t len, uint64_t *iova,
	      struct nkv_kmod_dmabuf *d)
{
	memset(d, 0, sizeof(*d));
	d->fd = (uint32_t)dfd;
	d->offset = offset;
	d->len = len;
	d->npages = len / NKV_KMOD_PAGE_SIZE;
	d->iova_ptr = (uintptr_t)iova;
	return ioctl(fd, NKV_IOC_DMABUF_IMPORT, d) ? errno : 0;
}

/* A successful import must say peer-to-peer and name the exporter. */
int vp_check_import(const struct nkv_kmod_dmabuf *d, const uint64_t *iova)
{
	printf("p2p: import of %llu bytes: handle %llu, flags %#x, exporter '%.32s', "
	       "iova[0] 0x%llx\n", (unsigned long long)d->len, (unsigned long long)d->handle,
	       d->flags, d->exporter, (unsigned long long)iova[0]);
	if (!d->handle || !(d->flags & NKV_KMOD_MAP_P2P))
		FAIL("import: no handle or not peer-to-peer");
	if (strcmp(d->exporter, "nkv_p2pexp"))
		FAIL("import: exporter '%.32s', want nkv_p2pexp", d->exporter);
	return 0;
}

/* The physical start of the exporter's BAR2, from sysfs. */
int vp_bar2(uint64_t *start)
{
	FILE *f = fopen("/sys/class/misc/nkv_p2pexp/device/resource", "r");
	unsigned long long s = 0, e, fl;
	int i, n = 0;

	if (!f)
		FAIL("no nkv_p2pexp device (is the ivshmem device there?)");
	for (i = 0; i < 3; i++)
		n = fscanf(f, "%llx %llx %llx", &s, &e, &fl);
	fclose(f);
	if (n != 3 || !s)
		FAIL("cannot read BAR2 of the ivshmem device");
	*start = s;
	return 0;
}

/* How many devices debugfs says are attached to the one dma-buf there. */
static int vp_attached(void)
{
	static char buf[8192];
	const char *p;
	int fd = open(VP_BUFINFO, O_RDONLY), n = 0;
	ssize_t len;

	if (fd < 0)
		return -1;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -1;
	buf[len] = 0;
	p = strstr(buf, "Total ");
	if (!p || sscanf(p, "Total %d devices attached", &n) != 1)
		return -1;
	return n;
}

static int vp_errno_of(const char *s)
{
	if (!strcmp(s, "EOPNOTSUPP"))
		return EOPNOTSUPP;
	if (!strcmp(s, "EINVAL"))
		return EINVAL;
	return atoi(s);
}

/* p2pimport DEV WANT: one import of an exported BAR range gives WANT. */
int vp_mode_import(const char *dev, const char *want)
{
	static uint64_t iova[VP_LEN / NKV_KMOD_PAGE_SIZE];
	struct nkv_kmod_dmabuf d;
	int w = vp_errno_of(want), fd, dfd, got, ret = 0;

	fd = open(dev, O_RDWR);
	if (fd < 0)
		FAIL("open %s: %s", dev, strerror(errno));
	dfd = vp_export(0, VP_LEN);
	if (dfd < 0)
		return -1;
	got = vp_import(fd, dfd, 0, VP_LEN, iova, &d);
	if (got != w)
		FAIL("import: got %s, want %s", strerror(got), strerror(w));
	printf("ok: import -> %s\n", got ? strerror(got) : "success");
	if (!got)
		ret = vp_check_import(&d, iova);
	/* A refused import leaves nothing attached; a live one, one device. */
	if (vp_attached() != !got)
		FAIL("%d devices attached to the dma-buf, want %d", vp_attached(), !got);
	close(fd);
	close(dfd);
	return ret;
}

static int vp_unbind(const char *pciaddr)
{
	int fd = open("/sys/bus/pci/drivers/nkv/unbind", O_WRONLY);

	if (fd < 0 || write(fd, pciaddr, strlen(pciaddr)) < 0)
		FAIL("unbind %s: %s", pciaddr, strerror(errno));
	close(fd);
	return 0;
}

/*
 * p2pteardown DEV PCIADDR: close the device with an import held (release
 * quiesces, then detaches), then import again and unbind nkv under it
 * (remove quiesces, then detaches). debugfs counts the attachments; the
 * dma-buf itself outlives both and imports again after the close.
 */
int vp_mode_teardown(const char *dev, const char *pciaddr)
{
	static uint64_t iova[VP_LEN / NKV_KMOD_PAGE_SIZE];
	struct nkv_kmod_dmabuf d;
	struct nkv_kmod_info info;
	int fd, dfd, ret;

	dfd = vp_export(0, VP_LEN);
	fd = open(dev, O_RDWR);
	if (dfd < 0 || fd < 0)
		FAIL("open %s: %s", dev, strerror(errno));
	ret = vp_import(fd, dfd, 0, VP_LEN, iova, &d);
	if (ret || vp_check_import(&d, iova) || vp_attached() != 1)
		FAIL("first import: %s, %d attached", strerror(ret), vp_attached());
	close(fd);
	if (vp_attached() != 0)
		FAIL("close with an import held left %d attached", vp_attached());
	printf("ok: close with an import held detached it\n");
	fd = open(dev, O_RDWR);
	if (fd < 0)
		FAIL("reopen %s: %s", dev, strerror(errno));
	ret = vp_import(fd, dfd, 0, VP_LEN, iova, &d);
	if (ret || vp_attached() != 1)
		FAIL("second import: %s, %d attached", strerror(ret), vp_attached());
	if (vp_unbind(pciaddr))
		return -1;
	if (vp_attached() != 0)
		FAIL("unbind with an import held left %d attached", vp_attached());
	if (!ioctl(fd, NKV_IOC_INFO, &info) || errno != ENODEV)
		FAIL("info after unbind is not ENODEV");
	printf("ok: unbind with an import held detached it; info -> ENODEV\n");
	close(fd);
	close(dfd);
	return 0;
}

/* The PCI command register's bus master bit (2) of pciaddr: 1, 0, -1. */
static int vp_bus_master(const char *pciaddr)
{
	char path[96];
	uint8_t cmd;
	int fd, n;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", pciaddr);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = (int)pread(fd, &cmd, 1, 4);
	close(fd);
	return n == 1 ? !!(cmd & 4) : -1;
}

/*
 * p2prevoke DEV PCIADDR: the exporter revokes a buffer nkv imported
 * (move_notify): bus mastering must be off when the call returns and the
 * owner's calls answer EIO; close is clean and the next owner starts
 * afresh with bus mastering on.
 */
int vp_mode_revoke(const char *dev, const char *pciaddr)
{
	static uint64_t iova[VP_LEN / NKV_KMOD_PAGE_SIZE];
	struct nkv_kmod_dmabuf d;
	struct nkv_kmod_info info;
	int fd, dfd, efd, ret;

	dfd = vp_export(0, VP_LEN);
	fd = open(dev, O_RDWR);
	efd = open(VP_EXPORTER, O_RDWR | O_CLOEXEC);
	if (dfd < 0 || fd < 0 || efd < 0)
		FAIL("open %s / %s: %s", dev, VP_EXPORTER, strerror(errno));
	ret = vp_import(fd, dfd, 0, VP_LEN, iova, &d);
	if (ret || vp_bus_master(pciaddr) != 1)
		FAIL("import: %s, bus master %d", strerror(ret), vp_bus_master(pciaddr));
	if (ioctl(efd, NKV_P2PEXP_REVOKE, dfd))
		FAIL("revoke: %s", strerror(errno));
	if (vp_bus_master(pciaddr) != 0)
		FAIL("bus mastering still on after the exporter revoked the buffer");
	if (!ioctl(fd, NKV_IOC_INFO, &info) || errno != EIO)
		FAIL("info after the revoke is not EIO");
	printf("ok: revoke stopped DMA (bus master off), owner gets EIO\n");
	close(fd);
	if (vp_attached() != 0)
		FAIL("close after the revoke left %d attached", vp_attached());
	fd = open(dev, O_RDWR);
	if (fd < 0 || ioctl(fd, NKV_IOC_INFO, &info) || vp_bus_master(pciaddr) != 1)
		FAIL("next owner: %s, bus master %d", strerror(errno), vp_bus_master(pciaddr));
	printf("ok: the next owner opens with bus mastering on\n");
	close(fd);
	close(efd);
	close(dfd);
	return 0;
}
