/* SPDX-License-Identifier: MIT */
/*
 * io_kv.c - I/O command dispatch and the Key Value command set: checks
 * everything the backend must not have to (namespace, read-only
 * namespaces, option bits, key and value sizes, the data pointer), reads
 * a key sent in head form ([u16 length][key] at the start of the data,
 * KL = 0), then hands a resolved op to the backend.
 */
#include <string.h>

#include "core.h"
#include "metrics.h"

/* What a KV command moves besides its key: data bytes (CDW10, never the
 * head) and their direction. */
struct nkv_tgt_kv_data {
	uint64_t len;
	uint32_t prot;
};

static uint16_t nkv_tgt_kv_key_err(void)
{
	return nkv_tgt_sc(NKV_SC_KV_INVALID_KEY_SIZE);
}

/* Key inline in the SQE (List: KL 0 = from the beginning). */
static uint16_t nkv_tgt_kv_inline(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd,
				  uint32_t klen, const struct nkv_tgt_kv_data *d)
{
	/* Bytes past the key length are not part of the key, whatever the
	 * client left there. */
	memset(cmd->op.key + klen, 0, sizeof(cmd->op.key) - klen);
	cmd->op.klen = (uint8_t)klen;
	return d->len ? (uint16_t)nkv_tgt_cmd_dptr(c, cmd, d->len, d->prot, 0) : 0;
}

/*
 * The head's length field, through a data pointer resolved for its first
 * bytes only. PRPs: no further than the first page, since whether PRP2 is
 * a page or a list depends on the whole length, not known yet; a length
 * split across pages then gives its low byte alone (the high byte is 0
 * for any valid key; the whole head is read again once resolved).
 */
uint16_t nkv_tgt_kv_head_len(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd, uint32_t *klen)
{
	uint8_t h[2] = { 0, 0 };
	uint64_t probe = 2;
	int st;

	if (nkv_sqe_psdt(&cmd->sqe) == NKV_PSDT_PRP) {
		uint64_t room = c->page_size - (cmd->sqe.prp1 & (c->page_size - 1));

		probe = room < probe ? room : probe;
	}
	st = nkv_tgt_cmd_dptr(c, cmd, probe, NKV_DMA_READ, probe);
	if (st == nkv_tgt_sc(NKV_SC_SGL_DATA_LEN_INVALID))
		return nkv_tgt_kv_key_err();	/* the head runs past the data */
	if (!st)
		st = nkv_tgt_cmd_peek(c, cmd, h, probe);
	*klen = nkv_key_head_len(h);
	return (uint16_t)st;
}

/* Key in head form: read it, then leave cmd->iov describing the data
 * after it (the backend's data starts at offset 0 as for inline keys). */
static uint16_t nkv_tgt_kv_head(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd,
				const struct nkv_tgt_kv_data *d, int list)
{
	uint8_t h[NKV_KEY_HEAD_MAX];
	uint32_t klen, hl;
	int st = nkv_tgt_kv_head_len(c, cmd, &klen);

	if (st)
		return (uint16_t)st;
	if ((!klen && !list) || klen > NKV_KEY_MAX)
		return nkv_tgt_kv_key_err();
	hl = nkv_key_head_size(klen);
	st = nkv_tgt_cmd_dptr(c, cmd, hl + d->len, d->prot, hl);
	if (st == nkv_tgt_sc(NKV_SC_SGL_DATA_LEN_INVALID) &&
	    nkv_tgt_cmd_dptr(c, cmd, hl, NKV_DMA_READ, hl) == st)
		return nkv_tgt_kv_key_err();	/* short of the head itself */
	if (!st)
		st = nkv_tgt_cmd_peek(c, cmd, h, hl);
	if (st)
		return (uint16_t)st;
	if (nkv_key_head_len(h) != klen)
		return nkv_tgt_kv_key_err();	/* a split length's high byte */
	memcpy(cmd->op.key, h + 2, klen);
	memset(cmd->op.key + klen, 0, sizeof(cmd->op.key) - klen);
	cmd->op.klen = (uint8_t)klen;
	nkv_tgt_cmd_skip(cmd, hl);
	return 0;
}

