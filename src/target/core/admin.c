/* SPDX-License-Identifier: MIT */
/*
 * admin.c - admin commands: Identify, queue management, features, logs,
 * Abort. They run synchronously on the poll thread (no backend involved
 * except for NUSE), and complete through the same CQ path as I/O.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "exec_if.h"
#include "poller.h"

#define NKV_TGT_ID_SIZE 4096u
#define NKV_CNS_CS_INDEP_NS 0x08	/* I/O command set independent namespace */

/* Zeros after the reply's bytes, a chunk at a time. */
static int nkv_tgt_reply_zeros(struct nkv_tgt_cmd *cmd, uint64_t off, uint64_t len)
{
	static const uint8_t zero[64 << 10];

	for (; off < len; off += sizeof(zero))
		if (nkv_guard_scatter_at(cmd->iov, cmd->iovcnt, off, zero,
					 len - off < sizeof(zero) ? len - off : sizeof(zero)))
			return -EFAULT;
	return 0;
}

/*
 * Copy a reply into the command's data pointer (controller -> host):
 * blen bytes of buf, then zeros up to len (a log page read past its end),
 * so nothing here grows with the transfer a client asks for (up to MDTS,
 * 128 MiB).
 */
static uint16_t nkv_tgt_reply(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd,
			      const void *buf, uint64_t blen, uint64_t len)
{
	int st = nkv_tgt_cmd_dptr(c, cmd, len, NKV_DMA_WRITE, 0);

	if (st)
		return (uint16_t)st;
	if (nkv_guard_scatter(cmd->iov, cmd->iovcnt, buf, blen < len ? blen : len) ||
	    nkv_tgt_reply_zeros(cmd, blen, len)) {
		cmd->iovcnt = 0;
		nkv_tgt_mem_lost(c);
		return nkv_tgt_sc(NKV_SC_DATA_XFER_ERROR);
	}
	cmd->produced = len;
	st = nkv_tgt_xfer_out(c, cmd);
	cmd->iovcnt = 0;	/* transfer done: memory no longer busy */
	return (uint16_t)st;
}

/* Stable per-namespace identifier (NGUID / UUID) from SN and nsid. */
static void nkv_tgt_ns_guid(struct nkv_tgt_ctrl *c, uint32_t nsid, uint8_t g[16])
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < sizeof(c->ss->sn); i++)
		h = (h ^ (uint8_t)c->ss->sn[i]) * 16777619u;
	memcpy(g, "nkv-tgt\0", 8);
	memcpy(g + 8, &h, 4);
	g[12] = (uint8_t)(nsid >> 24);
	g[13] = (uint8_t)(nsid >> 16);
	g[14] = (uint8_t)(nsid >> 8);
	g[15] = (uint8_t)nsid;
}

static void nkv_tgt_put16(void *base, uint32_t off, uint16_t v)
{
	memcpy((uint8_t *)base + off, &v, sizeof(v));
}

static void nkv_tgt_put32(void *base, uint32_t off, uint32_t v)
{
	memcpy((uint8_t *)base + off, &v, sizeof(v));
}

/*
 * What a fabrics host reads besides: the capsule sizes (a command capsule
 * of IOCCSZ * 16 bytes, the SQE included, so in-capsule data up to
 * NKV_TGT_ICD_IO; 16-byte response capsules), in-capsule data right after
 * the SQE (ICDOFF 0), one SGL Data Block per command (MSDBD), SGLs whose
 * address is an offset into the capsule (bit 20) and the Transport SGL
 * Data Block (bit 21), Keep Alive at 100 ms granularity, the discovery
 * controller's type and NQN.
 */
static void nkv_tgt_id_ctrl_fabrics(struct nkv_tgt_ctrl *c, struct nkv_id_ctrl *id)
{
	nkv_tgt_put32(id, NKV_ID_IOCCSZ, (64 + NKV_TGT_ICD_IO) / 16);
	nkv_tgt_put32(id, NKV_ID_IORCSZ, 1);
	nkv_tgt_put16(id, NKV_ID_ICDOFF, 0);
	((uint8_t *)id)[NKV_ID_FCATT] = 0;	/* the dynamic controller model */
	((uint8_t *)id)[NKV_ID_MSDBD] = 1;
	nkv_tgt_put16(id, NKV_ID_KAS, 1);
	id->sgls = NKV_SGLS_SUPPORTED | NKV_SGLS_OFFSET | NKV_SGLS_TRANSPORT;
	id->vid = 0;
	id->ssvid = 0;
	if (c->ss->discovery) {
		id->cntrltype = 2;	/* a discovery controller */
		id->nn = 0;
		id->mdts = 0;
	}
}

