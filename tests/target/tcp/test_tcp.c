/* SPDX-License-Identifier: MIT */
/*
 * The NVMe/TCP transport (src/target/tcp) against the test host
 * (tests/lib/tcp_host.h), in-process: ICReq/ICResp, Connect, Property
 * Get/Set, enable, Identify; KV commands from 1 byte to several MiB
 * (in-capsule, R2T/H2CData, C2HData; every byte checked) with keys of
 * 1..255 bytes (head form past 16), digests off and on; a Retrieve into
 * a short buffer (DW0 the whole length, a CapsuleResp after its C2HData,
 * SUCCESS never set); keep alive ending a silent host; the Discovery log
 * page; the budgets.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "target/backends/registry.h"
#include "target/core/ns.h"
#include "target/tcp/server.h"
#include "tcp_host.h"
#include "tcp_srv.h"

#define SC(sc) NKV_STATUS(NKV_SCT_GENERIC, sc)

static struct nkv_subsys *SS;
static struct nkv_tcp_server *S;
static uint16_t PORT;

static uint32_t IC_MS;

static void start(uint32_t conns, uint64_t buf)
{
	struct nkv_be_conf kv = { sizeof(kv), .capacity = 256 << 20, .max_value = 16 << 20 };
	struct nkv_tcp_server_opts o = { sizeof(o), .max_conns_per_host = conns,
					 .max_buf_per_conn = buf };
	char err[256];
	struct nkv_be *be = nkv_be_create("mem", &kv, err, sizeof(err));

	cr_assert(be, "%s", err);
	o.ic_ms = IC_MS;
	cr_assert_eq(tcp_srv_start(be, &o, &SS, &S, &PORT), 0);
	cr_assert_neq(PORT, 0, "an ephemeral port was bound");
}

static void setup(void)
{
	start(0, 0);
}

static void teardown(void)
{
	tcp_srv_stop(SS, S);
}

TestSuite(tcp, .init = setup, .fini = teardown, .timeout = 120);

/* Bytes nobody else has: the key and the offset in them. */
static void fill(uint8_t *p, uint32_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1, i;

	for (i = 0; i < n; i++) {
		x = x * 1664525u + 1013904223u;
		p[i] = (uint8_t)(x >> 24);
	}
}

Test(tcp, ic_connect_properties_identify)
{
	struct th a;
	struct nkv_tcp_icreq q;
	struct nkv_tcp_icresp r;
	uint8_t id[4096];
	const struct nkv_id_ctrl *ic = (const void *)id;
	uint64_t v;
	uint32_t ioccsz;

	cr_assert_eq(th_open(&a, PORT, 10000), 0);
	memset(&q, 0, sizeof(q));
	q.ch.type = NKV_TCP_ICREQ;
	cr_assert_eq(th_send_pdu(&a, &q, sizeof(q), NULL, 0), 0);
	cr_assert_eq(th_recv_pdu(&a, &r, sizeof(r)), (int)sizeof(r));
	cr_assert_eq(r.ch.type, NKV_TCP_ICRESP);
	cr_assert_eq(r.ch.hlen, 128);
	cr_assert_eq(r.pfv, 0);
	cr_assert_eq(r.cpda, 0);
	cr_assert_eq(r.dgst, 0);
	cr_assert_geq(r.maxh2cdata, 4096);
	a.maxh2cdata = r.maxh2cdata;
	cr_assert_eq(th_connect(&a, 0, 0, TH_HOSTNQN, TH_SUBNQN, 0), 0);
	cr_assert_neq(a.cntlid, 0);
	cr_assert_eq(th_prop_get(&a, NKV_REG_CAP, 1, &v), 0);
	cr_assert_eq(v & 0xffff, 127, "MQES: 128 entries, a connection's slots");
	cr_assert_eq(th_prop_get(&a, NKV_REG_VS, 0, &v), 0);
	cr_assert_eq(v, 0x00020000);
	cr_assert_eq(th_prop_get(&a, NKV_REG_CSTS, 0, &v), 0);
	cr_assert_eq(v & NKV_CSTS_RDY, 0);
	cr_assert_eq(th_prop_set(&a, NKV_REG_CC, 1u | (6u << 4) | (6u << 16) | (4u << 20)), 0);
	cr_assert_eq(th_prop_get(&a, NKV_REG_CSTS, 0, &v), 0);
	cr_assert_eq(v & NKV_CSTS_RDY, NKV_CSTS_RDY, "CC.EN = 1 -> CSTS.RDY");
	cr_assert_eq(th_identify(&a, NKV_CNS_CTRL, 0, 0, id), 0);
	memcpy(&ioccsz, id + NKV_ID_IOCCSZ, 4);
	cr_assert_eq(ioccsz, (64 + TH_ICD_IO) / 16);
	cr_assert_eq(id[NKV_ID_MSDBD], 1);
	cr_assert_eq(ic->cntrltype, 1);
	cr_assert_eq(ic->cntlid, a.cntlid);
	cr_assert_str_eq(ic->subnqn, TH_SUBNQN);
	cr_assert_eq(ic->sgls & ((1u << 20) | (1u << 21) | 3u), (1u << 20) | (1u << 21) | 1u);
	/* The KV namespace, through CNS 05h CSI 01h and CNS 08h. */
	cr_assert_eq(th_identify(&a, NKV_CNS_IOCS_NS, 1, NKV_CSI_KV, id), 0);
	cr_assert_eq(((const struct nkv_id_ns_kv *)id)->kvf[0].mvl, 16u << 20);
	cr_assert_eq(th_identify(&a, 0x08, 1, 0, id), 0);
	cr_assert_eq(id[14] & 1, 1);
	th_close(&a);
}

