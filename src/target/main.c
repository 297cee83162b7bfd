/* SPDX-License-Identifier: MIT */
/*
 * main.c - the nkv-target program: parse options, build the subsystem
 * (namespaces and their backends), serve it over vfio-user and/or
 * NVMe/TCP (src/target/tcp/, docs/tcp.md) until SIGINT
 * or SIGTERM, then shut down cleanly (controllers finish or fail their
 * in-flight commands, the socket file is removed). SIGUSR1, and the
 * shutdown, log a stats line per namespace (keys, bytes, evictions).
 * --rpc-socket adds the control socket (src/target/rpc/, docs/rpc.md).
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
#include "target/config/config.h"
#include "target/core/metrics.h"
#include "target/core/ns.h"
#include "target/core/pidlock.h"
#include "target/exec/exec.h"
#include "target/metrics/target.h"
#include "target/rpc/target.h"
#include "target/tcp/server.h"
#include "target/tenant/tenant.h"
#include "target/vfio-user/server.h"
#include "tools/exit.h"

#include <systemd/sd-daemon.h>

/* A message naming a file, its line and a key. */
#define NKV_TARGET_WHERE_MAX 4200
#define NKV_TARGET_DEF_NQN "nqn.2026-01.io.nkv:target"
#define NKV_TARGET_MAX_TCP 16

/* One --listen tcp:ADDR:PORT. */
struct nkv_target_tcp {
	char addr[64];
	uint16_t port;
};

/* Where a listener came from: a command line's replace a file's. */
enum { NKV_TARGET_SRC_NONE, NKV_TARGET_SRC_FILE, NKV_TARGET_SRC_CLI };

/* A state line to systemd (Type=notify, docs/service.md); nothing when
 * not started by it (no NOTIFY_SOCKET). */
static void nkv_sd_notify(const char *state)
{
	sd_notify(0, state);
}

struct nkv_target_args {
	const char *socket;	/* vfio-user: --socket or --listen vfio-user:PATH */
	int socket_src;		/* NKV_TARGET_SRC_*: where socket was given */
	struct nkv_target_tcp tcp[NKV_TARGET_MAX_TCP];
	int ntcp;
	int tcp_src;		/* NKV_TARGET_SRC_*: where the tcp: ones came from */
	const char *nqn;	/* --nqn: the subsystem's NQN */
	int from_cli;		/* options being applied come from the command line */
	int listen_val_cli;	/* vals[--listen] holds the command line's */
	const char *backend;
	uint64_t capacity;
	uint64_t max_value;
	uint64_t max_keys;
	uint64_t nvm_ns;	/* bytes of an extra NVM namespace (nsid 2); 0: none */
	const char *ns_map;	/* "1=gpukv,3=other" */
	uint64_t queue_depth;
	uint64_t exec_workers;	/* --exec-workers; 0: the room's default */
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
	/* the control socket (docs/rpc.md); NULL: none */
	const char *rpc_socket;
	uint32_t rpc_mode;	/* --rpc-socket-mode; 0: 0600 */
	/* the metrics endpoint (docs/metrics.md): "ADDR:PORT"; NULL: none */
	const char *metrics;
	/* the configuration file (docs/service.md): its path, its lines,
	 * and each option's value as last given (file, then command line;
	 * NULL: not given), indexed as the long options, for --print-config
	 * and SIGHUP's comparison */
	const char *config;
	int print_config;
	int config_failed;	/* the file was refused: no --help text after */
	struct nkv_cfg cfg;
	struct option *lo;
	char **vals;		/* each its own copy */
	size_t nvals;
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
	      "                         uses every namespace --access allows its (claimed)\n"
	      "                         host NQN (docs/tcp.md)\n"
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
	      "  --ns-map MAP           the KV namespaces, NSID=NAME[:ro][:backend=TYPE]\n"
	      "                         [:KEY=VALUE...][,...], each on its own backend\n"
	      "                         (default 1=gpukv; rados: NAME is the RADOS\n"
	      "                         namespace, mem: a label). :ro makes one read-only:\n"
	      "                         Store and Delete answer 82h (SCT 1). :backend=TYPE\n"
	      "                         overrides --backend; :KEY=VALUE is that backend's\n"
	      "                         --KEY VALUE for this namespace alone, e.g.\n"
	      "                         2=cold:backend=rocksdb:db=/var/lib/nkv/cold\n"
	      "  --nvm-ns SIZE          add an NVM block namespace (nsid 2) of SIZE bytes\n"
	      "  --queue-depth N        max queue entries, CAP.MQES+1 (default 1024)\n"
	      "  --poll-interval-ns N   idle sleep between controller polls (default 100000);\n"
	      "                         after 1 ms without work a quarter of the time idle,\n"
	      "                         up to 200 us, never below N\n"
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
	      "  --rpc-socket PATH      serve JSON-RPC 2.0 on a Unix socket at PATH: list\n"
	      "                         namespaces, connections and counters, add a\n"
	      "                         namespace, end a client, change time limits, max\n"
	      "                         conns, the poll interval and the log level while\n"
	      "                         running (docs/rpc.md, nkv-admin rpc); PATH.lock\n"
	      "                         as --socket\n"
	      "  --rpc-socket-mode MODE its permission bits, octal (default 0600: only\n"
	      "                         this uid may control the target)\n"
	      "  --metrics ADDR:PORT    serve Prometheus metrics over HTTP at /metrics:\n"
	      "                         namespaces, commands, errors, latencies,\n"
	      "                         connections, backend health, the process\n"
	      "                         (docs/metrics.md); ADDR an IPv4 address (default\n"
	      "                         127.0.0.1), PORT 0 picks a free one, logged\n"
	      "                         (event=metrics_listening)\n"
	      "  --access RULE          who may use a namespace: \"nsid=N uid=U|gid=G|\n"
	      "                         hostnqn=NQN access=rw|ro|none\", as the RPC\n"
	      "                         access_set (docs/target.md, \"Tenants\"); repeatable\n"
	      "  --access-default RULE  \"nsid=N access=rw|ro|none\": for whom no rule\n"
	      "                         names (default rw); repeatable\n"
	      "  --quota RULE           \"nsid=N uid=U|gid=G|hostnqn=NQN bytes=B keys=K\":\n"
	      "                         what a tenant may own in a shared namespace (0: no\n"
	      "                         limit); repeatable\n"
	      "  --exec-allow NSID:OP_ID:SHA256:KEY[:INSTR:MEM:OUT:WALL_MS]\n"
	      "                         allowlist an Exec module (docs/exec.md): op-ID\n"
	      "                         OP_ID of namespace NSID runs the Lua module stored\n"
	      "                         under hex KEY there if its bytes hash to SHA256;\n"
	      "                         caps 0 or absent: defaults; repeatable (also\n"
	      "                         exec_allow on the control socket)\n"
	      "  --exec-workers N       threads that run Exec modules, 1..16 (default 2)\n"
	      "  --config FILE          read options from FILE first (INI, key = value, the\n"
	      "                         keys the long options; docs/service.md); the\n"
	      "                         command line wins. SIGHUP reads it again and\n"
	      "                         applies the log level, time limits, max conns and\n"
	      "                         poll interval; other changes are logged as needing\n"
	      "                         a restart\n"
	      "  --print-config         print the effective configuration as a FILE, exit\n"
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
	      "  nkv-target --socket /tmp/nkv.sock --metrics 127.0.0.1:9464\n"
	      "  nkv-target --config /etc/nkv/a.conf --print-config\n"
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
	OPT_SOCKET = 256, OPT_BACKEND, OPT_CAPACITY, OPT_MAX_VALUE, OPT_MAX_KEYS,
	OPT_NVM_NS, OPT_QD, OPT_POLL, OPT_MAX_CONNS, OPT_NO_SPARSE, OPT_TRACE, OPT_LOG,
	OPT_ALLOW_UNSEALED, OPT_NS_MAP,
	OPT_HANDSHAKE_MS, OPT_IDLE_MS, OPT_MSG_MS, OPT_MAX_DMA_MAPS, OPT_MAX_DMA_BYTES, OPT_MAX_QPAIRS,
	OPT_DB_STRIDE, OPT_POLL_SCHED, OPT_SOCKET_MODE, OPT_SOCKET_GROUP,
	OPT_VERSION,
	OPT_RPC_SOCKET, OPT_RPC_MODE,
	OPT_METRICS, OPT_CONFIG, OPT_PRINT_CONFIG,
	OPT_LISTEN, OPT_NQN,
	OPT_ACCESS, OPT_ACCESS_DEFAULT, OPT_QUOTA,
	OPT_EXEC_ALLOW, OPT_EXEC_WORKERS,
	OPT_BE_PARAM,	/* an option a backend declares (registry.h) */
};
_Static_assert(OPT_BE_PARAM - OPT_SOCKET < 64, "a reload's mask holds a bit per option");

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
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "nqn", required_argument, NULL, OPT_NQN },
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
	{ "rpc-socket", required_argument, NULL, OPT_RPC_SOCKET },
	{ "rpc-socket-mode", required_argument, NULL, OPT_RPC_MODE },
	{ "metrics", required_argument, NULL, OPT_METRICS },
	{ "access", required_argument, NULL, OPT_ACCESS },
	{ "access-default", required_argument, NULL, OPT_ACCESS_DEFAULT },
	{ "quota", required_argument, NULL, OPT_QUOTA },
	{ "exec-allow", required_argument, NULL, OPT_EXEC_ALLOW },
	{ "exec-workers", required_argument, NULL, OPT_EXEC_WORKERS },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "print-config", no_argument, NULL, OPT_PRINT_CONFIG },
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