static void nkv_tgt_id_ctrl(struct nkv_tgt_ctrl *c, struct nkv_id_ctrl *id)
{
	id->vid = NKV_TGT_VID;
	id->ssvid = NKV_TGT_VID;
	memcpy(id->sn, c->ss->sn, sizeof(id->sn));
	memcpy(id->mn, c->ss->mn, sizeof(id->mn));
	memcpy(id->fr, "0.1     ", sizeof(id->fr));
	id->mdts = (uint8_t)c->mdts;
	id->cntlid = c->cntlid;
	id->ver = NKV_VS(2, 0, 0);
	id->ctratt = 0;		/* none of the optional attributes */
	id->cntrltype = 1;	/* I/O controller */
	/* SGLs of byte-aligned Data Blocks, Segments and Last Segments,
	 * describing the transfer or more (unless the options say else). */
	id->sgls = c->sgls;
	id->acl = 3;		/* Abort limit 4 (0's based) */
	id->elpe = NKV_TGT_ERRLOG - 1;
	id->sqes = 0x66;
	id->cqes = 0x44;
	id->maxcmd = (uint16_t)(c->mqes > 0xffff ? 0xffff : c->mqes);
	id->nn = NKV_TGT_MAX_NS;
	id->oncs = 0;
	id->aerl = NKV_TGT_AERL - 1;
	/* Namespace Attribute Notices: namespace_add/remove (ns.h). */
	id->oaes = c->ss->discovery ? 0 : NKV_OAES_NS_ATTR;
	/* Log page 05h: Linux takes a KV namespace (as /dev/ngXnY) after it. */
	id->lpa = c->ss->discovery ? 0 : NKV_LPA_CMD_EFFECTS;
	memcpy(id->subnqn, c->ss->subnqn, sizeof(id->subnqn));
	if (c->capsule)
		nkv_tgt_id_ctrl_fabrics(c, id);
}

static void nkv_tgt_id_ns_nvm(struct nkv_tgt_ctrl *c, uint32_t nsid,
			      struct nkv_be *be, struct nkv_id_ns_nvm *id)
{
	uint8_t lbads = 0;

	while ((1u << lbads) < be->block_size)
		lbads++;
	id->nsze = be->capacity;
	id->ncap = be->capacity;
	id->nuse = be->capacity;
	id->nlbaf = 0;
	id->flbas = 0;
	id->lbaf[0].lbads = lbads;
	nkv_tgt_ns_guid(c, nsid, id->nguid);
}

/* nkv's vendor bytes (struct nkv_kv_vs): what this namespace honours
 * beyond the KV command set, so a host sends vendor bits only here. */
static void nkv_tgt_kv_vs(const struct nkv_be *be, int ro, uint8_t vs[256])
{
	struct nkv_kv_vs v;

	memset(&v, 0, sizeof(v));
	memcpy(v.sig, NKV_KV_VS_SIG, sizeof(v.sig));
	v.ver = NKV_KV_VS_VER;
	/* Every backend answers a Retrieve of 0 bytes with the size (backend.h). */
	v.flags = NKV_KV_VS_SIZE_QUERY | (ro ? NKV_KV_VS_READ_ONLY : 0) |
		  (nkv_tgt_exec_offered_on(be) ? NKV_KV_VS_EXEC : 0);
	v.store_opts = be->store_opts & NKV_STORE_VENDOR_MASK;
	v.max_ttl = 0;	/* any u32 */
	v.cmd_timeout_ms = be->cmd_timeout_ms;	/* the backend's own bound */
	memcpy(vs, &v, sizeof(v));
}

/* Write-protected for this client: the namespace's own, or its ro access. */
static int nkv_tgt_ns_ro(struct nkv_tgt_ctrl *c, uint32_t nsid, const struct nkv_be *be)
{
	return be->read_only || nkv_tgt_access(c, nsid) == NKV_ACCESS_RO;
}

static void nkv_tgt_id_ns_kv(struct nkv_tgt_ctrl *c, uint32_t nsid,
			     struct nkv_be *be, struct nkv_id_ns_kv *id)
{
	id->nsze = be->capacity;
	id->nuse = be->ops->bytes_used(be);
	id->nkvf = 0;		/* one KV format */
	id->kvf[0].kml = (uint16_t)c->kml;	/* 17..255 bytes in head form */
	id->kvf[0].mvl = be->max_value;
	id->kvf[0].mnk = be->max_keys;
	id->nsattr = nkv_tgt_ns_ro(c, nsid, be) ? NKV_NSATTR_WRITE_PROTECTED : 0;
	nkv_tgt_ns_guid(c, nsid, id->nguid);
	nkv_tgt_kv_vs(be, nkv_tgt_ns_ro(c, nsid, be), id->vs);
}

