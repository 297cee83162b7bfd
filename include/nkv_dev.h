/* SPDX-License-Identifier: MIT */
/*
 * nkv_dev.h - the device hot path: build KV/NVM SQEs, submit them from a
 * wave with one SQ tail doorbell per batch, reap completions by phase and
 * route them to the lanes that own their CIDs.
 *
 * Header only, one implementation for every engine: the arch layer
 * (nkv_arch_hip.h under hipcc, nkv_arch_cuda.h under nvcc, nkv_arch_cpu.h
 * otherwise) supplies lane identity, collectives, fences and atomics; all
 * protocol logic is here. Compiles as C11, C++17, HIP and CUDA. Only what
 * device code runs lives here (the List payload codec is nkv_list.h).
 *
 * In one hand (docs/host.md, "The device API by task"):
 *   w = nkv_wave_enter();                          at kernel entry
 *   r = nkv_wave_retrieve(w, qp, have, nkv_wave_slot(w, 0), key, klen);
 *   r.err: the command did not complete; else r.status, r.dw0.
 * nkv_wave_submit() / nkv_wave_wait() split that in two, so several
 * batches can be in flight and be waited in any order; the nkv_dev_*()
 * builders make the SQE for the queue pair's namespace and value slots.
 *
 * Who may call what:
 *  - NKV_HD "pure" functions (builders, value slots): any thread, host or
 *    device, on its own data.
 *  - nkv_wave_*(): collective over a wave context (struct nkv_wave), made
 *    once at kernel entry where the lanes are converged by construction.
 *    EVERY lane of it calls every nkv_wave_*() together (same call, same
 *    context); lanes with nothing to do pass have = 0. Collectives never
 *    use __activemask(): on NVIDIA GPUs since Volta lanes that diverged
 *    are not reconverged by it.
 *  - nkv_qp_*(): the wave's leader only (the lowest lane of the context;
 *    with nkv_block.h, the block's thread 0).
 *
 * Contract: ONE WAVE OWNS A QUEUE PAIR AT A TIME. The descriptor's ring
 * state is advanced without atomics by the owning wave's leader; hand a
 * queue pair to another wave only across a kernel boundary (or a
 * device-scope release/acquire the caller provides). A batch is one wave
 * (32 lanes on NVIDIA, 64 on AMD CDNA); nkv_block.h makes it a whole
 * block, which then owns the queue pair instead. The host reads why a
 * queue pair failed from the host-visible word the descriptor names
 * (fail_addr; nkv_qpair_failed()), at any time; the descriptor itself
 * after the kernel. Scopes: what only the GPU touches (descriptor, CID
 * bitmap, completion table) is accessed at device scope; what the
 * controller or the host sees (SQ and CQ entries, doorbells, the failure
 * word) at system scope.
 */
#ifndef NKV_DEV_H
#define NKV_DEV_H

#include "nkv_wire.h"
#include "nkv_errno.h"

#if defined(__HIPCC__)
#include "nkv_arch_hip.h"
#elif defined(__CUDACC__)
#include "nkv_arch_cuda.h"
#else
#include "nkv_arch_cpu.h"
#endif

/* ------------------------------------------------------------------ */
/* SQE preparation. Pure: validate everything, build the entry in a local */
/* and hand it back whole; on an error the entry is all zeroes, never     */
/* half built (nor uninitialized when it is passed on by value).          */
/* Device code uses the by-value builders nkv_sqe_*(): no address of the  */
/* entry is ever taken (not even to compare it with NULL, which a GPU     */
/* compiler cannot fold for a private address), so it stays in registers. */
/* The CID (CDW0[31:16]) is nkv_wave_submit()'s to set.                   */
/* ------------------------------------------------------------------ */

/* Byte @i of a key of @klen bytes (0 past its end), at its place in a
 * little-endian dword. Constant @i, so the packing needs no array. */
#define NKV_KEY_BYTE(key, klen, i) \
	((uint32_t)((i) < (klen) ? (key)[i] : 0u) << (8u * ((i) % 4u)))
#define NKV_KEY_DWORD(key, klen, d) \
	(NKV_KEY_BYTE(key, klen, 4u * (d)) | NKV_KEY_BYTE(key, klen, 4u * (d) + 1u) | \
	 NKV_KEY_BYTE(key, klen, 4u * (d) + 2u) | NKV_KEY_BYTE(key, klen, 4u * (d) + 3u))

/* Pack @klen (<= 16) key bytes little-endian into CDW2, CDW3, CDW14,
 * CDW15; unrolled by hand so the SQE can live in registers on a GPU. */
NKV_HD void nkv_key_pack(struct nkv_sqe *s, const uint8_t *key, uint32_t klen)
{
	s->cdw2 = NKV_KEY_DWORD(key, klen, 0u);
	s->cdw3 = NKV_KEY_DWORD(key, klen, 1u);
	s->cdw14 = NKV_KEY_DWORD(key, klen, 2u);
	s->cdw15 = NKV_KEY_DWORD(key, klen, 3u);
}

NKV_HD void nkv_sqe_zero(struct nkv_sqe *s)
{
	s->cdw0 = s->nsid = s->cdw2 = s->cdw3 = 0;
	s->mptr = s->prp1 = s->prp2 = 0;
	s->cdw10 = s->cdw11 = s->cdw12 = s->cdw13 = s->cdw14 = s->cdw15 = 0;
}

/* An SQE built by value, and the error that came with it. */
struct nkv_prep {
	struct nkv_sqe sqe;	/* all zeroes when err != 0 */
	int32_t err;		/* 0, or NKV_EINVAL / NKV_EMSGSIZE / NKV_ERANGE */
};

/* A builder's error: a zeroed entry and @err. */
NKV_HD struct nkv_prep nkv_prep_err(int err)
{
	struct nkv_prep p;

	nkv_sqe_zero(&p.sqe);
	p.err = err;
	return p;
}

/* A data pointer (DPTR, CDW6-9) and how the controller reads it (CDW0
 * PSDT): PRP1/PRP2, or SGL1 (d1 its address, d2 its length | id << 56). */
struct nkv_dptr {
	uint64_t d1;
	uint64_t d2;
	uint32_t psdt;		/* NKV_PSDT_PRP or NKV_PSDT_SGL */
};

NKV_HD struct nkv_dptr nkv_dptr_prp(uint64_t prp1, uint64_t prp2)
{
	struct nkv_dptr d;

	d.d1 = prp1;
	d.d2 = prp2;
	d.psdt = NKV_PSDT_PRP;
	return d;
}

/* SGL1 as one Data Block of @len bytes at controller address @addr. */
NKV_HD struct nkv_dptr nkv_dptr_sgl(uint64_t addr, uint32_t len)
{
	struct nkv_dptr d;

	d.d1 = addr;
	d.d2 = (uint64_t)len | ((uint64_t)nkv_sgl_id(NKV_SGL_DATA_BLOCK) << 56);
	d.psdt = NKV_PSDT_SGL;
	return d;
}

/* The fields every KV command shares; the key is the caller's to place. */
NKV_HD struct nkv_prep nkv_sqe_kv_base(uint8_t opc, uint32_t nsid, uint32_t kl, uint32_t opts,
				       uint32_t cdw10, struct nkv_dptr dp)
{
	struct nkv_prep p;

	nkv_sqe_zero(&p.sqe);
	p.sqe.cdw0 = nkv_sqe_cdw0_psdt(nkv_sqe_cdw0(opc, 0), dp.psdt);
	p.sqe.nsid = nsid;
	p.sqe.prp1 = dp.d1;
	p.sqe.prp2 = dp.d2;
	p.sqe.cdw10 = cdw10;
	p.sqe.cdw11 = kl | opts;
	p.err = 0;
	return p;
}

/* Inline form with any data pointer; @min_klen is 0 for List, 1 otherwise. */
NKV_HD struct nkv_prep nkv_sqe_kv_dptr(uint8_t opc, uint32_t nsid, const void *key,
				       uint32_t klen, uint32_t min_klen, uint32_t opts,
				       uint32_t cdw10, struct nkv_dptr dp)
{
	struct nkv_prep p;

	if ((klen && !key) || klen < min_klen || klen > NKV_KEY_INLINE_MAX)
		return nkv_prep_err(NKV_EINVAL);
	p = nkv_sqe_kv_base(opc, nsid, klen, opts, cdw10, dp);
	nkv_key_pack(&p.sqe, (const uint8_t *)key, klen);
	return p;
}

