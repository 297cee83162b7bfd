/* SPDX-License-Identifier: MIT */
/*
 * io_exec.c - the core's half of Exec (83h; nkv_wire.h, docs/wire.md):
 * checks the command, resolves its one buffer (both ways), reads the key
 * head and the input, and hands the call to the Exec room (exec_if.h),
 * which completes the op from its worker; or, on a backend that runs
 * Exec where the values are (nvmf: the remote's), to the backend as an
 * op, unless this target's allowlist has a row for it. Also the room's
 * way to read a value (nkv_tgt_be_read): a Retrieve through the
 * namespace's backend into a buffer of the target's own, so every
 * backend serves Exec.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "exec_if.h"
#include "metrics.h"

static const struct nkv_tgt_exec_ops *nkv_tgt_exec_room;

void nkv_tgt_exec_register(const struct nkv_tgt_exec_ops *ops)
{
	__atomic_store_n(&nkv_tgt_exec_room, ops, __ATOMIC_RELEASE);
}

int nkv_tgt_exec_offered(void)
{
	return __atomic_load_n(&nkv_tgt_exec_room, __ATOMIC_ACQUIRE) != NULL;
}

int nkv_tgt_exec_offered_on(const struct nkv_be *be)
{
	return nkv_tgt_exec_offered() || (be && be->exec_fwd);
}

/* Does this call go to the backend (it runs Exec where the values are)
 * rather than to the room? Not when this target has a row for it. */
static int nkv_tgt_exec_fwd(const struct nkv_tgt_exec_ops *room, const struct nkv_be *be,
			    uint32_t nsid, uint32_t op_id)
{
	return be->exec_fwd && !(room && room->owns && room->owns(nsid, op_id));
}

/* The forwarded call's input lives with the command until completion. */
void nkv_tgt_exec_release(struct nkv_tgt_cmd *cmd)
{
	free(cmd->exec_call);
	cmd->exec_call = NULL;
	cmd->op.exec_in = NULL;
}

/*
 * The buffer: over a memory transport one run of
 * max(2 + klen + CDW10, CDW12) bytes that the output overwrites from
 * byte 0; over a capsule transport (NVMe/TCP) the input part in the
 * capsule, then CDW12 bytes for the C2HData the output leaves in
 * (docs/wire.md): the core skips the input part so the output starts at
 * offset 0 of what remains, as the transport sends it.
 */
static uint64_t nkv_tgt_exec_span(const struct nkv_tgt_cmd *cmd, uint64_t in)
{
	uint32_t ocap = nkv_exec_out_cap(&cmd->sqe);

	return cmd->req ? in + ocap : (in > ocap ? in : ocap);
}

/* Key head and input into a new call; cmd->iov then describes the
 * output area. 0 or an NVMe status. */
static uint16_t nkv_tgt_exec_read(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd,
				  struct nkv_tgt_exec_call **out)
{
	uint32_t klen, ilen = nkv_exec_in_len(&cmd->sqe);
	struct nkv_tgt_exec_call *call;
	uint64_t in;
	uint16_t st = nkv_tgt_kv_head_len(c, cmd, &klen);

	if (st)
		return st;
	if (!klen || klen > NKV_KEY_MAX)
		return nkv_tgt_sc(NKV_SC_KV_INVALID_KEY_SIZE);
	in = nkv_key_head_size(klen) + (uint64_t)ilen;
	if (in > c->max_xfer)
		return nkv_tgt_sc(NKV_SC_INVALID_FIELD);	/* CDW10 past any buffer */
	/* A capsule's in-capsule part is exactly head and input: the output
	 * area (what C2HData carries) starts right after it. */
	if (cmd->req && (!cmd->req->iovcnt || cmd->req->iov[0].iov_len != in))
		return nkv_tgt_sc(NKV_SC_SGL_DATA_LEN_INVALID);
	st = (uint16_t)nkv_tgt_cmd_dptr(c, cmd, nkv_tgt_exec_span(cmd, in),
					NKV_DMA_READ | NKV_DMA_WRITE, in);
	if (st)
		return st;
	call = calloc(1, sizeof(*call) + in);
	if (!call)
		return nkv_tgt_sc(NKV_SC_INTERNAL);
	st = nkv_tgt_cmd_peek(c, cmd, call->in, in);
	if (!st && nkv_key_head_len(call->in) != klen)
		st = nkv_tgt_sc(NKV_SC_KV_INVALID_KEY_SIZE);	/* a split length's high byte */
	if (st) {
		free(call);
		return st;
	}
	memcpy(cmd->op.key, call->in + 2, klen);
	memset(cmd->op.key + klen, 0, sizeof(cmd->op.key) - klen);
	cmd->op.klen = (uint8_t)klen;
	memmove(call->in, call->in + 2 + klen, ilen);
	call->in_len = ilen;
	if (cmd->req)
		nkv_tgt_cmd_skip(cmd, in);
	*out = call;
	return 0;
}

/* KL 0 (the key is always in head form) and no option bits; FUSE and
 * PSDT were checked with every I/O command's (io_kv.c). */
static uint16_t nkv_tgt_exec_prep(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd,
				  struct nkv_tgt_exec_call **call)
{
	if (cmd->sqe.cdw11)
		return nkv_tgt_sc(NKV_SC_INVALID_FIELD);
	return nkv_tgt_exec_read(c, cmd, call);
}