/* Active namespace list (CNS 02h / 07h): nsids above start, ascending. */
static uint16_t nkv_tgt_id_list(struct nkv_tgt_ctrl *c, uint32_t start, int csi,
				uint32_t *list)
{
	struct nkv_be *be;
	uint32_t n = 0, i;

	if (start >= 0xfffffffeu)
		return nkv_tgt_sc(NKV_SC_INVALID_NS);
	for (i = start + 1; i <= NKV_TGT_MAX_NS; i++) {
		if (nkv_tgt_access(c, i) == NKV_ACCESS_NONE)
			continue;	/* absent for this client */
		be = nkv_subsys_ns_get(c->ss, i);	/* may come or go meanwhile */
		if (be && (csi < 0 || be->csi == csi))
			list[n++] = i;
		if (be)
			nkv_subsys_ns_put(c->ss, i);
	}
	return 0;
}

/* Namespace Identification Descriptor list (CNS 03h): NGUID, UUID, CSI. */
static void nkv_tgt_id_desc(struct nkv_tgt_ctrl *c, uint32_t nsid,
			    struct nkv_be *be, uint8_t *p)
{
	uint8_t g[16];

	nkv_tgt_ns_guid(c, nsid, g);
	p[0] = NKV_NIDT_NGUID;
	p[1] = 16;
	memcpy(p + 4, g, 16);
	p += 20;
	p[0] = NKV_NIDT_UUID;
	p[1] = 16;
	memcpy(p + 4, g, 16);
	p[4 + 6] = (uint8_t)((p[4 + 6] & 0x0f) | 0x80);	/* a name-based UUID */
	p[4 + 8] = (uint8_t)((p[4 + 8] & 0x3f) | 0x80);	/* RFC 4122 variant */
	p += 20;
	if (be->csi == NKV_CSI_NVM && (c->quirks & NKV_TGT_QUIRK_NO_CSI_DESC))
		return;
	p[0] = NKV_NIDT_CSI;
	p[1] = 1;
	p[4] = be->csi;
}

/* I/O Command Set Independent Identify Namespace (CNS 08h, what Linux
 * reads first since 6.0): NMIC 0, NSATTR's write protection, NSTAT bit 0
 * (ready) for an attached namespace; zeros for an inactive one. */
static void nkv_tgt_id_ns_indep(struct nkv_tgt_ctrl *c, uint32_t nsid, const struct nkv_be *be,
				uint8_t *buf)
{
	if (!be)
		return;
	buf[8] = nkv_tgt_ns_ro(c, nsid, be) ? NKV_NSATTR_WRITE_PROTECTED : 0;	/* NSATTR */
	buf[14] = 1;	/* NSTAT: namespace ready */
}

static int nkv_tgt_csi_ok(uint8_t csi)
{
	return csi == NKV_CSI_NVM || csi == NKV_CSI_KV;
}

/* nsid check for namespace-scoped CNS values: 1..NN; inactive is fine. */
static int nkv_tgt_nsid_valid(uint32_t nsid)
{
	return nsid && nsid <= NKV_TGT_MAX_NS;
}

/* be: s->nsid's backend, held by the caller (NULL: inactive). */
static uint16_t nkv_tgt_identify_fill(struct nkv_tgt_ctrl *c, const struct nkv_sqe *s,
				      struct nkv_be *be, uint8_t *buf)
{
	uint8_t cns = nkv_identify_cns(s->cdw10), csi = nkv_identify_csi(s->cdw11);