/* Common KV builder, inline form over PRPs. */
NKV_HD struct nkv_prep nkv_sqe_kv(uint8_t opc, uint32_t nsid, const void *key, uint32_t klen,
				  uint32_t min_klen, uint32_t opts, uint32_t cdw10,
				  uint64_t prp1, uint64_t prp2)
{
	return nkv_sqe_kv_dptr(opc, nsid, key, klen, min_klen, opts, cdw10,
			       nkv_dptr_prp(prp1, prp2));
}

/*
 * Head form (KL = 0; nkv_wire.h): the caller has written the head
 * [u16 klen][key] (nkv_key_head_put) where @dp starts, followed by the
 * value (Store) or room for it (Retrieve, List); Exist and Delete
 * describe the head alone. @cdw10 never counts the head. @opc is a KV
 * command, @opts Store's NKV_STORE_* bits, vendor ones included (0 for
 * the others); else
 * NKV_EINVAL, as for MUST_EXIST together with MUST_NOT_EXIST. A List
 * also gets NKV_LIST_KEY_HEAD: its KL = 0 alone means "from the
 * beginning, payload at offset 0".
 */
NKV_HD struct nkv_prep nkv_sqe_kv_head(uint8_t opc, uint32_t nsid, uint32_t opts,
				       uint32_t cdw10, struct nkv_dptr dp)
{
	const uint32_t both = NKV_STORE_MUST_EXIST | NKV_STORE_MUST_NOT_EXIST;
	uint32_t mask = opc == NKV_KV_STORE ? NKV_STORE_ALL_MASK : 0u;

	if (opc != NKV_KV_STORE && opc != NKV_KV_RETRIEVE && opc != NKV_KV_LIST &&
	    opc != NKV_KV_EXIST && opc != NKV_KV_DELETE)
		return nkv_prep_err(NKV_EINVAL);
	if ((opts & ~mask) || (opts & both) == both)
		return nkv_prep_err(NKV_EINVAL);
	if (opc == NKV_KV_LIST)
		opts = NKV_LIST_KEY_HEAD;
	return nkv_sqe_kv_base(opc, nsid, 0, opts, cdw10, dp);
}

/*
 * Store @value_size bytes at PRP1/PRP2 under @key (1..16 bytes).
 * @opts: NKV_STORE_* bits (CDW11[15:8]), the vendor ones too: a raw
 * builder knows no queue pair, so sending only what the namespace
 * advertises is the caller's part (nkv_dev_store() checks it); other
 * bits give NKV_EINVAL, and so does MUST_EXIST together with
 * MUST_NOT_EXIST (no key satisfies both). NKV_STORE_TTL's seconds:
 * nkv_prep_ttl().
 */
NKV_HD struct nkv_prep nkv_sqe_store(uint32_t nsid, const void *key, uint32_t klen,
				     uint32_t opts, uint32_t value_size, uint64_t prp1,
				     uint64_t prp2)
{
	const uint32_t both = NKV_STORE_MUST_EXIST | NKV_STORE_MUST_NOT_EXIST;

	if ((opts & ~NKV_STORE_ALL_MASK) || (opts & both) == both)
		return nkv_prep_err(NKV_EINVAL);
	return nkv_sqe_kv(NKV_KV_STORE, nsid, key, klen, 1, opts, value_size, prp1, prp2);
}

/*
 * A TTL of @ttl_s seconds on Store prep @p (any builder's): NKV_STORE_TTL
 * in CDW11, the seconds in CDW12. NKV_EINVAL for 0 seconds or a prep that
 * is not a Store; a failed prep passes through unchanged. Device code
 * passes NKV_STORE_TTL to nkv_dev_store() too, so that the queue pair's
 * advertised options are checked (or calls nkv_dev_store_ttl()).
 */
NKV_HD struct nkv_prep nkv_prep_ttl(struct nkv_prep p, uint32_t ttl_s)
{
	if (p.err)
		return p;
	/* The opcode field read by value: the entry's address is never taken. */
	if (!ttl_s || NKV_GET(p.sqe.cdw0, 0, 8) != NKV_KV_STORE)
		return nkv_prep_err(NKV_EINVAL);
	p.sqe.cdw11 |= NKV_STORE_TTL;
	p.sqe.cdw12 = ttl_s;
	return p;
}

/* Retrieve @key into a host buffer of @buf_size bytes; CQE DW0 = the full
 * stored size (may exceed @buf_size: the transfer is then truncated). */
NKV_HD struct nkv_prep nkv_sqe_retrieve(uint32_t nsid, const void *key, uint32_t klen,
					uint32_t buf_size, uint64_t prp1, uint64_t prp2)
{
	return nkv_sqe_kv(NKV_KV_RETRIEVE, nsid, key, klen, 1, 0, buf_size, prp1, prp2);
}

/* List keys from @key (klen 0: from the beginning) into @buf_size bytes. */
NKV_HD struct nkv_prep nkv_sqe_list(uint32_t nsid, const void *key, uint32_t klen,
				    uint32_t buf_size, uint64_t prp1, uint64_t prp2)
{
	return nkv_sqe_kv(NKV_KV_LIST, nsid, key, klen, 0, 0, buf_size, prp1, prp2);
}

NKV_HD struct nkv_prep nkv_sqe_delete(uint32_t nsid, const void *key, uint32_t klen)
{
	return nkv_sqe_kv(NKV_KV_DELETE, nsid, key, klen, 1, 0, 0, 0, 0);
}

NKV_HD struct nkv_prep nkv_sqe_exist(uint32_t nsid, const void *key, uint32_t klen)
{
	return nkv_sqe_kv(NKV_KV_EXIST, nsid, key, klen, 1, 0, 0, 0, 0);
}

/* NVM Read/Write (@opc NKV_NVM_READ/WRITE) of @nlb blocks (1..65536) at
 * @slba: CDW10-11 SLBA, CDW12 NLB 0's based. */
NKV_HD struct nkv_prep nkv_sqe_nvm_rw(uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb,
				      uint64_t prp1, uint64_t prp2)
{
	struct nkv_prep p;

	if (opc != NKV_NVM_READ && opc != NKV_NVM_WRITE)
		return nkv_prep_err(NKV_EINVAL);
	if (nlb == 0 || nlb > 65536u)
		return nkv_prep_err(NKV_ERANGE);
	nkv_sqe_zero(&p.sqe);
	p.sqe.cdw0 = nkv_sqe_cdw0(opc, 0);
	p.sqe.nsid = nsid;
	p.sqe.prp1 = prp1;
	p.sqe.prp2 = prp2;
	p.sqe.cdw10 = (uint32_t)slba;
	p.sqe.cdw11 = (uint32_t)(slba >> 32);
	p.sqe.cdw12 = nlb - 1u;
	p.err = 0;
	return p;
}

/* ------------------------------------------------------------------ */
/* The device-visible queue-pair descriptor. The host library allocates  */
/* and fills it (addresses as uint64_t so host and GPU layouts agree);   */
/* device code only reads the setup half and advances the state half.    */
/* ------------------------------------------------------------------ */

/* Per-CID completion parked for the lane that owns the CID. */
struct nkv_dev_cpl {
	uint32_t dw0;		/* CQE DW0 (Retrieve: stored value length) */
	uint32_t status;	/* CQE status field without phase (SCT/SC/DNR) */
	uint32_t done;		/* 1 = reaped, result not yet taken */
	uint32_t cap;		/* NKV_DEV_QP_REPORT_SHORT: the Retrieve's
				 * buffer (CDW10), else 0xffffffff */
};
NKV_ASSERT_SIZE(struct nkv_dev_cpl, 16);
NKV_ASSERT_OFF(struct nkv_dev_cpl, dw0, 0);
NKV_ASSERT_OFF(struct nkv_dev_cpl, status, 4);
NKV_ASSERT_OFF(struct nkv_dev_cpl, done, 8);
NKV_ASSERT_OFF(struct nkv_dev_cpl, cap, 12);

/*
 * A value buffer the host registered; its data pointers built by the
 * host. NVMe reads PRP2 by the transfer's length: unused within one page,
 * a data page when the transfer ends in the second page, a PRP list
 * beyond. The host fills every candidate; nkv_dev_slot_dptr() picks per
 * command. The value starts page aligned (addr, prp1); the page below it
 * is the slot's head room (docs/host.md, "Slot layout"): a key in head
 * form is written at addr - (2 + klen), and the command's data pointer
 * starts there: PRP1 = head_end - (2 + klen), PRP2 = value page 0 or
 * head_prp2 (a list of the value pages from page 0); or, when the slot
 * has NKV_DEV_SLOT_SGL, SGL1 = one Data Block from prp1 - (2 + klen).
 */
