/* SPDX-License-Identifier: MIT */
/*
 * main.c - the nkv-target program: parse options, build the subsystem
 * (namespaces and their backends), serve it over vfio-user until SIGINT
 * or SIGTERM, then shut down cleanly (controllers finish or fail their
 * in-flight commands, the socket file is removed).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "target/backends/mem.h"
#include "target/backends/rados.h"
#include "target/vfio-user/server.h"

struct nkv_target_args {
	const char *socket;
	const char *backend;
	uint64_t capacity;
	uint64_t max_value;
	uint64_t max_keys;
	uint64_t nvm_ns;	/* bytes of an extra NVM namespace (nsid 2); 0: none */
	uint64_t queue_depth;
	uint64_t poll_ns;
	uint64_t max_conns;
	int no_sparse;
	int trace;
	int log_level;
	/* --backend rados */
	const char *pool;
	const char *conf;
	const char *id;
	const char *keyring;
	const char *ns_map;	/* "1=gpukv,3=other" */
	uint64_t op_timeout;
	uint64_t mount_timeout;
	/* time limits on a client, ms; 0: the server's defaults */
	uint64_t handshake_ms;
	uint64_t idle_ms;
	uint64_t msg_ms;
	/* budgets per connection; 0: the server's defaults */
	uint64_t max_dma_maps;
	uint64_t max_dma_bytes;
	uint64_t max_qpairs;
	uint32_t dstrd;		/* CAP.DSTRD (--doorbell-stride) */
	int poll_sched;		/* enum nkv_vfu_sched (--poll-sched) */
};

static void nkv_target_usage(FILE *f)
{
	fputs("usage: nkv-target [options]\n"
	      "Serve an NVMe Key-Value controller over vfio-user on a Unix socket.\n"
	      "Every client connection gets its own controller; namespaces are shared.\n\n"
	      "  --socket PATH          socket to listen on (default ./nkv-target.sock)\n"
	      "  --backend mem|rados    KV namespace backend (mem: in memory, lost at exit;\n"
	      "                         rados: one RADOS object per key, see below)\n"
	      "  --capacity SIZE        KV namespace capacity in bytes, each key's real cost\n"
	      "                         counted (value, allocation, index); shared by all\n"
	      "                         clients (default 1G)\n"
	      "  --max-value SIZE       largest value accepted (default 1M)\n"
	      "  --max-keys N           most keys stored (default 0 = capacity only)\n"
	      "  --nvm-ns SIZE          add an NVM block namespace (nsid 2) of SIZE bytes\n"
	      "  --queue-depth N        max queue entries, CAP.MQES+1 (default 1024)\n"
	      "  --poll-interval-ns N   idle sleep between controller polls (default 100000)\n"
	      "  --max-conns N          concurrent clients (default 16)\n"
	      "  --no-sparse-mmap       doorbells only by REGION_WRITE messages\n"
	      "  --allow-unsealed-dma   no effect, kept for old command lines: unsealed\n"
	      "                         memfds and files are accepted (docs/target.md)\n"
	      "  --trace                log SQEs, doorbells and CQEs (also NKV_TRACE=1)\n"
	      "  --log-level LEVEL      error|warn|info|debug (default info)\n"
	      "  --handshake-timeout-ms N  a client must send VERSION within N ms of\n"
	      "                         connecting (default 10000)\n"
	      "  --idle-timeout-ms N    close a connection whose controller is not enabled\n"
	      "                         after N ms without a message (default 60000)\n"
	      "  --msg-timeout-ms N     one whole message in and its reply out within N ms\n"
	      "                         of its first byte, however slow (default 5000)\n"
	      "  --max-dma-maps N       DMA regions per client (default 256, at most 1024)\n"
	      "  --max-dma-bytes SIZE   bytes of DMA memory mapped per client (default 64G)\n"
	      "  --max-queue-pairs N    I/O queue pairs per client (default 64)\n"
	      "  --doorbell-stride B    bytes between doorbells, CAP.DSTRD: 4, 8, 16, 32 or\n"
	      "                         64 (default 64: each doorbell in a cache line of\n"
	      "                         its own, so CQ head writes never take the line the\n"
	      "                         controller polls for SQ tails)\n"
	      "  --poll-sched CLASS     normal|idle: the connection threads' scheduling\n"
	      "                         class (default normal). idle (SCHED_IDLE) gives\n"
	      "                         the CPU at once to any other thread that wakes:\n"
	      "                         for a target sharing its cores with the OSDs it\n"
	      "                         serves; other busy work starves it\n"
	      "  -h, --help             this text\n\n"
	      "rados backend (pool = subsystem, NVMe namespace = RADOS namespace,\n"
	      "object name = lowercase hex of the key):\n"
	      "  --pool NAME            pool (default kvpool)\n"
	      "  --conf PATH            ceph.conf (default: librados' search path)\n"
	      "  --id NAME              client name, e.g. nkv for client.nkv (default admin)\n"
	      "  --keyring PATH         keyring (default: from the conf)\n"
	      "  --ns-map MAP           NSID=RADOS_NS[,NSID=RADOS_NS...] (default 1=gpukv)\n"
	      "  --op-timeout SEC       rados_osd_op_timeout: a command fails (88h) after it,\n"
	      "                         though a Store may still be applied later (retry\n"
	      "                         with the same value, or check with Exist)\n"
	      "                         (default 10); SIGTERM waits at most this for\n"
	      "                         operations in flight (mem backend: 2 s at most)\n"
	      "  --mount-timeout SEC    give up connecting after it (default 10)\n\n"
	      "SIZE takes K, M, G suffixes (powers of 1024).\n\n"
	      "examples:\n"
	      "  nkv-target --socket /tmp/nkv.sock\n"
	      "  nkv-target --socket /tmp/nkv.sock --capacity 4G --max-value 2M --queue-depth 256\n"
	      "  nkv-target --socket /tmp/nkv.sock --no-sparse-mmap --log-level debug\n"
	      "  nkv-target --socket /tmp/nkv.sock --backend rados --conf /etc/ceph/ceph.conf \\\n"
	      "             --id nkv --pool kvpool --ns-map 1=gpukv,2=tenant2\n"
	      "  nkv-probe vfio-user:/tmp/nkv.sock      # check it from another shell\n", f);
}