	switch (cns) {
	case NKV_CNS_NS:
		if (!nkv_tgt_nsid_valid(s->nsid))
			return nkv_tgt_sc(NKV_SC_INVALID_NS);
		if (be && be->csi == NKV_CSI_NVM)
			nkv_tgt_id_ns_nvm(c, s->nsid, be, (void *)buf);
		return 0;	/* KV or inactive: zeroed, per spec */
	case NKV_CNS_CTRL:
		nkv_tgt_id_ctrl(c, (void *)buf);
		return 0;
	case NKV_CNS_ACTIVE_NS_LIST:
		return nkv_tgt_id_list(c, s->nsid, -1, (void *)buf);
	case NKV_CNS_NS_DESC_LIST:
		if (!be)
			return nkv_tgt_sc(NKV_SC_INVALID_NS);
		nkv_tgt_id_desc(c, s->nsid, be, buf);
		return 0;
	case NKV_CNS_IOCS_NS:
		if (!nkv_tgt_csi_ok(csi))
			return nkv_tgt_sc(NKV_SC_INVALID_FIELD);
		if (!nkv_tgt_nsid_valid(s->nsid))
			return nkv_tgt_sc(NKV_SC_INVALID_NS);
		if (be && be->csi != csi)
			return nkv_tgt_sc(NKV_SC_INVALID_FIELD);
		if (be && csi == NKV_CSI_KV)
			nkv_tgt_id_ns_kv(c, s->nsid, be, (void *)buf);
		return 0;	/* NVM specific data: all optional, zero */
	case NKV_CNS_CS_INDEP_NS:
		if (!nkv_tgt_nsid_valid(s->nsid))
			return nkv_tgt_sc(NKV_SC_INVALID_NS);
		nkv_tgt_id_ns_indep(c, s->nsid, be, buf);
		return 0;
	case NKV_CNS_IOCS_CTRL:
		/* Both sets' controller-specific data are all optional. */
		return nkv_tgt_csi_ok(csi) ? 0 : nkv_tgt_sc(NKV_SC_INVALID_FIELD);
	case NKV_CNS_IOCS_ACTIVE_NS_LIST:
		if (!nkv_tgt_csi_ok(csi))
			return nkv_tgt_sc(NKV_SC_INVALID_FIELD);
		return nkv_tgt_id_list(c, s->nsid, csi, (void *)buf);
	case NKV_CNS_IOCS_VECTOR: {
		uint64_t v = NKV_IOCS_VECTOR_NVM | NKV_IOCS_VECTOR_KV;

		memcpy(buf, &v, sizeof(v));	/* index 0; the rest unused */
		return 0;
	}
	default:
		return nkv_tgt_sc(NKV_SC_INVALID_FIELD);
	}
}

static uint16_t nkv_tgt_identify(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	uint8_t *buf = calloc(1, NKV_TGT_ID_SIZE);
	struct nkv_be *be;
	uint16_t st;

	if (!buf)
		return nkv_tgt_sc(NKV_SC_INTERNAL);
	/* held while read; one the client may not use answers as inactive */
	be = nkv_tgt_access(c, cmd->sqe.nsid) == NKV_ACCESS_NONE
		     ? NULL : nkv_subsys_ns_get(c->ss, cmd->sqe.nsid);
	st = nkv_tgt_identify_fill(c, &cmd->sqe, be, buf);
	if (be)
		nkv_subsys_ns_put(c->ss, cmd->sqe.nsid);
	if (!st)
		st = nkv_tgt_reply(c, cmd, buf, NKV_TGT_ID_SIZE, NKV_TGT_ID_SIZE);
	free(buf);
	return st;
}

static uint16_t nkv_tgt_delete_q(struct nkv_tgt_ctrl *c, const struct nkv_sqe *s,
				 int is_cq)
{
	uint16_t qid = nkv_queue_qid(s->cdw10);

	if (!qid || qid > c->max_ioq ||
	    !(is_cq ? c->cq[qid].live : c->sq[qid].live))
		return nkv_tgt_cs(NKV_SC_QID_INVALID);
	if (is_cq && c->cq[qid].nsq)
		return nkv_tgt_cs(NKV_SC_INVALID_QUEUE_DELETION);
	if (is_cq)
		nkv_tgt_cq_delete(c, qid);
	else
		nkv_tgt_sq_delete(c, qid);
	return 0;
}

static int nkv_tgt_ioq_live(const struct nkv_tgt_ctrl *c)
{
	uint32_t q;

	for (q = 1; q <= c->max_ioq; q++)
		if (c->sq[q].live || c->cq[q].live)
			return 1;
	return 0;
}

static uint16_t nkv_tgt_set_features(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	const struct nkv_sqe *s = &cmd->sqe;
	uint32_t nsq = (s->cdw11 & 0xffff) + 1, ncq = (s->cdw11 >> 16) + 1;

	if (s->cdw10 & (1u << 31))
		return nkv_tgt_cs(NKV_SC_FEATURE_NOT_SAVEABLE);
	switch (s->cdw10 & 0xff) {
	case NKV_FID_NUM_QUEUES:
		if (nsq > 0xffff || ncq > 0xffff)
			return nkv_tgt_sc(NKV_SC_INVALID_FIELD);
		if (nkv_tgt_ioq_live(c))
			return nkv_tgt_sc(NKV_SC_CMD_SEQ_ERROR);
		c->nsq_granted = nsq < c->max_ioq ? nsq : c->max_ioq;
		c->ncq_granted = ncq < c->max_ioq ? ncq : c->max_ioq;
		cmd->dw0 = nkv_num_queues(c->nsq_granted, c->ncq_granted);
		return 0;
	case NKV_FID_KV_CONFIG:
		c->kv_config = s->cdw11 & NKV_KV_CONFIG_DEL_MISSING_OK;
		return 0;
	case NKV_FID_ASYNC_EVENT_CFG:
		/* Notices this controller does not send are ignored bits. */
		c->aec = s->cdw11 & NKV_AEC_NS_ATTR;
		cmd->dw0 = c->aec;
		return 0;
	default:
		return nkv_tgt_sc(NKV_SC_INVALID_FIELD);
	}
}

