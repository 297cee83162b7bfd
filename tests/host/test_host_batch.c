/* SPDX-License-Identifier: MIT */
/*
 * The host batch API (issue 50): many Store / Retrieve / Exist / Delete
 * commands on one host queue pair with one SQ doorbell, waited for all,
 * any or by ticket, each with its own outcome, against an in-process
 * nkv-target over vfio-user; values in nkv_mem_alloc regions, every byte
 * checked. Batches larger than the queue (several doorbells, earlier
 * commands filed while later ones go in), commands refused before
 * sending beside ones that go, keys in head form, a short Retrieve
 * reported, the synchronous API mixed in, and a stalled controller.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_util.h"
#include "nkv_host.h"

#define MiB (1u << 20)

static struct tl_server srv;
static struct nkv_ctrl *ctrl;
static struct nkv_qpair *qp;

static void up_with(const struct ht_server_opts *so, uint32_t depth, uint32_t qflags)
{
	struct nkv_qpair_opts o = { .size = sizeof(o), .depth = depth, .flags = qflags };
	char err[256] = "";

	cr_assert_eq(ht_server_start(&srv, so), 0);
	cr_assert_eq(ht_connect(&srv, 0, 2, &ctrl, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nkv_qpair_create(ctrl, &o, &qp), 0);
}

static void setup(void) { up_with(NULL, 128, NKV_QPAIR_NO_SLOTS); }
static void setup_small(void) { up_with(NULL, 8, NKV_QPAIR_NO_SLOTS); }
static void setup_short(void) { up_with(NULL, 32, NKV_QPAIR_REPORT_SHORT); }

static void setup_stalled(void)
{
	struct ht_server_opts so = { .stop_after = 2 };
	struct nkv_qpair_opts o = { .size = sizeof(o), .depth = 16, .timeout_ms = 300,
				    .flags = NKV_QPAIR_NO_SLOTS };
	char err[256] = "";

	/* A child, killed at the end: its held ops would outlive its
	 * controllers at an orderly stop. */
	cr_assert_eq(ht_server_fork(&srv, &so), 0);
	cr_assert_eq(ht_connect(&srv, 0, 2, &ctrl, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nkv_qpair_create(ctrl, &o, &qp), 0);
}

static void down(void)
{
	nkv_qpair_destroy(qp);
	nkv_ctrl_close(ctrl);
	tl_server_stop(&srv);
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 12));
}

static void key_of(char *k, size_t kl, const char *pfx, uint32_t i)
{
	snprintf(k, kl, "%s%u", pfx, i);
}

static void cmd_set(struct nkv_batch_cmd *b, uint8_t opc, const char *key, struct nkv_mr *mr,
		    uint64_t off, uint32_t len)
{
	memset(b, 0, sizeof(*b));
	b->opc = opc;
	b->key = key;
	b->klen = (uint32_t)strlen(key);
	b->mr = mr;
	b->off = off;
	b->len = len;
}

static uint64_t sq_doorbells(void)
{
	struct nkv_qpair_stats st;

	cr_assert_eq(nkv_qpair_get_stats(qp, &st), 0);
	return st.sq_doorbells;
}

/* 64 values of 256 KiB stored with one doorbell, retrieved into another
 * region with one doorbell, every byte the same; Exist and Delete in one
 * batch; a missing key answers 87h as its own outcome. */
