/* SPDX-License-Identifier: MIT */
/*
 * nkv_dev.h - the device hot path: prepare KV/NVM SQEs, submit them from a
 * wave with one SQ tail doorbell per batch, reap completions by phase and
 * route them to the lanes that own their CIDs.
 *
 * Header only, one implementation for every engine: the arch layer
 * (nkv_arch_hip.h under hipcc, nkv_arch_cuda.h under nvcc, nkv_arch_cpu.h
 * otherwise) supplies lane identity, collectives, fences and atomics; all
 * protocol logic is here. Compiles as C11, C++17, HIP and CUDA.
 *
 * Who may call what (see each function too):
 *  - NKV_HD "pure" functions (SQE prep, List payload, descriptor checks):
 *    any thread, host or device, on its own data.
 *  - nkv_wave_*(): collective. Every active lane of the wave that owns the
 *    queue pair calls it together, converged (no divergent lane may skip
 *    it); lanes with nothing to do pass NULL / have = 0.
 *  - nkv_qp_*(): one lane at a time of the owning wave (the wave functions
 *    pick that lane, the "leader"); never two lanes concurrently.
 *
 * Contract: ONE WAVE OWNS A QUEUE PAIR AT A TIME. The descriptor's ring
 * state (tail, head, phase, counters) is advanced without atomics by the
 * owning wave's leader; two waves on one queue pair corrupt it. Hand a
 * queue pair to another wave only across a kernel boundary (or a
 * device-scope release/acquire the caller provides). The host may read
 * nkv_dev_qp_failed() at any time and everything else after the kernel.
 */
#ifndef NKV_DEV_H
#define NKV_DEV_H

#include "nkv_wire.h"

#if defined(__HIPCC__)
#include "nkv_arch_hip.h"
#elif defined(__CUDACC__)
#include "nkv_arch_cuda.h"
#else
#include "nkv_arch_cpu.h"
#endif

/* ------------------------------------------------------------------ */
/* Error codes: negative Linux errno values, named so device code needs  */
/* no <errno.h>. NVMe status is never folded into these: it travels in   */
/* struct nkv_dev_result unchanged.                                      */
/* ------------------------------------------------------------------ */
#define NKV_EIO (-5)		/* queue pair failed earlier; host must reset it */
#define NKV_EINVAL (-22)	/* bad argument or unknown option bits */
#define NKV_ENOSPC (-28)	/* no free CID: too many results not taken */
#define NKV_ERANGE (-34)	/* a size or block count out of range */
#define NKV_EBADMSG (-74)	/* malformed List payload */
#define NKV_EMSGSIZE (-90)	/* key length outside 1..16 (List: 0..16) */
#define NKV_ENOBUFS (-105)	/* List entry does not fit the buffer */
#define NKV_ETIMEDOUT (-110)	/* poll budget spent; queue pair now failed */

/* ------------------------------------------------------------------ */
/* SQE preparation. Pure: validate everything first, build the entry in a */
/* local, then copy it out whole, so an error never leaves a half-built   */
/* SQE. CID goes in CDW0[31:16]; nkv_wave_submit() overwrites it.         */
/* ------------------------------------------------------------------ */

/* Pack @klen key bytes little-endian into CDW2, CDW3, CDW14, CDW15. */
NKV_HD void nkv_key_pack(struct nkv_sqe *s, const uint8_t *key, uint32_t klen)
{
	uint32_t w[4] = { 0, 0, 0, 0 };
	uint32_t i;

	for (i = 0; i < klen && i < NKV_KEY_MAX; i++)
		w[i / 4] |= (uint32_t)key[i] << (8 * (i % 4));
	s->cdw2 = w[0];
	s->cdw3 = w[1];
	s->cdw14 = w[2];
	s->cdw15 = w[3];
}

NKV_HD void nkv_sqe_zero(struct nkv_sqe *s)
{
	s->cdw0 = s->nsid = s->cdw2 = s->cdw3 = 0;
	s->mptr = s->prp1 = s->prp2 = 0;
	s->cdw10 = s->cdw11 = s->cdw12 = s->cdw13 = s->cdw14 = s->cdw15 = 0;
}

