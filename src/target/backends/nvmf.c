/* SPDX-License-Identifier: MIT */
/*
 * nvmf.c - the forwarding backend: a namespace whose keys live on a
 * remote NVMe/TCP KV controller (another nkv-target, or any other),
 * reached through nkv's initiator (src/nvmf/tcp_host.h).
 *
 * Namespace N of the front forwards to namespace N of the remote (the
 * same NSID). Every op is sent as the remote's command of the same
 * opcode, store options and TTL as given, the key inline or in head
 * form as its length asks (docs/wire.md's NVMe/TCP rule); the remote's
 * status comes back unchanged. Exec too, where the remote offers it
 * (exec_fwd): head and input in the capsule, the output by C2HData, the
 * remote's allowlist deciding. The front advertises the remote's limits
 * (capacity, largest value, most keys, vendor store options, Exec), read
 * by Identify at start.
 *
 * Threads: submit() (the core's poll thread) only queues; one worker
 * per namespace owns the association (admin queue and I/O queue 1),
 * sends up to the queue's depth of queued ops at once, reaps them, and
 * sends Keep Alive every KATO/2 while idle or busy.
 *
 * A remote that stops answering (connection closed, a command past
 * --remote-timeout-ms, a protocol error) is lost: the ops in flight and
 * every op until it answers again complete with 88h (Unrecovered Error,
 * as the RADOS backend's lost cluster), one line event=remote_lost;
 * reconnection is tried with a backoff of 250 ms doubling to 5 s, and
 * the first association that works says event=remote_back once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nvmf/tcp_host.h"
#include "target/backends/registry.h"

#define NKV_NVMF_BE_DEPTH 32u
#define NKV_NVMF_BACKOFF_MIN_MS 250u
#define NKV_NVMF_BACKOFF_MAX_MS 5000u

struct nkv_nvmf_node {
	struct nkv_be_op *op;
	struct nkv_nvmf_node *next;
};

/* One op on the wire: its command, its key head, its bounce buffer. */
struct nkv_nvmf_slot {
	struct nkv_nvmf_cmd c;
	struct nkv_be_op *op;
	uint8_t head[NKV_KEY_HEAD_MAX];
	uint8_t *buf;		/* a bounce buffer of ours, or NULL */
	uint8_t *exec_out;	/* Exec: where the output lands */
	int direct;		/* the data moves in the client's memory itself */
};

