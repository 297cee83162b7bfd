/* SPDX-License-Identifier: MIT */
/*
 * rados.h - nkv-target's Ceph RADOS backend.
 *
 * One backend = one NVMe KV namespace = one RADOS namespace inside a pool.
 * Key -> object named by the lowercase hex of exactly the key's bytes
 * ("gpukey01" -> "6770756b65793031"), value = the object's whole data, as
 * the public rados-nkv target maps them, so every Ceph tool sees what a
 * GPU stored. See docs/ceph.md for the List order and the status table.
 *
 * Created through the registry as type "rados" (nkv_be_type_rados in
 * registry.h; its options, --pool, --conf, --id, --keyring, --op-timeout,
 * --mount-timeout, --max-inflight and --volatile-capacity, are backend
 * params of the conf).
 *
 * Store options: all of NKV_STORE_VENDOR_MASK. TTL'd and ephemeral values
 * never reach RADOS: they live in a mem backend inside this one (its
 * volatile tier, --volatile-capacity bytes), are lost at exit, and
 * replace a durable object by removing it first (docs/ceph.md, "TTL,
 * ephemeral and touch on rados").
 *
 * Backends created with the same conf / client / keyring / timeouts share
 * one connected cluster handle (reference counted); each has its own
 * I/O context. Operations run on librados' asynchronous API and complete
 * from librados' threads (List from one worker thread per backend); ops
 * the volatile tier serves complete inside submit.
 */
#ifndef NKV_TGT_BACKENDS_RADOS_H
#define NKV_TGT_BACKENDS_RADOS_H

#include <stddef.h>
#include <stdint.h>

#include "target/core/backend.h"

/* Object name of a key: lowercase hex, NUL terminated; buf holds
 * 2 * NKV_KEY_MAX + 1 (511) bytes.
 * Returns the name's length (2 * klen). */
size_t nkv_rados_key_to_oid(const uint8_t *key, uint32_t klen, char *buf);

/* Key of an object name: 1..255 bytes of lowercase hex (2..510
 * characters), else -1. */
int nkv_rados_oid_to_key(const char *oid, size_t len, uint8_t key[NKV_KEY_MAX]);

/* RADOS' placement hash of an object in a namespace (rjenkins, the pool
 * default): what orders List. Exposed for the tests. */
uint32_t nkv_rados_obj_hash(const char *ns, const char *oid, size_t len);

#endif /* NKV_TGT_BACKENDS_RADOS_H */