static int nkv_target_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

/* --doorbell-stride BYTES: 4, 8, 16, 32 or 64, as CAP.DSTRD 0..4. */
static int nkv_target_stride(const char *s, uint32_t *dstrd)
{
	uint64_t v;
	uint32_t d;

	if (nkv_target_size(s, &v))
		return -EINVAL;
	for (d = 0; d <= 4; d++)
		if (v == 4ull << d) {
			*dstrd = d;
			return 0;
		}
	return -EINVAL;
}

static int nkv_target_level(const char *s)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	int i;

	for (i = 0; i < 4; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

enum {
	OPT_SOCKET = 256, OPT_BACKEND, OPT_CAPACITY, OPT_MAX_VALUE, OPT_MAX_KEYS,
	OPT_NVM_NS, OPT_QD, OPT_POLL, OPT_MAX_CONNS, OPT_NO_SPARSE, OPT_TRACE, OPT_LOG,
	OPT_ALLOW_UNSEALED, OPT_POOL, OPT_CONF, OPT_ID, OPT_KEYRING, OPT_NS_MAP, OPT_OP_TIMEOUT, OPT_MOUNT_TIMEOUT,
	OPT_HANDSHAKE_MS, OPT_IDLE_MS, OPT_MSG_MS, OPT_MAX_DMA_MAPS, OPT_MAX_DMA_BYTES, OPT_MAX_QPAIRS,
	OPT_DB_STRIDE, OPT_POLL_SCHED,
};

static int nkv_target_sched(const char *s, int *out)
{
	if (!strcmp(s, "normal"))
		*out = NKV_VFU_SCHED_NORMAL;
	else if (!strcmp(s, "idle"))
		*out = NKV_VFU_SCHED_IDLE;
	else
		return -EINVAL;
	return 0;
}

/* The long name of option @val, for messages. */
static const char *nkv_target_optname(const struct option *lo, int val)
{
	for (; lo->name; lo++)
		if (lo->val == val)
			return lo->name;
	return "?";
}

static int nkv_target_parse(int argc, char **argv, struct nkv_target_args *a)
{
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "capacity", required_argument, NULL, OPT_CAPACITY },
		{ "max-value", required_argument, NULL, OPT_MAX_VALUE },
		{ "max-keys", required_argument, NULL, OPT_MAX_KEYS },
		{ "nvm-ns", required_argument, NULL, OPT_NVM_NS },
		{ "queue-depth", required_argument, NULL, OPT_QD },
		{ "poll-interval-ns", required_argument, NULL, OPT_POLL },
		{ "max-conns", required_argument, NULL, OPT_MAX_CONNS },
		{ "no-sparse-mmap", no_argument, NULL, OPT_NO_SPARSE },
		{ "allow-unsealed-dma", no_argument, NULL, OPT_ALLOW_UNSEALED },
		{ "trace", no_argument, NULL, OPT_TRACE },
		{ "log-level", required_argument, NULL, OPT_LOG },
		{ "pool", required_argument, NULL, OPT_POOL },
		{ "conf", required_argument, NULL, OPT_CONF },
		{ "id", required_argument, NULL, OPT_ID },
		{ "keyring", required_argument, NULL, OPT_KEYRING },
		{ "ns-map", required_argument, NULL, OPT_NS_MAP },
		{ "op-timeout", required_argument, NULL, OPT_OP_TIMEOUT },
		{ "mount-timeout", required_argument, NULL, OPT_MOUNT_TIMEOUT },
		{ "handshake-timeout-ms", required_argument, NULL, OPT_HANDSHAKE_MS },
		{ "idle-timeout-ms", required_argument, NULL, OPT_IDLE_MS },
		{ "msg-timeout-ms", required_argument, NULL, OPT_MSG_MS },
		{ "max-dma-maps", required_argument, NULL, OPT_MAX_DMA_MAPS },
		{ "max-dma-bytes", required_argument, NULL, OPT_MAX_DMA_BYTES },
		{ "max-queue-pairs", required_argument, NULL, OPT_MAX_QPAIRS },
		{ "doorbell-stride", required_argument, NULL, OPT_DB_STRIDE },
		{ "poll-sched", required_argument, NULL, OPT_POLL_SCHED },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int o, rc = 0;

	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (o) {
		case OPT_SOCKET: a->socket = optarg; break;
		case OPT_BACKEND: a->backend = optarg; break;
		case OPT_CAPACITY: rc = nkv_target_size(optarg, &a->capacity); break;
		case OPT_MAX_VALUE: rc = nkv_target_size(optarg, &a->max_value); break;
		case OPT_MAX_KEYS: rc = nkv_target_size(optarg, &a->max_keys); break;
		case OPT_NVM_NS: rc = nkv_target_size(optarg, &a->nvm_ns); break;
		case OPT_QD: rc = nkv_target_size(optarg, &a->queue_depth); break;
		case OPT_POLL: rc = nkv_target_size(optarg, &a->poll_ns); break;
		case OPT_MAX_CONNS: rc = nkv_target_size(optarg, &a->max_conns); break;
		case OPT_NO_SPARSE: a->no_sparse = 1; break;
		case OPT_ALLOW_UNSEALED: break;	/* the default now */
		case OPT_TRACE: a->trace = 1; break;
		case OPT_LOG:
			a->log_level = nkv_target_level(optarg);
			rc = a->log_level < 0 ? -EINVAL : 0;
			break;
		case OPT_POOL: a->pool = optarg; break;
		case OPT_CONF: a->conf = optarg; break;
		case OPT_ID: a->id = optarg; break;
		case OPT_KEYRING: a->keyring = optarg; break;
		case OPT_NS_MAP: a->ns_map = optarg; break;
		case OPT_OP_TIMEOUT: rc = nkv_target_size(optarg, &a->op_timeout); break;
		case OPT_MOUNT_TIMEOUT: rc = nkv_target_size(optarg, &a->mount_timeout); break;
		case OPT_HANDSHAKE_MS: rc = nkv_target_size(optarg, &a->handshake_ms); break;
		case OPT_IDLE_MS: rc = nkv_target_size(optarg, &a->idle_ms); break;
		case OPT_MSG_MS: rc = nkv_target_size(optarg, &a->msg_ms); break;
		case OPT_MAX_DMA_MAPS: rc = nkv_target_size(optarg, &a->max_dma_maps); break;
		case OPT_MAX_DMA_BYTES: rc = nkv_target_size(optarg, &a->max_dma_bytes); break;
		case OPT_MAX_QPAIRS: rc = nkv_target_size(optarg, &a->max_qpairs); break;
		case OPT_DB_STRIDE: rc = nkv_target_stride(optarg, &a->dstrd); break;
		case OPT_POLL_SCHED: rc = nkv_target_sched(optarg, &a->poll_sched); break;
		case 'h': nkv_target_usage(stdout); exit(0);
		default: return -EINVAL;
		}
		if (rc) {
			fprintf(stderr, "nkv-target: bad value '%s' for --%s\n", optarg,
				nkv_target_optname(lo, o));
			return rc;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "nkv-target: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (a->queue_depth && (a->queue_depth < 2 || a->queue_depth > 65536)) {
		fprintf(stderr, "nkv-target: --queue-depth must be 2..65536\n");
		return -EINVAL;
	}
	if (a->handshake_ms > UINT32_MAX || a->idle_ms > UINT32_MAX || a->msg_ms > UINT32_MAX) {
		fprintf(stderr, "nkv-target: a --*-timeout-ms value is too large\n");
		return -EINVAL;
	}
	if (a->max_dma_maps > 1024 || a->max_qpairs > 65534) {
		fprintf(stderr, "nkv-target: --max-dma-maps is at most 1024, --max-queue-pairs 65534\n");
		return -EINVAL;
	}
	if (a->max_value > UINT32_MAX || a->max_keys > UINT32_MAX) {
		fprintf(stderr, "nkv-target: --max-value / --max-keys too large\n");
		return -EINVAL;
	}
	return 0;
}