/* Common KV builder; @min_klen is 0 for List, 1 otherwise. */
NKV_HD int nkv_prep_kv(struct nkv_sqe *sqe, uint8_t opc, uint32_t nsid, uint16_t cid,
		       const void *key, uint32_t klen, uint32_t min_klen,
		       uint32_t opts, uint32_t cdw10, uint64_t prp1, uint64_t prp2)
{
	struct nkv_sqe s;

	if (!sqe || (klen && !key))
		return NKV_EINVAL;
	if (klen < min_klen || klen > NKV_KEY_MAX)
		return NKV_EMSGSIZE;
	nkv_sqe_zero(&s);
	s.cdw0 = nkv_sqe_cdw0(opc, cid);
	s.nsid = nsid;
	nkv_key_pack(&s, (const uint8_t *)key, klen);
	s.prp1 = prp1;
	s.prp2 = prp2;
	s.cdw10 = cdw10;
	s.cdw11 = klen | opts;
	*sqe = s;
	return 0;
}

/*
 * Store @value_size bytes at PRP1/PRP2 under @key (1..16 bytes).
 * @opts: NKV_STORE_* bits (CDW11[15:8]); other bits give NKV_EINVAL, and so
 * does MUST_EXIST together with MUST_NOT_EXIST (no key satisfies both).
 */
NKV_HD int nkv_prep_store(struct nkv_sqe *sqe, uint32_t nsid, uint16_t cid,
			  const void *key, uint32_t klen, uint32_t opts,
			  uint32_t value_size, uint64_t prp1, uint64_t prp2)
{
	const uint32_t both = NKV_STORE_MUST_EXIST | NKV_STORE_MUST_NOT_EXIST;

	if ((opts & ~NKV_STORE_OPTIONS_MASK) || (opts & both) == both)
		return NKV_EINVAL;
	return nkv_prep_kv(sqe, NKV_KV_STORE, nsid, cid, key, klen, 1, opts,
			   value_size, prp1, prp2);
}

/* Retrieve @key into a host buffer of @buf_size bytes; CQE DW0 = the full
 * stored size (may exceed @buf_size: the transfer is then truncated). */
NKV_HD int nkv_prep_retrieve(struct nkv_sqe *sqe, uint32_t nsid, uint16_t cid,
			     const void *key, uint32_t klen, uint32_t buf_size,
			     uint64_t prp1, uint64_t prp2)
{
	return nkv_prep_kv(sqe, NKV_KV_RETRIEVE, nsid, cid, key, klen, 1, 0,
			   buf_size, prp1, prp2);
}

/* List keys from @key (klen 0: from the beginning) into @buf_size bytes. */
NKV_HD int nkv_prep_list(struct nkv_sqe *sqe, uint32_t nsid, uint16_t cid,
			 const void *key, uint32_t klen, uint32_t buf_size,
			 uint64_t prp1, uint64_t prp2)
{
	return nkv_prep_kv(sqe, NKV_KV_LIST, nsid, cid, key, klen, 0, 0,
			   buf_size, prp1, prp2);
}

NKV_HD int nkv_prep_delete(struct nkv_sqe *sqe, uint32_t nsid, uint16_t cid,
			   const void *key, uint32_t klen)
{
	return nkv_prep_kv(sqe, NKV_KV_DELETE, nsid, cid, key, klen, 1, 0, 0, 0, 0);
}

NKV_HD int nkv_prep_exist(struct nkv_sqe *sqe, uint32_t nsid, uint16_t cid,
			  const void *key, uint32_t klen)
{
	return nkv_prep_kv(sqe, NKV_KV_EXIST, nsid, cid, key, klen, 1, 0, 0, 0, 0);
}

/* NVM Read/Write (@opc NKV_NVM_READ/WRITE) of @nlb blocks (1..65536) at
 * @slba: CDW10-11 SLBA, CDW12 NLB 0's based. */