void nkv_tgt_exec_cmd(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd, struct nkv_be *be)
{
	const struct nkv_tgt_exec_ops *room = __atomic_load_n(&nkv_tgt_exec_room,
							      __ATOMIC_ACQUIRE);
	struct nkv_tgt_exec_call *call = NULL;
	int fwd = nkv_tgt_exec_fwd(room, be, cmd->sqe.nsid, nkv_exec_op_id(&cmd->sqe));
	uint16_t st;

	st = room || fwd ? nkv_tgt_exec_prep(c, cmd, &call) : nkv_tgt_sc(NKV_SC_INVALID_OPCODE);
	if (!st) {
		cmd->op.opc = NKV_KV_EXEC;
		cmd->op.options = 0;
		cmd->op.ttl_s = 0;
		cmd->op.len = nkv_exec_out_cap(&cmd->sqe);
		cmd->op.done = nkv_tgt_be_done;
		cmd->op.ctx = c;
		cmd->op.t_submit_ns = cmd->op.t_fetch_ns ? nkv_tgt_metrics_stamp() : 0;
		nkv_tgt_data_start(cmd, 0);
		call->be = be;
		call->nsid = cmd->sqe.nsid;
		call->op_id = nkv_exec_op_id(&cmd->sqe);
		call->out_cap = nkv_exec_out_cap(&cmd->sqe);
		call->op = &cmd->op;
		if (fwd) {
			cmd->exec_call = call;
			cmd->op.exec_op_id = call->op_id;
			cmd->op.exec_in = call->in;
			cmd->op.exec_ilen = call->in_len;
			if (!nkv_tgt_be_submit(c, be, &cmd->op))
				return;	/* done() brings it back */
			nkv_tgt_exec_release(cmd);
		} else {
			if (!room->submit(call))
				return;	/* the worker's done() brings it back */
			free(call);
		}
		st = nkv_tgt_sc(NKV_SC_INTERNAL);
	}
	cmd->status = st;
	cmd->iovcnt = 0;
	nkv_tgt_complete(c, cmd);
}

/* A Retrieve of the target's own: a command of no controller, its data
 * one segment of the caller's buffer, waited for on a condition. */
struct nkv_tgt_be_wait {
	struct nkv_tgt_cmd cmd;		/* first: the op is its first member */
	struct nkv_tgt_req req;		/* only to take a loan (can_lend) */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done;
};

static void nkv_tgt_be_read_done(struct nkv_be_op *op)
{
	struct nkv_tgt_be_wait *w = (struct nkv_tgt_be_wait *)op;

	pthread_mutex_lock(&w->lock);
	w->done = 1;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

uint16_t nkv_tgt_be_read(struct nkv_be *be, const struct nkv_be_op *like, const uint8_t *key,
			 uint32_t klen, void *buf, uint64_t cap, uint64_t *size,
			 struct nkv_tgt_loan *loan)
{
	struct nkv_tgt_be_wait *w = calloc(1, sizeof(*w));
	uint16_t st;

	if (!w || !klen || klen > NKV_KEY_MAX)
		return free(w), nkv_tgt_sc(!w ? NKV_SC_INTERNAL : NKV_SC_KV_INVALID_KEY_SIZE);
	/* Whatever else the Exec command's op carries (who sent it, for a
	 * backend or rule that asks) comes along; the rest is a Retrieve's. */
	w->cmd.op = *like;
	w->cmd.op.options = 0;
	w->cmd.op.ttl_s = 0;
	w->cmd.op.status = 0;
	w->cmd.op.dw0 = 0;
	w->cmd.op.ctx = NULL;
	w->cmd.op.t_fetch_ns = w->cmd.op.t_submit_ns = 0;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->cmd.iov = w->cmd.iov_inline;
	w->cmd.iov_cap = NKV_TGT_IOV_INLINE;
	w->cmd.iov[0].iov_base = buf;
	w->cmd.iov[0].iov_len = cap;
	w->cmd.iovcnt = cap ? 1 : 0;
	w->cmd.stable = 1;	/* the target's own memory: direct access is fine */
	if (loan) {
		w->req.can_lend = 1;	/* the bytes may stay where they are */
		w->cmd.req = &w->req;
		loan->p = NULL;
	}
	w->cmd.op.opc = NKV_KV_RETRIEVE;
	memcpy(w->cmd.op.key, key, klen);
	memset(w->cmd.op.key + klen, 0, sizeof(w->cmd.op.key) - klen);
	w->cmd.op.klen = (uint8_t)klen;
	w->cmd.op.len = cap;
	w->cmd.op.done = nkv_tgt_be_read_done;
	if (nkv_be_submit(be, &w->cmd.op)) {
		st = nkv_tgt_sc(NKV_SC_INTERNAL);
		goto out;
	}
	pthread_mutex_lock(&w->lock);
	while (!w->done)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	st = w->cmd.fault ? nkv_tgt_sc(NKV_SC_DATA_XFER_ERROR) : w->cmd.op.status;
	*size = w->cmd.op.dw0;
	if (w->req.lent && (st || !loan)) {
		w->req.lent_release(w->req.lent_ctx);	/* nothing to read there */
	} else if (w->req.lent) {
		loan->p = w->req.lent;
		loan->release = w->req.lent_release;
		loan->ctx = w->req.lent_ctx;
	}
out:
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
	return st;
}
