/* SPDX-License-Identifier: MIT */
/*
 * embed.h - nkv-target embedded in another program: a subsystem whose
 * namespaces are backends of the registry (backends/registry.h), served by
 * the vfio-user server (vfio-user/server.h) from threads of the caller's
 * process on a Unix socket. nkv-bench's quick start, the tests and the
 * fuzzers run the target this way, so none of them wires one by hand.
 *
 * Threading: start and stop from one thread; the accessors from any
 * thread between them.
 */
#ifndef NKV_TGT_EMBED_H
#define NKV_TGT_EMBED_H

#include <stddef.h>
#include <stdint.h>

#include "target/backends/registry.h"
#include "target/core/ctrl.h"
#include "target/vfio-user/server.h"

/* One namespace: a backend of the registry and what it is asked for. */
struct nkv_tgt_embed_ns {
	const char *backend;		/* registry name; NULL: "mem" */
	/* conf.size 0 is taken as sizeof; a KV namespace's max_value 0 is
	 * NKV_TGT_DEF_MAX_VALUE (64 MiB), as nkv-target's --max-value; the
	 * other zero fields take the backend's defaults */
	struct nkv_be_conf conf;
};

/*
 * Replaces namespace nsid's backend before the subsystem takes it: a
 * program's own wrapper (a test's backend that delays or lies). It owns
 * be from the call on; returns the backend to attach, or NULL (be freed)
 * when out of memory.
 */
typedef struct nkv_be *(*nkv_tgt_embed_wrap_fn)(void *arg, uint32_t nsid,
						struct nkv_be *be);

struct nkv_tgt_embed_opts {
	size_t size;			/* sizeof(struct nkv_tgt_embed_opts) */
	const char *model;		/* Identify MN; NULL: "nkv-target" */
	/* ns[i] is namespace i + 1. nns 0: namespace 1 alone, a KV one of
	 * the mem backend with the defaults above. */
	const struct nkv_tgt_embed_ns *ns;
	uint32_t nns;
	nkv_tgt_embed_wrap_fn wrap;	/* NULL: backends as created */
	void *wrap_arg;
	/* The private directory (server.socket_path NULL) is
	 * /tmp/<dir_name>-XXXXXX; NULL: "nkv-target". */
	const char *dir_name;
	/*
	 * The server's options, controller options (server.ctrl) included,
	 * as nkv_vfu_server_start takes them, except: server.ss is the
	 * embedded subsystem (what is set here is ignored), and a NULL
	 * server.socket_path is nkv.sock in a fresh private directory under
	 * /tmp, which stop removes. Its path's lock (server.h) is taken as
	 * nkv-target takes it: a path another target serves fails start
	 * with -EADDRINUSE, err naming the holder's PID.
	 */
	struct nkv_vfu_server_opts server;
};

struct nkv_tgt_embed;

/*
 * The subsystem of opts alone, with no server (a program that serves it
 * itself: nkv_vfu_serve_fd, a test driving a controller). NULL with errno
 * set and a one-line reason in err. The caller destroys it
 * (nkv_subsys_destroy).
 */
struct nkv_subsys *nkv_tgt_embed_subsys(const struct nkv_tgt_embed_opts *opts,
					char *err, size_t errlen);
/*
 * Build the subsystem and start serving it. 0, or a negative errno with
 * a one-line reason in err (a backend refused its options, no private
 * directory, the socket cannot be bound).
 */
int nkv_tgt_embed_start(const struct nkv_tgt_embed_opts *opts, struct nkv_tgt_embed **out,
			char *err, size_t errlen);
/* "vfio-user:" and the socket's path: what a client connects to. */
const char *nkv_tgt_embed_uri(const struct nkv_tgt_embed *t);
const char *nkv_tgt_embed_socket(const struct nkv_tgt_embed *t);
/* The running server (statistics: nkv_vfu_server_stats). */
struct nkv_vfu_server *nkv_tgt_embed_server(struct nkv_tgt_embed *t);
/* The served subsystem: namespaces attached and removed live (ns.h). */
struct nkv_subsys *nkv_tgt_embed_ss(struct nkv_tgt_embed *t);
/* Stop serving (every connection closed), destroy the subsystem, remove
 * the socket and a private directory; free. NULL is a no-op. */
void nkv_tgt_embed_stop(struct nkv_tgt_embed *t);

#endif /* NKV_TGT_EMBED_H */