struct nkv_nvmf_be {
	struct nkv_be be;		/* first: the core reads it */
	struct nkv_nvmf_addr addr;
	struct nkv_nvmf_opts o;
	char uri[320];
	char hostnqn[NKV_NVMF_NQN_MAX + 1];
	char subnqn[NKV_NVMF_NQN_MAX + 1];	/* found at create; as.subnqn is
						 * the worker's (reconnections) */
	uint32_t nsid;
	struct nkv_nvmf_assoc as;	/* as.io NULL: not connected */
	/* Loss and reconnection (the worker's). */
	int lost;
	uint64_t lost_ms, next_try_ms, ops_failed;
	uint32_t backoff_ms, tries;
	uint64_t nuse;			/* the remote's bytes in use (atomic) */
	/* The queue: submit() adds, the worker takes. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct nkv_nvmf_node *head, *tail;
	int stop;
	pthread_t worker;
	struct nkv_nvmf_slot slot[NKV_NVMF_BE_DEPTH];
};

static const struct nkv_be_optdesc nkv_nvmf_opts_desc[] = {
	{ "remote", "URI", "nvmf: the remote NVMe/TCP controller, tcp:HOST:PORT[/NQN]\n"
	  "(without NQN: the first NVM subsystem its discovery log lists);\n"
	  "namespace N forwards to the remote's namespace N" },
	{ "remote-timeout-ms", "MS", "nvmf: how long one command or connection attempt may\n"
	  "take before the remote counts as lost (default 5000)" },
	{ "remote-digests", "none|header|data|both", "nvmf: NVMe/TCP digests (CRC32C) the front\n"
	  "asks of the remote (default none); the remote may grant fewer" },
	{ "remote-hostnqn", "NQN", "nvmf: the host NQN the front connects with (default\n"
	  "nqn.2014-08.org.nvmexpress:uuid: and a UUID from /etc/machine-id)" },
	{ NULL, NULL, NULL },
};

static void nkv_nvmf_be_line(void *ctx, const char *line)
{
	(void)ctx;
	nkv_be_log(NKV_BE_LOG_INFO, "%s backend=nvmf", line);
}

/* The remote's limits, from its KV Identify Namespace. */
static int nkv_nvmf_be_limits(struct nkv_nvmf_be *b, char *err, size_t errlen)
{
	struct nkv_id_ns_kv *id = malloc(sizeof(*id));
	const struct nkv_kv_vs *vs;
	uint16_t st = 0;
	int rc = id ? nkv_nvmf_identify(b->as.admin, NKV_CNS_IOCS_NS, b->nsid, NKV_CSI_KV, id, &st)
		    : -ENOMEM;

	if (rc) {
		snprintf(err, errlen, "nvmf backend: %s namespace %u: Identify failed (%s, status %#x)",
			 b->uri, b->nsid, strerror(-rc), st);
		free(id);
		return rc;
	}
	vs = (const void *)id->vs;
	b->be.capacity = id->nsze;
	b->be.max_value = id->kvf[0].mvl;
	b->be.max_keys = id->kvf[0].mnk;
	if (!memcmp(vs->sig, NKV_KV_VS_SIG, 4)) {
		b->be.store_opts = vs->store_opts & NKV_STORE_VENDOR_MASK;
		/* Exec where the values are: the remote's, by its allowlist. */
		b->be.exec_fwd = (vs->flags & NKV_KV_VS_EXEC) ? 1 : 0;
	}
	__atomic_store_n(&b->nuse, id->nuse, __ATOMIC_RELAXED);
	free(id);
	return 0;
}

/* Fail op with 88h: the remote is not there to answer it. */
static void nkv_nvmf_be_fail(struct nkv_nvmf_be *b, struct nkv_be_op *op)
{
	b->ops_failed++;
	op->status = NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_UNRECOVERED_ERROR);
	op->done(op);
}

static void nkv_nvmf_be_lose(struct nkv_nvmf_be *b, int err)
{
	nkv_nvmf_assoc_close(&b->as);
	if (b->lost)
		return;
	b->lost = 1;
	b->lost_ms = nkv_nvmf_now_ms();
	b->ops_failed = 0;
	b->tries = 0;
	b->backoff_ms = NKV_NVMF_BACKOFF_MIN_MS;
	b->next_try_ms = b->lost_ms + b->backoff_ms;
	nkv_be_log(NKV_BE_LOG_WARN, "event=remote_lost backend=nvmf remote=%s nsid=%u error=\"%s\"",
		   b->uri, b->nsid, strerror(-err));
}

/* One reconnection attempt when due: 1 when connected again. */
static int nkv_nvmf_be_retry(struct nkv_nvmf_be *b)
{
	uint64_t now = nkv_nvmf_now_ms();
	int rc;

	if (now < b->next_try_ms)
		return 0;
	b->tries++;
	rc = nkv_nvmf_assoc_open(&b->as, &b->addr, &b->o);
	if (rc) {
		b->backoff_ms = b->backoff_ms * 2 > NKV_NVMF_BACKOFF_MAX_MS ? NKV_NVMF_BACKOFF_MAX_MS
									   : b->backoff_ms * 2;
		b->next_try_ms = nkv_nvmf_now_ms() + b->backoff_ms;
		if (!(b->tries & (b->tries - 1)))	/* 1, 2, 4, 8, ...: bounded lines */
			nkv_be_log(NKV_BE_LOG_WARN, "event=remote_retry backend=nvmf remote=%s "
				   "nsid=%u tries=%u error=\"%s\" next_ms=%u", b->uri, b->nsid,
				   b->tries, strerror(-rc), b->backoff_ms);
		return 0;
	}
	b->lost = 0;
	nkv_be_log(NKV_BE_LOG_WARN, "event=remote_back backend=nvmf remote=%s nsid=%u after_s=%.1f "
		   "tries=%u ops_failed=%llu", b->uri, b->nsid,
		   (double)(nkv_nvmf_now_ms() - b->lost_ms) / 1000.0, b->tries,
		   (unsigned long long)b->ops_failed);
	return 1;
}

