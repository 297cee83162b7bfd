/* SPDX-License-Identifier: MIT */
/*
 * ctrl.c - connect, bring-up, namespace discovery, shutdown.
 *
 * Bring-up (NVMe Base 2.0, 3.5.1): disable and wait for CSTS.RDY = 0,
 * admin queues (AQA/ASQ/ACQ), enable with CC.CSS = 110b when CAP.CSS
 * offers I/O command sets (else NVM), MPS 4 KiB, IOSQES 6, IOCQES 4, wait
 * for RDY within CAP.TO; then Identify Controller, the I/O command set
 * vector (pick a combination with KV), Number of Queues, the active
 * namespace list and each namespace's descriptors and limits.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/host.h"

/* Wait until (CSTS & mask) == want within c->timeout_ms. CFS while
 * waiting for ready is a failed enable, not a timeout. */
static int nkv_h_wait_csts(struct nkv_ctrl *c, uint32_t mask, uint32_t want,
			   const char *what, char *err, size_t errlen)
{
	uint64_t t0 = nkv_h_now_ms(), v = 0;
	int rc;

	for (;;) {
		rc = nkv_h_reg_read(c, NKV_REG_CSTS, 4, &v);
		if (rc) {
			nkv_h_err(err, errlen, "reading CSTS while waiting for %s: %s", what, strerror(-rc));
			return -ENOTCONN;
		}
		if (((uint32_t)v & mask) == want)
			return 0;
		if ((v & NKV_CSTS_CFS) && want == NKV_CSTS_RDY) {
			nkv_h_err(err, errlen, "controller fatal status while waiting for %s (CSTS %#x)",
				  what, (uint32_t)v);
			return -EIO;
		}
		if (nkv_h_now_ms() - t0 > c->timeout_ms) {
			nkv_h_err(err, errlen, "controller not %s within %u ms (CSTS %#x)", what,
				  c->timeout_ms, (uint32_t)v);
			return -ETIMEDOUT;
		}
		usleep(500);
	}
}

static int nkv_h_disable(struct nkv_ctrl *c, char *err, size_t errlen)
{
	uint64_t cc = 0;
	int rc = nkv_h_reg_read(c, NKV_REG_CC, 4, &cc);

	if (!rc && nkv_cc_en((uint32_t)cc))
		rc = nkv_h_reg_write(c, NKV_REG_CC, cc & ~1ull, 4);
	if (rc) {
		nkv_h_err(err, errlen, "cannot write CC: %s", strerror(-rc));
		return -ENOTCONN;
	}
	return nkv_h_wait_csts(c, NKV_CSTS_RDY, 0, "disabled", err, errlen);
}

static int nkv_h_enable(struct nkv_ctrl *c, char *err, size_t errlen)
{
	uint32_t css = nkv_cap_css(c->cap) & NKV_CAP_CSS_IOCS ? NKV_CC_CSS_IOCS : NKV_CC_CSS_NVM;
	uint64_t cc = 0;
	int rc;

	cc = NKV_SET(cc, NKV_CC_CSS_SHIFT, 3, css);
	cc = NKV_SET(cc, NKV_CC_MPS_SHIFT, 4, 0);
	cc = NKV_SET(cc, NKV_CC_IOSQES_SHIFT, 4, 6);
	cc = NKV_SET(cc, NKV_CC_IOCQES_SHIFT, 4, 4);
	rc = nkv_h_reg_write(c, NKV_REG_AQA, nkv_aqa(c->adepth, c->adepth), 4);
	if (!rc)
		rc = nkv_h_reg_write(c, NKV_REG_ASQ, c->asq.m.iova[0], 8);
	if (!rc)
		rc = nkv_h_reg_write(c, NKV_REG_ACQ, c->acq.m.iova[0], 8);
	/* Stage the fields, then set EN alone, as a careful driver does. */
	if (!rc)
		rc = nkv_h_reg_write(c, NKV_REG_CC, cc, 4);
	if (!rc)
		rc = nkv_h_reg_write(c, NKV_REG_CC, cc | 1u, 4);
	if (rc) {
		nkv_h_err(err, errlen, "cannot program the admin queue: %s", strerror(-rc));
		return -ENOTCONN;
	}
	rc = nkv_h_wait_csts(c, NKV_CSTS_RDY, NKV_CSTS_RDY, "ready", err, errlen);
	/* RDY can come with CFS (a controller that failed once enabled). */
	return rc ? rc : nkv_h_check_cfs(c, "after enable");
}

