/* SPDX-License-Identifier: MIT */
/*
 * exec.h - nkv-target's Exec room (docs/exec.md): modules in Lua 5.3
 * run next to a value, allowlisted per namespace by SHA-256.
 *
 *   allow.c    the allowlist: (nsid, op-ID) -> (digest, module key, caps)
 *   digest.c   SHA-256 (OpenSSL's libcrypto)
 *   cache.c    modules checked and compiled, by digest
 *   sandbox.c  one call in a fresh Lua state: safe libraries only, the
 *              value read-only, instruction / memory / output / wall caps
 *   pager.c    a value read in ranges as its module touches it, where
 *              the backend serves ranges (RADOS)
 *   pool.c     the workers (off the poll threads) and the core's hook
 *
 * Threading: every call here is any thread's; the allowlist and the
 * cache take their own locks.
 */
#ifndef NKV_TGT_EXEC_H
#define NKV_TGT_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "nkv_wire.h"

/* Caps of one allowlist entry; 0 in an exec_allow param takes the default. */
struct nkv_exec_caps {
	uint64_t max_instructions;	/* Lua VM instructions */
	uint64_t max_memory;		/* bytes the module may allocate */
	uint32_t max_output;		/* bytes of the result */
	uint32_t max_wall_ms;		/* wall time of one call */
};
#define NKV_EXEC_DEF_INSTRUCTIONS 100000000ull	/* ~0.5 s of a simple loop */
#define NKV_EXEC_DEF_MEMORY (64ull << 20)
#define NKV_EXEC_DEF_OUTPUT (64u << 20)
#define NKV_EXEC_DEF_WALL_MS 1000u
#define NKV_EXEC_MAX_MEMORY (1ull << 32)	/* what exec_allow takes at most */
#define NKV_EXEC_MAX_WALL_MS 600000u
#define NKV_EXEC_MAX_ENTRIES 1024u		/* allowlist rows, all namespaces */

struct nkv_exec_entry {
	uint32_t nsid;
	uint32_t op_id;
	uint8_t digest[NKV_EXEC_DIGEST_LEN];
	uint8_t key[NKV_KEY_MAX];	/* where the module is stored, same namespace */
	uint32_t klen;
	struct nkv_exec_caps caps;
};

/* Defaults into the caps left 0. */
void nkv_exec_caps_fill(struct nkv_exec_caps *caps);
/* 0, or -EINVAL for a cap past NKV_EXEC_MAX_MEMORY / _WALL_MS. */
int nkv_exec_caps_check(const struct nkv_exec_caps *caps);
/* Add or replace e's row. 0, -EINVAL (nsid 0, klen 0 or > 255, caps out
 * of range), -ENOSPC past NKV_EXEC_MAX_ENTRIES. */
int nkv_exec_allow(const struct nkv_exec_entry *e);
/* Remove (nsid, op_id). 0 or -ENOENT. */
int nkv_exec_deny(uint32_t nsid, uint32_t op_id);
/* (nsid, op_id)'s row into *e: 0 or -ENOENT. */
int nkv_exec_lookup(uint32_t nsid, uint32_t op_id, struct nkv_exec_entry *e);
/* Up to max rows into out, ordered by nsid then op-ID: how many there are. */
size_t nkv_exec_list(struct nkv_exec_entry *out, size_t max);
/* Every row gone (tests; a namespace removed keeps its rows, as an
 * allowlist is configuration, not state). */
void nkv_exec_clear(void);

/* "nsid:op_id:digest_hex:key_hex[:instr:mem:out:wall_ms]" (config file,
 * --exec-allow) into e: 0 or -EINVAL. */
int nkv_exec_entry_parse(const char *s, struct nkv_exec_entry *e);
/* hex (2 chars a byte) into out (at most max bytes): bytes, or -EINVAL. */
int nkv_exec_unhex(const char *hex, uint8_t *out, size_t max);
void nkv_exec_hex(const uint8_t *in, size_t n, char *out);

/* SHA-256 of len bytes. */
void nkv_exec_sha256(const void *p, size_t len, uint8_t out[NKV_EXEC_DIGEST_LEN]);

/* The compiled module of a digest (cache.c): a reference to bytecode the
 * runner loads; NULL when not cached. nkv_exec_module_put drops it. */
struct nkv_exec_module;
struct nkv_exec_module *nkv_exec_cache_get(const uint8_t digest[NKV_EXEC_DIGEST_LEN]);
/* Check src against digest, compile it (text only), cache it. 0 and
 * *out; NKV_SC_EXEC_DIGEST or NKV_SC_EXEC_MODULE (msg: why). */
int nkv_exec_cache_add(const uint8_t digest[NKV_EXEC_DIGEST_LEN], const void *src, size_t len,
		       struct nkv_exec_module **out, char *msg, size_t msglen);