NKV_HD int nkv_prep_nvm_rw(struct nkv_sqe *sqe, uint8_t opc, uint32_t nsid,
			   uint16_t cid, uint64_t slba, uint32_t nlb,
			   uint64_t prp1, uint64_t prp2)
{
	struct nkv_sqe s;

	if (!sqe || (opc != NKV_NVM_READ && opc != NKV_NVM_WRITE))
		return NKV_EINVAL;
	if (nlb == 0 || nlb > 65536u)
		return NKV_ERANGE;
	nkv_sqe_zero(&s);
	s.cdw0 = nkv_sqe_cdw0(opc, cid);
	s.nsid = nsid;
	s.prp1 = prp1;
	s.prp2 = prp2;
	s.cdw10 = (uint32_t)slba;
	s.cdw11 = (uint32_t)(slba >> 32);
	s.cdw12 = nlb - 1u;
	*sqe = s;
	return 0;
}

/* ------------------------------------------------------------------ */
/* List payload: u32 count, then per key {u16 length, bytes, zero pad to */
/* 4}. Little-endian, built byte by byte so any host order works.       */
/* ------------------------------------------------------------------ */
struct nkv_list_enc {
	uint8_t *buf;
	uint32_t cap;
	uint32_t len;	/* bytes used, header included */
	uint32_t count;
};

NKV_HD void nkv_le32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

NKV_HD uint32_t nkv_le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Start an empty payload in @buf (@cap bytes, >= 4, else NKV_ENOBUFS). */
NKV_HD int nkv_list_enc_init(struct nkv_list_enc *e, void *buf, uint32_t cap)
{
	if (!e || !buf)
		return NKV_EINVAL;
	if (cap < NKV_LIST_HDR_SIZE)
		return NKV_ENOBUFS;
	e->buf = (uint8_t *)buf;
	e->cap = cap;
	e->len = NKV_LIST_HDR_SIZE;
	e->count = 0;
	nkv_le32_put(e->buf, 0);
	return 0;
}

/* Append one key (1..16 bytes). NKV_ENOBUFS when the whole entry does not
 * fit: the payload is left as it was (only whole entries are returned). */
NKV_HD int nkv_list_enc_add(struct nkv_list_enc *e, const void *key, uint32_t klen)
{
	const uint8_t *k = (const uint8_t *)key;
	uint32_t sz = nkv_list_entry_size(klen), i;
	uint8_t *p;

	if (klen == 0 || klen > NKV_KEY_MAX)
		return NKV_EMSGSIZE;
	if (!k)
		return NKV_EINVAL;
	if (sz > e->cap - e->len)
		return NKV_ENOBUFS;
	p = e->buf + e->len;
	p[0] = (uint8_t)klen;
	p[1] = 0;
	for (i = 0; i < sz - 2u; i++)
		p[2 + i] = i < klen ? k[i] : 0;
	e->len += sz;
	e->count++;
	nkv_le32_put(e->buf, e->count);
	return 0;
}

/* Bytes of payload built so far (header included). */
NKV_HD uint32_t nkv_list_enc_len(const struct nkv_list_enc *e) { return e->len; }

struct nkv_list_dec {
	const uint8_t *buf;
	uint32_t len;
	uint32_t off;
	uint32_t count;	/* entries announced by the header */
	uint32_t seen;	/* entries returned so far */
};

/* Parse the header of a payload of @len valid bytes. */
NKV_HD int nkv_list_dec_init(struct nkv_list_dec *d, const void *buf, uint32_t len)
{
	if (!d || !buf)
		return NKV_EINVAL;
	if (len < NKV_LIST_HDR_SIZE)
		return NKV_EBADMSG;
	d->buf = (const uint8_t *)buf;
	d->len = len;
	d->off = NKV_LIST_HDR_SIZE;
	d->count = nkv_le32_get(d->buf);
	d->seen = 0;
	return 0;
}

/* Next key into @key (16 bytes) and @klen: 1 = got one, 0 = end,
 * NKV_EBADMSG = key length 0 or > 16, entry past @len, non-zero pad. */
