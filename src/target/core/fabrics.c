/* SPDX-License-Identifier: MIT */
/*
 * fabrics.c - the NVMe over Fabrics controller model (req.h): Connect
 * creates controllers with dynamic IDs and joins I/O queues to them,
 * Property Get/Set reach the register file, the discovery subsystem's log
 * page lists the ports. Transport-neutral: what arrives here is an SQE
 * and its data, whatever carried them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define NKV_TGT_FAB_CTRLS 256u	/* live controllers of one fabric */
#define NKV_TGT_FAB_PORTS 16u
#define NKV_TGT_CNTLID_MAX 0xffefu	/* above: reserved IDs */
#define NKV_TGT_ADMIN_MIN_Q 32u		/* entries an admin queue has at least */

struct nkv_tgt_fab {
	struct nkv_subsys *ss;		/* the NVM subsystem (not owned) */
	struct nkv_subsys *disc;	/* the discovery subsystem (owned) */
	struct nkv_tgt_ctrl_opts opts;
	struct nkv_tgt_ctrl *ctrls[NKV_TGT_FAB_CTRLS];
	uint16_t next_cntlid;
	struct nkv_tgt_port ports[NKV_TGT_FAB_PORTS];
	uint32_t nports;
	uint64_t genctr;		/* the log page's generation */
};

struct nkv_tgt_fab *nkv_tgt_fab_create(struct nkv_subsys *ss,
				       const struct nkv_tgt_ctrl_opts *opts)
{
	struct nkv_subsys_opts so = { sizeof(so), NULL, NULL, NKV_NVMF_DISC_NQN };
	struct nkv_tgt_fab *f;

	if (!ss)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	if (nkv_tgt_ctrl_opts_resolve(opts, &f->opts) || !(f->disc = nkv_subsys_create(&so))) {
		free(f);
		return NULL;
	}
	f->disc->discovery = 1;
	f->ss = ss;
	f->next_cntlid = 1;
	return f;
}

void nkv_tgt_fab_destroy(struct nkv_tgt_fab *f)
{
	uint32_t i;

	if (!f)
		return;
	for (i = 0; i < NKV_TGT_FAB_CTRLS; i++)
		nkv_tgt_ctrl_destroy(f->ctrls[i]);
	nkv_subsys_destroy(f->disc);
	free(f);
}

int nkv_tgt_fab_add_port(struct nkv_tgt_fab *f, const struct nkv_tgt_port *port)
{
	if (f->nports == NKV_TGT_FAB_PORTS)
		return -ENOSPC;
	f->ports[f->nports++] = *port;
	f->genctr++;
	return 0;
}

static struct nkv_tgt_ctrl *nkv_tgt_fab_find(struct nkv_tgt_fab *f, uint16_t cntlid)
{
	uint32_t i;

	for (i = 0; i < NKV_TGT_FAB_CTRLS; i++)
		if (f->ctrls[i] && f->ctrls[i]->cntlid == cntlid)
			return f->ctrls[i];
	return NULL;
}

/* The next CNTLID no live controller holds, 1..FFEFh, rotating so that a
 * host reconnecting does not get the ID of the association it just lost. */
static uint16_t nkv_tgt_fab_cntlid(struct nkv_tgt_fab *f)
{
	uint32_t tries;

	for (tries = 0; tries < NKV_TGT_CNTLID_MAX; tries++) {
		uint16_t id = f->next_cntlid;

		f->next_cntlid = id >= NKV_TGT_CNTLID_MAX ? 1 : id + 1;
		if (!nkv_tgt_fab_find(f, id))
			return id;
	}
	return 0;
}

/* An NQN field: NUL-terminated within its 256 bytes, 1..223 bytes long. */
static int nkv_tgt_nqn_ok(const char *nqn)
{
	size_t n = strnlen(nqn, 256);

	return n > 0 && n <= NKV_NVMF_NQN_MAX;
}

static void nkv_tgt_connect_bad(struct nkv_tgt_req *req, int in_data, uint16_t off)
{
	req->status = nkv_tgt_cs(NKV_SC_CONNECT_PARAM);
	req->dw0 = nkv_nvmf_connect_ipo(in_data, off);
}

/* Admin Connect: a new controller of the subsystem named. */
static void nkv_tgt_connect_admin(struct nkv_tgt_fab *f, struct nkv_tgt_req *req,
				  const struct nkv_nvmf_connect_data *d,
				  struct nkv_subsys *ss, struct nkv_tgt_ctrl **out)
{
	struct nkv_tgt_ctrl_opts o = f->opts;
	struct nkv_tgt_ctrl *c;
	uint32_t i;

