/* SPDX-License-Identifier: MIT */
/*
 * Hostile and faulty NVMe/TCP hosts: wrong PDU types, HLEN, PDO, PLEN,
 * digests, PDUs out of order, H2CData without an R2T, outside its
 * command's data or naming another command, in-capsule data past IOCCSZ,
 * a host that vanishes mid-transfer or stops reading. Each: the target
 * answers with a C2HTermReq naming the fault (FES, FEI) where the spec
 * says so, closes that connection (and its association), counts it, and
 * a well-behaved host beside it is unaffected. Run under ASan (make
 * SAN=asan) it also shows that nothing is read or written outside a
 * command's buffer.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "target/backends/registry.h"
#include "target/tcp/server.h"
#include "tcp_host.h"
#include "tcp_srv.h"

static struct nkv_subsys *SS;
static struct nkv_tcp_server *S;
static uint16_t PORT;
static struct th GA, GIO;	/* the well-behaved host */
static struct th BA[4];		/* the hostile hosts' admin queues */
static int NBA;

static void setup(void)
{
	struct nkv_be_conf kv = { sizeof(kv), .capacity = 64 << 20, .max_value = 8 << 20 };
	struct nkv_tcp_server_opts o = { sizeof(o) };
	char err[256];
	struct nkv_be *be = nkv_be_create("mem", &kv, err, sizeof(err));

	cr_assert(be, "%s", err);
	o.log_level = 1;	/* the warnings: one line per terminated connection */
	cr_assert_eq(tcp_srv_start(be, &o, &SS, &S, &PORT), 0);
	cr_assert_eq(th_admin(&GA, PORT, 1, 1, TH_SUBNQN, 0), 0);
	cr_assert_eq(th_io(&GIO, &GA, 1), 0);
}

static void teardown(void)
{
	while (NBA)
		th_close(&BA[--NBA]);
	th_close(&GIO);
	th_close(&GA);
	tcp_srv_stop(SS, S);
}

TestSuite(hostile, .init = setup, .fini = teardown, .timeout = 60);

/* The well-behaved host still stores and reads back what it stores. */
static void good_host_fine(void)
{
	uint8_t v[70000], back[70000];
	uint32_t dw0, got;
	size_t i;

	for (i = 0; i < sizeof(v); i++)
		v[i] = (uint8_t)(i * 13);
	cr_assert_eq(th_store(&GIO, "good", 4, v, sizeof(v)), 0);
	cr_assert_eq(th_retrieve(&GIO, "good", 4, back, sizeof(back), &dw0, &got), 0);
	cr_assert_eq(memcmp(v, back, sizeof(v)), 0);
}

/* The bad host got a C2HTermReq with fes (and fei), then the close. */
static void terminated(struct th *t, uint16_t fes, int fei)
{
	struct nkv_tcp_server_stats st;

	cr_assert_eq(th_wait_close(t), 1, "the target closed the connection");
	cr_assert_eq(t->term.ch.type, NKV_TCP_C2H_TERM, "a C2HTermReq came first");
	cr_assert_eq(t->term.fes, fes, "FES %u, want %u", t->term.fes, fes);
	if (fei >= 0)
		cr_assert_eq(nkv_tcp_term_fei(&t->term), (uint32_t)fei);
	th_close(t);
	nkv_tcp_server_stats(S, &st);
	cr_assert_geq(st.terminated, 1);
	good_host_fine();
}

/* An I/O queue of a controller of its own; the admin queue stays open
 * (closing it would end the association, t with it) until teardown. */
static void bad_io(struct th *t, int digests)
{
	struct th *a = &BA[NBA++];

	cr_assert_eq(th_admin(a, PORT, digests, digests, TH_SUBNQN, 0), 0);
	cr_assert_eq(th_io(t, a, 1), 0);
}

static void raw_ch(struct th *t, uint8_t type, uint8_t flags, uint8_t hlen, uint8_t pdo,
		   uint32_t plen, uint32_t total)
{
	uint8_t buf[512];
	struct nkv_tcp_ch *ch = (void *)buf;

	memset(buf, 0, sizeof(buf));
	nkv_tcp_ch_init(ch, type, flags, hlen, pdo, plen);
	cr_assert_eq(th_send(t, buf, total), 0);
}

