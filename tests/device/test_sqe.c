/* SPDX-License-Identifier: MIT */
/* Byte-exact SQE vectors for every KV command and NVM Read/Write, key
 * placement for 1/9/16-byte keys, option bits, key length errors. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "nkv_dev.h"
#include "host/prep.h"

/* The error codes are the Linux errno values they are named after. */
Test(sqe, error_codes_are_errno)
{
	cr_expect_eq(NKV_EIO, -EIO);
	cr_expect_eq(NKV_EINVAL, -EINVAL);
	cr_expect_eq(NKV_ENOSPC, -ENOSPC);
	cr_expect_eq(NKV_ERANGE, -ERANGE);
	cr_expect_eq(NKV_EBADMSG, -EBADMSG);
	cr_expect_eq(NKV_EMSGSIZE, -EMSGSIZE);
	cr_expect_eq(NKV_ENOBUFS, -ENOBUFS);
	cr_expect_eq(NKV_ETIMEDOUT, -ETIMEDOUT);
}

Test(sqe, gpukey01_store_vector)
{
	struct nkv_sqe s;
	const uint8_t want[64] = {
		0x01, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00,	/* opc 01, cid 1, nsid 1 */
		'g', 'p', 'u', 'k', 'e', 'y', '0', '1',		/* CDW2-3 */
		0, 0, 0, 0, 0, 0, 0, 0,				/* MPTR */
		0, 0, 0, 0, 0x01, 0, 0, 0,			/* PRP1 0x100000000 */
		0, 0, 0, 0, 0, 0, 0, 0,				/* PRP2 */
		0x00, 0x10, 0, 0, 0x08, 0, 0, 0,		/* CDW10 4096, CDW11 KL 8 */
		0, 0, 0, 0, 0, 0, 0, 0,				/* CDW12-13 */
		0, 0, 0, 0, 0, 0, 0, 0,				/* CDW14-15 */
	};

	memset(&s, 0xa5, sizeof(s));
	cr_assert_eq(nkv_prep_store(&s, 1, 1, "gpukey01", 8, 0, 4096, 0x100000000ull, 0), 0);
	cr_expect_eq(s.cdw2, 0x6b757067u);
	cr_expect_eq(s.cdw3, 0x31307965u);
	cr_expect_eq(s.cdw10, 0x1000u);
	cr_expect_eq(s.cdw11, 0x08u);
	cr_expect_eq(s.prp1, 0x100000000ull);
	cr_expect_arr_eq(&s, want, 64);
}

static void expect_key(const struct nkv_sqe *s, const uint8_t *key, uint32_t klen)
{
	uint8_t got[16];
	uint32_t i;

	cr_expect_eq(nkv_kv_key_get(s, got), klen);
	for (i = 0; i < 16; i++)
		cr_expect_eq(got[i], i < klen ? key[i] : 0, "key byte %u", i);
}

Test(sqe, key_lengths_1_9_16)
{
	const uint8_t k[16] = "0123456789abcdef";
	uint32_t lens[3] = { 1, 9, 16 }, i;
	struct nkv_sqe s;

	memset(&s, 0, sizeof(s));

	for (i = 0; i < 3; i++) {
		cr_assert_eq(nkv_prep_retrieve(&s, 2, 7, k, lens[i], 512, 0x2000, 0x3000), 0);
		expect_key(&s, k, lens[i]);
		cr_expect_eq(nkv_kv_key_len(&s), lens[i]);
		cr_expect_eq(nkv_sqe_opc(&s), NKV_KV_RETRIEVE);
		cr_expect_eq(nkv_sqe_cid(&s), 7);
		cr_expect_eq(s.nsid, 2u);
		cr_expect_eq(s.cdw10, 512u);
		cr_expect_eq(s.prp2, 0x3000u);
	}
	/* 9 bytes: 0-7 in CDW2/3, byte 8 alone in CDW14's low byte. */
	nkv_prep_exist(&s, 1, 0, k, 9);
	cr_expect_eq(s.cdw14, (uint32_t)'8');
	cr_expect_eq(s.cdw15, 0u);
	nkv_prep_delete(&s, 1, 0, k, 16);
	cr_expect_eq(s.cdw14, 0x62613938u);	/* "89ab" */
	cr_expect_eq(s.cdw15, 0x66656463u);	/* "cdef" */
}