/* Store, Retrieve (exact and roomier buffers), Exist, Delete, then the
 * key gone, for one key and value size. */
static void kv_round(struct th *io, const uint8_t *key, uint32_t klen, uint32_t n)
{
	uint8_t *v = malloc(n), *back = malloc(n + 100);
	uint32_t dw0 = 0, got = 0;

	fill(v, n, n ^ klen);
	cr_assert_eq(th_store(io, key, klen, v, n), 0, "store %u bytes, key %u", n, klen);
	memset(back, 0xcd, n + 100);
	{
		uint16_t st = th_retrieve(io, key, klen, back, n + 100, &dw0, &got);

		cr_assert_eq(st, 0, "retrieve: status %#x, key %u, %u bytes", st, klen, n);
	}
	cr_assert_eq(dw0, n);
	cr_assert_eq(got, n, "C2HData carries the value, not the buffer: %u of %u", got, n);
	cr_assert_eq(memcmp(v, back, n), 0, "value of %u bytes, key %u", n, klen);
	cr_assert_eq(back[n], 0xcd);
	cr_assert_eq(io->c2h_flags & NKV_TCP_F_SUCCESS, 0, "SUCCESS never set");
	cr_assert(io->c2h_flags & NKV_TCP_F_LAST);
	cr_assert_eq(th_kv_simple(io, NKV_KV_EXIST, key, klen), 0);
	cr_assert_eq(th_kv_simple(io, NKV_KV_DELETE, key, klen), 0);
	cr_assert_eq(th_kv_simple(io, NKV_KV_EXIST, key, klen), SC(NKV_SC_KV_KEY_NOT_EXISTS));
	free(v);
	free(back);
}

static void sizes(int hdgst, int ddgst)
{
	static const uint32_t n[] = { 1, 2, 100, 4095, 4096, 16383, 16384, 16385,
				      (256u << 10) + 1, 3u << 20, (8u << 20) + 7 };
	struct th a, io;
	size_t i;

	cr_assert_eq(th_admin(&a, PORT, hdgst, ddgst, TH_SUBNQN, 0), 0);
	cr_assert_eq(a.hdgst, hdgst);
	cr_assert_eq(a.ddgst, ddgst);
	cr_assert_eq(th_io(&io, &a, 1), 0);
	for (i = 0; i < sizeof(n) / sizeof(n[0]); i++)
		kv_round(&io, (const uint8_t *)"size-key", 8, n[i]);
	th_close(&io);
	th_close(&a);
}