NKV_HD int nkv_list_dec_next(struct nkv_list_dec *d, uint8_t key[NKV_KEY_MAX], uint32_t *klen)
{
	const uint8_t *p;
	uint32_t kl, sz, i;

	if (d->seen == d->count)
		return 0;
	if (d->len - d->off < 2u)
		return NKV_EBADMSG;
	p = d->buf + d->off;
	kl = (uint32_t)p[0] | (uint32_t)p[1] << 8;
	if (kl == 0 || kl > NKV_KEY_MAX)
		return NKV_EBADMSG;
	sz = nkv_list_entry_size(kl);
	if (sz > d->len - d->off)
		return NKV_EBADMSG;
	for (i = kl; i < sz - 2u; i++)
		if (p[2 + i])
			return NKV_EBADMSG;
	for (i = 0; i < kl; i++)
		key[i] = p[2 + i];
	*klen = kl;
	d->off += sz;
	d->seen++;
	return 1;
}

/* Validate a whole payload: its key count, or NKV_EBADMSG / NKV_EINVAL. */
NKV_HD int nkv_list_check(const void *buf, uint32_t len)
{
	struct nkv_list_dec d;
	uint8_t key[NKV_KEY_MAX];
	uint32_t kl;
	int r = nkv_list_dec_init(&d, buf, len);

	if (r)
		return r;
	if (d.count > (len - NKV_LIST_HDR_SIZE) / 4u)
		return NKV_EBADMSG;	/* every entry takes >= 4 bytes */
	while ((r = nkv_list_dec_next(&d, key, &kl)) == 1)
		;
	return r ? r : (int)d.count;
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
	uint32_t rsvd;
};
NKV_ASSERT_SIZE(struct nkv_dev_cpl, 16);
NKV_ASSERT_OFF(struct nkv_dev_cpl, dw0, 0);
NKV_ASSERT_OFF(struct nkv_dev_cpl, status, 4);
NKV_ASSERT_OFF(struct nkv_dev_cpl, done, 8);

/*
 * A value buffer the host registered; PRPs built by the host. NVMe reads
 * PRP2 by the transfer's length: unused within one page, a data page when
 * the transfer ends in the second page, a PRP list beyond. The host fills
 * both candidates; nkv_dev_slot_prp2() picks per command.
 */
struct nkv_dev_slot {
	uint64_t addr;		/* device-visible address of the buffer */
	uint64_t prp1;		/* controller address of the first page */
	uint64_t prp2;		/* PRP list (> 2 pages), else the second page, or 0 */
	uint64_t page2;		/* controller address of the second page, or 0 */
	uint32_t size;		/* bytes */
	uint32_t rsvd;
};
NKV_ASSERT_SIZE(struct nkv_dev_slot, 40);
NKV_ASSERT_OFF(struct nkv_dev_slot, addr, 0);
NKV_ASSERT_OFF(struct nkv_dev_slot, prp1, 8);
NKV_ASSERT_OFF(struct nkv_dev_slot, prp2, 16);
NKV_ASSERT_OFF(struct nkv_dev_slot, page2, 24);
NKV_ASSERT_OFF(struct nkv_dev_slot, size, 32);

