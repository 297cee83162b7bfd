/* SPDX-License-Identifier: MIT */
/*
 * test_access.c - access rules per namespace (src/target/tenant/access.c
 * and the core's checks, core/access.c), against the controller core in
 * this process: one controller whose peer credentials the test sets as
 * a vfio-user transport does (nkv_tgt_ctrl_set_peer), raw SQEs for any
 * nsid. ns 1 is KV (mem), ns 2 NVM (mem).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tgt_host.h"
#include "target/core/ns.h"
#include "target/tenant/tenant.h"

static struct h H;
static struct nkv_tenants *T;

#define SC(sc) NKV_STATUS(NKV_SCT_GENERIC, sc)
#define INVALID_NS SC(NKV_SC_INVALID_NS)
#define READ_ONLY NKV_STATUS(NKV_SCT_CMD_SPECIFIC, NKV_SC_WRITE_READ_ONLY)

static void setup(void)
{
	struct nkv_be_conf kd = { sizeof(kd) };

	h_init(&H, NULL, &kd);
	T = nkv_subsys_tenants(H.ss);
	cr_assert_not_null(T);
	cr_assert_eq(h_enable(&H, 16), NKV_CSTS_RDY);
	cr_assert_eq(h_create_qpair(&H, 1, 64), 0);
	nkv_tgt_ctrl_set_peer(H.c, 1001, 100);
}

static void teardown(void)
{
	h_fini(&H);
}

TestSuite(access, .init = setup, .fini = teardown, .timeout = 30);

static struct nkv_tenant_subject by(enum nkv_tenant_key k, uint32_t id)
{
	struct nkv_tenant_subject s = { .by = k, .id = id };

	return s;
}

static void set(uint32_t nsid, enum nkv_tenant_key k, uint32_t id, enum nkv_access a)
{
	struct nkv_tenant_subject s = by(k, id);

	cr_assert_eq(nkv_access_set(T, nsid, &s, a), 0);
}

/* A KV command with a 4 KiB buffer on nsid: its status. */
static uint16_t kv(uint8_t opc, uint32_t nsid, const char *key, uint32_t len)
{
	uint64_t saved = H.bump, iova = h_alloc(&H, 4096);
	struct nkv_sqe s;
	uint16_t st;

	memset(h_ptr(&H, iova), 'v', 4096);
	h_kv(&s, opc, nsid, key, (uint32_t)strlen(key), len, 0);
	if (len)
		h_prp(&H, &s, iova, len);
	st = h_cmd(&H, 1, &s, NULL);
	H.bump = saved;
	return st;
}

/* The active namespace list (CNS 02h) as a bit mask of nsids 1..31. */
static uint32_t active(uint8_t cns, uint8_t csi)
{
	uint32_t list[1024], m = 0, i;

	cr_assert_eq(h_identify(&H, cns, 0, csi, list), 0);
	for (i = 0; i < 1024 && list[i]; i++)
		m |= 1u << list[i];
	return m;
}

static uint64_t denied(uint32_t nsid, uint64_t id)
{
	struct nkv_tenant_usage u[8];
	unsigned n = nkv_tenant_usage(T, nsid, u, 8), i;

	for (i = 0; i < n && i < 8; i++)
		if (u[i].id == id)
			return u[i].denied;
	return 0;
}

Test(access, default_is_rw_for_everyone)
{
	cr_assert_eq(kv(NKV_KV_STORE, 1, "k", 8), 0);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, 1, "k", 8), 0);
	cr_assert_eq(active(NKV_CNS_ACTIVE_NS_LIST, 0), (1u << 1) | (1u << 2));
	cr_assert_eq(nkv_tgt_ctrl_tenant(H.c, NULL, NULL), nkv_tenant_uid(1001));
}

/* none: absent from every list, Identify answers as for an inactive
 * namespace, every command Invalid Namespace, none reaches the backend,
 * every refusal counted. */