/* Identify into c->idbuf: 0, the NVMe status (> 0), or -errno. */
static int nkv_h_identify(struct nkv_ctrl *c, uint8_t cns, uint8_t csi, uint32_t nsid)
{
	struct nkv_sqe s;
	uint16_t st = 0;
	int rc;

	memset(&s, 0, sizeof(s));
	memset(c->idbuf.m.va, 0, NKV_PAGE_SIZE);
	s.cdw0 = NKV_ADM_IDENTIFY;
	s.nsid = nsid;
	s.prp1 = c->idbuf.m.iova[0];
	s.cdw10 = nkv_identify_cdw10(cns, 0);
	s.cdw11 = nkv_identify_cdw11(csi);
	rc = nkv_h_admin(c, &s, &st, NULL);
	return rc ? rc : st;
}

static int nkv_h_set_feature(struct nkv_ctrl *c, uint8_t fid, uint32_t cdw11, uint32_t *dw0)
{
	struct nkv_sqe s;
	uint16_t st = 0;
	int rc;

	memset(&s, 0, sizeof(s));
	s.cdw0 = NKV_ADM_SET_FEATURES;
	s.cdw10 = fid;
	s.cdw11 = cdw11;
	rc = nkv_h_admin(c, &s, &st, dw0);
	return rc ? rc : st;
}

static void nkv_h_copy_str(char *dst, const char *src, size_t n)
{
	memcpy(dst, src, n);
	dst[n] = 0;
	while (n && (dst[n - 1] == ' ' || dst[n - 1] == 0))
		dst[--n] = 0;
}

#define NKV_FID_IOCS_PROFILE 0x19	/* I/O Command Set Profile (Base 2.0) */

static int nkv_h_id_ctrl(struct nkv_ctrl *c, char *err, size_t errlen)
{
	const struct nkv_id_ctrl *id = c->idbuf.m.va;
	int rc = nkv_h_identify(c, NKV_CNS_CTRL, 0, 0);

	if (rc) {
		nkv_h_err(err, errlen, "Identify Controller failed: %d", rc);
		return rc < 0 ? rc : -EIO;
	}
	nkv_h_copy_str(c->info.model, id->mn, sizeof(id->mn));
	nkv_h_copy_str(c->info.serial, id->sn, sizeof(id->sn));
	c->info.sgls = id->sgls;
	c->aen_oaes = !!(id->oaes & NKV_OAES_NS_ATTR);	/* aen.c keeps an AER out */
	/* MDTS is in units of the minimum page size; 0 = no limit. */
	if (id->mdts) {
		uint32_t shift = 12u + nkv_cap_mpsmin(c->cap) + id->mdts;

		c->info.max_xfer = shift >= 31 ? 0x80000000u : 1u << shift;
	}
	if (!(nkv_cap_css(c->cap) & NKV_CAP_CSS_IOCS))
		return 0;
	/* Command set combinations: choose the first that includes KV. */
	rc = nkv_h_identify(c, NKV_CNS_IOCS_VECTOR, 0, 0);
	if (rc == 0) {
		const uint64_t *v = c->idbuf.m.va;
		uint32_t i;

		for (i = 0; i < 512; i++)
			if (v[i] & NKV_IOCS_VECTOR_KV)
				break;
		if (i > 0 && i < 512 && nkv_h_set_feature(c, NKV_FID_IOCS_PROFILE, i, NULL))
			nkv_h_log("I/O command set combination %u (with KV) not selectable", i);
	}
	return rc < 0 ? rc : 0;
}

