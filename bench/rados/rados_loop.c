// SPDX-License-Identifier: MIT
/*
 * rados_loop.c - the direct librados reference for nkv-target's RADOS
 * backend: keep N asynchronous writes (write_full) or reads of one object
 * size in flight against a pool / namespace and time every operation,
 * with nothing between the caller and librados. bench/rados/run.sh sets
 * it beside nkv-bench and `rados bench`.
 *
 *   rados_loop -c ceph.conf -p kvpool [-N ns] --op write|read
 *              --size BYTES --inflight N --ops N [--objects N] [--batch]
 *              [--via librados|backend] [--owner ID] [--prefill] [--json]
 *
 * --via backend issues each operation through nkv-target's own RADOS
 * backend (src/target/backends/rados.c, created through the registry: a Store as write_full, a Retrieve as a
 * read op with a stat, completions from librados' threads), in this
 * process, with no queue pair, transport or polling thread in between:
 * nkv-bench's figure over this one is what the NVMe-KV hop costs, this
 * one over plain librados what the backend's own calls cost. --owner ID
 * makes every Store a tenant's (issue 48): the backend then writes the
 * value and its nkv.owner xattr in one compound write op, whose cost
 * over write_full docs/ceph.md states.
 *
 * --prefill writes every object once first, not timed, as nkv-bench's
 * --fill once stores every key before its timed Stores: the timed writes
 * then replace objects on both sides, not create them on one.
 *
 * --batch issues N, waits for all N, then the next N, as a wave batch of
 * nkv-bench does; each op's latency is then its batch's (submit -> last
 * completion), nkv-bench's definition, so the two compare like for like.
 *
 * Objects are named like nkv keys (lowercase hex of "rlNNNNNN"), so a
 * read pass reads what a write pass stored. Latency is submit -> librados
 * completion callback, per operation.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <rados/librados.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "target/backends/rados.h"
#include "target/backends/registry.h"
#include "target/core/core.h"

struct rl_opts {
	const char *conf, *pool, *ns, *op;
	size_t size;
	unsigned inflight, ops, objects;
	int json, batch, prefill;
	int via_backend;	/* --via backend: through be_rados */
	uint64_t owner;		/* --owner ID: Stores by this tenant (backend) */
};

struct rl_slot {
	rados_completion_t comp;
	uint64_t t_submit;	/* submit time; the latency once done */
	char *buf;
	unsigned idx;		/* which operation */
	struct nkv_tgt_cmd cmd;	/* --via backend: the operation, as the core holds it */
	struct iovec iov;
};

struct rl_state {
	struct rl_opts o;
	rados_ioctx_t io;
	struct nkv_be *be;	/* --via backend */
	struct rl_slot *slots;
	uint64_t *lat;		/* per operation, ns */
	pthread_mutex_t m;
	pthread_cond_t c;
	unsigned *doneq;	/* slots whose op completed, not yet reissued */
	unsigned ndone;
	unsigned errors;
	int first_err;
};

static uint64_t rl_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Object i's key, the bytes "rl%06u"; returns its length. */
static uint8_t rl_key(unsigned i, uint8_t key[NKV_KEY_INLINE_MAX])
{
	char buf[NKV_KEY_INLINE_MAX + 1];
	int n = snprintf(buf, sizeof(buf), "rl%06u", i);

	memcpy(key, buf, (size_t)n);
	return (uint8_t)n;
}

/* Its object name, as nkv-target names a key's object (33 bytes). */
static void rl_oid(unsigned i, char *out)
{
	uint8_t key[NKV_KEY_INLINE_MAX];

	nkv_rados_key_to_oid(key, rl_key(i, key), out);
}

/* Each slot's callback argument: the state and the slot's index. */
struct rl_cb {
	struct rl_state *st;
	unsigned slot;
};

static struct rl_cb *rl_cbs;

/* librados' callback thread: stamp the latency, queue the slot for the
 * main loop to reissue. */
static void rl_done(struct rl_cb *cb, int rv)
{
	struct rl_state *st = cb->st;

	st->slots[cb->slot].t_submit = rl_ns() - st->slots[cb->slot].t_submit;
	pthread_mutex_lock(&st->m);
	if (rv < 0 && !st->errors++)
		st->first_err = rv;
	st->doneq[st->ndone++] = cb->slot;
	pthread_cond_signal(&st->c);
	pthread_mutex_unlock(&st->m);
}

static void rl_cb_fn(rados_completion_t c, void *arg)
{
	rl_done(arg, rados_aio_get_return_value(c));
}

/* The backend's done(), on the same librados thread: an NVMe status is
 * a failed op (Key Not Exists reads as ENOENT, the rest as EIO). */