/* A Retrieve of a large value leaves from the mem backend's own memory
 * (a loan, backend.h nkv_be_lend): its host stops reading mid-value while
 * another host replaces and deletes the key and churns the namespace
 * with values of the same size (which would reuse the memory were it
 * freed). The stalled host then reads the whole old value, byte for
 * byte; the new one is what a later Retrieve sees. Also with digests
 * (the CRC is taken over the lent bytes). */
static void lent_value_outlives_its_key(int ddgst)
{
	const uint32_t n = 8u << 20;
	uint8_t *old = malloc(n), *nv = malloc(n), *back = malloc(n);
	struct th a, io, b, bio;
	uint32_t got = 0, dw0 = 0, i;

	cr_assert(old && nv && back);
	fill(old, n, 1);
	fill(nv, n, 2);
	cr_assert_eq(th_admin(&a, PORT, 0, ddgst, TH_SUBNQN, 0), 0);
	cr_assert_eq(th_io(&io, &a, 1), 0);
	cr_assert_eq(th_admin(&b, PORT, 0, 0, TH_SUBNQN, 0), 0);
	cr_assert_eq(th_io(&bio, &b, 1), 0);
	cr_assert_eq(th_store(&bio, "lent", 4, old, n), 0);
	cr_assert_eq(th_retrieve_send(&io, "lent", 4, n), 0);
	usleep(100 * 1000);	/* the target sends what the socket takes, then waits */
	cr_assert_eq(th_store(&bio, "lent", 4, nv, n), 0, "replaced while lent");
	cr_assert_eq(th_kv_simple(&bio, NKV_KV_DELETE, "lent", 4), 0, "deleted while lent");
	for (i = 0; i < 6; i++) {
		char k[8];

		snprintf(k, sizeof(k), "churn%u", i);
		cr_assert_eq(th_store(&bio, k, (uint32_t)strlen(k), nv, n), 0);
		cr_assert_eq(th_kv_simple(&bio, NKV_KV_DELETE, k, (uint32_t)strlen(k)), 0);
	}
	cr_assert_eq(th_cmd_finish(&io, NULL, 0, back, n, &got), 0);
	dw0 = io.cqe.dw0;
	cr_assert_eq(dw0, n);
	cr_assert_eq(got, n);
	cr_assert_eq(memcmp(back, old, n), 0, "the stalled host got the whole old value");
	cr_assert_eq(th_store(&bio, "lent", 4, nv, n), 0);
	cr_assert_eq(th_retrieve(&io, "lent", 4, back, n, &dw0, &got), 0);
	cr_assert_eq(memcmp(back, nv, n), 0, "a later Retrieve sees the new value");
	th_close(&bio);
	th_close(&b);
	th_close(&io);
	th_close(&a);
	free(old);
	free(nv);
	free(back);
}

Test(tcp, lent_value_outlives_its_key)
{
	lent_value_outlives_its_key(0);
}

Test(tcp, lent_value_outlives_its_key_with_data_digests)
{
	lent_value_outlives_its_key(1);
}

Test(tcp, values_1b_to_8mib)
{
	sizes(0, 0);
}

Test(tcp, values_with_digests)
{
	sizes(1, 1);
}

Test(tcp, values_header_digest_only)
{
	sizes(1, 0);
}

static void keys(int digests)
{
	uint8_t key[255];
	struct th a, io;
	uint32_t k;

	cr_assert_eq(th_admin(&a, PORT, digests, digests, TH_SUBNQN, 0), 0);
	cr_assert_eq(th_io(&io, &a, 1), 0);
	for (k = 1; k <= 255; k += (k < 20 ? 1 : 13)) {
		fill(key, k, k);
		kv_round(&io, key, k, 1000 + k);
	}
	kv_round(&io, key, 255, 100000);	/* head form and R2T together */
	th_close(&io);
	th_close(&a);
}

Test(tcp, keys_1_to_255)
{
	keys(0);
}

Test(tcp, keys_1_to_255_digests)
{
	keys(1);
}