	if (d->cntlid != 0xffff)
		return nkv_tgt_connect_bad(req, 1, 16);	/* static model only */
	if (nkv_nvmf_connect_sqsize(&req->sqe) < NKV_TGT_ADMIN_MIN_Q ||
	    nkv_nvmf_connect_sqsize(&req->sqe) > f->opts.mqes)
		return nkv_tgt_connect_bad(req, 0, 44);
	for (i = 0; i < NKV_TGT_FAB_CTRLS && f->ctrls[i]; i++)
		;
	o.cntlid = nkv_tgt_fab_cntlid(f);
	if (i == NKV_TGT_FAB_CTRLS || !o.cntlid) {
		req->status = nkv_tgt_cs(NKV_SC_CONNECT_BUSY);
		return;
	}
	c = nkv_tgt_ctrl_create_capsule(ss, &o);
	if (!c) {
		req->status = nkv_tgt_sc(NKV_SC_INTERNAL);
		return;
	}
	c->fab = f;
	c->kato_ms = nkv_nvmf_connect_kato(&req->sqe);
	memcpy(c->hostnqn, d->hostnqn, sizeof(c->hostnqn));
	nkv_tgt_access_hostnqn(c);	/* self-asserted: rules by NQN trust the network */
	c->qconn[0] = 1;
	f->ctrls[i] = c;
	req->dw0 = c->cntlid;
	*out = c;
}

/* I/O Connect: join the controller of the CNTLID given, as the same host
 * to the same subsystem, once per queue, once it is ready. */
static void nkv_tgt_connect_io(struct nkv_tgt_fab *f, struct nkv_tgt_req *req,
			       const struct nkv_nvmf_connect_data *d,
			       struct nkv_subsys *ss, struct nkv_tgt_ctrl **out)
{
	struct nkv_tgt_ctrl *c = nkv_tgt_fab_find(f, d->cntlid);
	uint16_t qid = nkv_nvmf_connect_qid(&req->sqe);
	uint32_t n = nkv_nvmf_connect_sqsize(&req->sqe);

	if (!c || c->ss != ss)
		return nkv_tgt_connect_bad(req, 1, c ? 256 : 16);
	if (strncmp(c->hostnqn, d->hostnqn, sizeof(c->hostnqn))) {
		req->status = nkv_tgt_cs(NKV_SC_CONNECT_HOST);
		return;
	}
	/* A discovery controller has an admin queue only. */
	if (qid > c->max_ioq || c->qconn[qid] || !(c->csts & NKV_CSTS_RDY) || ss->discovery)
		return nkv_tgt_connect_bad(req, 0, 42);
	if (n < 2 || n > c->mqes)
		return nkv_tgt_connect_bad(req, 0, 44);
	c->qconn[qid] = 1;
	req->dw0 = c->cntlid;
	*out = c;
}

int nkv_tgt_fab_connect(struct nkv_tgt_fab *f, struct nkv_tgt_req *req,
			const void *data, uint32_t len, struct nkv_tgt_ctrl **ctrl)
{
	const struct nkv_nvmf_connect_data *d = data;
	struct nkv_subsys *ss;

	*ctrl = NULL;
	if (nkv_sqe_opc(&req->sqe) != NKV_NVMF_OPC ||
	    nkv_nvmf_fctype(&req->sqe) != NKV_NVMF_CONNECT)
		return -EINVAL;
	req->status = 0;
	req->dw0 = req->dw1 = 0;
	req->produced = 0;
	if (nkv_nvmf_connect_recfmt(&req->sqe) != 0) {
		req->status = nkv_tgt_cs(NKV_SC_CONNECT_FORMAT);
		return 0;
	}
	if (!d || len < sizeof(*d)) {
		req->status = nkv_tgt_sc(NKV_SC_SGL_DATA_LEN_INVALID);
		return 0;
	}
	if (!nkv_tgt_nqn_ok(d->subnqn) || !nkv_tgt_nqn_ok(d->hostnqn)) {
		nkv_tgt_connect_bad(req, 1, nkv_tgt_nqn_ok(d->subnqn) ? 512 : 256);
		return 0;
	}
	if (!strcmp(d->subnqn, f->ss->subnqn))
		ss = f->ss;
	else if (!strcmp(d->subnqn, NKV_NVMF_DISC_NQN))
		ss = f->disc;
	else {
		nkv_tgt_connect_bad(req, 1, 256);
		return 0;
	}
	if (nkv_nvmf_connect_qid(&req->sqe) == 0)
		nkv_tgt_connect_admin(f, req, d, ss, ctrl);
	else
		nkv_tgt_connect_io(f, req, d, ss, ctrl);
	return 0;
}

void nkv_tgt_fab_disconnect(struct nkv_tgt_fab *f, struct nkv_tgt_ctrl *c, uint16_t qid)
{
	uint32_t i;

	if (!c || qid > c->max_ioq)
		return;
	c->qconn[qid] = 0;
	if (qid)
		return;
	for (i = 0; i < NKV_TGT_FAB_CTRLS; i++)
		if (f->ctrls[i] == c)
			f->ctrls[i] = NULL;
	nkv_tgt_ctrl_destroy(c);
}

/* The properties a fabrics host reaches, at the size they have: CAP (8),
 * VS, CC, CSTS (4). Only CC is written. */