Test(sqe, every_command_layout)
{
	struct nkv_sqe s;

	cr_assert_eq(nkv_prep_delete(&s, 3, 0x1234, "k", 1), 0);
	cr_expect_eq(s.cdw0, 0x12340010u);
	cr_expect_eq(s.cdw10, 0u);
	cr_expect_eq(s.cdw11, 1u);
	cr_expect_eq(s.prp1, 0u);
	cr_assert_eq(nkv_prep_exist(&s, 3, 0xffff, "k", 1), 0);
	cr_expect_eq(s.cdw0, 0xffff0014u);
	cr_assert_eq(nkv_prep_list(&s, 1, 2, NULL, 0, 8192, 0x5000, 0x6000), 0);
	cr_expect_eq(s.cdw0, 0x00020006u);
	cr_expect_eq(s.cdw10, 8192u);
	cr_expect_eq(s.cdw11, 0u, "List from the beginning: key length 0");
	cr_expect_eq(s.cdw2 | s.cdw3 | s.cdw14 | s.cdw15, 0u);
	cr_assert_eq(nkv_prep_list(&s, 1, 2, "abc", 3, 8192, 0x5000, 0), 0);
	cr_expect_eq(s.cdw11, 3u);
	cr_assert_eq(nkv_prep_nvm_rw(&s, NKV_NVM_WRITE, 1, 9, 0x123456789ull, 8, 0x7000, 0), 0);
	cr_expect_eq(s.cdw0, 0x00090001u);
	cr_expect_eq(s.cdw10, 0x23456789u);
	cr_expect_eq(s.cdw11, 0x1u);
	cr_expect_eq(s.cdw12, 7u);
	cr_expect_eq(nkv_prep_nvm_rw(&s, NKV_NVM_READ, 1, 9, 0, 0, 0x7000, 0), NKV_ERANGE);
	cr_expect_eq(nkv_prep_nvm_rw(&s, NKV_NVM_READ, 1, 9, 0, 65537, 0x7000, 0), NKV_ERANGE);
	cr_expect_eq(nkv_prep_nvm_rw(&s, NKV_NVM_FLUSH, 1, 9, 0, 1, 0, 0), NKV_EINVAL);
}

Test(sqe, store_option_bits)
{
	struct nkv_sqe s;
	uint32_t bit;

	cr_assert_eq(nkv_prep_store(&s, 1, 0, "k", 1, NKV_STORE_MUST_EXIST, 1, 0, 0), 0);
	cr_expect_eq(s.cdw11, 0x101u);
	cr_expect_eq(nkv_kv_options(&s), 0x1u);
	cr_assert_eq(nkv_prep_store(&s, 1, 0, "k", 1, NKV_STORE_MUST_NOT_EXIST, 1, 0, 0), 0);
	cr_expect_eq(s.cdw11, 0x201u);
	cr_assert_eq(nkv_prep_store(&s, 1, 0, "k", 1, NKV_STORE_NO_COMPRESS | NKV_STORE_MUST_EXIST, 1, 0, 0), 0);
	cr_expect_eq(s.cdw11, 0x501u);
	cr_expect_eq(nkv_prep_store(&s, 1, 0, "k", 1, NKV_STORE_MUST_EXIST | NKV_STORE_MUST_NOT_EXIST, 1, 0, 0),
		     NKV_EINVAL, "contradictory options");
	for (bit = 0; bit < 32; bit++) {
		uint32_t o = 1u << bit;

		if (o & NKV_STORE_ALL_MASK)
			continue;
		cr_expect_eq(nkv_prep_store(&s, 1, 0, "k", 1, o, 1, 0, 0), NKV_EINVAL, "bit %u", bit);
	}
}

/* The raw builders know no queue pair: they take the vendor bits (option
 * bits 3-5) where CDW11 puts them, and only those besides the standard. */
Test(sqe, store_vendor_bits_raw)
{
	struct nkv_sqe s;

	cr_assert_eq(nkv_prep_store(&s, 1, 0, "k", 1, NKV_STORE_TTL, 1, 0, 0), 0);
	cr_expect_eq(s.cdw11, 0x801u);
	cr_expect_eq(nkv_kv_options(&s), 0x8u, "option bit 3");
	cr_assert_eq(nkv_prep_store(&s, 1, 0, "k", 1, NKV_STORE_EPHEMERAL, 1, 0, 0), 0);
	cr_expect_eq(nkv_kv_options(&s), 0x10u, "option bit 4");
	cr_assert_eq(nkv_prep_store(&s, 1, 0, "k", 1, NKV_STORE_TOUCH, 0, 0, 0), 0);
	cr_expect_eq(nkv_kv_options(&s), 0x20u, "option bit 5");
	cr_expect_eq(nkv_prep_store(&s, 1, 0, "k", 1, 1u << 14, 1, 0, 0), NKV_EINVAL, "option bit 6");
	cr_expect_eq(nkv_prep_store(&s, 1, 0, "k", 1, 1u << 15, 1, 0, 0), NKV_EINVAL, "option bit 7");
	cr_expect_eq(nkv_sqe_kv_head(NKV_KV_STORE, 1, NKV_STORE_ALL_MASK & ~NKV_STORE_MUST_EXIST, 1,
				     nkv_dptr_prp(0x1000, 0)).err, 0);
	cr_expect_eq(nkv_sqe_kv_head(NKV_KV_STORE, 1, 1u << 14, 1, nkv_dptr_prp(0x1000, 0)).err,
		     NKV_EINVAL);
	cr_expect_eq(nkv_sqe_kv_head(NKV_KV_RETRIEVE, 1, NKV_STORE_TTL, 1,
				     nkv_dptr_prp(0x1000, 0)).err, NKV_EINVAL, "Store only");
}