static int nkv_h_num_queues(struct nkv_ctrl *c, uint32_t want, char *err, size_t errlen)
{
	uint32_t dw0 = 0, nsq, ncq;
	int rc = nkv_h_set_feature(c, NKV_FID_NUM_QUEUES, nkv_num_queues(want, want), &dw0);

	if (rc) {
		nkv_h_err(err, errlen, "Set Features Number of Queues failed: %d", rc);
		return rc < 0 ? rc : -EIO;
	}
	nsq = (dw0 & 0xffffu) + 1u;
	ncq = (dw0 >> 16) + 1u;
	c->granted = nsq < ncq ? nsq : ncq;
	if (c->granted > want)
		c->granted = want;	/* allocated beyond the request: ours to ignore */
	c->info.io_queues = c->granted;
	return 0;
}

/* Does Identify Namespace (CNS 00h) describe an NVM namespace? It is
 * all zeros for a namespace of another command set or an inactive one. */
static int nkv_h_ns_is_nvm(struct nkv_ctrl *c, uint32_t nsid)
{
	const struct nkv_id_ns_nvm *id = c->idbuf.m.va;

	return !nkv_h_identify(c, NKV_CNS_NS, 0, nsid) && id->nsze &&
	       id->lbaf[id->flbas & 0xf].lbads >= 9;
}

/* CSI of namespace nsid from its descriptor list, or -1. A controller
 * without I/O command sets has only NVM namespaces; one whose descriptor
 * list leaves out the command set descriptor (a known bug for NVM
 * namespaces) gets asked Identify Namespace. */
static int nkv_h_ns_csi(struct nkv_ctrl *c, uint32_t nsid)
{
	const uint8_t *p = c->idbuf.m.va;
	size_t off = 0;
	int rc;

	if (!(nkv_cap_css(c->cap) & NKV_CAP_CSS_IOCS))
		return NKV_CSI_NVM;
	rc = nkv_h_identify(c, NKV_CNS_NS_DESC_LIST, 0, nsid);
	if (rc < 0)
		return -1;
	while (!rc && off + 4 <= NKV_PAGE_SIZE && p[off]) {
		if (p[off] == NKV_NIDT_CSI && p[off + 1] >= 1 && off + 5 <= NKV_PAGE_SIZE)
			return p[off + 4];
		off += 4u + p[off + 1];
	}
	if (nkv_h_ns_is_nvm(c, nsid)) {
		nkv_h_trace("namespace %u: no command set descriptor, Identify Namespace says NVM", nsid);
		return NKV_CSI_NVM;
	}
	return -1;
}

/* Limits of KV namespace ns->nsid, and (@ext not NULL) what it honours
 * beyond the command set, from the one KV Identify Namespace. */
static int nkv_h_ns_kv(struct nkv_ctrl *c, struct nkv_ns_info *ns, struct nkv_ns_ext *ext)
{
	const struct nkv_id_ns_kv *id = c->idbuf.m.va;

	if (nkv_h_identify(c, NKV_CNS_IOCS_NS, NKV_CSI_KV, ns->nsid))
		return -1;
	if (ext)
		nkv_h_ns_ext_parse(id, ns->nsid, ext);
	/* KL is 8 bits wide: no key is longer than 255 bytes, whatever a
	 * controller claims; none reported means the inline 16. */
	ns->max_key = id->kvf[0].kml ? id->kvf[0].kml : NKV_KEY_INLINE_MAX;
	if (ns->max_key > NKV_KEY_MAX)
		ns->max_key = NKV_KEY_MAX;
	ns->max_value = id->kvf[0].mvl;
	ns->max_keys = id->kvf[0].mnk;
	ns->capacity = id->nsze;
	return 0;
}

static int nkv_h_ns_nvm(struct nkv_ctrl *c, struct nkv_ns_info *ns)
{
	const struct nkv_id_ns_nvm *id = c->idbuf.m.va;
	uint8_t lbads;

	if (nkv_h_identify(c, NKV_CNS_NS, 0, ns->nsid))
		return -1;
	lbads = id->lbaf[id->flbas & 0xf].lbads;
	if (lbads < 9 || lbads > 24)
		return -1;
	ns->block_size = 1u << lbads;
	ns->capacity = id->nsze;
	return 0;
}

/* Command set and limits of namespace nsid (and a KV one's extensions
 * in @ext, when not NULL): 0, or -1 when unusable. */
