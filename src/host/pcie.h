/* SPDX-License-Identifier: MIT */
/*
 * pcie.h - PCIe NVMe controllers for the "pcie" transport (library-private).
 *
 * The transport itself is nkv_transport_pcie (transport.h). This adds the
 * discovery a tool or the library uses to name a controller.
 */
#ifndef NKV_HOST_PCIE_H
#define NKV_HOST_PCIE_H

#include <stddef.h>
#include <stdint.h>

/* One NVMe controller (PCI class 0x010802) present on this machine. */
struct nkv_pcie_ctrl {
	char addr[16];		/* "0000:02:00.0" */
	uint16_t vendor;
	uint16_t device;
	char driver[32];	/* "nvme", "nkv", ... or "" when unbound */
	char devnode[32];	/* "/dev/nkv0" when bound to nkv, else "" */
};

/*
 * Fill up to max entries of out (in bus order) and set *count to the number
 * of controllers found, which may exceed max. 0 or a negative errno
 * (-ENOENT when the PCI bus cannot be scanned, e.g. no /sys).
 * Any thread; not concurrently with itself (libpciaccess is global).
 */
int nkv_pcie_list(struct nkv_pcie_ctrl *out, size_t max, size_t *count);

/*
 * Find the /dev/nkvN of the controller at PCI address addr ("0000:02:00.0"
 * or "02:00.0"). 0, -EINVAL (not an address), -ENODEV (no such device),
 * -EBUSY (held by another driver: err says which and how to rebind).
 */
int nkv_pcie_devnode(const char *addr, char *node, size_t nodelen, char *err, size_t errlen);

struct nkv_tr;
/* The /dev/nkvN file descriptor of an open pcie transport, for callers
 * that issue module ioctls the ops table does not cover. */
int nkv_pcie_fd(struct nkv_tr *tr);

/* Tests only: look for PCI devices under dir (a fake /sys/bus/pci);
 * NULL restores the real one. Not thread-safe. */
void nkv_pcie_set_sysfs_root(const char *dir);

#endif /* NKV_HOST_PCIE_H */