Test(tcp, retrieve_short_buffer_and_missing_key)
{
	uint8_t v[5000], back[1000];
	struct th a, io;
	uint32_t dw0, got;

	cr_assert_eq(th_admin(&a, PORT, 0, 0, TH_SUBNQN, 0), 0);
	cr_assert_eq(th_io(&io, &a, 1), 0);
	fill(v, sizeof(v), 7);
	cr_assert_eq(th_store(&io, "short", 5, v, sizeof(v)), 0);
	cr_assert_eq(th_retrieve(&io, "short", 5, back, sizeof(back), &dw0, &got), 0);
	cr_assert_eq(dw0, sizeof(v), "DW0: the whole length, after a truncated C2HData");
	cr_assert_eq(got, sizeof(back));
	cr_assert_eq(memcmp(back, v, sizeof(back)), 0);
	cr_assert_eq(th_retrieve(&io, "nokey", 5, back, sizeof(back), &dw0, &got),
		     SC(NKV_SC_KV_KEY_NOT_EXISTS));
	cr_assert_eq(got, 0, "no data for a failed command");
	th_close(&io);
	th_close(&a);
}

Test(tcp, list)
{
	uint8_t buf[4096];
	struct th a, io;
	struct nkv_sqe s;
	uint32_t got, count, i;
	char k[8];

	cr_assert_eq(th_admin(&a, PORT, 0, 0, TH_SUBNQN, 0), 0);
	cr_assert_eq(th_io(&io, &a, 1), 0);
	for (i = 0; i < 10; i++) {
		snprintf(k, sizeof(k), "lk%02u", i);
		cr_assert_eq(th_store(&io, k, 4, "v", 1), 0);
	}
	memset(&s, 0, sizeof(s));
	s.cdw0 = NKV_KV_LIST;
	s.nsid = 1;
	s.cdw10 = sizeof(buf);
	cr_assert_eq(th_cmd(&io, &s, NULL, 0, NULL, 0, buf, sizeof(buf), &got), 0);
	memcpy(&count, buf, 4);
	cr_assert_eq(count, 10);
	cr_assert_eq(io.cqe.dw0, 10);
	cr_assert_geq(got, 4 + 10 * 8);
	th_close(&io);
	th_close(&a);
}

Test(tcp, keep_alive_ends_a_silent_association)
{
	struct th a, io, b;
	uint64_t v;
	int i;

	cr_assert_eq(th_admin(&a, PORT, 0, 0, TH_SUBNQN, 300), 0);
	cr_assert_eq(th_io(&io, &a, 1), 0);
	cr_assert_eq(th_admin(&b, PORT, 0, 0, TH_SUBNQN, 300), 0);
	/* b keeps alive: a Keep Alive every 100 ms for a second. */
	for (i = 0; i < 10; i++) {
		struct nkv_sqe s = { .cdw0 = NKV_ADM_KEEP_ALIVE };

		cr_assert_eq(th_cmd(&b, &s, NULL, 0, NULL, 0, NULL, 0, NULL), 0);
		usleep(100000);
	}
	/* a said nothing: both its connections are gone. */
	cr_assert_eq(th_wait_close(&a), 1);
	cr_assert_eq(th_wait_close(&io), 1);
	cr_assert_eq(th_prop_get(&b, NKV_REG_CSTS, 0, &v), 0, "b unaffected");
	{
		struct nkv_tcp_server_stats st;

		nkv_tcp_server_stats(S, &st);
		cr_assert_geq(st.kato_expired, 1);
	}
	th_close(&a);
	th_close(&io);
	th_close(&b);
}

Test(tcp, discovery_log_page)
{
	uint8_t buf[4096];
	const struct nkv_nvmf_disc_hdr *h = (const void *)buf;
	const struct nkv_nvmf_disc_entry *e = (const void *)(buf + 1024);
	struct th d;
	struct nkv_sqe s;
	char port[8];

	cr_assert_eq(th_admin(&d, PORT, 0, 0, NKV_NVMF_DISC_NQN, 0), 0);
	cr_assert_eq(th_identify(&d, NKV_CNS_CTRL, 0, 0, buf), 0);
	cr_assert_eq(((const struct nkv_id_ctrl *)buf)->cntrltype, 2);
	memset(&s, 0, sizeof(s));
	s.cdw0 = NKV_ADM_GET_LOG_PAGE;
	s.cdw10 = NKV_LID_DISCOVERY | ((sizeof(buf) / 4 - 1) << 16);
	cr_assert_eq(th_cmd(&d, &s, NULL, 0, NULL, 0, buf, sizeof(buf), NULL), 0);
	cr_assert_eq(h->numrec, 1);
	cr_assert_eq(e->trtype, NKV_NVMF_TRTYPE_TCP);
	cr_assert_eq(e->adrfam, NKV_NVMF_ADRFAM_IPV4);
	cr_assert_str_eq(e->subnqn, TH_SUBNQN);
	snprintf(port, sizeof(port), "%u ", PORT);
	cr_assert_eq(memcmp(e->trsvcid, port, strlen(port)), 0);
	cr_assert_eq(memcmp(e->traddr, "127.0.0.1 ", 10), 0);
	/* The discovery controller has no I/O queues. */
	{
		struct th x;

		cr_assert_eq(th_open(&x, PORT, 10000), 0);
		cr_assert_eq(th_ic(&x, 0, 0), 0);
		cr_assert_neq(th_connect(&x, 1, d.cntlid, TH_HOSTNQN, NKV_NVMF_DISC_NQN, 0), 0);
		th_close(&x);
	}
	th_close(&d);
}

