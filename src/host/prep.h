/* SPDX-License-Identifier: MIT */
/*
 * prep.h - the pointer forms of nkv_dev.h's SQE builders, for host code
 * (library-private; tests include it with -Isrc). Device code calls the
 * by-value builders nkv_sqe_*() and never takes an entry's address; the
 * host writes the entry straight into a ring slot or a local, and the
 * synchronous API (sync.c) sets its own CID. Pure: any thread, on its
 * own data.
 */
#ifndef NKV_HOST_PREP_H
#define NKV_HOST_PREP_H

#include "nkv_dev.h"

/* NKV_EINVAL for a NULL @sqe; otherwise the builder's entry (with @cid in
 * CDW0[31:16] when it succeeded) and error. */
static inline int nkv_prep_out(struct nkv_sqe *sqe, uint16_t cid, struct nkv_prep p)
{
	if (!sqe)
		return NKV_EINVAL;
	if (!p.err)
		p.sqe.cdw0 |= (uint32_t)cid << 16;
	*sqe = p.sqe;
	return p.err;
}

static inline int nkv_prep_store(struct nkv_sqe *sqe, uint32_t nsid, uint16_t cid,
				 const void *key, uint32_t klen, uint32_t opts,
				 uint32_t value_size, uint64_t prp1, uint64_t prp2)
{
	return nkv_prep_out(sqe, cid, nkv_sqe_store(nsid, key, klen, opts, value_size, prp1, prp2));
}

static inline int nkv_prep_retrieve(struct nkv_sqe *sqe, uint32_t nsid, uint16_t cid,
				    const void *key, uint32_t klen, uint32_t buf_size,
				    uint64_t prp1, uint64_t prp2)
{
	return nkv_prep_out(sqe, cid, nkv_sqe_retrieve(nsid, key, klen, buf_size, prp1, prp2));
}

static inline int nkv_prep_list(struct nkv_sqe *sqe, uint32_t nsid, uint16_t cid,
				const void *key, uint32_t klen, uint32_t buf_size,
				uint64_t prp1, uint64_t prp2)
{
	return nkv_prep_out(sqe, cid, nkv_sqe_list(nsid, key, klen, buf_size, prp1, prp2));
}

static inline int nkv_prep_delete(struct nkv_sqe *sqe, uint32_t nsid, uint16_t cid,
				  const void *key, uint32_t klen)
{
	return nkv_prep_out(sqe, cid, nkv_sqe_delete(nsid, key, klen));
}

static inline int nkv_prep_exist(struct nkv_sqe *sqe, uint32_t nsid, uint16_t cid,
				 const void *key, uint32_t klen)
{
	return nkv_prep_out(sqe, cid, nkv_sqe_exist(nsid, key, klen));
}

/* Exec (83h): the caller has written [u16 klen][key][input] at PRP1's
 * data (nkv_exec_buf_size(klen, ilen, ocap) bytes, PRP2 as for any
 * transfer that long); the result comes back over it. */
static inline int nkv_prep_exec(struct nkv_sqe *sqe, uint32_t nsid, uint16_t cid, uint32_t klen,
				uint32_t op_id, uint32_t ilen, uint32_t ocap, uint64_t prp1,
				uint64_t prp2)
{
	return nkv_prep_out(sqe, cid, nkv_sqe_exec(nsid, klen, op_id, ilen, ocap,
						   nkv_dptr_prp(prp1, prp2)));
}

static inline int nkv_prep_nvm_rw(struct nkv_sqe *sqe, uint8_t opc, uint32_t nsid,
				  uint16_t cid, uint64_t slba, uint32_t nlb,
				  uint64_t prp1, uint64_t prp2)
{
	return nkv_prep_out(sqe, cid, nkv_sqe_nvm_rw(opc, nsid, slba, nlb, prp1, prp2));
}

#endif /* NKV_HOST_PREP_H */