Test(access, none_hides_the_namespace_and_serves_nothing)
{
	static const uint8_t ops[] = { NKV_KV_STORE, NKV_KV_RETRIEVE, NKV_KV_EXIST,
				       NKV_KV_DELETE, NKV_KV_LIST };
	struct nkv_be *be = nkv_subsys_ns_hold(H.ss, 1);
	uint8_t id[4096];
	unsigned i, round;

	cr_assert_eq(kv(NKV_KV_STORE, 1, "theirs", 8), 0);	/* before the rule */
	set(1, NKV_TENANT_BY_UID, 1001, NKV_ACCESS_NONE);
	cr_assert_eq(active(NKV_CNS_ACTIVE_NS_LIST, 0), 1u << 2);
	cr_assert_eq(active(NKV_CNS_IOCS_ACTIVE_NS_LIST, NKV_CSI_KV), 0);
	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_NS, 1, NKV_CSI_KV, id), 0);
	for (i = 0; i < sizeof(id); i++)
		cr_assert_eq(id[i], 0, "Identify of a denied namespace leaks byte %u", i);
	cr_assert_eq(h_identify(&H, NKV_CNS_NS_DESC_LIST, 1, 0, id), INVALID_NS);
	for (round = 0; round < 20; round++)
		for (i = 0; i < sizeof(ops); i++)
			cr_assert_eq(kv(ops[i], 1, "theirs", ops[i] == NKV_KV_LIST ? 64 :
					ops[i] == NKV_KV_DELETE || ops[i] == NKV_KV_EXIST ? 0 : 8),
				     INVALID_NS, "opcode %02x served", ops[i]);
	cr_assert_eq(denied(1, nkv_tenant_uid(1001)), 100);
	cr_assert_eq(be->ops->keys_used(be), 1, "a refused command changed the namespace");
	nkv_subsys_ns_release(H.ss, 1);
	/* Another client (uid 2002) still sees and serves it. */
	nkv_tgt_ctrl_set_peer(H.c, 2002, 200);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, 1, "theirs", 8), 0);
	cr_assert_eq(active(NKV_CNS_ACTIVE_NS_LIST, 0), (1u << 1) | (1u << 2));
}

/* A hostile client guessing nsids: nothing it may not use answers
 * anything but Invalid Namespace. */
Test(access, guessed_nsids_are_all_refused)
{
	static const uint32_t guesses[] = { 0, 1, 2, 3, 31, 32, 33, 0xfffffffeu, 0xffffffffu };
	unsigned i;

	nkv_access_default_set(T, 1, NKV_ACCESS_NONE);
	nkv_access_default_set(T, 2, NKV_ACCESS_NONE);
	for (i = 0; i < sizeof(guesses) / sizeof(guesses[0]); i++)
		cr_assert_eq(kv(NKV_KV_STORE, guesses[i], "g", 8), INVALID_NS, "nsid %x", guesses[i]);
	cr_assert_eq(denied(1, nkv_tenant_uid(1001)), 1);
	cr_assert_eq(denied(2, nkv_tenant_uid(1001)), 1);
	cr_assert_eq(active(NKV_CNS_ACTIVE_NS_LIST, 0), 0);
}

/* uid rules win over gid rules, which win over the default. */
Test(access, uid_then_gid_then_default)
{
	nkv_access_default_set(T, 1, NKV_ACCESS_NONE);
	cr_assert_eq(kv(NKV_KV_STORE, 1, "a", 8), INVALID_NS);
	set(1, NKV_TENANT_BY_GID, 100, NKV_ACCESS_RO);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, 1, "a", 8), SC(NKV_SC_KV_KEY_NOT_EXISTS));
	cr_assert_eq(kv(NKV_KV_STORE, 1, "a", 8), READ_ONLY);
	set(1, NKV_TENANT_BY_UID, 1001, NKV_ACCESS_RW);
	cr_assert_eq(kv(NKV_KV_STORE, 1, "a", 8), 0);
	nkv_tgt_ctrl_set_peer(H.c, 1002, 100);	/* same group, no uid rule */
	cr_assert_eq(kv(NKV_KV_STORE, 1, "a", 8), READ_ONLY);
	nkv_tgt_ctrl_set_peer(H.c, 1003, 300);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, 1, "a", 8), INVALID_NS);
}

/* ro: Store and Delete as a read-only namespace answers them, reads
 * served, NSATTR's write protection in this client's Identify only. */
Test(access, ro_write_protects_for_that_client)
{
	uint8_t id[4096];
	struct nkv_sqe s;

	cr_assert_eq(kv(NKV_KV_STORE, 1, "k", 8), 0);
	set(1, NKV_TENANT_BY_UID, 1001, NKV_ACCESS_RO);
	set(2, NKV_TENANT_BY_UID, 1001, NKV_ACCESS_RO);
	cr_assert_eq(kv(NKV_KV_STORE, 1, "k", 8), READ_ONLY);
	cr_assert_eq(kv(NKV_KV_DELETE, 1, "k", 0), READ_ONLY);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, 1, "k", 8), 0);
	cr_assert_eq(kv(NKV_KV_EXIST, 1, "k", 0), 0);
	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_NS, 1, NKV_CSI_KV, id), 0);
	cr_assert_eq(((struct nkv_id_ns_kv *)id)->nsattr & NKV_NSATTR_WRITE_PROTECTED,
		     NKV_NSATTR_WRITE_PROTECTED);
	cr_assert_eq(h_identify(&H, 0x08, 1, 0, id), 0);
	cr_assert_eq(id[8] & NKV_NSATTR_WRITE_PROTECTED, NKV_NSATTR_WRITE_PROTECTED);
	/* NVM Write on ns 2 likewise; Read served. */
	memset(&s, 0, sizeof(s));
	s.cdw0 = NKV_NVM_WRITE;
	s.nsid = 2;
	h_prp(&H, &s, h_alloc(&H, 4096), 512);
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), READ_ONLY);
	s.cdw0 = NKV_NVM_READ;
	cr_assert_eq(h_cmd(&H, 1, &s, NULL), 0);
	/* Another client: writable, no write protection. */
	nkv_tgt_ctrl_set_peer(H.c, 2002, 200);
	cr_assert_eq(h_identify(&H, NKV_CNS_IOCS_NS, 1, NKV_CSI_KV, id), 0);
	cr_assert_eq(((struct nkv_id_ns_kv *)id)->nsattr & NKV_NSATTR_WRITE_PROTECTED, 0);
	cr_assert_eq(kv(NKV_KV_DELETE, 1, "k", 0), 0);
}

