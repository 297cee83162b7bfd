/* SPDX-License-Identifier: MIT */
/*
 * test_tenant_tcp.c - host NQN rules over NVMe/TCP: an association's
 * tenant is the host NQN of its Connect (self-asserted: docs/tcp.md).
 * The NVMe/TCP server in this process (src/target/tcp/), raw hosts from
 * tests/lib/tcp_host.c each connecting as an NQN of its own.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "target/backends/registry.h"
#include "target/core/ns.h"
#include "target/tcp/server.h"
#include "target/tenant/tenant.h"
#include "tcp_host.h"
#include "tcp_srv.h"

#define NQN_A "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001"
#define NQN_B "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-4000-8000-000000000002"
#define INVALID_NS NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_INVALID_NS)
#define READ_ONLY NKV_STATUS(NKV_SCT_CMD_SPECIFIC, NKV_SC_WRITE_READ_ONLY)

static struct nkv_subsys *SS;
static struct nkv_tcp_server *S;
static uint16_t PORT;

static void setup(void)
{
	struct nkv_be_conf kv = { sizeof(kv), .capacity = 64 << 20, .max_value = 1 << 20 };
	char err[256];
	struct nkv_be *be = nkv_be_create("mem", &kv, err, sizeof(err));

	cr_assert(be, "%s", err);
	cr_assert_eq(tcp_srv_start(be, NULL, &SS, &S, &PORT), 0);
}

static void teardown(void)
{
	tcp_srv_stop(SS, S);
}

TestSuite(tenant_tcp, .init = setup, .fini = teardown, .timeout = 60);

/* An association as nqn: its admin and one I/O queue. */
struct host {
	struct th adm, io;
};

static void host_open(struct host *h, const char *nqn)
{
	cr_assert_eq(th_admin_as(&h->adm, PORT, nqn, 0, 0, TH_SUBNQN, 0), 0, "%s", nqn);
	cr_assert_eq(th_io(&h->io, &h->adm, 1), 0);
}

static void host_close(struct host *h)
{
	th_close(&h->io);
	th_close(&h->adm);
}

static void rule(const char *nqn, enum nkv_access a)
{
	struct nkv_tenant_subject s = { .by = NKV_TENANT_BY_NQN };

	snprintf(s.nqn, sizeof(s.nqn), "%s", nqn);
	cr_assert_eq(nkv_access_set(nkv_subsys_tenants(SS), 1, &s, a), 0);
}

/* The active namespace list's first entry (0: empty). */
static uint32_t first_active(struct host *h)
{
	uint32_t list[1024];

	cr_assert_eq(th_identify(&h->adm, 0x02, 0, 0, list), 0);
	return list[0];
}

Test(tenant_tcp, host_nqn_rules)
{
	struct host a, b, c;
	struct nkv_tenant_usage u[8];
	uint8_t buf[64];
	unsigned n, i;
	int found = 0;

	rule(NQN_A, NKV_ACCESS_NONE);
	rule(NQN_B, NKV_ACCESS_RO);
	host_open(&a, NQN_A);
	host_open(&b, NQN_B);
	host_open(&c, TH_HOSTNQN);	/* no rule: rw */
	cr_assert_eq(th_store(&c.io, "k", 1, "value", 5), 0);
	cr_assert_eq(first_active(&a), 0, "a denied host lists the namespace");
	cr_assert_eq(first_active(&b), 1);
	cr_assert_eq(th_store(&a.io, "k", 1, "mine", 4), INVALID_NS);
	cr_assert_eq(th_retrieve(&a.io, "k", 1, buf, sizeof(buf), NULL, NULL), INVALID_NS);
	cr_assert_eq(th_store(&b.io, "k", 1, "mine", 4), READ_ONLY);
	cr_assert_eq(th_retrieve(&b.io, "k", 1, buf, sizeof(buf), NULL, NULL), 0);
	cr_assert_eq(memcmp(buf, "value", 5), 0);
	/* Counted for that NQN, named by it. */
	n = nkv_tenant_usage(nkv_subsys_tenants(SS), 1, u, 8);
	for (i = 0; i < n && i < 8; i++)
		if (!strcmp(u[i].name, NQN_A)) {
			cr_assert_eq(u[i].denied, 2);
			cr_assert_eq(u[i].id, nkv_tenant_nqn(NQN_A));
			found = 1;
		}
	cr_assert(found);
	host_close(&a);
	host_close(&b);
	host_close(&c);
}
