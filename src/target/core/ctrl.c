/* SPDX-License-Identifier: MIT */
/*
 * ctrl.c - nkv-target subsystem and controller lifetime, command objects
 * and the poll pass.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "core.h"
#include "poller.h"

/* Space-padded Identify string. */
static void nkv_tgt_pad(char *dst, size_t n, const char *src)
{
	size_t l = strlen(src);

	memset(dst, ' ', n);
	memcpy(dst, src, l < n ? l : n);
}

struct nkv_subsys *nkv_subsys_create(const struct nkv_subsys_opts *opts)
{
	struct nkv_subsys *ss = calloc(1, sizeof(*ss));
	const char *sn = NULL, *mn = NULL, *nqn = NULL;

	if (!ss)
		return NULL;
	ss->tenants = nkv_tenants_create();
	if (!ss->tenants) {
		free(ss);
		return NULL;
	}
	if (opts && opts->size >= sizeof(*opts)) {
		sn = opts->serial;
		mn = opts->model;
		nqn = opts->subnqn;
	}
	nkv_tgt_pad(ss->sn, sizeof(ss->sn), sn ? sn : "NKV0001");
	nkv_tgt_pad(ss->mn, sizeof(ss->mn), mn ? mn : "nkv-target");
	snprintf(ss->subnqn, sizeof(ss->subnqn), "%s",
		 nqn ? nqn : "nqn.2026-01.io.nkv:target");
	return ss;
}

int nkv_subsys_add_ns(struct nkv_subsys *ss, uint32_t nsid, struct nkv_be *be)
{
	if (!ss || !be || !be->ops || !nsid || nsid > NKV_TGT_MAX_NS)
		return -EINVAL;
	if (be->csi != NKV_CSI_KV && be->csi != NKV_CSI_NVM)
		return -EINVAL;
	if (be->csi == NKV_CSI_NVM && (!be->block_size ||
				       (be->block_size & (be->block_size - 1))))
		return -EINVAL;
	if (ss->ns[nsid])
		return -EEXIST;
	be->tenants = ss->tenants;	/* before the slot: its owners from the first Store */
	be->tenant_nsid = nsid;
	if (be->ops->attached)
		be->ops->attached(be);
	ss->ns[nsid] = be;
	return 0;
}

uint32_t nkv_subsys_mdts(struct nkv_subsys *ss)
{
	const struct nkv_be *be;
	uint64_t need = 0;
	uint32_t i, mdts = NKV_TGT_MDTS_MIN;

	for (i = 1; i <= NKV_TGT_MAX_NS; i++) {
		/* Held: namespace_add and namespace_remove may run meanwhile. */
		be = nkv_subsys_ns_get(ss, i);
		if (be && be->csi == NKV_CSI_KV && (uint64_t)be->max_value + NKV_TGT_KEY_HEAD > need)
			need = (uint64_t)be->max_value + NKV_TGT_KEY_HEAD;
		if (be)
			nkv_subsys_ns_put(ss, i);
	}
	while (mdts < NKV_TGT_MDTS_MAX && ((uint64_t)NKV_PAGE_SIZE << mdts) < need)
		mdts++;
	return mdts;
}

void nkv_subsys_destroy(struct nkv_subsys *ss)
{
	uint32_t i;

	if (!ss)
		return;
	for (i = 1; i <= NKV_TGT_MAX_NS; i++)
		if (ss->ns[i])
			ss->ns[i]->ops->destroy(ss->ns[i]);
	nkv_tenants_destroy(ss->tenants);
	free(ss);
}

/* opts with the defaults applied, checked: the one place both are
 * (mdts 0 stays 0: the subsystem's, known at create). */
int nkv_tgt_ctrl_opts_resolve(const struct nkv_tgt_ctrl_opts *o, struct nkv_tgt_ctrl_opts *d)
{
	*d = (struct nkv_tgt_ctrl_opts){ sizeof(*d) };
	if (o && o->size >= sizeof(*d))
		*d = *o;
	d->mqes = d->mqes ? d->mqes : 1024;
	d->max_ioq = d->max_ioq ? d->max_ioq : 64;
	d->to = d->to ? d->to : 20;
	if (d->mqes < 2 || d->mqes > 65536 || d->max_ioq > 65534 ||
	    d->mdts > NKV_TGT_MDTS_MAX || d->to > 255 || d->dstrd > 4 ||
	    d->kml > NKV_KEY_MAX)
		return -EINVAL;
	return 0;
}