/* nkv_prep_ttl: the bit and CDW12 on a Store; 0 seconds, another
 * command or a failed prep are no TTL'd Store. */
Test(sqe, prep_ttl)
{
	struct nkv_prep p = nkv_prep_ttl(nkv_sqe_store(1, "k", 1, NKV_STORE_NO_COMPRESS, 8, 0x1000, 0),
					 3600);

	cr_assert_eq(p.err, 0);
	cr_expect_eq(p.sqe.cdw11, NKV_STORE_NO_COMPRESS | NKV_STORE_TTL | 1u);
	cr_expect_eq(p.sqe.cdw12, 3600u);
	cr_expect_eq(p.sqe.cdw10, 8u);
	p = nkv_prep_ttl(nkv_sqe_store(1, "k", 1, 0, 8, 0x1000, 0), 0);
	cr_expect_eq(p.err, NKV_EINVAL, "0 seconds");
	cr_expect_eq(p.sqe.cdw11 | p.sqe.cdw12 | p.sqe.cdw0, 0u, "a refused entry is zeroes");
	cr_expect_eq(nkv_prep_ttl(nkv_sqe_retrieve(1, "k", 1, 8, 0x1000, 0), 5).err, NKV_EINVAL,
		     "not a Store");
	cr_expect_eq(nkv_prep_ttl(nkv_sqe_store(1, "k", 0, 0, 8, 0x1000, 0), 5).err, NKV_EINVAL,
		     "the failed prep's error");
	cr_expect_eq(nkv_prep_ttl(nkv_sqe_store(1, "k", 1, 0, 8, 0x1000, 0), 0xffffffffu).sqe.cdw12,
		     0xffffffffu);
}

/* nkv_dev_store sends a vendor bit only where the queue pair's
 * namespace advertises it (key_flags bits 8-15, as the host fills them),
 * and a touch only without a value, MUST_NOT_EXIST or EPHEMERAL. */