Test(host_batch, store_retrieve_one_doorbell_each, .init = setup, .fini = down)
{
	enum { N = 64, SZ = 256 * 1024 };
	static struct nkv_batch_cmd b[N + 1];
	static char keys[N + 1][32];
	struct nkv_mr *src, *dst;
	uint8_t *ps, *pd;
	uint64_t db;
	uint32_t i;

	cr_assert_eq(nkv_mem_alloc(ctrl, (size_t)N * SZ, 0, &src, (void **)&ps), 0);
	cr_assert_eq(nkv_mem_alloc(ctrl, (size_t)N * SZ, 0, &dst, (void **)&pd), 0);
	fill(ps, (size_t)N * SZ, 1);
	for (i = 0; i < N; i++) {
		key_of(keys[i], sizeof(keys[i]), "batch-", i);
		cmd_set(&b[i], NKV_KV_STORE, keys[i], src, (uint64_t)i * SZ, SZ);
	}
	db = sq_doorbells();
	cr_assert_eq(nkv_batch_run(qp, b, N), N);
	cr_assert_eq(sq_doorbells() - db, 1, "one doorbell for 64 Stores");
	for (i = 0; i < N; i++) {
		cr_assert_eq(b[i].state, NKV_BATCH_DONE);
		cr_assert_eq(b[i].err, 0, "store %u: %d", i, b[i].err);
		cmd_set(&b[i], NKV_KV_RETRIEVE, keys[i], dst, (uint64_t)(N - 1 - i) * SZ, SZ);
	}
	snprintf(keys[N], sizeof(keys[N]), "absent");
	cmd_set(&b[N], NKV_KV_RETRIEVE, keys[N], dst, 0, 4096);
	db = sq_doorbells();
	cr_assert_eq(nkv_batch_run(qp, b, N + 1), N + 1);
	cr_assert_eq(sq_doorbells() - db, 1);
	for (i = 0; i < N; i++) {
		cr_assert_eq(b[i].err, 0);
		cr_assert_eq(b[i].dw0, SZ);
		cr_assert_eq(memcmp(pd + (size_t)(N - 1 - i) * SZ, ps + (size_t)i * SZ, SZ), 0,
			     "value %u", i);
	}
	cr_assert_eq(b[N].err, 0x87, "a missing key: Key Does Not Exist, got %d", b[N].err);
	for (i = 0; i < N; i++)
		cmd_set(&b[i], i % 2 ? NKV_KV_DELETE : NKV_KV_EXIST, keys[i], NULL, 0, 0);
	cr_assert_eq(nkv_batch_run(qp, b, N), N);
	for (i = 0; i < N; i++)
		cr_assert_eq(b[i].err, 0);
	for (i = 0; i < N; i++)
		cmd_set(&b[i], NKV_KV_EXIST, keys[i], NULL, 0, 0);
	cr_assert_eq(nkv_batch_run(qp, b, N), N);
	for (i = 0; i < N; i++)
		cr_assert_eq(b[i].err, i % 2 ? 0x87 : 0, "exist %u after deleting odd keys", i);
	cr_assert_eq(nkv_mem_deregister(src), 0);
	cr_assert_eq(nkv_mem_deregister(dst), 0);
}

/* 100 commands on a queue of depth 8 (7 free entries): they go in as
 * the queue frees, earlier outcomes filed meanwhile, all correct. */
Test(host_batch, more_than_the_queue, .init = setup_small, .fini = down)
{
	enum { N = 100, SZ = 8192 };
	static struct nkv_batch_cmd b[N];
	static char keys[N][32];
	struct nkv_mr *mr;
	uint8_t *p;
	uint64_t db;
	uint32_t i;

	cr_assert_eq(nkv_mem_alloc(ctrl, (size_t)2 * N * SZ, 0, &mr, (void **)&p), 0);
	fill(p, (size_t)N * SZ, 7);
	for (i = 0; i < N; i++) {
		key_of(keys[i], sizeof(keys[i]), "many-", i);
		cmd_set(&b[i], NKV_KV_STORE, keys[i], mr, (uint64_t)i * SZ, SZ - i);
	}
	db = sq_doorbells();
	cr_assert_eq(nkv_batch_run(qp, b, N), N);
	cr_assert_geq(sq_doorbells() - db, N / 7);
	for (i = 0; i < N; i++) {
		cr_assert_eq(b[i].err, 0);
		cmd_set(&b[i], NKV_KV_RETRIEVE, keys[i], mr, (uint64_t)(N + i) * SZ, SZ);
	}
	cr_assert_eq(nkv_batch_run(qp, b, N), N);
	for (i = 0; i < N; i++) {
		cr_assert_eq(b[i].err, 0);
		cr_assert_eq(b[i].dw0, SZ - i);
		cr_assert_eq(memcmp(p + (size_t)(N + i) * SZ, p + (size_t)i * SZ, SZ - i), 0);
	}
	cr_assert_eq(nkv_mem_deregister(mr), 0);
}