static int nkv_tgt_prop_ok(uint32_t ofst, unsigned size, int set)
{
	if (set)
		return ofst == NKV_REG_CC && size == 4;
	if (ofst == NKV_REG_CAP)
		return size == 8;
	return size == 4 && (ofst == NKV_REG_VS || ofst == NKV_REG_CC || ofst == NKV_REG_CSTS);
}

void nkv_tgt_fab_cmd(struct nkv_tgt_ctrl *c, struct nkv_tgt_req *req)
{
	const struct nkv_sqe *s = &req->sqe;
	uint32_t ofst = nkv_nvmf_prop_ofst(s);
	unsigned size = nkv_nvmf_prop_size(s);
	uint64_t v;

	switch (nkv_nvmf_fctype(s)) {
	case NKV_NVMF_PROP_GET:
		if (req->qid || !nkv_nvmf_prop_attrib_ok(s) || !nkv_tgt_prop_ok(ofst, size, 0)) {
			req->status = nkv_tgt_sc(NKV_SC_INVALID_FIELD);
			break;
		}
		v = nkv_tgt_ctrl_reg_read(c, ofst, size);
		req->dw0 = (uint32_t)v;
		req->dw1 = (uint32_t)(v >> 32);
		break;
	case NKV_NVMF_PROP_SET:
		if (req->qid || !nkv_nvmf_prop_attrib_ok(s) || !nkv_tgt_prop_ok(ofst, size, 1)) {
			req->status = nkv_tgt_sc(NKV_SC_INVALID_FIELD);
			break;
		}
		nkv_tgt_ctrl_reg_write(c, ofst, nkv_nvmf_prop_value(s), size);
		break;
	case NKV_NVMF_CONNECT:
		req->status = nkv_tgt_sc(NKV_SC_CMD_SEQ_ERROR);	/* connected already */
		break;
	default:
		req->status = nkv_tgt_sc(NKV_SC_INVALID_OPCODE);	/* no auth, no disconnect */
		break;
	}
	req->done(req);
}

/* A port listening on every address of its family (0.0.0.0, ::). */
static int nkv_tgt_port_wildcard(const struct nkv_tgt_port *p)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (p->adrfam == NKV_NVMF_ADRFAM_IPV6)
		return inet_pton(AF_INET6, p->traddr, &a6) == 1 &&
		       !memcmp(&a6, &in6addr_any, sizeof(a6));
	return inet_pton(AF_INET, p->traddr, &a4) == 1 && a4.s_addr == htonl(INADDR_ANY);
}

/* c asks for the log: a wildcard port is listed at the address c's host
 * reached it at (as Linux's nvmet does), the others as they listen. */
static void nkv_tgt_disc_entry(const struct nkv_tgt_fab *f, const struct nkv_tgt_ctrl *c,
			       const struct nkv_tgt_port *port, struct nkv_nvmf_disc_entry *e)
{
	struct nkv_tgt_port local = *port;
	const struct nkv_tgt_port *p = port;

	if (c->local_traddr[0] && nkv_tgt_port_wildcard(port)) {
		local.adrfam = c->local_adrfam;
		snprintf(local.traddr, sizeof(local.traddr), "%s", c->local_traddr);
		p = &local;
	}
	memset(e, 0, sizeof(*e));
	e->trtype = NKV_NVMF_TRTYPE_TCP;
	e->adrfam = p->adrfam;
	e->subtype = NKV_NVMF_SUBTYPE_NVME;
	e->treq = NKV_NVMF_TREQ_NOT_REQUIRED;
	e->portid = p->portid;
	e->cntlid = 0xffff;
	e->asqsz = NKV_TGT_ADMIN_MIN_Q;
	/* ASCII fields are space padded (the spec's convention); NQNs are NUL padded. */
	memset(e->trsvcid, ' ', sizeof(e->trsvcid));
	memcpy(e->trsvcid, p->trsvcid, strnlen(p->trsvcid, sizeof(p->trsvcid)));
	memset(e->traddr, ' ', sizeof(e->traddr));
	memcpy(e->traddr, p->traddr, strnlen(p->traddr, sizeof(p->traddr)));
	snprintf(e->subnqn, sizeof(e->subnqn), "%s", f->ss->subnqn);
}

uint16_t nkv_tgt_fab_disc_log(struct nkv_tgt_ctrl *c, uint8_t **buf, uint64_t *size)
{
	const struct nkv_tgt_fab *f = c->fab;
	struct nkv_nvmf_disc_hdr *h;
	uint32_t i, n = f ? f->nports : 0;

	*size = sizeof(*h) + (uint64_t)n * sizeof(struct nkv_nvmf_disc_entry);
	*buf = calloc(1, *size);
	if (!*buf)
		return nkv_tgt_sc(NKV_SC_INTERNAL);
	h = (struct nkv_nvmf_disc_hdr *)*buf;
	h->genctr = f ? f->genctr : 0;
	h->numrec = n;
	for (i = 0; i < n; i++)
		nkv_tgt_disc_entry(f, c, &f->ports[i],
				   (struct nkv_nvmf_disc_entry *)(*buf + sizeof(*h)) + i);
	return 0;
}
