/* SPDX-License-Identifier: MIT */
/*
 * tcp_assoc.c - what the initiator says in Fabrics (tcp_host.h): the
 * tcp: URI, the host NQN, Connect, Property Get/Set, enabling a
 * controller, Identify, discovery, Keep Alive, the association.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nvmf/tcp_int.h"

/* HOST:PORT[/NQN], HOST an IPv6 address in brackets or anything else
 * without a colon. */
int nkv_nvmf_uri_parse(const char *uri, struct nkv_nvmf_addr *a, char *err, size_t errlen)
{
	const char *h, *colon, *slash;
	char *end;
	unsigned long port;
	size_t hl;

	memset(a, 0, sizeof(*a));
	if (!uri || strncmp(uri, "tcp:", 4)) {
		snprintf(err, errlen, "'%s' is not a tcp:HOST:PORT[/NQN] URI", uri ? uri : "(null)");
		return -EINVAL;
	}
	h = uri + 4;
	slash = strchr(h, '/');
	colon = *h == '[' ? strstr(h, "]:") : strchr(h, ':');
	if (!colon || (slash && colon > slash)) {
		snprintf(err, errlen, "'%s': want tcp:HOST:PORT[/NQN] (a port is needed)", uri);
		return -EINVAL;
	}
	hl = (size_t)(colon - h) - (*h == '[' ? 1 : 0);
	colon += *h == '[' ? 2 : 1;
	port = strtoul(colon, &end, 10);
	if (!hl || hl >= sizeof(a->host) || end == colon || !port || port > 65535 ||
	    (*end && *end != '/')) {
		snprintf(err, errlen, "'%s': bad host or port (want tcp:HOST:PORT[/NQN], PORT 1..65535)",
			 uri);
		return -EINVAL;
	}
	memcpy(a->host, h + (*h == '[' ? 1 : 0), hl);
	a->port = (uint16_t)port;
	if (*end == '/' && (strlen(end + 1) > NKV_NVMF_NQN_MAX || !end[1])) {
		snprintf(err, errlen, "'%s': the NQN after '/' must be 1..%u bytes", uri,
			 NKV_NVMF_NQN_MAX);
		return -EINVAL;
	}
	if (*end == '/')
		snprintf(a->nqn, sizeof(a->nqn), "%s", end + 1);
	return 0;
}

/* 32 hex digits of /etc/machine-id, or of an FNV-1a hash of the host
 * name (repeated) where there is none. */
static void nkv_nvmf_machine_hex(char hex[33])
{
	FILE *f = fopen("/etc/machine-id", "re");
	char name[256] = "nkv";
	uint64_t h = 1469598103934665603ull;
	size_t i;

	if (f) {
		int ok = fscanf(f, "%32s", hex) == 1 && strlen(hex) == 32;

		fclose(f);
		for (i = 0; ok && i < 32; i++)
			ok = isxdigit((unsigned char)hex[i]);
		if (ok)
			return;
	}
	gethostname(name, sizeof(name) - 1);
	for (i = 0; name[i]; i++)
		h = (h ^ (uint8_t)name[i]) * 1099511628211ull;
	snprintf(hex, 33, "%016llx%016llx", (unsigned long long)h, (unsigned long long)~h);
}

void nkv_nvmf_default_hostnqn(char *buf, size_t len)
{
	char x[33];

	nkv_nvmf_machine_hex(x);
	snprintf(buf, len, "nqn.2014-08.org.nvmexpress:uuid:%.8s-%.4s-%.4s-%.4s-%.12s", x, x + 8,
		 x + 12, x + 16, x + 20);
}

static void nkv_nvmf_fab(struct nkv_nvmf_cmd *c, uint8_t fctype)
{
	memset(c, 0, sizeof(*c));
	c->sqe.cdw0 = NKV_NVMF_OPC;
	c->sqe.nsid = fctype;
}

/* Run c; a status other than success is -EREMOTEIO, logged. */
static int nkv_nvmf_run(struct nkv_nvmf_q *q, struct nkv_nvmf_cmd *c, const char *what)
{
	int rc = nkv_nvmf_q_exec(q, c);

	if (!rc && nkv_nvmf_status(c)) {
		nkv_nvmf_logf(q, "event=nvmf_cmd_failed peer=%s:%u qid=%u cmd=%s status=%#x",
			      q->host, q->port, q->qid, what, nkv_nvmf_status(c));
		rc = -EREMOTEIO;
	}
	return rc;
}

