/* SPDX-License-Identifier: MIT */
/*
 * cmd.c - NVMe/TCP commands: from a CapsuleCmd to the core's request and
 * back to C2HData and a CapsuleResp.
 *
 * The data direction comes from the opcode (bits 1:0; a Fabrics command's
 * from its type: only Connect carries data). Host-to-controller data is
 * in-capsule (SGL1 a Data Block with an offset of 0, up to IOCCSZ) or
 * asked for with one R2T covering it all (SGL1 a Transport Data Block):
 * one R2T in flight per command is within any MAXR2T. Controller-to-host
 * data leaves as one C2HData PDU, LAST set and SUCCESS never: a
 * CapsuleResp always follows, so a Retrieve's DW0 (the value's length)
 * always reaches the host. A KV command with a key in head form carries
 * the head as in-capsule data and its value (Retrieve, List) as C2HData
 * (docs/wire.md): the core gets [head][transfer buffer] as its data.
 *
 * Every H2CData header is checked against its command before a byte of it
 * is read: its tag names a command waiting for data, its CCCID is that
 * command's, its offset is where the data stands and its length stays
 * inside what the R2T asked for. Else the connection ends with a
 * C2HTermReq naming the field.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nvmf/fabrics.h"
#include "target/tcp/tcp.h"

#define NKV_TCP_DIR_NONE 0u
#define NKV_TCP_DIR_H2C 1u
#define NKV_TCP_DIR_C2H 2u
#define NKV_TCP_MAX_XFER ((uint64_t)NKV_PAGE_SIZE << NKV_TGT_MDTS_MAX)

static uint16_t nkv_tcp_sc(uint8_t sc)
{
	return NKV_STATUS(NKV_SCT_GENERIC, sc);
}

static struct nkv_tcp_io *nkv_tcp_io_get(struct nkv_tcp_conn *c)
{
	uint32_t i;

	for (i = 0; i < NKV_TCP_SLOTS; i++)
		if (!c->slots[i].busy) {
			struct nkv_tcp_io *io = &c->slots[i];

			io->busy = 1;
			c->inflight++;
			return io;
		}
	return NULL;
}

void nkv_tcp_io_release(struct nkv_tcp_io *io)
{
	struct nkv_tcp_conn *c = io->conn;

	if (!io->busy)
		return;
	c->buf_bytes -= io->buf_len + io->icd_len;
	if (io->req.lent_release)	/* sent, or never to be */
		io->req.lent_release(io->req.lent_ctx);
	free(io->icd);
	if (io->buf && io->buf_cap <= NKV_TCP_SPARE_MAX && io->buf_cap >= c->spare_len &&
	    io->buf_cap >= (64u << 10)) {
		free(c->spare);		/* keep the larger */
		c->spare = io->buf;
		c->spare_len = io->buf_cap;
	} else {
		free(io->buf);
	}
	memset(&io->req, 0, sizeof(io->req));
	io->icd = io->buf = NULL;
	io->icd_len = io->buf_len = io->buf_cap = 0;
	io->h2c_off = io->r2t_end = 0;
	io->c2h = io->in_core = 0;
	io->busy = 0;
	c->inflight--;
}

/* Header, its digest and padding up to pdo, into t. */
static void nkv_tcp_tx_hdr(struct nkv_tcp_conn *c, struct nkv_tcp_tx *t, uint32_t hlen,
			   uint32_t pdo)
{
	if (c->neg.hdgst)
		nkv_tcp_hdgst_put(t->hdr, hlen);
	t->hdr_len = pdo ? pdo : hlen + (c->neg.hdgst ? NKV_TCP_DGST_LEN : 0);
}

/* Queue a PDU; the poll loop flushes the connection once per pass, so
 * a burst of completions leaves in a few sendmsg calls. */
static int nkv_tcp_send(struct nkv_tcp_conn *c, struct nkv_tcp_tx *t)
{
	nkv_tcp_tx_queue(c, t);
	c->tx_dirty = 1;
	return 0;
}

/* C2HData: len bytes of the command's buffer, or of the backend's value
 * it lent (sent from there, no copy), in one PDU. */
