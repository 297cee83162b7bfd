/* SPDX-License-Identifier: MIT */
/*
 * access.c - the core's side of tenants (tenant/tenant.h): a controller's
 * identity, its cached view of the access rules, and the checks every
 * new command passes.
 *
 * The view (c->acc, one byte per nsid) is recomputed on the poll thread
 * when the tenants' rule count moved since it was made; a target whose
 * rules never change pays one acquire load and a compare per command.
 */
#include <stdio.h>
#include <string.h>

#include "core.h"

void nkv_tgt_access_refresh(struct nkv_tgt_ctrl *c)
{
	struct nkv_tenants *t = c->ss->tenants;
	uint64_t gen = nkv_tenants_gen(t);	/* before: a change meanwhile refreshes again */
	uint32_t i;

	for (i = 1; i <= NKV_TGT_MAX_NS; i++)
		c->acc[i] = (uint8_t)nkv_access_of(t, i, &c->who);
	c->acc_gen = gen;
}

/* Identity changed: every view and tenant entry is looked up again. */
static void nkv_tgt_access_who(struct nkv_tgt_ctrl *c)
{
	nkv_tenant_who_init(&c->who);
	memset(c->tacct, 0, sizeof(c->tacct));
	c->acc_gen = UINT64_MAX;
}

void nkv_tgt_ctrl_set_peer(struct nkv_tgt_ctrl *c, uint32_t uid, uint32_t gid)
{
	c->who.has_cred = 1;
	c->who.uid = uid;
	c->who.gid = gid;
	nkv_tgt_access_who(c);
}

void nkv_tgt_access_hostnqn(struct nkv_tgt_ctrl *c)
{
	snprintf(c->who.hostnqn, sizeof(c->who.hostnqn), "%s", c->hostnqn);
	nkv_tgt_access_who(c);
}

uint64_t nkv_tgt_ctrl_tenant(const struct nkv_tgt_ctrl *c, uint32_t *uid, uint32_t *gid)
{
	if (uid)
		*uid = c->who.uid;
	if (gid)
		*gid = c->who.gid;
	return c->who.has_cred || c->who.hostnqn[0] ? c->who.id : 0;
}

struct nkv_tenants *nkv_subsys_tenants(struct nkv_subsys *ss)
{
	return ss ? ss->tenants : NULL;
}

uint16_t nkv_tgt_access_check(struct nkv_tgt_ctrl *c, struct nkv_tgt_cmd *cmd)
{
	uint32_t nsid = cmd->sqe.nsid;
	enum nkv_access a = nkv_tgt_access(c, nsid);

	if (a == NKV_ACCESS_NONE) {
		nkv_access_denied(c->ss->tenants, nsid, &c->who);
		return nkv_tgt_sc(NKV_SC_INVALID_NS);
	}
	if (nsid && nsid <= NKV_TGT_MAX_NS && !c->tacct[nsid])
		c->tacct[nsid] = nkv_tenant_enter(c->ss->tenants, nsid, &c->who);
	cmd->op.owner = c->who.id;
	return 0;
}

int nkv_tgt_access_writes(struct nkv_tgt_ctrl *c, uint32_t nsid)
{
	return nkv_tgt_access(c, nsid) == NKV_ACCESS_RW;
}