static struct nkv_be *nkv_target_mem(const struct nkv_target_args *a, char *err, size_t errlen)
{
	struct nkv_be_mem_opts mo = { .size = sizeof(mo) };
	struct nkv_be *be;

	mo.capacity = a->capacity;
	mo.max_value = (uint32_t)a->max_value;
	mo.max_keys = (uint32_t)a->max_keys;
	be = nkv_be_mem_create(&mo);
	if (!be)
		snprintf(err, errlen, "mem backend: %s", strerror(errno));
	return be;
}

static struct nkv_be *nkv_target_rados(const struct nkv_target_args *a, const char *rados_ns,
				       char *err, size_t errlen)
{
	struct nkv_be_rados_opts ro = { .size = sizeof(ro) };

	ro.conf = a->conf;
	ro.client = a->id;
	ro.keyring = a->keyring;
	ro.pool = a->pool;
	ro.rados_ns = rados_ns;
	ro.op_timeout_s = (uint32_t)a->op_timeout;
	ro.mount_timeout_s = (uint32_t)a->mount_timeout;
	ro.max_value = (uint32_t)a->max_value;
	return nkv_be_rados_create(&ro, err, errlen);
}

/* Attach one rados backend per "NSID=RADOS_NS" entry of --ns-map. */
static int nkv_target_add_rados(struct nkv_subsys *ss, const struct nkv_target_args *a)
{
	char *map = strdup(a->ns_map ? a->ns_map : "1=gpukv"), *save = NULL, *ent;
	char err[256];
	int rc = map ? 0 : -ENOMEM;

	for (ent = map ? strtok_r(map, ",", &save) : NULL; ent && !rc;
	     ent = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(ent, '='), *end;
		unsigned long nsid = strtoul(ent, &end, 10);
		struct nkv_be *be;

		if (!eq || end != eq || nsid < 1 || nsid > NKV_TGT_MAX_NS || !eq[1]) {
			fprintf(stderr, "nkv-target: bad --ns-map entry '%s' (want NSID=RADOS_NS, "
				"NSID 1..%d)\n", ent, NKV_TGT_MAX_NS);
			rc = -EINVAL;
			break;
		}
		err[0] = 0;
		be = nkv_target_rados(a, eq + 1, err, sizeof(err));
		if (!be || nkv_subsys_add_ns(ss, (uint32_t)nsid, be)) {
			fprintf(stderr, "nkv-target: namespace %lu (RADOS namespace %s): %s\n", nsid,
				eq + 1, err[0] ? err : "cannot attach (nsid used twice?)");
			rc = -EINVAL;
		}
	}
	free(map);
	return rc;
}