static int nkv_tcp_send_c2h(struct nkv_tcp_io *io, uint32_t len)
{
	const uint8_t *src = io->req.lent ? io->req.lent : io->buf;
	struct nkv_tcp_conn *c = io->conn;
	struct nkv_tcp_tx *t = nkv_tcp_tx_new();
	struct nkv_tcp_data *h;
	uint32_t hd = c->neg.hdgst ? NKV_TCP_DGST_LEN : 0, dd = c->neg.ddgst ? NKV_TCP_DGST_LEN : 0;
	uint32_t a = c->hpda_align ? c->hpda_align : 4, pdo = (24 + hd + a - 1) / a * a;
	uint32_t crc;

	if (!t)
		return -1;
	h = (struct nkv_tcp_data *)t->hdr;
	nkv_tcp_ch_init(&h->ch, NKV_TCP_C2H_DATA,
			(uint8_t)(NKV_TCP_F_LAST | (hd ? NKV_TCP_F_HDGST : 0) | (dd ? NKV_TCP_F_DDGST : 0)),
			sizeof(*h), (uint8_t)pdo, pdo + len + dd);
	h->cccid = nkv_sqe_cid(&io->req.sqe);
	h->datao = 0;
	h->datal = len;
	nkv_tcp_tx_hdr(c, t, sizeof(*h), pdo);
	t->data = src;
	t->data_len = len;
	if (dd) {
		crc = nkv_tcp_crc32c(src, len);
		memcpy(t->ddgst, &crc, sizeof(crc));
		t->dd_len = dd;
	}
	return nkv_tcp_send(c, t);
}

/* CapsuleResp with the request's result; the command ends once it is out. */
static void nkv_tcp_send_rsp(struct nkv_tcp_io *io)
{
	struct nkv_tcp_conn *c = io->conn;
	struct nkv_tcp_tx *t = nkv_tcp_tx_new();
	struct nkv_tcp_rsp *r;

	if (!t) {
		nkv_tcp_io_release(io);
		return nkv_tcp_conn_break(c, "no_memory");
	}
	r = (struct nkv_tcp_rsp *)t->hdr;
	nkv_tcp_ch_init(&r->ch, NKV_TCP_RSP, c->neg.hdgst ? NKV_TCP_F_HDGST : 0, sizeof(*r), 0,
			sizeof(*r) + (c->neg.hdgst ? NKV_TCP_DGST_LEN : 0));
	r->cqe.dw0 = io->req.dw0;
	r->cqe.dw1 = io->req.dw1;
	r->cqe.dw2 = nkv_cqe_dw2(c->sqhd, c->qid);
	r->cqe.dw3 = nkv_cqe_dw3(nkv_sqe_cid(&io->req.sqe), 0, io->req.status);
	nkv_tcp_tx_hdr(c, t, sizeof(*r), 0);
	t->release = io;
	nkv_tcp_send(c, t);
}

static void nkv_tcp_reply(struct nkv_tcp_io *io, uint16_t status)
{
	io->req.status = status;
	io->req.dw0 = io->req.dw1 = 0;
	nkv_tcp_send_rsp(io);
}

/* The core is done with a request (on the poll thread). */
static void nkv_tcp_req_done(struct nkv_tgt_req *req)
{
	struct nkv_tcp_io *io = (struct nkv_tcp_io *)req;
	struct nkv_tcp_conn *c = io->conn;
	uint64_t n = req->produced;

	io->in_core = 0;
	nkv_tcp_stat_add(&c->s->st.commands);
	if (c->dead || c->broken || c->closing) {
		nkv_tcp_io_release(io);
		return;
	}
	/* Never more than the transfer buffer, whatever the core counted. */
	if (n > io->buf_len)
		n = io->buf_len;
	if (io->c2h && !req->status && n && nkv_tcp_send_c2h(io, (uint32_t)n)) {
		nkv_tcp_io_release(io);
		return;
	}
	nkv_tcp_send_rsp(io);
}

static void nkv_tcp_exec(struct nkv_tcp_conn *c, struct nkv_tcp_io *io)
{
	io->req.qid = c->qid;
	io->req.done = nkv_tcp_req_done;
	io->req.can_lend = io->c2h;
	io->in_core = 1;
	if (nkv_tgt_ctrl_exec(c->assoc->ctrl, &io->req)) {
		io->in_core = 0;
		nkv_tcp_reply(io, nkv_tcp_sc(NKV_SC_INTERNAL));
	}
}