/* A rule applies from the next command, both ways. */
Test(access, changes_apply_to_the_next_command)
{
	cr_assert_eq(kv(NKV_KV_STORE, 1, "k", 8), 0);
	set(1, NKV_TENANT_BY_UID, 1001, NKV_ACCESS_NONE);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, 1, "k", 8), INVALID_NS);
	set(1, NKV_TENANT_BY_UID, 1001, NKV_ACCESS_RW);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, 1, "k", 8), 0);
}

/* Host NQN rules: the tenant of an NVMe/TCP association. */
Test(access, rules_parse_and_list)
{
	struct nkv_tenant_subject s = { .by = NKV_TENANT_BY_NQN };
	struct nkv_access_rule r[4];
	enum nkv_access a, def;

	cr_assert_eq(nkv_access_parse("ro", &a), 0);
	cr_assert_eq(a, NKV_ACCESS_RO);
	cr_assert_eq(nkv_access_parse("RW", &a), -EINVAL);
	cr_assert_eq(nkv_access_set(T, 1, &s, NKV_ACCESS_RO), -EINVAL, "an empty NQN");
	snprintf(s.nqn, sizeof(s.nqn), "nqn.2014-08.org.nvmexpress:uuid:a");
	cr_assert_eq(nkv_access_set(T, 1, &s, NKV_ACCESS_RO), 0);
	cr_assert_eq(nkv_access_set(T, 1, &s, NKV_ACCESS_NONE), 0, "replaces");
	cr_assert_eq(nkv_access_set(T, 0, &s, NKV_ACCESS_NONE), -EINVAL);
	cr_assert_eq(nkv_access_set(T, 33, &s, NKV_ACCESS_NONE), -EINVAL);
	cr_assert_eq(nkv_access_rules(T, 1, &def, r, 4), 1);
	cr_assert_eq(r[0].access, NKV_ACCESS_NONE);
	cr_assert_eq(def, NKV_ACCESS_RW);
	cr_assert_neq(nkv_tenant_nqn(s.nqn), nkv_tenant_nqn("nqn.2014-08.org.nvmexpress:uuid:b"));
	cr_assert_eq(nkv_tenant_nqn(s.nqn) >> NKV_TENANT_KIND_SHIFT, 2);
}

/* The RPC thread changes the rules while the poll thread serves: every
 * command sees either the old rules or the new ones, whole (0 or 0Bh,
 * nothing else), and the last change holds from the next command. */
static int flipping;	/* atomic */

static void *flip(void *arg)
{
	struct nkv_tenant_subject s = by(NKV_TENANT_BY_UID, 1001);
	unsigned i;

	(void)arg;
	for (i = 0; __atomic_load_n(&flipping, __ATOMIC_ACQUIRE); i++)
		nkv_access_set(T, 1, &s, i & 1 ? NKV_ACCESS_NONE : NKV_ACCESS_RW);
	nkv_access_set(T, 1, &s, NKV_ACCESS_RW);
	return NULL;
}

Test(access, rules_change_under_the_poll_thread)
{
	unsigned i, refused = 0;
	pthread_t t;
	uint16_t st;

	cr_assert_eq(kv(NKV_KV_STORE, 1, "k", 8), 0);
	__atomic_store_n(&flipping, 1, __ATOMIC_RELEASE);
	cr_assert_eq(pthread_create(&t, NULL, flip, NULL), 0);
	for (i = 0; i < 3000; i++) {
		st = kv(NKV_KV_RETRIEVE, 1, "k", 8);
		cr_assert(st == 0 || st == INVALID_NS, "status %x", st);
		refused += st == INVALID_NS;
	}
	__atomic_store_n(&flipping, 0, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	cr_assert_eq(kv(NKV_KV_RETRIEVE, 1, "k", 8), 0, "the last rule (rw) holds");
	cr_assert_eq(denied(1, nkv_tenant_uid(1001)), refused, "every refusal counted");
}
