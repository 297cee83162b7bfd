/* SPDX-License-Identifier: MIT */
/*
 * Exec's wire helpers and builders (nkv_wire.h, nkv_dev.h): every field
 * of an Exec SQE, the buffer size rule, a key length outside 1..255
 * refused, and nkv_dev_exec() writing the head below the slot's value
 * with a data pointer of exactly max(2 + klen + ilen, ocap) bytes.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "host/prep.h"
#include "nkv_dev.h"

Test(exec_prep, sqe_fields)
{
	struct nkv_prep p = nkv_sqe_exec(3, 9, 0xabcdef01u, 100, 4096,
					 nkv_dptr_sgl(0x10000, 4096));

	cr_assert_eq(p.err, 0);
	cr_assert_eq(nkv_sqe_opc(&p.sqe), NKV_KV_EXEC);
	cr_assert_eq(NKV_KV_EXEC, 0x83);
	cr_assert_eq(p.sqe.nsid, 3);
	cr_assert_eq(nkv_exec_in_len(&p.sqe), 100);
	cr_assert_eq(nkv_exec_out_cap(&p.sqe), 4096);
	cr_assert_eq(nkv_exec_op_id(&p.sqe), 0xabcdef01u);
	cr_assert_eq(p.sqe.cdw11, 0, "KL 0, no options");
	cr_assert_eq(nkv_sqe_psdt(&p.sqe), NKV_PSDT_SGL);
	cr_assert_eq(p.sqe.cdw2 | p.sqe.cdw3 | p.sqe.cdw14 | p.sqe.cdw15, 0, "no inline key");
	cr_assert_eq(nkv_sqe_exec(1, 0, 0, 0, 0, nkv_dptr_prp(0, 0)).err, NKV_EINVAL);
	cr_assert_eq(nkv_sqe_exec(1, 256, 0, 0, 0, nkv_dptr_prp(0, 0)).err, NKV_EINVAL);
}

Test(exec_prep, host_prep_form)
{
	struct nkv_sqe s;

	cr_assert_eq(nkv_prep_exec(&s, 1, 0x1234, 7, 9, 10, 20, 0x1000, 0), 0);
	cr_assert_eq(nkv_sqe_cid(&s), 0x1234);
	cr_assert_eq(nkv_sqe_opc(&s), NKV_KV_EXEC);
	cr_assert_eq(s.prp1, 0x1000);
	cr_assert_eq(nkv_sqe_psdt(&s), NKV_PSDT_PRP);
	cr_assert_eq(nkv_exec_op_id(&s), 9);
	cr_assert_eq(nkv_prep_exec(&s, 1, 1, 0, 9, 10, 20, 0x1000, 0), NKV_EINVAL);
	cr_assert_eq(nkv_prep_exec(NULL, 1, 1, 7, 9, 10, 20, 0x1000, 0), NKV_EINVAL);
}

Test(exec_prep, buffer_size)
{
	cr_assert_eq(nkv_exec_buf_size(5, 10, 0), 17);
	cr_assert_eq(nkv_exec_buf_size(5, 10, 100), 100);
	cr_assert_eq(nkv_exec_buf_size(255, 0xffffffffu, 0xffffffffu), 2ull + 255 + 0xffffffffull,
		     "64-bit: no wrap");
	cr_assert_eq(nkv_dev_exec_len(5, 10, 100), 93, "the value area's part");
	cr_assert_eq(NKV_KV_VS_EXEC & (NKV_KV_VS_READ_ONLY | NKV_KV_VS_SIZE_QUERY), 0);
}

/* A slot of 8 KiB after a page of head room, SGL-capable. */
Test(exec_prep, dev_exec_writes_the_head)
{
	uint8_t *mem = aligned_alloc(4096, 3 * 4096);
	struct nkv_dev_slot s = { 0 };
	struct nkv_dev_qp qp;
	struct nkv_prep p;
	struct nkv_sgl_desc d;

	memset(&qp, 0, sizeof(qp));
	s.addr = (uint64_t)(uintptr_t)(mem + 4096);
	s.prp1 = 0x200000 + 4096;
	s.head_end = s.prp1;
	s.size = 8192;
	s.flags = NKV_DEV_SLOT_SGL;
	qp.slots_addr = (uint64_t)(uintptr_t)&s;
	qp.nr_slots = 1;
	qp.nsid = 1;
	qp.max_key = NKV_KEY_MAX;
	p = nkv_dev_exec(&qp, 0, "block", 5, 7, 3, 100);
	cr_assert_eq(p.err, 0);
	cr_assert_eq(mem[4096 - 7], 5, "the head's length, below the value");
	cr_assert_eq(memcmp(mem + 4096 - 5, "block", 5), 0);
	d = nkv_sqe_sgl1(&p.sqe);
	cr_assert_eq(d.addr, s.prp1 - 7, "the buffer starts at the head");
	cr_assert_eq(d.len, 100, "max(2 + 5 + 3, 100)");
	cr_assert_eq((uint8_t *)nkv_dev_exec_out(&qp, 0, 5), mem + 4096 - 7);
	cr_assert_eq(nkv_dev_exec(&qp, 0, "block", 5, 7, 3, 8192 + 8).err, NKV_EINVAL,
		     "an output cap past the slot");
	cr_assert_eq(nkv_dev_exec(&qp, 0, "block", 0, 7, 3, 10).err, NKV_EINVAL);
	free(mem);
}
