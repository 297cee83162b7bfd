/* SPDX-License-Identifier: MIT */
/*
 * xfer.c - the transfer layer: a command's data pointer resolved into
 * local segments, and the data of memory the client registered as
 * message-only (NKV_DMA_MSG: vfio-user DMA_READ / DMA_WRITE) moved
 * between the client and the transport's local shadow of it: in before
 * the command runs, out (the bytes the command produced) before its
 * completion is queued. Execution never sees the difference.
 */
#include <errno.h>
#include <string.h>

#include "core.h"

/* Move the first len bytes of the command's segments that lie in
 * message-only regions, in or out. 0, or -ENOENT (nothing of them is
 * message-only), or the transport's negative errno. */
static int nkv_tgt_msg_move(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd,
			    uint64_t len, int to_client)
{
	int i, any = 0, rc;

	for (i = 0; i < cmd->iovcnt && len; i++) {
		uint8_t *p = cmd->iov[i].iov_base;
		uint64_t left = cmd->iov[i].iov_len < len ? cmd->iov[i].iov_len : len;

		len -= left;
		while (left) {
			uint64_t iova, run;

			rc = nkv_dma_msg_range(c->dma, p, left, &iova, &run);
			if (rc < 0)
				return rc;
			if (rc) {
				any = 1;
				rc = c->xfer ? c->xfer(c->xfer_ctx, iova, p, run, to_client) : -ENOTSUP;
				if (rc)
					return rc;
			}
			p += run;
			left -= run;
		}
	}
	return any ? 0 : -ENOENT;
}

/* Does any segment lie in a message-only region? */
static int nkv_tgt_msg_any(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	uint64_t iova, run;
	int i;

	for (i = 0; i < cmd->iovcnt; i++)
		if (nkv_dma_msg_range(c->dma, cmd->iov[i].iov_base, cmd->iov[i].iov_len,
				      &iova, &run) != 0 || run != cmd->iov[i].iov_len)
			return 1;	/* message-only, or spans regions: look closer */
	return 0;
}

/* PRPs or an SGL, as the command's PSDT says, into segs. */
static int nkv_tgt_dptr_walk(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd, uint64_t len,
			     uint32_t prot, struct nkv_dma_segs *segs, int *stable)
{
	struct nkv_sgl_desc sgl1;

	if (nkv_sqe_psdt(&cmd->sqe) == NKV_PSDT_PRP)
		return nkv_dma_prp_to_iov(c->dma, cmd->sqe.prp1, cmd->sqe.prp2, len,
					  c->page_size, prot, segs, stable);
	sgl1 = nkv_sqe_sgl1(&cmd->sqe);
	return nkv_dma_sgl_to_iov(c->dma, &sgl1, len, prot, segs, stable);
}

/* A capsule request's data: the first len bytes of the buffers its
 * transport gave (fewer: the data is shorter than the command says). */
static int nkv_tgt_req_dptr(struct nkv_tgt_cmd *cmd, uint64_t len)
{
	const struct nkv_tgt_req *req = cmd->req;
	int i, n = 0;

	_Static_assert(NKV_TGT_REQ_IOV <= NKV_TGT_IOV_INLINE, "a request's buffers fit inline");
	for (i = 0; i < req->iovcnt && len; i++) {
		uint64_t take = req->iov[i].iov_len < len ? req->iov[i].iov_len : len;

		if (!take)
			continue;
		cmd->iov[n].iov_base = req->iov[i].iov_base;
		cmd->iov[n++].iov_len = take;
		len -= take;
	}
	if (len)
		return nkv_tgt_sc(NKV_SC_SGL_DATA_LEN_INVALID);
	cmd->iovcnt = n;
	cmd->stable = 1;	/* the transport's buffers stay until done() */
	return 0;
}

/* Resolve the command's data pointer into cmd->iov. 0 or an NVMe status. */
int nkv_tgt_cmd_dptr(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd,
		     uint64_t len, uint32_t prot, uint64_t rd_head)
{
	struct nkv_dma_segs segs = { cmd->iov, cmd->iov_cap, (int)c->max_iov, cmd->iov_heap,
				     rd_head };
	int n, stable = 0;

	if (len > c->max_xfer)
		return nkv_tgt_sc(NKV_SC_INVALID_FIELD);
	if (cmd->req)
		return nkv_tgt_req_dptr(cmd, len);
	n = nkv_tgt_dptr_walk(c, cmd, len, prot, &segs, &stable);
	/* Scattered data took a heap array: the command frees it at put. */
	cmd->iov = segs.iov;
	cmd->iov_cap = segs.cap;
	cmd->iov_heap = (uint8_t)segs.heap;
	if (n < 0 && nkv_dma_faulted(c->dma))
		nkv_tgt_mem_lost(c);
	if (n < 0)
		return -n;
	cmd->iovcnt = n;
	cmd->stable = (uint8_t)stable;
	if (!nkv_dma_has_msg(c->dma) || !nkv_tgt_msg_any(c, cmd))
		return 0;
	if (prot & NKV_DMA_WRITE) {
		cmd->msg_out = 1;	/* sent once produced: nkv_tgt_xfer_out() */
		return 0;
	}
	n = nkv_tgt_msg_move(c, cmd, len, 0);
	if (n && n != -ENOENT) {
		NKV_TGT_TRACE(c, "message-only data in: %d", n);
		cmd->iovcnt = 0;
		return nkv_tgt_sc(NKV_SC_DATA_XFER_ERROR);
	}
	return 0;
}

uint16_t nkv_tgt_cmd_peek(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd, void *dst,
			  uint64_t n)
{
	int rc = 0;

	if (nkv_dma_has_msg(c->dma))
		rc = nkv_tgt_msg_move(c, cmd, n, 0);
	if (rc && rc != -ENOENT) {
		NKV_TGT_TRACE(c, "message-only head in: %d", rc);
		return nkv_tgt_sc(NKV_SC_DATA_XFER_ERROR);
	}
	if (nkv_guard_gather(dst, cmd->iov, cmd->iovcnt, n)) {
		nkv_tgt_mem_lost(c);
		return nkv_tgt_sc(NKV_SC_DATA_XFER_ERROR);
	}
	return 0;
}

void nkv_tgt_cmd_skip(struct nkv_tgt_cmd *cmd, uint64_t n)
{
	int i = 0;

	while (n && i < cmd->iovcnt && n >= cmd->iov[i].iov_len)
		n -= cmd->iov[i++].iov_len;
	if (n && i < cmd->iovcnt) {
		cmd->iov[i].iov_base = (uint8_t *)cmd->iov[i].iov_base + n;
		cmd->iov[i].iov_len -= n;
	}
	cmd->iovcnt -= i;
	memmove(cmd->iov, cmd->iov + i, (size_t)cmd->iovcnt * sizeof(cmd->iov[0]));
}

uint16_t nkv_tgt_xfer_out(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	int rc;

	if (!cmd->msg_out)
		return 0;
	cmd->msg_out = 0;
	/* -ENOENT: the bytes produced all lie in mapped memory. */
	rc = nkv_tgt_msg_move(c, cmd, cmd->produced, 1);
	if (rc < 0 && rc != -ENOENT) {
		NKV_TGT_TRACE(c, "message-only data out failed: %d", rc);
		return nkv_tgt_sc(NKV_SC_DATA_XFER_ERROR);
	}
	return 0;
}