static void rl_be_done(struct nkv_be_op *op)
{
	int rv;

	nkv_tgt_data_end((struct nkv_tgt_cmd *)op);	/* as the core does */
	rv = op->status == NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS) ? -ENOENT :
		 op->status ? -EIO : 0;
	rl_done(op->ctx, rv);
}

/* Slot s's operation on object obj: rl_key() as its key, so the backend
 * names its object as rl_oid() does. */
static void rl_be_op(struct rl_state *st, struct rl_slot *s, unsigned slot, unsigned obj)
{
	struct nkv_be_op *op = &s->cmd.op;

	memset(&s->cmd, 0, sizeof(s->cmd));
	op->opc = strcmp(st->o.op, "write") ? NKV_KV_RETRIEVE : NKV_KV_STORE;
	op->klen = rl_key(obj, op->key);
	s->iov.iov_base = s->buf;
	s->iov.iov_len = st->o.size;
	s->cmd.iov = &s->iov;
	s->cmd.iovcnt = 1;
	s->cmd.stable = 1;	/* our own heap: librados may fill it directly */
	op->len = st->o.size;
	op->done = rl_be_done;
	op->ctx = &rl_cbs[slot];
	op->owner = st->o.owner;	/* 0: none; else the owner xattr rides along */
}

static int rl_issue(struct rl_state *st, unsigned slot, unsigned idx)
{
	struct rl_slot *s = &st->slots[slot];
	char oid[40];
	int rv;

	s->idx = idx;
	if (st->be) {
		rl_be_op(st, s, slot, idx % st->o.objects);
		s->t_submit = rl_ns();
		return st->be->ops->submit(st->be, &s->cmd.op);
	}
	rl_oid(idx % st->o.objects, oid);
	rv = rados_aio_create_completion2(&rl_cbs[slot], rl_cb_fn, &s->comp);
	if (rv < 0)
		return rv;
	s->t_submit = rl_ns();
	if (!strcmp(st->o.op, "write"))
		return rados_aio_write_full(st->io, oid, s->comp, s->buf, st->o.size);
	return rados_aio_read(st->io, oid, s->comp, s->buf, st->o.size, 0);
}

/* Wait for one completion; returns its slot. */
static unsigned rl_reap(struct rl_state *st)
{
	unsigned slot;

	pthread_mutex_lock(&st->m);
	while (!st->ndone)
		pthread_cond_wait(&st->c, &st->m);
	slot = st->doneq[--st->ndone];
	pthread_mutex_unlock(&st->m);
	st->lat[st->slots[slot].idx] = st->slots[slot].t_submit;
	if (!st->be)
		rados_aio_release(st->slots[slot].comp);
	return slot;
}

/* Keep inflight ops going until ops have completed. */
static int rl_run_stream(struct rl_state *st)
{
	unsigned issued = 0, completed = 0, i, slot;
	int rv;

	for (i = 0; i < st->o.inflight && issued < st->o.ops; i++) {
		rv = rl_issue(st, i, issued++);
		if (rv < 0)
			return rv;
	}
	while (completed < issued) {
		slot = rl_reap(st);
		completed++;
		if (issued < st->o.ops) {
			rv = rl_issue(st, slot, issued++);
			if (rv < 0)
				return rv;
		}
	}
	return 0;
}

/* Batches of inflight ops: all issued, all reaped, then the next. */
static int rl_run_batch(struct rl_state *st)
{
	unsigned base, n, i;
	uint64_t t0, dt;
	int rv;

	for (base = 0; base < st->o.ops; base += n) {
		n = st->o.ops - base < st->o.inflight ? st->o.ops - base : st->o.inflight;
		t0 = rl_ns();
		for (i = 0; i < n; i++) {
			rv = rl_issue(st, i, base + i);
			if (rv < 0)
				return rv;
		}
		for (i = 0; i < n; i++)
			rl_reap(st);
		dt = rl_ns() - t0;
		for (i = 0; i < n; i++)
			st->lat[base + i] = dt;
	}
	return 0;
}

static int rl_run(struct rl_state *st, uint64_t *wall)
{
	uint64_t t0 = rl_ns();
	int rv = st->o.batch ? rl_run_batch(st) : rl_run_stream(st);

	*wall = rl_ns() - t0;
	return rv;
}

