// SPDX-License-Identifier: MIT
/*
 * The pcie transport's host-side paths: address parsing, the sysfs lookup
 * of /dev/nkvN against a fake /sys/bus/pci tree (no nkv.ko can load on
 * this machine; the VM test in tests/vm/ proves the real device), the
 * errors open gives, and PCI discovery through libpciaccess.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/pcie.h"
#include "host/transport.h"

static char root[64];

static void mkdirs(const char *fmt, const char *arg)
{
	char path[256], cmd[320];

	snprintf(path, sizeof(path), fmt, root, arg);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	cr_assert_eq(system(cmd), 0);
}

/* A fake sysfs: 0000:00:04.0 held by nvme, 0000:00:05.0 bound to nkv as
 * nkv3, 0000:00:06.0 unbound. */
static void fake_sysfs(void)
{
	char link[256], target[256];

	snprintf(root, sizeof(root), "/tmp/nkv-test-pcie-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	mkdirs("%s/drivers/%s", "nvme");
	mkdirs("%s/drivers/%s", "nkv");
	mkdirs("%s/devices/%s", "0000:00:04.0");
	mkdirs("%s/devices/%s", "0000:00:05.0/misc/nkv3");
	mkdirs("%s/devices/%s", "0000:00:06.0");
	snprintf(target, sizeof(target), "%s/drivers/nvme", root);
	snprintf(link, sizeof(link), "%s/devices/0000:00:04.0/driver", root);
	cr_assert_eq(symlink(target, link), 0);
	snprintf(target, sizeof(target), "%s/drivers/nkv", root);
	snprintf(link, sizeof(link), "%s/devices/0000:00:05.0/driver", root);
	cr_assert_eq(symlink(target, link), 0);
	nkv_pcie_set_sysfs_root(root);
}

static void drop_sysfs(void)
{
	char cmd[128];

	nkv_pcie_set_sysfs_root(NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(pcie, .init = fake_sysfs, .fini = drop_sysfs, .timeout = 10);

Test(pcie, bound_to_nkv_gives_devnode)
{
	char node[64], err[256] = "";

	cr_assert_eq(nkv_pcie_devnode("0000:00:05.0", node, sizeof(node), err, sizeof(err)), 0);
	cr_assert_str_eq(node, "/dev/nkv3");
	/* Short form, domain 0 implied. */
	cr_assert_eq(nkv_pcie_devnode("00:05.0", node, sizeof(node), err, sizeof(err)), 0);
	cr_assert_str_eq(node, "/dev/nkv3");
}

Test(pcie, held_by_nvme_says_how_to_rebind)
{
	char node[64], err[512] = "";

	cr_assert_eq(nkv_pcie_devnode("0000:00:04.0", node, sizeof(node), err, sizeof(err)), -EBUSY);
	cr_assert_not_null(strstr(err, "held by driver 'nvme'"), "%s", err);
	cr_assert_not_null(strstr(err, "drivers/nvme/unbind"), "%s", err);
	cr_assert_not_null(strstr(err, "driver_override"), "%s", err);
	cr_assert_not_null(strstr(err, "drivers_probe"), "%s", err);
}

Test(pcie, unbound_and_missing)
{
	char node[64], err[512] = "";

	cr_assert_eq(nkv_pcie_devnode("0000:00:06.0", node, sizeof(node), err, sizeof(err)), -ENODEV);
	cr_assert_not_null(strstr(err, "has no driver"), "%s", err);
	cr_assert_eq(nkv_pcie_devnode("0000:00:07.0", node, sizeof(node), err, sizeof(err)), -ENODEV);
	cr_assert_not_null(strstr(err, "no PCI device 0000:00:07.0"), "%s", err);
}

Test(pcie, bad_addresses)
{
	static const char *const bad[] = {
		"", "nkv0", "0000:00:04", "0000:00:04.8", "0000:00:20.0", "00:04.0x",
		"1:2:3.4.5", "0000:100:04.0", "0000:00:04.0 ",
	};
	char node[64], err[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		cr_assert_eq(nkv_pcie_devnode(bad[i], node, sizeof(node), err, sizeof(err)), -EINVAL,
			     "'%s'", bad[i]);
		cr_assert_not_null(strstr(err, "not a PCI address"), "%s", err);
	}
}

Test(pcie, open_errors)
{
	struct nkv_tr *tr = (struct nkv_tr *)1;
	char err[512] = "";

	cr_assert_eq(nkv_transport_pcie.open("/dev/nkv-nonexistent", &tr, err, sizeof(err)),
		     -ENOENT);
	cr_assert_null(tr);
	cr_assert_not_null(strstr(err, "nkv.ko loaded"), "%s", err);
	/* A device node that is not nkv's: the info ioctl is refused. */
	cr_assert_eq(nkv_transport_pcie.open("/dev/null", &tr, err, sizeof(err)), -ENOTTY);
	cr_assert_not_null(strstr(err, "not an nkv device"), "%s", err);
	cr_assert_eq(nkv_transport_pcie.open("0000:00:04.0", &tr, err, sizeof(err)), -EBUSY);
	cr_assert_eq(nkv_transport_pcie.open("", &tr, err, sizeof(err)), -EINVAL);
	cr_assert_eq(nkv_transport_pcie.open("zz", &tr, err, sizeof(err)), -EINVAL);
	cr_assert_null(tr);
}

Test(pcie, ops_table_complete)
{
	const struct nkv_transport_ops *o = &nkv_transport_pcie;

	cr_assert_str_eq(o->name, "pcie");
	cr_assert(o->open && o->close && o->reg_read && o->reg_write && o->doorbells &&
		  o->dma_map && o->dma_unmap && o->alive);
}

/* Real discovery: every entry found must be an NVMe controller with a
 * well-formed address; a machine without /sys/bus/pci is skipped. */
Test(pcie_list, lists_nvme_controllers, .timeout = 10)
{
	struct nkv_pcie_ctrl c[16];
	size_t n = 99, i;
	char node[64], err[256];
	int ret;

	if (access("/sys/bus/pci/devices", R_OK))
		cr_skip_test("no /sys/bus/pci on this machine");
	ret = nkv_pcie_list(c, 16, &n);
	cr_assert_eq(ret, 0, "nkv_pcie_list: %d", ret);
	cr_assert_lt(n, 99);
	for (i = 0; i < n && i < 16; i++) {
		cr_assert_eq(strlen(c[i].addr), 12, "%s", c[i].addr);
		cr_assert_eq(nkv_pcie_devnode(c[i].addr, node, sizeof(node), err, sizeof(err)) !=
				     -EINVAL, 1);
	}
	/* max 0 still counts. */
	cr_assert_eq(nkv_pcie_list(NULL, 0, &i), 0);
	cr_assert_eq(i, n);
}