/* Submit, then wait for any, then by ticket, then all; a synchronous
 * call in between on the same queue pair; commands refused before
 * sending (a key over KML, a run outside its region) are done at once
 * with -EINVAL while the others go; keys of 17..255 bytes in head form. */
Test(host_batch, any_ticket_all_refusals_and_sync_mixed, .init = setup, .fini = down)
{
	enum { N = 16, SZ = 4096 };
	struct nkv_batch_cmd b[N + 2];
	char keys[N][200], big[300];
	struct nkv_result res;
	struct nkv_mr *mr;
	uint8_t *p, v[8];
	uint32_t i;
	int rc;

	cr_assert_eq(nkv_mem_alloc(ctrl, (size_t)N * SZ * 2, 0, &mr, (void **)&p), 0);
	fill(p, (size_t)N * SZ, 3);
	for (i = 0; i < N; i++) {
		memset(keys[i], 'a' + (int)i, sizeof(keys[i]) - 1);
		keys[i][sizeof(keys[i]) - 1] = 0;
		keys[i][i * 10 + 3] = 0;	/* 3..153 bytes: inline and head form */
		cmd_set(&b[i], NKV_KV_STORE, keys[i], mr, (uint64_t)i * SZ, SZ);
	}
	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	cmd_set(&b[N], NKV_KV_STORE, big, mr, 0, SZ);
	cmd_set(&b[N + 1], NKV_KV_STORE, "outside", mr, (uint64_t)N * SZ * 2, SZ);
	rc = nkv_batch_submit(qp, b, N + 2);
	cr_assert_eq(rc, N, "sent %d", rc);
	cr_assert_eq(b[N].state, NKV_BATCH_DONE);
	cr_assert_eq(b[N].err, -EINVAL);
	cr_assert_eq(b[N + 1].err, -EINVAL);
	/* The synchronous API meanwhile, on its own command memory. */
	cr_assert_eq(nkv_store(qp, "sync", 4, "12345678", 8, 0, &res), 0);
	cr_assert_eq(res.status, 0);
	cr_assert_eq(nkv_store_mr(qp, "sync-mr", 7, 0, mr, (uint64_t)N * SZ, SZ), 0);
	cr_assert_eq(nkv_retrieve(qp, "sync", 4, v, sizeof(v), &res), 0);
	cr_assert_eq(memcmp(v, "12345678", 8), 0);
	rc = nkv_batch_wait(qp, b, N, 1);
	cr_assert_geq(rc, 1);
	rc = nkv_batch_wait(qp, &b[5], 1, 1);
	cr_assert_eq(rc, 1);
	cr_assert_eq(b[5].state, NKV_BATCH_DONE);
	cr_assert_eq(nkv_batch_wait(qp, b, N + 2, N + 2), N + 2);
	for (i = 0; i < N; i++)
		cr_assert_eq(b[i].err, 0, "store %u (%zu-byte key): %d", i, strlen(keys[i]),
			     b[i].err);
	for (i = 0; i < N; i++)
		cmd_set(&b[i], NKV_KV_RETRIEVE, keys[i], mr, (uint64_t)(N + i) * SZ, SZ);
	cr_assert_eq(nkv_batch_run(qp, b, N), N);
	for (i = 0; i < N; i++)
		cr_assert_eq(memcmp(p + (size_t)(N + i) * SZ, p + (size_t)i * SZ, SZ), 0);
	cr_assert_eq(nkv_mem_deregister(mr), 0);
}

/* A short Retrieve under NKV_QPAIR_REPORT_SHORT is its command's
 * -EMSGSIZE with the true length in dw0; the others are whole. TTL. */
