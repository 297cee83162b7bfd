/* SPDX-License-Identifier: MIT */
/*
 * tcp_plugin.c - libnkv-tcp.so (src/host/tcp_plugin.h): the embedded
 * target (embed.h) with one KV namespace on the nvmf backend, for
 * libnkv's tcp: URIs.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "host/tcp_plugin.h"
#include "target/embed.h"
#include "target/exec/exec.h"

int nkv_tcp_plugin_start(const char *uri, nkv_tcp_plugin_log_fn log, void **h, char *vfu,
			 size_t vlen, char *desc, size_t dlen, char *err, size_t errlen);
void nkv_tcp_plugin_stop(void *h);

/* The backend, kept to describe it (the embed hook sees it first). */
static struct nkv_be *nkv_tcp_plugin_keep(void *arg, uint32_t nsid, struct nkv_be *be)
{
	(void)nsid;
	*(struct nkv_be **)arg = be;
	return be;
}

/* "remote=tcp:H:P/NQN remote_nsid=1 ..." -> "tcp: H:P nqn NQN, via a
 * local controller". */
static void nkv_tcp_plugin_desc(struct nkv_be *be, char *desc, size_t dlen)
{
	char own[512] = "", *r, *sp, *slash;

	be->ops->describe(be, own, sizeof(own));
	r = strstr(own, "remote=tcp:");
	if (!r) {
		snprintf(desc, dlen, "tcp: via a local controller");
		return;
	}
	r += strlen("remote=tcp:");
	sp = strchr(r, ' ');
	if (sp)
		*sp = 0;
	slash = strchr(r, '/');
	if (slash)
		*slash++ = 0;
	snprintf(desc, dlen, "tcp: %s nqn %s, via a local controller", r, slash ? slash : "?");
}

/* Backend lines to the library's log (the plugin's own copy of the
 * core has its own process-wide log setting, which only it uses). */
static void nkv_tcp_plugin_line(void *ctx, int level, const char *line)
{
	(void)level;
	((nkv_tcp_plugin_log_fn)ctx)(line);
}

int nkv_tcp_plugin_start(const char *uri, nkv_tcp_plugin_log_fn log, void **h, char *vfu,
			 size_t vlen, char *desc, size_t dlen, char *err, size_t errlen)
{
	struct nkv_be_param p = { "remote", uri };
	struct nkv_tgt_embed_ns ns = { .backend = "nvmf" };
	struct nkv_tgt_embed_opts o = { .size = sizeof(o) };
	struct nkv_tgt_embed *t;
	struct nkv_be *be = NULL;
	int rc;

	ns.conf.size = sizeof(ns.conf);
	ns.conf.params = &p;
	ns.conf.nparams = 1;
	o.ns = &ns;
	o.nns = 1;
	o.wrap = nkv_tcp_plugin_keep;
	o.wrap_arg = &be;
	o.dir_name = "nkv-tcp";
	o.server.size = sizeof(o.server);
	/* The idle sleep of nkv-bench's embedded target, not the server's
	 * 100 us: every forwarded command waits on this poll twice (the
	 * doorbell, then the backend's completion), which at 100 us was
	 * most of the front's added latency. */
	o.server.poll_interval_ns = 1000;
	/* A library never prints on its own: lines go to its log callback. */
	nkv_be_log_set(NKV_BE_LOG_WARN, nkv_tcp_plugin_line, (void *)log);
	rc = nkv_tgt_embed_start(&o, &t, err, errlen);
	if (rc)
		return rc;
	/* No Exec room of this front's own: its allowlist would be empty
	 * while the modules and their allowlist are the remote's, so every
	 * Exec is forwarded to the remote (the nvmf backend's exec_fwd,
	 * where the remote offers it). Its copy of the core is its own
	 * (-Bsymbolic): no other target in the process loses Exec. */
	nkv_exec_stop();
	snprintf(vfu, vlen, "%s", nkv_tgt_embed_uri(t));
	nkv_tcp_plugin_desc(be, desc, dlen);
	*h = t;
	return 0;
}

void nkv_tcp_plugin_stop(void *h)
{
	nkv_tgt_embed_stop(h);
}
