/* SPDX-License-Identifier: MIT */
/*
 * config.h - nkv-target's configuration file (--config FILE,
 * docs/service.md): INI read by libinih, one "key = value" per option,
 * the key an option's long name. This file knows no option: it reads
 * the lines, keeps each with its line number, and prints a set back in
 * the same format; main.c applies them through the command line's own
 * parser, so every flag has a key and its checks.
 *
 * Threading: any thread, one call per nkv_cfg at a time.
 */
#ifndef NKV_TGT_CONFIG_H
#define NKV_TGT_CONFIG_H

#include <stddef.h>
#include <stdio.h>

/* The one section a file may hold, or none (keys at the top). */
#define NKV_CFG_SECTION "nkv-target"

struct nkv_cfg_ent {
	char *key;
	char *value;
	int line;
};

struct nkv_cfg {
	struct nkv_cfg_ent *ent;
	size_t n, cap;
};

/* Read path into cfg (zeroed first), each line in file order. 0;
 * -ENOENT etc. when it cannot be opened; -EINVAL for a line that is not
 * "key = value", a section other than [nkv-target] or a key given twice
 * that is not in repeatable (NULL-terminated; NULL: none): err says
 * "PATH:LINE: why". */
int nkv_cfg_load(const char *path, const char *const *repeatable, struct nkv_cfg *cfg,
		 char *err, size_t len);
void nkv_cfg_free(struct nkv_cfg *cfg);

/* A flag's value: 1 for true/yes/on/1, 0 for false/no/off/0, else -EINVAL. */
int nkv_cfg_bool(const char *v);

/* The set as a file: a header, then "key = value" for each val[i] not
 * NULL, "# key =" for the others (unset, the built-in default). */
void nkv_cfg_print(FILE *f, const char *const *keys, const char *const *vals, size_t n);

#endif /* NKV_TGT_CONFIG_H */
