/* SPDX-License-Identifier: MIT */
/*
 * tcp_local.c - the tcp: transport: "tcp:HOST:PORT[/NQN]" runs a local
 * controller (libnkv-tcp.so, src/host/tcp_plugin.h) whose backend
 * forwards to the remote NVMe/TCP controller, and connects to it over
 * vfio-user. Rings, value slots and doorbells stay in this process's
 * memory, so the sync API, the cpu engine's waves and device code work
 * as on any local controller; only the commands' keys and values cross
 * the network (docs/tcp.md, "nkv as an NVMe/TCP host").
 *
 * Every op but open and close is vfio-user's, on the inner connection.
 */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/host.h"
#include "host/tcp_plugin.h"

struct nkv_tcp_tr {
	struct nkv_tr *inner;		/* vfio-user's, to the local controller */
	void *dl;
	void *local;			/* the plugin's */
	nkv_tcp_plugin_stop_fn stop;
	char desc[256];
};

#define NKV_TCP_INNER(tr) (((struct nkv_tcp_tr *)(void *)(tr))->inner)

/* The directory of the object libnkv is in: the shared library, or the
 * program that linked libnkv.a (dladdr names the main program "", so
 * /proc/self/exe then). 0 or -1. */
static int nkv_tcp_libdir(char *dir, size_t len)
{
	Dl_info di;
	ssize_t n;
	char *d;

	if (dladdr((void *)&nkv_transport_tcp, &di) && di.dli_fname && strchr(di.dli_fname, '/')) {
		snprintf(dir, len, "%s", di.dli_fname);
	} else {
		n = readlink("/proc/self/exe", dir, len - 1);
		if (n <= 0)
			return -1;
		dir[n] = 0;
	}
	d = dirname(dir);	/* in place, or "." */
	memmove(dir, d, strlen(d) + 1);
	return 0;
}

/* The plugin: $NKV_TCP_PLUGIN, else beside the object libnkv is in (or
 * ../lib/ of it: a program in BUILD/tests/ linking libnkv.a), else by
 * the loader's search path (an installed libnkv). */
static void *nkv_tcp_dlopen(char *err, size_t errlen)
{
	static const char *const rel[] = { "/", "/../lib/" };
	const char *env = getenv("NKV_TCP_PLUGIN");
	char dir[PATH_MAX], path[PATH_MAX + 64];
	void *dl = NULL;
	size_t i;

	if (env && *env)
		dl = dlopen(env, RTLD_NOW | RTLD_LOCAL);
	for (i = 0; !dl && !(env && *env) && !nkv_tcp_libdir(dir, sizeof(dir)) && i < 2; i++) {
		snprintf(path, sizeof(path), "%s%s" NKV_TCP_PLUGIN_NAME, dir, rel[i]);
		dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	}
	if (!dl && !(env && *env))
		dl = dlopen(NKV_TCP_PLUGIN_NAME, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		nkv_h_err(err, errlen, "tcp: cannot load %s (set NKV_TCP_PLUGIN to its path): %s",
			  env && *env ? env : NKV_TCP_PLUGIN_NAME, dlerror());
	return dl;
}

static void nkv_tcp_close(struct nkv_tr *tr)
{
	struct nkv_tcp_tr *t = (struct nkv_tcp_tr *)(void *)tr;

	if (!t)
		return;
	if (t->inner)
		nkv_transport_vfio_user.close(t->inner);
	if (t->local)
		t->stop(t->local);
	/* The plugin stays loaded: its threads are gone, but a library it
	 * pulled in (librados) may keep state that dlclose would unmap. */
	free(t);
}

static void nkv_tcp_log(const char *line)
{
	nkv_h_log("tcp: %s", line);
}

static int nkv_tcp_open(const char *addr, struct nkv_tr **out, char *err, size_t errlen)
{
	struct nkv_tcp_tr *t = calloc(1, sizeof(*t));
	nkv_tcp_plugin_start_fn start;
	char uri[512], vfu[256];
	int rc;

	if (!t)
		return -ENOMEM;
	snprintf(uri, sizeof(uri), "tcp:%s", addr);
	t->dl = nkv_tcp_dlopen(err, errlen);
	start = t->dl ? (nkv_tcp_plugin_start_fn)dlsym(t->dl, NKV_TCP_PLUGIN_START) : NULL;
	t->stop = t->dl ? (nkv_tcp_plugin_stop_fn)dlsym(t->dl, NKV_TCP_PLUGIN_STOP) : NULL;
	if (!start || !t->stop) {
		if (t->dl)
			nkv_h_err(err, errlen, "tcp: %s lacks its entry points", NKV_TCP_PLUGIN_NAME);
		free(t);
		return -ENOENT;
	}
	rc = start(uri, nkv_tcp_log, &t->local, vfu, sizeof(vfu), t->desc, sizeof(t->desc), err, errlen);
	if (!rc)
		rc = nkv_transport_vfio_user.open(vfu + strlen("vfio-user:"), &t->inner, err,
						  errlen);
	if (rc) {
		nkv_tcp_close((struct nkv_tr *)(void *)t);
		return rc;
	}
	*out = (struct nkv_tr *)(void *)t;
	return 0;
}

static int nkv_tcp_reg_read(struct nkv_tr *tr, uint32_t off, unsigned size, uint64_t *val)
{
	return nkv_transport_vfio_user.reg_read(NKV_TCP_INNER(tr), off, size, val);
}

static int nkv_tcp_reg_write(struct nkv_tr *tr, uint32_t off, uint64_t val, unsigned size)
{
	return nkv_transport_vfio_user.reg_write(NKV_TCP_INNER(tr), off, val, size);
}

static volatile uint32_t *nkv_tcp_doorbells(struct nkv_tr *tr, size_t *len)
{
	return nkv_transport_vfio_user.doorbells(NKV_TCP_INNER(tr), len);
}

static int nkv_tcp_dma_map(struct nkv_tr *tr, struct nkv_dmamem *m)
{
	return nkv_transport_vfio_user.dma_map(NKV_TCP_INNER(tr), m);
}

static int nkv_tcp_dma_unmap(struct nkv_tr *tr, struct nkv_dmamem *m)
{
	return nkv_transport_vfio_user.dma_unmap(NKV_TCP_INNER(tr), m);
}

static int nkv_tcp_alive(struct nkv_tr *tr)
{
	return nkv_transport_vfio_user.alive(NKV_TCP_INNER(tr));
}

const char *nkv_h_tcp_desc(const struct nkv_tr *tr)
{
	return ((const struct nkv_tcp_tr *)(const void *)tr)->desc;
}

const struct nkv_transport_ops nkv_transport_tcp = {
	.name = "tcp",
	.open = nkv_tcp_open,
	.close = nkv_tcp_close,
	.reg_read = nkv_tcp_reg_read,
	.reg_write = nkv_tcp_reg_write,
	.doorbells = nkv_tcp_doorbells,
	.dma_map = nkv_tcp_dma_map,
	.dma_unmap = nkv_tcp_dma_unmap,
	.alive = nkv_tcp_alive,
};