Test(hostile, pdu_before_icreq)
{
	struct th t;

	cr_assert_eq(th_open(&t, PORT, 5000), 0);
	raw_ch(&t, NKV_TCP_CMD, 0, 72, 0, 72, 72);
	terminated(&t, NKV_TCP_FES_SEQUENCE, -1);
}

Test(hostile, icreq_twice)
{
	struct th t;

	cr_assert_eq(th_open(&t, PORT, 5000), 0);
	cr_assert_eq(th_ic(&t, 0, 0), 0);
	raw_ch(&t, NKV_TCP_ICREQ, 0, 128, 0, 128, 128);
	terminated(&t, NKV_TCP_FES_SEQUENCE, -1);
}

Test(hostile, wrong_pdu_type)
{
	struct th t;

	bad_io(&t, 0);
	raw_ch(&t, NKV_TCP_R2T, 0, 24, 0, 24, 24);	/* a controller's PDU */
	terminated(&t, NKV_TCP_FES_HDR_FIELD, 0);
}

Test(hostile, unknown_pdu_type)
{
	struct th t;

	bad_io(&t, 0);
	raw_ch(&t, 0x42, 0, 24, 0, 24, 24);
	terminated(&t, NKV_TCP_FES_HDR_FIELD, 0);
}

Test(hostile, wrong_hlen)
{
	struct th t;

	bad_io(&t, 0);
	raw_ch(&t, NKV_TCP_CMD, 0, 70, 0, 70, 70);
	terminated(&t, NKV_TCP_FES_HDR_FIELD, 2);
}

Test(hostile, pdo_inside_header)
{
	struct th t;

	bad_io(&t, 0);
	raw_ch(&t, NKV_TCP_CMD, 0, 72, 40, 200, 200);
	terminated(&t, NKV_TCP_FES_HDR_FIELD, 3);
}

Test(hostile, plen_short_of_header)
{
	struct th t;

	bad_io(&t, 0);
	raw_ch(&t, NKV_TCP_CMD, 0, 72, 0, 50, 72);
	terminated(&t, NKV_TCP_FES_HDR_FIELD, 4);
}

Test(hostile, plen_huge)
{
	struct th t;

	bad_io(&t, 0);
	raw_ch(&t, NKV_TCP_CMD, 0, 72, 72, 0xffffffffu, 72);
	terminated(&t, NKV_TCP_FES_LIMIT, -1);
}

Test(hostile, digest_flag_not_negotiated)
{
	struct th t;

	bad_io(&t, 0);
	raw_ch(&t, NKV_TCP_CMD, NKV_TCP_F_HDGST, 72, 0, 76, 76);
	terminated(&t, NKV_TCP_FES_HDR_FIELD, 1);
}

Test(hostile, bad_header_digest)
{
	uint8_t buf[80];
	struct nkv_tcp_cmd *c = (void *)buf;
	struct th t;

	bad_io(&t, 1);
	memset(buf, 0, sizeof(buf));
	nkv_tcp_ch_init(&c->ch, NKV_TCP_CMD, NKV_TCP_F_HDGST, 72, 0, 76);
	c->sqe.cdw0 = NKV_KV_EXIST | (1u << 16);
	c->sqe.nsid = 1;
	nkv_tcp_hdgst_put(buf, 72);
	buf[76 - 1] ^= 0x55;	/* the digest no longer matches */
	cr_assert_eq(th_send(&t, buf, 76), 0);
	terminated(&t, NKV_TCP_FES_HDGST, -1);
}

Test(hostile, bad_data_digest)
{
	uint8_t buf[76 + 64 + 4];
	struct nkv_tcp_cmd *c = (void *)buf;
	struct th t;
	uint32_t crc;

	bad_io(&t, 1);
	memset(buf, 0, sizeof(buf));
	nkv_tcp_ch_init(&c->ch, NKV_TCP_CMD, NKV_TCP_F_HDGST | NKV_TCP_F_DDGST, 72, 76,
			sizeof(buf));
	c->sqe.cdw0 = NKV_KV_STORE | (1u << 14) | (1u << 16);
	c->sqe.nsid = 1;
	c->sqe.cdw2 = 0x6b;
	c->sqe.cdw10 = 64;
	c->sqe.cdw11 = 1;
	nkv_sqe_sgl1_set(&c->sqe, 0, 64, 0);
	c->sqe.prp2 |= (uint64_t)NKV_TCP_SGL_ICD << 56;
	nkv_tcp_hdgst_put(buf, 72);
	crc = nkv_tcp_crc32c(buf + 76, 64) ^ 1;
	memcpy(buf + 76 + 64, &crc, 4);
	cr_assert_eq(th_send(&t, buf, sizeof(buf)), 0);
	terminated(&t, NKV_TCP_FES_HDGST, -1);
	cr_assert_eq(th_kv_simple(&GIO, NKV_KV_EXIST, "k", 1),
		     NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS),
		     "the value with a bad digest was not stored");
}