static int rl_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void rl_report(const struct rl_state *st, uint64_t wall)
{
	unsigned n = st->o.ops;
	double iops = n / (wall / 1e9), avg = 0;
	unsigned i;

	qsort(st->lat, n, sizeof(*st->lat), rl_cmp);
	for (i = 0; i < n; i++)
		avg += (double)st->lat[i];
	avg /= n;
	if (st->o.json) {
		printf("{\"tool\":\"rados_loop\",\"via\":\"%s\",\"op\":\"%s\",\"batch\":%d,"
		       "\"size\":%zu,\"inflight\":%u,"
		       "\"ops\":%u,\"errors\":%u,\"wall_ns\":%llu,\"iops\":%.1f,"
		       "\"latency_ns\":{\"min\":%llu,\"avg\":%.0f,\"p50\":%llu,\"p99\":%llu,"
		       "\"max\":%llu}}\n", st->be ? "backend" : "librados", st->o.op, st->o.batch,
		       st->o.size, st->o.inflight, n, st->errors,
		       (unsigned long long)wall, iops, (unsigned long long)st->lat[0], avg,
		       (unsigned long long)st->lat[n / 2],
		       (unsigned long long)st->lat[(size_t)n * 99 / 100],
		       (unsigned long long)st->lat[n - 1]);
		return;
	}
	printf("rados_loop %s%s%s %zu B x %u in flight: %u ops, %u errors, %.0f IOPS, "
	       "latency us p50 %.1f p99 %.1f avg %.1f\n", st->o.op, st->o.batch ? " (batches)" : "",
	       st->be ? " via nkv-target's backend" : "", st->o.size,
	       st->o.inflight, n, st->errors, iops, st->lat[n / 2] / 1e3,
	       st->lat[(size_t)n * 99 / 100] / 1e3, avg / 1e3);
}

static void rl_usage(FILE *f)
{
	fputs("usage: rados_loop -c CONF -p POOL [-N NS] --op write|read --size BYTES\n"
	      "                  --inflight N --ops N [--objects N] [--batch]\n"
	      "                  [--via librados|backend] [--owner ID] [--prefill] [--json]\n"
	      "Keep N librados aio writes (write_full) or reads in flight; time each op.\n"
	      "--batch: issue N, wait for all N, then the next N (each op's latency = its batch's).\n"
	      "--via backend: through nkv-target's RADOS backend in this process (a Store\n"
	      "  as write_full, a Retrieve as a read op with a stat), no NVMe-KV hop.\n"
	      "--owner ID: with --via backend, Stores by tenant ID (value + owner xattr).\n"
	      "--prefill: write every object once first, not timed (nkv-bench --fill once).\n"
	      "Objects: hex of \"rl000000\".. (--objects of them, default --ops).\n", f);
}

static int rl_parse(int argc, char **argv, struct rl_opts *o)
{
	static const struct option lo[] = {
		{ "op", required_argument, NULL, 'o' }, { "size", required_argument, NULL, 's' },
		{ "inflight", required_argument, NULL, 'i' }, { "ops", required_argument, NULL, 'n' },
		{ "objects", required_argument, NULL, 'O' }, { "json", no_argument, NULL, 'j' },
		{ "batch", no_argument, NULL, 'b' }, { "via", required_argument, NULL, 'v' },
		{ "owner", required_argument, NULL, 'w' }, { "prefill", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "c:p:N:h", lo, NULL)) != -1) {
		switch (c) {
		case 'c': o->conf = optarg; break;
		case 'p': o->pool = optarg; break;
		case 'N': o->ns = optarg; break;
		case 'o': o->op = optarg; break;
		case 's': o->size = strtoul(optarg, NULL, 0); break;
		case 'i': o->inflight = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'n': o->ops = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'O': o->objects = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'j': o->json = 1; break;
		case 'b': o->batch = 1; break;
		case 'v':
			if (strcmp(optarg, "librados") && strcmp(optarg, "backend")) {
				fprintf(stderr, "rados_loop: --via librados|backend, not %s\n", optarg);
				return -1;
			}
			o->via_backend = !strcmp(optarg, "backend");
			break;
		case 'w': o->owner = strtoull(optarg, NULL, 0); break;
		case 'P': o->prefill = 1; break;
		case 'h': rl_usage(stdout); exit(0);
		default: return -1;
		}
	}
	if (!o->pool || !o->op || (strcmp(o->op, "write") && strcmp(o->op, "read")) ||
	    !o->size || o->size > (64u << 20) || !o->inflight || o->inflight > 4096 ||
	    !o->ops || optind != argc) {
		fprintf(stderr, "rados_loop: need -p, --op write|read, --size 1..64M, "
			"--inflight 1..4096, --ops > 0\n");
		return -1;
	}
	if (o->owner && !o->via_backend) {
		fprintf(stderr, "rados_loop: --owner goes with --via backend\n");
		return -1;
	}
	if (!o->objects || o->objects > o->ops)
		o->objects = o->ops;
	return 0;
}