/* The op as a command in s: 0, or an NVMe status to answer it with. */
/* Where the op's data moves: the client's buffer itself when the core
 * offers it whole (nkv_be_direct: a Retrieve, or a Store whose key goes
 * inline), so a 32 MiB value is neither allocated nor copied here; else
 * a bounce buffer with room for a key head in front. NULL: no memory. */
static uint8_t *nkv_nvmf_be_data(struct nkv_nvmf_slot *s)
{
	struct nkv_be_op *op = s->op;
	int can = op->len && (op->opc == NKV_KV_RETRIEVE ||
			      (op->opc == NKV_KV_STORE && op->klen <= NKV_KEY_INLINE_MAX));
	uint8_t *d = can ? nkv_be_direct(op) : NULL;

	s->buf = NULL;
	s->direct = d != NULL;
	if (d)
		return d;
	s->buf = malloc((size_t)op->len + NKV_KEY_HEAD_MAX);
	return s->buf ? s->buf + NKV_KEY_HEAD_MAX : NULL;
}

/*
 * A forwarded Exec (backend.h exec_fwd): [head][input] in a buffer of
 * ours for the capsule, the output by C2HData into the client's buffer
 * where it is one stable segment, else after the input in ours.
 */
static uint16_t nkv_nvmf_be_exec_prep(struct nkv_nvmf_be *b, struct nkv_nvmf_slot *s)
{
	struct nkv_be_op *op = s->op;
	uint32_t hin = nkv_key_head_size(op->klen) + op->exec_ilen, ocap = (uint32_t)op->len;
	uint8_t *out = ocap ? nkv_be_direct(op) : NULL;

	s->direct = out != NULL;
	s->buf = malloc((size_t)hin + (out ? 0 : ocap) + 1);
	if (!s->buf)
		return NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_INTERNAL);
	memcpy(s->buf + nkv_key_head_size(op->klen), op->exec_in, op->exec_ilen);
	if (!out)
		out = s->buf + hin;
	s->exec_out = out;
	if (nkv_nvmf_exec_prep(&s->c, nkv_nvmf_q_icd_max(b->as.io), b->nsid, op->key, op->klen,
			       op->exec_op_id, s->buf, op->exec_ilen, ocap ? out : NULL, ocap))
		return NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_INVALID_FIELD);	/* past the capsule */
	return 0;
}

/* The op as a command in s: 0, or an NVMe status to answer it with. */
static uint16_t nkv_nvmf_be_prep(struct nkv_nvmf_be *b, struct nkv_nvmf_slot *s)
{
	struct nkv_be_op *op = s->op;
	uint32_t len = (uint32_t)op->len;
	uint32_t opts = op->opc == NKV_KV_STORE ? op->options : 0;
	uint8_t *data = NULL;
	uint16_t st;

	s->buf = NULL;
	s->direct = 0;
	if (op->opc == NKV_KV_EXEC)
		return nkv_nvmf_be_exec_prep(b, s);
	if (op->opc == NKV_KV_STORE || op->opc == NKV_KV_RETRIEVE || op->opc == NKV_KV_LIST) {
		data = nkv_nvmf_be_data(s);
		if (!data)
			return NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_INTERNAL);
	}
	if (op->opc == NKV_KV_STORE && len && !s->direct &&
	    (st = nkv_be_copy_in(op, data, len)) != 0)
		return st;
	if (nkv_nvmf_kv_prep(&s->c, nkv_nvmf_q_icd_max(b->as.io), op->opc, b->nsid, op->key,
			     op->klen, s->head, data, len, opts,
			     opts & NKV_STORE_TTL ? op->ttl_s : 0))
		return NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_INVALID_OPCODE);
	return 0;
}

/* A List payload of the remote's ([u32 count][entries]) into the op. */
static uint16_t nkv_nvmf_be_list(struct nkv_be_op *op, const uint8_t *p, uint32_t got)
{
	uint32_t count, off = NKV_LIST_HDR_SIZE, i;

	if (got < NKV_LIST_HDR_SIZE)
		return 0;
	memcpy(&count, p, 4);
	for (i = 0; i < count && off + 2 <= got; i++) {
		uint32_t kl = nkv_key_head_len(p + off);
		int rc;

		if (!kl || kl > NKV_KEY_MAX || off + 2 + kl > got)
			return NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_UNRECOVERED_ERROR);
		rc = nkv_be_list_add(op, p + off + 2, kl);
		if (rc < 0)
			return NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_DATA_XFER_ERROR);
		if (rc)
			break;
		off += nkv_list_entry_size(kl);
	}
	return 0;
}