static uint16_t nkv_tgt_get_features(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	uint32_t sel = (cmd->sqe.cdw10 >> 8) & 7, fid = cmd->sqe.cdw10 & 0xff;

	if (fid != NKV_FID_NUM_QUEUES && fid != NKV_FID_KV_CONFIG &&
	    fid != NKV_FID_ASYNC_EVENT_CFG)
		return nkv_tgt_sc(NKV_SC_INVALID_FIELD);
	if (sel == 3) {		/* capabilities: changeable, not saveable */
		cmd->dw0 = 1u << 2;
		return 0;
	}
	if (sel > 3)
		return nkv_tgt_sc(NKV_SC_INVALID_FIELD);
	if (fid == NKV_FID_NUM_QUEUES)
		cmd->dw0 = sel == 1 ? nkv_num_queues(c->max_ioq, c->max_ioq)
				    : nkv_num_queues(c->nsq_granted, c->ncq_granted);
	else if (fid == NKV_FID_KV_CONFIG)
		cmd->dw0 = sel == 1 ? 0 : c->kv_config;
	else
		cmd->dw0 = sel == 1 ? NKV_AEC_NS_ATTR : c->aec;
	return 0;
}

/* Error log, newest first. */
static void nkv_tgt_log_error(struct nkv_tgt_ctrl *c, uint8_t *buf)
{
	uint64_t i, n = c->err_count < NKV_TGT_ERRLOG ? c->err_count : NKV_TGT_ERRLOG;

	for (i = 0; i < n; i++) {
		uint64_t seq = c->err_count - 1 - i;

		memcpy(buf + i * 64, &c->errlog[seq % NKV_TGT_ERRLOG], 64);
	}
}

static void nkv_tgt_u128(uint64_t v[2], uint64_t x)
{
	v[0] = x;
	v[1] = 0;
}

static void nkv_tgt_log_smart(struct nkv_tgt_ctrl *c, struct nkv_smart_log *l)
{
	/* Data units: thousands of 512-byte units, rounded up. */
	nkv_tgt_u128(l->data_units_read, (c->bytes_read + 511999) / 512000);
	nkv_tgt_u128(l->data_units_written, (c->bytes_written + 511999) / 512000);
	nkv_tgt_u128(l->host_reads, c->host_reads);
	nkv_tgt_u128(l->host_writes, c->host_writes);
	nkv_tgt_u128(l->num_err_log_entries, c->err_count);
	l->temperature[0] = (uint8_t)(313 & 0xff);	/* 40 C, in kelvin */
	l->temperature[1] = (uint8_t)(313 >> 8);
	l->avail_spare = 100;
	l->spare_thresh = 10;
}

/* The Discovery log page: built per read (ports are few), read from any
 * dword offset, zeros past its end. */
static uint16_t nkv_tgt_get_disc_log(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd,
				     uint64_t off, uint64_t len)
{
	uint8_t *buf;
	uint64_t size;
	uint16_t st = nkv_tgt_fab_disc_log(c, &buf, &size);

	if (st)
		return st;
	if (off & 3 || off > size || len > c->max_xfer)
		st = nkv_tgt_sc(NKV_SC_INVALID_FIELD);
	else
		st = nkv_tgt_reply(c, cmd, buf + off, size - off, len);
	free(buf);
	return st;
}

/* Changed Namespace List: the nsids changed after this controller's last
 * clearing read, ascending; FFFFFFFFh alone when more than fit. Returns
 * the subsystem's change count the list covers (at least). */
static uint64_t nkv_tgt_log_changed_ns(struct nkv_tgt_ctrl *c, struct nkv_changed_ns_log *l)
{
	uint64_t gen = __atomic_load_n(&c->ss->ns_gen, __ATOMIC_ACQUIRE);
	uint32_t n = 0, i;

	for (i = 1; i <= NKV_TGT_MAX_NS; i++) {
		if (__atomic_load_n(&c->ss->ns_changed[i], __ATOMIC_ACQUIRE) <= c->ns_log_gen ||
		    nkv_tgt_access(c, i) == NKV_ACCESS_NONE)
			continue;	/* unchanged, or absent for this client */
		if (n == NKV_CHANGED_NS_MAX) {
			memset(l, 0, sizeof(*l));
			l->nsid[0] = NKV_CHANGED_NS_OVERFLOW;
			break;
		}
		l->nsid[n++] = i;
	}
	return gen;
}