static void nkv_tgt_layout_of(uint32_t max_ioq, uint32_t dstrd, struct nkv_tgt_bar0_layout *l)
{
	l->db_offset = NKV_REG_DBS;
	l->db_stride = 4u << dstrd;
	l->db_bytes = 2 * (max_ioq + 1) * l->db_stride;
	l->size = 0x2000;
	while (l->size < l->db_offset + l->db_bytes)	/* PCI BARs are powers of two */
		l->size <<= 1;
}

int nkv_tgt_ctrl_layout(const struct nkv_tgt_ctrl_opts *opts, struct nkv_tgt_bar0_layout *out)
{
	struct nkv_tgt_ctrl_opts d;
	int rc = nkv_tgt_ctrl_opts_resolve(opts, &d);

	if (!rc)
		nkv_tgt_layout_of(d.max_ioq, d.dstrd, out);
	return rc;
}

uint32_t nkv_tgt_ctrl_bar0_size(const struct nkv_tgt_ctrl *c)
{
	struct nkv_tgt_bar0_layout l;

	nkv_tgt_layout_of(c->max_ioq, c->dstrd, &l);
	return l.size;
}

static int nkv_tgt_opts(struct nkv_tgt_ctrl *c, struct nkv_subsys *ss,
			const struct nkv_tgt_ctrl_opts *o)
{
	struct nkv_tgt_ctrl_opts d;

	if (nkv_tgt_ctrl_opts_resolve(o, &d))
		return -EINVAL;
	c->mqes = d.mqes;
	c->max_ioq = d.max_ioq;
	c->mdts = d.mdts ? d.mdts : nkv_subsys_mdts(ss);
	c->to = d.to;
	c->cntlid = d.cntlid;
	c->trace = d.trace;
	c->quirks = d.quirks;
	c->dstrd = d.dstrd;
	c->sgls = d.sgls ? d.sgls : NKV_SGLS_SUPPORTED | NKV_SGLS_LONGER_THAN_DATA;
	c->kml = d.kml ? d.kml : NKV_KEY_MAX;
	c->max_xfer = (uint64_t)NKV_PAGE_SIZE << c->mdts;
	c->max_iov = (1u << c->mdts) + 1;
	c->ndb = 2 * (c->max_ioq + 1);
	return 0;
}

/* The controller's own memory, whatever of it was allocated. */
static void nkv_tgt_ctrl_free(struct nkv_tgt_ctrl *c)
{
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	if (c->capsule) {
		/* The stand-ins create_capsule made for rings it never has. */
		nkv_dma_destroy(c->dma);
		free((void *)(uintptr_t)c->db);
		free(c->qconn);
	}
	free(c->sq);
	free(c->cq);
	free(c->qstats);
	free(c->ioq_live);
	free(c);
}

struct nkv_tgt_ctrl *nkv_tgt_ctrl_create(struct nkv_subsys *ss,
					 struct nkv_dma *dma,
					 volatile uint32_t *doorbells,
					 const struct nkv_tgt_ctrl_opts *opts)
{
	struct nkv_tgt_ctrl *c;
	uint32_t nq;

	if (!ss || !dma || !doorbells)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->wake_fd = -1;
	if (nkv_tgt_opts(c, ss, opts))
		goto fail;
	c->ss = ss;
	c->dma = dma;
	c->db = doorbells;
	nq = c->max_ioq + 1;
	c->sq = calloc(nq, sizeof(*c->sq));
	c->cq = calloc(nq, sizeof(*c->cq));
	c->qstats = calloc(nq, sizeof(*c->qstats));
	c->ioq_live = calloc(nq, sizeof(*c->ioq_live));
	c->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!c->sq || !c->cq || !c->qstats || !c->ioq_live || c->wake_fd < 0)
		goto fail;
	c->bus_master = 1;
	if (nkv_guard_init())
		goto fail;
	nkv_tgt_regs_init(c);
	nkv_tgt_aen_init(c);
	c->acc_gen = UINT64_MAX;	/* the first command makes the view */
	return c;
fail:
	nkv_tgt_ctrl_free(c);
	return NULL;
}

/* Bounded wait for the backends to return every in-flight op: freeing a
 * command a backend still holds would be a use after free. */
static void nkv_tgt_wait_inflight(struct nkv_tgt_ctrl *c)
{
	struct timespec ts = { 0, 1000000 };
	int i;

	for (i = 0; i < 30000 && c->inflight; i++) {
		if (!nkv_tgt_handoff_drain(c))
			nanosleep(&ts, NULL);
	}
	/* Every command is back; a done() may still be leaving push. */
	for (i = 0; i < 30000 && __atomic_load_n(&c->pushers, __ATOMIC_ACQUIRE); i++)
		nanosleep(&ts, NULL);
	if (c->inflight)
		fprintf(stderr, "nkv-target: %u commands still held by a backend "
			"at destroy; leaking them\n", c->inflight);
}