static int nkv_h_ns_info(struct nkv_ctrl *c, uint32_t nsid, struct nkv_ns_info *ns,
			 struct nkv_ns_ext *ext)
{
	memset(ns, 0, sizeof(*ns));
	ns->nsid = nsid;
	ns->csi = nkv_h_ns_csi(c, nsid);
	if (ns->csi == NKV_CSI_KV)
		return nkv_h_ns_kv(c, ns, ext);
	if (ns->csi == NKV_CSI_NVM)
		return nkv_h_ns_nvm(c, ns);
	return -1;
}

/* Active namespace ids: all of them (CNS 02h), or where a controller
 * lists none there, its KV ones (CNS 07h, CSI 01h). How many, or -errno. */
static int nkv_h_ns_list(struct nkv_ctrl *c, uint32_t *ids, size_t max)
{
	const uint32_t *l = c->idbuf.m.va;
	size_t n = 0;
	int rc = nkv_h_identify(c, NKV_CNS_ACTIVE_NS_LIST, 0, 0);

	if ((rc > 0 || (!rc && !l[0])) && (nkv_cap_css(c->cap) & NKV_CAP_CSS_IOCS))
		rc = nkv_h_identify(c, NKV_CNS_IOCS_ACTIVE_NS_LIST, NKV_CSI_KV, 0);
	if (rc)
		return rc < 0 ? rc : -EIO;
	while (n < max && n < NKV_PAGE_SIZE / 4 && l[n])
		n++;
	memcpy(ids, l, n * sizeof(*ids));
	return (int)n;
}

/* The namespace to use: the first KV one, else the first NVM one. */
static int nkv_h_pick_ns(struct nkv_ctrl *c, char *err, size_t errlen)
{
	struct nkv_ns_info ns, nvm = { 0 };
	struct nkv_ns_ext ext;
	uint32_t ids[64];
	int n = nkv_h_ns_list(c, ids, 64), i;

	if (n < 0) {
		nkv_h_err(err, errlen, "reading the active namespace list: %s", strerror(-n));
		return n;
	}
	for (i = 0; i < n && !c->nsid; i++) {
		if ((c->want_nsid && ids[i] != c->want_nsid) || nkv_h_ns_info(c, ids[i], &ns, &ext))
			continue;
		if (ns.csi == NKV_CSI_KV) {
			c->nsid = ns.nsid;
			c->ext = ext;	/* what its queue pairs may send */
		}
		else if (ns.csi == NKV_CSI_NVM && !nvm.nsid)
			nvm = ns;
	}
	if (!c->nsid && nvm.nsid) {
		ns = nvm;
		c->nsid = ns.nsid;
	}
	if (c->dead) {
		nkv_h_err(err, errlen, "controller stopped answering during namespace discovery");
		return -ENOTCONN;
	}
	if (!c->nsid && c->want_nsid) {
		nkv_h_err(err, errlen, "namespace %u is not an active KV or NVM namespace (%d active)",
			  c->want_nsid, n);
		return -ENODEV;
	}
	if (!c->nsid) {
		nkv_h_err(err, errlen, "no usable namespace (%d active, none KV or NVM)", n);
		return -ENODEV;
	}
	c->info.nsid = ns.nsid;
	c->info.csi = (uint8_t)ns.csi;
	c->info.max_key = ns.max_key;
	c->info.max_value = ns.max_value;
	c->info.max_keys = ns.max_keys;
	c->info.block_size = ns.block_size;
	c->info.capacity = ns.capacity;
	return 0;
}

int nkv_ctrl_namespaces(struct nkv_ctrl *c, struct nkv_ns_info *out, size_t max)
{
	uint32_t ids[NKV_PAGE_SIZE / 4];
	int n, i;

	if (!c || (max && !out))
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	/* A notice that came meanwhile is met (aen.c); the list is read afresh anyway. */
	n = nkv_h_aen_poll(c);
	if (!n)
		n = nkv_h_ns_list(c, ids, NKV_PAGE_SIZE / 4);
	/* An unusable namespace still shows, with what could be read. */
	for (i = 0; n > 0 && i < n && (size_t)i < max; i++)
		(void)nkv_h_ns_info(c, ids[i], &out[i], NULL);
	if (n >= 0 && c->dead)
		n = -ENOTCONN;
	pthread_mutex_unlock(&c->lock);
	return n;
}