/* The KV namespace(s): mem as nsid 1, or rados by --ns-map. */
static int nkv_target_add_kv(struct nkv_subsys *ss, const struct nkv_target_args *a)
{
	char err[256] = "";
	struct nkv_be *be;

	if (!strcmp(a->backend, "rados"))
		return nkv_target_add_rados(ss, a);
	if (strcmp(a->backend, "mem")) {
		fprintf(stderr, "nkv-target: unknown backend '%s' (available: mem, rados)\n",
			a->backend);
		return -EINVAL;
	}
	be = nkv_target_mem(a, err, sizeof(err));
	if (!be || nkv_subsys_add_ns(ss, 1, be)) {
		fprintf(stderr, "nkv-target: namespace 1: %s\n", err[0] ? err : "cannot attach");
		return -EINVAL;
	}
	return 0;
}

static struct nkv_subsys *nkv_target_subsys(const struct nkv_target_args *a)
{
	struct nkv_subsys_opts so = { .size = sizeof(so) };
	struct nkv_subsys *ss;
	struct nkv_be *be;
	char err[256] = "";

	ss = nkv_subsys_create(&so);
	if (!ss) {
		fprintf(stderr, "nkv-target: cannot create the subsystem\n");
		return NULL;
	}
	if (nkv_target_add_kv(ss, a)) {
		nkv_subsys_destroy(ss);
		return NULL;
	}
	if (a->nvm_ns) {
		struct nkv_be_mem_opts mo = { .size = sizeof(mo) };

		mo.nvm = 1;
		mo.capacity = a->nvm_ns;
		be = nkv_be_mem_create(&mo);
		if (!be)
			snprintf(err, sizeof(err), "mem backend: %s", strerror(errno));
		if (!be || nkv_subsys_add_ns(ss, 2, be)) {
			fprintf(stderr, "nkv-target: NVM namespace 2: %s\n", err[0] ? err : "cannot attach");
			nkv_subsys_destroy(ss);
			return NULL;
		}
	}
	return ss;
}

