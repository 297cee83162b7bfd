/* SPDX-License-Identifier: MIT */
/* Namespace Attribute Changed through the transport-neutral request
 * (req.h): OAES bit 8, Set/Get Features 0Bh, the notice on a held AER,
 * an event kept for the next AER, the notice masked until log page 04h
 * is read (RAE honoured), notices switched off, the Changed Namespace
 * List's checks, a controller created after a change. The transport's
 * part (telling each controller, nkv_tgt_ctrl_ns_events) is called here
 * as a transport's poll thread calls it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "nvmf/fabrics.h"
#include "target/core/ns.h"
#include "target/core/poller.h"
#include "target/core/req.h"
#include "tgt_host.h"

#define SC(sc) NKV_STATUS(NKV_SCT_GENERIC, sc)
#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:test-host"
#define SUBNQN "nqn.2026-01.io.nkv:target"

static struct nkv_subsys *SS;
static struct nkv_tgt_fab *F;
static int ndone;
static int nheard;

static void done(struct nkv_tgt_req *r)
{
	(void)r;
	ndone++;
}

static struct nkv_be *small_mem(void)
{
	struct nkv_be_conf kv = { sizeof(kv), .capacity = 1 << 20, .max_keys = 100,
				  .max_value = 4096 };

	return h_mem(&kv);
}

static void setup(void)
{
	SS = nkv_subsys_create(NULL);
	cr_assert(SS);
	cr_assert_eq(nkv_subsys_add_ns(SS, 1, small_mem()), 0);
	F = nkv_tgt_fab_create(SS, NULL);
	cr_assert(F);
	ndone = 0;
	nheard = 0;
}

static void teardown(void)
{
	nkv_tgt_fab_destroy(F);
	nkv_subsys_destroy(SS);
}

TestSuite(aen, .init = setup, .fini = teardown, .timeout = 30);

static struct nkv_tgt_ctrl *up(void)
{
	struct nkv_nvmf_connect_data d;
	struct nkv_tgt_req r = { 0 };
	struct nkv_tgt_ctrl *c;

	memset(&d, 0, sizeof(d));
	d.cntlid = 0xffff;
	snprintf(d.hostnqn, sizeof(d.hostnqn), "%s", HOSTNQN);
	snprintf(d.subnqn, sizeof(d.subnqn), "%s", SUBNQN);
	r.sqe.cdw0 = NKV_NVMF_OPC;
	r.sqe.nsid = NKV_NVMF_CONNECT;
	r.sqe.cdw11 = 127;
	cr_assert_eq(nkv_tgt_fab_connect(F, &r, &d, sizeof(d), &c), 0);
	cr_assert_eq(r.status, 0);
	nkv_tgt_ctrl_reg_write(c, NKV_REG_CC, h_cc(), 4);
	return c;
}

static struct nkv_tgt_req run(struct nkv_tgt_ctrl *c, const struct nkv_sqe *s, void *buf,
			      uint64_t len)
{
	struct nkv_tgt_req r = { .sqe = *s, .done = done };
	int before = ndone, i;

	if (len) {
		r.iov[0] = (struct iovec){ buf, len };
		r.iovcnt = 1;
	}
	cr_assert_eq(nkv_tgt_ctrl_exec(c, &r), 0);
	for (i = 0; i < 10000 && ndone == before; i++)
		nkv_tgt_ctrl_poll(c);
	cr_assert_eq(ndone, before + 1, "one done() per request");
	return r;
}

/* An AER, held by the core: it lives in *r until done(). */
static void aer(struct nkv_tgt_ctrl *c, struct nkv_tgt_req *r)
{
	*r = (struct nkv_tgt_req){ .sqe = { .cdw0 = NKV_ADM_ASYNC_EVENT }, .done = done };
	cr_assert_eq(nkv_tgt_ctrl_exec(c, r), 0);
}

/* Log page 04h, 4 KiB from offset 0; rae: leave it as it is. */
static uint16_t changed_ns(struct nkv_tgt_ctrl *c, int rae, struct nkv_changed_ns_log *l)
{
	struct nkv_sqe s = { .cdw0 = NKV_ADM_GET_LOG_PAGE };

	s.cdw10 = NKV_LID_CHANGED_NS | (rae ? 1u << 15 : 0) | ((1024u - 1) << 16);
	memset(l, 0xa5, sizeof(*l));
	return run(c, &s, l, sizeof(*l)).status;
}

