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
 *                          or vfio-user:): limits, SGLs, read-only, the
 *                          vendor options advertised, and its namespaces
 *   nkv-admin rpc --socket PATH METHOD [JSON]
 *                          one call to a running nkv-target's control
 *                          socket (admin_rpc.c, docs/rpc.md)
 *
 * Looking at an nkv controller means connecting to it: the library owns
 * the whole controller, so it is disabled, re-enabled and shut down again
 * (a controller reset). Controllers held by nvme are only listed, never
 * touched, and one another process has open is reported busy.
 *
 * Namespaces come from nkv_ctrl_namespaces(), the library's own
 * discovery, so this tool uses only the public API (and the pcie listing).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkv_host.h"
#include "nkv_wire.h"
#include "host/pcie.h"
#include "tools/admin_rpc.h"
#include "tools/ctrl_show.h"
#include "tools/tool.h"

#define NKV_ADMIN_MAX_CTRLS 64
#define NKV_ADMIN_MAX_NS 64

static void nkv_admin_usage(FILE *f)
{
	fprintf(f,
		"usage: nkv-admin list\n"
		"       nkv-admin info URI\n"
		"       nkv-admin rpc --socket PATH METHOD [JSON]\n"
		"       nkv-admin --help | --version\n"
		"\n"
		"list: every PCIe NVMe controller (PCI address, vendor:device, the driver that\n"
		"  holds it: nvme, nkv or none, and its /dev/nkvN); for controllers bound to\n"
		"  nkv.ko, each namespace with its command set (KV or NVM) and limits.\n"
		"  Reading the namespaces connects to the controller: nkv owns it whole, so\n"
		"  this disables, re-enables and shuts it down (a reset). Controllers on\n"
		"  nvme are never touched; one another process has open shows as busy.\n"
		"info URI: connect to one controller and print what bring-up found: the\n"
		"  namespace in use's largest key and value, MDTS, SGL support, read-only, and\n"
		"  the vendor options it advertises (TTL, ephemeral, touch, size query; \"not\n"
		"  advertised\" for a controller without nkv's vendor Identify bytes).\n"
		"rpc --socket PATH METHOD [JSON]: call METHOD on the control socket of a\n"
		"  running nkv-target (its --rpc-socket PATH) with JSON params (an object;\n"
		"  none: {}); print the result as pretty JSON (exit 0), or the error's code\n"
		"  and message on stderr (exit 1). rpc_list lists the methods and their\n"
		"  params (docs/rpc.md).\n"
		"\n"
		"examples:\n"
		"  nkv-admin list\n"
		"  nkv-admin info pcie:/dev/nkv0\n"
		"  nkv-admin info pcie:0000:02:00.0\n"
		"  nkv-admin info vfio-user:/run/nkv.sock\n"
		"  nkv-admin rpc --socket /run/nkv-rpc.sock stats_get '{\"nsid\": 1}'\n"
		"  nkv-admin rpc --socket /run/nkv-rpc.sock target_set '{\"max_conns\": 32}'\n"
		"\n"
		NKV_EXIT_HELP
		"(list: 3 when the bus cannot be read or a controller on nkv cannot; one\n"
		"another process holds is shown busy, not a failure; rpc: 1 an error\n"
		"response, 2 JSON params that are not an object, 3 no response: cannot\n"
		"connect, closed, 30 s without one)\n");
}

static void nkv_admin_print_ns(const struct nkv_ns_info *ns, const char *indent)
{
	if (ns->csi == NKV_CSI_KV) {
		printf("%snsid %u  KV   max key %u B, max value %u B, max keys %u%s, capacity %llu B\n",
		       indent, ns->nsid, ns->max_key, ns->max_value, ns->max_keys,
		       ns->max_keys ? "" : " (not reported)", (unsigned long long)ns->capacity);
	} else if (ns->csi == NKV_CSI_NVM) {
		printf("%snsid %u  NVM  %llu blocks of %u B (not KV)\n", indent, ns->nsid,
		       (unsigned long long)ns->capacity, ns->block_size);
	} else {
		printf("%snsid %u  command set %d (not KV)\n", indent, ns->nsid, ns->csi);
	}
}

