/* SPDX-License-Identifier: MIT */
/*
 * nkv_probe.c - the nkv-probe program: connect to a controller and print
 * what a host needs to know before driving it (device, regions,
 * sparse-mmap areas, CAP/VS/CSTS decoded), reading only; then bring it
 * up as a host does (libnkv: a controller reset) and print what Identify
 * says: the largest key and value, MDTS, SGL support, read-only, the
 * vendor options advertised. --registers-only stops before the bring-up.
 * Needs no GPU, so it is the cheap way to check any vfio-user NVMe
 * controller, ours or a third party's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/vfio.h>

#include "nkv_host.h"
#include "host/transport.h"
#include "tools/ctrl_show.h"
#include "tools/probe_tcp.h"
#include "tools/tool.h"
#include "vfio-user/client.h"
#include "vfio-user/proto.h"

static void nkv_probe_usage(FILE *f)
{
	fputs("usage: nkv-probe [--registers-only] vfio-user:/path/to/socket\n"
	      "       nkv-probe [--registers-only] tcp:HOST:PORT[/NQN]\n"
	      "       nkv-probe --help | --version\n"
	      "Print a vfio-user NVMe controller's device info, regions, sparse-mmap\n"
	      "areas and CAP/VS/CSTS registers (decoded), reading only; then bring it up\n"
	      "as a host does (a controller reset) and print what Identify says: the\n"
	      "largest key and value, MDTS, SGL support, read-only, and the vendor options\n"
	      "it advertises (\"not advertised\" for a controller without nkv's vendor\n"
	      "Identify bytes). --registers-only: the first part alone (no reset).\n"
	      "tcp: an NVMe/TCP controller: the Discovery log page at HOST:PORT, an admin\n"
	      "queue of the subsystem (NQN, or the first the log lists): what ICReq/ICResp\n"
	      "and Connect settled, CAP/VS/CSTS by Property Get; then the bring-up as\n"
	      "above (libnkv's tcp: front).\n\n"
	      NKV_EXIT_HELP "\n"
	      "example:\n"
	      "  nkv-target --socket /tmp/nkv.sock &\n"
	      "  nkv-probe vfio-user:/tmp/nkv.sock\n"
	      "  nkv-target --listen tcp:127.0.0.1:4420 &\n"
	      "  nkv-probe tcp:127.0.0.1:4420\n", f);
}

static const char *nkv_probe_region_name(uint32_t i)
{
	static const char *const n[] = { "BAR0", "BAR1", "BAR2", "BAR3", "BAR4", "BAR5",
					 "ROM", "CONFIG", "VGA" };

	return i < 9 ? n[i] : "?";
}

static void nkv_probe_regions(const struct nkv_vfu_client_info *in)
{
	uint32_t i, j;

	for (i = 0; i < in->nregions; i++) {
		const struct nkv_vfu_region_desc *d = &in->regions[i];

		if (!d->size)
			continue;
		printf("region %u %-6s size=0x%llx flags=%s%s%s%s offset=0x%llx\n", i,
		       nkv_probe_region_name(i), (unsigned long long)d->size,
		       d->flags & VFIO_REGION_INFO_FLAG_READ ? "r" : "-",
		       d->flags & VFIO_REGION_INFO_FLAG_WRITE ? "w" : "-",
		       d->flags & VFIO_REGION_INFO_FLAG_MMAP ? "m" : "-",
		       d->flags & VFIO_REGION_INFO_FLAG_CAPS ? "c" : "-",
		       (unsigned long long)d->offset);
		for (j = 0; j < d->nr_areas; j++)
			printf("  sparse-mmap area %u: offset=0x%llx size=0x%llx\n", j,
			       (unsigned long long)d->areas[j].offset,
			       (unsigned long long)d->areas[j].size);
	}
}

static int nkv_probe_config(struct nkv_tr *tr)
{
	uint8_t cfg[64];
	uint16_t vid, did;
	uint32_t cls;
	int rc;

	rc = nkv_vfu_client_cfg_read(tr, 0, cfg, sizeof(cfg));
	if (rc)
		return rc;
	memcpy(&vid, cfg + NKV_PCI_VENDOR_ID, 2);
	memcpy(&did, cfg + NKV_PCI_DEVICE_ID, 2);
	cls = (uint32_t)cfg[NKV_PCI_CLASS] | (uint32_t)cfg[NKV_PCI_CLASS + 1] << 8 |
	      (uint32_t)cfg[NKV_PCI_CLASS + 2] << 16;
	printf("pci: vendor=0x%04x device=0x%04x class=0x%06x (%s)\n", vid, did, cls,
	       cls == NKV_PCI_CLASS_NVME ? "NVMe" : "not NVMe");
	return 0;
}

void nkv_probe_print_regs(uint64_t cap, uint64_t vs, uint64_t csts)
{
	printf("CAP=0x%016llx MQES=%u (%u entries) CQR=%u TO=%u (%u ms) DSTRD=%u CSS=0x%02x%s%s MPSMIN=%u MPSMAX=%u\n",
	       (unsigned long long)cap, nkv_cap_mqes(cap), nkv_cap_mqes(cap) + 1,
	       nkv_cap_cqr(cap), nkv_cap_to(cap), nkv_cap_to(cap) * 500, nkv_cap_dstrd(cap),
	       nkv_cap_css(cap), nkv_cap_css(cap) & NKV_CAP_CSS_NVM ? " NVM" : "",
	       nkv_cap_css(cap) & NKV_CAP_CSS_IOCS ? " IOCS" : "",
	       4096u << nkv_cap_mpsmin(cap), 4096u << nkv_cap_mpsmax(cap));
	printf("VS=0x%08x (%u.%u.%u)\n", (uint32_t)vs, (uint32_t)(vs >> 16),
	       (uint32_t)(vs >> 8) & 0xff, (uint32_t)vs & 0xff);
	printf("CSTS=0x%08x RDY=%u CFS=%u SHST=%u\n", (uint32_t)csts,
	       (uint32_t)csts & NKV_CSTS_RDY ? 1 : 0, (uint32_t)csts & NKV_CSTS_CFS ? 1 : 0,
	       nkv_csts_shst((uint32_t)csts));
}

static int nkv_probe_regs(const struct nkv_transport_ops *ops, struct nkv_tr *tr)
{
	uint64_t cap, vs, csts;
	int rc;

	rc = ops->reg_read(tr, NKV_REG_CAP, 8, &cap);
	if (!rc)
		rc = ops->reg_read(tr, NKV_REG_VS, 4, &vs);
	if (!rc)
		rc = ops->reg_read(tr, NKV_REG_CSTS, 4, &csts);
	if (!rc)
		nkv_probe_print_regs(cap, vs, csts);
	return rc;
}

/* Bring the controller up as a host does and print what Identify says:
 * the exit status. */