static uint16_t set_aec(struct nkv_tgt_ctrl *c, uint32_t v)
{
	struct nkv_sqe s = { .cdw0 = NKV_ADM_SET_FEATURES, .cdw10 = NKV_FID_ASYNC_EVENT_CFG,
			     .cdw11 = v };

	return run(c, &s, NULL, 0).status;
}

static uint32_t get_aec(struct nkv_tgt_ctrl *c)
{
	struct nkv_sqe s = { .cdw0 = NKV_ADM_GET_FEATURES, .cdw10 = NKV_FID_ASYNC_EVENT_CFG };
	struct nkv_tgt_req r = run(c, &s, NULL, 0);

	cr_assert_eq(r.status, 0);
	return r.dw0;
}

static void add_ns(uint32_t nsid)
{
	cr_assert_eq(nkv_subsys_ns_attach(SS, nsid, small_mem()), 0);
}

Test(aen, oaes_bit_8_and_the_feature)
{
	struct nkv_tgt_ctrl *c = up();
	struct nkv_sqe s = { .cdw0 = NKV_ADM_IDENTIFY, .cdw10 = NKV_CNS_CTRL };
	static uint8_t buf[4096];

	cr_assert_eq(run(c, &s, buf, sizeof(buf)).status, 0);
	cr_expect_eq(((struct nkv_id_ctrl *)buf)->oaes, NKV_OAES_NS_ATTR);
	cr_expect_eq(get_aec(c), NKV_AEC_NS_ATTR, "on by default");
	cr_assert_eq(set_aec(c, 0xffffffffu), 0);
	cr_expect_eq(get_aec(c), NKV_AEC_NS_ATTR, "bits of notices never sent are not kept");
	cr_assert_eq(set_aec(c, 0), 0);
	cr_expect_eq(get_aec(c), 0);
}

Test(aen, notice_on_a_held_aer_and_the_log_cleared_on_read)
{
	struct nkv_tgt_ctrl *c = up();
	struct nkv_changed_ns_log l;
	struct nkv_tgt_req a;
	int n0;

	aer(c, &a);
	n0 = ndone;
	add_ns(3);
	cr_assert_eq(nkv_tgt_ctrl_ns_events(c), 1);
	cr_assert_eq(ndone, n0 + 1);
	cr_expect_eq(a.status, 0);
	cr_expect_eq(a.dw0, NKV_AEN_NS_CHANGED);
	cr_expect_eq(nkv_aen_type(a.dw0), NKV_AEN_TYPE_NOTICE);
	cr_expect_eq(nkv_aen_info(a.dw0), NKV_AEN_INFO_NS_ATTR);
	cr_expect_eq(nkv_aen_lid(a.dw0), NKV_LID_CHANGED_NS);
	/* RAE: read, kept. */
	cr_assert_eq(changed_ns(c, 1, &l), 0);
	cr_expect_eq(l.nsid[0], 3);
	cr_expect_eq(l.nsid[1], 0, "zero-filled after the list");
	cr_assert_eq(changed_ns(c, 1, &l), 0);
	cr_expect_eq(l.nsid[0], 3, "RAE leaves the list");
	cr_assert_eq(changed_ns(c, 0, &l), 0);
	cr_expect_eq(l.nsid[0], 3);
	cr_assert_eq(changed_ns(c, 0, &l), 0);
	cr_expect_eq(l.nsid[0], 0, "cleared by the read without RAE");
}

Test(aen, event_without_an_aer_waits_for_the_next)
{
	struct nkv_tgt_ctrl *c = up();
	struct nkv_tgt_req a, b;
	int n0 = ndone;

	add_ns(2);
	cr_expect_eq(nkv_tgt_ctrl_ns_events(c), 0, "no AER held: nothing sent");
	aer(c, &a);
	cr_assert_eq(ndone, n0 + 1, "the kept notice completes the AER at once");
	cr_expect_eq(a.dw0, NKV_AEN_NS_CHANGED);
	/* Any other event too (nkv_tcp_server_aer's path). */
	cr_assert_eq(nkv_tgt_ctrl_aer_event(c, 0x020002), 0);
	aer(c, &b);
	cr_assert_eq(ndone, n0 + 2);
	cr_expect_eq(b.dw0, 0x020002);
	cr_expect_eq(nkv_tgt_ctrl_aers(c), 0);
}