struct nkv_dev_slot {
	uint64_t addr;		/* device-visible address of the value */
	uint64_t prp1;		/* controller address of value page 0 */
	uint64_t prp2;		/* PRP list (> 2 pages), else the second page, or 0 */
	uint64_t page2;		/* controller address of the second page, or 0 */
	uint64_t head_end;	/* controller address just past the head room */
	uint64_t head_prp2;	/* head form past value page 0: the PRP list of
				 * the value pages from page 0 (a one-page
				 * slot: value page 0) */
	uint32_t size;		/* bytes */
	uint32_t flags;		/* NKV_DEV_SLOT_* */
};
NKV_ASSERT_SIZE(struct nkv_dev_slot, 56);
NKV_ASSERT_OFF(struct nkv_dev_slot, addr, 0);
NKV_ASSERT_OFF(struct nkv_dev_slot, prp1, 8);
NKV_ASSERT_OFF(struct nkv_dev_slot, prp2, 16);
NKV_ASSERT_OFF(struct nkv_dev_slot, page2, 24);
NKV_ASSERT_OFF(struct nkv_dev_slot, head_end, 32);
NKV_ASSERT_OFF(struct nkv_dev_slot, head_prp2, 40);
NKV_ASSERT_OFF(struct nkv_dev_slot, size, 48);
NKV_ASSERT_OFF(struct nkv_dev_slot, flags, 52);
/* The controller takes SGLs and the head room and value pages are one
 * run of controller addresses: SGL1 is one Data Block. */
#define NKV_DEV_SLOT_SGL 0x1u

struct nkv_dev_qp {
	/* Setup, written by the host before launch, read-only to devices. */
	uint64_t sq_addr;	/* struct nkv_sqe[sq_depth] */
	uint64_t cq_addr;	/* struct nkv_cqe[cq_depth] */
	uint64_t sq_db_addr;	/* uint32_t SQ y tail doorbell */
	uint64_t cq_db_addr;	/* uint32_t CQ y head doorbell */
	uint64_t cid_bitmap_addr; /* uint64_t[(cid_count + 63) / 64], 1 = held */
	uint64_t cpl_addr;	/* struct nkv_dev_cpl[cid_count] */
	uint64_t slots_addr;	/* struct nkv_dev_slot[nr_slots] */
	uint64_t poll_budget;	/* empty polls before a timeout */
	uint32_t sq_depth;	/* entries, 2..65536 (<= CAP.MQES + 1) */
	uint32_t cq_depth;
	uint32_t db_stride;	/* bytes between doorbells: 4 << CAP.DSTRD */
	uint32_t qid;
	uint32_t cid_count;	/* CIDs 0..cid_count-1; >= max(sq, cq depth) */
	uint32_t nr_slots;
	uint32_t credit_limit;	/* min(sq_depth, cq_depth) - 1 */
	uint32_t timeout_us;	/* wall clock without a completion before a
				 * timeout; 0: poll_budget alone bounds it */
	/* State, advanced by the owning wave's leader lane. */
	uint32_t sq_tail;	/* next SQ slot to fill */
	uint32_t sq_head;	/* last SQ head the controller reported (CQE DW2) */
	uint32_t cq_head;	/* next CQ entry to look at */
	uint32_t cq_phase;	/* phase a new entry at cq_head carries */
	uint32_t inflight;	/* submitted, CQE not yet reaped */
	uint32_t cids_held;	/* CIDs allocated: in flight or result not taken */
	uint32_t failed;	/* enum nkv_qp_state, the first reason; host resets */
	/* Setup: the namespace the nkv_dev_*() builders address. */
	uint32_t nsid;
	/* Setup: where the failure reason is mirrored for the host. */
	uint64_t fail_addr;	/* uint32_t the host can read while a kernel
				 * runs (mapped host memory), or 0 */
	/* Counters, kept by the leader (the host cannot see mapped doorbells). */
	uint64_t commands;	/* SQEs submitted */
	uint64_t sq_doorbells;	/* SQ tail doorbell writes */
	uint64_t cq_doorbells;	/* CQ head doorbell writes */
	/* Setup: keys the nkv_dev_*() builders take. */
	uint32_t max_key;	/* longest key, bytes (the controller's KML,
				 * <= NKV_KEY_MAX); 0: NKV_KEY_INLINE_MAX */
	uint32_t key_flags;	/* NKV_DEV_KEY_* (bits 0-7); bits 8-15: the
				 * vendor Store options the namespace
				 * advertises (NKV_STORE_VENDOR_MASK, CDW11
				 * positions): the builders refuse the others */
	/* Setup: per-command memory for commands on memory regions
	 * (nkv_mr.h): nr_cmds blocks of cmd_size bytes, each a head page and
	 * SGL segment / PRP list pages. */
	uint64_t cmd_addr;	/* device-visible address of block 0 */
	uint64_t cmd_pages_addr; /* uint64_t[]: controller address of each page */
	uint32_t cmd_size;	/* bytes a block, a page multiple (0: none) */
	uint32_t nr_cmds;
	uint32_t dptr;		/* NKV_DEV_DPTR_*: the data pointers the
				 * controller takes beside PRPs */
	uint32_t qp_flags;	/* NKV_DEV_QP_* */
};
NKV_ASSERT_SIZE(struct nkv_dev_qp, 200);
NKV_ASSERT_OFF(struct nkv_dev_qp, sq_addr, 0);
NKV_ASSERT_OFF(struct nkv_dev_qp, cq_addr, 8);
NKV_ASSERT_OFF(struct nkv_dev_qp, sq_db_addr, 16);
NKV_ASSERT_OFF(struct nkv_dev_qp, cq_db_addr, 24);
NKV_ASSERT_OFF(struct nkv_dev_qp, cid_bitmap_addr, 32);
NKV_ASSERT_OFF(struct nkv_dev_qp, cpl_addr, 40);
NKV_ASSERT_OFF(struct nkv_dev_qp, slots_addr, 48);
NKV_ASSERT_OFF(struct nkv_dev_qp, poll_budget, 56);
NKV_ASSERT_OFF(struct nkv_dev_qp, sq_depth, 64);
NKV_ASSERT_OFF(struct nkv_dev_qp, cq_depth, 68);
NKV_ASSERT_OFF(struct nkv_dev_qp, db_stride, 72);
NKV_ASSERT_OFF(struct nkv_dev_qp, qid, 76);
NKV_ASSERT_OFF(struct nkv_dev_qp, cid_count, 80);
NKV_ASSERT_OFF(struct nkv_dev_qp, nr_slots, 84);
NKV_ASSERT_OFF(struct nkv_dev_qp, credit_limit, 88);
NKV_ASSERT_OFF(struct nkv_dev_qp, timeout_us, 92);
NKV_ASSERT_OFF(struct nkv_dev_qp, sq_tail, 96);
NKV_ASSERT_OFF(struct nkv_dev_qp, sq_head, 100);
NKV_ASSERT_OFF(struct nkv_dev_qp, cq_head, 104);
NKV_ASSERT_OFF(struct nkv_dev_qp, cq_phase, 108);
NKV_ASSERT_OFF(struct nkv_dev_qp, inflight, 112);
NKV_ASSERT_OFF(struct nkv_dev_qp, cids_held, 116);
NKV_ASSERT_OFF(struct nkv_dev_qp, failed, 120);
NKV_ASSERT_OFF(struct nkv_dev_qp, nsid, 124);
NKV_ASSERT_OFF(struct nkv_dev_qp, fail_addr, 128);
NKV_ASSERT_OFF(struct nkv_dev_qp, commands, 136);
NKV_ASSERT_OFF(struct nkv_dev_qp, sq_doorbells, 144);
NKV_ASSERT_OFF(struct nkv_dev_qp, cq_doorbells, 152);
NKV_ASSERT_OFF(struct nkv_dev_qp, max_key, 160);
NKV_ASSERT_OFF(struct nkv_dev_qp, key_flags, 164);
NKV_ASSERT_OFF(struct nkv_dev_qp, cmd_addr, 168);
NKV_ASSERT_OFF(struct nkv_dev_qp, cmd_pages_addr, 176);
NKV_ASSERT_OFF(struct nkv_dev_qp, cmd_size, 184);
NKV_ASSERT_OFF(struct nkv_dev_qp, nr_cmds, 188);
NKV_ASSERT_OFF(struct nkv_dev_qp, dptr, 192);
NKV_ASSERT_OFF(struct nkv_dev_qp, qp_flags, 196);
/* The controller takes SGLs of any alignment (SGLS 01b), or dword-aligned
 * ones only (10b); neither: PRPs. */
#define NKV_DEV_DPTR_SGL 0x1u
#define NKV_DEV_DPTR_SGL_DWORD 0x2u
/* A Retrieve whose value is longer than its buffer ends with err
 * NKV_EMSGSIZE (dw0 the true length, the prefix landed), not success. */
