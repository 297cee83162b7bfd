/* SPDX-License-Identifier: MIT */
/*
 * main.c - the nkv-target program: parse options, build the subsystem
 * (namespaces and their backends), serve it over vfio-user until SIGINT
 * or SIGTERM, then shut down cleanly (controllers finish or fail their
 * in-flight commands, the socket file is removed). SIGUSR1, and the
 * shutdown, log a stats line per namespace (keys, bytes, evictions).
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "target/backends/registry.h"
#include "target/core/pidlock.h"
#include "target/tcp/server.h"
#include "target/vfio-user/server.h"
#include "tools/exit.h"

#define NKV_TARGET_DEF_NQN "nqn.2026-01.io.nkv:target"
#define NKV_TARGET_MAX_TCP 16

/* One --listen tcp:ADDR:PORT. */
struct nkv_target_tcp {
	char addr[64];
	uint16_t port;
};

struct nkv_target_args {
	const char *socket;	/* vfio-user: --socket or --listen vfio-user:PATH */
	int socket_given;
	struct nkv_target_tcp tcp[NKV_TARGET_MAX_TCP];
	int ntcp;
	const char *nqn;	/* --nqn: the subsystem's NQN */
	const char *backend;
	uint64_t capacity;
	uint64_t max_value;
	uint64_t max_keys;
	uint64_t nvm_ns;	/* bytes of an extra NVM namespace (nsid 2); 0: none */
	const char *ns_map;	/* "1=gpukv,3=other" */
	uint64_t queue_depth;
	uint64_t poll_ns;
	uint64_t max_conns;
	int no_sparse;
	int trace;
	int log_level;
	/* the backend's own options (--pool kvpool ...), in command line order */
	struct nkv_be_param *params;
	size_t nparams;
	/* time limits on a client, ms; 0: the server's defaults */
	uint64_t handshake_ms;
	uint64_t idle_ms;
	uint64_t msg_ms;
	/* budgets per connection; 0: the server's defaults */
	uint64_t max_dma_maps;
	uint64_t max_dma_bytes;
	uint64_t max_qpairs;
	uint32_t dstrd;		/* CAP.DSTRD (--doorbell-stride) */
	uint32_t socket_mode;	/* --socket-mode; 0: as bind leaves it */
	int socket_gid_set;	/* --socket-group given */
	gid_t socket_gid;
	int poll_sched;		/* enum nkv_vfu_sched (--poll-sched) */
};

/* "  --NAME METAVAR" and its help from column 25, each further line of
 * help indented to it, as the rest of --help. */
static void nkv_target_opt_help(FILE *f, const char *name, const char *metavar, const char *help)
{
	int n = fprintf(f, "  --%s %s", name, metavar);
	const char *nl;

	fprintf(f, "%*s", n < 24 ? 25 - n : 2, "");
	for (; (nl = strchr(help, '\n')); help = nl + 1)
		fprintf(f, "%.*s\n%25s", (int)(nl - help), help, "");
	fprintf(f, "%s\n", help);
}

/* --backend with the registered names, "mem|rados". */
static void nkv_target_usage_backend(FILE *f)
{
	const struct nkv_be_type *const *t;
	char names[128] = "";

	for (t = nkv_be_types(); *t; t++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 t == nkv_be_types() ? "" : "|", (*t)->name);
	nkv_target_opt_help(f, "backend", names, "KV namespace backend, see below (default mem)");
}

/* One section per backend: its summary and its options. */
static void nkv_target_usage_types(FILE *f)
{
	const struct nkv_be_type *const *t;
	const struct nkv_be_optdesc *d;

	for (t = nkv_be_types(); *t; t++) {
		fprintf(f, "\n%s backend: %s\n", (*t)->name, (*t)->summary);
		for (d = (*t)->opts; d && d->name; d++)
			nkv_target_opt_help(f, d->name, d->metavar, d->help);
	}
}