/* A clearing read (RAE 0) of log page 04h: what it covered is gone, the
 * notice unmasked; a change that came after it is noticed now. */
static void nkv_tgt_changed_ns_read(struct nkv_tgt_ctrl *c, uint64_t gen)
{
	if (gen > c->ns_log_gen)
		c->ns_log_gen = gen;
	if (gen > c->ns_aen_gen)
		c->ns_aen_gen = gen;
	c->ns_aen_masked = 0;
	nkv_tgt_ctrl_ns_events(c);
}

static uint16_t nkv_tgt_get_changed_ns(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd,
				       uint64_t off, uint64_t len)
{
	struct nkv_changed_ns_log *l;
	uint64_t gen;
	uint16_t st;

	if (off & 3 || off >= sizeof(*l) || len > c->max_xfer)
		return nkv_tgt_sc(NKV_SC_INVALID_FIELD);
	l = calloc(1, sizeof(*l));
	if (!l)
		return nkv_tgt_sc(NKV_SC_INTERNAL);
	gen = nkv_tgt_log_changed_ns(c, l);
	st = nkv_tgt_reply(c, cmd, (uint8_t *)l + off, sizeof(*l) - off, len);
	free(l);
	if (!st && !nkv_log_rae(cmd->sqe.cdw10))
		nkv_tgt_changed_ns_read(c, gen);
	return st;
}

/* Exec on some namespace: a room, or a backend that forwards it. */
static int nkv_tgt_exec_offered_any(const struct nkv_tgt_ctrl *c)
{
	uint32_t nsid;
	int any = nkv_tgt_exec_offered();

	for (nsid = 1; !any && nsid <= NKV_TGT_MAX_NS; nsid++) {
		struct nkv_be *be = nkv_subsys_ns_get(c->ss, nsid);

		if (be) {
			any = be->exec_fwd;
			nkv_subsys_ns_put(c->ss, nsid);
		}
	}
	return any;
}

/* Log page 05h: the commands this controller takes, admin and those of
 * the command set csi; Store, Delete and Write change what is stored. */
static void nkv_tgt_log_effects(const struct nkv_tgt_ctrl *c, uint32_t csi,
				struct nkv_cmd_effects_log *l)
{
	static const uint8_t adm[] = { NKV_ADM_GET_LOG_PAGE, NKV_ADM_IDENTIFY, NKV_ADM_ABORT,
				       NKV_ADM_SET_FEATURES, NKV_ADM_GET_FEATURES,
				       NKV_ADM_ASYNC_EVENT, NKV_ADM_KEEP_ALIVE };
	static const uint8_t ring[] = { NKV_ADM_DELETE_SQ, NKV_ADM_CREATE_SQ, NKV_ADM_DELETE_CQ,
					NKV_ADM_CREATE_CQ };
	size_t i;

	for (i = 0; i < sizeof(adm); i++)
		l->acs[adm[i]] = NKV_CE_CSUPP;
	for (i = 0; !c->capsule && i < sizeof(ring); i++)
		l->acs[ring[i]] = NKV_CE_CSUPP;
	if (csi == NKV_CSI_KV) {
		l->iocs[NKV_KV_STORE] = NKV_CE_CSUPP | NKV_CE_LBCC;
		l->iocs[NKV_KV_DELETE] = NKV_CE_CSUPP | NKV_CE_LBCC;
		l->iocs[NKV_KV_RETRIEVE] = NKV_CE_CSUPP;
		l->iocs[NKV_KV_LIST] = NKV_CE_CSUPP;
		l->iocs[NKV_KV_EXIST] = NKV_CE_CSUPP;
		if (nkv_tgt_exec_offered_any(c))
			l->iocs[NKV_KV_EXEC] = NKV_CE_CSUPP;	/* never writes */
	} else if (csi == NKV_CSI_NVM) {
		l->iocs[NKV_NVM_WRITE] = NKV_CE_CSUPP | NKV_CE_LBCC;
		l->iocs[NKV_NVM_READ] = NKV_CE_CSUPP;
		l->iocs[NKV_NVM_FLUSH] = NKV_CE_CSUPP;
	}
}

