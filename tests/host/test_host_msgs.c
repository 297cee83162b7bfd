/* SPDX-License-Identifier: MIT */
/*
 * Values reached only by messages (issue 14): NKV_CTRL_VALUES_BY_MESSAGES
 * registers the value arena without an fd, so nkv-target moves every
 * value with DMA_READ / DMA_WRITE and the library's socket thread serves
 * them, as it would for GPU memory the target cannot map. Every op byte
 * for byte in memory modes 0x8 and 0xf, the path said in
 * nkv_qpair_info.by_messages and seen in the server's counters.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "big_util.h"
#include "host/host.h"
#include "host_util.h"
#include "nkv_dev.h"
#include "nkv_list.h"
#include "target/vfio-user/server.h"

#define NKEYS 40
#define MAXV (1u << 20)

static struct tl_server srv;

static void up(void)
{
	struct ht_server_opts o = { 0 };

	cr_assert_eq(ht_server_start(&srv, &o), 0);
}

static void down(void) { tl_server_stop(&srv); }

static int connect_flags(uint32_t mode, uint32_t flags, struct nkv_ctrl **c, char *err, size_t el)
{
	struct nkv_ctrl_opts o = { .size = sizeof(o) };

	o.memory_mode = mode;
	o.io_queues = 1;
	o.flags = flags;
	o.err = err;
	o.errlen = el;
	return nkv_ctrl_connect(srv.uri, &o, c);
}

static void every_op(struct nkv_qpair *qp)
{
	static uint8_t buf[MAXV];
	struct nkv_list_dec d;
	struct nkv_result r;
	uint8_t key[16], k2[16];
	uint32_t i, kl, k2l, seen = 0;
	int rc;

	for (i = 0; i < NKEYS; i++) {
		uint32_t len = ht_size(i, 3, MAXV);

		kl = ht_key(i, 3, key);
		ht_fill(buf, len, i);
		cr_assert_eq(nkv_store(qp, key, kl, buf, len, 0, &r), 0);
		cr_assert_eq(r.status, 0, "store %u: %s", i, nkv_status_str(r.status));
	}
	for (i = 0; i < NKEYS; i++) {
		uint32_t len = ht_size(i, 3, MAXV);
		long off;

		kl = ht_key(i, 3, key);
		memset(buf, 0, len);
		cr_assert_eq(nkv_retrieve(qp, key, kl, buf, MAXV, &r), 0);
		cr_assert_eq(r.status, 0, "retrieve %u: %s", i, nkv_status_str(r.status));
		cr_assert_eq(r.dw0, len);
		off = ht_check(buf, len, i);
		cr_assert_eq(off, -1, "key %u (%u bytes) differs at %ld", i, len, off);
		cr_assert_eq(nkv_exist(qp, key, kl, &r), 0);
		cr_assert_eq(r.status, 0);
	}
	cr_assert_eq(nkv_list(qp, NULL, 0, buf, 4096, &r), 0);
	cr_assert_eq(r.status, 0);
	cr_assert_eq(nkv_list_dec_init(&d, buf, 4096), 0);
	while ((rc = nkv_list_dec_next(&d, k2, sizeof(k2), &k2l)) == 1)
		seen++;
	cr_assert_eq(rc, 0);
	cr_assert_eq(seen, NKEYS);
	for (i = 0; i < NKEYS; i++) {
		kl = ht_key(i, 3, key);
		cr_assert_eq(nkv_delete(qp, key, kl, &r), 0);
		cr_assert_eq(r.status, 0);
		cr_assert_eq(nkv_exist(qp, key, kl, &r), 0);
		cr_assert_eq(r.status, NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS));
	}
}

static void by_messages(uint32_t mode, uint32_t flags)
{
	struct nkv_qpair_opts qo = { .size = sizeof(qo), .depth = 8, .slot_size = MAXV };
	struct nkv_qpair_info qi = { .size = sizeof(qi) };
	struct nkv_vfu_server_stats st;
	struct nkv_ctrl *c;
	struct nkv_qpair *qp;
	char err[256] = "";

	cr_assert_eq(connect_flags(mode, flags, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nkv_qpair_create(c, &qo, &qp), 0);
	cr_assert_eq(nkv_qpair_get_info(qp, &qi), 0);
	cr_assert_eq(qi.by_messages, flags ? NKV_MEM_DATA : 0u);
	/* A caller built before the field: its size is accepted, the field
	 * it does not know left alone. */
	{
		struct nkv_qpair_info old = { .size = offsetof(struct nkv_qpair_info, by_messages) };

		old.by_messages = 0xdead;
		cr_assert_eq(nkv_qpair_get_info(qp, &old), 0);
		cr_assert_eq(old.by_messages, 0xdead);
		cr_assert_eq(old.values, qi.values);
	}
	every_op(qp);
	nkv_vfu_server_stats(srv.srv, &st);
	if (flags) {
		/* Each value went out and came back by message, at least. */
		cr_assert_geq(st.dma_msgs, 2 * NKEYS);
		cr_assert_gt(st.dma_bytes, 2ull * NKEYS);
	} else {
		cr_assert_eq(st.dma_msgs, 0);
	}
	nkv_qpair_destroy(qp);
	nkv_ctrl_close(c);
}

