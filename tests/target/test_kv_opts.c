/* SPDX-License-Identifier: MIT */
/*
 * The KV option byte and what rides on it (issue 32) through I/O queues:
 * every bit a command does not define refused, TTL and touch, read-only
 * namespaces, the size query, the vendor bytes of Identify, List's
 * start key.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "tgt_host.h"

static struct h H;
static struct nkv_be *be;	/* ns 1, the subsystem's */

#define SC(sc) NKV_STATUS(NKV_SCT_GENERIC, sc)
#define INVALID SC(NKV_SC_INVALID_FIELD)
#define ABSENT SC(NKV_SC_KV_KEY_NOT_EXISTS)
#define READ_ONLY NKV_STATUS(NKV_SCT_CMD_SPECIFIC, NKV_SC_WRITE_READ_ONLY)

static uint64_t now_ms = 5000000;

static uint64_t test_clock(void)
{
	return __atomic_load_n(&now_ms, __ATOMIC_RELAXED);
}

static void setup(void)
{
	struct nkv_be_conf kd = { sizeof(kd) };

	nkv_be_clock_set(test_clock);
	be = h_mem(&kd);
	h_init_be(&H, NULL, be);
	cr_assert_eq(h_enable(&H, 16), NKV_CSTS_RDY);
	cr_assert_eq(h_create_qpair(&H, 1, 64), 0);
}

static void teardown(void)
{
	h_fini(&H);
	nkv_be_clock_set(NULL);
}

TestSuite(kv_opts, .init = setup, .fini = teardown, .timeout = 30);

/* A command on ns 1 with key inline, CDW10 = len, option byte opts,
 * CDW12 = cdw12, data at a fresh page (val copied in when given). */
static uint16_t cmd(uint8_t opc, const char *key, uint32_t len, uint32_t opts, uint32_t cdw12,
		    const void *val, uint32_t *dw0)
{
	uint64_t saved = H.bump, iova = h_alloc(&H, len > 4096 ? len : 4096);
	struct nkv_sqe s;
	struct nkv_cqe e;
	uint16_t st;

	if (val)
		memcpy(h_ptr(&H, iova), val, len);
	h_kv(&s, opc, 1, key, (uint32_t)strlen(key), len, opts);
	s.cdw12 = cdw12;
	h_prp(&H, &s, iova, len ? len : 1);
	st = h_cmd(&H, 1, &s, &e);
	if (dw0)
		*dw0 = e.dw0;
	H.bump = saved;
	return st;
}

static uint16_t store(const char *key, const char *val, uint32_t opts, uint32_t ttl)
{
	return cmd(NKV_KV_STORE, key, (uint32_t)strlen(val), opts, ttl, val, NULL);
}

static uint16_t touch(const char *key, uint32_t opts, uint32_t ttl)
{
	return cmd(NKV_KV_STORE, key, 0, NKV_STORE_TOUCH | opts, ttl, NULL, NULL);
}

static uint16_t exist(const char *key)
{
	return cmd(NKV_KV_EXIST, key, 0, 0, 0, NULL, NULL);
}