Test(tcp, connect_rules)
{
	struct th a, x;
	uint16_t st;

	cr_assert_eq(th_admin(&a, PORT, 0, 0, TH_SUBNQN, 0), 0);
	/* Another host's NQN, an unknown CNTLID, an unknown subsystem. */
	cr_assert_eq(th_open(&x, PORT, 10000), 0);
	cr_assert_eq(th_ic(&x, 0, 0), 0);
	st = th_connect(&x, 1, a.cntlid, "nqn.2014-08.org.nvmexpress:uuid:intruder", TH_SUBNQN, 0);
	cr_assert_eq(st, NKV_STATUS(NKV_SCT_CMD_SPECIFIC, NKV_SC_CONNECT_HOST));
	st = th_connect(&x, 1, (uint16_t)(a.cntlid + 77), TH_HOSTNQN, TH_SUBNQN, 0);
	cr_assert_eq(st, NKV_STATUS(NKV_SCT_CMD_SPECIFIC, NKV_SC_CONNECT_PARAM));
	cr_assert_eq(x.cqe.dw0, nkv_nvmf_connect_ipo(1, 16));
	st = th_connect(&x, 0, 0, TH_HOSTNQN, "nqn.2026-01.io.nkv:nope", 0);
	cr_assert_eq(st, NKV_STATUS(NKV_SCT_CMD_SPECIFIC, NKV_SC_CONNECT_PARAM));
	cr_assert_eq(x.cqe.dw0, nkv_nvmf_connect_ipo(1, 256));
	/* Anything but Connect first: Command Sequence Error. */
	cr_assert_eq(th_identify(&x, NKV_CNS_CTRL, 0, 0, (uint8_t[4096]){ 0 }), SC(0x0c));
	th_close(&x);
	th_close(&a);
}

Test(tcp, buffer_budget)
{
	uint8_t *v = malloc(3u << 20);
	struct th a, io;

	nkv_tcp_server_stop(S);
	nkv_subsys_destroy(SS);
	start(0, 2u << 20);
	cr_assert_eq(th_admin(&a, PORT, 0, 0, TH_SUBNQN, 0), 0);
	cr_assert_eq(th_io(&io, &a, 1), 0);
	fill(v, 3u << 20, 1);
	cr_assert_eq(th_store(&io, "big", 3, v, 3u << 20), SC(0x21),
		     "past the connection's buffer budget: Command Interrupted");
	cr_assert_eq(th_store(&io, "fits", 4, v, 1u << 20), 0);
	free(v);
	th_close(&io);
	th_close(&a);
}

Test(tcp, connection_budget_per_host)
{
	struct th c[3];

	nkv_tcp_server_stop(S);
	nkv_subsys_destroy(SS);
	start(2, 0);
	cr_assert_eq(th_open(&c[0], PORT, 5000), 0);
	cr_assert_eq(th_ic(&c[0], 0, 0), 0);
	cr_assert_eq(th_open(&c[1], PORT, 5000), 0);
	cr_assert_eq(th_ic(&c[1], 0, 0), 0);
	cr_assert_eq(th_open(&c[2], PORT, 5000), 0);
	cr_assert_eq(th_wait_close(&c[2]), 1, "the third connection of a host is closed");
	th_close(&c[0]);
	th_close(&c[1]);
	th_close(&c[2]);
}