static void nkv_target_usage(FILE *f)
{
	fputs("usage: nkv-target [options]\n"
	      "Serve an NVMe Key-Value controller over vfio-user on a Unix socket and/or\n"
	      "NVMe/TCP. Every client connection (vfio-user) or association (NVMe/TCP)\n"
	      "gets its own controller; namespaces are shared.\n\n"
	      "  --listen tcp:[ADDR:]PORT\n"
	      "                         serve NVMe/TCP on ADDR (default 127.0.0.1; IPv6 in\n"
	      "                         brackets) and PORT (0: an ephemeral one, logged as\n"
	      "                         event=tcp_listening; NVMe/TCP's own ports are 4420,\n"
	      "                         and 8009 for discovery); repeatable. No\n"
	      "                         authentication, no TLS: anyone who reaches the port\n"
	      "                         uses every namespace (docs/tcp.md)\n"
	      "  --listen vfio-user:PATH\n"
	      "                         the same as --socket PATH. Without any --listen or\n"
	      "                         --socket: vfio-user on ./nkv-target.sock; with only\n"
	      "                         tcp: ones, no vfio-user socket\n"
	      "  --nqn NQN              the subsystem's NQN, what NVMe/TCP hosts connect to\n"
	      "                         (default " NKV_TARGET_DEF_NQN ")\n"
	      "  --socket PATH          socket to listen on (default ./nkv-target.sock); one\n"
	      "                         target per path: PATH.lock holds the PID of the\n"
	      "                         one serving it, and a second exits 3 naming it; a\n"
	      "                         socket left by a target that died is replaced\n"
	      "  --socket-mode MODE     the socket's permission bits, octal, e.g. 0660:\n"
	      "                         connecting needs write permission on it (default\n"
	      "                         0777 less the umask, as bind leaves it: 0755\n"
	      "                         under umask 022, so only this uid connects)\n"
	      "  --socket-group GROUP   the socket's group, a name or a number (default the\n"
	      "                         target's own); with --socket-mode 0660, the\n"
	      "                         members of GROUP may connect. The directories\n"
	      "                         above the socket must let them through (search\n"
	      "                         permission): they are the operator's to set\n", f);
	nkv_target_usage_backend(f);
	fputs("  --capacity SIZE        KV namespace capacity in bytes, each key's real cost\n"
	      "                         counted (value, allocation, index); shared by all\n"
	      "                         clients (default 1G)\n"
	      "  --max-value SIZE       largest value accepted, at most 128M - 257 (default\n"
	      "                         64M); MDTS follows it: the smallest transfer that\n"
	      "                         holds it and 257 bytes more, never below 1M\n"
	      "  --max-keys N           most keys stored (default 0 = capacity only)\n"
	      "  --ns-map MAP           the KV namespaces, NSID=NAME[:ro][,...], each on\n"
	      "                         its own backend (default 1=gpukv; rados: NAME is\n"
	      "                         the RADOS namespace, mem: a label). :ro makes one\n"
	      "                         read-only: Store and Delete answer 82h (SCT 1)\n"
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
	      "  --version              print the version (nkv-target (nkv) " NKV_VERSION ")\n"
	      "  -h, --help             this text\n", f);
	nkv_target_usage_types(f);
	fputs("\nA backend's options are refused with another --backend.\n"
	      "SIZE takes K, M, G suffixes (powers of 1024).\n\n"
	      "examples:\n"
	      "  nkv-target --socket /tmp/nkv.sock\n"
	      "  nkv-target --listen tcp:127.0.0.1:4420 --listen tcp:127.0.0.1:8009\n"
	      "  nkv-target --listen vfio-user:/tmp/nkv.sock --listen tcp:0\n"
	      "  nkv-target --socket /run/nkv/nkv.sock --socket-mode 0660 --socket-group nkv\n"
	      "  nkv-target --socket /tmp/nkv.sock --capacity 4G --max-value 2M --queue-depth 256\n"
	      "  nkv-target --socket /tmp/nkv.sock --no-sparse-mmap --log-level debug\n"
	      "  nkv-target --socket /tmp/nkv.sock --backend rocksdb --db /var/lib/nkv \\\n"
	      "             --ns-map 1=gpukv,2=cache --capacity 100G\n"
	      "  nkv-target --socket /tmp/nkv.sock --backend rados --conf /etc/ceph/ceph.conf \\\n"
	      "             --id nkv --pool kvpool --ns-map 1=gpukv,2=tenant2\n"
	      "  nkv-target --socket /tmp/nkv.sock --backend rados --conf /etc/ceph/ceph.conf \\\n"
	      "             --id nkv --pool kvpool --ns-map 1=weights:ro,2=scratch\n"
	      "  nkv-probe vfio-user:/tmp/nkv.sock      # check it from another shell\n\n"
	      NKV_EXIT_HELP
	      "(here 3: a backend that cannot start, e.g. no cluster or a database another\n"
	      "process holds, a socket path another target serves, or a socket that\n"
	      "cannot be listened on)\n", f);
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
	OPT_LISTEN = 200, OPT_NQN,
	OPT_SOCKET = 256, OPT_BACKEND, OPT_CAPACITY, OPT_MAX_VALUE, OPT_MAX_KEYS,
	OPT_NVM_NS, OPT_QD, OPT_POLL, OPT_MAX_CONNS, OPT_NO_SPARSE, OPT_TRACE, OPT_LOG,
	OPT_ALLOW_UNSEALED, OPT_NS_MAP,
	OPT_HANDSHAKE_MS, OPT_IDLE_MS, OPT_MSG_MS, OPT_MAX_DMA_MAPS, OPT_MAX_DMA_BYTES, OPT_MAX_QPAIRS,
	OPT_DB_STRIDE, OPT_POLL_SCHED, OPT_SOCKET_MODE, OPT_SOCKET_GROUP,
	OPT_VERSION,
	OPT_BE_PARAM,	/* an option a backend declares (registry.h) */
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

/* --socket-mode: octal permission bits, 1..0777. */
static int nkv_target_mode(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 8);
	if (errno || end == s || *end || *s == '-' || !v || v > 0777)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* --socket-group: a group name, or a number. */
static int nkv_target_group(const char *s, struct nkv_target_args *a)
{
	struct group gr, *g = NULL;
	char buf[4096], *end;
	unsigned long v;

	if (!getgrnam_r(s, &gr, buf, sizeof(buf), &g) && g) {
		a->socket_gid = g->gr_gid;
	} else {
		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno || end == s || *end || *s == '-' || v >= (gid_t)-1)
			return -EINVAL;
		a->socket_gid = (gid_t)v;
	}
	a->socket_gid_set = 1;
	return 0;
}