/* Why a queue pair stopped (nkv_dev_qp.failed). */
enum nkv_qp_state {
	NKV_QP_OK = 0,
	NKV_QP_FAILED_TIMEOUT = 1,	/* poll budget spent: controller may still DMA */
	NKV_QP_FAILED_BAD_CQE = 2,	/* CQE for a CID not in flight, or bad SQ head */
	NKV_QP_FAILED_INTERNAL = 3,	/* a lane could not publish its SQE */
};

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
	uint32_t rsvd0;
	/* State, advanced by the owning wave's leader lane. */
	uint32_t sq_tail;	/* next SQ slot to fill */
	uint32_t sq_head;	/* last SQ head the controller reported (CQE DW2) */
	uint32_t cq_head;	/* next CQ entry to look at */
	uint32_t cq_phase;	/* phase a new entry at cq_head carries */
	uint32_t inflight;	/* submitted, CQE not yet reaped */
	uint32_t cids_held;	/* CIDs allocated: in flight or result not taken */
	uint32_t failed;	/* enum nkv_qp_state; host resets */
	uint32_t rsvd1;
};
NKV_ASSERT_SIZE(struct nkv_dev_qp, 128);
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
NKV_ASSERT_OFF(struct nkv_dev_qp, rsvd0, 92);
NKV_ASSERT_OFF(struct nkv_dev_qp, sq_tail, 96);
NKV_ASSERT_OFF(struct nkv_dev_qp, sq_head, 100);
NKV_ASSERT_OFF(struct nkv_dev_qp, cq_head, 104);
NKV_ASSERT_OFF(struct nkv_dev_qp, cq_phase, 108);
NKV_ASSERT_OFF(struct nkv_dev_qp, inflight, 112);
NKV_ASSERT_OFF(struct nkv_dev_qp, cids_held, 116);
NKV_ASSERT_OFF(struct nkv_dev_qp, failed, 120);
NKV_ASSERT_OFF(struct nkv_dev_qp, rsvd1, 124);

/* What a lane gets back for one command. */
struct nkv_dev_result {
	uint32_t dw0;		/* CQE DW0: Retrieve's stored value length */
	uint16_t status;	/* NVMe status unchanged: nkv_status_sct/sc() */
	uint16_t cid;
};

#define NKV_WAVE_MAX 64u	/* lanes in the widest wave (AMD CDNA) */
#define NKV_CID_MAX 65535u	/* CID 0xffff is never handed out */
#define NKV_QDEPTH_MAX 65536u

/* Host, any thread: the credit limit for the given depths. */
NKV_HD uint32_t nkv_dev_credit_limit(uint32_t sq_depth, uint32_t cq_depth)
{
	return (sq_depth < cq_depth ? sq_depth : cq_depth) - 1u;
}

/* Host, before handing the descriptor over: every setup field sane. */
NKV_HD int nkv_dev_qp_check(const struct nkv_dev_qp *qp)
{
	uint32_t dmax;

	if (!qp || !qp->sq_addr || !qp->cq_addr || !qp->sq_db_addr ||
	    !qp->cq_db_addr || !qp->cid_bitmap_addr || !qp->cpl_addr)
		return NKV_EINVAL;
	if (qp->sq_depth < 2 || qp->cq_depth < 2 || qp->sq_depth > NKV_QDEPTH_MAX ||
	    qp->cq_depth > NKV_QDEPTH_MAX)
		return NKV_ERANGE;
	dmax = qp->sq_depth > qp->cq_depth ? qp->sq_depth : qp->cq_depth;
	if (qp->credit_limit != nkv_dev_credit_limit(qp->sq_depth, qp->cq_depth) ||
	    qp->cid_count < dmax || qp->cid_count > NKV_CID_MAX ||
	    (qp->nr_slots && !qp->slots_addr) || qp->poll_budget == 0)
		return NKV_ERANGE;
	if (qp->sq_tail >= qp->sq_depth || qp->sq_head >= qp->sq_depth ||
	    qp->cq_head >= qp->cq_depth || qp->cq_phase > 1)
		return NKV_ERANGE;
	return 0;
}

/* Any thread (host threads included), any time: NKV_QP_OK or why the
 * queue pair stopped. A relaxed atomic load: it only reports. */
