/* SPDX-License-Identifier: MIT */
/*
 * be_op.h - a backend op as the target's core hands it over (inside a
 * command holding its one segment), for the suites that drive a backend
 * directly (test_be_mem, test_be_rocksdb): prepare, submit, wait, the
 * keys a List returns and the backend's own counters. Header-only: those
 * suites link different parts of the target (test_be_mem links mem.c
 * alone, to count its mallocs).
 */
#ifndef NKV_TEST_BE_OP_H
#define NKV_TEST_BE_OP_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "target/core/core.h"

struct be_op {
	struct nkv_tgt_cmd cmd;
	int done;
	struct iovec iov;
};

static inline void be_op_done(struct nkv_be_op *op)
{
	__atomic_store_n(&((struct be_op *)op)->done, 1, __ATOMIC_RELEASE);
}

/* An op as the core fills it: its data in buf, a TTL for NKV_STORE_TTL. */
static inline void be_op_prep(struct be_op *d, uint8_t opc, const char *key, uint32_t opt,
			      uint32_t ttl, void *buf, uint64_t len)
{
	memset(d, 0, sizeof(*d));
	d->cmd.op.opc = opc;
	d->cmd.op.klen = (uint8_t)strlen(key);
	memcpy(d->cmd.op.key, key, d->cmd.op.klen);
	d->cmd.op.options = opt;
	d->cmd.op.ttl_s = ttl;
	d->iov.iov_base = buf;
	d->iov.iov_len = len;
	d->cmd.iov = &d->iov;
	d->cmd.iovcnt = 1;
	d->cmd.op.len = len;
	d->cmd.op.done = be_op_done;
	nkv_tgt_data_start(&d->cmd, opc == NKV_KV_LIST);
}

/* Wait (at most 20 s: inline, a worker thread or a disk completes it),
 * then finish the op's data as the core does (a List's header and DW0). */
static inline void be_op_wait(struct be_op *d)
{
	long i;

	for (i = 0; i < 2000000 && !__atomic_load_n(&d->done, __ATOMIC_ACQUIRE); i++)
		usleep(10);
	cr_assert(d->done, "op never completed");
	nkv_tgt_data_end(&d->cmd);
}

static inline uint16_t be_op_run_ttl(struct nkv_be *be, uint8_t opc, const char *key,
				     uint32_t opt, uint32_t ttl, void *buf, uint64_t len,
				     uint32_t *dw0)
{
	struct be_op d;

	be_op_prep(&d, opc, key, opt, ttl, buf, len);
	cr_assert_eq(be->ops->submit(be, &d.cmd.op), 0);
	be_op_wait(&d);
	if (dw0)
		*dw0 = d.cmd.op.dw0;
	return d.cmd.op.status;
}

static inline uint16_t be_op_run(struct nkv_be *be, uint8_t opc, const char *key,
				 uint32_t opt, void *buf, uint64_t len, uint32_t *dw0)
{
	return be_op_run_ttl(be, opc, key, opt, 0, buf, len, dw0);
}

/* The keys a List from start returns (one 1 KiB page), joined with ','. */
static inline void be_list_keys(struct nkv_be *be, const char *start, char *out,
				size_t outlen)
{
	uint8_t buf[1024];
	uint32_t count, i, off = 4, dw0;
	size_t o = 0;

	cr_assert_eq(be_op_run(be, NKV_KV_LIST, start, 0, buf, sizeof(buf), &dw0), 0);
	memcpy(&count, buf, 4);
	cr_assert_eq(count, dw0);
	out[0] = 0;
	for (i = 0; i < count; i++) {
		uint16_t kl;

		memcpy(&kl, buf + off, 2);
		o += (size_t)snprintf(out + o, outlen - o, "%s%.*s", i ? "," : "", kl,
				      (const char *)buf + off + 2);
		off += nkv_list_entry_size(kl);
	}
}

/* The backend's own counter called name (its metrics, docs/metrics.md):
 * asserted present and a counter. */
static inline double be_counter(struct nkv_be *be, const char *name)
{
	struct nkv_be_metric m[16];
	unsigned i, n = be->ops->metrics(be, m, 16);

	for (i = 0; i < n; i++)
		if (!strcmp(m[i].name, name)) {
			cr_assert(m[i].counter, "%s is no counter", name);
			return m[i].value;
		}
	cr_assert(0, "no %s", name);
	return -1;
}

#endif /* NKV_TEST_BE_OP_H */
