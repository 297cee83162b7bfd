// SPDX-License-Identifier: MIT
/*
 * nkv-admin - which NVMe controllers this machine has, who drives them,
 * and what a controller offers.
 *
 *   nkv-admin list         every PCIe NVMe controller (address, vendor:
 *                          device, driver, /dev/nkvN); for each one bound
 *                          to nkv.ko, its namespaces: nsid, command set
 *                          (KV or NVM) and limits
 *   nkv-admin info URI     what bring-up finds on one controller (pcie:
 *                          or vfio-user:), and its namespaces
 *
 * Looking at an nkv controller means connecting to it: the library owns
 * the whole controller, so it is disabled, re-enabled and shut down again
 * (a controller reset). Controllers held by nvme are only listed, never
 * touched, and one another process has open is reported busy.
 *
 * Namespace enumeration uses the library's admin queue directly (this
 * tool links libnkv.a); the public API picks one namespace per connection.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"
#include "host/pcie.h"

#define NKV_ADMIN_MAX_CTRLS 64
#define NKV_ADMIN_MAX_NS 64

struct nkv_admin_ns {
	uint32_t nsid;
	int csi;		/* NKV_CSI_*, or -1 when unknown */
	uint64_t nsze;		/* KV: bytes; NVM: blocks */
	uint32_t block;		/* NVM: bytes per block */
	uint32_t max_key, max_value, max_keys;
};

static void nkv_admin_usage(FILE *f)
{
	fprintf(f,
		"usage: nkv-admin list\n"
		"       nkv-admin info URI\n"
		"       nkv-admin --help\n"
		"\n"
		"list: every PCIe NVMe controller (PCI address, vendor:device, the driver that\n"
		"  holds it: nvme, nkv or none, and its /dev/nkvN); for controllers bound to\n"
		"  nkv.ko, each namespace with its command set (KV or NVM) and limits.\n"
		"  Reading the namespaces connects to the controller: nkv owns it whole, so\n"
		"  this disables, re-enables and shuts it down (a reset). Controllers on\n"
		"  nvme are never touched; one another process has open shows as busy.\n"
		"info URI: connect to one controller and print what bring-up found.\n"
		"\n"
		"examples:\n"
		"  nkv-admin list\n"
		"  nkv-admin info pcie:/dev/nkv0\n"
		"  nkv-admin info pcie:0000:02:00.0\n"
		"  nkv-admin info vfio-user:/run/nkv.sock\n"
		"\n"
		"exit status: 0 done, 1 a controller could not be read, 2 bad usage\n");
}

/* Identify into c->idbuf under the controller lock: 0, an NVMe status
 * (> 0) or a negative errno. */
static int nkv_admin_identify(struct nkv_ctrl *c, uint8_t cns, uint8_t csi, uint32_t nsid)
{
	struct nkv_sqe s;
	uint16_t st = 0;
	int rc;

	memset(&s, 0, sizeof(s));
	memset(c->idbuf.m.va, 0, NKV_PAGE_SIZE);
	s.cdw0 = NKV_ADM_IDENTIFY;
	s.nsid = nsid;
	s.prp1 = c->idbuf.m.iova[0];
	s.cdw10 = nkv_identify_cdw10(cns, 0);
	s.cdw11 = nkv_identify_cdw11(csi);
	pthread_mutex_lock(&c->lock);
	rc = nkv_h_admin(c, &s, &st, NULL);
	pthread_mutex_unlock(&c->lock);
	return rc ? rc : st;
}

/* The command set from the namespace identification descriptors. */
static int nkv_admin_csi(struct nkv_ctrl *c, uint32_t nsid)
{
	const uint8_t *p = c->idbuf.m.va;
	size_t off = 0;

	if (!(nkv_cap_css(c->cap) & NKV_CAP_CSS_IOCS))
		return NKV_CSI_NVM;	/* no I/O command sets: NVM only */
	if (nkv_admin_identify(c, NKV_CNS_NS_DESC_LIST, 0, nsid))
		return -1;
	while (off + 5 <= NKV_PAGE_SIZE && p[off]) {
		if (p[off] == NKV_NIDT_CSI && p[off + 1] >= 1)
			return p[off + 4];
		off += 4u + p[off + 1];
	}
	return -1;
}

