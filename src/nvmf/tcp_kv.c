/* SPDX-License-Identifier: MIT */
/* tcp_kv.c - KV commands shaped for NVMe/TCP (tcp_host.h, docs/wire.md). */
#include <errno.h>
#include <string.h>

#include "nvmf/tcp_host.h"

static void nkv_nvmf_key_inline(struct nkv_sqe *s, const uint8_t *key, uint32_t klen)
{
	uint8_t k[16] = { 0 };

	if (klen)	/* a List from the beginning may pass no key */
		memcpy(k, key, klen);
	memcpy(&s->cdw2, k, 4);
	memcpy(&s->cdw3, k + 4, 4);
	memcpy(&s->cdw14, k + 8, 4);
	memcpy(&s->cdw15, k + 12, 4);
}

/* Store: value alone, or [head][value] as one transfer, in-capsule when
 * it fits. */
static void nkv_nvmf_kv_store(struct nkv_nvmf_cmd *c, uint32_t icd_max, const uint8_t *key,
			      uint32_t klen, uint8_t *data, uint32_t len)
{
	uint8_t *p = data;
	uint32_t n = len;

	if (klen > NKV_KEY_INLINE_MAX) {
		p = data - nkv_key_head_size(klen);
		nkv_key_head_put(p, key, klen);
		n += nkv_key_head_size(klen);
	}
	if (n && n <= icd_max) {
		c->icd = p;
		c->icd_len = n;
	} else if (n) {
		c->h2c = p;
		c->h2c_len = n;
	}
}

int nkv_nvmf_kv_prep(struct nkv_nvmf_cmd *c, uint32_t icd_max, uint8_t opc, uint32_t nsid,
		     const uint8_t *key, uint32_t klen, uint8_t *head, uint8_t *data,
		     uint32_t len, uint32_t opts, uint32_t cdw12)
{
	int inl = klen <= NKV_KEY_INLINE_MAX;

	if (klen > NKV_KEY_MAX || (!klen && opc != NKV_KV_LIST))
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->sqe.cdw0 = opc;
	c->sqe.nsid = nsid;
	c->sqe.cdw10 = len;
	c->sqe.cdw12 = cdw12;
	c->sqe.cdw11 = (inl ? klen : 0) | opts;
	if (inl)
		nkv_nvmf_key_inline(&c->sqe, key, klen);
	if (opc == NKV_KV_STORE) {
		nkv_nvmf_kv_store(c, icd_max, key, klen, data, len);
		return 0;
	}
	if (!inl) {
		nkv_key_head_put(head, key, klen);
		c->icd = head;
		c->icd_len = nkv_key_head_size(klen);
		if (opc == NKV_KV_LIST)
			c->sqe.cdw11 |= NKV_LIST_KEY_HEAD;
	}
	if (opc == NKV_KV_RETRIEVE || opc == NKV_KV_LIST) {
		c->c2h = data;
		c->c2h_len = len;
	}
	return 0;
}

int nkv_nvmf_exec_prep(struct nkv_nvmf_cmd *c, uint32_t icd_max, uint32_t nsid,
		       const uint8_t *key, uint32_t klen, uint32_t op_id, uint8_t *in_buf,
		       uint32_t ilen, uint8_t *out, uint32_t ocap)
{
	uint32_t hl = nkv_key_head_size(klen);

	if (!klen || klen > NKV_KEY_MAX || (ocap && !out))
		return -EINVAL;
	/* Data both ways: the input part only in the capsule (docs/wire.md). */
	if ((uint64_t)hl + ilen > icd_max)
		return -EMSGSIZE;
	memset(c, 0, sizeof(*c));
	c->sqe.cdw0 = NKV_KV_EXEC;
	c->sqe.nsid = nsid;
	c->sqe.cdw10 = ilen;
	c->sqe.cdw12 = ocap;
	c->sqe.cdw13 = op_id;
	nkv_key_head_put(in_buf, key, klen);
	c->icd = in_buf;
	c->icd_len = hl + ilen;
	c->c2h = out;
	c->c2h_len = ocap;
	return 0;
}
