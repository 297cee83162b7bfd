/* SPDX-License-Identifier: MIT */
/*
 * nvmf_loop - the NVMe/TCP reference for tcp: URIs (bench/front.py): a
 * host that speaks NVMe/TCP to the remote controller itself, with nkv's
 * initiator (src/nvmf/tcp_host.h) in this one thread and no front: the
 * remote's own latency and throughput as a direct NVMe/TCP host sees
 * them, which issue 45's goals compare the front with.
 *
 *   put  --batch Stores of --size bytes submitted, then reaped;
 *   get  the same Retrieves (each into a buffer of its own, every value
 *        checked once after the timed loop).
 *
 * Keys are the loop's own ("nl" and a number, inline); get stores them
 * first (not timed). Each batch is timed from its first submit to its
 * last completion, as nkv-bench times a batch. Prints one JSON line:
 * ops, wall_ns, iops, mb_per_s, latency_ns p50/p99. A measuring aid.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loop_util.h"
#include "nvmf/tcp_host.h"

struct loop_conf {
	const char *remote, *op;
	size_t size;
	unsigned batch, keys, iters, nsid;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: nvmf_loop --remote tcp:HOST:PORT[/NQN] --op put|get --size BYTES\n"
		   "                 [--batch N (1..32)] [--keys N] [--iters N] [--nsid N]\n");
}

static int parse(int argc, char **argv, struct loop_conf *c)
{
	int i;

	*c = (struct loop_conf){ .batch = 1, .keys = 256, .iters = 1, .nsid = 1 };
	for (i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];

		if (loop_opt(k, v, &c->op, &c->size, &c->batch, &c->keys, &c->iters))
			continue;
		if (!strcmp(k, "--remote"))
			c->remote = v;
		else if (!strcmp(k, "--nsid"))
			c->nsid = (unsigned)strtoul(v, NULL, 0);
		else
			return -1;
	}
	if (i != argc || !c->remote || !loop_opts_ok(c->op, c->size, c->batch, c->keys, c->iters) ||
	    c->size > UINT32_MAX || c->batch > 32 || !c->nsid)
		return -1;
	return 0;
}

/* The byte at offset i of key k's value. */
static uint8_t val_byte(unsigned k, size_t i)
{
	return (uint8_t)(k * 131u + i * 7u + (i >> 12));
}

struct loop {
	struct loop_conf c;
	struct nkv_nvmf_assoc as;
	struct nkv_nvmf_cmd cmd[32];
	uint8_t head[32][NKV_KEY_HEAD_MAX];
	uint8_t **buf;		/* one per batch lane */
	uint8_t *val;		/* put: the value */
};

/* Commands lane 0..n-1 for keys k0.. with opcode opc: 0 or -errno. */
static int run_batch(struct loop *l, uint8_t opc, unsigned k0, unsigned n)
{
	uint32_t icd = nkv_nvmf_q_icd_max(l->as.io);
	unsigned i, sent = 0;
	int rc;

	if (n > 1)
		nkv_nvmf_q_cork(l->as.io, 1);
	for (i = 0; i < n; i++) {
		char key[16];
		int kl = snprintf(key, sizeof(key), "nl%u", k0 + i);
		uint8_t *data = opc == NKV_KV_STORE ? l->val : l->buf[i];

		if (opc == NKV_KV_STORE && l->c.op[0] == 'g') {	/* the fill: each key its bytes */
			data = l->buf[i];
			for (size_t b = 0; b < l->c.size; b++)
				data[b] = val_byte(k0 + i, b);
		}
		rc = nkv_nvmf_kv_prep(&l->cmd[i], icd, opc, l->c.nsid, (const uint8_t *)key,
				      (uint32_t)kl, l->head[i], data, (uint32_t)l->c.size, 0, 0);
		if (!rc)
			rc = nkv_nvmf_q_submit(l->as.io, &l->cmd[i]);
		if (rc)
			return rc;
		sent++;
	}
	if (n > 1)
		nkv_nvmf_q_cork(l->as.io, 0);
	while (sent) {
		rc = nkv_nvmf_q_reap(l->as.io);
		if (rc < 0)
			return rc;
		sent -= (unsigned)rc;
	}
	for (i = 0; i < n; i++)
		if (l->cmd[i].err || nkv_nvmf_status(&l->cmd[i])) {
			fprintf(stderr, "nvmf_loop: key nl%u: %s, status %03xh\n", k0 + i,
				l->cmd[i].err ? strerror(-l->cmd[i].err) : "completed",
				nkv_nvmf_status(&l->cmd[i]) & 0x7ff);
			return -EIO;
		}
	return 0;
}