/* nkv-target's own options; the backends' come from the registry. */
static const struct option nkv_target_lo[] = {
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "nqn", required_argument, NULL, OPT_NQN },
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "socket-mode", required_argument, NULL, OPT_SOCKET_MODE },
	{ "socket-group", required_argument, NULL, OPT_SOCKET_GROUP },
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "capacity", required_argument, NULL, OPT_CAPACITY },
	{ "max-value", required_argument, NULL, OPT_MAX_VALUE },
	{ "max-keys", required_argument, NULL, OPT_MAX_KEYS },
	{ "nvm-ns", required_argument, NULL, OPT_NVM_NS },
	{ "ns-map", required_argument, NULL, OPT_NS_MAP },
	{ "queue-depth", required_argument, NULL, OPT_QD },
	{ "poll-interval-ns", required_argument, NULL, OPT_POLL },
	{ "max-conns", required_argument, NULL, OPT_MAX_CONNS },
	{ "no-sparse-mmap", no_argument, NULL, OPT_NO_SPARSE },
	{ "allow-unsealed-dma", no_argument, NULL, OPT_ALLOW_UNSEALED },
	{ "trace", no_argument, NULL, OPT_TRACE },
	{ "log-level", required_argument, NULL, OPT_LOG },
	{ "handshake-timeout-ms", required_argument, NULL, OPT_HANDSHAKE_MS },
	{ "idle-timeout-ms", required_argument, NULL, OPT_IDLE_MS },
	{ "msg-timeout-ms", required_argument, NULL, OPT_MSG_MS },
	{ "max-dma-maps", required_argument, NULL, OPT_MAX_DMA_MAPS },
	{ "max-dma-bytes", required_argument, NULL, OPT_MAX_DMA_BYTES },
	{ "max-queue-pairs", required_argument, NULL, OPT_MAX_QPAIRS },
	{ "doorbell-stride", required_argument, NULL, OPT_DB_STRIDE },
	{ "poll-sched", required_argument, NULL, OPT_POLL_SCHED },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "help", no_argument, NULL, 'h' },
};
#define NKV_TARGET_NLO (sizeof(nkv_target_lo) / sizeof(nkv_target_lo[0]))

static int nkv_target_has_opt(const struct option *lo, size_t n, const char *name)
{
	while (n--)
		if (!strcmp(lo[n].name, name))
			return 1;
	return 0;
}

/* nkv-target's options, then every backend's, each name once (a backend
 * option named like one of nkv-target's would be nkv-target's). */
static struct option *nkv_target_longopts(void)
{
	const struct nkv_be_type *const *t;
	const struct nkv_be_optdesc *d;
	size_t n = NKV_TARGET_NLO;
	struct option *lo;

	for (t = nkv_be_types(); *t; t++)
		for (d = (*t)->opts; d && d->name; d++)
			n++;
	lo = calloc(n + 1, sizeof(*lo));
	if (!lo)
		return NULL;
	memcpy(lo, nkv_target_lo, sizeof(nkv_target_lo));
	n = NKV_TARGET_NLO;
	for (t = nkv_be_types(); *t; t++)
		for (d = (*t)->opts; d && d->name; d++)
			if (!nkv_target_has_opt(lo, n, d->name))
				lo[n++] = (struct option){ d->name, required_argument, NULL, OPT_BE_PARAM };
	return lo;
}

/* The long name of option @val, for messages. */
static const char *nkv_target_optname(const struct option *lo, int val)
{
	for (; lo->name; lo++)
		if (lo->val == val)
			return lo->name;
	return "?";
}