Test(kv_opts, every_undefined_option_bit_is_refused)
{
	static const uint8_t key_only[] = { NKV_KV_RETRIEVE, NKV_KV_DELETE, NKV_KV_EXIST };
	unsigned bit, i;

	cr_assert_eq(store("k", "v", 0, 0), 0);
	for (bit = 0; bit < 8; bit++) {
		uint32_t o = 1u << (8 + bit);

		for (i = 0; i < sizeof(key_only); i++)
			cr_assert_eq(cmd(key_only[i], "k", key_only[i] == NKV_KV_RETRIEVE ? 8 : 0, o,
					 0, NULL, NULL), INVALID, "opcode %02x bit %u",
				     key_only[i], bit);
		if (bit)	/* List: bit 0 is NKV_LIST_KEY_HEAD */
			cr_assert_eq(cmd(NKV_KV_LIST, "", 64, o, 0, NULL, NULL), INVALID,
				     "List bit %u", bit);
	}
	cr_assert_eq(store("k", "v", 1u << 14, 0), INVALID, "Store bit 6");
	cr_assert_eq(store("k", "v", 1u << 15, 0), INVALID, "Store bit 7");
	/* Reserved bits do not reach anything: the key is as stored. */
	cr_assert_eq(exist("k"), 0);
	/* The defined ones are taken (a value with touch is not: below). */
	cr_assert_eq(store("k", "v", NKV_STORE_MUST_EXIST, 0), 0);
	cr_assert_eq(store("j", "v", NKV_STORE_MUST_NOT_EXIST, 0), 0);
	cr_assert_eq(store("k", "v", NKV_STORE_NO_COMPRESS, 0), 0);
	cr_assert_eq(store("k", "v", NKV_STORE_TTL, 60), 0);
	cr_assert_eq(store("k", "v", NKV_STORE_EPHEMERAL, 0), 0);
	cr_assert_eq(touch("k", 0, 0), 0);
}

/* A backend that honours no vendor bit: each of them is refused. */
Test(kv_opts, vendor_bits_the_backend_does_not_honour_are_refused)
{
	be->store_opts = NKV_STORE_TTL;
	cr_assert_eq(store("k", "v", NKV_STORE_TTL, 60), 0);
	cr_assert_eq(store("k", "v", NKV_STORE_EPHEMERAL, 0), INVALID);
	cr_assert_eq(touch("k", 0, 0), INVALID);
	be->store_opts = 0;
	cr_assert_eq(store("k", "v", NKV_STORE_TTL, 60), INVALID);
}

Test(kv_opts, ttl_needs_cdw12_and_ages_out)
{
	uint32_t dw0;

	cr_assert_eq(store("t", "value", NKV_STORE_TTL, 0), INVALID, "TTL of 0 s");
	cr_assert_eq(exist("t"), ABSENT);
	cr_assert_eq(store("t", "value", NKV_STORE_TTL, 3), 0);
	cr_assert_eq(store("p", "value", 0, 99), 0, "CDW12 without the bit: no TTL");
	__atomic_store_n(&now_ms, 5000000 + 2999, __ATOMIC_RELAXED);
	cr_assert_eq(cmd(NKV_KV_RETRIEVE, "t", 16, 0, 0, NULL, &dw0), 0);
	cr_assert_eq(dw0, 5);
	__atomic_store_n(&now_ms, 5000000 + 3000, __ATOMIC_RELAXED);
	cr_assert_eq(exist("t"), ABSENT);
	cr_assert_eq(cmd(NKV_KV_RETRIEVE, "t", 16, 0, 0, NULL, NULL), ABSENT);
	__atomic_store_n(&now_ms, UINT64_MAX / 4, __ATOMIC_RELAXED);
	cr_assert_eq(exist("p"), 0);
}

Test(kv_opts, touch_rules)
{
	uint64_t iova = h_alloc(&H, 4096);
	struct nkv_sqe s;

	cr_assert_eq(touch("k", 0, 0), ABSENT, "absent");
	cr_assert_eq(store("k", "v", 0, 0), 0);
	cr_assert_eq(cmd(NKV_KV_STORE, "k", 1, NKV_STORE_TOUCH, 0, "v", NULL), INVALID,
		     "a value with touch");
	cr_assert_eq(touch("k", NKV_STORE_MUST_NOT_EXIST, 0), INVALID);
	cr_assert_eq(touch("k", NKV_STORE_EPHEMERAL, 0), INVALID);
	cr_assert_eq(touch("k", NKV_STORE_TTL, 0), INVALID, "TTL of 0 s");
	cr_assert_eq(touch("k", NKV_STORE_MUST_EXIST, 0), 0);
	cr_assert_eq(touch("k", NKV_STORE_TTL, 2), 0);
	__atomic_store_n(&now_ms, 5000000 + 1500, __ATOMIC_RELAXED);
	cr_assert_eq(touch("k", 0, 0), 0, "restarts its 2 s");
	__atomic_store_n(&now_ms, 5000000 + 3499, __ATOMIC_RELAXED);
	cr_assert_eq(exist("k"), 0);
	/* Touch with the key in head form: the data is the head alone. */
	nkv_key_head_put(h_ptr(&H, iova), (const uint8_t *)"k", 1);
	h_kv(&s, NKV_KV_STORE, 1, "", 0, 0, NKV_STORE_TOUCH);
	s.prp1 = iova;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	__atomic_store_n(&now_ms, 5000000 + 5498, __ATOMIC_RELAXED);
	cr_assert_eq(exist("k"), 0);
	__atomic_store_n(&now_ms, 5000000 + 5499, __ATOMIC_RELAXED);
	cr_assert_eq(exist("k"), ABSENT);
	cr_assert_eq(touch("k", 0, 0), ABSENT, "expired");
}

