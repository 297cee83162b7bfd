/* SPDX-License-Identifier: MIT */
/*
 * registry.h - the backends nkv-target can put behind a namespace, by name.
 *
 * Every backend is one file that defines one struct nkv_be_type (its name,
 * a line of help, the options it takes with their help text, and its one
 * create function) and one line in registry.c's table. nkv-target's
 * options and --help, the embedded target, the tests and the fuzzers all
 * create backends here, so none of them wires a backend by hand.
 *
 * Threading: the table is constant; create may be called from any thread.
 */
#ifndef NKV_TGT_BACKENDS_REGISTRY_H
#define NKV_TGT_BACKENDS_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "target/core/backend.h"

/* One backend-specific option as given ("pool" -> "kvpool"). */
struct nkv_be_param {
	const char *name;	/* the option's name, without "--" */
	const char *value;
};

/* What a namespace asks of its backend. Zero fields take the backend's
 * defaults. */
struct nkv_be_conf {
	size_t size;		/* sizeof(struct nkv_be_conf) */
	/* 0: a KV namespace; 1: an NVM block namespace. (Not a csi field:
	 * NKV_CSI_NVM is 0, so a zeroed conf would have meant NVM.) */
	int nvm;
	const char *ns_name;	/* the namespace's name (--ns-map): the RADOS
				 * namespace on rados, a label on mem; NULL */
	uint64_t capacity;	/* bytes */
	uint32_t max_value;	/* KV: largest value */
	uint32_t max_keys;	/* KV: 0 = no limit */
	uint32_t block_size;	/* NVM */
	/* mem only, a test knob (nkv-target never sets it): complete from a
	 * worker thread instead of inside submit. */
	int worker;
	const struct nkv_be_param *params;	/* backend-specific options */
	size_t nparams;
	int read_only;		/* KV: writes refused (--ns-map N=NAME:ro) */
	uint32_t nsid;		/* the namespace's NSID (nvmf: the remote's
				 * namespace it forwards to); 0: unknown, 1 */
};

/* An option a backend takes (nkv-target --NAME VALUE). */
struct nkv_be_optdesc {
	const char *name;	/* NULL ends the table */
	const char *metavar;	/* "NAME", "SEC", ... */
	const char *help;	/* one or more lines, no leading spaces */
};

struct nkv_be_type {
	const char *name;	/* "mem", "rados" */
	const char *summary;	/* for --help: a line or two, no leading spaces */
	const struct nkv_be_optdesc *opts;	/* NULL or a table ended by a NULL name */
	/* NULL with a one-line reason in err (bad option, no memory,
	 * unreachable store); never blocks longer than the backend's own
	 * connect timeout. */
	struct nkv_be *(*create)(const struct nkv_be_conf *conf, char *err, size_t errlen);
	/* NULL, or: 0, or -EINVAL with a one-line reason in err when a value
	 * in conf->params is malformed. Creates nothing, connects nowhere. */
	int (*check)(const struct nkv_be_conf *conf, char *err, size_t errlen);
};

/* Every registered backend, NULL-terminated, in table order. */
const struct nkv_be_type *const *nkv_be_types(void);
/* The backend called name, or NULL. */
const struct nkv_be_type *nkv_be_type_find(const char *name);
/*
 * Create a backend of type name. NULL with a reason in err: an unknown
 * type (naming the ones there are), an option the type does not take, or
 * the type's own failure.
 */
struct nkv_be *nkv_be_create(const char *name, const struct nkv_be_conf *conf,
			     char *err, size_t errlen);
/*
 * Check conf against type name without creating anything, so a program
 * can refuse a command line before it starts: 0, or with a reason in err
 * -ENOENT (an unknown type, naming the ones there are) or -EINVAL (an
 * option the type does not take, or a value it cannot parse).
 */
int nkv_be_conf_check(const char *name, const struct nkv_be_conf *conf,
		      char *err, size_t errlen);
/* The value of option name in conf, or NULL (the last one given wins). */
const char *nkv_be_conf_get(const struct nkv_be_conf *conf, const char *name);

/* The types in registry.c's table, each defined in its backend's file. */
extern const struct nkv_be_type nkv_be_type_mem;
extern const struct nkv_be_type nkv_be_type_rados;
extern const struct nkv_be_type nkv_be_type_rocksdb;
extern const struct nkv_be_type nkv_be_type_nvmf;

#endif /* NKV_TGT_BACKENDS_REGISTRY_H */