Test(aen, one_notice_until_the_log_is_read)
{
	struct nkv_tgt_ctrl *c = up();
	struct nkv_changed_ns_log l;
	struct nkv_tgt_req a, b;
	int n0;

	aer(c, &a);
	aer(c, &b);
	n0 = ndone;
	add_ns(2);
	cr_assert_eq(nkv_tgt_ctrl_ns_events(c), 1);
	add_ns(4);
	cr_expect_eq(nkv_tgt_ctrl_ns_events(c), 0, "masked until 04h is read");
	cr_assert_eq(ndone, n0 + 1);
	cr_assert_eq(changed_ns(c, 1, &l), 0);
	cr_expect_eq(nkv_tgt_ctrl_aers(c), 1, "a read with RAE keeps the mask");
	cr_assert_eq(changed_ns(c, 0, &l), 0);
	cr_expect_eq(l.nsid[0], 2);
	cr_expect_eq(l.nsid[1], 4);
	cr_expect_eq(nkv_tgt_ctrl_aers(c), 1, "what the read covered is not noticed again");
	add_ns(5);
	cr_assert_eq(nkv_tgt_ctrl_ns_events(c), 1, "unmasked by the read");
	cr_expect_eq(b.dw0, NKV_AEN_NS_CHANGED);
}

Test(aen, notices_off_are_not_sent)
{
	struct nkv_tgt_ctrl *c = up();
	struct nkv_changed_ns_log l;
	struct nkv_tgt_req a;
	int n0;

	cr_assert_eq(set_aec(c, 0), 0);
	aer(c, &a);
	n0 = ndone;
	add_ns(6);
	cr_expect_eq(nkv_tgt_ctrl_ns_events(c), 0);
	cr_expect_eq(ndone, n0);
	cr_expect_eq(nkv_tgt_ctrl_aers(c), 1);
	cr_assert_eq(changed_ns(c, 0, &l), 0);
	cr_expect_eq(l.nsid[0], 6, "the list still records it");
	cr_assert_eq(set_aec(c, NKV_AEC_NS_ATTR), 0);
	cr_expect_eq(nkv_tgt_ctrl_ns_events(c), 0, "a change made while off stays unsent");
}

Test(aen, a_controller_sees_only_later_changes)
{
	struct nkv_tgt_ctrl *c;
	struct nkv_changed_ns_log l;
	struct nkv_tgt_req a;
	int n0;

	add_ns(7);
	c = up();
	aer(c, &a);
	n0 = ndone;
	cr_expect_eq(nkv_tgt_ctrl_ns_events(c), 0);
	cr_expect_eq(ndone, n0);
	cr_assert_eq(changed_ns(c, 0, &l), 0);
	cr_expect_eq(l.nsid[0], 0);
}

Test(aen, log_page_checks)
{
	struct nkv_tgt_ctrl *c = up();
	struct nkv_sqe s = { .cdw0 = NKV_ADM_GET_LOG_PAGE };
	static uint8_t buf[8192];

	s.cdw10 = NKV_LID_CHANGED_NS | (3u << 16);
	s.cdw12 = 2;	/* not a dword offset */
	cr_expect_eq(run(c, &s, buf, 16).status, SC(NKV_SC_INVALID_FIELD));
	s.cdw12 = 4096;	/* past the page */
	cr_expect_eq(run(c, &s, buf, 16).status, SC(NKV_SC_INVALID_FIELD));
	add_ns(8);
	s.cdw12 = 0;
	s.cdw10 = NKV_LID_CHANGED_NS | ((2048u - 1) << 16);	/* 8 KiB: zeros past the end */
	memset(buf, 0xa5, sizeof(buf));
	cr_assert_eq(run(c, &s, buf, sizeof(buf)).status, 0);
	cr_expect_eq(((uint32_t *)buf)[0], 8);
	cr_expect_eq(((uint32_t *)buf)[2047], 0);
}

static void heard(void *arg)
{
	(void)arg;
	nheard++;
}