static void nkv_admin_ns_limits(struct nkv_ctrl *c, struct nkv_admin_ns *ns)
{
	if (ns->csi == NKV_CSI_KV &&
	    !nkv_admin_identify(c, NKV_CNS_IOCS_NS, NKV_CSI_KV, ns->nsid)) {
		const struct nkv_id_ns_kv *id = c->idbuf.m.va;

		ns->nsze = id->nsze;
		ns->max_key = id->kvf[0].kml;
		ns->max_value = id->kvf[0].mvl;
		ns->max_keys = id->kvf[0].mnk;
	} else if (ns->csi == NKV_CSI_NVM && !nkv_admin_identify(c, NKV_CNS_NS, 0, ns->nsid)) {
		const struct nkv_id_ns_nvm *id = c->idbuf.m.va;
		uint8_t lbads = id->lbaf[id->flbas & 0xf].lbads;

		ns->nsze = id->nsze;
		ns->block = lbads >= 9 && lbads <= 24 ? 1u << lbads : 0;
	}
}

/* Every active namespace (CNS 02h), with its command set and limits. */
static int nkv_admin_namespaces(struct nkv_ctrl *c, struct nkv_admin_ns *out, size_t max)
{
	uint32_t ids[NKV_ADMIN_MAX_NS];
	const uint32_t *l = c->idbuf.m.va;
	size_t n = 0, i;
	int rc = nkv_admin_identify(c, NKV_CNS_ACTIVE_NS_LIST, 0, 0);

	if (rc)
		return rc < 0 ? rc : -EIO;
	while (n < max && n < NKV_ADMIN_MAX_NS && l[n])
		n++;
	memcpy(ids, l, n * sizeof(ids[0]));
	for (i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].nsid = ids[i];
		out[i].csi = nkv_admin_csi(c, ids[i]);
		nkv_admin_ns_limits(c, &out[i]);
	}
	return (int)n;
}

static void nkv_admin_print_ns(const struct nkv_admin_ns *ns, const char *indent)
{
	if (ns->csi == NKV_CSI_KV) {
		printf("%snsid %u  KV   max key %u B, max value %u B, max keys %u%s, capacity %llu B\n",
		       indent, ns->nsid, ns->max_key, ns->max_value, ns->max_keys,
		       ns->max_keys ? "" : " (not reported)", (unsigned long long)ns->nsze);
	} else if (ns->csi == NKV_CSI_NVM) {
		printf("%snsid %u  NVM  %llu blocks of %u B (not KV)\n", indent, ns->nsid,
		       (unsigned long long)ns->nsze, ns->block);
	} else {
		printf("%snsid %u  command set %d (not KV)\n", indent, ns->nsid, ns->csi);
	}
}

/* Connect, list the namespaces, disconnect. 0 or a negative errno. */
static int nkv_admin_show_ns(const char *uri, const char *indent)
{
	struct nkv_ctrl_opts o = { .size = sizeof(o), .io_queues = 1 };
	struct nkv_admin_ns ns[NKV_ADMIN_MAX_NS];
	struct nkv_ctrl *c;
	char err[512] = "";
	int n, i;

	o.err = err;
	o.errlen = sizeof(err);
	n = nkv_ctrl_connect(uri, &o, &c);
	if (n) {
		printf("%scannot connect: %s%s%s\n", indent, strerror(-n), err[0] ? ": " : "", err);
		return n;
	}
	n = nkv_admin_namespaces(c, ns, NKV_ADMIN_MAX_NS);
	nkv_ctrl_close(c);
	if (n < 0) {
		printf("%sactive namespace list: %s\n", indent, strerror(-n));
		return n;
	}
	if (!n)
		printf("%sno active namespaces\n", indent);
	for (i = 0; i < n; i++)
		nkv_admin_print_ns(&ns[i], indent);
	return 0;
}