int nkv_ctrl_ns_ext(struct nkv_ctrl *c, uint32_t nsid, struct nkv_ns_ext *ext)
{
	struct nkv_ns_info ns;
	struct nkv_ns_ext e;
	int rc;

	/* A caller built before cmd_timeout_ms gets the fields it knows. */
	if (!c || !ext || ext->size < offsetof(struct nkv_ns_ext, cmd_timeout_ms))
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	/* Asked afresh: a namespace can become read-only while in use. */
	if (c->dead)
		rc = -ENOTCONN;
	else if (nkv_h_ns_info(c, nsid ? nsid : c->nsid, &ns, &e) || ns.csi != NKV_CSI_KV)
		rc = c->dead ? -ENOTCONN : -ENODEV;
	else
		rc = 0;
	pthread_mutex_unlock(&c->lock);
	if (!rc) {
		e.size = ext->size;	/* a caller built with a larger struct keeps its size */
		memcpy(ext, &e, ext->size < sizeof(e) ? ext->size : sizeof(e));
	}
	return rc;
}

static int nkv_h_check_opts(const struct nkv_ctrl_opts *o, char *err, size_t errlen)
{
	if (o->size < offsetof(struct nkv_ctrl_opts, err)) {
		nkv_h_err(err, errlen, "nkv_ctrl_opts.size %zu too small", o->size);
		return -EINVAL;
	}
	if (o->memory_mode & ~NKV_MEM_ALL) {
		nkv_h_err(err, errlen, "memory mode %#x has bits outside 0xf", o->memory_mode);
		return -EINVAL;
	}
	if (o->size >= offsetof(struct nkv_ctrl_opts, flags) + sizeof(o->flags) &&
	    (o->flags & ~(NKV_CTRL_VALUES_BY_MESSAGES | NKV_CTRL_KEY_HEAD))) {
		nkv_h_err(err, errlen, "nkv_ctrl_opts.flags %#x: unknown bits", o->flags);
		return -EINVAL;
	}
	if (o->size >= offsetof(struct nkv_ctrl_opts, flags) + sizeof(o->flags) &&
	    (o->flags & NKV_CTRL_VALUES_BY_MESSAGES) && !(o->memory_mode & NKV_MEM_DATA)) {
		nkv_h_err(err, errlen, "values by messages needs memory mode bit 0x8 (values in device memory)");
		return -EINVAL;
	}
	if (o->io_queues > 65535 || (o->admin_depth && (o->admin_depth < 2 || o->admin_depth > 4096))) {
		nkv_h_err(err, errlen, "io_queues must be <= 65535, admin_depth 2..4096");
		return -EINVAL;
	}
	return 0;
}

