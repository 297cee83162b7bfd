/* SPDX-License-Identifier: MIT */
/*
 * exec.c - nkv_exec(): the synchronous Exec (83h; docs/exec.md). The
 * queue pair's synchronous buffer holds [u16 klen][key] in its head room
 * and the input at its value, as a head-form Retrieve does; the result
 * comes back over the same bytes, from the head's first one.
 */
#include <errno.h>
#include <string.h>

#include "host/host.h"

/* The namespace says it serves no Exec (a controller that fills no nkvX
 * bytes may still: rados-nkv, so only a said "no" refuses). */
static int nkv_h_exec_refused(const struct nkv_qpair *q)
{
	const struct nkv_ns_ext *e = &q->c->ext;

	if (!e->advertised || e->nsid != q->dev->nsid || e->exec)
		return 0;
	nkv_h_log("Exec: namespace %u does not advertise it (nkvX vendor bytes)", e->nsid);
	return 1;
}

static int nkv_h_exec_args(struct nkv_qpair *q, const void *key, uint32_t klen,
			   const void *in, uint32_t ilen, void *out, uint32_t ocap,
			   uint32_t *olen)
{
	uint64_t buf = nkv_exec_buf_size(klen, ilen, ocap);

	if (!key || !klen || klen > NKV_KEY_MAX || (ilen && !in) || (ocap && !out) || !olen)
		return -EINVAL;
	if (nkv_h_exec_refused(q))
		return -EOPNOTSUPP;
	if (buf - nkv_key_head_size(klen) > nkv_h_xfer_limit(q->c)) {
		nkv_h_log("Exec: a %llu-byte buffer exceeds one transfer (%u bytes)",
			  (unsigned long long)buf, nkv_h_xfer_limit(q->c));
		return -EMSGSIZE;
	}
	return 0;
}

int nkv_exec(struct nkv_qpair *q, const void *key, uint32_t klen, uint32_t op_id,
	     const void *in, uint32_t ilen, void *out, uint32_t ocap, uint32_t *olen)
{
	struct nkv_result res;
	struct nkv_prep p;
	uint32_t hl = nkv_key_head_size(klen), len;
	int rc = nkv_h_sync_pre(q, &res);

	if (!rc)
		rc = nkv_h_exec_args(q, key, klen, in, ilen, out, ocap, olen);
	if (rc)
		return rc;
	len = (uint32_t)(nkv_exec_buf_size(klen, ilen, ocap) - hl);
	rc = nkv_h_qp_sync_room(q, len ? len : 1);
	if (rc)
		return rc;
	if (ilen)
		memcpy((void *)(uintptr_t)q->sslot.addr, in, ilen);
	nkv_key_head_put((uint8_t *)(uintptr_t)(q->sslot.addr - hl), key, klen);
	p = nkv_sqe_exec(q->dev->nsid, klen, op_id, ilen, ocap,
			 nkv_dev_slot_dptr(&q->sslot, hl, len));
	rc = p.err ? p.err : nkv_h_sync_exec(q, &p.sqe, &res);
	if (rc)
		return rc;
	*olen = res.status ? 0 : res.dw0;
	if (!res.status && res.dw0)
		memcpy(out, (const void *)(uintptr_t)(q->sslot.addr - hl),
		       res.dw0 < ocap ? res.dw0 : ocap);
	nkv_h_sync_count(q, &res, res.status ? 0 : (res.dw0 < ocap ? res.dw0 : ocap));
	return res.status;
}