static uint32_t nkv_tcp_dir(const struct nkv_sqe *s)
{
	if (nkv_sqe_opc(s) == NKV_NVMF_OPC)
		return nkv_nvmf_fctype(s) == NKV_NVMF_CONNECT ? NKV_TCP_DIR_H2C : NKV_TCP_DIR_NONE;
	return nkv_sqe_opc(s) & 3u;
}

static void nkv_tcp_iov_add(struct nkv_tcp_io *io, void *p, uint32_t len)
{
	io->req.iov[io->req.iovcnt].iov_base = p;
	io->req.iov[io->req.iovcnt++].iov_len = len;
}

/* The transfer buffer a Transport Data Block asks for, within budget. */
static uint16_t nkv_tcp_buf(struct nkv_tcp_conn *c, struct nkv_tcp_io *io, uint32_t len)
{
	uint64_t max = c->s->o.max_buf_per_conn;

	if (len > NKV_TCP_MAX_XFER)
		return nkv_tcp_sc(NKV_SC_INVALID_FIELD);
	if (c->buf_bytes + len > max) {
		nkv_tcp_log(c->s, NKV_TCP_WARN, "event=tcp_budget conn=%u peer=%s held=%llu want=%u max=%llu",
			    c->id, c->peer, (unsigned long long)c->buf_bytes, len,
			    (unsigned long long)max);
		return nkv_tcp_sc(NKV_TCP_SC_INTERRUPTED);
	}
	if (c->spare && c->spare_len >= len) {
		io->buf = c->spare;
		io->buf_cap = c->spare_len;
		c->spare = NULL;
		c->spare_len = 0;
	} else {
		io->buf = malloc(len ? len : 1);
		io->buf_cap = len;
	}
	if (!io->buf)
		return nkv_tcp_sc(NKV_SC_INTERNAL);
	io->buf_len = len;
	c->buf_bytes += len;
	return 0;
}

/* In-capsule data: all of a host-to-controller transfer (SGL1 an offset
 * Data Block at 0 describing exactly it), or a key head (an Exec's head
 * and input) in front of a controller-to-host one, or a key head alone. */
static uint16_t nkv_tcp_data_icd(struct nkv_tcp_conn *c, struct nkv_tcp_io *io, uint32_t dir,
				 const struct nkv_sgl_desc *sgl)
{
	const struct nkv_sqe *s = &io->req.sqe;
	uint16_t st;

	if (dir == NKV_TCP_DIR_H2C) {
		if (sgl->id != NKV_TCP_SGL_ICD)
			return nkv_tcp_sc(NKV_SC_SGL_TYPE_INVALID);
		if (sgl->addr)
			return nkv_tcp_sc(NKV_SC_SGL_OFFSET_INVALID);
		if (sgl->len != io->icd_len)
			return nkv_tcp_sc(NKV_SC_SGL_DATA_LEN_INVALID);
		nkv_tcp_iov_add(io, io->icd, io->icd_len);
		return 0;
	}
	/* Data both ways only for a KV key in head form (KL 0). */
	if (!c->qid || (s->cdw11 & 0xffu))
		return nkv_tcp_sc(NKV_SC_INVALID_FIELD);
	nkv_tcp_iov_add(io, io->icd, io->icd_len);
	if (dir == NKV_TCP_DIR_NONE)
		return sgl->len && sgl->id != NKV_TCP_SGL_ICD ? nkv_tcp_sc(NKV_SC_SGL_TYPE_INVALID) : 0;
	if (sgl->id != NKV_TCP_SGL_TRANSPORT)
		return nkv_tcp_sc(NKV_SC_SGL_TYPE_INVALID);
	io->c2h = 1;
	st = nkv_tcp_buf(c, io, sgl->len);
	if (!st)
		nkv_tcp_iov_add(io, io->buf, io->buf_len);
	return st;
}

/* Resolve the command's data: 0 and io->req.iov set (io->r2t_end > 0: an
 * R2T must bring it first), or an NVMe status. */