/* Registers, memory, admin queue, enable. */
static int nkv_h_bringup(struct nkv_ctrl *c, const struct nkv_ctrl_opts *o, char *err, size_t errlen)
{
	uint32_t mqes, to_ms;
	uint64_t vs = 0;
	int rc;

	if (nkv_h_reg_read(c, NKV_REG_CAP, 8, &c->cap) || nkv_h_reg_read(c, NKV_REG_VS, 4, &vs)) {
		nkv_h_err(err, errlen, "cannot read CAP/VS");
		return -ENOTCONN;
	}
	c->vs = (uint32_t)vs;
	mqes = nkv_cap_mqes(c->cap) + 1u;
	c->dstrd = nkv_cap_dstrd(c->cap);
	c->db_stride = 4u << c->dstrd;
	to_ms = nkv_cap_to(c->cap) ? nkv_cap_to(c->cap) * 500u : 500u;
	c->timeout_ms = o->timeout_ms ? o->timeout_ms : to_ms;
	c->info.cap = c->cap;
	c->info.vs = c->vs;
	c->info.mqes = mqes;
	if (nkv_cap_mpsmin(c->cap) > 0 || mqes < 2) {
		nkv_h_err(err, errlen, "controller cannot do 4 KiB pages (CAP %#llx)",
			  (unsigned long long)c->cap);
		return -EPROTO;
	}
	if ((nkv_cap_css(c->cap) & (NKV_CAP_CSS_NVM | NKV_CAP_CSS_IOCS)) == 0) {
		nkv_h_err(err, errlen, "controller offers no I/O command set (CAP.CSS %#x)",
			  nkv_cap_css(c->cap));
		return -ENODEV;
	}
	c->dbmap = c->ops->doorbells(c->tr, &c->dbmap_len);
	if (c->dbmap && c->dbmap_len < 2u * c->db_stride)
		c->dbmap = NULL;
	rc = nkv_h_disable(c, err, errlen);
	if (rc)
		return rc;
	rc = nkv_h_place_init(c, err, errlen);
	if (!rc) {
		uint32_t ad = o->admin_depth ? o->admin_depth : 32;

		rc = nkv_h_admin_init(c, ad < mqes ? ad : mqes);
		if (rc)
			nkv_h_err(err, errlen, "cannot register the admin queue memory: %s", strerror(-rc));
	}
	return rc ? rc : nkv_h_enable(c, err, errlen);
}