int main(int argc, char **argv)
{
	struct nkv_target_args a = {
		.socket = "nkv-target.sock", .backend = "mem", .capacity = 1ull << 30,
		.max_value = 1u << 20, .log_level = NKV_VFU_LOG_INFO,
		.dstrd = NKV_TGT_DSTRD_LINE,
	};
	struct nkv_vfu_server_opts so = { .size = sizeof(so) };
	struct nkv_vfu_server *srv;
	struct nkv_subsys *ss;
	sigset_t set;
	int rc, sig = 0;

	/* The debug trace switch the host library reads too. */
	a.trace = getenv("NKV_TRACE") && atoi(getenv("NKV_TRACE")) > 0;
	if (nkv_target_parse(argc, argv, &a)) {
		nkv_target_usage(stderr);
		return 2;
	}
	ss = nkv_target_subsys(&a);
	if (!ss)
		return 1;
	/* Block the stop signals in every thread; main waits for them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	so.socket_path = a.socket;
	so.ss = ss;
	so.ctrl.size = sizeof(so.ctrl);
	so.ctrl.mqes = (uint32_t)a.queue_depth;
	so.ctrl.trace = a.trace;
	so.poll_interval_ns = a.poll_ns;
	so.poll_sched = a.poll_sched;
	so.no_sparse_mmap = a.no_sparse;
	so.max_conns = (int)a.max_conns;
	so.log_level = a.log_level;
	so.handshake_ms = (uint32_t)a.handshake_ms;
	so.idle_ms = (uint32_t)a.idle_ms;
	so.msg_ms = (uint32_t)a.msg_ms;
	so.max_dma_maps = (uint32_t)a.max_dma_maps;
	so.max_dma_bytes = a.max_dma_bytes;
	so.ctrl.max_ioq = (uint32_t)a.max_qpairs;
	so.ctrl.dstrd = a.dstrd;
	rc = nkv_vfu_server_start(&so, &srv);
	if (rc) {
		fprintf(stderr, "nkv-target: cannot listen on %s: %s\n", a.socket, strerror(-rc));
		nkv_subsys_destroy(ss);
		return 1;
	}
	sigwait(&set, &sig);
	fprintf(stderr, "ts=%ld level=info event=signal sig=%s action=shutdown\n",
		(long)time(NULL), sig == SIGINT ? "SIGINT" : "SIGTERM");
	nkv_vfu_server_stop(srv);
	nkv_subsys_destroy(ss);
	return 0;
}
