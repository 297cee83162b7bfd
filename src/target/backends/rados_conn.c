// SPDX-License-Identifier: MIT
/*
 * rados_conn.c - the RADOS backend's cluster connections: configured from
 * the backend's options, connected once and shared (reference counted)
 * by every backend created with the same conf, client, keyring and
 * timeouts, each with its health thread (rados_health.c).
 */
#include <errno.h>
#include <pthread.h>
#include <rados/librados.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rados_int.h"

static pthread_mutex_t nkv_rados_conns_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nkv_rados_conn *nkv_rados_conns;

static int nkv_rados_set(rados_t c, const char *k, const char *v, char *err, size_t errlen)
{
	int rv = rados_conf_set(c, k, v);

	if (rv < 0)
		nkv_rados_err(err, errlen, "rados: cannot set %s = %s: %s", k, v, strerror(-rv));
	return rv;
}

static int nkv_rados_configure(rados_t c, const struct nkv_rados_opts *o,
			       uint32_t opt, uint32_t mnt, char *err, size_t errlen)
{
	char v[16];
	int rv;

	rv = rados_conf_read_file(c, o->conf);
	if (rv < 0) {
		nkv_rados_err(err, errlen, "rados: cannot read config %s: %s",
			      o->conf ? o->conf : "(default search path)", strerror(-rv));
		return rv;
	}
	if (o->keyring && (rv = nkv_rados_set(c, "keyring", o->keyring, err, errlen)) < 0)
		return rv;
	snprintf(v, sizeof(v), "%u", opt);
	if ((rv = nkv_rados_set(c, "rados_osd_op_timeout", v, err, errlen)) < 0)
		return rv;
	snprintf(v, sizeof(v), "%u", mnt);
	if ((rv = nkv_rados_set(c, "client_mount_timeout", v, err, errlen)) < 0)
		return rv;
	/* Mon commands (pool lookup, stats) must not outwait the mount either. */
	if ((rv = nkv_rados_set(c, "rados_mon_op_timeout", v, err, errlen)) < 0)
		return rv;
	/*
	 * librados' own throttle (100 MiB and 1024 ops in flight by default)
	 * blocks the submitting thread, the core's poll thread, before an
	 * op's timeout starts, so a command could wait past the time the
	 * backend advertises. Each namespace's --max-inflight window bounds
	 * what is in flight instead (its values are in memory already).
	 */
	if ((rv = nkv_rados_set(c, "objecter_inflight_ops", "16777216", err, errlen)) < 0)
		return rv;
	return nkv_rados_set(c, "objecter_inflight_op_bytes", "1099511627776", err, errlen);
}

static struct nkv_rados_conn *nkv_rados_connect(const struct nkv_rados_opts *o,
						const char *id, const char *name,
						uint32_t opt, uint32_t mnt,
						char *err, size_t errlen)
{
	struct nkv_rados_conn *c = calloc(1, sizeof(*c));
	int rv;

	if (!c || !(c->id = strdup(id))) {
		free(c);
		nkv_rados_err(err, errlen, "rados: out of memory");
		return NULL;
	}
	rv = rados_create2(&c->cluster, "ceph", name, 0);
	if (rv < 0) {
		nkv_rados_err(err, errlen, "rados: cannot create a client %s: %s", name, strerror(-rv));
		goto fail_free;
	}
	if (nkv_rados_configure(c->cluster, o, opt, mnt, err, errlen) < 0)
		goto fail_shutdown;
	rv = rados_connect(c->cluster);
	if (rv < 0) {
		nkv_rados_err(err, errlen,
			      "rados: cannot connect to the cluster of %s as %s: %s (client_mount_timeout %u s)",
			      o->conf ? o->conf : "the default ceph.conf", name, strerror(-rv), mnt);
		goto fail_shutdown;
	}
	rv = nkv_rados_health_start(c, o->pool && *o->pool ? o->pool : NKV_RADOS_DEF_POOL,
				    o->conf, name);
	if (rv < 0) {
		nkv_rados_err(err, errlen, "rados: cannot start the health thread: %s", strerror(-rv));
		goto fail_shutdown;
	}
	c->refs = 1;
	return c;
fail_shutdown:
	rados_shutdown(c->cluster);
fail_free:
	free(c->id);
	free(c);
	return NULL;
}

/* Find or make the shared connection for these options. Connecting under
 * the registry lock keeps two creates from racing to two handles. */
struct nkv_rados_conn *nkv_rados_conn_get(const struct nkv_rados_opts *o,
					  uint32_t opt, uint32_t mnt,
					  char *err, size_t errlen)
{
	char name[128], id[1024];
	struct nkv_rados_conn *c;
	const char *cl = o->client && *o->client ? o->client : "admin";

	snprintf(name, sizeof(name), "%s%s", strncmp(cl, "client.", 7) ? "client." : "", cl);
	snprintf(id, sizeof(id), "%s|%s|%s|%u|%u", o->conf ? o->conf : "", name,
		 o->keyring ? o->keyring : "", opt, mnt);
	pthread_mutex_lock(&nkv_rados_conns_lock);
	for (c = nkv_rados_conns; c; c = c->next)
		if (!strcmp(c->id, id))
			break;
	if (c) {
		c->refs++;
	} else {
		c = nkv_rados_connect(o, id, name, opt, mnt, err, errlen);
		if (c) {
			c->next = nkv_rados_conns;
			nkv_rados_conns = c;
		}
	}
	pthread_mutex_unlock(&nkv_rados_conns_lock);
	return c;
}

void nkv_rados_conn_put(struct nkv_rados_conn *c)
{
	struct nkv_rados_conn **pp;
	bool last;

	pthread_mutex_lock(&nkv_rados_conns_lock);
	last = --c->refs == 0;
	if (last)
		for (pp = &nkv_rados_conns; *pp; pp = &(*pp)->next)
			if (*pp == c) {
				*pp = c->next;
				break;
			}
	pthread_mutex_unlock(&nkv_rados_conns_lock);
	if (!last)
		return;
	nkv_rados_health_stop(c);
	rados_shutdown(c->cluster);
	free(c->id);
	free(c);
}