static void h2c(struct th *t, uint16_t cccid, uint16_t ttag, uint32_t datao, uint32_t datal)
{
	uint8_t *d = calloc(1, datal ? datal : 1);
	struct nkv_tcp_data h;

	memset(&h, 0, sizeof(h));
	h.ch.type = NKV_TCP_H2C_DATA;
	h.cccid = cccid;
	h.ttag = ttag;
	h.datao = datao;
	h.datal = datal;
	th_send_pdu(t, &h, sizeof(h), d, datal);
	free(d);
}

Test(hostile, h2c_without_r2t)
{
	struct th t;

	bad_io(&t, 0);
	h2c(&t, 1, 5, 0, 512);
	terminated(&t, NKV_TCP_FES_HDR_FIELD, 10);
}

/* A Store that needs an R2T: send the capsule, read the R2T. */
static struct nkv_tcp_r2t r2t_store(struct th *t, uint32_t len)
{
	uint8_t buf[64];
	struct nkv_tcp_cmd c;
	struct nkv_tcp_r2t r;

	memset(&c, 0, sizeof(c));
	c.ch.type = NKV_TCP_CMD;
	c.sqe.cdw0 = NKV_KV_STORE | (1u << 14) | (7u << 16);
	c.sqe.nsid = 1;
	c.sqe.cdw2 = 0x7a;
	c.sqe.cdw10 = len;
	c.sqe.cdw11 = 1;
	nkv_sqe_sgl1_set(&c.sqe, 0, len, 0);
	c.sqe.prp2 |= (uint64_t)NKV_TCP_SGL_TRANSPORT << 56;
	cr_assert_eq(th_send_pdu(t, &c, sizeof(c), NULL, 0), 0);
	cr_assert_gt(th_recv_pdu(t, buf, sizeof(buf)), 0);
	memcpy(&r, buf, sizeof(r));
	cr_assert_eq(r.ch.type, NKV_TCP_R2T);
	cr_assert_eq(r.cccid, 7);
	cr_assert_eq(r.r2to, 0);
	cr_assert_eq(r.r2tl, len);
	return r;
}

Test(hostile, h2c_outside_the_data)
{
	struct th t;
	struct nkv_tcp_r2t r;

	bad_io(&t, 0);
	r = r2t_store(&t, 65536);
	h2c(&t, 7, r.ttag, 61440, 8192);	/* runs 4 KiB past the value */
	terminated(&t, NKV_TCP_FES_RANGE, -1);
}

Test(hostile, h2c_offset_gap)
{
	struct th t;
	struct nkv_tcp_r2t r;

	bad_io(&t, 0);
	r = r2t_store(&t, 65536);
	h2c(&t, 7, r.ttag, 4096, 4096);	/* skips the first 4 KiB */
	terminated(&t, NKV_TCP_FES_HDR_FIELD, 12);
}

Test(hostile, h2c_other_command)
{
	struct th t;
	struct nkv_tcp_r2t r;

	bad_io(&t, 0);
	r = r2t_store(&t, 65536);
	h2c(&t, 8, r.ttag, 0, 4096);	/* the tag's command is CID 7 */
	terminated(&t, NKV_TCP_FES_HDR_FIELD, 8);
}

Test(hostile, h2c_after_all_data)
{
	struct th t;
	struct nkv_tcp_r2t r;
	uint8_t buf[64];

	bad_io(&t, 0);
	r = r2t_store(&t, 4096);
	h2c(&t, 7, r.ttag, 0, 4096);
	cr_assert_gt(th_recv_pdu(&t, buf, sizeof(buf)), 0);
	cr_assert_eq(buf[0], NKV_TCP_RSP, "the Store completed");
	h2c(&t, 7, r.ttag, 0, 4096);	/* the same data again */
	terminated(&t, NKV_TCP_FES_HDR_FIELD, 10);
}

