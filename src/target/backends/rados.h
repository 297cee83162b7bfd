/* SPDX-License-Identifier: MIT */
/*
 * be_rados.h - nkv-target's Ceph RADOS backend.
 *
 * One backend = one NVMe KV namespace = one RADOS namespace inside a pool.
 * Key -> object named by the lowercase hex of exactly the key's bytes
 * ("gpukey01" -> "6770756b65793031"), value = the object's whole data, as
 * the public rados-nkv target maps them, so every Ceph tool sees what a
 * GPU stored. See docs/ceph.md for the List order and the status table.
 *
 * Backends created with the same conf / client / keyring / timeouts share
 * one connected cluster handle (reference counted); each has its own
 * I/O context. Operations run on librados' asynchronous API and complete
 * from librados' threads (List from one worker thread per backend).
 */
#ifndef NKV_TGT_BACKENDS_RADOS_H
#define NKV_TGT_BACKENDS_RADOS_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

struct nkv_be_rados_opts {
	size_t size;		/* sizeof(struct nkv_be_rados_opts) */
	const char *conf;	/* ceph.conf path; NULL: librados' default search */
	const char *client;	/* "nkv" or "client.nkv"; NULL: client.admin */
	const char *keyring;	/* NULL: from the conf (none with auth none) */
	const char *pool;	/* NULL: "kvpool" */
	const char *rados_ns;	/* RADOS namespace; NULL or "": the default one */
	uint32_t op_timeout_s;	/* rados_osd_op_timeout; 0: 10 s */
	uint32_t mount_timeout_s; /* client_mount_timeout; 0: 10 s */
	uint32_t max_value;	/* largest value; 0: 1 MiB */
	uint32_t max_inflight;	/* librados ops in flight; 0: 128 (more queue) */
	uint64_t capacity;	/* bytes reported as NSZE; 0: pool stats or 1 TiB */
};

/*
 * Connect (or share a connection) and open pool / namespace. Returns the
 * backend, or NULL with a one-line reason in err (unreachable cluster,
 * missing pool, bad options). Never blocks longer than about
 * mount_timeout_s. The backend is destroyed through be->ops->destroy.
 */
struct nkv_be *nkv_be_rados_create(const struct nkv_be_rados_opts *o,
				   char *err, size_t errlen);

/* Object name of a key: lowercase hex, NUL terminated; buf holds 33 bytes.
 * Returns the name's length (2 * klen). */
size_t nkv_rados_key_to_oid(const uint8_t *key, uint32_t klen, char *buf);

/* Key of an object name: 1..16 bytes of lowercase hex, else -1. */
int nkv_rados_oid_to_key(const char *oid, size_t len, uint8_t key[NKV_KEY_MAX]);

/* RADOS' placement hash of an object in a namespace (rjenkins, the pool
 * default): what orders List. Exposed for the tests. */
uint32_t nkv_rados_obj_hash(const char *ns, const char *oid, size_t len);

#endif /* NKV_TGT_BACKENDS_RADOS_H */