static int nkv_admin_list(void)
{
	struct nkv_pcie_ctrl *ctrls = calloc(NKV_ADMIN_MAX_CTRLS, sizeof(*ctrls));
	char uri[64];
	size_t n = 0, i;
	int rc, bad = 0;

	if (!ctrls) {
		fprintf(stderr, "nkv-admin: out of memory\n");
		return 1;
	}
	rc = nkv_pcie_list(ctrls, NKV_ADMIN_MAX_CTRLS, &n);
	if (rc) {
		fprintf(stderr, "nkv-admin: cannot scan the PCI bus: %s\n", strerror(-rc));
		free(ctrls);
		return 1;
	}
	if (!n)
		printf("no PCIe NVMe controllers found\n");
	else
		printf("%-13s %-10s %-7s %s\n", "PCI ADDRESS", "VENDOR:DEV", "DRIVER", "NODE");
	for (i = 0; i < n && i < NKV_ADMIN_MAX_CTRLS; i++) {
		const struct nkv_pcie_ctrl *p = &ctrls[i];

		printf("%-13s %04x:%04x  %-7s %s\n", p->addr, p->vendor, p->device,
		       p->driver[0] ? p->driver : "none", p->devnode[0] ? p->devnode : "-");
		if (!p->devnode[0])
			continue;
		snprintf(uri, sizeof(uri), "pcie:%s", p->devnode);
		rc = nkv_admin_show_ns(uri, "    ");
		/* Another owner is normal; anything else is a failure. */
		if (rc && rc != -EBUSY)
			bad = 1;
	}
	if (n > NKV_ADMIN_MAX_CTRLS)
		printf("(%zu more not shown)\n", n - NKV_ADMIN_MAX_CTRLS);
	free(ctrls);
	return bad;
}

static void nkv_admin_print_info(const struct nkv_ctrl_info *i)
{
	printf("%-18s %s\n", "transport", i->transport);
	printf("%-18s %s\n", "model", i->model);
	printf("%-18s %s\n", "serial", i->serial);
	printf("%-18s %u.%u.%u\n", "version", i->vs >> 16, (i->vs >> 8) & 0xffu, i->vs & 0xffu);
	printf("%-18s %#llx\n", "cap", (unsigned long long)i->cap);
	printf("%-18s %u\n", "max queue entries", i->mqes);
	printf("%-18s %u%s\n", "max transfer", i->max_xfer, i->max_xfer ? " B" : " (no limit)");
	printf("%-18s %u\n", "io queues", i->io_queues);
	printf("%-18s %u (%s)\n", "namespace in use", i->nsid, i->csi == NKV_CSI_KV ? "KV" : "NVM");
	if (i->csi == NKV_CSI_KV)
		printf("%-18s key %u B, value %u B, keys %u, capacity %llu B\n", "kv limits",
		       i->max_key, i->max_value, i->max_keys, (unsigned long long)i->capacity);
	else
		printf("%-18s %llu blocks of %u B\n", "nvm capacity",
		       (unsigned long long)i->capacity, i->block_size);
	printf("%-18s %s\n", "doorbells", i->doorbells_mapped ? "mapped" : "forwarded");
}

static int nkv_admin_info(const char *uri)
{
	struct nkv_ctrl_opts o = { .size = sizeof(o), .io_queues = 1 };
	struct nkv_admin_ns ns[NKV_ADMIN_MAX_NS];
	struct nkv_ctrl_info info;
	struct nkv_ctrl *c;
	char err[512] = "";
	int rc, n, i;

	o.err = err;
	o.errlen = sizeof(err);
	rc = nkv_ctrl_connect(uri, &o, &c);
	if (rc) {
		fprintf(stderr, "nkv-admin: %s: %s%s%s\n", uri, strerror(-rc), err[0] ? ": " : "", err);
		return 1;
	}
	nkv_ctrl_info(c, &info);
	nkv_admin_print_info(&info);
	n = nkv_admin_namespaces(c, ns, NKV_ADMIN_MAX_NS);
	nkv_ctrl_close(c);
	if (n < 0) {
		fprintf(stderr, "nkv-admin: %s: active namespace list: %s\n", uri, strerror(-n));
		return 1;
	}
	printf("%-18s %d\n", "namespaces", n);
	for (i = 0; i < n; i++)
		nkv_admin_print_ns(&ns[i], "  ");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		nkv_admin_usage(stdout);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "list"))
		return nkv_admin_list();
	if (argc == 3 && !strcmp(argv[1], "info"))
		return nkv_admin_info(argv[2]);
	nkv_admin_usage(stderr);
	return 2;
}