static uint16_t nkv_tgt_get_log(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	const struct nkv_sqe *s = &cmd->sqe;
	uint64_t len = nkv_log_numd(s->cdw10, s->cdw11) * 4;
	uint64_t off = s->cdw12 | ((uint64_t)s->cdw13 << 32), size;
	/* The largest page built here: the error log, or 05h's 4 KiB; the
	 * pages are built in place through their structures. */
	_Alignas(uint64_t) uint8_t page[NKV_TGT_ERRLOG * 64 > sizeof(struct nkv_cmd_effects_log) ?
					NKV_TGT_ERRLOG * 64 : sizeof(struct nkv_cmd_effects_log)];

	if (nkv_log_lid(s->cdw10) == NKV_LID_DISCOVERY && c->ss->discovery)
		return nkv_tgt_get_disc_log(c, cmd, off, len);
	if (nkv_log_lid(s->cdw10) == NKV_LID_CHANGED_NS && !c->ss->discovery)
		return nkv_tgt_get_changed_ns(c, cmd, off, len);
	memset(page, 0, sizeof(page));
	switch (nkv_log_lid(s->cdw10)) {
	case NKV_LID_ERROR:
		nkv_tgt_log_error(c, page);
		size = NKV_TGT_ERRLOG * 64;
		break;
	case NKV_LID_SMART:
		nkv_tgt_log_smart(c, (struct nkv_smart_log *)page);
		size = sizeof(struct nkv_smart_log);
		break;
	case NKV_LID_CMD_EFFECTS:
		if (c->ss->discovery)
			return nkv_tgt_cs(NKV_SC_LOG_PAGE_INVALID);
		nkv_tgt_log_effects(c, nkv_log_csi(s->cdw14), (struct nkv_cmd_effects_log *)page);
		size = sizeof(struct nkv_cmd_effects_log);
		break;
	default:
		return nkv_tgt_cs(NKV_SC_LOG_PAGE_INVALID);
	}
	if (off & 3 || off >= size || len > c->max_xfer)
		return nkv_tgt_sc(NKV_SC_INVALID_FIELD);
	/* Past the page's end reads as zero. */
	return nkv_tgt_reply(c, cmd, page + off, size - off, len);
}

static int nkv_tgt_adm_ring_only(uint32_t opc)
{
	return opc == NKV_ADM_CREATE_SQ || opc == NKV_ADM_CREATE_CQ ||
	       opc == NKV_ADM_DELETE_SQ || opc == NKV_ADM_DELETE_CQ;
}

static uint16_t nkv_tgt_admin_dispatch(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	const struct nkv_sqe *s = &cmd->sqe;

	/* A capsule's SGL1 is the transport's: its data came with it. */
	if (nkv_sqe_fuse(s) || (nkv_sqe_psdt(s) && !cmd->req))
		return nkv_tgt_sc(NKV_SC_INVALID_FIELD);
	/* Fabrics queues are connections: no queue is created in memory. */
	if (c->capsule && nkv_tgt_adm_ring_only(nkv_sqe_opc(s)))
		return nkv_tgt_sc(NKV_SC_INVALID_OPCODE);
	switch (nkv_sqe_opc(s)) {
	case NKV_ADM_IDENTIFY: return nkv_tgt_identify(c, cmd);
	case NKV_ADM_CREATE_CQ:
		return nkv_tgt_cq_create(c, nkv_queue_qid(s->cdw10), nkv_queue_entries(s->cdw10),
					 !!(s->cdw11 & NKV_QUEUE_PC), s->prp1);
	case NKV_ADM_CREATE_SQ:
		return nkv_tgt_sq_create(c, nkv_queue_qid(s->cdw10), nkv_queue_entries(s->cdw10),
					 !!(s->cdw11 & NKV_QUEUE_PC),
					 nkv_create_sq_cqid(s->cdw11), s->prp1);
	case NKV_ADM_DELETE_CQ: return nkv_tgt_delete_q(c, s, 1);
	case NKV_ADM_DELETE_SQ: return nkv_tgt_delete_q(c, s, 0);
	case NKV_ADM_SET_FEATURES: return nkv_tgt_set_features(c, cmd);
	case NKV_ADM_GET_FEATURES: return nkv_tgt_get_features(c, cmd);
	case NKV_ADM_GET_LOG_PAGE: return nkv_tgt_get_log(c, cmd);
	case NKV_ADM_ABORT:
		cmd->dw0 = 1;	/* bit 0: the command was not aborted */
		return 0;
	case NKV_ADM_KEEP_ALIVE:
		c->ka_last_ns = nkv_tgt_now_ns();
		return 0;
	default:
		return nkv_tgt_sc(NKV_SC_INVALID_OPCODE);
	}
}

static struct nkv_tgt_cmd *nkv_tgt_aer_take(struct nkv_tgt_ctrl *c);

static void nkv_tgt_aer_send(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd, uint32_t dw0)
{
	cmd->status = 0;
	cmd->dw0 = dw0;
	nkv_tgt_complete(c, cmd);
}