#define NKV_DEV_QP_REPORT_SHORT 0x1u
/* Every key in head form, short ones too (for controllers that read keys
 * only from the head of the data buffer, e.g. rados-nkv's forwarder). */
#define NKV_DEV_KEY_HEAD 0x1u

/*
 * What a lane gets back for one command: one result, whatever went wrong.
 * err != 0: the command did not complete (the builder refused it, or the
 * queue pair failed or ran out of CIDs); status is then 0. err == 0 and
 * status != 0: the controller answered with that NVMe status (87h Key
 * Does Not Exist is a normal answer). A lane that had no command gets
 * err 0, status 0 and cid NKV_CID_NONE.
 */
struct nkv_dev_result {
	uint32_t dw0;		/* CQE DW0: Retrieve's stored value length */
	uint16_t status;	/* NVMe status unchanged: nkv_status_sct/sc() */
	uint16_t cid;		/* the command's CID, or NKV_CID_NONE */
	int32_t err;		/* 0 or an NKV_E* code (nkv_errno.h) */
};

/* What nkv_wave_submit() gives each lane, for nkv_wave_wait(). */
struct nkv_ticket {
	uint16_t cid;		/* in flight under this CID, or NKV_CID_NONE */
	uint16_t rsvd;
	int32_t err;		/* why the command did not go in, or 0 */
};

#define NKV_WAVE_MAX 64u	/* lanes in the widest wave (AMD CDNA) */
#define NKV_CID_MAX 65535u	/* CID 0xffff is never handed out: */
#define NKV_CID_NONE 0xffffu	/* no command (a lane without one) */
#define NKV_QDEPTH_MAX 65536u

/* Host, any thread: the credit limit for the given depths. */
NKV_HD uint32_t nkv_dev_credit_limit(uint32_t sq_depth, uint32_t cq_depth)
{
	return (sq_depth < cq_depth ? sq_depth : cq_depth) - 1u;
}

/* Device code (any lane), and host code on the cpu engine: NKV_QP_OK or
 * why the queue pair stopped. A relaxed device-scope load: it only
 * reports. A host watching a GPU kernel reads nkv_qpair_failed() (the
 * mirrored word at fail_addr) instead: the descriptor may be in device
 * memory. */
NKV_DEV uint32_t nkv_dev_qp_failed(const struct nkv_dev_qp *qp)
{
	return nkv_arch_load_dev_u32(&qp->failed);
}

#define NKV_DEV_PTR(type, addr) ((type *)(uintptr_t)(addr))

/* Value slot @i, or NULL: any lane, read-only. */
NKV_HD const struct nkv_dev_slot *nkv_dev_slot_get(const struct nkv_dev_qp *qp, uint32_t i)
{
	return i < qp->nr_slots ? NKV_DEV_PTR(const struct nkv_dev_slot, qp->slots_addr) + i : NULL;
}

/* PRP2 for a transfer of @len bytes through slot @s (any lane): 0 within
 * the first page, the second page when the transfer ends there, else the
 * slot's PRP list. Slots start page aligned (prp1 offset 0). */
NKV_HD uint64_t nkv_dev_slot_prp2(const struct nkv_dev_slot *s, uint32_t len)
{
	uint32_t first = NKV_PAGE_SIZE - (uint32_t)(s->prp1 & (NKV_PAGE_SIZE - 1u));

	if (len <= first)
		return 0;
	if (len <= first + NKV_PAGE_SIZE)
		return s->page2;
	return s->prp2;
}

/* The same for a head-form transfer of a head then @len value bytes: the
 * head fills PRP1's page to its end, so the value pages follow in PRP2. */
NKV_HD uint64_t nkv_dev_slot_head_prp2(const struct nkv_dev_slot *s, uint32_t len)
{
	if (len == 0)
		return 0;
	if (len <= NKV_PAGE_SIZE)
		return s->prp1;
	return s->head_prp2;
}

/* The data pointer for @len value bytes through slot @s, with a head of
 * @hl bytes just below the value (@hl 0: the inline form). Any lane. */
NKV_HD struct nkv_dptr nkv_dev_slot_dptr(const struct nkv_dev_slot *s, uint32_t hl,
					 uint32_t len)
{
	if (s->flags & NKV_DEV_SLOT_SGL)
		return nkv_dptr_sgl(s->prp1 - hl, hl + len);
	if (!hl)
		return nkv_dptr_prp(s->prp1, nkv_dev_slot_prp2(s, len));
	return nkv_dptr_prp(s->head_end - hl, nkv_dev_slot_head_prp2(s, len));
}

/* Value slot @i's buffer, where device code reads and writes the value
 * (a device address on a GPU), or NULL: any lane. */
NKV_HD void *nkv_dev_value(const struct nkv_dev_qp *qp, uint32_t i)
{
	const struct nkv_dev_slot *s = nkv_dev_slot_get(qp, i);

	return s ? NKV_DEV_PTR(void, s->addr) : NULL;
}

/* The longest key @qp's builders take. */
NKV_HD uint32_t nkv_dev_max_key(const struct nkv_dev_qp *qp)
{
	return qp->max_key ? qp->max_key : NKV_KEY_INLINE_MAX;
}

/* Does a key of @klen bytes (1..max) travel in head form on @qp? Keys too
 * long for the command, and every key under NKV_DEV_KEY_HEAD. */
NKV_HD int nkv_dev_key_head(const struct nkv_dev_qp *qp, uint32_t klen)
{
	return klen > NKV_KEY_INLINE_MAX || (klen && (qp->key_flags & NKV_DEV_KEY_HEAD));
}

/*
 * One KV command through slot @s (NULL: none; Exist and Delete need one
 * only for a key in head form), moving @len value bytes. A key in head
 * form is written into the slot's head room here, byte by byte (no
 * stack), before the caller publishes the entry: the lane's release fence
 * orders it with the SQE. NKV_EINVAL for a missing slot or a key length
 * outside @min_klen..max_key. Any lane; the host's synchronous API calls
 * it with its own slot.
 */
NKV_HD struct nkv_prep nkv_dev_kv_slot(const struct nkv_dev_qp *qp, const struct nkv_dev_slot *s,
				       uint8_t opc, const void *key, uint32_t klen,
				       uint32_t min_klen, uint32_t opts, uint32_t cdw10,
				       uint32_t len)
{
	int data = opc == NKV_KV_STORE || opc == NKV_KV_RETRIEVE || opc == NKV_KV_LIST;
	uint32_t hl = nkv_key_head_size(klen);

	if ((klen && !key) || klen < min_klen || klen > nkv_dev_max_key(qp))
		return nkv_prep_err(NKV_EINVAL);
	if (nkv_dev_key_head(qp, klen)) {
		if (!s)
			return nkv_prep_err(NKV_EINVAL);
		nkv_key_head_put(NKV_DEV_PTR(uint8_t, s->addr - hl), (const uint8_t *)key, klen);
		return nkv_sqe_kv_head(opc, qp->nsid, opts, cdw10, nkv_dev_slot_dptr(s, hl, len));
	}
	if (data && !s)
		return nkv_prep_err(NKV_EINVAL);
	return nkv_sqe_kv_dptr(opc, qp->nsid, key, klen, min_klen, opts, cdw10,
			       data ? nkv_dev_slot_dptr(s, 0, len) : nkv_dptr_prp(0, 0));
}

/*
 * Are @opts Store options @qp's namespace takes, for a value of
 * @value_size bytes? Known bits, not both existence conditions, vendor
 * bits only where advertised (key_flags bits 8-15), and a touch with no
 * value and neither MUST_NOT_EXIST nor EPHEMERAL (the controller answers
 * Invalid Field to those). Any lane.
 */
NKV_HD int nkv_dev_store_opts_ok(const struct nkv_dev_qp *qp, uint32_t opts, uint32_t value_size)
{
	const uint32_t both = NKV_STORE_MUST_EXIST | NKV_STORE_MUST_NOT_EXIST;

	if ((opts & ~NKV_STORE_ALL_MASK) || (opts & both) == both)
		return 0;
	if (opts & NKV_STORE_VENDOR_MASK & ~qp->key_flags)
		return 0;
	if (!(opts & NKV_STORE_TOUCH))
		return 1;
	return !value_size && !(opts & (NKV_STORE_MUST_NOT_EXIST | NKV_STORE_EPHEMERAL));
}

