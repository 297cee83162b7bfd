/* SPDX-License-Identifier: MIT */
/*
 * be_data.c - the helpers by which a backend moves a command's data
 * (backend.h): every copy to or from the client's segments goes through
 * memguard here, one recovery point per segment, so a page the client
 * took away fails the command instead of the target, on whichever thread
 * the backend called from. The List payload is built with nkv_list.h's
 * entry encoder, its header written once the backend is done.
 */
#include <errno.h>

#include "core.h"
#include "nkv_list.h"

static struct nkv_tgt_cmd *nkv_tgt_op_cmd(struct nkv_be_op *op)
{
	return (struct nkv_tgt_cmd *)op;	/* the op comes first */
}

static uint16_t nkv_tgt_data_fault(struct nkv_tgt_cmd *cmd)
{
	cmd->fault = 1;
	return nkv_tgt_sc(NKV_SC_DATA_XFER_ERROR);
}

uint16_t nkv_be_copy_in(struct nkv_be_op *op, void *dst, uint64_t len)
{
	struct nkv_tgt_cmd *cmd = nkv_tgt_op_cmd(op);

	if (nkv_guard_gather(dst, cmd->iov, cmd->iovcnt, len))
		return nkv_tgt_data_fault(cmd);
	return 0;
}

uint16_t nkv_be_copy_out(struct nkv_be_op *op, const void *src, uint64_t len)
{
	struct nkv_tgt_cmd *cmd = nkv_tgt_op_cmd(op);

	if (nkv_guard_scatter(cmd->iov, cmd->iovcnt, src, len))
		return nkv_tgt_data_fault(cmd);
	cmd->produced = len;
	return 0;
}

int nkv_be_lendable(const struct nkv_be_op *op)
{
	const struct nkv_tgt_cmd *cmd = (const struct nkv_tgt_cmd *)op;	/* the op comes first */

	return cmd->req && cmd->req->can_lend && !cmd->list && !cmd->req->lent;
}

int nkv_be_lend(struct nkv_be_op *op, const void *src, uint64_t len,
		void (*release)(void *ctx), void *ctx)
{
	struct nkv_tgt_cmd *cmd = nkv_tgt_op_cmd(op);
	struct nkv_tgt_req *req = cmd->req;

	if (!nkv_be_lendable(op) || len > op->len || !release)
		return -EOPNOTSUPP;
	req->lent = src;
	req->lent_release = release;
	req->lent_ctx = ctx;
	cmd->produced = len;
	return 0;
}

int nkv_be_list_add(struct nkv_be_op *op, const uint8_t *key, uint32_t klen)
{
	struct nkv_tgt_cmd *cmd = nkv_tgt_op_cmd(op);
	uint8_t e[(2u + NKV_KEY_MAX + 3u) & ~3u];	/* nkv_list_entry_size(NKV_KEY_MAX) */
	uint32_t sz = nkv_list_entry_size(klen);

	if (!klen || klen > NKV_KEY_MAX)
		return -EINVAL;
	if (sz > op->len - cmd->produced)
		return 1;
	nkv_list_entry_put(e, key, klen);
	if (nkv_guard_scatter_at(cmd->iov, cmd->iovcnt, cmd->produced, e, sz)) {
		cmd->fault = 1;
		return -EFAULT;
	}
	cmd->produced += sz;
	cmd->list_count++;
	return 0;
}

void *nkv_be_direct(struct nkv_be_op *op)
{
	struct nkv_tgt_cmd *cmd = nkv_tgt_op_cmd(op);

	return cmd->stable && cmd->iovcnt == 1 ? cmd->iov[0].iov_base : NULL;
}

void nkv_be_produced(struct nkv_be_op *op, uint64_t n)
{
	nkv_tgt_op_cmd(op)->produced = n;
}

void nkv_tgt_data_start(struct nkv_tgt_cmd *cmd, int list)
{
	cmd->list = (uint8_t)list;
	cmd->list_count = 0;
	cmd->produced = list ? NKV_LIST_HDR_SIZE : 0;
}

void nkv_tgt_data_end(struct nkv_tgt_cmd *cmd)
{
	uint8_t hdr[NKV_LIST_HDR_SIZE];

	if (cmd->list && !cmd->fault) {
		nkv_le32_put(hdr, cmd->list_count);
		if (nkv_guard_scatter(cmd->iov, cmd->iovcnt, hdr, sizeof(hdr)))
			cmd->fault = 1;
		cmd->op.dw0 = cmd->list_count;
	}
	if (cmd->fault)
		cmd->op.status = nkv_tgt_sc(NKV_SC_DATA_XFER_ERROR);
}