Test(host_msgs, every_op_mode_8, .init = up, .fini = down) { by_messages(0x8, NKV_CTRL_VALUES_BY_MESSAGES); }
Test(host_msgs, every_op_mode_f, .init = up, .fini = down) { by_messages(0xf, NKV_CTRL_VALUES_BY_MESSAGES); }
Test(host_msgs, mode_8_mapped_sends_no_messages, .init = up, .fini = down) { by_messages(0x8, 0); }

/* Every op at 1 B .. 64 MiB by messages: the target moves each value in
 * DMA_READ / DMA_WRITE messages of at most the negotiated 1 MiB, 64 of
 * them for a 64 MiB value each way, byte for byte. */
Test(host_msgs, values_to_64_mib, .init = up, .fini = down, .timeout = 120)
{
	struct nkv_vfu_server_stats st;
	struct nkv_ctrl *c;
	struct nkv_qpair *qp;
	char err[256] = "";
	uint64_t sum = 0;
	int i;

	cr_assert_eq(connect_flags(0x8, NKV_CTRL_VALUES_BY_MESSAGES, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nkv_qpair_create(c, NULL, &qp), 0);
	big_every_op(qp, 64 * BIG_MIB);
	for (i = 0; i < BIG_NSIZES; i++)
		sum += big_sizes[i];
	nkv_vfu_server_stats(srv.srv, &st);
	cr_assert_geq(st.dma_msgs, 2 * (64 + 16), "1 MiB a message");
	cr_assert_geq(st.dma_bytes, 2 * sum, "every value out and back");
	nkv_qpair_destroy(qp);
	nkv_ctrl_close(c);
}

Test(host_msgs, needs_values_in_device_memory, .init = up, .fini = down)
{
	struct nkv_ctrl *c = NULL;
	char err[256] = "";

	cr_assert_eq(connect_flags(0x7, NKV_CTRL_VALUES_BY_MESSAGES, &c, err, sizeof(err)), -EINVAL);
	cr_assert_neq(strstr(err, "0x8"), NULL, "%s", err);
	cr_assert_eq(connect_flags(0x8, 0x80, &c, err, sizeof(err)), -EINVAL);
}

/* The ops' messages arrive while the library itself is mid-request: the
 * socket thread serves the server's DMA messages and hands the replies
 * to callers, from several threads at once. */
struct worker {
	struct nkv_ctrl *c;
	struct nkv_qpair *qp;
	uint32_t salt;
	int fails;
};

static void *churn(void *arg)
{
	struct worker *w = arg;
	uint8_t key[16], v[3000], back[3000];
	struct nkv_result r;
	uint32_t i, kl;

	for (i = 0; i < 200; i++) {
		kl = ht_key(i, w->salt, key);
		ht_fill(v, sizeof(v), i + w->salt);
		if (nkv_store(w->qp, key, kl, v, sizeof(v), 0, &r) || r.status ||
		    nkv_retrieve(w->qp, key, kl, back, sizeof(back), &r) || r.status ||
		    memcmp(v, back, sizeof(v)))
			w->fails++;
	}
	return NULL;
}

Test(host_msgs, requests_while_values_move, .init = up, .fini = down)
{
	struct nkv_ctrl *c;
	struct nkv_qpair *qp;
	struct worker w = { 0 };
	struct nkv_vfu_server_stats st;
	pthread_t t;
	char err[256] = "";
	int i;

	cr_assert_eq(connect_flags(0x8, NKV_CTRL_VALUES_BY_MESSAGES, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nkv_qpair_create(c, NULL, &qp), 0);
	w.c = c;
	w.qp = qp;
	w.salt = 7;
	cr_assert_eq(pthread_create(&t, NULL, churn, &w), 0);
	/* Meanwhile: admin commands and register reads, all messages. */
	for (i = 0; i < 50; i++) {
		struct nkv_ns_info ns[2];

		cr_assert_geq(nkv_ctrl_namespaces(c, ns, 2), 1);
	}
	pthread_join(t, NULL);
	cr_assert_eq(w.fails, 0);
	nkv_vfu_server_stats(srv.srv, &st);
	cr_assert_geq(st.dma_msgs, 400);
	nkv_qpair_destroy(qp);
	nkv_ctrl_close(c);
}

/* The library's side failing: a copy that fails is answered with an
 * error, and the command ends with Data Transfer Error, never success;
 * a failed Store stores nothing. (The arena's ops are swapped for ones
 * whose copy fails on request, before the slots are allocated.) */
static int copy_fails;		/* atomic */

static int flaky_copy(void *ctx, const struct nkv_dmamem *m, size_t off, void *host,
		      size_t len, int to_mem)
{
	uint8_t *p = (uint8_t *)m->va + off;

	(void)ctx;
	if (__atomic_load_n(&copy_fails, __ATOMIC_ACQUIRE))
		return -EIO;
	memcpy(to_mem ? (void *)p : host, to_mem ? host : (void *)p, len);
	return 0;
}

Test(host_msgs, failed_copy_is_data_transfer_error, .init = up, .fini = down)
{
	static struct nkv_h_memsrc_ops flaky;
	const uint16_t dte = NKV_STATUS(0, NKV_SC_DATA_XFER_ERROR);
	struct nkv_ctrl *c;
	struct nkv_qpair *qp;
	struct nkv_result r;
	uint8_t v[100], back[100];
	char err[256] = "";

	cr_assert_eq(connect_flags(0x8, NKV_CTRL_VALUES_BY_MESSAGES, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_not_null(c->dev_msg);
	flaky = *c->dev_msg->ops;
	flaky.copy = flaky_copy;
	c->dev_msg->ops = &flaky;
	cr_assert_eq(nkv_qpair_create(c, NULL, &qp), 0);
	memset(v, 0x5a, sizeof(v));
	cr_assert_eq(nkv_store(qp, "good", 4, v, sizeof(v), 0, &r), 0);
	cr_assert_eq(r.status, 0);
	__atomic_store_n(&copy_fails, 1, __ATOMIC_RELEASE);
	cr_assert_eq(nkv_retrieve(qp, "good", 4, back, sizeof(back), &r), 0);
	cr_assert_eq(r.status, dte, "retrieve: %s", nkv_status_str(r.status));
	cr_assert_eq(nkv_store(qp, "bad", 3, v, sizeof(v), 0, &r), 0);
	cr_assert_eq(r.status, dte, "store: %s", nkv_status_str(r.status));
	__atomic_store_n(&copy_fails, 0, __ATOMIC_RELEASE);
	cr_assert_eq(nkv_exist(qp, "bad", 3, &r), 0);
	cr_assert_eq(r.status, NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS));
	memset(back, 0, sizeof(back));
	cr_assert_eq(nkv_retrieve(qp, "good", 4, back, sizeof(back), &r), 0);
	cr_assert_eq(r.status, 0);
	cr_assert_eq(memcmp(back, v, sizeof(v)), 0);
	nkv_qpair_destroy(qp);
	nkv_ctrl_close(c);
}