void nkv_tgt_ctrl_destroy(struct nkv_tgt_ctrl *c)
{
	struct nkv_tgt_cmd *cmd;

	if (!c)
		return;
	c->dropping = 1;	/* the transport frees its requests itself */
	nkv_tgt_ctrl_reset(c);
	nkv_tgt_wait_inflight(c);
	if (c->inflight)
		return;
	while ((cmd = c->free_cmds)) {
		c->free_cmds = cmd->next;
		free(cmd);
	}
	nkv_tgt_ctrl_free(c);
}

/*
 * A capsule controller still needs a DMA space and a doorbell page for
 * the code it shares with ring controllers (both stay empty: nothing is
 * ever mapped, no queue is ever created in client memory).
 */
struct nkv_tgt_ctrl *nkv_tgt_ctrl_create_capsule(struct nkv_subsys *ss,
						 const struct nkv_tgt_ctrl_opts *opts)
{
	struct nkv_tgt_ctrl_opts d;
	struct nkv_tgt_bar0_layout l;
	struct nkv_dma *dma;
	struct nkv_tgt_ctrl *c;
	uint32_t *db;

	if (!ss || nkv_tgt_ctrl_opts_resolve(opts, &d) || nkv_tgt_ctrl_layout(&d, &l))
		return NULL;
	dma = nkv_dma_create();
	db = calloc(1, l.db_bytes);
	c = dma && db ? nkv_tgt_ctrl_create(ss, dma, db, &d) : NULL;
	if (!c) {
		nkv_dma_destroy(dma);
		free(db);
		return NULL;
	}
	c->capsule = 1;
	c->qconn = calloc(c->max_ioq + 1, 1);
	if (!c->qconn) {
		nkv_tgt_ctrl_destroy(c);
		return NULL;
	}
	c->ka_last_ns = nkv_tgt_now_ns();
	return c;
}

static void nkv_tgt_req_reply(struct nkv_tgt_req *req, uint16_t status)
{
	req->status = status;
	req->done(req);
}

int nkv_tgt_ctrl_exec(struct nkv_tgt_ctrl *c, struct nkv_tgt_req *req)
{
	struct nkv_tgt_cmd *cmd;

	if (!c->capsule || req->qid > c->max_ioq || req->iovcnt < 0 ||
	    req->iovcnt > NKV_TGT_REQ_IOV || !req->done)
		return -EINVAL;
	req->status = 0;
	req->dw0 = req->dw1 = 0;
	req->produced = 0;
	req->lent = NULL;
	req->lent_release = NULL;
	if (nkv_sqe_opc(&req->sqe) == NKV_NVMF_OPC) {
		nkv_tgt_fab_cmd(c, req);
		return 0;
	}
	/* Until CC.EN = 1 made it ready only Fabrics commands make sense. */
	if (!(c->csts & NKV_CSTS_RDY) || c->failed || (req->qid && !c->qconn[req->qid])) {
		nkv_tgt_req_reply(req, nkv_tgt_sc(NKV_SC_CMD_SEQ_ERROR));
		return 0;
	}
	cmd = nkv_tgt_cmd_get(c);
	if (!cmd) {
		nkv_tgt_req_reply(req, nkv_tgt_sc(NKV_SC_INTERNAL));
		return 0;
	}
	cmd->sqe = req->sqe;
	cmd->sqid = cmd->cqid = req->qid;
	cmd->req = req;
	if (req->qid == 0)
		nkv_tgt_admin_exec(c, cmd);
	else
		nkv_tgt_io_exec(c, cmd);
	return 0;
}

/* A capsule command's result goes to its request, not to a CQ. */
static void nkv_tgt_req_complete(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	struct nkv_tgt_req *req = cmd->req;

	nkv_tgt_stat_cmd(c, cmd);
	if (cmd->status)
		nkv_tgt_errlog_add(c, cmd);
	req->status = cmd->status;
	req->dw0 = cmd->dw0;
	req->produced = cmd->status ? 0 : cmd->produced;
	nkv_tgt_cmd_put(c, cmd);
	if (!c->dropping)
		req->done(req);
}

int nkv_tgt_ctrl_kato_expired(const struct nkv_tgt_ctrl *c, uint64_t now_ns)
{
	return c->kato_ms && now_ns > c->ka_last_ns &&
	       now_ns - c->ka_last_ns > (uint64_t)c->kato_ms * 1000000ull;
}