/*
 * The device builders: a command for the queue pair's namespace
 * (qp->nsid) through value slot @slot (its host-built data pointers).
 * Any lane. Keys of 1..max_key bytes (List: 0 too, from the beginning):
 * inline up to 16 bytes, else (or, under NKV_DEV_KEY_HEAD, always) in
 * head form, written at nkv_dev_value() - (2 + klen). NKV_EINVAL for a
 * slot the queue pair does not have or a key length outside those
 * bounds, NKV_EMSGSIZE for a value larger than the slot. nkv_sqe_*()
 * above are the same commands with explicit data pointers.
 * nkv_dev_store()'s @opts: NKV_STORE_* bits, vendor ones only where the
 * namespace advertises them (nkv_dev_store_opts_ok(): else NKV_EINVAL);
 * a TTL's seconds come with nkv_dev_store_ttl() or nkv_prep_ttl().
 */
NKV_HD struct nkv_prep nkv_dev_store(const struct nkv_dev_qp *qp, uint32_t slot,
				     const void *key, uint32_t klen, uint32_t opts,
				     uint32_t value_size)
{
	const struct nkv_dev_slot *s = nkv_dev_slot_get(qp, slot);

	if (!s || !nkv_dev_store_opts_ok(qp, opts, value_size))
		return nkv_prep_err(NKV_EINVAL);
	if (value_size > s->size)
		return nkv_prep_err(NKV_EMSGSIZE);
	return nkv_dev_kv_slot(qp, s, NKV_KV_STORE, key, klen, 1, opts, value_size, value_size);
}

/* Retrieve into the whole slot; CQE DW0 = the stored value's full size. */
NKV_HD struct nkv_prep nkv_dev_retrieve(const struct nkv_dev_qp *qp, uint32_t slot,
					const void *key, uint32_t klen)
{
	const struct nkv_dev_slot *s = nkv_dev_slot_get(qp, slot);

	if (!s)
		return nkv_prep_err(NKV_EINVAL);
	return nkv_dev_kv_slot(qp, s, NKV_KV_RETRIEVE, key, klen, 1, 0, s->size, s->size);
}

/* List from @key (@klen 0: the beginning, inline) into the whole slot
 * (the payload format: nkv_list.h). */
NKV_HD struct nkv_prep nkv_dev_list(const struct nkv_dev_qp *qp, uint32_t slot,
				    const void *key, uint32_t klen)
{
	const struct nkv_dev_slot *s = nkv_dev_slot_get(qp, slot);

	if (!s)
		return nkv_prep_err(NKV_EINVAL);
	return nkv_dev_kv_slot(qp, s, NKV_KV_LIST, key, klen, 0, 0, s->size, s->size);
}

/* Exist and Delete: slot @slot holds the head when the key takes the
 * head form (else it is not read). */
NKV_HD struct nkv_prep nkv_dev_exist(const struct nkv_dev_qp *qp, uint32_t slot,
				     const void *key, uint32_t klen)
{
	return nkv_dev_kv_slot(qp, nkv_dev_slot_get(qp, slot), NKV_KV_EXIST, key, klen, 1, 0, 0, 0);
}

NKV_HD struct nkv_prep nkv_dev_delete(const struct nkv_dev_qp *qp, uint32_t slot,
				      const void *key, uint32_t klen)
{
	return nkv_dev_kv_slot(qp, nkv_dev_slot_get(qp, slot), NKV_KV_DELETE, key, klen, 1, 0, 0,
			       0);
}

/*
 * Exec (83h; nkv_wire.h) by value: the caller has written the buffer
 * [u16 klen][key][input] (nkv_key_head_put, then @ilen input bytes) at
 * the start of @dp, which describes nkv_exec_buf_size(klen, ilen, ocap)
 * bytes; the result comes back from the buffer's first byte. KL is 0,
 * no options. NKV_EINVAL for a key length outside 1..255.
 */
NKV_HD struct nkv_prep nkv_sqe_exec(uint32_t nsid, uint32_t klen, uint32_t op_id,
				    uint32_t ilen, uint32_t ocap, struct nkv_dptr dp)
{
	struct nkv_prep p;

	if (!klen || klen > NKV_KEY_MAX)
		return nkv_prep_err(NKV_EINVAL);
	p = nkv_sqe_kv_base(NKV_KV_EXEC, nsid, 0, 0, ilen, dp);
	p.sqe.cdw12 = ocap;
	p.sqe.cdw13 = op_id;
	return p;
}

/* Bytes of a slot's value area an Exec with a key of @klen bytes, @ilen
 * input bytes and an output cap of @ocap takes (the head sits below). */
NKV_HD uint32_t nkv_dev_exec_len(uint32_t klen, uint32_t ilen, uint32_t ocap)
{
	return (uint32_t)(nkv_exec_buf_size(klen, ilen, ocap) - nkv_key_head_size(klen));
}

/*
 * Exec through slot @slot: the caller has put @ilen input bytes at the
 * slot's value (nkv_dev_value); this writes the head below it and
 * builds the entry. The result lands at the head's first byte:
 * nkv_dev_exec_out(). NKV_EINVAL for a bad key or a slot too small
 * (nkv_dev_exec_len() > its size). Any lane, on its own slot.
 */
NKV_HD struct nkv_prep nkv_dev_exec(const struct nkv_dev_qp *qp, uint32_t slot,
				    const void *key, uint32_t klen, uint32_t op_id,
				    uint32_t ilen, uint32_t ocap)
{
	const struct nkv_dev_slot *s = nkv_dev_slot_get(qp, slot);
	uint32_t hl = nkv_key_head_size(klen);

	if (!s || !key || !klen || klen > NKV_KEY_MAX || ilen > s->size ||
	    nkv_exec_buf_size(klen, ilen, ocap) - hl > s->size)
		return nkv_prep_err(NKV_EINVAL);
	nkv_key_head_put(NKV_DEV_PTR(uint8_t, s->addr - hl), (const uint8_t *)key, klen);
	return nkv_sqe_exec(qp->nsid, klen, op_id, ilen, ocap,
			    nkv_dev_slot_dptr(s, hl, nkv_dev_exec_len(klen, ilen, ocap)));
}

/* Where an Exec through slot @slot with a key of @klen bytes left its
 * result (the head's first byte). Any lane. */
NKV_HD void *nkv_dev_exec_out(const struct nkv_dev_qp *qp, uint32_t slot, uint32_t klen)
{
	const struct nkv_dev_slot *s = nkv_dev_slot_get(qp, slot);

	return s ? NKV_DEV_PTR(void, s->addr - nkv_key_head_size(klen)) : NULL;
}

/* Store @value_size bytes of slot @slot with a TTL of @ttl_s seconds (1..):
 * nkv_dev_store() with NKV_STORE_TTL added to @opts (so NKV_EINVAL where
 * the namespace does not advertise it), then nkv_prep_ttl(). */
NKV_HD struct nkv_prep nkv_dev_store_ttl(const struct nkv_dev_qp *qp, uint32_t slot,
					 const void *key, uint32_t klen, uint32_t opts,
					 uint32_t value_size, uint32_t ttl_s)
{
	return nkv_prep_ttl(nkv_dev_store(qp, slot, key, klen, opts | NKV_STORE_TTL, value_size),
			    ttl_s);
}

/*
 * Touch @key: a Store of no value with NKV_STORE_TOUCH, refreshing the
 * key's TTL (@ttl_s 0: it restarts its own; else it becomes @ttl_s
 * seconds from now); 87h when the key is absent. NKV_EINVAL where the
 * namespace does not advertise touch (or TTL, with @ttl_s). Slot @slot
 * holds the head when the key takes the head form.
 */
NKV_HD struct nkv_prep nkv_dev_touch(const struct nkv_dev_qp *qp, uint32_t slot, const void *key,
				     uint32_t klen, uint32_t ttl_s)
{
	if (ttl_s)
		return nkv_dev_store_ttl(qp, slot, key, klen, NKV_STORE_TOUCH, 0, ttl_s);
	return nkv_dev_store(qp, slot, key, klen, NKV_STORE_TOUCH, 0);
}

/* ------------------------------------------------------------------ */
/* Leader-only queue operations: the lowest lane of the wave context.     */
/* ------------------------------------------------------------------ */

/* Mark the queue pair failed with @why, keeping the first reason, and
 * mirror it to the host-visible word: a plain store, then a system fence
 * so the host sees it even if the kernel never returns. */
NKV_DEV void nkv_qp_fail(struct nkv_dev_qp *qp, uint32_t why)
{
	if (nkv_arch_load_dev_u32(&qp->failed) != NKV_QP_OK)
		return;
	nkv_arch_store_dev_u32(&qp->failed, why);
	if (qp->fail_addr) {
		nkv_arch_store_sys_u32(NKV_DEV_PTR(uint32_t, qp->fail_addr), why);
		nkv_arch_fence_full();
	}
}

