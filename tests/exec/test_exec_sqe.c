/* SPDX-License-Identifier: MIT */
/*
 * Hostile Exec SQEs against the controller core with the Exec room
 * (in-process, the test as host; no libFuzzer): a head claiming more key
 * than the buffer holds, key lengths 0 and past 255, CDW10 past the
 * buffer and past any transfer, CDW12 past any transfer, KL or options
 * in CDW11, fused, an NVM namespace, a missing one, PRPs outside
 * registered memory, and Exec with no room registered. Each gets its
 * status, none a crash or hang; a good Exec afterwards still works.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "target/exec/exec.h"
#include "tgt_host.h"

static struct h H;

static const char mod[] = "return function(v, i) return i .. v:sub(1, 3) end";

static void setup(void)
{
	struct nkv_exec_entry e = { .nsid = 1, .op_id = 1, .klen = 3 };

	h_init(&H, NULL, NULL);
	cr_assert_eq(h_enable(&H, 16), NKV_CSTS_RDY);
	cr_assert_eq(h_create_qpair(&H, 1, 64), 0);
	cr_assert_eq(nkv_exec_start(1), 0);
	nkv_exec_clear();
	memcpy(e.key, "mod", 3);
	nkv_exec_sha256(mod, strlen(mod), e.digest);
	cr_assert_eq(nkv_exec_allow(&e), 0);
	cr_assert_eq(h_store(&H, 1, "mod", 3, mod, (uint32_t)strlen(mod), 0), 0);
	cr_assert_eq(h_store(&H, 1, "val", 3, "abcdef", 6, 0), 0);
}

static void teardown(void)
{
	nkv_exec_stop();
	nkv_exec_clear();
	h_fini(&H);
}

TestSuite(exec_sqe, .init = setup, .fini = teardown, .timeout = 30);

/* An Exec SQE on nsid: the buffer at iova, SGL1 one Data Block of sgl
 * bytes; the head claims hklen, the key "val" follows, then input. */
static uint16_t ex_sgl(uint32_t nsid, uint32_t hklen, uint32_t cdw10, uint32_t cdw12,
		       uint32_t sgl, uint32_t cdw11, uint32_t *dw0, uint8_t **buf)
{
	uint64_t iova = h_alloc(&H, 1u << 16);
	uint8_t *p = h_ptr(&H, iova);
	struct nkv_sqe s;
	struct nkv_cqe e;
	uint16_t st;

	p[0] = (uint8_t)hklen;
	p[1] = (uint8_t)(hklen >> 8);
	memcpy(p + 2, "valin", 5);	/* key "val", input "in" */
	memset(&s, 0, sizeof(s));
	s.cdw0 = NKV_KV_EXEC;
	s.nsid = nsid;
	s.cdw10 = cdw10;
	s.cdw11 = cdw11;
	s.cdw12 = cdw12;
	s.cdw13 = 1;
	h_sgl_db(&s, iova, sgl);
	st = h_cmd(&H, 1, &s, &e);
	if (dw0)
		*dw0 = e.dw0;
	if (buf)
		*buf = p;
	return st & 0x7ff;
}

#define GEN(sc) NKV_STATUS(NKV_SCT_GENERIC, sc)

Test(exec_sqe, a_good_one)
{
	uint32_t dw0 = 0;
	uint8_t *p;

	cr_assert_eq(ex_sgl(1, 3, 2, 64, 64, 0, &dw0, &p), 0);
	cr_assert_eq(dw0, 5);
	cr_assert_eq(memcmp(p, "inabc", 5), 0, "the output overwrites the buffer from byte 0");
}

Test(exec_sqe, key_lengths)
{
	cr_assert_eq(ex_sgl(1, 0, 2, 64, 64, 0, NULL, NULL), GEN(NKV_SC_KV_INVALID_KEY_SIZE));
	cr_assert_eq(ex_sgl(1, 256, 2, 64, 64, 0, NULL, NULL), GEN(NKV_SC_KV_INVALID_KEY_SIZE));
	cr_assert_eq(ex_sgl(1, 65535, 2, 64, 64, 0, NULL, NULL), GEN(NKV_SC_KV_INVALID_KEY_SIZE));
	/* A head claiming more key than the buffer holds. */
	cr_assert_eq(ex_sgl(1, 200, 0, 0, 16, 0, NULL, NULL), GEN(NKV_SC_SGL_DATA_LEN_INVALID));
	/* The buffer too short for its own length field. */
	cr_assert_neq(ex_sgl(1, 3, 0, 0, 1, 0, NULL, NULL), 0);
}

Test(exec_sqe, lengths_past_the_buffer)
{
	cr_assert_eq(ex_sgl(1, 3, 1000, 0, 64, 0, NULL, NULL), GEN(NKV_SC_SGL_DATA_LEN_INVALID),
		     "CDW10 past the buffer");
	cr_assert_eq(ex_sgl(1, 3, 0xffffffffu, 0, 64, 0, NULL, NULL), GEN(NKV_SC_INVALID_FIELD),
		     "CDW10 past any transfer");
	cr_assert_eq(ex_sgl(1, 3, 2, 0xffffffffu, 64, 0, NULL, NULL), GEN(NKV_SC_INVALID_FIELD),
		     "CDW12 past any transfer");
	cr_assert_eq(ex_sgl(1, 3, 2, 4096, 64, 0, NULL, NULL), GEN(NKV_SC_SGL_DATA_LEN_INVALID),
		     "CDW12 past the buffer");
}

Test(exec_sqe, fields_it_does_not_take)
{
	cr_assert_eq(ex_sgl(1, 3, 2, 64, 64, 3, NULL, NULL), GEN(NKV_SC_INVALID_FIELD), "KL");
	cr_assert_eq(ex_sgl(1, 3, 2, 64, 64, 1u << 8, NULL, NULL), GEN(NKV_SC_INVALID_FIELD),
		     "an option bit");
	cr_assert_eq(ex_sgl(2, 3, 2, 64, 64, 0, NULL, NULL), GEN(NKV_SC_INVALID_OPCODE),
		     "an NVM namespace");
	cr_assert_eq(ex_sgl(9, 3, 2, 64, 64, 0, NULL, NULL), GEN(NKV_SC_INVALID_NS));
}

Test(exec_sqe, fused_and_unregistered_memory)
{
	struct nkv_sqe s;

	memset(&s, 0, sizeof(s));
	s.cdw0 = NKV_KV_EXEC | (1u << 8);	/* FUSE */
	s.nsid = 1;
	s.cdw13 = 1;
	h_sgl_db(&s, H_IOVA, 64);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL) & 0x7ff, GEN(NKV_SC_INVALID_FIELD));
	s.cdw0 = NKV_KV_EXEC;
	s.prp1 = 0xdead0000ull;	/* PRPs outside every registered region */
	s.prp2 = 0;
	cr_assert_neq(h_cmd(&H, 1, &s, NULL) & 0x7ff, 0);
	/* Still serving. */
	cr_assert_eq(ex_sgl(1, 3, 2, 64, 64, 0, NULL, NULL), 0);
}

Test(exec_sqe, no_room_no_exec)
{
	nkv_exec_stop();
	cr_assert_eq(ex_sgl(1, 3, 2, 64, 64, 0, NULL, NULL), GEN(NKV_SC_INVALID_OPCODE));
	cr_assert_eq(nkv_exec_start(1), 0);
	cr_assert_eq(ex_sgl(1, 3, 2, 64, 64, 0, NULL, NULL), 0);
}
