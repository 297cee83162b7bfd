/* SPDX-License-Identifier: MIT */
/*
 * registry.c - the table of backends and creating one by name.
 *
 * The registry checks what every backend would otherwise check alike (the
 * type exists, each option given is one the type declares) so a backend's
 * create only reads its own options.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "target/backends/registry.h"

/* One line per backend. */
static const struct nkv_be_type *const nkv_be_table[] = {
	&nkv_be_type_mem,
	&nkv_be_type_rados,
	&nkv_be_type_rocksdb,
	&nkv_be_type_nvmf,
	NULL,
};

const struct nkv_be_type *const *nkv_be_types(void)
{
	return nkv_be_table;
}

const struct nkv_be_type *nkv_be_type_find(const char *name)
{
	const struct nkv_be_type *const *t;

	for (t = nkv_be_table; name && *t; t++)
		if (!strcmp((*t)->name, name))
			return *t;
	return NULL;
}

/* Append s to buf (of len bytes, NUL terminated), truncating. */
static void nkv_be_cat(char *buf, size_t len, const char *s)
{
	size_t n = strlen(buf);

	if (n + 1 < len)
		snprintf(buf + n, len - n, "%s", s);
}

static const struct nkv_be_optdesc *nkv_be_opt_find(const struct nkv_be_type *t, const char *name)
{
	const struct nkv_be_optdesc *d;

	for (d = t->opts; d && d->name; d++)
		if (!strcmp(d->name, name))
			return d;
	return NULL;
}

/* "option --pool is not an option of the mem backend (it takes: ...)" */
static void nkv_be_undeclared(const struct nkv_be_type *t, const char *name, char *err, size_t errlen)
{
	const struct nkv_be_optdesc *d;

	snprintf(err, errlen, "option --%s is not an option of the %s backend (it takes: ", name,
		 t->name);
	if (!t->opts || !t->opts[0].name)
		nkv_be_cat(err, errlen, "none");
	for (d = t->opts; d && d->name; d++) {
		nkv_be_cat(err, errlen, d == t->opts ? "--" : ", --");
		nkv_be_cat(err, errlen, d->name);
	}
	nkv_be_cat(err, errlen, ")");
}

/* The type called name with conf's options all declared by it, or NULL
 * and errno (ENOENT, EINVAL) with a reason in err. */
static const struct nkv_be_type *nkv_be_resolve(const char *name, const struct nkv_be_conf *conf,
						char *err, size_t errlen)
{
	const struct nkv_be_type *const *tp, *t = nkv_be_type_find(name);
	size_t i;

	if (!t) {
		snprintf(err, errlen, "unknown backend '%s' (available: ", name ? name : "(null)");
		for (tp = nkv_be_table; *tp; tp++) {
			nkv_be_cat(err, errlen, tp == nkv_be_table ? "" : ", ");
			nkv_be_cat(err, errlen, (*tp)->name);
		}
		nkv_be_cat(err, errlen, ")");
		errno = ENOENT;
		return NULL;
	}
	if (!conf || conf->size < sizeof(*conf)) {
		snprintf(err, errlen, "%s backend: configuration missing or from an older build (size %zu)",
			 t->name, conf ? conf->size : 0);
		errno = EINVAL;
		return NULL;
	}
	for (i = 0; i < conf->nparams; i++)
		if (!nkv_be_opt_find(t, conf->params[i].name)) {
			nkv_be_undeclared(t, conf->params[i].name, err, errlen);
			errno = EINVAL;
			return NULL;
		}
	return t;
}

int nkv_be_conf_check(const char *name, const struct nkv_be_conf *conf, char *err, size_t errlen)
{
	const struct nkv_be_type *t = nkv_be_resolve(name, conf, err, errlen);

	if (!t)
		return -errno;
	return t->check ? t->check(conf, err, errlen) : 0;
}

struct nkv_be *nkv_be_create(const char *name, const struct nkv_be_conf *conf,
			     char *err, size_t errlen)
{
	const struct nkv_be_type *t = nkv_be_resolve(name, conf, err, errlen);
	struct nkv_be *be = t ? t->create(conf, err, errlen) : NULL;

	/* Read-only is the core's to enforce, the same on every backend. */
	if (be)
		be->read_only = conf->read_only && be->csi == NKV_CSI_KV;
	return be;
}

const char *nkv_be_conf_get(const struct nkv_be_conf *conf, const char *name)
{
	const char *v = NULL;
	size_t i;

	for (i = 0; conf && i < conf->nparams; i++)
		if (!strcmp(conf->params[i].name, name))
			v = conf->params[i].value;
	return v;
}
