/* SPDX-License-Identifier: MIT */
/* embed.c - see embed.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/un.h>

#include "target/core/pidlock.h"
#include "target/exec/exec.h"
#include "target/embed.h"

struct nkv_tgt_embed {
	char dir[64];			/* the private directory, or "" */
	char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char uri[sizeof("vfio-user:") + sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct nkv_subsys *ss;
	struct nkv_vfu_server *srv;
};

/* Namespace nsid's backend, wrapped as asked. */
static struct nkv_be *nkv_tgt_embed_be(const struct nkv_tgt_embed_opts *o, uint32_t nsid,
				       const struct nkv_tgt_embed_ns *ns, char *err,
				       size_t errlen)
{
	struct nkv_be_conf conf = ns->conf;
	const char *name = ns->backend ? ns->backend : "mem";
	struct nkv_be *be;

	if (!conf.size)
		conf.size = sizeof(conf);
	conf.nsid = nsid;
	/* nkv-target's default, not the backend's own (embed.h). */
	if (!conf.nvm && !conf.max_value)
		conf.max_value = NKV_TGT_DEF_MAX_VALUE;
	errno = 0;
	be = nkv_be_create(name, &conf, err, errlen);
	if (!be) {
		/* The registry says why in err; errno only sometimes. */
		errno = errno ? errno : EINVAL;
		return NULL;
	}
	if (o->wrap && !(be = o->wrap(o->wrap_arg, nsid, be))) {
		snprintf(err, errlen, "namespace %u: no memory to wrap its %s backend", nsid, name);
		errno = ENOMEM;
	}
	return be;
}

struct nkv_subsys *nkv_tgt_embed_subsys(const struct nkv_tgt_embed_opts *o, char *err,
					size_t errlen)
{
	static const struct nkv_tgt_embed_ns mem_kv = { .backend = "mem" };
	struct nkv_subsys_opts so = { .size = sizeof(so), .model = o->model };
	uint32_t nns = o->nns ? o->nns : 1, i;
	struct nkv_subsys *ss;
	int rc;

	if (nns > NKV_TGT_MAX_NS) {
		snprintf(err, errlen, "%u namespaces: at most %u", nns, NKV_TGT_MAX_NS);
		errno = EINVAL;
		return NULL;
	}
	ss = nkv_subsys_create(&so);
	if (!ss) {
		snprintf(err, errlen, "no memory for the subsystem");
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < nns; i++) {
		struct nkv_be *be = nkv_tgt_embed_be(o, i + 1, o->nns ? &o->ns[i] : &mem_kv,
						     err, errlen);

		rc = be ? nkv_subsys_add_ns(ss, i + 1, be) : -errno;
		if (rc) {
			if (be) {	/* not attached: still ours */
				snprintf(err, errlen, "namespace %u: %s", i + 1, strerror(-rc));
				be->ops->destroy(be);
			}
			nkv_subsys_destroy(ss);
			errno = -rc;
			return NULL;
		}
	}
	return ss;
}

/* The socket's path: the caller's, or nkv.sock in a fresh private
 * directory. */
static int nkv_tgt_embed_path(struct nkv_tgt_embed *t, const struct nkv_tgt_embed_opts *o,
			      char *err, size_t errlen)
{
	const char *path = o->server.socket_path;
	int rc;

	if (!path) {
		if (snprintf(t->dir, sizeof(t->dir), "/tmp/%s-XXXXXX",
			     o->dir_name ? o->dir_name : "nkv-target") >= (int)sizeof(t->dir)) {
			snprintf(err, errlen, "directory name too long: %s", o->dir_name);
			t->dir[0] = '\0';
			return -ENAMETOOLONG;
		}
		if (!mkdtemp(t->dir)) {
			rc = -errno;
			t->dir[0] = '\0';
			snprintf(err, errlen, "cannot create a private directory in /tmp: %s",
				 strerror(-rc));
			return rc;
		}
		path = t->dir;
	}
	if (snprintf(t->sock, sizeof(t->sock), "%s%s", path, t->dir[0] ? "/nkv.sock" : "") >=
	    (int)sizeof(t->sock)) {
		snprintf(err, errlen, "socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	snprintf(t->uri, sizeof(t->uri), "vfio-user:%s", t->sock);
	return 0;
}

int nkv_tgt_embed_start(const struct nkv_tgt_embed_opts *o, struct nkv_tgt_embed **out,
			char *err, size_t errlen)
{
	struct nkv_vfu_server_opts vo = o->server;
	struct nkv_tgt_embed *t = calloc(1, sizeof(*t));
	int rc;

	if (!t) {
		snprintf(err, errlen, "no memory for the embedded target");
		return -ENOMEM;
	}
	rc = nkv_tgt_embed_path(t, o, err, errlen);
	if (rc)
		goto fail;
	t->ss = nkv_tgt_embed_subsys(o, err, errlen);
	if (!t->ss) {
		rc = -errno;
		goto fail;
	}
	/* Exec's workers are the process's: the first embedded target starts
	 * them, later ones find them running (-EALREADY). */
	rc = nkv_exec_start(0);
	if (rc && rc != -EALREADY) {
		snprintf(err, errlen, "cannot start Exec workers: %s", strerror(-rc));
		goto fail;
	}
	vo.socket_path = t->sock;
	vo.ss = t->ss;
	rc = nkv_vfu_server_start(&vo, &t->srv);
	if (rc == -EADDRINUSE) {
		char lock[sizeof(t->sock) + 8];

		snprintf(lock, sizeof(lock), "%s.lock", t->sock);
		snprintf(err, errlen, "cannot listen on %s: served by another target (PID %d holds "
			 "%s)", t->sock, (int)nkv_lock_holder(lock), lock);
		goto fail;
	}
	if (rc) {
		snprintf(err, errlen, "cannot listen on %s: %s", t->sock, strerror(-rc));
		goto fail;
	}
	*out = t;
	return 0;
fail:
	nkv_tgt_embed_stop(t);
	return rc;
}

const char *nkv_tgt_embed_uri(const struct nkv_tgt_embed *t)
{
	return t->uri;
}

const char *nkv_tgt_embed_socket(const struct nkv_tgt_embed *t)
{
	return t->sock;
}

struct nkv_vfu_server *nkv_tgt_embed_server(struct nkv_tgt_embed *t)
{
	return t->srv;
}

struct nkv_subsys *nkv_tgt_embed_ss(struct nkv_tgt_embed *t)
{
	return t->ss;
}

void nkv_tgt_embed_stop(struct nkv_tgt_embed *t)
{
	if (!t)
		return;
	if (t->srv)
		nkv_vfu_server_stop(t->srv);
	if (t->ss)
		nkv_subsys_destroy(t->ss);
	/* The server removed its socket and its lock; a private directory
	 * is ours. */
	if (t->dir[0]) {
		unlink(t->sock);
		rmdir(t->dir);
	}
	free(t);
}