Test(tcp, no_icreq_closed)
{
	struct th c, ok;

	nkv_tcp_server_stop(S);
	nkv_subsys_destroy(SS);
	IC_MS = 300;
	start(0, 0);
	IC_MS = 0;
	cr_assert_eq(th_open(&c, PORT, 5000), 0);
	cr_assert_eq(th_open(&ok, PORT, 5000), 0);
	cr_assert_eq(th_ic(&ok, 0, 0), 0);
	cr_assert_eq(th_wait_close(&c), 1, "silent past ic_ms: closed");
	cr_assert_eq(th_connect(&ok, 0, 0, TH_HOSTNQN, TH_SUBNQN, 0), 0, "the other one is fine");
	th_close(&c);
	th_close(&ok);
}

/* An AER is held, not answered; an event posted from another thread
 * completes it with the event's DW0 (issue 46's seam). */
Test(tcp, aer_held_then_event)
{
	struct th a;
	struct nkv_tcp_cmd c;
	uint8_t buf[64];
	const struct nkv_tcp_rsp *r = (const void *)buf;
	uint64_t v;

	cr_assert_eq(th_admin(&a, PORT, 0, 0, TH_SUBNQN, 0), 0);
	memset(&c, 0, sizeof(c));
	c.ch.type = NKV_TCP_CMD;
	c.sqe.cdw0 = NKV_ADM_ASYNC_EVENT | (1u << 14) | (77u << 16);
	nkv_sqe_sgl1_set(&c.sqe, 0, 0, 0);
	c.sqe.prp2 |= (uint64_t)NKV_TCP_SGL_TRANSPORT << 56;
	cr_assert_eq(th_send_pdu(&a, &c, sizeof(c), NULL, 0), 0);
	/* Other commands are answered meanwhile; the AER is not. */
	cr_assert_eq(th_prop_get(&a, NKV_REG_VS, 0, &v), 0);
	cr_assert_eq(nkv_tcp_server_aer(S, 0x00020002), 0);
	cr_assert_gt(th_recv_pdu(&a, buf, sizeof(buf)), 0);
	cr_assert_eq(r->ch.type, NKV_TCP_RSP);
	cr_assert_eq(r->cqe.dw3 & 0xffff, 77, "the AER's CID");
	cr_assert_eq(r->cqe.dw3 >> 17, 0);
	cr_assert_eq(r->cqe.dw0, 0x00020002);
	th_close(&a);
}

/* A namespace attached while a host holds an AER: the server listens to
 * its subsystem, and the poll thread sends Namespace Attribute Changed. */
Test(tcp, namespace_attached_sends_the_notice)
{
	struct nkv_be_conf conf = { sizeof(conf), .capacity = 1 << 20, .max_value = 4096 };
	struct th a;
	struct nkv_tcp_cmd c;
	uint8_t buf[64];
	const struct nkv_tcp_rsp *r = (const void *)buf;
	char err[128];
	struct nkv_be *be = nkv_be_create("mem", &conf, err, sizeof(err));

	cr_assert_not_null(be, "%s", err);
	cr_assert_eq(th_admin(&a, PORT, 0, 0, TH_SUBNQN, 0), 0);
	memset(&c, 0, sizeof(c));
	c.ch.type = NKV_TCP_CMD;
	c.sqe.cdw0 = NKV_ADM_ASYNC_EVENT | (1u << 14) | (78u << 16);
	nkv_sqe_sgl1_set(&c.sqe, 0, 0, 0);
	c.sqe.prp2 |= (uint64_t)NKV_TCP_SGL_TRANSPORT << 56;
	cr_assert_eq(th_send_pdu(&a, &c, sizeof(c), NULL, 0), 0);
	cr_assert_eq(nkv_subsys_ns_attach(SS, 2, be), 0);
	cr_assert_gt(th_recv_pdu(&a, buf, sizeof(buf)), 0);
	cr_assert_eq(r->cqe.dw3 & 0xffff, 78, "the AER's CID");
	cr_assert_eq(r->cqe.dw0, NKV_AEN_NS_CHANGED);
	th_close(&a);
}