static uint16_t nkv_tcp_data(struct nkv_tcp_conn *c, struct nkv_tcp_io *io)
{
	struct nkv_sgl_desc sgl = nkv_sqe_sgl1(&io->req.sqe);
	uint32_t dir = nkv_tcp_dir(&io->req.sqe);
	uint16_t st;

	/* Bidirectional: Exec alone, its input part in the capsule. */
	if (dir == 3 && (nkv_sqe_opc(&io->req.sqe) != NKV_KV_EXEC || !io->icd_len))
		return nkv_tcp_sc(NKV_SC_INVALID_FIELD);
	if (dir == 3 && !io->req.sqe.cdw12)
		dir = NKV_TCP_DIR_NONE;	/* an output cap of 0: the length alone comes back */
	if (io->icd_len)
		return nkv_tcp_data_icd(c, io, dir, &sgl);
	if (!sgl.len)
		return 0;
	if (sgl.id != NKV_TCP_SGL_TRANSPORT)
		return nkv_tcp_sc(sgl.id == NKV_TCP_SGL_ICD ? NKV_SC_SGL_DATA_LEN_INVALID
							  : NKV_SC_SGL_TYPE_INVALID);
	if (dir == NKV_TCP_DIR_NONE)
		return nkv_tcp_sc(NKV_SC_INVALID_FIELD);
	st = nkv_tcp_buf(c, io, sgl.len);
	if (st)
		return st;
	nkv_tcp_iov_add(io, io->buf, io->buf_len);
	if (dir == NKV_TCP_DIR_C2H)
		io->c2h = 1;
	else
		io->r2t_end = io->buf_len;
	return 0;
}

/* One R2T for all of the command's data. */
static void nkv_tcp_send_r2t(struct nkv_tcp_conn *c, struct nkv_tcp_io *io)
{
	struct nkv_tcp_tx *t = nkv_tcp_tx_new();
	struct nkv_tcp_r2t *r;
	uint32_t hd = c->neg.hdgst ? NKV_TCP_DGST_LEN : 0;

	if (!t) {
		nkv_tcp_io_release(io);
		return nkv_tcp_conn_break(c, "no_memory");
	}
	r = (struct nkv_tcp_r2t *)t->hdr;
	nkv_tcp_ch_init(&r->ch, NKV_TCP_R2T, hd ? NKV_TCP_F_HDGST : 0, sizeof(*r), 0,
			sizeof(*r) + hd);
	r->cccid = nkv_sqe_cid(&io->req.sqe);
	r->ttag = io->ttag;
	r->r2to = io->h2c_off;
	r->r2tl = io->r2t_end - io->h2c_off;
	nkv_tcp_tx_hdr(c, t, sizeof(*r), 0);
	nkv_tcp_send(c, t);
}

/* The first command of a connection: Connect, which makes it an admin or
 * I/O queue of an association. */
static void nkv_tcp_connect(struct nkv_tcp_conn *c, struct nkv_tcp_io *io)
{
	struct nkv_tgt_ctrl *ctrl = NULL;
	uint16_t qid = nkv_nvmf_connect_qid(&io->req.sqe);
	char local[64];
	uint8_t fam;

	if (nkv_sqe_opc(&io->req.sqe) != NKV_NVMF_OPC ||
	    nkv_nvmf_fctype(&io->req.sqe) != NKV_NVMF_CONNECT)
		return nkv_tcp_reply(io, nkv_tcp_sc(NKV_SC_CMD_SEQ_ERROR));
	nkv_tgt_fab_connect(c->s->fab, &io->req, io->icd, io->icd_len, &ctrl);
	if (ctrl && (qid ? nkv_tcp_assoc_join(c, ctrl) : nkv_tcp_assoc_new(c, ctrl))) {
		nkv_tgt_fab_disconnect(c->s->fab, ctrl, qid);
		io->req.status = nkv_tcp_sc(NKV_SC_INTERNAL);
		ctrl = NULL;
	}
	if (ctrl && !qid && !nkv_tcp_conn_local(c, local, sizeof(local), &fam))
		nkv_tgt_ctrl_set_local_addr(ctrl, fam, local);
	if (ctrl) {
		c->qid = qid;
		c->sqsize = nkv_nvmf_connect_sqsize(&io->req.sqe);
		nkv_tcp_log(c->s, NKV_TCP_INFO, "event=tcp_connect conn=%u peer=%s cntlid=%u qid=%u hostnqn=%s",
			    c->id, c->peer, nkv_tgt_ctrl_cntlid(ctrl), qid, nkv_tgt_ctrl_hostnqn(ctrl));
	}
	nkv_tcp_send_rsp(io);
}