/*
 * An Asynchronous Event Request is held, not answered: it completes when
 * an event happens (nkv_tgt_ctrl_aer_event, nkv_tgt_ctrl_ns_events) or
 * the controller resets; an event that found no AER held is sent with
 * this one. More than NKV_TGT_AERL: AER Limit Exceeded.
 */
static int nkv_tgt_aer_hold(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	uint32_t i;

	if (c->naer >= NKV_TGT_AERL)
		return 0;
	nkv_tgt_cmd_append(&c->aer_head, &c->aer_tail, cmd);
	c->naer++;
	if (c->naen_pend) {
		nkv_tgt_aer_send(c, nkv_tgt_aer_take(c), c->aen_pend[0]);
		for (i = 1; i < c->naen_pend; i++)
			c->aen_pend[i - 1] = c->aen_pend[i];
		c->naen_pend--;
		return 1;
	}
	nkv_tgt_ctrl_ns_events(c);
	return 1;
}

static struct nkv_tgt_cmd *nkv_tgt_aer_take(struct nkv_tgt_ctrl *c)
{
	struct nkv_tgt_cmd *cmd = c->aer_head;

	if (!cmd)
		return NULL;
	c->aer_head = cmd->next;
	if (!c->aer_head)
		c->aer_tail = NULL;
	c->naer--;
	return cmd;
}

/* A ring controller's held AERs belong to an admin SQ that is gone by
 * now: dropped; a capsule controller's go back to their transport. */
void nkv_tgt_aer_flush(struct nkv_tgt_ctrl *c, uint16_t status)
{
	struct nkv_tgt_cmd *cmd;

	while ((cmd = nkv_tgt_aer_take(c))) {
		cmd->status = status;
		if (cmd->req)
			nkv_tgt_complete(c, cmd);
		else
			nkv_tgt_cmd_put(c, cmd);
	}
}

uint32_t nkv_tgt_ctrl_aers(const struct nkv_tgt_ctrl *c)
{
	return c->naer;
}

void nkv_tgt_aen_init(struct nkv_tgt_ctrl *c)
{
	c->aec = NKV_AEC_NS_ATTR;	/* on until the host says otherwise */
	c->ns_log_gen = __atomic_load_n(&c->ss->ns_gen, __ATOMIC_ACQUIRE);
	c->ns_aen_gen = c->ns_log_gen;
}

int nkv_tgt_ctrl_ns_events(struct nkv_tgt_ctrl *c)
{
	uint64_t gen = __atomic_load_n(&c->ss->ns_gen, __ATOMIC_ACQUIRE);

	if (gen <= c->ns_aen_gen || c->ns_aen_masked)
		return 0;	/* nothing new, or the host has yet to read 04h */
	if (!(c->aec & NKV_AEC_NS_ATTR)) {
		c->ns_aen_gen = gen;	/* masked off: passed over, not kept */
		return 0;
	}
	if (!c->aer_head)
		return 0;	/* kept: the next AER takes it (nkv_tgt_aer_hold) */
	c->ns_aen_gen = gen;
	c->ns_aen_masked = 1;
	nkv_tgt_aer_send(c, nkv_tgt_aer_take(c), NKV_AEN_NS_CHANGED);
	return 1;
}

int nkv_tgt_ctrl_aer_event(struct nkv_tgt_ctrl *c, uint32_t dw0)
{
	struct nkv_tgt_cmd *cmd;

	if (dw0 == NKV_AEN_NS_CHANGED) {
		nkv_tgt_ctrl_ns_events(c);	/* the subsystem's record says what */
		return 0;
	}
	cmd = nkv_tgt_aer_take(c);
	if (cmd) {
		nkv_tgt_aer_send(c, cmd, dw0);
		return 0;
	}
	if (c->naen_pend == NKV_TGT_AERL)
		return -ENOSPC;
	c->aen_pend[c->naen_pend++] = dw0;
	return 0;
}

void nkv_tgt_admin_exec(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	if (nkv_sqe_opc(&cmd->sqe) == NKV_ADM_ASYNC_EVENT) {
		if (nkv_tgt_aer_hold(c, cmd))
			return;
		cmd->status = nkv_tgt_cs(NKV_SC_AER_LIMIT);
		nkv_tgt_complete(c, cmd);
		return;
	}
	cmd->status = nkv_tgt_admin_dispatch(c, cmd);
	cmd->iovcnt = 0;
	if ((c->quirks & NKV_TGT_QUIRK_FAIL_ON_CREATE_SQ) &&
	    nkv_sqe_opc(&cmd->sqe) == NKV_ADM_CREATE_SQ)
		c->csts |= NKV_CSTS_CFS;	/* and goes on answering */
	nkv_tgt_complete(c, cmd);
}