Test(aen, listeners_hear_each_change_until_they_unlisten)
{
	int i;

	cr_assert_eq(nkv_subsys_ns_listen(SS, heard, &nheard), 0);
	add_ns(9);
	cr_expect_eq(nheard, 1);
	nkv_subsys_ns_unlisten(SS, heard, &nheard);
	add_ns(10);
	cr_expect_eq(nheard, 1);
	for (i = 0; i < 64 && !nkv_subsys_ns_listen(SS, heard, &i); i++)
		;
	cr_expect(i > 0 && i < 64, "a bounded table: -ENOSPC past it (%d)", i);
	cr_expect_eq(nkv_subsys_ns_listen(NULL, heard, NULL), -EINVAL);
}

static uint16_t kv_exist(struct nkv_tgt_ctrl *c, uint32_t nsid)
{
	struct nkv_tgt_req r = { .qid = 1, .done = done };
	int before = ndone, i;

	h_kv(&r.sqe, NKV_KV_EXIST, nsid, "key", 3, 0, 0);
	r.sqe.cdw0 |= 1u << 14;	/* PSDT: SGLs, as a fabrics host sends */
	cr_assert_eq(nkv_tgt_ctrl_exec(c, &r), 0);
	for (i = 0; i < 10000 && ndone == before; i++)
		nkv_tgt_ctrl_poll(c);
	cr_assert_eq(ndone, before + 1);
	return r.status;
}

static struct nkv_tgt_ctrl *up_io(void)
{
	struct nkv_tgt_ctrl *c = up(), *x;
	struct nkv_nvmf_connect_data d;
	struct nkv_tgt_req r = { 0 };

	memset(&d, 0, sizeof(d));
	d.cntlid = nkv_tgt_ctrl_cntlid(c);
	snprintf(d.hostnqn, sizeof(d.hostnqn), "%s", HOSTNQN);
	snprintf(d.subnqn, sizeof(d.subnqn), "%s", SUBNQN);
	r.sqe.cdw0 = NKV_NVMF_OPC;
	r.sqe.nsid = NKV_NVMF_CONNECT;
	r.sqe.cdw10 = 1u << 16;	/* QID 1 */
	r.sqe.cdw11 = 31;
	r.qid = 1;
	cr_assert_eq(nkv_tgt_fab_connect(F, &r, &d, sizeof(d), &x), 0);
	cr_assert_eq(r.status, 0);
	return c;
}

Test(aen, remove_refuses_new_commands_and_tells_the_host)
{
	struct nkv_tgt_ctrl *c = up_io();
	struct nkv_changed_ns_log l;
	struct nkv_tgt_req a;

	add_ns(2);
	cr_expect_eq(kv_exist(c, 2), SC(NKV_SC_KV_KEY_NOT_EXISTS));
	cr_assert_eq(changed_ns(c, 0, &l), 0);	/* the add read and cleared */
	aer(c, &a);
	cr_assert_eq(nkv_subsys_ns_remove(SS, 2, 1000), 0);
	cr_expect_eq(kv_exist(c, 2), SC(NKV_SC_INVALID_NS));
	cr_expect_eq(kv_exist(c, 1), SC(NKV_SC_KV_KEY_NOT_EXISTS),
		     "the others serve on");
	cr_assert_eq(nkv_tgt_ctrl_ns_events(c), 1);
	cr_expect_eq(a.dw0, NKV_AEN_NS_CHANGED);
	cr_assert_eq(changed_ns(c, 0, &l), 0);
	cr_expect_eq(l.nsid[0], 2);
	cr_expect_eq(nkv_subsys_ns_remove(SS, 2, 1000), -ENOENT);
	cr_expect_eq(nkv_subsys_ns_remove(SS, 0, 1000), -EINVAL);
	cr_expect_eq(nkv_subsys_ns_remove(SS, 33, 1000), -EINVAL);
}

Test(aen, remove_waits_for_a_holder_then_gives_up_and_serves_on)
{
	struct nkv_tgt_ctrl *c = up_io();
	struct nkv_be *be = nkv_subsys_ns_hold(SS, 1);

	cr_assert_not_null(be);
	cr_expect_eq(nkv_subsys_ns_remove(SS, 1, 50), -ETIMEDOUT);
	cr_expect_eq(kv_exist(c, 1), SC(NKV_SC_KV_KEY_NOT_EXISTS),
		     "served again after the timeout");
	nkv_subsys_ns_release(SS, 1);
	cr_expect_eq(nkv_subsys_ns_remove(SS, 1, 50), 0);
	cr_expect_eq(kv_exist(c, 1), SC(NKV_SC_INVALID_NS));
}