void nkv_tgt_ctrl_set_local_addr(struct nkv_tgt_ctrl *c, uint8_t adrfam, const char *traddr)
{
	c->local_adrfam = adrfam;
	snprintf(c->local_traddr, sizeof(c->local_traddr), "%s", traddr);
}

const char *nkv_tgt_ctrl_hostnqn(const struct nkv_tgt_ctrl *c)
{
	return c->hostnqn;
}

uint16_t nkv_tgt_ctrl_cntlid(const struct nkv_tgt_ctrl *c)
{
	return c->cntlid;
}

int nkv_tgt_ctrl_wake_fd(const struct nkv_tgt_ctrl *c)
{
	return c->wake_fd;
}

/*
 * Sleeping without losing a completion (a Dekker pair with the push in
 * handoff.c): announce the sleep, then look at the hand-off stack. A
 * backend pushes, then looks at the announcement. With both sides
 * sequentially consistent, either the poller sees the completion and
 * stays awake, or the backend sees the sleeper and writes the eventfd.
 */
int nkv_tgt_ctrl_sleep_begin(struct nkv_tgt_ctrl *c)
{
	__atomic_store_n(&c->sleeping, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&c->handoff, __ATOMIC_SEQ_CST)) {
		__atomic_store_n(&c->sleeping, 0, __ATOMIC_RELAXED);
		return 0;
	}
	return 1;
}

/* errno is kept: the caller reads the errno of the ppoll it slept in, and
 * the drain below always ends with EAGAIN. */
void nkv_tgt_ctrl_sleep_end(struct nkv_tgt_ctrl *c)
{
	int e = errno;
	uint64_t v;

	__atomic_store_n(&c->sleeping, 0, __ATOMIC_RELAXED);
	while (read(c->wake_fd, &v, sizeof(v)) > 0)
		;
	errno = e;
}

struct nkv_tgt_cmd *nkv_tgt_cmd_get(struct nkv_tgt_ctrl *c)
{
	struct nkv_tgt_cmd *cmd = c->free_cmds;

	if (cmd) {
		c->free_cmds = cmd->next;
		c->nfree--;
	} else if (!(cmd = malloc(sizeof(*cmd)))) {
		return NULL;
	}
	/* The inline segments are written before they are read. */
	memset(cmd, 0, offsetof(struct nkv_tgt_cmd, iov_inline));
	cmd->iov = cmd->iov_inline;
	cmd->iov_cap = NKV_TGT_IOV_INLINE;
	cmd->ctrl = c;
	cmd->inext = c->inflight_head;
	if (cmd->inext)
		cmd->inext->iprev = cmd;
	c->inflight_head = cmd;
	c->inflight++;
	return cmd;
}

/* The backend is done with cmd: its namespace may go (ns.c's removal). */
static void nkv_tgt_cmd_ns_put(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	if (!cmd->be)
		return;
	nkv_subsys_ns_put(c->ss, cmd->sqe.nsid);
	cmd->be = NULL;
}

void nkv_tgt_cmd_put(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	nkv_tgt_cmd_ns_put(c, cmd);
	if (cmd->iprev)
		cmd->iprev->inext = cmd->inext;
	else
		c->inflight_head = cmd->inext;
	if (cmd->inext)
		cmd->inext->iprev = cmd->iprev;
	c->inflight--;
	if (cmd->near)
		c->near--;
	/* A scattered command's segments go now: cached commands stay small. */
	if (cmd->iov_heap)
		free(cmd->iov);
	cmd->iov_heap = 0;
	cmd->next = c->free_cmds;
	c->free_cmds = cmd;
	c->nfree++;
}

uint32_t nkv_tgt_ctrl_trim(struct nkv_tgt_ctrl *c, uint32_t keep)
{
	struct nkv_tgt_cmd *cmd;

	while (c->nfree > keep) {
		cmd = c->free_cmds;
		c->free_cmds = cmd->next;
		c->nfree--;
		free(cmd);
	}
	return c->nfree;
}

void nkv_tgt_ctrl_set_xfer(struct nkv_tgt_ctrl *c, nkv_tgt_xfer_fn fn, void *ctx)
{
	c->xfer = fn;
	c->xfer_ctx = ctx;
}

/* A page of the client's vanished under an access (memguard.h): the
 * controller's client is dropped by the transport after this pass. */
void nkv_tgt_mem_lost(struct nkv_tgt_ctrl *c)
{
	if (!c->mem_lost)
		NKV_TGT_TRACE(c, "client memory vanished (SIGBUS caught)");
	c->mem_lost = 1;
}

int nkv_tgt_ctrl_lost_memory(const struct nkv_tgt_ctrl *c)
{
	return c->mem_lost;
}