int nkv_tcp_cmd_begin(struct nkv_tcp_conn *c, const struct nkv_tcp_cmd *pdu)
{
	uint32_t icd_max = c->qid ? NKV_TGT_ICD_IO : NKV_TGT_ICD_ADMIN;
	struct nkv_tcp_fault f = { NKV_TCP_FES_LIMIT, 0, "in_capsule_data_over_ioccsz" };
	struct nkv_tcp_io *io;

	if (c->lay.dlen > icd_max) {
		nkv_tcp_conn_fatal(c, &f, c->hbuf, c->hgot);
		return -EPROTO;
	}
	io = nkv_tcp_io_get(c);
	if (!io) {
		f = (struct nkv_tcp_fault){ NKV_TCP_FES_SEQUENCE, 0, "queue_depth_exceeded" };
		nkv_tcp_conn_fatal(c, &f, c->hbuf, c->hgot);
		return -EPROTO;
	}
	io->req.sqe = pdu->sqe;
	c->sqhd = (uint16_t)((c->sqhd + 1u) % (c->sqsize ? c->sqsize : 1));
	c->rx_cmd = io;
	if (c->lay.dlen) {
		io->icd = malloc(c->lay.dlen);
		if (!io->icd) {
			nkv_tcp_io_release(io);
			nkv_tcp_conn_break(c, "no_memory");
			return -ENOMEM;
		}
		io->icd_len = c->lay.dlen;
		c->buf_bytes += io->icd_len;
		c->dst = io->icd;
	}
	return 0;
}

void nkv_tcp_cmd_capsule_done(struct nkv_tcp_conn *c)
{
	struct nkv_tcp_io *io = c->rx_cmd;
	uint16_t st;

	c->rx_cmd = NULL;
	if (!c->assoc)
		return nkv_tcp_connect(c, io);
	st = nkv_tcp_data(c, io);
	if (st)
		return nkv_tcp_reply(io, st);
	if (io->r2t_end)
		return nkv_tcp_send_r2t(c, io);
	nkv_tcp_exec(c, io);
}

static int nkv_tcp_h2c_bad(struct nkv_tcp_conn *c, uint16_t fes, uint32_t fei, const char *why)
{
	struct nkv_tcp_fault f = { fes, fei, why };

	nkv_tcp_conn_fatal(c, &f, c->hbuf, c->hgot);
	return -EPROTO;
}

int nkv_tcp_h2c_begin(struct nkv_tcp_conn *c, const struct nkv_tcp_data *h)
{
	struct nkv_tcp_io *io;

	if (h->ttag >= NKV_TCP_SLOTS)
		return nkv_tcp_h2c_bad(c, NKV_TCP_FES_HDR_FIELD, 10, "h2c_ttag");
	io = &c->slots[h->ttag];
	/* A command waiting for data: an R2T was sent, not all came yet. */
	if (!io->busy || io->in_core || !io->r2t_end || io->h2c_off >= io->r2t_end)
		return nkv_tcp_h2c_bad(c, NKV_TCP_FES_HDR_FIELD, 10, "h2c_without_r2t");
	if (h->cccid != nkv_sqe_cid(&io->req.sqe))
		return nkv_tcp_h2c_bad(c, NKV_TCP_FES_HDR_FIELD, 8, "h2c_cccid");
	if (h->datal != c->lay.dlen)
		return nkv_tcp_h2c_bad(c, NKV_TCP_FES_HDR_FIELD, 16, "h2c_datal");
	if (h->datal > NKV_TCP_MAXH2CDATA)
		return nkv_tcp_h2c_bad(c, NKV_TCP_FES_LIMIT, 0, "h2c_over_maxh2cdata");
	if ((uint64_t)h->datao + h->datal > io->r2t_end || h->datao < io->h2c_off)
		return nkv_tcp_h2c_bad(c, NKV_TCP_FES_RANGE, 0, "h2c_out_of_range");
	if (h->datao != io->h2c_off)
		return nkv_tcp_h2c_bad(c, NKV_TCP_FES_HDR_FIELD, 12, "h2c_datao_gap");
	c->rx_cmd = io;
	c->dst = io->buf + h->datao;
	return 0;
}

void nkv_tcp_h2c_done(struct nkv_tcp_conn *c)
{
	struct nkv_tcp_io *io = c->rx_cmd;

	c->rx_cmd = NULL;
	io->h2c_off += c->lay.dlen;
	if (io->h2c_off == io->r2t_end)
		nkv_tcp_exec(c, io);
}