Test(host_batch, short_reported_and_ttl, .init = setup_short, .fini = down)
{
	struct nkv_batch_cmd b[2];
	struct nkv_ns_ext ext = { .size = sizeof(ext) };
	struct nkv_mr *mr;
	uint8_t *p;

	cr_assert_eq(nkv_mem_alloc(ctrl, MiB, 0, &mr, (void **)&p), 0);
	fill(p, 16384, 9);
	cmd_set(&b[0], NKV_KV_STORE, "long", mr, 0, 16384);
	cmd_set(&b[1], NKV_KV_STORE, "ttl", mr, 0, 4096);
	cr_assert_eq(nkv_ctrl_ns_ext(ctrl, 0, &ext), 0);
	if (ext.store_opts & NKV_STORE_TTL) {
		b[1].opts = NKV_STORE_TTL;
		b[1].ttl_s = 60;
	}
	cr_assert_eq(nkv_batch_run(qp, b, 2), 2);
	cr_assert_eq(b[0].err, 0);
	cr_assert_eq(b[1].err, 0);
	cmd_set(&b[0], NKV_KV_RETRIEVE, "long", mr, 65536, 4096);
	cmd_set(&b[1], NKV_KV_RETRIEVE, "ttl", mr, 131072, 4096);
	cr_assert_eq(nkv_batch_run(qp, b, 2), 2);
	cr_assert_eq(b[0].err, -EMSGSIZE);
	cr_assert_eq(b[0].dw0, 16384);
	cr_assert_eq(memcmp(p + 65536, p, 4096), 0, "the prefix landed");
	cr_assert_eq(b[1].err, 0);
	cr_assert_eq(nkv_mem_deregister(mr), 0);
}

/* A controller that stops completing: the wait ends within the queue
 * pair's timeout, every command still in flight done with -ETIMEDOUT,
 * the completed ones with their outcome; reset makes it usable again. */
Test(host_batch, stalled_controller_times_out, .init = setup_stalled, .fini = down)
{
	struct nkv_batch_cmd b[6];
	char keys[6][8];
	struct nkv_mr *mr;
	uint8_t *p;
	uint32_t i, ok = 0, to = 0;

	cr_assert_eq(nkv_mem_alloc(ctrl, MiB, 0, &mr, (void **)&p), 0);
	for (i = 0; i < 6; i++) {
		key_of(keys[i], sizeof(keys[i]), "s", i);
		cmd_set(&b[i], NKV_KV_STORE, keys[i], mr, (uint64_t)i * 4096, 4096);
	}
	cr_assert_eq(nkv_batch_submit(qp, b, 6), 6);
	cr_assert_eq(nkv_batch_wait(qp, b, 6, 6), -ETIMEDOUT);
	for (i = 0; i < 6; i++) {
		cr_assert_eq(b[i].state, NKV_BATCH_DONE);
		ok += b[i].err == 0;
		to += b[i].err == -ETIMEDOUT;
	}
	cr_assert_eq(ok, 2);
	cr_assert_eq(to, 4);
	cr_assert_eq(nkv_qpair_failed(qp), NKV_QP_FAILED_TIMEOUT);
	cr_assert_eq(nkv_batch_submit(qp, b, 1), -EIO);
	cr_assert_eq(b[0].err, -EIO);
}

/* The layout a binding over the shared library relies on (python/nkv). */
Test(host_batch, cmd_layout)
{
	cr_assert_eq(sizeof(struct nkv_batch_cmd), 72);
	cr_assert_eq(offsetof(struct nkv_batch_cmd, key), 16);
	cr_assert_eq(offsetof(struct nkv_batch_cmd, iov), 24);
	cr_assert_eq(offsetof(struct nkv_batch_cmd, n_iov), 32);
	cr_assert_eq(offsetof(struct nkv_batch_cmd, len), 36);
	cr_assert_eq(offsetof(struct nkv_batch_cmd, mr), 40);
	cr_assert_eq(offsetof(struct nkv_batch_cmd, off), 48);
	cr_assert_eq(offsetof(struct nkv_batch_cmd, err), 56);
	cr_assert_eq(offsetof(struct nkv_batch_cmd, dw0), 60);
	cr_assert_eq(offsetof(struct nkv_batch_cmd, state), 64);
	cr_assert_eq(offsetof(struct nkv_batch_cmd, cid), 68);
	cr_assert_eq(offsetof(struct nkv_batch_cmd, cmd), 70);
	cr_assert_eq(sizeof(struct nkv_iov), 24);
}