Test(sqe, dev_store_vendor_bits)
{
	struct nkv_dev_slot slot = { .addr = 0x1000, .prp1 = 0x200000, .size = 4096 };
	struct nkv_dev_qp qp;
	struct nkv_prep p;
	uint32_t bit;

	memset(&qp, 0, sizeof(qp));
	qp.slots_addr = (uintptr_t)&slot;
	qp.nr_slots = 1;
	qp.nsid = 1;
	for (bit = 11; bit <= 13; bit++)
		cr_expect_eq(nkv_dev_store(&qp, 0, "k", 1, 1u << bit, bit == 13 ? 0 : 8).err,
			     NKV_EINVAL, "bit %u not advertised", bit);
	cr_expect_eq(nkv_dev_store_ttl(&qp, 0, "k", 1, 0, 8, 60).err, NKV_EINVAL);
	cr_expect_eq(nkv_dev_touch(&qp, 0, "k", 1, 0).err, NKV_EINVAL);
	qp.key_flags = NKV_STORE_EPHEMERAL;
	cr_expect_eq(nkv_dev_store(&qp, 0, "k", 1, NKV_STORE_EPHEMERAL, 8).err, 0);
	cr_expect_eq(nkv_dev_store(&qp, 0, "k", 1, NKV_STORE_TTL, 8).err, NKV_EINVAL, "TTL not advertised");
	qp.key_flags = NKV_STORE_VENDOR_MASK;
	p = nkv_dev_store_ttl(&qp, 0, "k", 1, NKV_STORE_EPHEMERAL, 8, 30);
	cr_assert_eq(p.err, 0);
	cr_expect_eq(nkv_kv_options(&p.sqe) << 8, NKV_STORE_TTL | NKV_STORE_EPHEMERAL);
	cr_expect_eq(p.sqe.cdw12, 30u);
	cr_expect_eq(p.sqe.cdw10, 8u);
	cr_expect_eq(nkv_dev_store_ttl(&qp, 0, "k", 1, 0, 8, 0).err, NKV_EINVAL, "0 seconds");
	p = nkv_dev_touch(&qp, 0, "k", 1, 0);
	cr_assert_eq(p.err, 0);
	cr_expect_eq(nkv_kv_options(&p.sqe) << 8, NKV_STORE_TOUCH);
	cr_expect_eq(p.sqe.cdw10 | p.sqe.cdw12, 0u, "no value, no TTL");
	p = nkv_dev_touch(&qp, 0, "k", 1, 90);
	cr_assert_eq(p.err, 0);
	cr_expect_eq(nkv_kv_options(&p.sqe) << 8, NKV_STORE_TOUCH | NKV_STORE_TTL);
	cr_expect_eq(p.sqe.cdw12, 90u);
	cr_expect_eq(nkv_dev_store(&qp, 0, "k", 1, NKV_STORE_TOUCH, 1).err, NKV_EINVAL, "touch with a value");
	cr_expect_eq(nkv_dev_store(&qp, 0, "k", 1, NKV_STORE_TOUCH | NKV_STORE_MUST_NOT_EXIST, 0).err,
		     NKV_EINVAL);
	cr_expect_eq(nkv_dev_store(&qp, 0, "k", 1, NKV_STORE_TOUCH | NKV_STORE_EPHEMERAL, 0).err,
		     NKV_EINVAL);
	cr_expect_eq(nkv_dev_store(&qp, 0, "k", 1, NKV_STORE_TOUCH | NKV_STORE_MUST_EXIST, 0).err, 0);
	cr_expect_eq(nkv_dev_store(&qp, 0, "k", 1, 1u << 14, 8).err, NKV_EINVAL, "option bit 6");
	cr_expect_eq(nkv_dev_store(&qp, 0, "k", 1, NKV_DEV_KEY_HEAD, 8).err, NKV_EINVAL,
		     "key_flags' own bits are no options");
}

typedef int (*prep_fn)(struct nkv_sqe *, const uint8_t *, uint32_t);
static int p_store(struct nkv_sqe *s, const uint8_t *k, uint32_t l) { return nkv_prep_store(s, 1, 0, k, l, 0, 1, 0, 0); }
static int p_retr(struct nkv_sqe *s, const uint8_t *k, uint32_t l) { return nkv_prep_retrieve(s, 1, 0, k, l, 1, 0, 0); }
static int p_list(struct nkv_sqe *s, const uint8_t *k, uint32_t l) { return nkv_prep_list(s, 1, 0, k, l, 1, 0, 0); }
static int p_del(struct nkv_sqe *s, const uint8_t *k, uint32_t l) { return nkv_prep_delete(s, 1, 0, k, l); }
static int p_exist(struct nkv_sqe *s, const uint8_t *k, uint32_t l) { return nkv_prep_exist(s, 1, 0, k, l); }

/* 17+ rejected everywhere, 0 everywhere but List, with EINVAL as the
 * synchronous API says it; on an error the SQE is all zeroes: never half
 * built, never uninitialized. */
Test(sqe, key_length_errors)
{
	prep_fn f[5] = { p_store, p_retr, p_list, p_del, p_exist };
	uint8_t key[32] = { 0 };
	struct nkv_sqe s, canary, zero;
	int i;

	memset(&canary, 0x5a, sizeof(canary));
	memset(&zero, 0, sizeof(zero));
	for (i = 0; i < 5; i++) {
		s = canary;
		cr_expect_eq(f[i](&s, key, 17), NKV_EINVAL, "cmd %d klen 17", i);
		cr_expect_arr_eq(&s, &zero, sizeof(s), "cmd %d: SQE not zeroed on error", i);
		s = canary;
		cr_expect_eq(f[i](&s, key, 255), NKV_EINVAL);
		s = canary;
		cr_expect_eq(f[i](&s, key, 0), i == 2 ? 0 : NKV_EINVAL, "cmd %d klen 0", i);
		if (i != 2)
			cr_expect_arr_eq(&s, &zero, sizeof(s), "cmd %d: SQE not zeroed on error", i);
		cr_expect_eq(f[i](NULL, key, 4), NKV_EINVAL);
		cr_expect_eq(f[i](&s, NULL, 4), NKV_EINVAL);
	}
}

/* The device builders: the descriptor's namespace and slot, one error
 * code per mistake (a value over the slot is EMSGSIZE, as in nkv_store). */