/* Connect, list the namespaces, disconnect. 0 or a negative errno. */
static int nkv_admin_show_ns(const char *uri, const char *indent)
{
	struct nkv_ctrl_opts o = { .size = sizeof(o), .io_queues = 1 };
	struct nkv_ns_info ns[NKV_ADMIN_MAX_NS];
	struct nkv_ctrl *c;
	char err[512] = "";
	int n, i;

	o.err = err;
	o.errlen = sizeof(err);
	n = nkv_ctrl_connect(uri, &o, &c);
	if (n) {
		printf("%scannot connect: %s\n", indent, err[0] ? err : strerror(-n));
		return n;
	}
	n = nkv_ctrl_namespaces(c, ns, NKV_ADMIN_MAX_NS);
	nkv_ctrl_close(c);
	if (n < 0) {
		printf("%sactive namespace list: %s\n", indent, strerror(-n));
		return n;
	}
	if (!n)
		printf("%sno active namespaces\n", indent);
	for (i = 0; i < n && i < NKV_ADMIN_MAX_NS; i++)
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
		return NKV_EXIT_SETUP;
	}
	rc = nkv_pcie_list(ctrls, NKV_ADMIN_MAX_CTRLS, &n);
	if (rc) {
		fprintf(stderr, "nkv-admin: cannot scan the PCI bus: %s\n", strerror(-rc));
		free(ctrls);
		return NKV_EXIT_SETUP;
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
	return bad ? NKV_EXIT_SETUP : NKV_EXIT_OK;
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
	struct nkv_ns_info ns[NKV_ADMIN_MAX_NS];
	struct nkv_ctrl_info info;
	struct nkv_ctrl *c;
	char err[512] = "";
	int rc, n, i;

	o.err = err;
	o.errlen = sizeof(err);
	rc = nkv_ctrl_connect(uri, &o, &c);
	if (rc) {
		fprintf(stderr, "nkv-admin: %s: %s\n", uri, err[0] ? err : strerror(-rc));
		return nkv_tool_connect_exit(rc);
	}
	nkv_ctrl_get_info(c, &info);
	nkv_admin_print_info(&info);
	/* tcp: what crosses the network; the rest above is the local
	 * controller's, the limits the remote's (docs/tcp.md). */
	if (!strcmp(info.transport, "tcp"))
		printf("%-18s %s (NVMe/TCP), via a local controller\n", "network", uri);
	nkv_tool_show_caps(stdout, c, &info);
	n = nkv_ctrl_namespaces(c, ns, NKV_ADMIN_MAX_NS);
	nkv_ctrl_close(c);
	if (n < 0) {
		fprintf(stderr, "nkv-admin: %s: active namespace list: %s\n", uri, strerror(-n));
		return NKV_EXIT_SETUP;
	}
	printf("%-18s %d\n", "namespaces", n);
	for (i = 0; i < n && i < NKV_ADMIN_MAX_NS; i++)
		nkv_admin_print_ns(&ns[i], "  ");
	return NKV_EXIT_OK;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	nkv_tool_log_stderr();
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		nkv_admin_usage(stdout);
		return NKV_EXIT_OK;
	}
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		fputs(NKV_VERSION_LINE("nkv-admin"), stdout);
		return NKV_EXIT_OK;
	}
	if (argc == 2 && !strcmp(argv[1], "list"))
		return nkv_admin_list();
	if (argc == 3 && !strcmp(argv[1], "info"))
		return nkv_admin_info(argv[2]);
	if (argc >= 2 && !strcmp(argv[1], "rpc"))
		return nkv_admin_rpc(argc - 2, argv + 2);
	nkv_admin_usage(stderr);
	return NKV_EXIT_USAGE;
}