/* The option byte (CDW11[15:8]) of a Store: the standard bits, the
 * vendor ones the backend honours, and their rules. */
static int nkv_tgt_kv_store_opts_ok(const struct nkv_sqe *s, const struct nkv_be *be)
{
	uint32_t o = s->cdw11 & 0xff00u;
	uint32_t ok = NKV_STORE_OPTIONS_MASK | (be->store_opts & NKV_STORE_VENDOR_MASK);

	if ((o & ~ok) ||
	    ((o & NKV_STORE_MUST_EXIST) && (o & NKV_STORE_MUST_NOT_EXIST)) ||
	    ((o & NKV_STORE_TTL) && !s->cdw12))
		return 0;
	/* Touch refreshes a key that exists: no value, nothing to create,
	 * no durability class to change. */
	return !(o & NKV_STORE_TOUCH) ||
	       (!s->cdw10 && !(o & (NKV_STORE_MUST_NOT_EXIST | NKV_STORE_EPHEMERAL)));
}

/* No option bit is ignored: one a command does not define, or the
 * namespace does not honour, is Invalid Field. */
static int nkv_tgt_kv_opts_ok(const struct nkv_sqe *s, const struct nkv_be *be)
{
	switch (nkv_sqe_opc(s)) {
	case NKV_KV_STORE:
		return nkv_tgt_kv_store_opts_ok(s, be);
	case NKV_KV_LIST:
		return !(s->cdw11 & 0xff00u & ~NKV_LIST_KEY_HEAD);
	default:
		return !(s->cdw11 & 0xff00u);	/* Retrieve, Delete, Exist */
	}
}

/* Sizes and options of each opcode; the data it moves in *d. */
static uint16_t nkv_tgt_kv_sizes(struct nkv_tgt_cmd *cmd, struct nkv_be *be,
				 struct nkv_tgt_kv_data *d)
{
	const struct nkv_sqe *s = &cmd->sqe;

	d->len = 0;
	d->prot = NKV_DMA_READ;
	if (!nkv_tgt_kv_opts_ok(s, be))
		return nkv_tgt_sc(NKV_SC_INVALID_FIELD);
	switch (nkv_sqe_opc(s)) {
	case NKV_KV_STORE:
		if (s->cdw11 & NKV_STORE_TOUCH)
			return 0;	/* CDW10 is 0: no value */
		if (!s->cdw10 || s->cdw10 > be->max_value)
			return nkv_tgt_sc(NKV_SC_KV_INVALID_VALUE_SIZE);
		d->len = s->cdw10;
		return 0;
	case NKV_KV_RETRIEVE:
	case NKV_KV_LIST:
		/* The host buffer to fill: a List payload's header at least;
		 * a Retrieve's 0 asks for the value's size alone. */
		if (nkv_sqe_opc(s) == NKV_KV_LIST && s->cdw10 < NKV_LIST_HDR_SIZE)
			return nkv_tgt_sc(NKV_SC_KV_INVALID_VALUE_SIZE);
		d->len = s->cdw10;
		d->prot = NKV_DMA_WRITE;
		return 0;
	default:
		return 0;	/* Delete, Exist: key only */
	}
}

uint16_t nkv_tgt_kv_prep(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd,
			 struct nkv_be *be)
{
	const struct nkv_sqe *s = &cmd->sqe;
	uint32_t opc = nkv_sqe_opc(s);
	uint32_t klen = nkv_kv_key_get(s, cmd->op.key);
	int list = opc == NKV_KV_LIST;
	struct nkv_tgt_kv_data d;
	uint16_t st;