Test(sqe, device_builders)
{
	struct nkv_dev_slot slot = { .addr = 0x1000, .prp1 = 0x200000, .prp2 = 0x201000,
				     .page2 = 0x201000, .size = 8192 };
	struct nkv_dev_qp qp;
	struct nkv_prep p;

	memset(&qp, 0, sizeof(qp));
	qp.slots_addr = (uintptr_t)&slot;
	qp.nr_slots = 1;
	qp.nsid = 7;
	p = nkv_dev_store(&qp, 0, "abc", 3, 0, 8192);
	cr_assert_eq(p.err, 0);
	cr_expect_eq(p.sqe.nsid, 7u);
	cr_expect_eq(p.sqe.prp1, 0x200000u);
	cr_expect_eq(p.sqe.prp2, 0x201000u);
	cr_expect_eq(nkv_dev_store(&qp, 0, "abc", 3, 0, 8193).err, NKV_EMSGSIZE);
	cr_expect_eq(nkv_dev_store(&qp, 1, "abc", 3, 0, 1).err, NKV_EINVAL);
	cr_expect_eq(nkv_dev_store(&qp, 0, "0123456789abcdefX", 17, 0, 1).err, NKV_EINVAL);
	p = nkv_dev_retrieve(&qp, 0, "abc", 3);
	cr_assert_eq(p.err, 0);
	cr_expect_eq(p.sqe.cdw10, 8192u);
	cr_expect_eq(p.sqe.nsid, 7u);
	p = nkv_dev_exist(&qp, 0, "abc", 3);
	cr_expect_eq(nkv_sqe_opc(&p.sqe), NKV_KV_EXIST);
	cr_expect_eq(p.sqe.nsid, 7u);
	p = nkv_dev_delete(&qp, 0, "abc", 3);
	cr_expect_eq(nkv_sqe_opc(&p.sqe), NKV_KV_DELETE);
	cr_expect_eq(p.sqe.nsid, 7u);
	cr_expect_eq(nkv_dev_value(&qp, 0), (void *)0x1000);
	cr_expect_null(nkv_dev_value(&qp, 1));
}

/* NVMe reads PRP2 by the transfer's length: nothing within one page, a
 * data page when the transfer ends in the second page, a list beyond. A
 * 64 KiB slot must not hand its list to a 2-page Store. */
Test(sqe, slot_prp2_by_length)
{
	struct nkv_dev_slot slot = { .addr = 0x1000, .prp1 = 0x200000, .prp2 = 0x900000,
				     .page2 = 0x7000, .size = 65536 };
	struct nkv_dev_qp qp;
	struct nkv_prep p;

	memset(&qp, 0, sizeof(qp));
	qp.slots_addr = (uintptr_t)&slot;
	qp.nr_slots = 1;
	qp.nsid = 1;
	p = nkv_dev_store(&qp, 0, "k", 1, 0, 4096);
	cr_assert_eq(p.err, 0);
	cr_expect_eq(p.sqe.prp2, 0u);
	p = nkv_dev_store(&qp, 0, "k", 1, 0, 4097);
	cr_assert_eq(p.err, 0);
	cr_expect_eq(p.sqe.prp2, 0x7000u);
	p = nkv_dev_store(&qp, 0, "k", 1, 0, 8192);
	cr_assert_eq(p.err, 0);
	cr_expect_eq(p.sqe.prp2, 0x7000u);
	p = nkv_dev_store(&qp, 0, "k", 1, 0, 8193);
	cr_assert_eq(p.err, 0);
	cr_expect_eq(p.sqe.prp2, 0x900000u);
	p = nkv_dev_retrieve(&qp, 0, "k", 1);
	cr_assert_eq(p.err, 0);
	cr_expect_eq(p.sqe.prp2, 0x900000u);
	p = nkv_dev_list(&qp, 0, NULL, 0);
	cr_assert_eq(p.err, 0);
	cr_expect_eq(p.sqe.cdw10, 65536u);
	cr_expect_eq(p.sqe.prp2, 0x900000u);
	cr_expect_eq(nkv_dev_list(&qp, 1, NULL, 0).err, NKV_EINVAL);
}

/* The by-value builders device code uses: the same entry as the pointer
 * forms (CID 0), or an error with an all-zero entry. */
