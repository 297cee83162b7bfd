/* SPDX-License-Identifier: MIT */
/* Wire layer: layouts at run time, accessor round trips, and the C++17
 * build of nkv_wire.h + nkv_dev.h (cxx_probe.cpp, linked in). */
#include <criterion/criterion.h>
#include <stddef.h>

#include "nkv_dev.h"
#include "nkv_mr.h"

unsigned nkv_cxx_probe_sizes(void);

Test(wire, layouts)
{
	cr_expect_eq(sizeof(struct nkv_sqe), 64);
	cr_expect_eq(offsetof(struct nkv_sqe, prp1), 24);
	cr_expect_eq(offsetof(struct nkv_sqe, cdw14), 56);
	cr_expect_eq(sizeof(struct nkv_cqe), 16);
	cr_expect_eq(offsetof(struct nkv_cqe, dw3), 12);
	cr_expect_eq(sizeof(struct nkv_dev_qp), 200);
	cr_expect_eq(offsetof(struct nkv_dev_qp, max_key), 160);
	cr_expect_eq(sizeof(struct nkv_dev_slot), 56);
	cr_expect_eq(sizeof(struct nkv_sgl_desc), 16);
	cr_expect_eq(offsetof(struct nkv_sgl_desc, id), 15);
	cr_expect_eq(offsetof(struct nkv_dev_qp, sq_tail), 96);
	cr_expect_eq(sizeof(struct nkv_id_ns_kv), 4096);
	cr_expect_eq(offsetof(struct nkv_id_ns_kv, kvf), 72);
	cr_expect_eq(offsetof(struct nkv_dev_qp, cmd_addr), 168);
	cr_expect_eq(offsetof(struct nkv_dev_qp, qp_flags), 196);
	cr_expect_eq(sizeof(struct nkv_dev_mr), 56);
	cr_expect_eq(offsetof(struct nkv_dev_mr, tab_addr), 32);
	cr_expect_eq(sizeof(struct nkv_dev_iov), 24);
	cr_expect_eq(offsetof(struct nkv_dev_iov, len), 16);
	cr_expect_eq(offsetof(struct nkv_dev_cpl, cap), 12);
}

Test(wire, cxx17_build_agrees)
{
	cr_expect_eq(nkv_cxx_probe_sizes(), 64u + 16u + 200u + 56u + 24u);
}

Test(wire, cqe_and_status_round_trip)
{
	uint32_t dw3 = nkv_cqe_dw3(0xbeef, 1, NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_EXISTS) | NKV_STATUS_DNR);
	uint16_t st = nkv_cqe_status(dw3);

	cr_expect_eq(nkv_cqe_cid(dw3), 0xbeef);
	cr_expect_eq(nkv_cqe_phase(dw3), 1u);
	cr_expect_eq(nkv_status_sc(st), 0x89);
	cr_expect_eq(nkv_status_sct(st), 0);
	cr_expect_eq(nkv_status_dnr(st), 1u);
	cr_expect_eq(nkv_cqe_sqhd(nkv_cqe_dw2(77, 3)), 77);
	cr_expect_eq(nkv_cqe_sqid(nkv_cqe_dw2(77, 3)), 3);
}

Test(wire, registers_round_trip)
{
	uint64_t cap = 0x3ffull | (1ull << 32) | (1ull << 43);

	cr_expect_eq(nkv_cap_mqes(cap), 0x3ffu);
	cr_expect_eq(nkv_cap_dstrd(cap), 1u);
	cr_expect_eq(nkv_cap_css(cap) & NKV_CAP_CSS_IOCS, NKV_CAP_CSS_IOCS);
	cr_expect_eq(nkv_sq_db_off(1, 0), 0x1008u);
	cr_expect_eq(nkv_cq_db_off(1, 1), 0x1000u + 3u * 8u);
	cr_expect_eq(nkv_aqa_asqs(nkv_aqa(32, 64)), 32u);
	cr_expect_eq(nkv_aqa_acqs(nkv_aqa(32, 64)), 64u);
	cr_expect_eq(nkv_queue_entries(nkv_queue_cdw10(5, 1024)), 1024u);
	cr_expect_eq(nkv_queue_qid(nkv_queue_cdw10(5, 1024)), 5u);
	cr_expect_eq(nkv_list_entry_size(1), 4u);
	cr_expect_eq(nkv_list_entry_size(3), 8u);
	cr_expect_eq(nkv_list_entry_size(16), 20u);
}