Test(kv_opts, read_only_refuses_writes_and_serves_reads)
{
	uint64_t iova = h_alloc(&H, 4096);
	char buf[8];
	uint32_t dw0, count;

	cr_assert_eq(store("k", "value", 0, 0), 0);
	be->read_only = 1;	/* what nkv_be_create does for conf.read_only */
	cr_assert_eq(store("k", "other", 0, 0), READ_ONLY);
	cr_assert_eq(store("n", "new", NKV_STORE_TTL, 5), READ_ONLY);
	cr_assert_eq(touch("k", 0, 0), READ_ONLY);
	cr_assert_eq(cmd(NKV_KV_DELETE, "k", 0, 0, 0, NULL, NULL), READ_ONLY);
	/* Checked right after the opcode: before bad options or sizes. */
	cr_assert_eq(store("k", "v", 1u << 15, 0), READ_ONLY);
	cr_assert_eq(cmd(NKV_KV_STORE, "k", 0, 0, 0, NULL, NULL), READ_ONLY);
	cr_assert_eq(exist("k"), 0);
	cr_assert_eq(cmd(NKV_KV_RETRIEVE, "k", 8, 0, 0, NULL, &dw0), 0);
	cr_assert_eq(dw0, 5);
	cr_assert_eq(h_retrieve(&H, 1, "k", 1, buf, 8, NULL), 0);
	cr_assert_eq(memcmp(buf, "value", 5), 0, "unchanged");
	{
		struct nkv_sqe s;
		struct nkv_cqe e;

		h_kv(&s, NKV_KV_LIST, 1, "", 0, 64, 0);
		s.prp1 = iova;
		cr_assert_eq(h_cmd(&H, 1, &s, &e), 0);
		memcpy(&count, h_ptr(&H, iova), 4);
		cr_assert_eq(count, 1);
		cr_assert_eq(e.dw0, 1);
	}
	cr_assert_eq(be->ops->keys_used(be), 1);
}

static void id_kv(uint32_t nsid, struct nkv_id_ns_kv *id)
{
	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_NS, nsid, NKV_CSI_KV, id), 0);
}

Test(kv_opts, identify_vendor_bytes_and_nsattr)
{
	static struct nkv_id_ns_kv id;
	struct nkv_kv_vs vs;
	unsigned i;

	id_kv(1, &id);
	memcpy(&vs, id.vs, sizeof(vs));
	cr_assert_eq(memcmp(vs.sig, NKV_KV_VS_SIG, 4), 0);
	cr_assert_eq(vs.ver, NKV_KV_VS_VER);
	cr_assert_eq(vs.flags, NKV_KV_VS_SIZE_QUERY);
	cr_assert_eq(vs.store_opts, NKV_STORE_VENDOR_MASK);
	cr_assert_eq(vs.max_ttl, 0);
	cr_assert_eq(vs.cmd_timeout_ms, 0, "mem answers at once: no command time said");
	cr_assert_eq(id.nsattr, 0);
	for (i = 0; i < sizeof(vs.rsvd20); i++)
		cr_assert_eq(vs.rsvd20[i], 0);
	be->read_only = 1;
	be->store_opts = NKV_STORE_TTL;
	be->cmd_timeout_ms = 12345;	/* as a backend with a timeout of its own sets it */
	id_kv(1, &id);
	memcpy(&vs, id.vs, sizeof(vs));
	cr_assert_eq(id.nsattr, NKV_NSATTR_WRITE_PROTECTED);
	cr_assert_eq(vs.flags, NKV_KV_VS_SIZE_QUERY | NKV_KV_VS_READ_ONLY);
	cr_assert_eq(vs.store_opts, NKV_STORE_TTL);
	cr_assert_eq(vs.cmd_timeout_ms, 12345);
}