	if (opc != NKV_KV_STORE && opc != NKV_KV_RETRIEVE && !list &&
	    opc != NKV_KV_DELETE && opc != NKV_KV_EXIST)
		return nkv_tgt_sc(NKV_SC_INVALID_OPCODE);
	/* Before anything else, as rados-nkv answers: whatever the rest of
	 * the command, a write to a read-only namespace is this. */
	if ((opc == NKV_KV_STORE || opc == NKV_KV_DELETE) &&
	    (be->read_only || !nkv_tgt_access_writes(c, s->nsid)))
		return nkv_tgt_cs(NKV_SC_WRITE_READ_ONLY);	/* the namespace's, or this client's ro */
	if (klen > NKV_KEY_INLINE_MAX)
		return nkv_tgt_kv_key_err();	/* 17..255 travel in head form */
	st = nkv_tgt_kv_sizes(cmd, be, &d);
	if (st)
		return st;
	/* List's options say where its start key is; the backend gets none
	 * but a Store's (all of them valid by now). */
	cmd->op.options = opc == NKV_KV_STORE ? s->cdw11 & NKV_STORE_ALL_MASK : 0;
	cmd->op.ttl_s = cmd->op.options & NKV_STORE_TTL ? s->cdw12 : 0;
	cmd->op.len = d.len;
	if (list)
		nkv_tgt_data_start(cmd, 1);
	if (klen || (list && !(s->cdw11 & NKV_LIST_KEY_HEAD)))
		return nkv_tgt_kv_inline(c, cmd, klen, &d);
	return nkv_tgt_kv_head(c, cmd, &d, list);
}

/* Account a finished command and apply the controller's policies that sit
 * on top of the backend's answer. Runs on the poll thread. */
void nkv_tgt_io_finish(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	uint8_t opc = cmd->op.opc;
	int kv = cmd->sqid && cmd->be && cmd->be->csi == NKV_CSI_KV;
	/* Exec's output is read out as a Retrieve's value is (counted, metered). */
	int rd = kv ? opc == NKV_KV_RETRIEVE || opc == NKV_KV_LIST || opc == NKV_KV_EXEC
		    : opc == NKV_NVM_READ;
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
	if (cmd->sqe.nsid <= NKV_TGT_MAX_NS)	/* a held namespace's: in range */
		nkv_tenant_moved(c->tacct[cmd->sqe.nsid], wr ? cmd->bytes : 0, rd ? cmd->bytes : 0);
}

void nkv_tgt_io_exec(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	/* A namespace the client may not use is as absent as an inactive
	 * one: refused before it is even looked up. */
	uint16_t st = nkv_tgt_access_check(c, cmd);
	/* Held until completion (nkv_tgt_complete): a removal waits. */
	struct nkv_be *be = st ? NULL : nkv_subsys_ns_get(c->ss, cmd->sqe.nsid);
	uint32_t psdt = nkv_sqe_psdt(&cmd->sqe);

	cmd->be = be;
	if (st || !be)
		st = st ? st : nkv_tgt_sc(NKV_SC_INVALID_NS);
	else if (nkv_sqe_fuse(&cmd->sqe) || (psdt != NKV_PSDT_PRP && psdt != NKV_PSDT_SGL))
		st = nkv_tgt_sc(NKV_SC_INVALID_FIELD);
	else if (be->csi == NKV_CSI_KV && nkv_sqe_opc(&cmd->sqe) == NKV_KV_EXEC)
		return nkv_tgt_exec_cmd(c, cmd, be);	/* io_exec.c: completes it */
	else if (be->csi == NKV_CSI_KV)
		st = nkv_tgt_kv_prep(c, cmd, be);
	else
		st = nkv_tgt_nvm_prep(c, cmd, be);
	if (!st) {
		cmd->op.opc = (uint8_t)nkv_sqe_opc(&cmd->sqe);
		cmd->op.done = nkv_tgt_be_done;
		cmd->op.ctx = c;
		cmd->op.t_submit_ns = cmd->op.t_fetch_ns ? nkv_tgt_metrics_stamp() : 0;
		if (!nkv_tgt_be_submit(c, be, &cmd->op))
			return;	/* done() brings it back */
		st = nkv_tgt_sc(NKV_SC_INTERNAL);
	}
	cmd->status = st;
	cmd->iovcnt = 0;
	nkv_tgt_complete(c, cmd);
}
