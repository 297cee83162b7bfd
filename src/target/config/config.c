/* SPDX-License-Identifier: MIT */
/*
 * config.c - read nkv-target's INI file with libinih; print one back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>

#include "target/config/config.h"

struct nkv_cfg_load {
	struct nkv_cfg *cfg;
	char *err;
	size_t len;
	const char *path;
	const char *const *repeatable;	/* keys that may come more than once */
	int line;	/* the line inih is on: lines counted by the reader */
	int indented;	/* it starts with a blank: inih's multi-line value */
	FILE *f;
};

/* Is name one of the NULL-terminated repeatable keys? */
static int nkv_cfg_repeats(const char *const *repeatable, const char *name)
{
	for (; repeatable && *repeatable; repeatable++)
		if (!strcmp(*repeatable, name))
			return 1;
	return 0;
}

/* inih's reader, counting lines: the Debian build's handler is not told
 * its line (INI_HANDLER_LINENO is off), and a message must name it. */
static char *nkv_cfg_reader(char *str, int num, void *stream)
{
	struct nkv_cfg_load *l = stream;
	char *s = fgets(str, num, l->f);

	if (!s)
		return NULL;
	l->line++;
	l->indented = *s == ' ' || *s == '\t';
	if (!strchr(s, '\n') && !feof(l->f)) {
		/* Longer than inih's line: its tail would read as a line of
		 * its own. Refused, and the reading ends here. */
		snprintf(l->err, l->len, "%s:%d: line longer than %d bytes", l->path, l->line,
			 num - 2);
		return NULL;
	}
	return s;
}

static int nkv_cfg_fail(struct nkv_cfg_load *l, const char *fmt, const char *what)
{
	if (!*l->err) {
		int n = snprintf(l->err, l->len, "%s:%d: ", l->path, l->line);

		snprintf(l->err + n, n < (int)l->len ? l->len - (size_t)n : 0, fmt, what);
	}
	return 0;	/* inih goes on, and returns the first failing line */
}

static int nkv_cfg_add(struct nkv_cfg *cfg, const char *key, const char *value, int line)
{
	struct nkv_cfg_ent *e;

	if (cfg->n == cfg->cap) {
		e = realloc(cfg->ent, (cfg->cap * 2 + 16) * sizeof(*e));
		if (!e)
			return -ENOMEM;
		cfg->ent = e;
		cfg->cap = cfg->cap * 2 + 16;
	}
	e = &cfg->ent[cfg->n];
	e->key = strdup(key);
	e->value = strdup(value);
	e->line = line;
	if (!e->key || !e->value) {
		free(e->key);
		free(e->value);
		return -ENOMEM;
	}
	cfg->n++;
	return 0;
}

static int nkv_cfg_handler(void *user, const char *section, const char *name,
			   const char *value)
{
	struct nkv_cfg_load *l = user;
	size_t i;

	if (*section && strcmp(section, NKV_CFG_SECTION))
		return nkv_cfg_fail(l, "unknown section [%s] (the only one is [" NKV_CFG_SECTION
				    "], or none)", section);
	/* libinih reads an indented line as more of the previous value: a
	 * value here is one line, so say so rather than "twice". */
	if (l->indented && l->cfg->n && !strcmp(l->cfg->ent[l->cfg->n - 1].key, name))
		return nkv_cfg_fail(l, "an indented line continues the value of '%s' (remove "
				    "the indent: a value is one line)", name);
	for (i = 0; !nkv_cfg_repeats(l->repeatable, name) && i < l->cfg->n; i++)
		if (!strcmp(l->cfg->ent[i].key, name))
			return nkv_cfg_fail(l, "key '%s' given twice", name);
	if (nkv_cfg_add(l->cfg, name, value, l->line))
		return nkv_cfg_fail(l, "%s", "out of memory");
	return 1;
}

int nkv_cfg_load(const char *path, const char *const *repeatable, struct nkv_cfg *cfg,
		 char *err, size_t len)
{
	struct nkv_cfg_load l = { cfg, err, len, path, repeatable, 0, 0, fopen(path, "r") };
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	*err = 0;
	if (!l.f) {
		rc = -errno;
		snprintf(err, len, "cannot read %s: %s", path, strerror(-rc));
		return rc;
	}
	rc = ini_parse_stream(nkv_cfg_reader, &l, nkv_cfg_handler, &l);
	fclose(l.f);
	if (!rc && !*err)
		return 0;
	if (!*err)	/* inih's own: no '=', an unclosed [section] */
		snprintf(err, len, "%s:%d: not 'key = value' or [" NKV_CFG_SECTION "]", path, rc);
	nkv_cfg_free(cfg);
	return -EINVAL;
}

void nkv_cfg_free(struct nkv_cfg *cfg)
{
	size_t i;

	for (i = 0; i < cfg->n; i++) {
		free(cfg->ent[i].key);
		free(cfg->ent[i].value);
	}
	free(cfg->ent);
	memset(cfg, 0, sizeof(*cfg));
}

int nkv_cfg_bool(const char *v)
{
	static const char *const t[] = { "true", "yes", "on", "1" }, *const f[] = {
		"false", "no", "off", "0" };
	unsigned i;

	for (i = 0; i < 4; i++) {
		if (!strcasecmp(v, t[i]))
			return 1;
		if (!strcasecmp(v, f[i]))
			return 0;
	}
	return -EINVAL;
}

void nkv_cfg_print(FILE *f, const char *const *keys, const char *const *vals, size_t n)
{
	size_t i;

	fputs("# nkv-target's effective configuration (--print-config): give it back\n"
	      "# with --config FILE. Keys are the long options; '#' lines are unset\n"
	      "# (the built-in default, nkv-target --help).\n[" NKV_CFG_SECTION "]\n", f);
	for (i = 0; i < n; i++) {
		if (vals[i])
			fprintf(f, "%s = %s\n", keys[i], vals[i]);
		else
			fprintf(f, "# %s =\n", keys[i]);
	}
}