void nkv_exec_module_put(struct nkv_exec_module *m);
const void *nkv_exec_module_code(const struct nkv_exec_module *m, size_t *len);
/* Modules cached now / compiled since start (exec_list). */
void nkv_exec_cache_stats(uint64_t *cached, uint64_t *compiled);
void nkv_exec_cache_clear(void);

/*
 * A worker's buffer for values (pool.c, pager.c): kept between calls
 * (and grown), so a value lands in pages already touched, not fresh ones
 * each call; given back when a value past NKV_EXEC_KEEP made it larger.
 * While values come lent it is sized but never written: address space,
 * not memory.
 */
#define NKV_EXEC_KEEP (64ull << 20)
struct nkv_exec_buf {
	uint8_t *p;
	uint64_t cap;
};
/* At least cap bytes, the first keep of them kept: 0 or -1 (no memory). */
int nkv_exec_buf_grow(struct nkv_exec_buf *b, uint64_t cap, uint64_t keep);
void nkv_exec_buf_trim(struct nkv_exec_buf *b);

struct nkv_be;
/* A value read in ranges (pager.c). */
struct nkv_exec_pager {
	struct nkv_be *be;
	const uint8_t *key;
	uint32_t klen;
	struct nkv_exec_buf *b;	/* the value's bytes at their own offsets */
	uint64_t len;		/* the value's length */
	uint64_t version;	/* asserted by every read after the first */
	int whole;		/* the first read brought all of it */
	uint64_t *have;		/* pages that came */
	uint64_t next_off;	/* where the module's last range ended */
	uint64_t ra;		/* readahead, bytes */
	uint64_t reads, bytes;	/* backend reads, bytes they brought */
};
/* The first read (a small value comes whole: pg->whole). 0; an NVMe
 * status; -EOPNOTSUPP (read it whole instead); -ESTALE, -ENOMEM. */
int nkv_exec_pager_open(struct nkv_exec_pager *pg, struct nkv_be *be, const uint8_t *key,
			uint32_t klen, struct nkv_exec_buf *b);
/* Make [off, off + len) of the value present in pg->b (struct
 * nkv_exec_run's fetch): 0, -ESTALE (the value changed: run again on a
 * whole read), a negative errno or an NVMe status. */
int nkv_exec_pager_fetch(void *pg, uint64_t off, uint64_t len);
void nkv_exec_pager_close(struct nkv_exec_pager *pg);

/* One run (sandbox.c). */
struct nkv_exec_run {
	const void *code;	/* the module's bytecode (nkv_exec_module_code) */
	size_t code_len;
	const uint8_t *value;
	size_t value_len;
	/* NULL: value holds the whole value. Else its bytes are there only
	 * where fetch(fetch_ctx, off, len) made them so (the pager); a
	 * nonzero return ends the call, kept in fetch_status (the module
	 * cannot catch it: its result is never sent). */
	int (*fetch)(void *ctx, uint64_t off, uint64_t len);
	void *fetch_ctx;
	int fetch_status;
	const uint8_t *in;
	size_t in_len;
	struct nkv_exec_caps caps;
	/* Where the result goes while the state still holds it (no copy of
	 * our own): emit(emit_ctx, bytes, n) once, n > 0; it returns 0 or an
	 * NVMe status (the call's). NULL: into out (malloc'd). */
	uint16_t (*emit)(void *ctx, const void *p, size_t n);
	void *emit_ctx;
	uint16_t emit_status;
	/* Out: the result (without emit: malloc'd, the caller frees; NULL for
	 * empty), its length, and why it failed. */
	uint8_t *out;
	size_t out_len;
	char msg[160];
	uint64_t instructions;	/* counted, in hook steps */
};
/* 0, NKV_SC_EXEC_BUDGET or NKV_SC_EXEC_MODULE. */
int nkv_exec_sandbox_run(struct nkv_exec_run *r);
/* The large blocks this thread's sandbox runs kept: freed (a worker's end). */
void nkv_exec_sandbox_release(void);
/* Compile src (text only) and dump it as bytecode (malloc'd): 0, or
 * -EINVAL with msg. No module code runs. */
int nkv_exec_compile(const void *src, size_t len, void **code, size_t *code_len, char *msg,
		     size_t msglen);

/* Start nworkers (0: 2) workers and register with the core; stop them
 * (queued calls answered Internal Error first). Once per process. */
int nkv_exec_start(unsigned nworkers);
void nkv_exec_stop(void);
struct nkv_exec_stats {
	uint64_t calls, ok, not_allowed, digest, budget, module, other;
	uint64_t paged;		/* calls whose value was read in ranges */
	uint64_t reread;	/* paged calls run again on a whole read (the value changed) */
	uint64_t value_bytes;	/* bytes of values read from the backend */
};
void nkv_exec_stats(struct nkv_exec_stats *st);

#endif /* NKV_TGT_EXEC_H */