NKV_DEV uint32_t nkv_dev_qp_failed(const struct nkv_dev_qp *qp)
{
	return nkv_arch_load_relaxed_u32(&qp->failed);
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

/* Store / Retrieve through value slot @i (its host-built PRPs). */
NKV_HD int nkv_prep_store_slot(struct nkv_sqe *sqe, const struct nkv_dev_qp *qp,
			       uint32_t i, uint32_t nsid, const void *key,
			       uint32_t klen, uint32_t opts, uint32_t value_size)
{
	const struct nkv_dev_slot *s = nkv_dev_slot_get(qp, i);

	if (!s)
		return NKV_EINVAL;
	if (value_size > s->size)
		return NKV_ERANGE;
	return nkv_prep_store(sqe, nsid, 0, key, klen, opts, value_size, s->prp1,
			      nkv_dev_slot_prp2(s, value_size));
}

NKV_HD int nkv_prep_retrieve_slot(struct nkv_sqe *sqe, const struct nkv_dev_qp *qp,
				  uint32_t i, uint32_t nsid, const void *key, uint32_t klen)
{
	const struct nkv_dev_slot *s = nkv_dev_slot_get(qp, i);

	if (!s)
		return NKV_EINVAL;
	return nkv_prep_retrieve(sqe, nsid, 0, key, klen, s->size, s->prp1,
				 nkv_dev_slot_prp2(s, s->size));
}

/* List from @key (@klen 0: the beginning) into value slot @i, all of it. */
NKV_HD int nkv_prep_list_slot(struct nkv_sqe *sqe, const struct nkv_dev_qp *qp,
			      uint32_t i, uint32_t nsid, const void *key, uint32_t klen)
{
	const struct nkv_dev_slot *s = nkv_dev_slot_get(qp, i);

	if (!s)
		return NKV_EINVAL;
	return nkv_prep_list(sqe, nsid, 0, key, klen, s->size, s->prp1,
			     nkv_dev_slot_prp2(s, s->size));
}

/* ------------------------------------------------------------------ */
/* Leader-only queue operations: one lane of the owning wave at a time.  */
/* ------------------------------------------------------------------ */

NKV_DEV void nkv_qp_fail(struct nkv_dev_qp *qp, uint32_t why)
{
	/* Relaxed atomic: the host may poll it while the kernel runs. */
	nkv_arch_store_relaxed_u32(&qp->failed, why);
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
	uint32_t held = nkv_arch_load_relaxed_u32(&qp->cids_held);
	uint32_t c = qp->credit_limit - qp->inflight;
	uint32_t s = nkv_qp_sq_free(qp);

	c = s < c ? s : c;
	return qp->cid_count - held < c ? qp->cid_count - held : c;
}

/* Is @cid a CID this queue pair handed out and still holds? */
NKV_DEV int nkv_qp_cid_held(struct nkv_dev_qp *qp, uint32_t cid)
{
	const uint64_t *bm = NKV_DEV_PTR(const uint64_t, qp->cid_bitmap_addr);

	return cid < qp->cid_count &&
	       (nkv_arch_load_relaxed_u64(&bm[cid / 64]) >> (cid % 64) & 1u);
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
 * Order per entry: one wide copy; if its phase is new, acquire fence and
 * read the entry again (phase first, acquire), because the copy may have
 * caught DW0 before the controller wrote it and DW3 after (the torn CQE).
 */
NKV_DEV int nkv_qp_reap(struct nkv_dev_qp *qp, uint32_t max)
{
	struct nkv_cqe *cq = NKV_DEV_PTR(struct nkv_cqe, qp->cq_addr);
	uint32_t n = 0;
	int err = 0;

	while (n < max) {
		struct nkv_cqe *e = &cq[qp->cq_head];
		struct nkv_cqe c;

		nkv_arch_load_cqe(&c, e);
		if (nkv_cqe_phase(c.dw3) != qp->cq_phase)
			break;
		nkv_arch_fence_acquire();
		c.dw3 = nkv_arch_load_acquire_u32(&e->dw3);
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
	}
	return err ? err : (int)n;
}

/* Reap until at least one CQE arrived (0), or NKV_ETIMEDOUT after
 * poll_budget empty polls (the queue pair is then failed), or NKV_EIO. */
NKV_DEV int nkv_qp_progress(struct nkv_dev_qp *qp)
{
	uint64_t polls;
	int r;

	for (polls = 0;; polls++) {
		if (nkv_dev_qp_failed(qp))
			return NKV_EIO;
		if (qp->inflight == 0)
			return NKV_EINVAL;	/* nothing can ever arrive */
		r = nkv_qp_reap(qp, qp->cq_depth);
		if (r)
			return r < 0 ? r : 0;
		if (polls >= qp->poll_budget) {
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
 * error. Returns the grant.
 */
NKV_DEV uint64_t nkv_qp_reserve(struct nkv_dev_qp *qp, uint32_t want)
{
	uint32_t target = want < qp->credit_limit ? want : qp->credit_limit;
	uint32_t credits = 0, tail;
	int r = 0;

	for (;;) {
		if (nkv_dev_qp_failed(qp)) {
			r = NKV_EIO;
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
	nkv_arch_fetch_add_u32(&qp->cids_held, credits);
	qp->inflight += credits;
	qp->sq_tail = (tail + credits) % qp->sq_depth;
	return (uint64_t)tail << 32 | credits;
}

/* Any lane of the owning wave: take a free CID (the leader reserved one
 * for this lane, so one exists; lanes race only with each other). */
NKV_DEV int nkv_qp_cid_alloc(struct nkv_dev_qp *qp, uint32_t hint)
{
	uint64_t *bm = NKV_DEV_PTR(uint64_t, qp->cid_bitmap_addr);
	uint32_t words = (qp->cid_count + 63u) / 64u, i, pass;

	for (pass = 0; pass < 2u * NKV_WAVE_MAX + 2u; pass++) {
		for (i = 0; i < words; i++) {
			uint32_t w = (hint / 64u + i) % words;
			uint32_t valid = qp->cid_count - w * 64u;
			uint64_t vmask = valid >= 64u ? ~0ull : (1ull << valid) - 1ull;
			uint64_t free = ~nkv_arch_load_relaxed_u64(&bm[w]) & vmask;
			uint64_t bit;

			if (!free)
				continue;
			bit = free & (0ull - free);
			if (!(nkv_arch_fetch_or_u64(&bm[w], bit) & bit))
				return (int)(w * 64u + nkv_arch_ffs64(bit));
		}
	}
	return NKV_ENOSPC;
}

/* The lane that owns @cid gives it back after taking its result. */
NKV_DEV void nkv_qp_cid_free(struct nkv_dev_qp *qp, uint32_t cid)
{
	uint64_t *bm = NKV_DEV_PTR(uint64_t, qp->cid_bitmap_addr);

	nkv_arch_fetch_and_u64(&bm[cid / 64u], ~(1ull << (cid % 64u)));
	nkv_arch_fetch_add_u32(&qp->cids_held, (uint32_t)-1);
}

/* A lane writes its SQE into its slot: CID in, wide stores, then its own
 * release fence at system scope (the leader's fence cannot order it). */
NKV_DEV int nkv_lane_publish(struct nkv_dev_qp *qp, struct nkv_sqe *sqe,
			     uint32_t slot, uint16_t *cid)
{
	struct nkv_sqe *sq = NKV_DEV_PTR(struct nkv_sqe, qp->sq_addr);
	int c = nkv_qp_cid_alloc(qp, slot);

	if (c < 0)
		return c;
	sqe->cdw0 = (sqe->cdw0 & 0xffffu) | (uint32_t)c << 16;
	nkv_arch_store_sqe(&sq[slot], sqe);
	nkv_arch_fence_release();
	*cid = (uint16_t)c;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Wave collectives                                                      */
/* ------------------------------------------------------------------ */

/*
 * Collective (the owning wave, converged). Each lane with an SQE (@sqe not
 * NULL; its CID field is overwritten) gets it into the SQ and its CID in
 * @cid; lanes pass NULL to sit out. The batch goes in whole, or, when it
 * exceeds the queue's credit limit, in full-queue chunks (the leader waits
 * for credits rather than ring for a few); each chunk: lanes publish and
 * fence, wave barrier,
 * then one lane writes the SQ tail doorbell once. Waits while the queue is
 * full. Returns 0, or (same in every lane) NKV_EIO / NKV_ETIMEDOUT /
 * NKV_ENOSPC; lanes whose SQE went in before an error still own their CID.
 */
NKV_DEV int nkv_wave_submit(struct nkv_dev_qp *qp, struct nkv_sqe *sqe, uint16_t *cid)
{
	uint32_t lane = nkv_arch_lane_id();
	uint64_t want = nkv_arch_ballot(sqe != NULL);
	uint32_t leader = nkv_arch_ffs64(want);
	uint32_t n = nkv_arch_popc64(want);
	uint32_t rank = nkv_arch_popc64(want & ((1ull << lane) - 1ull));
	uint32_t done = 0;

	while (done < n) {
		uint64_t g = lane == leader ? nkv_qp_reserve(qp, n - done) : 0;
		uint32_t chunk, tail, ok;
		int mine;

		g = nkv_arch_bcast(g, leader);
		if (g & NKV_GRANT_ERR)
			return -(int)(uint32_t)g;
		chunk = (uint32_t)g;
		tail = (uint32_t)(g >> 32);
		mine = sqe && rank >= done && rank < done + chunk;
		if (mine)
			mine = !nkv_lane_publish(qp, sqe, (tail + rank - done) % qp->sq_depth, cid);
		/* Every publishing lane fenced; now they all wait for each other. */
		nkv_arch_wave_barrier();
		ok = nkv_arch_popc64(nkv_arch_ballot(mine));
		if (ok != chunk) {
			/* A slot holds no fresh SQE: never ring it in. */
			if (lane == leader)
				nkv_qp_fail(qp, NKV_QP_FAILED_INTERNAL);
			return NKV_EIO;
		}
		if (lane == leader)
			nkv_arch_mmio_store_u32(NKV_DEV_PTR(volatile uint32_t, qp->sq_db_addr),
						qp->sq_tail);
		done += chunk;
	}
	return 0;
}

/*
 * Collective (the owning wave, converged). Lanes with @have wait for the
 * completion of @cid; a lane still waiting leads and reaps for everyone
 * (completions come in any order and are parked per CID). Each such lane
 * then takes its result (@res) and gives its CID back. Returns 0 (look at
 * res->status for the NVMe status), NKV_EINVAL for a CID this queue pair
 * does not hold, NKV_ETIMEDOUT when the poll budget ran out (the queue pair
 * is now failed), NKV_EIO when it had failed already.
 */
NKV_DEV int nkv_wave_wait(struct nkv_dev_qp *qp, int have, uint16_t cid,
			  struct nkv_dev_result *res)
{
	struct nkv_dev_cpl *t = NKV_DEV_PTR(struct nkv_dev_cpl, qp->cpl_addr);
	uint32_t lane = nkv_arch_lane_id();
	int err = 0;

	if (nkv_dev_qp_failed(qp))
		return NKV_EIO;
	if (have && !nkv_qp_cid_held(qp, cid)) {
		have = 0;
		err = NKV_EINVAL;
	}
	for (;;) {
		uint64_t m = nkv_arch_ballot(have && !t[cid].done);
		uint32_t leader = nkv_arch_ffs64(m);
		uint64_t st = 0;

		if (!m)
			break;
		if (lane == leader)
			st = (uint32_t)-nkv_qp_progress(qp);
		st = nkv_arch_bcast(st, leader);
		if (st) {
			/* Lanes whose result did arrive still take it; the
			 * others keep their CIDs until the host resets. */
			if (have && !t[cid].done) {
				err = -(int)(uint32_t)st;
				have = 0;
			}
			break;
		}
	}
	if (have) {
		res->dw0 = t[cid].dw0;
		res->status = (uint16_t)t[cid].status;
		res->cid = cid;
		t[cid].done = 0;
		nkv_qp_cid_free(qp, cid);
	}
	return err;
}

/* Collective: submit (sqe may be NULL) then wait; one command per lane. */
NKV_DEV int nkv_wave_exec(struct nkv_dev_qp *qp, struct nkv_sqe *sqe,
			  struct nkv_dev_result *res)
{
	uint16_t cid = 0;
	int err = nkv_wave_submit(qp, sqe, &cid);
	int w = nkv_wave_wait(qp, sqe && !err, cid, res);

	return err ? err : w;
}

#endif /* NKV_DEV_H */
