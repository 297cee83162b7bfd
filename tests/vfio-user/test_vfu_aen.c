/* SPDX-License-Identifier: MIT */
/* Namespace Attribute Changed over vfio-user: a namespace attached from
 * another thread (as namespace_add does) reaches the connection's poll
 * thread through the server's listener (control.c) and completes the
 * AER the client left on its admin queue; log page 04h names the nsid;
 * a client that sent no AER gets the notice with the AER it sends later. */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "nvmf/fabrics.h"
#include "target/backends/registry.h"
#include "target/core/ns.h"
#include "vfu_util.h"

static struct tl_server srv;

static void up(void) { cr_assert_eq(vt_server_start(&srv, 0), 0); }
static void down(void) { tl_server_stop(&srv); }

TestSuite(vfu_aen, .init = up, .fini = down, .timeout = 30);

/* The next admin CQE, bounded: its status, or -1 after ms. */
static int admin_cqe(struct vt_nvme *n, uint32_t *dw0, unsigned ms)
{
	volatile struct nkv_cqe *cq = vt_page(n, VT_ACQ);
	uint64_t t0 = tl_now_ms();
	uint32_t dw3;

	while (nkv_cqe_phase(dw3 = __atomic_load_n(&cq[n->cq_head[0]].dw3, __ATOMIC_ACQUIRE)) !=
	       n->phase[0]) {
		if (tl_now_ms() - t0 > ms)
			return -1;
		usleep(100);
	}
	*dw0 = cq[n->cq_head[0]].dw0;
	n->cq_head[0] = (n->cq_head[0] + 1) % VT_QD;
	if (!n->cq_head[0])
		n->phase[0] ^= 1;
	n->db[(2u * 0 + 1) << n->dstrd] = n->cq_head[0];
	return nkv_cqe_status(dw3);
}

static void attach(uint32_t nsid)
{
	struct nkv_be_conf kv = { sizeof(kv), .capacity = 1 << 20, .max_keys = 100,
				  .max_value = 4096 };
	char err[256];
	struct nkv_be *be = nkv_be_create("mem", &kv, err, sizeof(err));

	cr_assert_not_null(be, "%s", err);
	cr_assert_eq(nkv_subsys_ns_attach(nkv_tgt_embed_ss(srv.tgt), nsid, be), 0);
}

static uint32_t changed_first(struct vt_nvme *n)
{
	struct nkv_sqe s = { .cdw0 = NKV_ADM_GET_LOG_PAGE };

	s.cdw10 = NKV_LID_CHANGED_NS | ((1024u - 1) << 16);
	s.prp1 = vt_iova(n, VT_DATA);
	memset(vt_page(n, VT_DATA), 0xa5, 4096);
	cr_assert_eq(vt_cmd(n, 0, &s, NULL), 0);
	return ((uint32_t *)vt_page(n, VT_DATA))[0];
}

Test(vfu_aen, attach_completes_the_held_aer)
{
	struct nkv_sqe aer = { .cdw0 = NKV_ADM_ASYNC_EVENT };
	struct vt_nvme n;
	uint32_t dw0 = 0;

	cr_assert_eq(vt_nvme_up(&n, srv.path), 0);
	vt_submit(&n, 0, &aer);
	cr_assert_eq(admin_cqe(&n, &dw0, 200), -1, "held: no event yet");
	attach(2);
	cr_assert_eq(admin_cqe(&n, &dw0, 3000), 0, "the notice arrives");
	cr_expect_eq(dw0, NKV_AEN_NS_CHANGED);
	cr_expect_eq(changed_first(&n), 2);
	cr_expect_eq(changed_first(&n), 0, "cleared by the read");
	vt_nvme_down(&n);
}

Test(vfu_aen, notice_kept_for_a_later_aer)
{
	struct nkv_sqe aer = { .cdw0 = NKV_ADM_ASYNC_EVENT };
	struct vt_nvme n;
	uint32_t dw0 = 0;

	cr_assert_eq(vt_nvme_up(&n, srv.path), 0);
	attach(3);
	usleep(50000);	/* the connection's thread has handled the news */
	vt_submit(&n, 0, &aer);
	cr_assert_eq(admin_cqe(&n, &dw0, 3000), 0);
	cr_expect_eq(dw0, NKV_AEN_NS_CHANGED);
	cr_expect_eq(changed_first(&n), 3);
	vt_nvme_down(&n);
}