/* The remote answered s: its status and data into the op. */
static void nkv_nvmf_be_finish(struct nkv_nvmf_slot *s)
{
	struct nkv_be_op *op = s->op;
	uint8_t *data = s->buf ? s->buf + NKV_KEY_HEAD_MAX : NULL;
	uint16_t st = nkv_nvmf_status(&s->c) & 0x7ffu;
	int out = op->opc == NKV_KV_RETRIEVE || op->opc == NKV_KV_EXEC;

	op->dw0 = s->c.cqe.dw0;
	if (op->opc == NKV_KV_EXEC)
		data = s->exec_out;
	if (!st && out && s->c.got && s->direct)
		nkv_be_produced(op, s->c.got);
	else if (!st && out && s->c.got)
		st = nkv_be_copy_out(op, data, s->c.got);
	if (!st && op->opc == NKV_KV_LIST)
		st = nkv_nvmf_be_list(op, data, s->c.got);
	op->status = st;
	op->done(op);
}

/* Send every op of batch (n of them), reap them all, answer each. */
static void nkv_nvmf_be_run(struct nkv_nvmf_be *b, struct nkv_be_op **batch, uint32_t n)
{
	uint32_t i, sent = 0;
	int rc = 0;

	if (n > 1)
		nkv_nvmf_q_cork(b->as.io, 1);
	for (i = 0; i < n; i++) {
		struct nkv_nvmf_slot *s = &b->slot[i];
		uint16_t st;

		s->op = batch[i];
		st = nkv_nvmf_be_prep(b, s);
		s->c.done = st ? 2 : 0;	/* 2: answered here, never sent */
		if (st) {
			s->op->status = st;
			s->op->done(s->op);
		} else if (!rc) {
			rc = nkv_nvmf_q_submit(b->as.io, &s->c);
			sent += !rc;
		}
	}
	if (n > 1)
		nkv_nvmf_q_cork(b->as.io, 0);
	while (!rc && sent) {
		rc = nkv_nvmf_q_reap(b->as.io);
		sent -= rc > 0 ? (uint32_t)rc : 0;
		rc = rc < 0 ? rc : 0;
	}
	/* Said before the 88h answers go out: a client that sees one finds
	 * the line already there. */
	if (rc || nkv_nvmf_q_error(b->as.io))
		nkv_nvmf_be_lose(b, rc ? rc : nkv_nvmf_q_error(b->as.io));
	for (i = 0; i < n; i++) {
		struct nkv_nvmf_slot *s = &b->slot[i];

		if (s->c.done == 1 && !s->c.err)
			nkv_nvmf_be_finish(s);
		else if (s->c.done != 2)
			nkv_nvmf_be_fail(b, s->op);
		free(s->buf);
	}
}

/* Keep Alive when due, and the remote's NUSE with it. */
static void nkv_nvmf_be_tick(struct nkv_nvmf_be *b)
{
	char err[160];
	int rc;

	if (!b->as.io || !nkv_nvmf_assoc_ka_due(&b->as))
		return;
	rc = nkv_nvmf_assoc_keep_alive(&b->as);
	if (!rc)
		rc = nkv_nvmf_be_limits(b, err, sizeof(err));
	if (rc && nkv_nvmf_q_error(b->as.admin))
		nkv_nvmf_be_lose(b, rc);
}

/* Up to the depth of queued ops (mu held); how many. */
static uint32_t nkv_nvmf_be_take(struct nkv_nvmf_be *b, struct nkv_be_op **batch)
{
	uint32_t n = 0;

	while (b->head && n < NKV_NVMF_BE_DEPTH) {
		struct nkv_nvmf_node *x = b->head;

		b->head = x->next;
		if (!b->head)
			b->tail = NULL;
		batch[n++] = x->op;
		free(x);
	}
	return n;
}

static void nkv_nvmf_be_wait(struct nkv_nvmf_be *b)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 100 * 1000000L;	/* a tick: Keep Alive, reconnection */
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&b->cv, &b->mu, &ts);
}