/* After the timed gets: the last batch's values are the keys' own. */
static int check_last(struct loop *l, unsigned k0)
{
	unsigned i;
	size_t b;

	for (i = 0; i < l->c.batch; i++)
		for (b = 0; b < l->c.size; b++)
			if (l->buf[i][b] != val_byte(k0 + i, b)) {
				fprintf(stderr, "nvmf_loop: key nl%u: byte %zu differs\n", k0 + i, b);
				return -EBADMSG;
			}
	return 0;
}

static int setup(struct loop *l)
{
	struct nkv_nvmf_opts o = { .size = sizeof(o), .depth = 32, .timeout_ms = 30000 };
	struct nkv_nvmf_addr a;
	char err[160];
	unsigned i;
	int rc;

	if (nkv_nvmf_uri_parse(l->c.remote, &a, err, sizeof(err))) {
		fprintf(stderr, "nvmf_loop: %s\n", err);
		return -EINVAL;
	}
	l->buf = calloc(l->c.batch, sizeof(*l->buf));
	l->val = malloc(l->c.size);
	for (i = 0; l->buf && i < l->c.batch; i++)
		l->buf[i] = malloc(l->c.size);
	if (!l->buf || !l->val || !l->buf[l->c.batch - 1])
		return -ENOMEM;
	memset(l->val, 0x5a, l->c.size);
	rc = nkv_nvmf_assoc_open(&l->as, &a, &o);
	if (rc)
		fprintf(stderr, "nvmf_loop: cannot connect to %s: %s\n", l->c.remote, strerror(-rc));
	return rc;
}

int main(int argc, char **argv)
{
	struct loop l = { 0 };
	uint64_t *lat, t0, t, wall;
	unsigned nb, i, k;
	uint8_t opc;
	int rc;

	if (parse(argc, argv, &l.c)) {
		usage(stderr);
		return 2;
	}
	rc = setup(&l);
	if (rc)
		return 3;
	opc = l.c.op[0] == 'g' ? NKV_KV_RETRIEVE : NKV_KV_STORE;
	for (k = 0; opc == NKV_KV_RETRIEVE && !rc && k < l.c.keys; k += l.c.batch)
		rc = run_batch(&l, NKV_KV_STORE, k, l.c.batch);
	nb = l.c.keys / l.c.batch * l.c.iters;
	lat = calloc(nb, sizeof(*lat));
	if (!lat)
		rc = -ENOMEM;
	t0 = now_ns();
	for (i = 0; !rc && i < nb; i++) {
		k = i * l.c.batch % l.c.keys;
		t = now_ns();
		rc = run_batch(&l, opc, k, l.c.batch);
		lat[i] = now_ns() - t;
		if (!rc && nkv_nvmf_assoc_ka_due(&l.as))
			rc = nkv_nvmf_assoc_keep_alive(&l.as);
	}
	wall = now_ns() - t0;
	if (!rc && opc == NKV_KV_RETRIEVE)
		rc = check_last(&l, (nb - 1) * l.c.batch % l.c.keys);
	nkv_nvmf_assoc_close(&l.as);
	if (rc) {
		fprintf(stderr, "nvmf_loop: FAILED: %s\n", strerror(-rc));
		return rc == -EBADMSG || rc == -EIO ? 1 : 3;
	}
	qsort(lat, nb, sizeof(*lat), cmp_u64);
	printf("{\"op\":\"%s\",\"size\":%zu,\"batch\":%u,\"ops\":%llu,\"wall_ns\":%llu,"
	       "\"iops\":%.1f,\"mb_per_s\":%.1f,\"latency_ns\":{\"p50\":%llu,\"p99\":%llu}}\n",
	       l.c.op, l.c.size, l.c.batch, (unsigned long long)nb * l.c.batch,
	       (unsigned long long)wall, (double)nb * l.c.batch * 1e9 / (double)wall,
	       (double)nb * l.c.batch * (double)l.c.size * 1e3 / (double)wall,
	       (unsigned long long)lat[nb / 2], (unsigned long long)lat[nb * 99 / 100]);
	return 0;
}