static void nkv_h_ctrl_free(struct nkv_ctrl *c)
{
	/* Regions the application left: before their memory sources go. */
	nkv_h_mr_close_all(c);
	nkv_h_gpu_db_fini(c);
	nkv_h_doorbells_fini(c);
	nkv_h_admin_fini(c);
	nkv_h_place_fini(c);
	if (c->tr)
		c->ops->close(c->tr);
	free(c->qps);
	free(c->qst);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static int nkv_h_connect(struct nkv_ctrl *c, const char *uri, const struct nkv_ctrl_opts *o,
			 char *err, size_t errlen)
{
	const char *addr;
	int rc = nkv_h_uri_parse(uri, &c->ops, &addr, err, errlen);

	if (rc)
		return rc;
	snprintf(c->info.transport, sizeof(c->info.transport), "%s", c->ops->name);
	rc = c->ops->open(addr, &c->tr, err, errlen);
	if (rc)
		return rc;
	rc = nkv_h_bringup(c, o, err, errlen);
	if (!rc)
		rc = nkv_h_id_ctrl(c, err, errlen);
	if (!rc)
		rc = nkv_h_num_queues(c, o->io_queues ? o->io_queues : 1, err, errlen);
	if (!rc)
		rc = nkv_h_pick_ns(c, err, errlen);
	if (!rc) {
		c->qps = calloc(c->granted + 1u, sizeof(*c->qps));
		c->qst = calloc(c->granted + 1u, sizeof(*c->qst));
		rc = c->qps && c->qst ? 0 : -ENOMEM;
	}
	if (!rc)
		rc = nkv_h_doorbells_init(c, err, errlen);
	if (!rc)
		rc = nkv_h_aer_arm(c);
	if (!rc)
		rc = nkv_h_check_cfs(c, "after bring-up");
	if (rc && c->dead && rc != -ETIMEDOUT && rc != -EIO)
		rc = -ENOTCONN;
	if (rc && c->failed_csts) {
		nkv_h_err(err, errlen, "controller failed: CSTS %#x has CFS (Controller Fatal Status) set",
			  c->failed_csts);
		rc = -EIO;
	}
	return rc;
}

/* Normal shutdown, then disable; bounded, best effort on a dead one. */
static void nkv_h_shutdown(struct nkv_ctrl *c)
{
	uint64_t cc = 0;

	if (!c->tr || c->dead || nkv_h_reg_read(c, NKV_REG_CC, 4, &cc) ||
	    !nkv_cc_en((uint32_t)cc))
		return;
	cc = NKV_SET(cc, NKV_CC_SHN_SHIFT, 2, NKV_CC_SHN_NORMAL);
	if (!nkv_h_reg_write(c, NKV_REG_CC, cc, 4) &&
	    nkv_h_wait_csts(c, 3u << NKV_CSTS_SHST_SHIFT,
			    NKV_CSTS_SHST_COMPLETE << NKV_CSTS_SHST_SHIFT, "shut down", NULL, 0))
		nkv_h_log("controller did not report shutdown complete in time");
	cc &= ~1ull;
	cc = NKV_SET(cc, NKV_CC_SHN_SHIFT, 2, 0);
	if (!nkv_h_reg_write(c, NKV_REG_CC, cc, 4))
		nkv_h_wait_csts(c, NKV_CSTS_RDY, 0, "disabled", NULL, 0);
}

int nkv_ctrl_connect(const char *uri, const struct nkv_ctrl_opts *opts,
		     struct nkv_ctrl **out)
{
	struct nkv_ctrl_opts def = { .size = sizeof(def) };
	const struct nkv_ctrl_opts *o = opts ? opts : &def;
	char *err = opts ? opts->err : NULL;
	size_t errlen = opts ? opts->errlen : 0;
	struct nkv_ctrl *c;
	int rc;

	if (err && errlen)
		err[0] = 0;
	if (!out)
		return -EINVAL;
	*out = NULL;
	rc = nkv_h_check_opts(o, err, errlen);
	if (rc)
		return rc;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	c->mode = o->memory_mode;
	if (o->size >= offsetof(struct nkv_ctrl_opts, flags) + sizeof(o->flags))
		c->flags = o->flags;
	if (o->size >= offsetof(struct nkv_ctrl_opts, nsid) + sizeof(o->nsid))
		c->want_nsid = o->nsid;
	c->trace = o->trace;
	if (o->trace)
		nkv_set_trace(1);
	rc = nkv_h_connect(c, uri, o, err, errlen);
	if (!rc) {
		rc = nkv_h_watch_start(c);
		if (rc)
			nkv_h_err(err, errlen, "cannot start the thread that watches the controller");
	}
	if (rc) {
		nkv_h_shutdown(c);	/* no DMA into memory we free */
		nkv_h_trace("connect %s failed: %d (%s)", uri ? uri : "(null)", rc, err ? err : "");
		nkv_h_ctrl_free(c);
		return rc;
	}
	/* CAP.TO, or what the namespace's backend may take and a margin. */
	c->io_timeout_ms = nkv_h_io_timeout(c, o->timeout_ms, c->timeout_ms,
					    "nkv_ctrl_opts.timeout_ms");
	nkv_h_trace("connected %s: %s nsid %u csi %u, %u I/O queues, max xfer %u, mode %#x, doorbells %s",
		    uri, c->info.model, c->nsid, c->info.csi, c->granted, c->info.max_xfer,
		    c->mode, c->info.doorbells_mapped ? "mapped" : "forwarded");
	*out = c;
	return 0;
}

/*
 * Before a teardown touches registers: a controller that went away (a
 * pcie device unbound from nkv.ko loses its register mapping, and a store
 * to it raises SIGBUS) gets none from now on, only the memory cleanup.
 */
void nkv_h_check_gone(struct nkv_ctrl *c)
{
	if (c->dead || !c->ops->alive || !c->ops->alive(c->tr))
		return;
	c->dead = 1;
	__atomic_store_n(&c->gone, 1, __ATOMIC_RELEASE);
}

void nkv_ctrl_close(struct nkv_ctrl *c)
{
	uint32_t q;

	if (!c)
		return;
	nkv_h_watch_stop(c);
	pthread_mutex_lock(&c->lock);
	nkv_h_check_gone(c);
	pthread_mutex_unlock(&c->lock);
	for (q = 1; q <= c->granted; q++)
		if (c->qps[q])
			nkv_qpair_destroy(c->qps[q]);
	/* Last doorbell values out before the controller goes away. */
	nkv_h_gpu_db_fini(c);
	nkv_h_doorbells_fini(c);
	pthread_mutex_lock(&c->lock);
	nkv_h_shutdown(c);
	pthread_mutex_unlock(&c->lock);
	nkv_h_ctrl_free(c);
}

int nkv_ctrl_get_info(struct nkv_ctrl *c, struct nkv_ctrl_info *info)
{
	if (!c || !info)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	*info = c->info;
	pthread_mutex_unlock(&c->lock);
	return 0;
}