Test(sqe, by_value_builders)
{
	struct nkv_sqe s, zero;
	struct nkv_prep p = nkv_sqe_store(1, "gpukey01", 8, 0, 4096, 0x100000000ull, 0);

	memset(&zero, 0, sizeof(zero));
	cr_assert_eq(nkv_prep_store(&s, 1, 0, "gpukey01", 8, 0, 4096, 0x100000000ull, 0), 0);
	cr_expect_eq(p.err, 0);
	cr_expect_arr_eq(&p.sqe, &s, sizeof(s));
	cr_expect_eq(p.sqe.cdw2, 0x6b757067u);
	cr_expect_eq(p.sqe.cdw3, 0x31307965u);
	p = nkv_sqe_exist(1, "0123456789abcdefX", 17);
	cr_expect_eq(p.err, NKV_EINVAL);
	cr_expect_arr_eq(&p.sqe, &zero, sizeof(zero));
	p = nkv_sqe_store(1, "k", 1, NKV_STORE_MUST_EXIST | NKV_STORE_MUST_NOT_EXIST, 8, 0, 0);
	cr_expect_eq(p.err, NKV_EINVAL);
	p = nkv_sqe_nvm_rw(NKV_NVM_READ, 1, 0, 0, 0, 0);
	cr_expect_eq(p.err, NKV_ERANGE);
}

/* A slot of 3 value pages after its head page, in real memory (the
 * builders write the head there); controller addresses: head page at
 * 0x10000, value pages at 0x11000.., lists at 0x900000 (from page 1)
 * and 0xa00000 (from page 0). */
static uint8_t hmem[4 * 4096] __attribute__((aligned(4096)));

static void head_qp(struct nkv_dev_qp *qp, struct nkv_dev_slot *s, uint32_t max_key,
		    uint32_t slot_flags)
{
	memset(hmem, 0xee, sizeof(hmem));
	*s = (struct nkv_dev_slot){ .addr = (uintptr_t)hmem + 4096, .prp1 = 0x11000,
				    .prp2 = 0x900000, .page2 = 0x12000, .head_end = 0x11000,
				    .head_prp2 = 0xa00000, .size = 3 * 4096,
				    .flags = slot_flags };
	memset(qp, 0, sizeof(*qp));
	qp->slots_addr = (uintptr_t)s;
	qp->nr_slots = 1;
	qp->nsid = 3;
	qp->max_key = max_key;
}

/* The head [u16 LE klen][key] sits right below the value, and nothing
 * of the slot beyond it was touched. */
static void expect_head(const uint8_t *key, uint32_t klen)
{
	const uint8_t *h = hmem + 4096 - 2 - klen;

	cr_expect_eq(nkv_key_head_len(h), klen);
	cr_expect_arr_eq(h + 2, key, klen);
	cr_expect_eq(h[-1], 0xee, "byte below the head written");
	cr_expect_eq(hmem[4096], 0xee, "value written");
}

static void key_of(uint8_t *key, uint32_t klen)
{
	uint32_t i;

	for (i = 0; i < klen; i++)
		key[i] = (uint8_t)(i * 7 + klen);
}

/* Keys of 17+ bytes go in head form over PRPs: KL = 0, no inline key,
 * PRP1 = the tail of the head page, PRP2 by the value's length: nothing,
 * value page 0, or the list that starts at value page 0. CDW10 never
 * counts the head. */
Test(sqe, head_form_prp)
{
	static const uint32_t lens[] = { 17, 32, 255 };
	struct nkv_dev_slot s;
	struct nkv_dev_qp qp;
	struct nkv_prep p;
	uint8_t key[255];
	uint32_t i, hl;

	for (i = 0; i < 3; i++) {
		key_of(key, lens[i]);
		hl = 2 + lens[i];
		head_qp(&qp, &s, 255, 0);
		p = nkv_dev_store(&qp, 0, key, lens[i], NKV_STORE_MUST_NOT_EXIST, 100);
		cr_assert_eq(p.err, 0);
		expect_head(key, lens[i]);
		cr_expect_eq(nkv_kv_key_len(&p.sqe), 0u);
		cr_expect_eq(p.sqe.cdw2 | p.sqe.cdw3 | p.sqe.cdw14 | p.sqe.cdw15, 0u);
		cr_expect_eq(nkv_kv_options(&p.sqe) << 8, NKV_STORE_MUST_NOT_EXIST);
		cr_expect_eq(nkv_sqe_psdt(&p.sqe), NKV_PSDT_PRP);
		cr_expect_eq(nkv_sqe_opc(&p.sqe), NKV_KV_STORE);
		cr_expect_eq(p.sqe.nsid, 3u);
		cr_expect_eq(p.sqe.cdw10, 100u);
		cr_expect_eq(p.sqe.prp1, 0x11000u - hl);
		cr_expect_eq(p.sqe.prp2, 0x11000u, "value page 0 follows the head page");
		p = nkv_dev_store(&qp, 0, key, lens[i], 0, 4097);
		cr_expect_eq(p.sqe.prp2, 0xa00000u, "the list from value page 0");
		p = nkv_dev_retrieve(&qp, 0, key, lens[i]);
		cr_assert_eq(p.err, 0);
		cr_expect_eq(p.sqe.cdw10, 3u * 4096);
		cr_expect_eq(p.sqe.prp1, 0x11000u - hl);
		cr_expect_eq(p.sqe.prp2, 0xa00000u);
		p = nkv_dev_list(&qp, 0, key, lens[i]);
		cr_expect_eq(nkv_sqe_opc(&p.sqe), NKV_KV_LIST);
		cr_expect_eq(nkv_kv_key_len(&p.sqe), 0u);
		cr_expect_eq(p.sqe.prp2, 0xa00000u);
		head_qp(&qp, &s, 255, 0);
		p = nkv_dev_exist(&qp, 0, key, lens[i]);
		cr_assert_eq(p.err, 0);
		expect_head(key, lens[i]);
		cr_expect_eq(p.sqe.cdw10, 0u);
		cr_expect_eq(p.sqe.prp1, 0x11000u - hl);
		cr_expect_eq(p.sqe.prp2, 0u, "the head alone stays in PRP1's page");
		p = nkv_dev_delete(&qp, 0, key, lens[i]);
		cr_expect_eq(nkv_sqe_opc(&p.sqe), NKV_KV_DELETE);
		cr_expect_eq(p.sqe.prp1, 0x11000u - hl);
		cr_expect_eq(p.sqe.prp2, 0u);
	}
}