/*
 * A command has its result: queue its CQE on its CQ (posted when a slot
 * is free), or drop it if its SQ was deleted or the controller reset
 * since it was fetched.
 */
void nkv_tgt_complete(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	struct nkv_tgt_sq *sq = &c->sq[cmd->sqid];
	struct nkv_tgt_cq *cq = &c->cq[cmd->cqid];

	if (cmd->exec_call)
		nkv_tgt_exec_release(cmd);
	nkv_tgt_cmd_ns_put(c, cmd);
	if (cmd->req) {
		nkv_tgt_req_complete(c, cmd);
		return;
	}
	if (!sq->live || sq->epoch != cmd->epoch || !cq->live) {
		nkv_tgt_cmd_put(c, cmd);
		return;
	}
	/* Data of a message-only region goes out before the CQE is queued. */
	if (cmd->msg_out && !cmd->status)
		cmd->status = nkv_tgt_xfer_out(c, cmd);
	nkv_tgt_stat_cmd(c, cmd);
	if (cmd->status)
		nkv_tgt_errlog_add(c, cmd);
	nkv_tgt_cmd_append(&cq->pend_head, &cq->pend_tail, cmd);
	c->npend++;
	nkv_tgt_cq_flush(c, cmd->cqid);
}

int nkv_tgt_ctrl_poll(struct nkv_tgt_ctrl *c)
{
	int work = nkv_tgt_handoff_drain(c);

	if (!(c->csts & NKV_CSTS_RDY) || c->failed)
		return work;
	work += nkv_tgt_queues_poll(c);
	/* Inline backends complete during submit: post those now. */
	work += nkv_tgt_handoff_drain(c);
	/* Held AERs are answered by events, not by work: they never end a
	 * shutdown's wait (Linux sends one when OAES is set, then CC.SHN). */
	if (c->shutting_down && !nkv_tgt_ctrl_at_work(c)) {
		c->csts = (uint32_t)NKV_SET(c->csts, NKV_CSTS_SHST_SHIFT, 2,
					    NKV_CSTS_SHST_COMPLETE);
		c->shutting_down = 0;
		NKV_TGT_TRACE(c, "shutdown complete");
	}
	return work;
}

void nkv_tgt_ctrl_set_bus_master(struct nkv_tgt_ctrl *c, int on)
{
	c->bus_master = !!on;
}

void nkv_tgt_ctrl_fail(struct nkv_tgt_ctrl *c, const char *why)
{
	if (!c->failed)
		c->failed = why;
	c->csts |= NKV_CSTS_CFS;
	NKV_TGT_TRACE(c, "controller fatal status: %s", why);
}

const char *nkv_tgt_ctrl_failed(const struct nkv_tgt_ctrl *c)
{
	return c->failed;
}

uint32_t nkv_tgt_ctrl_inflight(const struct nkv_tgt_ctrl *c)
{
	return c->inflight;
}

uint32_t nkv_tgt_ctrl_at_work(const struct nkv_tgt_ctrl *c)
{
	/* A held AER is one of the commands in flight; the guard keeps a
	 * slip from reading as 4 billion commands at work. The poller and a
	 * shutdown's wait (above) both ask this. */
	return c->inflight > c->naer ? c->inflight - c->naer : 0;
}

uint32_t nkv_tgt_ctrl_near(const struct nkv_tgt_ctrl *c)
{
	return c->near;
}

static int nkv_tgt_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

int nkv_tgt_ctrl_dma_busy(const struct nkv_tgt_ctrl *c, uint64_t iova, uint64_t len)
{
	const struct nkv_tgt_cmd *cmd;
	uint8_t *p;
	uint32_t q;
	int i;

	for (q = 0; q <= c->max_ioq; q++) {
		if (c->sq[q].live && nkv_tgt_overlap(iova, len, c->sq[q].iova,
						     (uint64_t)c->sq[q].size * 64))
			return 1;
		if (c->cq[q].live && nkv_tgt_overlap(iova, len, c->cq[q].iova,
						     (uint64_t)c->cq[q].size * 16))
			return 1;
	}
	/* In-flight data is held as local pointers: compare in local space. */
	p = nkv_dma_ptr(c->dma, iova, len, 0);
	if (!p)
		return c->inflight != 0;
	for (cmd = c->inflight_head; cmd; cmd = cmd->inext)
		for (i = 0; i < cmd->iovcnt; i++)
			if (nkv_tgt_overlap((uintptr_t)p, len,
					    (uintptr_t)cmd->iov[i].iov_base,
					    cmd->iov[i].iov_len))
				return 1;
	return 0;
}