/* Free SQ slots: the controller frees them by reporting its SQ head. */
NKV_HD uint32_t nkv_qp_sq_free(const struct nkv_dev_qp *qp)
{
	uint32_t used = (qp->sq_tail + qp->sq_depth - qp->sq_head) % qp->sq_depth;

	return qp->sq_depth - 1u - used;
}

/* Commands that may go in now: in-flight limit, SQ slots, free CIDs. */
NKV_DEV uint32_t nkv_qp_credits(struct nkv_dev_qp *qp)
{
	uint32_t held = nkv_arch_load_dev_u32(&qp->cids_held);
	uint32_t c = qp->credit_limit - qp->inflight;
	uint32_t s = nkv_qp_sq_free(qp);

	c = s < c ? s : c;
	return qp->cid_count - held < c ? qp->cid_count - held : c;
}

/* The bits of CID bitmap word @w that name real CIDs. */
NKV_HD uint64_t nkv_qp_cid_valid(const struct nkv_dev_qp *qp, uint32_t w)
{
	uint32_t valid = qp->cid_count - w * 64u;

	return valid >= 64u ? ~0ull : (1ull << valid) - 1ull;
}

/* Is @cid a CID this queue pair handed out and still holds? */
NKV_DEV int nkv_qp_cid_held(struct nkv_dev_qp *qp, uint32_t cid)
{
	const uint64_t *bm = NKV_DEV_PTR(const uint64_t, qp->cid_bitmap_addr);

	return cid < qp->cid_count &&
	       (nkv_arch_load_dev_u64(&bm[cid / 64u]) >> (cid % 64u) & 1u);
}

/*
 * Any lane, read only: the @k-th free CID (0-based, lowest first) of the
 * bitmap as it stands, or NKV_ENOSPC. Every lane of a chunk computes its
 * own from the same snapshot, then the leader takes them all
 * (nkv_qp_cids_take): no lane does an atomic to get a CID, and no loop
 * that holds a collective depends on a race.
 */
NKV_DEV int nkv_qp_cid_nth(struct nkv_dev_qp *qp, uint32_t k)
{
	const uint64_t *bm = NKV_DEV_PTR(const uint64_t, qp->cid_bitmap_addr);
	uint32_t words = (qp->cid_count + 63u) / 64u, w;

	for (w = 0; w < words; w++) {
		uint64_t f = ~nkv_arch_load_dev_u64(&bm[w]) & nkv_qp_cid_valid(qp, w);
		uint32_t n = nkv_arch_popc64(f);

		if (k < n) {
			for (; k; k--)
				f &= f - 1u;
			return (int)(w * 64u + nkv_arch_ffs64(f));
		}
		k -= n;
	}
	return NKV_ENOSPC;
}

/* Leader: mark the @n lowest free CIDs held (the ones nkv_qp_cid_nth gave
 * ranks 0..n-1), one store per bitmap word. */
NKV_DEV void nkv_qp_cids_take(struct nkv_dev_qp *qp, uint32_t n)
{
	uint64_t *bm = NKV_DEV_PTR(uint64_t, qp->cid_bitmap_addr);
	uint32_t words = (qp->cid_count + 63u) / 64u, w;

	for (w = 0; w < words && n; w++) {
		uint64_t f = ~nkv_arch_load_dev_u64(&bm[w]) & nkv_qp_cid_valid(qp, w), t = 0;

		for (; f && n; n--) {
			t |= f & (0ull - f);
			f &= f - 1u;
		}
		if (t)
			nkv_arch_fetch_or_dev_u64(&bm[w], t);
	}
}

/* The lane that owns @cid gives it back after taking its result (lanes
 * clear bits of shared words: a device-scope atomic). */
NKV_DEV void nkv_qp_cid_free(struct nkv_dev_qp *qp, uint32_t cid)
{
	uint64_t *bm = NKV_DEV_PTR(uint64_t, qp->cid_bitmap_addr);

	nkv_arch_fetch_and_dev_u64(&bm[cid / 64u], ~(1ull << (cid % 64u)));
}

/* The lane that owns @cid, once its completion is parked: the result,
 * the table entry cleared, the CID given back. The caller counts taken
 * CIDs out of cids_held, one atomic per wave or block. */
NKV_DEV struct nkv_dev_result nkv_qp_take(struct nkv_dev_qp *qp, uint32_t cid)
{
	struct nkv_dev_cpl *t = NKV_DEV_PTR(struct nkv_dev_cpl, qp->cpl_addr);
	struct nkv_dev_result res;

	res.dw0 = t[cid].dw0;
	res.status = (uint16_t)t[cid].status;
	res.cid = (uint16_t)cid;
	res.err = 0;
	/* Opted in: a Retrieve's value longer than its buffer is short. */
	if ((qp->qp_flags & NKV_DEV_QP_REPORT_SHORT) && !res.status && res.dw0 > t[cid].cap)
		res.err = NKV_EMSGSIZE;
	nkv_arch_store_dev_u32(&t[cid].done, 0);
	nkv_qp_cid_free(qp, cid);
	return res;
}

/* File one completion: park it in the CID's table entry, take the SQ head. */
NKV_DEV int nkv_qp_complete(struct nkv_dev_qp *qp, const struct nkv_cqe *c)
{
	struct nkv_dev_cpl *t = NKV_DEV_PTR(struct nkv_dev_cpl, qp->cpl_addr);
	uint32_t cid = nkv_cqe_cid(c->dw3), sqhd = nkv_cqe_sqhd(c->dw2);
	uint32_t d = qp->sq_depth;

	/* The new head lies between the old head and our tail (ring order). */
	if (!nkv_qp_cid_held(qp, cid) || t[cid].done || qp->inflight == 0 ||
	    sqhd >= d || (sqhd + d - qp->sq_head) % d > (qp->sq_tail + d - qp->sq_head) % d) {
		nkv_qp_fail(qp, NKV_QP_FAILED_BAD_CQE);
		return NKV_EIO;
	}
	t[cid].dw0 = c->dw0;
	t[cid].status = nkv_cqe_status(c->dw3);
	t[cid].done = 1;
	qp->sq_head = sqhd;
	qp->inflight--;
	return 0;
}

/*
 * Reap up to @max new CQEs; one CQ head doorbell write for all of them.
 * Returns how many, or NKV_EIO (bad CQE; the queue pair is failed).
 * Order per entry, as Linux's nvme_cqe_pending and SPDK: DW3 (phase,
 * status, CID) alone, system-scope acquire; if its phase is new, the
 * acquire fence, then DW0-DW2. Nothing of the entry is read before its
 * phase, so no DW0 from before the controller's write can ride along with
 * a new phase (the torn CQE). The acquire load is what the C model and
 * TSan see; the fence is the arch layer's ordering for controller-written
 * memory.
 */
NKV_DEV int nkv_qp_reap(struct nkv_dev_qp *qp, uint32_t max)
{
	struct nkv_cqe *cq = NKV_DEV_PTR(struct nkv_cqe, qp->cq_addr);
	uint32_t n = 0;
	int err = 0;

	while (n < max) {
		struct nkv_cqe *e = &cq[qp->cq_head];
		struct nkv_cqe c;

		c.dw3 = nkv_arch_load_acquire_u32(&e->dw3);
		if (nkv_cqe_phase(c.dw3) != qp->cq_phase)
			break;
		nkv_arch_fence_acquire();
		c.dw0 = nkv_arch_load_relaxed_u32(&e->dw0);
		c.dw1 = nkv_arch_load_relaxed_u32(&e->dw1);
		c.dw2 = nkv_arch_load_relaxed_u32(&e->dw2);
		err = nkv_qp_complete(qp, &c);
		if (err)
			break;
		if (++qp->cq_head == qp->cq_depth) {
			qp->cq_head = 0;
			qp->cq_phase ^= 1u;
		}
		n++;
	}
	if (n) {
		/* Our reads of the entries happen before the controller may
		 * reuse them: release, then the head doorbell. */
		nkv_arch_fence_release();
		nkv_arch_mmio_store_u32(NKV_DEV_PTR(volatile uint32_t, qp->cq_db_addr),
					qp->cq_head);
		qp->cq_doorbells++;
	}
	return err ? err : (int)n;
}

/* The error a wait on a failed queue pair returns: NKV_ENOTCONN when the
 * controller is gone, else NKV_EIO. */
NKV_DEV int nkv_qp_failed_err(const struct nkv_dev_qp *qp)
{
	return nkv_dev_qp_failed(qp) == NKV_QP_FAILED_GONE ? NKV_ENOTCONN : NKV_EIO;
}

/* Adopt a failure the host wrote into the host-visible word (its watch
 * marks every queue pair of a controller that is gone): device code
 * cannot see a closed socket or a register, only this word. Read every
 * 256 empty polls, as the clock, so a wait ends within a few hundred
 * polls of the host's mark. Returns the failure, or NKV_QP_OK. */