/* A slot that is one run of controller addresses on a controller with
 * SGLs: SGL1 is one Data Block, from the head (head form) or the value
 * (inline form), as long as the head and the value together. */
Test(sqe, sgl_data_block)
{
	struct nkv_dev_slot s;
	struct nkv_dev_qp qp;
	struct nkv_sgl_desc d;
	struct nkv_prep p;
	uint8_t key[255];

	key_of(key, 32);
	head_qp(&qp, &s, 255, NKV_DEV_SLOT_SGL);
	p = nkv_dev_store(&qp, 0, key, 32, 0, 5000);
	cr_assert_eq(p.err, 0);
	expect_head(key, 32);
	cr_expect_eq(nkv_sqe_psdt(&p.sqe), NKV_PSDT_SGL);
	d = nkv_sqe_sgl1(&p.sqe);
	cr_expect_eq(d.addr, 0x11000u - 34);
	cr_expect_eq(d.len, 34u + 5000);
	cr_expect_eq(nkv_sgl_type(d.id), NKV_SGL_DATA_BLOCK);
	cr_expect_eq(nkv_sgl_subtype(d.id), 0u);
	cr_expect_eq(p.sqe.cdw10, 5000u);
	p = nkv_dev_exist(&qp, 0, key, 32);
	d = nkv_sqe_sgl1(&p.sqe);
	cr_expect_eq(d.addr, 0x11000u - 34);
	cr_expect_eq(d.len, 34u);
	p = nkv_dev_retrieve(&qp, 0, key, 16);
	cr_assert_eq(p.err, 0);
	cr_expect_eq(nkv_kv_key_len(&p.sqe), 16u);
	cr_expect_eq(nkv_sqe_psdt(&p.sqe), NKV_PSDT_SGL);
	d = nkv_sqe_sgl1(&p.sqe);
	cr_expect_eq(d.addr, 0x11000u);
	cr_expect_eq(d.len, 3u * 4096);
	/* Inline Exist and Delete move no data: no data pointer at all. */
	p = nkv_dev_delete(&qp, 0, key, 16);
	cr_expect_eq(nkv_sqe_psdt(&p.sqe), NKV_PSDT_PRP);
	cr_expect_eq(p.sqe.prp1 | p.sqe.prp2, 0u);
}

/* Keys of 1..16 bytes stay inline, unless the queue pair sends every key
 * in head form (NKV_DEV_KEY_HEAD); List from the beginning stays inline
 * (KL 0 with no head: the start of the keyspace). */