Test(kv_opts, retrieve_of_zero_bytes_is_a_size_query)
{
	uint64_t iova = h_alloc(&H, 4096);
	static uint8_t val[3000];
	struct nkv_sqe s;
	struct nkv_cqe e;
	uint8_t *p = h_ptr(&H, iova);
	char key[20] = "a-key-of-20-bytes!!";
	unsigned i;

	memset(val, 0x5a, sizeof(val));
	cr_assert_eq(h_kvx(&H, 1, NKV_KV_STORE, key, 19, H_KEY_HEAD, H_DP_PRP, val, 3000, NULL), 0);
	cr_assert_eq(h_store(&H, 1, "s", 1, val, 7, 0), 0);
	memset(p, 0xee, 4096);
	h_kv(&s, NKV_KV_RETRIEVE, 1, "s", 1, 0, 0);
	s.prp1 = iova;
	cr_assert_eq(h_cmd(&H, 1, &s, &e), 0);
	cr_assert_eq(e.dw0, 7);
	for (i = 0; i < 4096; i++)
		cr_assert_eq(p[i], 0xee, "byte %u written", i);
	h_kv(&s, NKV_KV_RETRIEVE, 1, "nope", 4, 0, 0);
	s.prp1 = iova;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), ABSENT);
	/* Head form: the data is the head; nothing written after it. */
	nkv_key_head_put(p, (const uint8_t *)key, 19);
	h_kv(&s, NKV_KV_RETRIEVE, 1, "", 0, 0, 0);
	s.prp1 = iova;
	cr_assert_eq(h_cmd(&H, 1, &s, &e), 0);
	cr_assert_eq(e.dw0, 3000);
	for (i = nkv_key_head_size(19); i < 4096; i++)
		cr_assert_eq(p[i], 0xee, "byte %u written", i);
}

/* The KV command set's List rule: from the start key when it exists,
 * else from the next key; DW0 = keys returned. */
Test(kv_opts, list_start_key_included_when_it_exists)
{
	uint64_t iova = h_alloc(&H, 4096);
	uint8_t *p = h_ptr(&H, iova);
	struct nkv_sqe s;
	struct nkv_cqe e;
	uint32_t count;
	uint16_t kl;

	cr_assert_eq(store("a", "1", 0, 0), 0);
	cr_assert_eq(store("c", "1", 0, 0), 0);
	cr_assert_eq(store("e", "1", 0, 0), 0);
	h_kv(&s, NKV_KV_LIST, 1, "c", 1, 4096, 0);
	s.prp1 = iova;
	cr_assert_eq(h_cmd(&H, 1, &s, &e), 0);
	memcpy(&count, p, 4);
	memcpy(&kl, p + 4, 2);
	cr_assert_eq(count, 2);
	cr_assert_eq(e.dw0, 2);
	cr_assert_eq(p[6], 'c', "the start key itself");
	h_kv(&s, NKV_KV_LIST, 1, "b", 1, 4096, 0);
	s.prp1 = iova;
	cr_assert_eq(h_cmd(&H, 1, &s, &e), 0);
	memcpy(&count, p, 4);
	cr_assert_eq(count, 2);
	cr_assert_eq(e.dw0, 2);
	cr_assert_eq(p[6], 'c', "the next key");
}