static void *nkv_nvmf_be_worker(void *arg)
{
	struct nkv_nvmf_be *b = arg;
	struct nkv_be_op *batch[NKV_NVMF_BE_DEPTH];
	uint32_t n, i;

	pthread_mutex_lock(&b->mu);
	for (;;) {
		if (!b->head && b->stop)
			break;
		if (!b->head)
			nkv_nvmf_be_wait(b);
		n = nkv_nvmf_be_take(b, batch);
		pthread_mutex_unlock(&b->mu);
		if (b->lost && !b->stop)
			nkv_nvmf_be_retry(b);
		if (b->lost || b->stop) {
			for (i = 0; i < n; i++)
				nkv_nvmf_be_fail(b, batch[i]);
		} else if (n) {
			nkv_nvmf_be_run(b, batch, n);
		}
		nkv_nvmf_be_tick(b);
		pthread_mutex_lock(&b->mu);
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

static int nkv_nvmf_be_submit(struct nkv_be *be, struct nkv_be_op *op)
{
	struct nkv_nvmf_be *b = (struct nkv_nvmf_be *)be;
	struct nkv_nvmf_node *x = malloc(sizeof(*x));

	if (!x)
		return -ENOMEM;
	x->op = op;
	x->next = NULL;
	pthread_mutex_lock(&b->mu);
	if (b->tail)
		b->tail->next = x;
	else
		b->head = x;
	b->tail = x;
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mu);
	return 0;
}

static uint64_t nkv_nvmf_be_bytes(struct nkv_be *be)
{
	return __atomic_load_n(&((struct nkv_nvmf_be *)be)->nuse, __ATOMIC_RELAXED);
}

/* The remote does not say how many keys it holds. */
static uint64_t nkv_nvmf_be_keys(struct nkv_be *be)
{
	(void)be;
	return 0;
}

static void nkv_nvmf_be_describe(struct nkv_be *be, char *buf, size_t len)
{
	struct nkv_nvmf_be *b = (struct nkv_nvmf_be *)be;

	snprintf(buf, len, "remote=tcp:%s:%u/%s remote_nsid=%u remote_timeout_ms=%u "
		 "remote_digests=%s", b->addr.host, b->addr.port, b->subnqn, b->nsid,
		 b->o.timeout_ms, b->o.hdgst ? (b->o.ddgst ? "both" : "header")
					     : (b->o.ddgst ? "data" : "none"));
}

static void nkv_nvmf_be_destroy(struct nkv_be *be)
{
	struct nkv_nvmf_be *b = (struct nkv_nvmf_be *)be;

	pthread_mutex_lock(&b->mu);
	b->stop = 1;
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mu);
	pthread_join(b->worker, NULL);
	nkv_nvmf_assoc_close(&b->as);
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	free(b);
}

static const struct nkv_be_ops nkv_nvmf_be_ops = {
	.name = "nvmf",
	.submit = nkv_nvmf_be_submit,
	.bytes_used = nkv_nvmf_be_bytes,
	.keys_used = nkv_nvmf_be_keys,
	.describe = nkv_nvmf_be_describe,
	.destroy = nkv_nvmf_be_destroy,
};

/* --remote-digests: bit 0 header, bit 1 data; -1 when malformed. */
static int nkv_nvmf_be_digests(const char *v)
{
	static const char *const names[] = { "none", "header", "data", "both" };
	int i;

	for (i = 0; v && i < 4; i++)
		if (!strcmp(v, names[i]))
			return i;
	return v ? -1 : 0;
}

/* --remote, --remote-timeout-ms and --remote-digests into o and a. */
static int nkv_nvmf_be_parse(const struct nkv_be_conf *conf, struct nkv_nvmf_addr *a,
			     struct nkv_nvmf_opts *o, char *err, size_t errlen)
{
	int dg = nkv_nvmf_be_digests(nkv_be_conf_get(conf, "remote-digests"));

	const char *uri = nkv_be_conf_get(conf, "remote");
	const char *t = nkv_be_conf_get(conf, "remote-timeout-ms");
	char *end = NULL;
	unsigned long ms = 5000;