/* --listen tcp:[ADDR:]PORT ("tcp:[::1]:4420" for IPv6). */
static int nkv_target_listen_tcp(const char *v, struct nkv_target_args *a)
{
	struct nkv_target_tcp *t = &a->tcp[a->ntcp];
	const char *colon = strrchr(v, ':');
	const char *port = colon ? colon + 1 : v;
	size_t alen = colon ? (size_t)(colon - v) : 0;
	char *end;
	unsigned long p;

	if (a->ntcp == NKV_TARGET_MAX_TCP)
		return -EINVAL;
	if (alen >= 2 && v[0] == '[' && v[alen - 1] == ']') {
		v++;
		alen -= 2;
	}
	if (alen >= sizeof(t->addr))
		return -EINVAL;
	errno = 0;
	p = strtoul(port, &end, 10);
	if (!*port || *end || errno || p > 65535)
		return -EINVAL;
	snprintf(t->addr, sizeof(t->addr), "%.*s", (int)alen, v);
	if (!alen)
		snprintf(t->addr, sizeof(t->addr), "%s", NKV_TCP_DEF_ADDR);
	t->port = (uint16_t)p;
	a->ntcp++;
	return 0;
}

static int nkv_target_listen(const char *v, struct nkv_target_args *a)
{
	if (!strncmp(v, "tcp:", 4))
		return nkv_target_listen_tcp(v + 4, a);
	if (!strncmp(v, "vfio-user:", 10) && v[10]) {
		if (a->socket_given && strcmp(a->socket, v + 10))
			return -EINVAL;	/* one vfio-user socket per target */
		a->socket = v + 10;
		a->socket_given = 1;
		return 0;
	}
	return -EINVAL;
}

/* Option o of nkv-target's own (not a backend's) into a. */
static int nkv_target_opt(int o, const char *v, struct nkv_target_args *a)
{
	switch (o) {
	case OPT_SOCKET:
		if (a->socket_given && strcmp(a->socket, v))
			return -EINVAL;
		a->socket = v;
		a->socket_given = 1;
		return 0;
	case OPT_LISTEN: return nkv_target_listen(v, a);
	case OPT_NQN:
		a->nqn = v;
		return strlen(v) && strlen(v) <= 223 ? 0 : -EINVAL;
	case OPT_SOCKET_MODE: return nkv_target_mode(v, &a->socket_mode);
	case OPT_SOCKET_GROUP: return nkv_target_group(v, a);
	case OPT_BACKEND: a->backend = v; return 0;
	case OPT_CAPACITY: return nkv_target_size(v, &a->capacity);
	case OPT_MAX_VALUE: return nkv_target_size(v, &a->max_value);
	case OPT_MAX_KEYS: return nkv_target_size(v, &a->max_keys);
	case OPT_NVM_NS: return nkv_target_size(v, &a->nvm_ns);
	case OPT_NS_MAP: a->ns_map = v; return 0;
	case OPT_QD: return nkv_target_size(v, &a->queue_depth);
	case OPT_POLL: return nkv_target_size(v, &a->poll_ns);
	case OPT_MAX_CONNS: return nkv_target_size(v, &a->max_conns);
	case OPT_NO_SPARSE: a->no_sparse = 1; return 0;
	case OPT_ALLOW_UNSEALED: return 0;	/* the default now */
	case OPT_TRACE: a->trace = 1; return 0;
	case OPT_LOG:
		a->log_level = nkv_target_level(v);
		return a->log_level < 0 ? -EINVAL : 0;
	case OPT_HANDSHAKE_MS: return nkv_target_size(v, &a->handshake_ms);
	case OPT_IDLE_MS: return nkv_target_size(v, &a->idle_ms);
	case OPT_MSG_MS: return nkv_target_size(v, &a->msg_ms);
	case OPT_MAX_DMA_MAPS: return nkv_target_size(v, &a->max_dma_maps);
	case OPT_MAX_DMA_BYTES: return nkv_target_size(v, &a->max_dma_bytes);
	case OPT_MAX_QPAIRS: return nkv_target_size(v, &a->max_qpairs);
	case OPT_DB_STRIDE: return nkv_target_stride(v, &a->dstrd);
	case OPT_POLL_SCHED: return nkv_target_sched(v, &a->poll_sched);
	default: return -EINVAL;
	}
}

static int nkv_target_getopts(int argc, char **argv, const struct option *lo,
			      struct nkv_target_args *a)
{
	int o, li = 0, rc;