NKV_DEV uint32_t nkv_qp_watch(struct nkv_dev_qp *qp, uint64_t polls)
{
	uint32_t why;

	if (!qp->fail_addr || (polls & 255u) != 255u)
		return NKV_QP_OK;
	why = nkv_arch_load_relaxed_u32(NKV_DEV_PTR(const uint32_t, qp->fail_addr));
	if (why != NKV_QP_OK && nkv_dev_qp_failed(qp) == NKV_QP_OK)
		nkv_arch_store_dev_u32(&qp->failed, why);
	return why;
}

/* Has a wait that started at @t0 (ns) outlived qp->timeout_us? The clock
 * is read every 256 empty polls only: it is not free on every engine. */
NKV_DEV int nkv_qp_expired(const struct nkv_dev_qp *qp, uint64_t polls, uint64_t *t0)
{
	uint64_t now;

	if (!qp->timeout_us || (polls & 255u) != 255u)
		return 0;
	now = nkv_arch_clock_ns();
	if (polls == 255u) {
		*t0 = now;
		return 0;
	}
	return now - *t0 > (uint64_t)qp->timeout_us * 1000u;
}

/* Reap until at least one CQE arrived (0), or NKV_ETIMEDOUT after
 * poll_budget empty polls or timeout_us of wall clock, whichever comes
 * first (the queue pair is then failed), or NKV_ENOTCONN (the host
 * marked the controller gone), or NKV_EIO (failed otherwise). */
NKV_DEV int nkv_qp_progress(struct nkv_dev_qp *qp)
{
	uint64_t polls, t0 = 0;
	int r;

	for (polls = 0;; polls++) {
		if (nkv_dev_qp_failed(qp) || nkv_qp_watch(qp, polls))
			return nkv_qp_failed_err(qp);
		if (qp->inflight == 0)
			return NKV_EINVAL;	/* nothing can ever arrive */
		r = nkv_qp_reap(qp, qp->cq_depth);
		if (r)
			return r < 0 ? r : 0;
		if (polls >= qp->poll_budget || nkv_qp_expired(qp, polls, &t0)) {
			nkv_qp_fail(qp, NKV_QP_FAILED_TIMEOUT);
			return NKV_ETIMEDOUT;
		}
		nkv_arch_poll_pause(polls);
	}
}

/* Grant encoding for the broadcast: tail << 32 | count, or error flag. */
#define NKV_GRANT_ERR (1ull << 63)

/*
 * Reserve up to @want submissions: waits (reaping) until the whole batch,
 * or a full queue's worth, can go in at once, so a batch takes as few
 * doorbells as the queue allows; a full queue is backpressure, not an
 * error. Counts the CIDs as held (nkv_qp_cids_take marks which). Returns
 * the grant.
 */
NKV_DEV uint64_t nkv_qp_reserve(struct nkv_dev_qp *qp, uint32_t want)
{
	uint32_t target = want < qp->credit_limit ? want : qp->credit_limit;
	uint32_t credits = 0, tail;
	int r = 0;

	for (;;) {
		if (nkv_dev_qp_failed(qp)) {
			r = nkv_qp_failed_err(qp);
			break;
		}
		credits = nkv_qp_credits(qp);
		if (credits >= target)
			break;
		/* Nothing in flight: waiting frees nothing more (CIDs held by
		 * results not yet taken), so go with what there is. */
		if (qp->inflight == 0) {
			if (!credits)
				r = NKV_ENOSPC;
			break;
		}
		r = nkv_qp_progress(qp);
		if (r)
			break;
	}
	if (r)
		return NKV_GRANT_ERR | (uint32_t)-r;
	credits = credits < want ? credits : want;
	tail = qp->sq_tail;
	nkv_arch_fetch_add_dev_u32(&qp->cids_held, credits);
	qp->inflight += credits;
	qp->commands += credits;
	qp->sq_tail = (tail + credits) % qp->sq_depth;
	return (uint64_t)tail << 32 | credits;
}

/* ------------------------------------------------------------------ */
/* The wave context and the wave collectives                             */
/* ------------------------------------------------------------------ */

/* Which lanes take part; made once at kernel entry, passed to every
 * collective by value (it lives in registers). */
struct nkv_wave {
	uint64_t mask;		/* lanes that take part: all of them call every
				 * nkv_wave_*() together */
	uint32_t lane;		/* this lane */
	uint32_t leader;	/* lowest lane of mask: keeps the queue pair */
};

/* Every lane of @mask (which must hold the caller): a context for those
 * lanes only. Lanes outside @mask never call the collectives with it. */
NKV_DEV struct nkv_wave nkv_wave_enter_mask(uint64_t mask)
{
	struct nkv_wave w;

	w.mask = mask;
	w.lane = nkv_arch_lane_id();
	w.leader = nkv_arch_ffs64(mask);
	return w;
}

/* At kernel entry, before any branch (the lanes are converged by
 * construction there): a context of every lane of the wave the launch
 * created. On the host (outside a cpu-engine launch): a one-lane wave. */
NKV_DEV struct nkv_wave nkv_wave_enter(void)
{
	return nkv_wave_enter_mask(nkv_arch_entry_mask());
}

/* Lanes in the context, and this lane's rank among them (0-based). */
NKV_DEV uint32_t nkv_wave_width(struct nkv_wave w)
{
	return nkv_arch_popc64(w.mask);
}

NKV_DEV uint32_t nkv_wave_rank(struct nkv_wave w)
{
	return nkv_arch_popc64(w.mask & ((1ull << w.lane) - 1ull));
}

/* This lane's value slot for batch @k of the batches a wave keeps in
 * flight at once (k = 0 with one): k * width + rank, so no two lanes or
 * batches share a slot; n batches need n * width slots. */
NKV_DEV uint32_t nkv_wave_slot(struct nkv_wave w, uint32_t k)
{
	return k * nkv_wave_width(w) + nkv_wave_rank(w);
}

/* A lane writes its SQE into its slot: CID in, wide stores, then its own
 * release fence at system scope (the leader's fence cannot order it). */
NKV_DEV void nkv_lane_publish(struct nkv_dev_qp *qp, struct nkv_sqe sqe, uint32_t slot,
			      uint16_t cid)
{
	struct nkv_sqe *sq = NKV_DEV_PTR(struct nkv_sqe, qp->sq_addr);

	sqe.cdw0 = (sqe.cdw0 & 0xffffu) | (uint32_t)cid << 16;
	if (qp->qp_flags & NKV_DEV_QP_REPORT_SHORT) {
		/* The lane owns the CID's entry until it takes the result.
		 * A size query (CDW10 0) asks for the length: never short. */
		struct nkv_dev_cpl *t = NKV_DEV_PTR(struct nkv_dev_cpl, qp->cpl_addr);
		int rd = NKV_GET(sqe.cdw0, 0, 8) == NKV_KV_RETRIEVE && sqe.cdw10;

		nkv_arch_store_dev_u32(&t[cid].cap, rd ? sqe.cdw10 : 0xffffffffu);
	}
	nkv_arch_store_sqe(&sq[slot], &sqe);
	nkv_arch_fence_release();
}

/*
 * After a chunk's threads published: @published of the @chunk slots got
 * their fenced entry (the collective's count, which is its barrier). All
 * of them: @leader writes the SQ tail doorbell once; returns 1. Fewer: a
 * slot holds no fresh SQE and must never be rung in, so @leader fails the
 * queue pair; returns 0. Shared by the wave and the block submit.
 */
NKV_DEV int nkv_qp_ring_chunk(struct nkv_dev_qp *qp, int leader, uint32_t published,
			      uint32_t chunk)
{
	if (published != chunk) {
		if (leader)
			nkv_qp_fail(qp, NKV_QP_FAILED_INTERNAL);
		return 0;
	}
	if (leader) {
		nkv_arch_mmio_store_u32(NKV_DEV_PTR(volatile uint32_t, qp->sq_db_addr),
					qp->sq_tail);
		qp->sq_doorbells++;
	}
	return 1;
}

/* A result for a lane whose command did not run (@err, 0: none asked). */
NKV_HD struct nkv_dev_result nkv_result_none(int err)
{
	struct nkv_dev_result res;

	res.dw0 = 0;
	res.status = 0;
	res.cid = NKV_CID_NONE;
	res.err = err;
	return res;
}

/* A ticket that says why nothing went in (@err, 0: nothing asked). */
NKV_HD struct nkv_ticket nkv_ticket_none(int err)
{
	struct nkv_ticket t;

	t.cid = NKV_CID_NONE;
	t.rsvd = 0;
	t.err = err;
	return t;
}

