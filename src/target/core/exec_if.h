/* SPDX-License-Identifier: MIT */
/*
 * exec_if.h - between the controller core and the Exec room
 * (src/target/exec/): the core checks an Exec command (83h), resolves its
 * buffer and reads its key and input (io_exec.c); the room, registered
 * here at start-up, runs the module off the poll thread and completes the
 * op. With no room registered Exec is Invalid Opcode and the KV Identify
 * Namespace does not advertise it, so the core's own tests and fuzzers
 * link no Lua.
 */
#ifndef NKV_TGT_EXEC_IF_H
#define NKV_TGT_EXEC_IF_H

#include <stdint.h>

#include "backend.h"

/* One Exec call as the core hands it over; the room owns it (and frees
 * it with free()) from nkv_tgt_exec_ops.submit on. */
struct nkv_tgt_exec_call {
	struct nkv_be *be;	/* the namespace, held until op->done() */
	uint32_t nsid;
	uint32_t op_id;		/* CDW13 */
	uint32_t out_cap;	/* CDW12: bytes of output the buffer takes */
	uint32_t in_len;	/* CDW10 */
	struct nkv_tgt_exec_call *next;	/* the room's (its queue) */
	struct nkv_be_op *op;	/* key in op->key/klen; the output goes out
				 * with nkv_be_copy_out(op, ...) from byte 0
				 * of the output area, DW0 the true length */
	uint8_t in[];		/* the input bytes */
};

struct nkv_tgt_exec_ops {
	/* Queue call; 0, or a negative errno (the core answers Internal
	 * Error and frees call). Any thread; never blocks. */
	int (*submit)(struct nkv_tgt_exec_call *call);
	/* Whether this target has an allowlist row for (nsid, op_id): it
	 * then runs the call itself even where the backend forwards Exec
	 * (struct nkv_be exec_fwd). NULL: never. Any thread. */
	int (*owns)(uint32_t nsid, uint32_t op_id);
};

/* Register the room (NULL: none). Before controllers serve. */
void nkv_tgt_exec_register(const struct nkv_tgt_exec_ops *ops);
/* Is one registered? */
int nkv_tgt_exec_offered(void);
/* Does a namespace on be serve Exec (Identify's NKV_KV_VS_EXEC, the
 * effects log's 83h): a room, or a backend that forwards it. */
int nkv_tgt_exec_offered_on(const struct nkv_be *be);

/* A value the backend lent (backend.h nkv_be_lend) instead of copying:
 * its bytes at p until release(ctx), which the borrower calls once. */
struct nkv_tgt_loan {
	const void *p;		/* NULL: nothing lent, the bytes are in buf */
	void (*release)(void *ctx);
	void *ctx;
};

/*
 * The whole value of key in be into buf (cap bytes): *size = its stored
 * length (may exceed cap: nothing beyond cap is written). Through the
 * backend's own Retrieve, as any command would, so every backend serves
 * it; the op is a copy of like (the Exec command's: what it says of its
 * sender travels) made a Retrieve of key. With loan (may be NULL) the
 * backend may lend the bytes instead (the mem backend's values of 64 KiB
 * and more): loan->p then holds min(*size, cap) of them, to release.
 * Waits for the result. 0 or the NVMe status of the Retrieve (87h: no
 * such key). For threads that may block (the Exec workers), never a poll
 * thread.
 */
uint16_t nkv_tgt_be_read(struct nkv_be *be, const struct nkv_be_op *like, const uint8_t *key,
			 uint32_t klen, void *buf, uint64_t cap, uint64_t *size,
			 struct nkv_tgt_loan *loan);

#endif /* NKV_TGT_EXEC_IF_H */
