/* SPDX-License-Identifier: MIT */
/*
 * aen.c - asynchronous events on the admin queue. While the controller
 * advertises Namespace Attribute Notices (Identify OAES bit 8) the
 * library keeps one Asynchronous Event Request outstanding. The library
 * has no admin-queue thread, so its completion is met lazily: by the
 * next admin command's wait (which steps over it, admin.c), or by
 * nkv_h_aen_poll() from nkv_ctrl_namespaces() and nkv_ctrl_ns_changed().
 * A Namespace Attribute Changed notice is then handled there: log page
 * 04h read (clearing it, so the controller notices again), the AER sent
 * again, the change counted. Everything here runs under c->lock.
 */
#include <errno.h>
#include <string.h>

#include "host/host.h"

#define NKV_H_ADM_AER 0x0cu	/* Asynchronous Event Request */

int nkv_h_aer_arm(struct nkv_ctrl *c)
{
	struct nkv_sqe s;
	int rc;

	if (!c->aen_oaes || c->aer_out || c->dead)
		return 0;
	memset(&s, 0, sizeof(s));
	s.cdw0 = NKV_H_ADM_AER;
	rc = nkv_h_admin_submit(c, &s, &c->aer_cid);
	if (!rc)
		c->aer_out = 1;
	return rc;
}

void nkv_h_aer_done(struct nkv_ctrl *c, uint16_t status, uint32_t dw0)
{
	c->aer_out = 0;
	if (status) {
		/* Aborted (a reset) or refused: stop asking, say so once. */
		nkv_h_log("asynchronous event request answered %#x (%s): namespace changes "
			  "are no longer noticed", status, nkv_status_str(status));
		c->aen_oaes = 0;
		return;
	}
	if (nkv_aen_type(dw0) == NKV_AEN_TYPE_NOTICE && nkv_aen_info(dw0) == NKV_AEN_INFO_NS_ATTR)
		c->aen_ns = 1;
	nkv_h_trace("admin: asynchronous event %#x", dw0);
}

/* Read (and so clear) the Changed Namespace List: the controller sends
 * no other notice until it is read. */
static int nkv_h_aen_read_log(struct nkv_ctrl *c)
{
	struct nkv_sqe s;
	uint16_t st = 0;
	int rc;

	memset(&s, 0, sizeof(s));
	s.cdw0 = NKV_ADM_GET_LOG_PAGE;
	s.nsid = 0xffffffffu;
	s.cdw10 = NKV_LID_CHANGED_NS | ((NKV_PAGE_SIZE / 4u - 1u) << 16);
	s.prp1 = c->idbuf.m.iova[0];
	rc = nkv_h_admin(c, &s, &st, NULL);
	return rc ? rc : st ? -EIO : 0;
}

int nkv_h_aen_poll(struct nkv_ctrl *c)
{
	int rc;

	if (c->dead)
		return -ENOTCONN;
	rc = nkv_h_admin_reap(c);
	if (rc || !c->aen_ns)
		return rc;
	c->aen_ns = 0;
	rc = nkv_h_aen_read_log(c);
	if (!rc)
		rc = nkv_h_aer_arm(c);
	c->ns_changed = 1;	/* the list is read afresh by whoever asks */
	return rc;
}

int nkv_ctrl_ns_changed(struct nkv_ctrl *c)
{
	int rc;

	if (!c)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	rc = nkv_h_aen_poll(c);
	if (!rc && !c->aen_oaes && !c->ns_changed)
		rc = -EOPNOTSUPP;
	if (!rc) {
		rc = c->ns_changed;
		c->ns_changed = 0;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}