/*
 * Collective (every lane of @w). Each lane with @have puts @p's SQE (its
 * CID field is overwritten) into the SQ; lanes with have = 0 sit out (@p
 * unread), and so does a lane whose builder failed (p.err, which its
 * ticket carries). The batch goes in whole, or, when it exceeds the
 * queue's credit limit, in full-queue chunks (the leader waits for
 * credits rather than ring for a few). Each chunk: the leader reserves;
 * every lane of the chunk derives its CID from the bitmap and the leader
 * takes them; lanes publish and fence; a ballot (the wave barrier)
 * checks every slot got its entry; then the leader writes the SQ tail
 * doorbell once. Every loop here runs the same number of times in every
 * lane. Returns each lane's ticket: the CID its command went in under,
 * or NKV_CID_NONE and why not (the builder's error, or NKV_EIO /
 * NKV_ETIMEDOUT / NKV_ENOSPC for the lanes the queue pair could not take;
 * lanes whose chunk went in before that keep their CID). Several batches
 * may be in flight on one queue pair; nkv_wave_wait() takes them in any
 * order.
 */
NKV_DEV struct nkv_ticket nkv_wave_submit(struct nkv_wave w, struct nkv_dev_qp *qp, int have,
					  struct nkv_prep p)
{
	int send = have && !p.err;
	uint64_t want = nkv_arch_ballot(w.mask, send);
	uint32_t n = nkv_arch_popc64(want);
	uint32_t rank = nkv_arch_popc64(want & ((1ull << w.lane) - 1ull));
	struct nkv_ticket t = nkv_ticket_none(have ? p.err : 0);
	uint32_t done = 0;

	while (done < n) {
		uint64_t g = w.lane == w.leader ? nkv_qp_reserve(qp, n - done) : 0;
		uint32_t chunk, tail;
		int mine, c = 0;

		g = nkv_arch_bcast(w.mask, g, w.leader);
		if (g & NKV_GRANT_ERR) {
			if (send && rank >= done)
				t.err = -(int)(uint32_t)g;
			return t;
		}
		chunk = (uint32_t)g;
		tail = (uint32_t)(g >> 32);
		mine = send && rank >= done && rank < done + chunk;
		if (mine)
			c = nkv_qp_cid_nth(qp, rank - done);
		/* Every lane has read the bitmap; now the leader marks. */
		nkv_arch_wave_barrier(w.mask);
		if (w.lane == w.leader)
			nkv_qp_cids_take(qp, chunk);
		mine = mine && c >= 0;
		if (mine) {
			nkv_lane_publish(qp, p.sqe, (tail + rank - done) % qp->sq_depth, (uint16_t)c);
			t.cid = (uint16_t)c;
		}
		/* Every publishing lane fenced; the ballot is the barrier. */
		if (!nkv_qp_ring_chunk(qp, w.lane == w.leader,
				       nkv_arch_popc64(nkv_arch_ballot(w.mask, mine)), chunk)) {
			if (send && rank >= done)
				t = nkv_ticket_none(nkv_qp_failed_err(qp));
			return t;
		}
		done += chunk;
	}
	return t;
}

/*
 * The end of a wait, per wave: lanes with @have take CID @cid's parked
 * result (the others keep @res); the leader gives the wave's taken CIDs
 * back in one atomic. Collective over @w; the wave and the block wait
 * end with it.
 */
NKV_DEV struct nkv_dev_result nkv_wave_take(struct nkv_wave w, struct nkv_dev_qp *qp, int have,
					    uint32_t cid, struct nkv_dev_result res)
{
	uint64_t taken;

	if (have)
		res = nkv_qp_take(qp, cid);
	taken = nkv_arch_ballot(w.mask, have);
	if (w.lane == w.leader && taken)
		nkv_arch_fetch_add_dev_u32(&qp->cids_held, 0u - nkv_arch_popc64(taken));
	return res;
}

/*
 * Collective (every lane of @w). Lanes whose ticket holds a CID wait for
 * its completion; the leader reaps for everyone (completions come in any
 * order and are parked per CID). Each such lane then takes its result
 * and gives its CID back. The result (struct nkv_dev_result): the
 * ticket's error for a lane whose command never went in; NKV_EINVAL for
 * a CID this queue pair does not hold; NKV_ETIMEDOUT when the poll budget
 * or timeout ran out (the queue pair is now failed); NKV_ENOTCONN when
 * the host marked the controller gone; NKV_EIO when it had failed
 * otherwise; else err 0 and the NVMe status as the controller sent
 * it.
 */
NKV_DEV struct nkv_dev_result nkv_wave_wait(struct nkv_wave w, struct nkv_dev_qp *qp,
					    struct nkv_ticket tk)
{
	struct nkv_dev_cpl *t = NKV_DEV_PTR(struct nkv_dev_cpl, qp->cpl_addr);
	int have = tk.cid != NKV_CID_NONE;
	struct nkv_dev_result res = nkv_result_none(have ? 0 : tk.err);
	uint32_t cid = have ? tk.cid : 0;

	if (nkv_dev_qp_failed(qp)) {
		res.err = have ? nkv_qp_failed_err(qp) : res.err;
		return res;
	}
	if (have && !nkv_qp_cid_held(qp, cid)) {
		have = 0;
		res.err = NKV_EINVAL;
	}
	/* Each pass reaps at least one completion or ends the loop. */
	while (nkv_arch_ballot(w.mask, have && !nkv_arch_load_dev_u32(&t[cid].done))) {
		uint64_t st = 0;

		if (w.lane == w.leader)
			st = (uint32_t)-nkv_qp_progress(qp);
		st = nkv_arch_bcast(w.mask, st, w.leader);
		if (st) {
			/* Lanes whose result did arrive still take it; the
			 * others keep their CIDs until the host resets. */
			if (have && !nkv_arch_load_dev_u32(&t[cid].done)) {
				res.err = -(int)(uint32_t)st;
				have = 0;
			}
			break;
		}
	}
	return nkv_wave_take(w, qp, have, cid, res);
}

/* Collective (every lane of @w): submit then wait, one command per lane
 * with @have; the per-lane result of either step. */
NKV_DEV struct nkv_dev_result nkv_wave_exec(struct nkv_wave w, struct nkv_dev_qp *qp, int have,
					    struct nkv_prep p)
{
	return nkv_wave_wait(w, qp, nkv_wave_submit(w, qp, have, p));
}

/*
 * One call per KV command, collective over @w: build (lanes with @have,
 * through the nkv_dev_*() builders: the queue pair's namespace, value
 * slot @slot), submit the wave's batch with one doorbell, wait, and
 * report each lane's result (Exist and Delete use the slot only for a
 * key in head form). Lanes with have = 0 still call, and their key and
 * slot are not read.
 */
NKV_DEV struct nkv_dev_result nkv_wave_store(struct nkv_wave w, struct nkv_dev_qp *qp, int have,
					     uint32_t slot, const void *key, uint32_t klen,
					     uint32_t opts, uint32_t value_size)
{
	return nkv_wave_exec(w, qp, have,
			     have ? nkv_dev_store(qp, slot, key, klen, opts, value_size)
				  : nkv_prep_err(0));
}

NKV_DEV struct nkv_dev_result nkv_wave_retrieve(struct nkv_wave w, struct nkv_dev_qp *qp,
						int have, uint32_t slot, const void *key,
						uint32_t klen)
{
	return nkv_wave_exec(w, qp, have,
			     have ? nkv_dev_retrieve(qp, slot, key, klen) : nkv_prep_err(0));
}

NKV_DEV struct nkv_dev_result nkv_wave_list(struct nkv_wave w, struct nkv_dev_qp *qp, int have,
					    uint32_t slot, const void *key, uint32_t klen)
{
	return nkv_wave_exec(w, qp, have,
			     have ? nkv_dev_list(qp, slot, key, klen) : nkv_prep_err(0));
}

NKV_DEV struct nkv_dev_result nkv_wave_exist(struct nkv_wave w, struct nkv_dev_qp *qp, int have,
					     uint32_t slot, const void *key, uint32_t klen)
{
	return nkv_wave_exec(w, qp, have,
			     have ? nkv_dev_exist(qp, slot, key, klen) : nkv_prep_err(0));
}

NKV_DEV struct nkv_dev_result nkv_wave_delete(struct nkv_wave w, struct nkv_dev_qp *qp, int have,
					      uint32_t slot, const void *key, uint32_t klen)
{
	return nkv_wave_exec(w, qp, have,
			     have ? nkv_dev_delete(qp, slot, key, klen) : nkv_prep_err(0));
}

#endif /* NKV_DEV_H */
