/* SPDX-License-Identifier: MIT */
/*
 * io_kv.c - I/O command dispatch and the Key Value command set: checks
 * everything the backend must not have to (namespace, key and value
 * sizes, option bits, PRPs), then hands a resolved op to the backend.
 */
#include <string.h>

#include "core.h"

static uint16_t nkv_tgt_kv_key(struct nkv_tgt_cmd *cmd)
{
	uint32_t klen = nkv_kv_key_get(&cmd->sqe, cmd->op.key);
	uint32_t opc = nkv_sqe_opc(&cmd->sqe);

	if (klen > NKV_KEY_INLINE_MAX || (!klen && opc != NKV_KV_LIST))
		return nkv_tgt_sc(NKV_SC_KV_INVALID_KEY_SIZE);
	/* Bytes past the key length are not part of the key, whatever the
	 * client left there. */
	memset(cmd->op.key + klen, 0, NKV_KEY_INLINE_MAX - klen);
	cmd->op.klen = (uint8_t)klen;
	return 0;
}

/* Buffer size of Retrieve and List: the host buffer to fill. */
static uint16_t nkv_tgt_kv_buf(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd,
			       uint32_t min)
{
	uint32_t len = cmd->sqe.cdw10;

	if (len < min)
		return nkv_tgt_sc(NKV_SC_KV_INVALID_VALUE_SIZE);
	cmd->op.len = len;
	return (uint16_t)nkv_tgt_cmd_prps(c, cmd, len, NKV_DMA_WRITE);
}

uint16_t nkv_tgt_kv_prep(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd,
			 struct nkv_be *be)
{
	const struct nkv_sqe *s = &cmd->sqe;
	uint32_t opc = nkv_sqe_opc(s);
	uint16_t st;

	if (opc != NKV_KV_STORE && opc != NKV_KV_RETRIEVE && opc != NKV_KV_LIST &&
	    opc != NKV_KV_DELETE && opc != NKV_KV_EXIST)
		return nkv_tgt_sc(NKV_SC_INVALID_OPCODE);
	st = nkv_tgt_kv_key(cmd);
	if (st)
		return st;
	cmd->op.options = s->cdw11 & ~0xffu;
	switch (opc) {
	case NKV_KV_STORE:
		if ((s->cdw11 & NKV_STORE_MUST_EXIST) &&
		    (s->cdw11 & NKV_STORE_MUST_NOT_EXIST))
			return nkv_tgt_sc(NKV_SC_INVALID_FIELD);
		if (!s->cdw10 || s->cdw10 > be->max_value)
			return nkv_tgt_sc(NKV_SC_KV_INVALID_VALUE_SIZE);
		cmd->op.len = s->cdw10;
		return (uint16_t)nkv_tgt_cmd_prps(c, cmd, s->cdw10, NKV_DMA_READ);
	case NKV_KV_RETRIEVE:
		return nkv_tgt_kv_buf(c, cmd, 1);
	case NKV_KV_LIST:
		nkv_tgt_data_start(cmd, 1);
		return nkv_tgt_kv_buf(c, cmd, NKV_LIST_HDR_SIZE);
	default:
		return 0;	/* Delete, Exist: key only */
	}
}

/* Account a finished command and apply the controller's policies that sit
 * on top of the backend's answer. Runs on the poll thread. */
void nkv_tgt_io_finish(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	uint8_t opc = cmd->op.opc;
	int kv = cmd->sqid && nkv_tgt_ns(c, cmd->sqe.nsid)->csi == NKV_CSI_KV;
	int rd = kv ? opc == NKV_KV_RETRIEVE || opc == NKV_KV_LIST : opc == NKV_NVM_READ;
	int wr = kv ? opc == NKV_KV_STORE : opc == NKV_NVM_WRITE;

	if (kv && opc == NKV_KV_DELETE && (c->kv_config & NKV_KV_CONFIG_DEL_MISSING_OK) &&
	    cmd->status == nkv_tgt_sc(NKV_SC_KV_KEY_NOT_EXISTS))
		cmd->status = 0;
	if (cmd->status || !(rd || wr))
		return;
	/* What moved: a read's bytes produced (a Retrieve's value up to the
	 * buffer, a List's payload), a write's whole data. */
	cmd->bytes = rd ? cmd->produced : cmd->op.len;
	if (rd) {
		c->host_reads++;
		c->bytes_read += cmd->bytes;
	} else {
		c->host_writes++;
		c->bytes_written += cmd->bytes;
	}
}

void nkv_tgt_io_exec(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	struct nkv_be *be = nkv_tgt_ns(c, cmd->sqe.nsid);
	uint16_t st;

	if (!be)
		st = nkv_tgt_sc(NKV_SC_INVALID_NS);
	else if (nkv_sqe_fuse(&cmd->sqe) || nkv_sqe_psdt(&cmd->sqe))
		st = nkv_tgt_sc(NKV_SC_INVALID_FIELD);
	else if (be->csi == NKV_CSI_KV)
		st = nkv_tgt_kv_prep(c, cmd, be);
	else
		st = nkv_tgt_nvm_prep(c, cmd, be);
	if (!st) {
		cmd->op.opc = (uint8_t)nkv_sqe_opc(&cmd->sqe);
		cmd->op.done = nkv_tgt_be_done;
		cmd->op.ctx = c;
		if (!nkv_tgt_be_submit(c, be, &cmd->op))
			return;	/* done() brings it back */
		st = nkv_tgt_sc(NKV_SC_INTERNAL);
	}
	cmd->status = st;
	cmd->iovcnt = 0;
	nkv_tgt_complete(c, cmd);
}