int nkv_nvmf_connect(struct nkv_nvmf_q *q, const char *subnqn, uint16_t cntlid,
		     const struct nkv_nvmf_opts *o, uint16_t *cntlid_out)
{
	struct nkv_nvmf_connect_data d;
	struct nkv_nvmf_cmd c;
	int rc;

	memset(&d, 0, sizeof(d));
	d.cntlid = q->qid ? cntlid : 0xffff;
	if (o->hostnqn)
		snprintf(d.hostnqn, sizeof(d.hostnqn), "%s", o->hostnqn);
	else
		nkv_nvmf_default_hostnqn(d.hostnqn, sizeof(d.hostnqn));
	snprintf(d.subnqn, sizeof(d.subnqn), "%s", subnqn);
	nkv_nvmf_fab(&c, NKV_NVMF_CONNECT);
	c.sqe.cdw10 = (uint32_t)q->qid << 16;
	c.sqe.cdw11 = q->depth - 1u;
	c.sqe.cdw12 = q->qid ? 0 : (o->kato_ms ? o->kato_ms : 30000);
	c.icd = &d;
	c.icd_len = sizeof(d);
	rc = nkv_nvmf_run(q, &c, "connect");
	if (!rc && cntlid_out)
		*cntlid_out = (uint16_t)c.cqe.dw0;
	return rc;
}

int nkv_nvmf_prop_get(struct nkv_nvmf_q *q, uint32_t ofst, int eight, uint64_t *val)
{
	struct nkv_nvmf_cmd c;
	int rc;

	nkv_nvmf_fab(&c, NKV_NVMF_PROP_GET);
	c.sqe.cdw10 = eight ? 1 : 0;	/* ATTRIB: the property's size */
	c.sqe.cdw11 = ofst;
	rc = nkv_nvmf_run(q, &c, "property_get");
	*val = c.cqe.dw0 | ((uint64_t)c.cqe.dw1 << 32);
	return rc;
}

static int nkv_nvmf_prop_set(struct nkv_nvmf_q *q, uint32_t ofst, uint32_t val)
{
	struct nkv_nvmf_cmd c;

	nkv_nvmf_fab(&c, NKV_NVMF_PROP_SET);
	c.sqe.cdw11 = ofst;
	c.sqe.cdw12 = val;
	return nkv_nvmf_run(q, &c, "property_set");
}

/* CC.EN = 1 (CSS 110b: I/O command sets; IOSQES 6, IOCQES 4), then wait
 * for CSTS.RDY within the timeout. */
static int nkv_nvmf_enable(struct nkv_nvmf_q *q)
{
	uint32_t cc = 1u | (6u << 4) | (6u << 16) | (4u << 20);
	uint64_t end = nkv_nvmf_now_ms() + q->timeout_ms, csts = 0;
	struct timespec ms = { 0, 1000000 };
	int rc = nkv_nvmf_prop_set(q, NKV_REG_CC, cc);

	while (!rc) {
		rc = nkv_nvmf_prop_get(q, NKV_REG_CSTS, 0, &csts);
		if (rc || (csts & NKV_CSTS_RDY))
			break;
		if (nkv_nvmf_now_ms() > end) {
			nkv_nvmf_logf(q, "event=nvmf_enable_timeout peer=%s:%u", q->host, q->port);
			return -ETIMEDOUT;
		}
		nanosleep(&ms, NULL);
	}
	return rc;
}

int nkv_nvmf_identify(struct nkv_nvmf_q *admin, uint8_t cns, uint32_t nsid, uint8_t csi,
		      void *buf, uint16_t *st)
{
	struct nkv_nvmf_cmd c;
	int rc;

	memset(&c, 0, sizeof(c));
	c.sqe.cdw0 = NKV_ADM_IDENTIFY;
	c.sqe.nsid = nsid;
	c.sqe.cdw10 = cns;
	c.sqe.cdw11 = (uint32_t)csi << 24;
	c.c2h = buf;
	c.c2h_len = 4096;
	rc = nkv_nvmf_q_exec(admin, &c);
	if (st)
		*st = rc ? 0 : nkv_nvmf_status(&c);
	return rc ? rc : nkv_nvmf_status(&c) ? -EREMOTEIO : 0;
}

int nkv_nvmf_disc_log(const struct nkv_nvmf_addr *a, const struct nkv_nvmf_opts *o,
		      uint8_t *log, uint32_t bytes)
{
	const uint32_t numd = bytes / 4 - 1;
	struct nkv_nvmf_q *q;
	struct nkv_nvmf_cmd c;
	int rc = nkv_nvmf_q_open(a, NKV_NVMF_DISC_NQN, 0, 0, o, &q, NULL);

	if (!rc && (rc = nkv_nvmf_enable(q)) != 0)
		nkv_nvmf_q_close(q);
	if (rc)
		return rc;
	memset(&c, 0, sizeof(c));
	c.sqe.cdw0 = NKV_ADM_GET_LOG_PAGE;
	c.sqe.cdw10 = NKV_LID_DISCOVERY | ((numd & 0xffffu) << 16);
	c.sqe.cdw11 = numd >> 16;
	c.c2h = log;
	c.c2h_len = bytes;
	rc = nkv_nvmf_run(q, &c, "discovery_log");
	nkv_nvmf_q_close(q);
	return rc;
}