Test(hostile, in_capsule_data_past_ioccsz)
{
	struct th t;
	struct nkv_sqe s;
	uint8_t *big = calloc(1, TH_ICD_IO + 1);

	bad_io(&t, 0);
	memset(&s, 0, sizeof(s));
	s.cdw0 = NKV_KV_STORE;
	s.nsid = 1;
	s.cdw10 = TH_ICD_IO + 1;
	s.cdw11 = 1;
	t.icd_max = TH_ICD_IO + 1;	/* the host pretends IOCCSZ is larger */
	cr_assert_eq(th_cmd(&t, &s, big, TH_ICD_IO + 1, NULL, 0, NULL, 0, NULL), TH_TIMEOUT);
	cr_assert_eq(t.term.fes, NKV_TCP_FES_LIMIT);
	free(big);
	th_close(&t);
	good_host_fine();
}

Test(hostile, host_termreq)
{
	struct th t;
	uint8_t buf[24 + 8];
	struct nkv_tcp_fault f = { NKV_TCP_FES_HDR_FIELD, 0, "test" };

	bad_io(&t, 0);
	nkv_tcp_term_build(buf, NKV_TCP_H2C_TERM, &f, "12345678", 8);
	cr_assert_eq(th_send(&t, buf, sizeof(buf)), 0);
	cr_assert_eq(th_wait_close(&t), 1);
	th_close(&t);
	good_host_fine();
}

Test(hostile, garbage)
{
	uint8_t buf[4096];
	struct th t;
	size_t i;

	bad_io(&t, 0);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 37 + 11);
	th_send(&t, buf, sizeof(buf));
	cr_assert_eq(th_wait_close(&t), 1);
	th_close(&t);
	good_host_fine();
}

Test(hostile, vanishes_mid_h2c)
{
	struct th t;
	struct nkv_tcp_r2t r;

	bad_io(&t, 0);
	r = r2t_store(&t, 4u << 20);
	h2c(&t, 7, r.ttag, 0, 256u << 10);
	th_close(&t);	/* gone with 3.75 MiB still owed */
	good_host_fine();
	cr_assert_eq(th_kv_simple(&GIO, NKV_KV_EXIST, "z", 1),
		     NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS), "nothing half stored");
}

Test(hostile, vanishes_mid_c2h_and_stops_reading)
{
	uint8_t *v = malloc(4u << 20);
	struct th t, stuck;
	struct nkv_sqe s;
	struct nkv_tcp_cmd c;
	int i;

	memset(v, 0x3c, 4u << 20);
	cr_assert_eq(th_store(&GIO, "big", 3, v, 4u << 20), 0);
	/* One host asks for 4 MiB and leaves; another asks for 16 x 4 MiB
	 * and reads nothing: its socket fills, the target keeps serving. */
	bad_io(&t, 0);
	bad_io(&stuck, 0);
	for (i = 0; i < 16; i++) {
		memset(&s, 0, sizeof(s));
		s.cdw0 = NKV_KV_RETRIEVE | (1u << 14) | ((uint32_t)(i + 1) << 16);
		s.nsid = 1;
		memcpy(&s.cdw2, "big", 3);
		s.cdw10 = 4u << 20;
		s.cdw11 = 3;
		nkv_sqe_sgl1_set(&s, 0, 4u << 20, 0);
		s.prp2 |= (uint64_t)NKV_TCP_SGL_TRANSPORT << 56;
		memset(&c, 0, sizeof(c));
		c.ch.type = NKV_TCP_CMD;
		c.sqe = s;
		cr_assert_eq(th_send_pdu(&stuck, &c, sizeof(c), NULL, 0), 0);
		if (i == 0)
			cr_assert_eq(th_send_pdu(&t, &c, sizeof(c), NULL, 0), 0);
	}
	th_close(&t);
	usleep(200000);
	for (i = 0; i < 5; i++)
		good_host_fine();
	th_close(&stuck);
	good_host_fine();
	free(v);
}