static int nkv_probe_identify(const char *uri)
{
	struct nkv_ctrl_opts o = { .size = sizeof(o), .io_queues = 1 };
	struct nkv_ctrl_info info;
	struct nkv_ctrl *c;
	char err[512] = "";
	int rc;

	o.err = err;
	o.errlen = sizeof(err);
	rc = nkv_ctrl_connect(uri, &o, &c);
	if (rc) {
		fprintf(stderr, "nkv-probe: bringing the controller up: %s\n",
			err[0] ? err : strerror(-rc));
		return nkv_tool_connect_exit(rc);
	}
	nkv_ctrl_get_info(c, &info);
	printf("identify: model \"%s\", namespace %u (%s)\n", info.model, info.nsid,
	       info.csi == NKV_CSI_KV ? "KV" : "NVM");
	nkv_tool_show_caps(stdout, c, &info);
	nkv_ctrl_close(c);
	return NKV_EXIT_OK;
}

int main(int argc, char **argv)
{
	const struct nkv_transport_ops *ops = &nkv_transport_vfio_user;
	struct nkv_vfu_client_info in;
	int regs_only = argc == 3 && !strcmp(argv[1], "--registers-only");
	const char *uri = argv[argc - 1];
	struct nkv_tr *tr;
	char err[256] = "";
	size_t dblen = 0;
	int rc;

	nkv_tool_log_stderr();
	if (argc == 2 && !strcmp(uri, "--version")) {
		fputs(NKV_VERSION_LINE("nkv-probe"), stdout);
		return NKV_EXIT_OK;
	}
	if ((argc != 2 && !regs_only) || !strcmp(uri, "-h") || !strcmp(uri, "--help")) {
		nkv_probe_usage(argc == 2 ? stdout : stderr);
		return argc == 2 ? NKV_EXIT_OK : NKV_EXIT_USAGE;
	}
	if (!strncmp(uri, "tcp:", 4)) {
		rc = nkv_probe_tcp(uri);
		return rc || regs_only ? rc : nkv_probe_identify(uri);
	}
	if (strncmp(uri, "vfio-user:", 10)) {
		fprintf(stderr, "nkv-probe: only vfio-user:PATH and tcp:HOST:PORT[/NQN] "
			"addresses are supported\n");
		return NKV_EXIT_USAGE;
	}
	/* The same words nkv_ctrl_connect() gives nkv-bench and nkv-admin:
	 * the transport's own. */
	rc = ops->open(uri + 10, &tr, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "nkv-probe: %s\n", err[0] ? err : strerror(-rc));
		return NKV_EXIT_SETUP;
	}
	nkv_vfu_client_info(tr, &in);
	printf("vfio-user %u.%u max_data_xfer_size=%llu max_msg_fds=%llu\n", in.major, in.minor,
	       (unsigned long long)in.max_xfer, (unsigned long long)in.max_fds);
	printf("device: flags=0x%x%s%s regions=%u irqs=%u\n", in.dev_flags,
	       in.dev_flags & VFIO_DEVICE_FLAGS_PCI ? " PCI" : "",
	       in.dev_flags & VFIO_DEVICE_FLAGS_RESET ? " RESET" : "", in.num_regions, in.num_irqs);
	nkv_probe_regions(&in);
	ops->doorbells(tr, &dblen);
	printf("doorbells: %s", in.doorbells_mapped ? "sparse-mmap (stores)" : "REGION_WRITE messages (forwarder)");
	if (in.doorbells_mapped)
		printf(", %zu bytes mapped", dblen);
	printf("\n");
	rc = nkv_probe_config(tr);
	if (!rc)
		rc = nkv_probe_regs(ops, tr);
	if (rc)
		fprintf(stderr, "nkv-probe: reading the registers: %s\n",
			nkv_vfu_client_last_error(tr)[0] ? nkv_vfu_client_last_error(tr)
							 : strerror(-rc));
	/* One client at a time: this connection ends before the host's. */
	ops->close(tr);
	if (rc)
		return NKV_EXIT_SETUP;
	return regs_only ? NKV_EXIT_OK : nkv_probe_identify(uri);
}