/* --metrics: "ADDR:PORT" or "PORT", checked now, bound at start. */
static int nkv_target_metrics_addr(const char *v, struct nkv_target_args *a)
{
	uint32_t ip;
	uint16_t port;

	if (nkv_metrics_addr_parse(v, &ip, &port))
		return -EINVAL;
	a->metrics = v;
	return 0;
}

/* --listen tcp:[ADDR:]PORT ("tcp:[::1]:4420" for IPv6). */
static int nkv_target_listen_tcp(const char *v, struct nkv_target_args *a)
{
	struct nkv_target_tcp *t;
	const char *colon = strrchr(v, ':');
	const char *port = colon ? colon + 1 : v;
	size_t alen = colon ? (size_t)(colon - v) : 0;
	char *end;
	unsigned long p;

	/* A command line's listeners replace a file's, as every key does. */
	if (a->from_cli && a->tcp_src != NKV_TARGET_SRC_CLI)
		a->ntcp = 0;
	a->tcp_src = a->from_cli ? NKV_TARGET_SRC_CLI : NKV_TARGET_SRC_FILE;
	if (a->ntcp == NKV_TARGET_MAX_TCP)
		return -EINVAL;
	t = &a->tcp[a->ntcp];
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

/* The vfio-user socket (--socket, --listen vfio-user:PATH): one per
 * target; a command line's replaces a file's. */
static int nkv_target_socket(const char *v, struct nkv_target_args *a)
{
	int src = a->from_cli ? NKV_TARGET_SRC_CLI : NKV_TARGET_SRC_FILE;

	if (a->socket_src == src && strcmp(a->socket, v))
		return -EINVAL;
	a->socket = v;
	a->socket_src = src;
	return 0;
}

static int nkv_target_listen(const char *v, struct nkv_target_args *a)
{
	if (!strncmp(v, "tcp:", 4))
		return nkv_target_listen_tcp(v + 4, a);
	if (!strncmp(v, "vfio-user:", 10) && v[10])
		return nkv_target_socket(v + 10, a);
	return -EINVAL;
}

/* --exec-allow NSID:OP_ID:DIGEST:KEY[:INSTR:MEM:OUT:WALL_MS]: an Exec
 * allowlist row (docs/exec.md), checked here; the rows given (kept, one
 * a line, as the tenant rules are) are applied once the Exec workers
 * run, and again at SIGHUP (nkv_target_exec_sync). */
static int nkv_target_exec_allow(const char *v)
{
	struct nkv_exec_entry e;

	return nkv_exec_entry_parse(v, &e) || nkv_exec_caps_check(&e.caps) ? -EINVAL : 0;
}

/* The next line of rows (p moves past it) into line; 0 at the end. */
static int nkv_target_row(const char **p, char *line, size_t len)
{
	size_t n;

	if (!*p || !**p)
		return 0;
	n = strcspn(*p, "\n");
	snprintf(line, len, "%.*s", (int)n, *p);
	*p += n + ((*p)[n] ? 1 : 0);
	return 1;
}

/* Whether rows (lines) hold a row for (nsid, op_id). */
static int nkv_target_exec_has(const char *rows, uint32_t nsid, uint32_t op_id)
{
	struct nkv_exec_entry e;
	char line[1024];

	while (nkv_target_row(&rows, line, sizeof(line)))
		if (!nkv_exec_entry_parse(line, &e) && e.nsid == nsid && e.op_id == op_id)
			return 1;
	return 0;
}

/* The file's and command line's rows: those of was that now lacks denied,
 * every one of now allowed (a row given again replaces itself; rows set
 * through the control socket for other op-IDs stay). */
static void nkv_target_exec_sync(const char *was, const char *now)
{
	struct nkv_exec_entry e;
	char line[1024];
	const char *p = was;

	while (nkv_target_row(&p, line, sizeof(line)))
		if (!nkv_exec_entry_parse(line, &e) && !nkv_target_exec_has(now, e.nsid, e.op_id))
			nkv_exec_deny(e.nsid, e.op_id);
	p = now;
	while (nkv_target_row(&p, line, sizeof(line)))
		if (!nkv_exec_entry_parse(line, &e))
			nkv_exec_allow(&e);
}

/* The value kept for option val (NULL: not given). */
static const char *nkv_target_val(const struct nkv_target_args *a, int val)
{
	size_t i;

	for (i = 0; i < a->nvals; i++)
		if (a->lo[i].val == val)
			return a->vals[i];
	return NULL;
}

/* Option o of nkv-target's own (not a backend's) into a. */
static int nkv_target_opt(int o, const char *v, struct nkv_target_args *a)
{
	switch (o) {
	case OPT_SOCKET: return nkv_target_socket(v, a);
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
	case OPT_RPC_SOCKET: a->rpc_socket = v; return 0;
	case OPT_RPC_MODE: return nkv_target_mode(v, &a->rpc_mode);
	case OPT_METRICS: return nkv_target_metrics_addr(v, a);
	case OPT_CONFIG: a->config = v; return 0;	/* read before the others */
	case OPT_PRINT_CONFIG: a->print_config = 1; return 0;
	case OPT_ACCESS: return nkv_tenant_opt(NULL, "access", v, NULL, 0);
	case OPT_ACCESS_DEFAULT: return nkv_tenant_opt(NULL, "access-default", v, NULL, 0);
	case OPT_QUOTA: return nkv_tenant_opt(NULL, "quota", v, NULL, 0);
	case OPT_EXEC_ALLOW: return nkv_target_exec_allow(v);
	case OPT_EXEC_WORKERS:
		return nkv_target_size(v, &a->exec_workers) || a->exec_workers > 16 ? -EINVAL : 0;
	default: return -EINVAL;
	}
}

/* The tenants' options (tenant/opts.c): repeatable, each a rule. */
static int nkv_target_rule_opt(int o)
{
	return o == OPT_ACCESS || o == OPT_ACCESS_DEFAULT || o == OPT_QUOTA;
}

static const char *nkv_target_rule_name(int o)
{
	return o == OPT_ACCESS ? "access" : o == OPT_QUOTA ? "quota" : "access-default";
}

static void nkv_target_bad_rule(int o, const char *v, const char *where)
{
	char err[160] = "";

	nkv_tenant_opt(NULL, nkv_target_rule_name(o), v, err, sizeof(err));
	fprintf(stderr, "nkv-target: bad value '%s' for %s: %s\n", v, where, err);
}

/* Why option o's value v was refused; where is "--NAME" or "FILE:LINE:
 * key 'NAME'". */
static void nkv_target_bad_value(int o, const char *v, const char *where)
{
	if (o == OPT_SOCKET_MODE || o == OPT_RPC_MODE)
		fprintf(stderr, "nkv-target: bad value '%s' for %s: want octal permission bits "
			"1..0777, e.g. 0660\n", v, where);
	else if (o == OPT_SOCKET_GROUP)
		fprintf(stderr, "nkv-target: bad value '%s' for %s: no such group, and not a "
			"number\n", v, where);
	else if (o == OPT_LISTEN)
		fprintf(stderr, "nkv-target: bad value '%s' for %s: want tcp:[ADDR:]PORT "
			"(at most %d) or vfio-user:PATH (one socket)\n", v, where,
			NKV_TARGET_MAX_TCP);
	else if (o == OPT_SOCKET)
		fprintf(stderr, "nkv-target: %s '%s': one vfio-user socket per target\n", where, v);
	else if (o == OPT_NQN)
		fprintf(stderr, "nkv-target: bad value '%s' for %s: want 1..223 bytes\n", v, where);
	else if (o == OPT_ACCESS || o == OPT_ACCESS_DEFAULT || o == OPT_QUOTA)
		nkv_target_bad_rule(o, v, where);
	else if (o == OPT_EXEC_ALLOW)
		fprintf(stderr, "nkv-target: bad value '%s' for %s: want NSID:OP_ID:SHA256_HEX:"
			"KEY_HEX[:MAX_INSTRUCTIONS:MAX_MEMORY:MAX_OUTPUT:MAX_WALL_MS]\n", v, where);
	else if (o == OPT_METRICS)
		fprintf(stderr, "nkv-target: bad value '%s' for %s: want ADDR:PORT or PORT, ADDR "
			"an IPv4 address (default 127.0.0.1), PORT 0..65535 (0: any free one)\n",
			v, where);
	else
		fprintf(stderr, "nkv-target: bad value '%s' for %s\n", v, where);
}

/* A backend's option: replaces one of the same name (a file's, when
 * the command line gives it again). */
static void nkv_target_be_param(struct nkv_target_args *a, const char *name, const char *v)
{
	size_t i;

	for (i = 0; i < a->nparams; i++)
		if (!strcmp(a->params[i].name, name)) {
			a->params[i].value = v;
			return;
		}
	a->params[a->nparams++] = (struct nkv_be_param){ name, v };
}

/* --listen is repeatable: its value kept for --print-config is every one
 * given, a line each; a command line's replace a file's. NULL: no memory. */
static char *nkv_target_listen_val(struct nkv_target_args *a, const char *old, const char *v)
{
	char *val;

	if (a->from_cli && !a->listen_val_cli) {
		old = NULL;
		a->listen_val_cli = 1;
	}
	if (!old)
		return strdup(v);
	if (asprintf(&val, "%s\n%s", old, v) < 0)
		return NULL;
	return val;
}

/* old and v a line each; NULL: no memory. */
static char *nkv_target_join(const char *old, const char *v)
{
	char *val;

	return asprintf(&val, "%s\n%s", old, v) < 0 ? NULL : val;
}

/* Option lo[i] = v into a (v "true" for a flag), its value kept for
 * --print-config. 0, or -EINVAL said why. */
static int nkv_target_apply(struct nkv_target_args *a, const struct option *lo, size_t i,
			    const char *v, const char *where)
{
	char *val;
	int rc = 0;

	if (lo[i].val == OPT_LISTEN)
		val = nkv_target_listen_val(a, a->vals[i], v);
	else if ((nkv_target_rule_opt(lo[i].val) || lo[i].val == OPT_EXEC_ALLOW) && a->vals[i])
		val = nkv_target_join(a->vals[i], v);	/* each a rule (a row): all kept */
	else
		val = strdup(v);
	free(a->vals[i]);
	a->vals[i] = val;
	if (!a->vals[i]) {
		fprintf(stderr, "nkv-target: out of memory\n");
		return -ENOMEM;
	}
	if (lo[i].val == OPT_BE_PARAM)
		nkv_target_be_param(a, lo[i].name, v);
	else
		rc = nkv_target_opt(lo[i].val, v, a);
	if (rc)
		nkv_target_bad_value(lo[i].val, v, where);
	return rc;
}

static int nkv_target_getopts(int argc, char **argv, const struct option *lo,
			      struct nkv_target_args *a)
{
	char where[96];
	int o, li = 0;

	optind = 0;	/* from the start, also when SIGHUP parses again */
	a->from_cli = 1;
	while ((o = getopt_long(argc, argv, "h", lo, &li)) != -1) {
		if (o == 'h') {
			nkv_target_usage(stdout);
			exit(0);
		}
		if (o == OPT_VERSION) {
			fputs(NKV_VERSION_LINE("nkv-target"), stdout);
			exit(0);
		}
		if (o == '?')
			return -EINVAL;
		snprintf(where, sizeof(where), "--%s", lo[li].name);
		if (nkv_target_apply(a, lo, (size_t)li, optarg ? optarg : "true", where))
			return -EINVAL;
	}
	if (optind < argc) {
		fprintf(stderr, "nkv-target: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

/* Keys a file may not hold: what only makes sense on a command line. */
static int nkv_target_cfg_only_cli(int val)
{
	return val == OPT_CONFIG || val == OPT_PRINT_CONFIG || val == OPT_VERSION || val == 'h';
}

/* One key of the file into a: 0, or -EINVAL said with its line. */
static int nkv_target_cfg_ent(struct nkv_target_args *a, const struct option *lo,
			      const struct nkv_cfg_ent *e)
{
	char where[NKV_TARGET_WHERE_MAX];
	size_t i;
	int b;

	for (i = 0; i < a->nvals && strcmp(lo[i].name, e->key); i++)
		;
	if (i == a->nvals || nkv_target_cfg_only_cli(lo[i].val)) {
		fprintf(stderr, "nkv-target: %s:%d: unknown key '%s' (the keys are nkv-target's "
			"long options, nkv-target --help)\n", a->config, e->line, e->key);
		return -EINVAL;
	}
	snprintf(where, sizeof(where), "%s:%d: key '%s'", a->config, e->line, e->key);
	if (lo[i].has_arg == no_argument) {
		b = nkv_cfg_bool(e->value);
		if (b < 0) {
			fprintf(stderr, "nkv-target: bad value '%s' for %s: want true or false\n",
				e->value, where);
			return -EINVAL;
		}
		return b ? nkv_target_apply(a, lo, i, "true", where) : 0;
	}
	return nkv_target_apply(a, lo, i, e->value, where);
}

/* --config FILE (or --config=FILE) on the command line, read before the
 * other options so that they win; NULL: none. */
static const char *nkv_target_cfg_path(int argc, char **argv)
{
	const char *path = NULL;
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--config") && i + 1 < argc)
			path = argv[++i];
		else if (!strncmp(argv[i], "--config=", 9))
			path = argv[i] + 9;
	}
	return path;
}

/* Read the file: 0, or -EINVAL said why (its line). */
static int nkv_target_cfg_load(struct nkv_target_args *a)
{
	/* --listen repeats; every other key is given once. */
	static const char *const repeatable[] = { "listen", "access", "access-default", "quota",
						   "exec-allow", NULL };
	char err[NKV_TARGET_WHERE_MAX];

	if (nkv_cfg_load(a->config, repeatable, &a->cfg, err, sizeof(err))) {
		fprintf(stderr, "nkv-target: %s\n", err);
		a->config_failed = 1;
		return -EINVAL;
	}
	return 0;
}

/* The file's keys into a, in file order. */
static int nkv_target_cfg_apply(struct nkv_target_args *a, const struct option *lo)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < a->cfg.n && !rc; i++)
		rc = nkv_target_cfg_ent(a, lo, &a->cfg.ent[i]);
	a->config_failed = rc != 0;
	return rc;
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

#define NKV_TARGET_NS_OPTS 16	/* backend options one --ns-map entry may give */

/* What the backends of --ns-map may point into (the parsed map, each
 * namespace's options), freed once they are gone (main). */
static void *nkv_target_kept[NKV_TGT_MAX_NS + 1];
static unsigned nkv_target_nkept;

static void nkv_target_keep(void *p)
{
	if (nkv_target_nkept < NKV_TGT_MAX_NS + 1)
		nkv_target_kept[nkv_target_nkept++] = p;
}

static void nkv_target_kept_free(void)
{
	while (nkv_target_nkept)
		free(nkv_target_kept[--nkv_target_nkept]);
}

/* One --ns-map entry. */
struct nkv_target_ns {
	uint32_t nsid;
	const char *name;
	int read_only;
	const char *backend;	/* :backend=TYPE; NULL: --backend */
	struct nkv_be_param params[NKV_TARGET_NS_OPTS];	/* :KEY=VALUE */
	size_t nparams;
};

/* One ":" suffix of an entry: ro, backend=TYPE or KEY=VALUE. 0 or -EINVAL. */
static int nkv_target_ns_suffix(char *suf, struct nkv_target_ns *ns)
{
	char *eq = strchr(suf, '=');

	if (!strcmp(suf, "ro")) {
		ns->read_only = 1;
		return 0;
	}
	if (!eq || eq == suf || !eq[1] || ns->nparams == NKV_TARGET_NS_OPTS)
		return -EINVAL;
	*eq = 0;
	if (!strcmp(suf, "backend"))
		ns->backend = eq + 1;
	else
		ns->params[ns->nparams++] = (struct nkv_be_param){ suf, eq + 1 };
	return 0;
}

/*
 * Parse "NSID=NAME[:ro][:backend=TYPE][:KEY=VALUE...]" (ent is cut at
 * each ':'); say why not. NAME, keys and values cannot hold ':' or ','.
 */
static int nkv_target_ns_entry(char *ent, struct nkv_target_ns *ns)
{
	char *eq = strchr(ent, '='), *end, *save = NULL, *suf;
	unsigned long nsid = strtoul(ent, &end, 10);

	memset(ns, 0, sizeof(*ns));
	if (!eq || end != eq || nsid < 1 || nsid > NKV_TGT_MAX_NS || !eq[1] || eq[1] == ':') {
		fprintf(stderr, "nkv-target: bad --ns-map entry '%s' (want NSID=NAME[:ro]"
			"[:backend=TYPE][:KEY=VALUE...], NSID 1..%d)\n", ent, NKV_TGT_MAX_NS);
		return -EINVAL;
	}
	ns->nsid = (uint32_t)nsid;
	ns->name = strtok_r(eq + 1, ":", &save);
	while ((suf = strtok_r(NULL, ":", &save)))
		if (nkv_target_ns_suffix(suf, ns)) {
			fprintf(stderr, "nkv-target: bad --ns-map entry for nsid %u: suffix '%s' is "
				"not ro, backend=TYPE or KEY=VALUE (at most %d options; NAME "
				"cannot hold a ':')\n", ns->nsid, suf, NKV_TARGET_NS_OPTS);
			return -EINVAL;
		}
	return 0;
}

/* Call fn for each --ns-map entry, in order; the first error ends it.
 * The parsed copy stays for the process's life when fn creates backends:
 * they may keep pointers to their names and option values. */
static int nkv_target_each_ns(const struct nkv_target_args *a, int keep,
			      int (*fn)(void *arg, const struct nkv_target_ns *ns), void *arg)
{
	char *map = strdup(a->ns_map ? a->ns_map : "1=gpukv"), *save = NULL, *ent;
	struct nkv_target_ns ns;
	int rc = map ? 0 : -ENOMEM;

	for (ent = map ? strtok_r(map, ",", &save) : NULL; ent && !rc;
	     ent = strtok_r(NULL, ",", &save)) {
		rc = nkv_target_ns_entry(ent, &ns);
		if (!rc)
			rc = fn(arg, &ns);
	}
	if (keep && !rc)
		nkv_target_keep(map);
	else
		free(map);
	return rc;
}

/* A backend option from the file that --backend does not take: named
 * with its line (the backend's own check then says what it takes). */
static void nkv_target_cfg_be_keys(const struct nkv_target_args *a)
{
	const struct nkv_be_type *t = nkv_be_type_find(a->backend);
	const struct nkv_be_optdesc *d;
	size_t i, k;

	for (i = 0; t && i < a->cfg.n; i++) {
		for (k = 0; k < a->nvals && strcmp(a->lo[k].name, a->cfg.ent[i].key); k++)
			;
		if (k == a->nvals || a->lo[k].val != OPT_BE_PARAM)
			continue;
		for (d = t->opts; d && d->name && strcmp(d->name, a->cfg.ent[i].key); d++)
			;
		if (!d || !d->name)
			fprintf(stderr, "nkv-target: %s:%d: key '%s' is not an option of the %s "
				"backend\n", a->config, a->cfg.ent[i].line, a->cfg.ent[i].key, t->name);
	}
}

/* The options namespace ns's backend gets: its own entry's alone when it
 * names another backend than --backend; else --backend's options with
 * the entry's replacing those of the same name. out holds a->nparams +
 * NKV_TARGET_NS_OPTS. */
static size_t nkv_target_ns_params(const struct nkv_target_args *a,
				   const struct nkv_target_ns *ns, struct nkv_be_param *out)
{
	size_t n = 0, i, j;

	if (!ns->backend || !strcmp(ns->backend, a->backend))
		for (i = 0; i < a->nparams; i++) {
			for (j = 0; j < ns->nparams && strcmp(ns->params[j].name, a->params[i].name); j++)
				;
			if (j == ns->nparams)
				out[n++] = a->params[i];
		}
	for (j = 0; j < ns->nparams; j++)
		out[n++] = ns->params[j];
	return n;
}

/* A namespace's backend conf: the common limits, its own options. */
static struct nkv_be_conf nkv_target_ns_conf(const struct nkv_target_args *a,
					     const struct nkv_target_ns *ns,
					     struct nkv_be_param *params)
{
	struct nkv_be_conf c = nkv_target_conf(a);

	c.ns_name = ns->name;
	c.nsid = ns->nsid;	/* nvmf forwards to the remote's same nsid */
	c.read_only = ns->read_only;
	c.params = params;
	c.nparams = nkv_target_ns_params(a, ns, params);
	return c;
}

/* Before anything starts: the entry's backend exists and takes its options. */
static int nkv_target_ns_check(void *arg, const struct nkv_target_ns *ns)
{
	const struct nkv_target_args *a = arg;
	const char *type = ns->backend ? ns->backend : a->backend;
	struct nkv_be_param *p = calloc(a->nparams + NKV_TARGET_NS_OPTS, sizeof(*p));
	struct nkv_be_conf c;
	char err[256];
	int rc;

	if (!p)
		return -ENOMEM;
	c = nkv_target_ns_conf(a, ns, p);
	/* An unknown --backend fails later, as creating a namespace. */
	rc = (ns->backend || nkv_be_type_find(type)) && nkv_be_conf_check(type, &c, err, sizeof(err));
	if (rc)
		fprintf(stderr, "nkv-target: --ns-map nsid %u: %s\n", ns->nsid, err);
	free(p);
	return rc ? -EINVAL : 0;
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
	if (a->rpc_socket && !strcmp(a->rpc_socket, a->socket)) {
		fprintf(stderr, "nkv-target: --rpc-socket must differ from --socket\n");
		return -EINVAL;
	}
	if (a->max_keys > UINT32_MAX) {
		fprintf(stderr, "nkv-target: --max-keys too large\n");
		return -EINVAL;
	}
	/* An unknown --backend fails later, as creating a namespace. */
	if (nkv_be_type_find(a->backend) && nkv_be_conf_check(a->backend, &c, err, sizeof(err))) {
		nkv_target_cfg_be_keys(a);
		fprintf(stderr, "nkv-target: %s\n", err);
		return -EINVAL;
	}
	return nkv_target_each_ns(a, 0, nkv_target_ns_check, (void *)a) ? -EINVAL : 0;
}

/* --print-config: nkv-target's own keys, then the backend options given. */
static void nkv_target_print_config(const struct nkv_target_args *a)
{
	size_t i, n = 0, nd = 0, cap = a->nvals + NKV_TARGET_MAX_TCP + 1 + 3 * NKV_TENANT_RULES *
								      NKV_TGT_MAX_NS + NKV_EXEC_MAX_ENTRIES;
	const char **keys = calloc(cap, sizeof(*keys));
	const char **vals = calloc(cap, sizeof(*vals));
	char *dup[5] = { NULL }, *save, *l;

	if (!keys || !vals) {
		fprintf(stderr, "nkv-target: out of memory\n");
		exit(NKV_EXIT_SETUP);
	}
	for (i = 0; i < a->nvals; i++) {
		if (nkv_target_cfg_only_cli(a->lo[i].val) ||
		    (a->lo[i].val == OPT_BE_PARAM && !a->vals[i]))
			continue;
		if ((a->lo[i].val != OPT_LISTEN && !nkv_target_rule_opt(a->lo[i].val) &&
		     a->lo[i].val != OPT_EXEC_ALLOW) ||
		    !a->vals[i] || nd == sizeof(dup) / sizeof(dup[0])) {
			keys[n] = a->lo[i].name;
			vals[n++] = a->vals[i];
			continue;
		}
		/* Repeatable: a line per listener, per rule, per allowlist row. */
		dup[nd] = strdup(a->vals[i]);
		for (l = dup[nd] ? strtok_r(dup[nd], "\n", &save) : NULL; l && n < cap;
		     l = strtok_r(NULL, "\n", &save)) {
			keys[n] = a->lo[i].name;
			vals[n++] = l;
		}
		nd++;
	}
	nkv_cfg_print(stdout, keys, vals, n);
	while (nd)
		free(dup[--nd]);
	free(keys);
	free(vals);
}

static void nkv_target_args_free(struct nkv_target_args *a)
{
	size_t i;

	for (i = 0; a->vals && i < a->nvals; i++)
		free(a->vals[i]);
	free(a->params);
	free(a->vals);
	free(a->lo);
	nkv_cfg_free(&a->cfg);
}

/* The file (--config), then the command line over it: 0, or -EINVAL /
 * -ENOMEM said why. */
static int nkv_target_parse(int argc, char **argv, struct nkv_target_args *a)
{
	int rc = 0;

	a->lo = nkv_target_longopts();
	a->config = nkv_target_cfg_path(argc, argv);
	if (a->lo && a->config)
		rc = nkv_target_cfg_load(a);
	for (a->nvals = 0; a->lo && a->lo[a->nvals].name; a->nvals++)
		;
	/* Each backend option takes an argument or a line: argc and the
	 * file's keys bound their number. */
	a->params = calloc((size_t)argc + a->cfg.n, sizeof(*a->params));
	a->vals = calloc(a->nvals + 1, sizeof(*a->vals));
	if (!a->lo || !a->params || !a->vals) {
		fprintf(stderr, "nkv-target: out of memory\n");
		return -ENOMEM;
	}
	if (!rc && a->config)
		rc = nkv_target_cfg_apply(a, a->lo);
	if (!rc)
		rc = nkv_target_getopts(argc, argv, a->lo, a);
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

/* The namespaces as the control socket sees them (--rpc-socket's
 * namespace_add appends), and what its methods reach: set up whether or
 * not it runs, for the stats line. */
static struct nkv_rpc_target nkv_target_rpc = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* One stats line per namespace: keys and bytes used, and the keys
 * --evict lru deleted to make room. */
static void nkv_target_stats(void)
{
	static struct nkv_rpc_ns ns[NKV_TGT_MAX_NS];
	unsigned i, n = nkv_rpc_ns_snapshot(&nkv_target_rpc, ns);

	for (i = 0; i < n; i++) {
		/* Held: namespace_remove may close it meanwhile (core/ns.h). */
		struct nkv_be *be = nkv_subsys_ns_hold(nkv_target_rpc.ss, ns[i].nsid);

		if (!be)
			continue;
		fprintf(stderr, "ts=%ld level=info event=stats nsid=%u backend=%s keys=%llu "
			"bytes=%llu evictions=%llu\n", (long)time(NULL), ns[i].nsid,
			be->ops->name, (unsigned long long)be->ops->keys_used(be),
			(unsigned long long)be->ops->bytes_used(be),
			(unsigned long long)(be->ops->evictions ? be->ops->evictions(be) : 0));
		nkv_subsys_ns_release(nkv_target_rpc.ss, ns[i].nsid);
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
	const struct nkv_target_args *a;
};

static int nkv_target_kv_ns(void *arg, const struct nkv_target_ns *ns)
{
	struct nkv_target_kv *k = arg;
	/* Kept with the map: a backend may keep pointers into its options. */
	struct nkv_be_param *p = calloc(k->a->nparams + NKV_TARGET_NS_OPTS, sizeof(*p));
	struct nkv_be_conf c;
	char what[160];

	if (!p)
		return -ENOMEM;
	nkv_target_keep(p);
	c = nkv_target_ns_conf(k->a, ns, p);
	snprintf(what, sizeof(what), "namespace %u (%s%s)", ns->nsid, ns->name,
		 ns->read_only ? ", read-only" : "");
	return nkv_target_add_ns(k->ss, ns->nsid, ns->backend ? ns->backend : k->a->backend,
				 &c, what);
}

/* One KV namespace per --ns-map entry, each on its own backend: the
 * entry's :backend=TYPE, else --backend. */
static int nkv_target_add_kv(struct nkv_subsys *ss, const struct nkv_target_args *a)
{
	struct nkv_target_kv k = { ss, a };

	return nkv_target_each_ns(a, 1, nkv_target_kv_ns, &k);
}

/* --access, --access-default, --quota into ss's tenants, in the order
 * given (file, then command line): 0, or -EINVAL said why. */
static int nkv_target_rules(struct nkv_subsys *ss, const struct nkv_target_args *a)
{
	char err[160], *dup, *save, *l;
	size_t i;
	int rc = 0;

	for (i = 0; i < a->nvals && !rc; i++) {
		if (!nkv_target_rule_opt(a->lo[i].val) || !a->vals[i])
			continue;
		dup = strdup(a->vals[i]);
		rc = dup ? 0 : -ENOMEM;
		for (l = dup ? strtok_r(dup, "\n", &save) : NULL; l && !rc;
		     l = strtok_r(NULL, "\n", &save)) {
			rc = nkv_tenant_opt(nkv_subsys_tenants(ss), a->lo[i].name, l, err, sizeof(err));
			if (rc)
				fprintf(stderr, "nkv-target: --%s '%s': %s\n", a->lo[i].name, l, err);
		}
		free(dup);
	}
	return rc;
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
	    (a->nvm_ns && nkv_target_add_ns(ss, 2, "mem", &nvm, "NVM namespace 2")) ||
	    nkv_target_rules(ss, a)) {
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

/* The namespaces served from the start, and namespace_add's defaults:
 * the target's own options. */
static void nkv_target_rpc_init(const struct nkv_target_args *a, struct nkv_subsys *ss)
{
	struct nkv_rpc_target *t = &nkv_target_rpc;
	unsigned i;

	t->ss = ss;
	t->backend = a->backend;
	t->capacity = a->capacity;
	t->max_value = (uint32_t)a->max_value;
	t->max_keys = (uint32_t)a->max_keys;
	for (i = 0; i < nkv_target_nns; i++) {
		t->ns[i].nsid = nkv_target_nss[i].nsid;
		t->ns[i].be = nkv_target_nss[i].be;
		memcpy(t->ns[i].name, nkv_target_nss[i].name, sizeof(t->ns[i].name));
	}
	t->nns = nkv_target_nns;
}

/* The control socket's PATH.lock, taken beside --socket's, before a
 * backend opens (NULL without --rpc-socket). 0, or said why. */
static int nkv_target_rpc_lock(const struct nkv_target_args *a, struct nkv_rpc_lock **out)
{
	char comm[64];
	pid_t holder;
	int rc = a->rpc_socket ? nkv_rpc_lock_take(a->rpc_socket, out, &holder) : 0;

	if (rc == -EADDRINUSE) {
		nkv_lock_holder_name(holder, comm, sizeof(comm));
		fprintf(stderr, "nkv-target: %s is served by another target: PID %d (%s) holds "
			"%s.lock; stop it, or give another --rpc-socket\n", a->rpc_socket,
			(int)holder, holder ? comm : "unknown", a->rpc_socket);
	} else if (rc) {
		fprintf(stderr, "nkv-target: cannot lock %s.lock: %s\n", a->rpc_socket,
			strerror(-rc));
	}
	return rc;
}

/*
 * The control socket (--rpc-socket): its methods see the vfio-user and
 * NVMe/TCP servers (either may be NULL), the subsystem and the
 * namespaces. Started once the listeners serve, stopped before them;
 * handed lock (its from here on). 0 (none asked, or started), or a
 * negative errno, said why.
 */
static int nkv_target_rpc_start(const struct nkv_target_args *a, struct nkv_vfu_server *srv,
				struct nkv_tcp_server *tcp, struct nkv_rpc_lock *lock,
				struct nkv_rpc_server **out)
{
	struct nkv_rpc_server_opts ro = { .size = sizeof(ro), .path = a->rpc_socket,
					  .mode = a->rpc_mode, .ctx = &nkv_target_rpc, .lock = lock };
	uint64_t need = NKV_TGT_FDS_BASE + NKV_RPC_MAX_CONNS +
			(a->max_conns ? a->max_conns : 16) * NKV_TGT_FDS_PER_CONN, have;
	pid_t holder;
	int rc;

	*out = NULL;
	if (!a->rpc_socket)
		return 0;
	nkv_target_rpc.vfu = srv;	/* before the server thread starts */
	nkv_target_rpc.tcp = tcp;
	/* Every connection cap's descriptors, within the hard limit. */
	have = nkv_rpc_raise_nofile(need);
	if (have < need)
		fprintf(stderr, "ts=%ld level=warn event=nofile_low need=%llu have=%llu\n",
			(long)time(NULL), (unsigned long long)need, (unsigned long long)have);
	rc = nkv_rpc_target_register();
	if (rc)
		nkv_rpc_lock_release(lock);
	else
		rc = nkv_rpc_server_start(&ro, out, &holder);
	if (rc == -ENOTSOCK) {
		fprintf(stderr, "nkv-target: %s exists and is not a socket: not replaced; remove "
			"it, or give another --rpc-socket\n", a->rpc_socket);
	} else if (rc) {
		fprintf(stderr, "nkv-target: cannot serve --rpc-socket %s: %s\n", a->rpc_socket,
			strerror(-rc));
	}
	return rc;
}

/* Every option as it is before the file and the command line. */
static void nkv_target_defaults(struct nkv_target_args *a)
{
	*a = (struct nkv_target_args){
		.socket = "nkv-target.sock", .backend = "mem", .capacity = 1ull << 30,
		.max_value = NKV_TGT_DEF_MAX_VALUE, .log_level = NKV_VFU_LOG_INFO,
		.dstrd = NKV_TGT_DSTRD_LINE,
	};
	/* The debug trace switch the host library reads too. */
	a->trace = getenv("NKV_TRACE") && atoi(getenv("NKV_TRACE")) > 0;
}

/* The command line, parsed again over the file at SIGHUP. */
static int nkv_target_argc;
static char **nkv_target_argv;

/*
 * The metrics endpoint (--metrics), bound before any backend opens, so a
 * port another program holds fails fast, like a socket's lock. Its
 * series are registered once the vfio-user server serves
 * (nkv_target_metrics_collect); a scrape before that sees fewer. 0
 * (none asked, or listening), or a negative errno, said why.
 */
static int nkv_target_metrics_listen(const struct nkv_target_args *a,
				     struct nkv_metrics_server **out)
{
	uint16_t port;
	int rc;

	*out = NULL;
	if (!a->metrics)
		return 0;
	/* Counting from before the first client can connect. */
	nkv_tgt_metrics_enable();
	rc = nkv_metrics_server_start(a->metrics, out, &port);
	if (rc) {
		fprintf(stderr, "nkv-target: cannot serve --metrics %s: %s\n", a->metrics,
			strerror(-rc));
		return rc;
	}
	/* Port 0 picks one: the line says which, for whoever scrapes it. */
	fprintf(stderr, "ts=%ld level=info event=metrics_listening addr=%s port=%u path=/metrics\n",
		(long)time(NULL), a->metrics, port);
	return 0;
}

/* The namespaces', the vfio-user server's and the process's series (the
 * server's counters are read: after it starts, before it stops). */
static int nkv_target_metrics_collect(struct nkv_metrics_server *met, struct nkv_vfu_server *srv,
				      struct nkv_tcp_server *tcp)
{
	int rc = met ? nkv_metrics_target_register(&nkv_target_rpc, srv, tcp) : 0;

	if (rc)
		fprintf(stderr, "nkv-target: cannot register the metrics: %s\n", strerror(-rc));
	return rc;
}

/* Keys SIGHUP applies to a running target (the RPC target_set and
 * log_level_set change the same); every other needs a restart. */
static int nkv_target_live_key(int val)
{
	return val == OPT_LOG || val == OPT_HANDSHAKE_MS || val == OPT_IDLE_MS ||
	       val == OPT_MSG_MS || val == OPT_MAX_CONNS || val == OPT_POLL ||
	       val == OPT_EXEC_ALLOW;
}

/* Option val's bit in a mask of changed keys. */
#define NKV_TARGET_BIT(val) (1ull << ((val) - OPT_SOCKET))

/* n's live options that the file changed (mask) into the server and the
 * backends' log; the others stay as they run, so a value set through the
 * control socket survives a reload that does not touch its key. */
static void nkv_target_apply_live(const struct nkv_target_args *n, uint64_t mask,
				  struct nkv_vfu_server *srv)
{
	struct nkv_vfu_server_live l;

	if (!srv) {	/* tcp: listeners only: the log level is all that lives */
		if (mask & NKV_TARGET_BIT(OPT_LOG))
			nkv_be_log_set(n->log_level, NULL, NULL);
		return;
	}
	nkv_vfu_server_live_get(srv, &l);
	if (mask & NKV_TARGET_BIT(OPT_LOG))
		l.log_level = n->log_level;
	if (mask & NKV_TARGET_BIT(OPT_HANDSHAKE_MS))
		l.handshake_ms = (uint32_t)n->handshake_ms;	/* 0: the server's default */
	if (mask & NKV_TARGET_BIT(OPT_IDLE_MS))
		l.idle_ms = (uint32_t)n->idle_ms;
	if (mask & NKV_TARGET_BIT(OPT_MSG_MS))
		l.msg_ms = (uint32_t)n->msg_ms;
	if (mask & NKV_TARGET_BIT(OPT_MAX_CONNS))
		l.max_conns = (int)n->max_conns;
	if (mask & NKV_TARGET_BIT(OPT_POLL))
		l.poll_interval_ns = n->poll_ns;
	nkv_rpc_raise_nofile(NKV_TGT_FDS_BASE + NKV_RPC_MAX_CONNS +
			     (uint64_t)(l.max_conns > 0 ? l.max_conns : 16) * NKV_TGT_FDS_PER_CONN);
	nkv_vfu_server_live_set(srv, &l);
	if (mask & NKV_TARGET_BIT(OPT_LOG))
		nkv_be_log_set(n->log_level, NULL, NULL);
}

/* v with its line breaks as "; " into buf (cut to len), for a log line. */
static const char *nkv_target_one_line(const char *v, char *buf, size_t len)
{
	size_t o = 0;

	for (; *v && o + 3 < len; v++) {
		if (*v == '\n') {
			buf[o++] = ';';
			buf[o++] = ' ';
		} else {
			buf[o++] = *v;
		}
	}
	buf[o] = 0;
	return buf;
}

/* Each key n changes from a: logged, and a's value replaced where it
 * changes live (its bit set in *live). How many changed. */
static unsigned nkv_target_diff(struct nkv_target_args *a, struct nkv_target_args *n,
				uint64_t *live_mask)
{
	char w1[512], w2[512];
	unsigned changed = 0;
	size_t i;

	for (i = 0; i < a->nvals; i++) {
		const char *was = a->vals[i] ? a->vals[i] : "(default)";
		const char *now = n->vals[i] ? n->vals[i] : "(default)";
		int live = nkv_target_live_key(a->lo[i].val);

		if (!strcmp(was, now) || nkv_target_cfg_only_cli(a->lo[i].val))
			continue;
		changed++;
		/* A repeatable key's lines (--listen, the rules) as one: "a; b". */
		fprintf(stderr, "ts=%ld level=%s event=reload key=%s was=%s now=%s applied=%s\n",
			(long)time(NULL), live ? "info" : "warn", a->lo[i].name,
			nkv_target_one_line(was, w1, sizeof(w1)), nkv_target_one_line(now, w2, sizeof(w2)),
			live ? "live" : "needs_restart");
		if (live) {
			char *t = a->vals[i];

			*live_mask |= NKV_TARGET_BIT(a->lo[i].val);
			a->vals[i] = n->vals[i];
			n->vals[i] = t;
		}
	}
	return changed;
}

/* SIGHUP: read the file again (the command line still wins), apply what
 * changes live, name what needs a restart. A bad file changes nothing. */
static void nkv_target_reload(struct nkv_target_args *a, struct nkv_vfu_server *srv)
{
	struct nkv_target_args n;
	uint64_t mask = 0;
	unsigned changed;

	if (!a->config) {
		fprintf(stderr, "ts=%ld level=warn event=reload result=skipped reason=no_config "
			"(SIGHUP re-reads --config FILE)\n", (long)time(NULL));
		return;
	}
	nkv_sd_notify("RELOADING=1");
	nkv_target_defaults(&n);
	if (nkv_target_parse(nkv_target_argc, nkv_target_argv, &n)) {
		fprintf(stderr, "ts=%ld level=error event=reload result=failed config=%s "
			"(nothing changed; the line above says why)\n", (long)time(NULL), a->config);
	} else {
		changed = nkv_target_diff(a, &n, &mask);
		nkv_target_apply_live(&n, mask, srv);
		/* diff swapped the kept values: n holds the old rows, a the new. */
		if (mask & NKV_TARGET_BIT(OPT_EXEC_ALLOW))
			nkv_target_exec_sync(nkv_target_val(&n, OPT_EXEC_ALLOW),
					     nkv_target_val(a, OPT_EXEC_ALLOW));
		fprintf(stderr, "ts=%ld level=info event=reload result=ok config=%s changed=%u\n",
			(long)time(NULL), a->config, changed);
	}
	nkv_target_args_free(&n);
	nkv_sd_notify("READY=1");
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
	return a->socket_src != NKV_TARGET_SRC_NONE || !a->ntcp;
}

/* Serve until SIGINT or SIGTERM: the exit status. */
static int nkv_target_serve(struct nkv_target_args *a)
{
	struct nkv_vfu_server_opts so = { .size = sizeof(so) };
	struct nkv_vfu_server *srv = NULL;
	struct nkv_tcp_server *tcp = NULL;
	struct nkv_rpc_server *rpc = NULL;
	struct nkv_metrics_server *met;
	struct nkv_rpc_lock *rpc_lock = NULL;
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
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	/* Backends log their own events (a cluster lost) at the same level. */
	nkv_be_log_set(a->log_level, NULL, NULL);
	if (nkv_target_wants_vfu(a) && !(lock = nkv_target_lock(a->socket)))
		return NKV_EXIT_SETUP;
	if (nkv_target_rpc_lock(a, &rpc_lock)) {
		nkv_vfu_lock_release(lock);
		return NKV_EXIT_SETUP;
	}
	if (nkv_target_metrics_listen(a, &met)) {
		nkv_vfu_lock_release(lock);
		nkv_rpc_lock_release(rpc_lock);
		return NKV_EXIT_SETUP;
	}
	ss = nkv_target_subsys(a);
	if (!ss) {
		nkv_metrics_server_stop(met);
		nkv_vfu_lock_release(lock);
		nkv_rpc_lock_release(rpc_lock);
		return NKV_EXIT_SETUP;
	}
	nkv_target_print_ns(a);
	nkv_target_rpc_init(a, ss);
	/* Exec's workers before any listener: a client's first Identify
	 * already sees Exec offered. */
	rc = nkv_exec_start((unsigned)a->exec_workers);
	if (rc)
		fprintf(stderr, "ts=%ld level=warn event=exec_unavailable rc=%d\n", (long)time(NULL),
			rc);
	nkv_target_exec_sync(NULL, nkv_target_val(a, OPT_EXEC_ALLOW));
	if (a->ntcp && !(tcp = nkv_target_tcp(a, ss))) {
		nkv_metrics_server_stop(met);
		nkv_vfu_lock_release(lock);
		nkv_rpc_lock_release(rpc_lock);
		nkv_subsys_destroy(ss);
		return NKV_EXIT_SETUP;
	}
	if (lock) {
		nkv_target_vfu_opts(a, ss, lock, &so);
		rc = nkv_vfu_server_start(&so, &srv);
		if (rc) {
			nkv_target_listen_failed(a->socket, rc);
			nkv_metrics_server_stop(met);
			nkv_rpc_lock_release(rpc_lock);
			nkv_tcp_server_stop(tcp);
			nkv_subsys_destroy(ss);
			return NKV_EXIT_SETUP;
		}
	}
	if (nkv_target_rpc_start(a, srv, tcp, rpc_lock, &rpc) ||
	    nkv_target_metrics_collect(met, srv, tcp)) {
		nkv_metrics_server_stop(met);
		nkv_rpc_server_stop(rpc);
		if (srv)
			nkv_vfu_server_stop(srv);
		nkv_tcp_server_stop(tcp);
		nkv_subsys_destroy(ss);
		return NKV_EXIT_SETUP;
	}
	/* Every namespace is up and every listener listens. */
	nkv_sd_notify("READY=1");
	while (!sigwait(&set, &sig) && (sig == SIGUSR1 || sig == SIGHUP)) {
		if (sig == SIGUSR1)
			nkv_target_stats();
		else
			nkv_target_reload(a, srv);
	}
	nkv_sd_notify("STOPPING=1");
	fprintf(stderr, "ts=%ld level=info event=signal sig=%s action=shutdown\n",
		(long)time(NULL), sig == SIGINT ? "SIGINT" : "SIGTERM");
	nkv_metrics_server_stop(met);	/* its collectors read the others */
	nkv_rpc_server_stop(rpc);	/* its methods use the server */
	if (srv)
		nkv_vfu_server_stop(srv);
	nkv_tcp_server_stop(tcp);
	nkv_exec_stop();	/* after the servers: no Exec is in flight */
	nkv_target_stats();
	nkv_subsys_destroy(ss);
	nkv_rpc_target_free(&nkv_target_rpc);
	return 0;
}

int main(int argc, char **argv)
{
	struct nkv_target_args a;
	int rc;

	nkv_target_defaults(&a);
	nkv_target_argc = argc;
	nkv_target_argv = argv;
	if (nkv_target_parse(argc, argv, &a)) {
		if (!a.config_failed)
			nkv_target_usage(stderr);
		rc = NKV_EXIT_USAGE;
	} else if (a.print_config) {
		nkv_target_print_config(&a);
		rc = 0;
	} else {
		rc = nkv_target_serve(&a);
	}
	nkv_target_kept_free();
	nkv_target_args_free(&a);
	return rc;
}
