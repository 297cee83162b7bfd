/* SPDX-License-Identifier: MIT */
/*
 * io_nvm.c - NVM command set Read, Write and Flush on a block namespace
 * (the mem backend's NVM flavour, for rehearsals with block tools).
 */
#include "core.h"

uint16_t nkv_tgt_nvm_prep(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd,
			  struct nkv_be *be)
{
	const struct nkv_sqe *s = &cmd->sqe;
	uint32_t opc = nkv_sqe_opc(s);
	uint64_t slba = s->cdw10 | ((uint64_t)s->cdw11 << 32);
	uint64_t nlb = (s->cdw12 & 0xffffu) + 1ull;

	if (opc == NKV_NVM_FLUSH)
		return 0;
	if (opc != NKV_NVM_READ && opc != NKV_NVM_WRITE)
		return nkv_tgt_sc(NKV_SC_INVALID_OPCODE);
	if (opc == NKV_NVM_WRITE && !nkv_tgt_access_writes(c, s->nsid))
		return nkv_tgt_cs(NKV_SC_WRITE_READ_ONLY);	/* this client's ro */
	if (slba >= be->capacity || nlb > be->capacity - slba)
		return nkv_tgt_sc(NKV_SC_LBA_OUT_OF_RANGE);
	cmd->op.slba = slba;
	cmd->op.len = nlb * be->block_size;
	return (uint16_t)nkv_tgt_cmd_dptr(c, cmd, cmd->op.len,
					  opc == NKV_NVM_READ ? NKV_DMA_WRITE
							      : NKV_DMA_READ, 0);
}