	while ((o = getopt_long(argc, argv, "h", lo, &li)) != -1) {
		if (o == 'h') {
			nkv_target_usage(stdout);
			exit(0);
		}
		if (o == OPT_VERSION) {
			fputs(NKV_VERSION_LINE("nkv-target"), stdout);
			exit(0);
		}
		if (o == OPT_BE_PARAM) {
			a->params[a->nparams++] = (struct nkv_be_param){ lo[li].name, optarg };
			continue;
		}
		rc = nkv_target_opt(o, optarg, a);
		if (rc && o == OPT_SOCKET_MODE)
			fprintf(stderr, "nkv-target: bad value '%s' for --socket-mode: want octal "
				"permission bits 1..0777, e.g. 0660\n", optarg);
		else if (rc && o == OPT_SOCKET_GROUP)
			fprintf(stderr, "nkv-target: bad value '%s' for --socket-group: no such "
				"group, and not a number\n", optarg);
		else if (rc && o == OPT_LISTEN)
			fprintf(stderr, "nkv-target: bad value '%s' for --listen: want tcp:[ADDR:]PORT "
				"(at most %d) or vfio-user:PATH (one socket)\n", optarg,
				NKV_TARGET_MAX_TCP);
		else if (rc && o == OPT_SOCKET)
			fprintf(stderr, "nkv-target: --socket '%s': one vfio-user socket per target\n",
				optarg);
		else if (rc && o != '?')
			fprintf(stderr, "nkv-target: bad value '%s' for --%s\n", optarg,
				nkv_target_optname(lo, o));
		if (rc)
			return rc;
	}
	if (optind < argc) {
		fprintf(stderr, "nkv-target: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

/* What every KV namespace asks of its backend. */
static struct nkv_be_conf nkv_target_conf(const struct nkv_target_args *a)
{
	struct nkv_be_conf c = { .size = sizeof(c) };

	c.capacity = a->capacity;
	c.max_value = (uint32_t)a->max_value;
	c.max_keys = (uint32_t)a->max_keys;
	c.params = a->params;
	c.nparams = a->nparams;
	return c;
}

/* One --ns-map entry. */
struct nkv_target_ns {
	uint32_t nsid;
	const char *name;
	int read_only;
};

/* Parse "NSID=NAME[:ro]" (ent is cut at the ':'); say why not. NAME
 * cannot hold a ':': anything after one is a suffix, and :ro the only. */
static int nkv_target_ns_entry(char *ent, struct nkv_target_ns *ns)
{
	char *eq = strchr(ent, '='), *end, *colon = eq ? strchr(eq, ':') : NULL;
	unsigned long nsid = strtoul(ent, &end, 10);

	if (!eq || end != eq || nsid < 1 || nsid > NKV_TGT_MAX_NS || eq + 1 == colon || !eq[1]) {
		fprintf(stderr, "nkv-target: bad --ns-map entry '%s' (want NSID=NAME[:ro], "
			"NSID 1..%d)\n", ent, NKV_TGT_MAX_NS);
		return -EINVAL;
	}
	if (colon && strcmp(colon, ":ro")) {
		fprintf(stderr, "nkv-target: bad --ns-map entry '%s': unknown suffix '%s' (the "
			"only one is :ro, read-only; NAME cannot hold a ':')\n", ent, colon);
		return -EINVAL;
	}
	ns->read_only = colon != NULL;
	if (colon)
		*colon = 0;
	ns->nsid = (uint32_t)nsid;
	ns->name = eq + 1;
	return 0;
}

/* Call fn (NULL: only check) for each --ns-map entry, in order; the
 * first error ends it. */
static int nkv_target_each_ns(const struct nkv_target_args *a,
			      int (*fn)(void *arg, const struct nkv_target_ns *ns), void *arg)
{
	char *map = strdup(a->ns_map ? a->ns_map : "1=gpukv"), *save = NULL, *ent;
	struct nkv_target_ns ns;
	int rc = map ? 0 : -ENOMEM;

	for (ent = map ? strtok_r(map, ",", &save) : NULL; ent && !rc;
	     ent = strtok_r(NULL, ",", &save)) {
		rc = nkv_target_ns_entry(ent, &ns);
		if (!rc && fn)
			rc = fn(arg, &ns);
	}
	free(map);
	return rc;
}

static int nkv_target_check(const struct nkv_target_args *a)
{
	struct nkv_be_conf c = nkv_target_conf(a);
	char err[256];

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
	if (!a->max_value || a->max_value > NKV_TGT_MAX_VALUE) {
		fprintf(stderr, "nkv-target: --max-value %llu: must be 1..%u (128M less the 257 "
			"bytes a long key's head takes: MDTS at most %u)\n",
			(unsigned long long)a->max_value, NKV_TGT_MAX_VALUE, NKV_TGT_MDTS_MAX);
		return -EINVAL;
	}
	if (a->max_keys > UINT32_MAX) {
		fprintf(stderr, "nkv-target: --max-keys too large\n");
		return -EINVAL;
	}
	/* An unknown --backend fails later, as creating a namespace. */
	if (nkv_be_type_find(a->backend) && nkv_be_conf_check(a->backend, &c, err, sizeof(err))) {
		fprintf(stderr, "nkv-target: %s\n", err);
		return -EINVAL;
	}
	return nkv_target_each_ns(a, NULL, NULL) ? -EINVAL : 0;
}

static int nkv_target_parse(int argc, char **argv, struct nkv_target_args *a)
{
	struct option *lo = nkv_target_longopts();
	int rc;

	/* Each backend option takes an argument: argc bounds their number. */
	a->params = calloc((size_t)argc, sizeof(*a->params));
	if (!lo || !a->params) {
		free(lo);
		fprintf(stderr, "nkv-target: out of memory\n");
		return -ENOMEM;
	}
	rc = nkv_target_getopts(argc, argv, lo, a);
	free(lo);
	return rc ? rc : nkv_target_check(a);
}

/* The namespaces served, for the start-up and stats lines (the
 * subsystem owns them). */
static struct {
	uint32_t nsid;
	struct nkv_be *be;
	char name[64];		/* --ns-map NAME; "" for the NVM one */
	uint64_t open_ms;	/* its backend's create: a database opened and
				 * counted, a cluster joined */
} nkv_target_nss[NKV_TGT_MAX_NS];
static unsigned nkv_target_nns;

/* One stats line per namespace: keys and bytes used, and the keys
 * --evict lru deleted to make room. */
static void nkv_target_stats(void)
{
	unsigned i;

	for (i = 0; i < nkv_target_nns; i++) {
		struct nkv_be *be = nkv_target_nss[i].be;

		fprintf(stderr, "ts=%ld level=info event=stats nsid=%u backend=%s keys=%llu "
			"bytes=%llu evictions=%llu\n", (long)time(NULL), nkv_target_nss[i].nsid,
			be->ops->name, (unsigned long long)be->ops->keys_used(be),
			(unsigned long long)be->ops->bytes_used(be),
			(unsigned long long)(be->ops->evictions ? be->ops->evictions(be) : 0));
	}
}

static uint64_t nkv_target_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Create a backend of type for nsid and attach it; say why not. */
static int nkv_target_add_ns(struct nkv_subsys *ss, uint32_t nsid, const char *type,
			     const struct nkv_be_conf *c, const char *what)
{
	char err[256] = "";
	uint64_t t0 = nkv_target_now_ms();
	struct nkv_be *be = nkv_be_create(type, c, err, sizeof(err));

	if (be && !nkv_subsys_add_ns(ss, nsid, be)) {
		if (nkv_target_nns < NKV_TGT_MAX_NS) {
			nkv_target_nss[nkv_target_nns].nsid = nsid;
			nkv_target_nss[nkv_target_nns].open_ms = nkv_target_now_ms() - t0;
			snprintf(nkv_target_nss[nkv_target_nns].name,
				 sizeof(nkv_target_nss[0].name), "%s", c->ns_name ? c->ns_name : "");
			nkv_target_nss[nkv_target_nns++].be = be;
		}
		return 0;
	}
	if (be) {
		be->ops->destroy(be);
		snprintf(err, sizeof(err), "cannot attach (nsid used twice?)");
	}
	fprintf(stderr, "nkv-target: %s: %s\n", what, err);
	return -EINVAL;
}

struct nkv_target_kv {
	struct nkv_subsys *ss;
	const char *backend;
	struct nkv_be_conf conf;
};

static int nkv_target_kv_ns(void *arg, const struct nkv_target_ns *ns)
{
	struct nkv_target_kv *k = arg;
	char what[160];

	k->conf.ns_name = ns->name;
	k->conf.nsid = ns->nsid;
	k->conf.read_only = ns->read_only;
	snprintf(what, sizeof(what), "namespace %u (%s%s)", ns->nsid, ns->name,
		 ns->read_only ? ", read-only" : "");
	return nkv_target_add_ns(k->ss, ns->nsid, k->backend, &k->conf, what);
}

/* One KV namespace per "NSID=NAME[:ro]" entry of --ns-map, each on its
 * own backend of --backend. */
static int nkv_target_add_kv(struct nkv_subsys *ss, const struct nkv_target_args *a)
{
	struct nkv_target_kv k = { ss, a->backend, nkv_target_conf(a) };
	char err[256];

	if (nkv_be_conf_check(a->backend, &k.conf, err, sizeof(err))) {
		fprintf(stderr, "nkv-target: %s\n", err);
		return -EINVAL;
	}
	return nkv_target_each_ns(a, nkv_target_kv_ns, &k);
}

static struct nkv_subsys *nkv_target_subsys(const struct nkv_target_args *a)
{
	struct nkv_subsys_opts so = { .size = sizeof(so), .subnqn = a->nqn };
	struct nkv_be_conf nvm = { .size = sizeof(nvm), .nvm = 1, .capacity = a->nvm_ns };
	struct nkv_subsys *ss;

	ss = nkv_subsys_create(&so);
	if (!ss) {
		fprintf(stderr, "nkv-target: cannot create the subsystem\n");
		return NULL;
	}
	if (nkv_target_add_kv(ss, a) ||
	    (a->nvm_ns && nkv_target_add_ns(ss, 2, "mem", &nvm, "NVM namespace 2"))) {
		nkv_subsys_destroy(ss);
		return NULL;
	}
	return ss;
}

/*
 * At start (log level info), one line per namespace: its backend, the
 * limits the core reads from it, the command time it advertises to
 * clients, and the backend's own settings; then, for a KV namespace,
 * what it holds as it starts (what a rocksdb database or a RADOS pool
 * kept; a mem namespace starts empty) and how long its backend took to
 * open. The server's line (event=listening) gives the socket and the
 * limits of every client.
 */
static void nkv_target_print_ns(const struct nkv_target_args *a)
{
	char own[512];
	unsigned i;

	if (a->log_level < NKV_VFU_LOG_INFO)
		return;
	for (i = 0; i < nkv_target_nns; i++) {
		struct nkv_be *be = nkv_target_nss[i].be;

		own[0] = 0;
		if (be->ops->describe)
			be->ops->describe(be, own, sizeof(own));
		if (be->csi == NKV_CSI_NVM)
			fprintf(stderr, "ts=%ld level=info event=namespace nsid=%u csi=nvm backend=%s "
				"blocks=%llu block_size=%u%s%s\n", (long)time(NULL),
				nkv_target_nss[i].nsid, be->ops->name,
				(unsigned long long)be->capacity, be->block_size, *own ? " " : "", own);
		else
			fprintf(stderr, "ts=%ld level=info event=namespace nsid=%u name=%s csi=kv "
				"backend=%s read_only=%u capacity=%llu max_value=%u max_keys=%u "
				"cmd_timeout_ms=%u%s%s\n", (long)time(NULL), nkv_target_nss[i].nsid,
				nkv_target_nss[i].name, be->ops->name, be->read_only,
				(unsigned long long)be->capacity, be->max_value, be->max_keys,
				be->cmd_timeout_ms, *own ? " " : "", own);
		if (be->csi != NKV_CSI_NVM)
			fprintf(stderr, "ts=%ld level=info event=recovered nsid=%u name=%s "
				"backend=%s keys=%llu bytes=%llu open_ms=%llu\n", (long)time(NULL),
				nkv_target_nss[i].nsid, nkv_target_nss[i].name, be->ops->name,
				(unsigned long long)be->ops->keys_used(be),
				(unsigned long long)be->ops->bytes_used(be),
				(unsigned long long)nkv_target_nss[i].open_ms);
	}
}

/* The socket's lock, before anything else is set up (a rocksdb
 * database opened, a cluster joined): a second target on a live one's
 * path stops here, saying who serves it. */
static struct nkv_vfu_lock *nkv_target_lock(const char *path)
{
	struct nkv_vfu_lock *l;
	char comm[64];
	pid_t holder;
	int rc = nkv_vfu_lock_take(path, &l, &holder);

	if (rc == -EADDRINUSE && holder) {
		nkv_lock_holder_name(holder, comm, sizeof(comm));
		fprintf(stderr, "nkv-target: %s is served by another target: PID %d (%s) holds "
			"%s.lock; stop it, or give another --socket\n", path, (int)holder, comm, path);
	} else if (rc == -EADDRINUSE) {
		fprintf(stderr, "nkv-target: %s is served by another target: %s.lock is held (its "
			"holder's PID unknown); stop it, or give another --socket\n", path, path);
	} else if (rc) {
		fprintf(stderr, "nkv-target: cannot lock %s.lock: %s\n", path, strerror(-rc));
	}
	return rc ? NULL : l;
}

/* Why the server did not start, in one line. */
static void nkv_target_listen_failed(const char *path, int rc)
{
	if (rc == -EPERM || rc == -EACCES)
		fprintf(stderr, "nkv-target: cannot give %s its --socket-mode or --socket-group: %s "
			"(a group is given only by root or one of its members)\n", path,
			strerror(-rc));
	else if (rc == -ENOTSOCK)
		fprintf(stderr, "nkv-target: %s exists and is not a socket: not replaced; remove "
			"it, or give another --socket\n", path);
	else
		fprintf(stderr, "nkv-target: cannot listen on %s: %s\n", path, strerror(-rc));
}

/* The vfio-user server's options from the command line. */
static void nkv_target_vfu_opts(const struct nkv_target_args *a, struct nkv_subsys *ss,
				struct nkv_vfu_lock *lock, struct nkv_vfu_server_opts *so)
{
	so->socket_path = a->socket;
	so->lock = lock;	/* the server's from here on */
	so->ss = ss;
	so->ctrl.size = sizeof(so->ctrl);
	so->ctrl.mqes = (uint32_t)a->queue_depth;
	so->ctrl.trace = a->trace;
	so->poll_interval_ns = a->poll_ns;
	so->poll_sched = a->poll_sched;
	so->no_sparse_mmap = a->no_sparse;
	so->max_conns = (int)a->max_conns;
	so->log_level = a->log_level;
	so->handshake_ms = (uint32_t)a->handshake_ms;
	so->idle_ms = (uint32_t)a->idle_ms;
	so->msg_ms = (uint32_t)a->msg_ms;
	so->max_dma_maps = (uint32_t)a->max_dma_maps;
	so->max_dma_bytes = a->max_dma_bytes;
	so->ctrl.max_ioq = (uint32_t)a->max_qpairs;
	so->ctrl.dstrd = a->dstrd;
	so->socket_mode = a->socket_mode;
	so->socket_gid_set = a->socket_gid_set;
	so->socket_gid = a->socket_gid;
}

/* The NVMe/TCP server on every --listen tcp:, started; NULL on failure
 * (said why). Each bound port is logged (event=tcp_listening). */
static struct nkv_tcp_server *nkv_target_tcp(const struct nkv_target_args *a,
					     struct nkv_subsys *ss)
{
	struct nkv_tcp_server_opts to = { .size = sizeof(to), .ss = ss };
	struct nkv_tcp_server *t;
	int i, rc;

	to.ctrl.size = sizeof(to.ctrl);
	to.ctrl.mqes = (uint32_t)a->queue_depth;
	to.ctrl.max_ioq = (uint32_t)a->max_qpairs;
	to.ctrl.trace = a->trace;
	to.log_level = a->log_level;
	rc = nkv_tcp_server_create(&to, &t);
	if (rc) {
		fprintf(stderr, "nkv-target: cannot create the NVMe/TCP server: %s\n", strerror(-rc));
		return NULL;
	}
	for (i = 0; i < a->ntcp; i++) {
		rc = nkv_tcp_server_listen(t, a->tcp[i].addr, a->tcp[i].port, NULL);
		if (rc) {
			fprintf(stderr, "nkv-target: cannot listen on tcp:%s:%u: %s\n", a->tcp[i].addr,
				a->tcp[i].port, strerror(-rc));
			nkv_tcp_server_stop(t);
			return NULL;
		}
	}
	rc = nkv_tcp_server_start(t);
	if (rc) {
		fprintf(stderr, "nkv-target: cannot start the NVMe/TCP server: %s\n", strerror(-rc));
		nkv_tcp_server_stop(t);
		return NULL;
	}
	return t;
}

/* vfio-user unless only tcp: listeners were asked for. */
static int nkv_target_wants_vfu(const struct nkv_target_args *a)
{
	return a->socket_given || !a->ntcp;
}

/* Serve until SIGINT or SIGTERM: the exit status. */
static int nkv_target_serve(const struct nkv_target_args *a)
{
	struct nkv_vfu_server_opts so = { .size = sizeof(so) };
	struct nkv_vfu_server *srv = NULL;
	struct nkv_tcp_server *tcp = NULL;
	struct nkv_vfu_lock *lock = NULL;
	struct nkv_subsys *ss;
	sigset_t set;
	int rc, sig = 0;

	/* Block the stop signals in every thread, the backends' too (mem's
	 * sweeper, librados'), so none takes SIGTERM's default action: main
	 * waits for them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	/* Backends log their own events (a cluster lost) at the same level. */
	nkv_be_log_set(a->log_level, NULL, NULL);
	if (nkv_target_wants_vfu(a) && !(lock = nkv_target_lock(a->socket)))
		return NKV_EXIT_SETUP;
	ss = nkv_target_subsys(a);
	if (!ss) {
		nkv_vfu_lock_release(lock);
		return NKV_EXIT_SETUP;
	}
	nkv_target_print_ns(a);
	if (a->ntcp && !(tcp = nkv_target_tcp(a, ss))) {
		nkv_vfu_lock_release(lock);
		nkv_subsys_destroy(ss);
		return NKV_EXIT_SETUP;
	}
	if (lock) {
		nkv_target_vfu_opts(a, ss, lock, &so);
		rc = nkv_vfu_server_start(&so, &srv);
		if (rc) {
			nkv_target_listen_failed(a->socket, rc);
			nkv_tcp_server_stop(tcp);
			nkv_subsys_destroy(ss);
			return NKV_EXIT_SETUP;
		}
	}
	while (!sigwait(&set, &sig) && sig == SIGUSR1)
		nkv_target_stats();
	fprintf(stderr, "ts=%ld level=info event=signal sig=%s action=shutdown\n",
		(long)time(NULL), sig == SIGINT ? "SIGINT" : "SIGTERM");
	if (srv)
		nkv_vfu_server_stop(srv);
	nkv_tcp_server_stop(tcp);
	nkv_target_stats();
	nkv_subsys_destroy(ss);
	return 0;
}

int main(int argc, char **argv)
{
	struct nkv_target_args a = {
		.socket = "nkv-target.sock", .nqn = NKV_TARGET_DEF_NQN, .backend = "mem", .capacity = 1ull << 30,
		.max_value = NKV_TGT_DEF_MAX_VALUE, .log_level = NKV_VFU_LOG_INFO,
		.dstrd = NKV_TGT_DSTRD_LINE,
	};
	int rc;

	/* The debug trace switch the host library reads too. */
	a.trace = getenv("NKV_TRACE") && atoi(getenv("NKV_TRACE")) > 0;
	if (nkv_target_parse(argc, argv, &a)) {
		nkv_target_usage(stderr);
		rc = NKV_EXIT_USAGE;
	} else {
		rc = nkv_target_serve(&a);
	}
	free(a.params);
	return rc;
}
