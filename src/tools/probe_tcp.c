/* SPDX-License-Identifier: MIT */
/*
 * probe_tcp.c - nkv-probe tcp:HOST:PORT[/NQN] (probe_tcp.h), with nkv's
 * NVMe/TCP initiator (src/nvmf/tcp_host.h) linked in: the discovery
 * controller's log page, then an admin queue of the subsystem (the URI's
 * NQN, or the first the log lists), its ICResp and Connect results and
 * its registers by Property Get. Nothing is enabled or written: the
 * bring-up that follows (nkv-probe's identify part) is libnkv's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkv_wire.h"
#include "nvmf/tcp_host.h"
#include "tools/exit.h"
#include "tools/probe_tcp.h"

static void nkv_probe_tcp_log(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "nkv-probe: %s\n", line);
}

/* An ASCII field of an entry, its padding (spaces, NULs) cut. */
static void nkv_probe_field(char *out, size_t len, const char *f, size_t flen)
{
	size_t n = strnlen(f, flen);

	while (n && f[n - 1] == ' ')
		n--;
	snprintf(out, len, "%.*s", (int)n, f);
}

/* Print the log's entries; the first NVM subsystem's NQN into nqn when
 * it is empty. 0, or -ENOENT when the log lists none. */
static int nkv_probe_disc(const uint8_t *log, uint32_t bytes, char *nqn, size_t nlen)
{
	const struct nkv_nvmf_disc_hdr *h = (const void *)log;
	uint64_t i, n = h->numrec < bytes / 1024 - 1 ? h->numrec : bytes / 1024 - 1;
	int found = 0;

	printf("discovery: genctr=%llu records=%llu\n", (unsigned long long)h->genctr,
	       (unsigned long long)h->numrec);
	for (i = 0; i < n; i++) {
		const struct nkv_nvmf_disc_entry *e = (const void *)(log + 1024 * (i + 1));
		char addr[257], svc[33], sub[257];

		nkv_probe_field(addr, sizeof(addr), e->traddr, sizeof(e->traddr));
		nkv_probe_field(svc, sizeof(svc), e->trsvcid, sizeof(e->trsvcid));
		nkv_probe_field(sub, sizeof(sub), e->subnqn, sizeof(e->subnqn));
		printf("  port %u: %s %s %s:%s subnqn=%s%s\n", e->portid,
		       e->trtype == NKV_NVMF_TRTYPE_TCP ? "tcp" : "other-transport",
		       e->adrfam == NKV_NVMF_ADRFAM_IPV6 ? "ipv6" : "ipv4", addr, svc, sub,
		       e->subtype == NKV_NVMF_SUBTYPE_NVME ? "" : " (a discovery subsystem)");
		if (e->subtype == NKV_NVMF_SUBTYPE_NVME && !found && !nqn[0])
			snprintf(nqn, nlen, "%.*s", (int)NKV_NVMF_NQN_MAX, sub);
		found |= e->subtype == NKV_NVMF_SUBTYPE_NVME;
	}
	return found || nqn[0] ? 0 : -ENOENT;
}

/* The subsystem's admin queue: what it settled, and the registers. */
static int nkv_probe_admin(const struct nkv_nvmf_addr *a, const char *nqn,
			   const struct nkv_nvmf_opts *o)
{
	struct nkv_nvmf_q_params p;
	uint64_t cap = 0, vs = 0, csts = 0;
	struct nkv_nvmf_q *q;
	uint16_t cntlid = 0;
	int rc = nkv_nvmf_q_open(a, nqn, 0, 0, o, &q, &cntlid);

	if (rc) {
		fprintf(stderr, "nkv-probe: connecting an admin queue to %s: %s\n", nqn,
			strerror(-rc));
		return rc;
	}
	nkv_nvmf_q_params(q, &p);
	printf("admin queue: subnqn=%s cntlid=%u depth=%u maxh2cdata=%u cpda=%u "
	       "header_digest=%s data_digest=%s in_capsule=%u\n", nqn, cntlid, p.depth,
	       p.maxh2cdata, p.cpda, p.hdgst ? "on" : "off", p.ddgst ? "on" : "off", p.icd_max);
	rc = nkv_nvmf_prop_get(q, NKV_REG_CAP, 1, &cap);
	if (!rc)
		rc = nkv_nvmf_prop_get(q, NKV_REG_VS, 0, &vs);
	if (!rc)
		rc = nkv_nvmf_prop_get(q, NKV_REG_CSTS, 0, &csts);
	if (rc)
		fprintf(stderr, "nkv-probe: Property Get: %s\n", strerror(-rc));
	else
		nkv_probe_print_regs(cap, vs, csts);
	nkv_nvmf_q_close(q);
	return rc;
}

int nkv_probe_tcp(const char *uri)
{
	struct nkv_nvmf_opts o = { .size = sizeof(o), .timeout_ms = 5000,
				   .log = nkv_probe_tcp_log };
	struct nkv_nvmf_addr a;
	char err[200], nqn[NKV_NVMF_NQN_MAX + 1];
	uint8_t *log;
	int rc;

	if (nkv_nvmf_uri_parse(uri, &a, err, sizeof(err))) {
		fprintf(stderr, "nkv-probe: %s\n", err);
		return NKV_EXIT_USAGE;
	}
	printf("nvme-tcp: %s:%u (NVMe/TCP over the network: every command and value "
	       "crosses it)\n", a.host, a.port);
	snprintf(nqn, sizeof(nqn), "%s", a.nqn);
	log = calloc(1, NKV_NVMF_DISC_LOG_BYTES);
	if (!log)
		return NKV_EXIT_SETUP;
	rc = nkv_nvmf_disc_log(&a, &o, log, NKV_NVMF_DISC_LOG_BYTES);
	if (rc)
		fprintf(stderr, "nkv-probe: the discovery controller at %s:%u: %s\n", a.host,
			a.port, strerror(-rc));
	else if (nkv_probe_disc(log, NKV_NVMF_DISC_LOG_BYTES, nqn, sizeof(nqn)))
		fprintf(stderr, "nkv-probe: the Discovery log lists no NVM subsystem\n");
	free(log);
	if (!nqn[0] || nkv_probe_admin(&a, nqn, &o))
		return NKV_EXIT_SETUP;
	return NKV_EXIT_OK;
}