	if (conf->nvm) {
		snprintf(err, errlen, "nvmf backend: KV namespaces only");
		return -EINVAL;
	}
	if (!uri) {
		snprintf(err, errlen, "nvmf backend: --remote tcp:HOST:PORT[/NQN] is needed");
		return -EINVAL;
	}
	if (nkv_nvmf_uri_parse(uri, a, err, errlen))
		return -EINVAL;
	if (t) {
		ms = strtoul(t, &end, 10);
		if (!*t || *end || ms < 100 || ms > 600000) {
			snprintf(err, errlen, "nvmf backend: --remote-timeout-ms %s: want 100..600000",
				 t);
			return -EINVAL;
		}
	}
	if (dg < 0) {
		snprintf(err, errlen, "nvmf backend: --remote-digests %s: want none, header, data or "
			 "both", nkv_be_conf_get(conf, "remote-digests"));
		return -EINVAL;
	}
	o->timeout_ms = (uint32_t)ms;
	o->hdgst = dg & 1;
	o->ddgst = !!(dg & 2);
	return 0;
}

static int nkv_nvmf_be_check(const struct nkv_be_conf *conf, char *err, size_t errlen)
{
	struct nkv_nvmf_addr a;
	struct nkv_nvmf_opts o;

	return nkv_nvmf_be_parse(conf, &a, &o, err, errlen);
}

static struct nkv_be *nkv_nvmf_be_new(const struct nkv_be_conf *conf, char *err, size_t errlen)
{
	struct nkv_nvmf_be *b = calloc(1, sizeof(*b));
	const char *hn = nkv_be_conf_get(conf, "remote-hostnqn");
	int rc;

	if (!b) {
		snprintf(err, errlen, "nvmf backend: no memory");
		return NULL;
	}
	rc = nkv_nvmf_be_parse(conf, &b->addr, &b->o, err, errlen);
	if (rc) {
		free(b);
		return NULL;
	}
	snprintf(b->uri, sizeof(b->uri), "%s", nkv_be_conf_get(conf, "remote"));
	if (hn)
		snprintf(b->hostnqn, sizeof(b->hostnqn), "%s", hn);
	else
		nkv_nvmf_default_hostnqn(b->hostnqn, sizeof(b->hostnqn));
	b->nsid = conf->nsid ? conf->nsid : 1;
	b->o.size = sizeof(b->o);
	b->o.hostnqn = b->hostnqn;
	b->o.depth = NKV_NVMF_BE_DEPTH;
	b->o.log = nkv_nvmf_be_line;
	b->be.ops = &nkv_nvmf_be_ops;
	b->be.csi = NKV_CSI_KV;
	/* A client waits longer than one command's timeout, a reconnection
	 * attempt and a second command's: then 88h, not its own timeout. */
	b->be.cmd_timeout_ms = 3 * b->o.timeout_ms;
	rc = nkv_nvmf_assoc_open(&b->as, &b->addr, &b->o);
	if (rc) {
		snprintf(err, errlen, "nvmf backend: cannot reach %s: %s", b->uri, strerror(-rc));
		free(b);
		errno = -rc;	/* the embedded target returns it (tcp: URIs) */
		return NULL;
	}
	snprintf(b->subnqn, sizeof(b->subnqn), "%s", b->as.subnqn);
	rc = nkv_nvmf_be_limits(b, err, errlen);
	if (rc) {
		nkv_nvmf_assoc_close(&b->as);
		free(b);
		errno = rc == -EREMOTEIO ? ENODEV : -rc;	/* no such namespace there */
		return NULL;
	}
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	if (pthread_create(&b->worker, NULL, nkv_nvmf_be_worker, b)) {
		snprintf(err, errlen, "nvmf backend: cannot start its thread");
		nkv_nvmf_assoc_close(&b->as);
		free(b);
		return NULL;
	}
	return &b->be;
}

const struct nkv_be_type nkv_be_type_nvmf = {
	.name = "nvmf",
	.summary = "forwards every KV namespace to the same NSID of a remote NVMe/TCP\n"
		   "controller (docs/tcp.md, \"nkv as an NVMe/TCP host\")",
	.opts = nkv_nvmf_opts_desc,
	.create = nkv_nvmf_be_new,
	.check = nkv_nvmf_be_check,
};