/* The first NVMe subsystem entry of the Discovery log page (16 KiB:
 * the header and 15 entries) at a: its NQN into nqn. */
static int nkv_nvmf_discover(const struct nkv_nvmf_addr *a, const struct nkv_nvmf_opts *o,
			     char *nqn, size_t len)
{
	const uint32_t bytes = NKV_NVMF_DISC_LOG_BYTES;
	uint8_t *log = calloc(1, bytes);
	const struct nkv_nvmf_disc_hdr *h = (const void *)log;
	char line[320];
	uint64_t i;
	int rc = log ? nkv_nvmf_disc_log(a, o, log, bytes) : -ENOMEM;

	for (i = 0; !rc && i < h->numrec && i < bytes / 1024 - 1; i++) {
		const struct nkv_nvmf_disc_entry *e = (const void *)(log + 1024 * (i + 1));

		if (e->subtype == NKV_NVMF_SUBTYPE_NVME) {
			snprintf(nqn, len, "%.*s", (int)NKV_NVMF_NQN_MAX, e->subnqn);
			break;
		}
	}
	if (!rc && (i >= h->numrec || i >= bytes / 1024 - 1)) {
		if (o->log) {
			snprintf(line, sizeof(line), "event=nvmf_discovery_empty peer=%s:%u "
				 "records=%llu", a->host, a->port, (unsigned long long)h->numrec);
			o->log(o->log_ctx, line);
		}
		rc = -ENOENT;
	}
	free(log);
	return rc;
}

/* I/O queues take IOCCSZ * 16 - 64 bytes in-capsule (Identify
 * Controller): ask, rather than assume nkv-target's 16 KiB. */
static int nkv_nvmf_io_icd(struct nkv_nvmf_assoc *as)
{
	uint8_t *id = malloc(4096);
	uint32_t ioccsz;
	int rc = id ? nkv_nvmf_identify(as->admin, NKV_CNS_CTRL, 0, 0, id, NULL) : -ENOMEM;

	if (!rc) {
		memcpy(&ioccsz, id + NKV_ID_IOCCSZ, 4);
		as->io->icd_max = ioccsz >= 4 ? ioccsz * 16u - 64u : 0;
	}
	free(id);
	return rc;
}

int nkv_nvmf_assoc_open(struct nkv_nvmf_assoc *as, const struct nkv_nvmf_addr *a,
			const struct nkv_nvmf_opts *o)
{
	int rc = 0;

	memset(as, 0, sizeof(*as));
	as->addr = *a;
	if (a->nqn[0])
		snprintf(as->subnqn, sizeof(as->subnqn), "%s", a->nqn);
	else
		rc = nkv_nvmf_discover(a, o, as->subnqn, sizeof(as->subnqn));
	if (!rc)
		rc = nkv_nvmf_q_open(a, as->subnqn, 0, 0, o, &as->admin, &as->cntlid);
	if (!rc)
		rc = nkv_nvmf_enable(as->admin);
	if (!rc)
		rc = nkv_nvmf_q_open(a, as->subnqn, 1, as->cntlid, o, &as->io, NULL);
	if (!rc)
		rc = nkv_nvmf_io_icd(as);
	if (rc) {
		nkv_nvmf_assoc_close(as);
		return rc;
	}
	as->kato_ms = o->kato_ms ? o->kato_ms : 30000;
	as->ka_last_ms = nkv_nvmf_now_ms();
	return 0;
}

void nkv_nvmf_assoc_close(struct nkv_nvmf_assoc *as)
{
	nkv_nvmf_q_close(as->io);
	nkv_nvmf_q_close(as->admin);
	as->io = NULL;
	as->admin = NULL;
}

int nkv_nvmf_assoc_ka_due(const struct nkv_nvmf_assoc *as)
{
	return as->admin && nkv_nvmf_now_ms() - as->ka_last_ms >= as->kato_ms / 2;
}

int nkv_nvmf_assoc_keep_alive(struct nkv_nvmf_assoc *as)
{
	struct nkv_nvmf_cmd c;
	int rc;

	memset(&c, 0, sizeof(c));
	c.sqe.cdw0 = NKV_ADM_KEEP_ALIVE;
	rc = nkv_nvmf_run(as->admin, &c, "keep_alive");
	as->ka_last_ms = nkv_nvmf_now_ms();
	return rc;
}