Test(sqe, head_form_always)
{
	struct nkv_dev_slot s;
	struct nkv_dev_qp qp;
	struct nkv_prep p;
	uint8_t key[16];

	key_of(key, 16);
	head_qp(&qp, &s, 255, 0);
	p = nkv_dev_store(&qp, 0, key, 16, 0, 8);
	cr_expect_eq(nkv_kv_key_len(&p.sqe), 16u);
	cr_expect_eq(p.sqe.prp1, 0x11000u);
	cr_expect_eq(hmem[4095], 0xee, "an inline key writes no head");
	qp.key_flags = NKV_DEV_KEY_HEAD;
	p = nkv_dev_store(&qp, 0, key, 1, 0, 8);
	cr_assert_eq(p.err, 0);
	expect_head(key, 1);
	cr_expect_eq(nkv_kv_key_len(&p.sqe), 0u);
	cr_expect_eq(p.sqe.prp1, 0x11000u - 3);
	p = nkv_dev_exist(&qp, 0, key, 16);
	expect_head(key, 16);
	cr_expect_eq(p.sqe.prp1, 0x11000u - 18);
	p = nkv_dev_list(&qp, 0, NULL, 0);
	cr_assert_eq(p.err, 0);
	cr_expect_eq(nkv_kv_key_len(&p.sqe), 0u);
	cr_expect_eq(p.sqe.prp1, 0x11000u, "List from the beginning: no head");
	/* A head needs a slot: Exist and Delete without one refuse. */
	cr_expect_eq(nkv_dev_exist(&qp, 1, key, 4).err, NKV_EINVAL);
	qp.key_flags = 0;
	cr_expect_eq(nkv_dev_exist(&qp, 1, key, 4).err, 0, "inline needs no slot");
}

/* Keys longer than the queue pair's limit (the controller's KML; 16 when
 * none is set) are refused before anything is written. */
Test(sqe, key_over_limit)
{
	struct nkv_dev_slot s;
	struct nkv_dev_qp qp;
	uint8_t key[256];

	key_of(key, 255);
	head_qp(&qp, &s, 0, 0);
	cr_expect_eq(nkv_dev_max_key(&qp), 16u);
	cr_expect_eq(nkv_dev_store(&qp, 0, key, 17, 0, 8).err, NKV_EINVAL);
	qp.max_key = 32;
	cr_expect_eq(nkv_dev_store(&qp, 0, key, 32, 0, 8).err, 0);
	head_qp(&qp, &s, 32, 0);
	cr_expect_eq(nkv_dev_retrieve(&qp, 0, key, 33).err, NKV_EINVAL);
	cr_expect_eq(nkv_dev_exist(&qp, 0, key, 33).err, NKV_EINVAL);
	cr_expect_eq(hmem[4095], 0xee, "a refused key writes no head");
	qp.max_key = 255;
	cr_expect_eq(nkv_dev_delete(&qp, 0, key, 256).err, NKV_EINVAL);
	cr_expect_eq(nkv_dev_list(&qp, 0, key, 256).err, NKV_EINVAL);
	cr_expect_eq(nkv_dev_store(&qp, 0, NULL, 20, 0, 8).err, NKV_EINVAL);
	cr_expect_eq(nkv_dev_store(&qp, 0, key, 0, 0, 8).err, NKV_EINVAL);
}

/* The explicit head-form builder: KL 0, the data pointer as given, the
 * same option checks as Store. */
Test(sqe, explicit_head_builder)
{
	struct nkv_prep p = nkv_sqe_kv_head(NKV_KV_RETRIEVE, 1, 0, 4096,
					    nkv_dptr_sgl(0x5000 - 7, 7 + 4096));
	struct nkv_sgl_desc d;

	cr_assert_eq(p.err, 0);
	cr_expect_eq(nkv_kv_key_len(&p.sqe), 0u);
	cr_expect_eq(nkv_sqe_psdt(&p.sqe), NKV_PSDT_SGL);
	d = nkv_sqe_sgl1(&p.sqe);
	cr_expect_eq(d.addr, 0x5000u - 7);
	cr_expect_eq(d.len, 7u + 4096);
	p = nkv_sqe_kv_head(NKV_KV_STORE, 1, NKV_STORE_MUST_EXIST, 8, nkv_dptr_prp(0x1ff0, 0x2000));
	cr_assert_eq(p.err, 0);
	cr_expect_eq(p.sqe.prp1, 0x1ff0u);
	cr_expect_eq(p.sqe.prp2, 0x2000u);
	cr_expect_eq(nkv_sqe_kv_head(NKV_KV_EXIST, 1, NKV_STORE_MUST_EXIST, 0,
				     nkv_dptr_prp(0, 0)).err, NKV_EINVAL);
	cr_expect_eq(nkv_sqe_kv_head(0x7f, 1, 0, 0, nkv_dptr_prp(0, 0)).err, NKV_EINVAL);
	cr_expect_eq(nkv_sqe_kv_head(NKV_KV_STORE, 1,
				     NKV_STORE_MUST_EXIST | NKV_STORE_MUST_NOT_EXIST, 0,
				     nkv_dptr_prp(0, 0)).err, NKV_EINVAL);
}