/* --via backend: nkv-target's backend, with the timeouts set below. */
static int rl_connect_backend(struct rl_state *st)
{
	char inflight[16];
	struct nkv_be_param p[5] = {
		{ "pool", st->o.pool }, { "op-timeout", "30" }, { "mount-timeout", "10" },
		{ "max-inflight", inflight },
	};
	struct nkv_be_conf c = { .size = sizeof(c), .ns_name = st->o.ns, .params = p, .nparams = 4 };
	char err[256] = "";

	if (st->o.conf)
		p[c.nparams++] = (struct nkv_be_param){ "conf", st->o.conf };
	snprintf(inflight, sizeof(inflight), "%u", st->o.inflight > 128 ? st->o.inflight : 0);
	c.max_value = st->o.size > (1u << 20) ? (uint32_t)st->o.size : 0;
	st->be = nkv_be_create("rados", &c, err, sizeof(err));
	if (!st->be) {
		fprintf(stderr, "rados_loop: nkv-target's RADOS backend: %s\n", err);
		return -ENOTCONN;
	}
	return 0;
}

static int rl_connect(struct rl_state *st, rados_t *cl)
{
	int rv;

	if (st->o.via_backend)
		return rl_connect_backend(st);
	if ((rv = rados_create(cl, NULL)) < 0 || (rv = rados_conf_read_file(*cl, st->o.conf)) < 0 ||
	    (rv = rados_conf_set(*cl, "rados_osd_op_timeout", "30")) < 0 ||
	    (rv = rados_conf_set(*cl, "client_mount_timeout", "10")) < 0 ||
	    (rv = rados_connect(*cl)) < 0) {
		fprintf(stderr, "rados_loop: cannot connect (%s): %s\n",
			st->o.conf ? st->o.conf : "default conf", strerror(-rv));
		return rv;
	}
	if ((rv = rados_ioctx_create(*cl, st->o.pool, &st->io)) < 0) {
		fprintf(stderr, "rados_loop: pool %s: %s\n", st->o.pool, strerror(-rv));
		return rv;
	}
	rados_ioctx_set_namespace(st->io, st->o.ns);
	return 0;
}

static int rl_setup(struct rl_state *st, rados_t *cl)
{
	unsigned i;
	int rv = rl_connect(st, cl);

	if (rv < 0)
		return rv;
	st->slots = calloc(st->o.inflight, sizeof(*st->slots));
	rl_cbs = calloc(st->o.inflight, sizeof(*rl_cbs));
	st->doneq = calloc(st->o.inflight, sizeof(*st->doneq));
	st->lat = calloc(st->o.ops, sizeof(*st->lat));
	if (!st->slots || !rl_cbs || !st->doneq || !st->lat)
		return -ENOMEM;
	for (i = 0; i < st->o.inflight; i++) {
		st->slots[i].buf = malloc(st->o.size);
		if (!st->slots[i].buf)
			return -ENOMEM;
		memset(st->slots[i].buf, (int)(0x5a ^ i), st->o.size);
		rl_cbs[i].st = st;
		rl_cbs[i].slot = i;
	}
	pthread_mutex_init(&st->m, NULL);
	pthread_cond_init(&st->c, NULL);
	return 0;
}

/* --prefill: every object written once, not timed; its latencies are
 * overwritten by the timed run's. */
static int rl_prefill(struct rl_state *st)
{
	struct rl_opts o = st->o;
	uint64_t wall;
	int rv;

	st->o.op = "write";
	st->o.ops = st->o.objects;
	rv = rl_run(st, &wall);
	st->o = o;
	if (!rv && st->errors) {
		fprintf(stderr, "rados_loop: --prefill: %u writes failed (first: %s)\n", st->errors,
			strerror(-st->first_err));
		rv = -EIO;
	}
	return rv;
}

int main(int argc, char **argv)
{
	struct rl_state st = { 0 };
	rados_t cl = NULL;
	uint64_t wall = 0;
	int rv;

	if (rl_parse(argc, argv, &st.o)) {
		rl_usage(stderr);
		return 2;
	}
	rv = rl_setup(&st, &cl);
	if (!rv && st.o.prefill)
		rv = rl_prefill(&st);
	if (!rv)
		rv = rl_run(&st, &wall);
	if (rv < 0) {
		fprintf(stderr, "rados_loop: %s\n", strerror(-rv));
		return 1;
	}
	if (st.errors)
		fprintf(stderr, "rados_loop: %u ops failed (first: %s)\n", st.errors,
			strerror(-st.first_err));
	rl_report(&st, wall);
	if (st.be) {
		st.be->ops->destroy(st.be);
	} else {
		rados_ioctx_destroy(st.io);
		rados_shutdown(cl);
	}
	return st.errors ? 1 : 0;
}
