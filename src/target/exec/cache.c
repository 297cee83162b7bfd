/* SPDX-License-Identifier: MIT */
/*
 * cache.c - modules by digest: a module's bytes are checked against the
 * allowlisted SHA-256 once, compiled once (text chunks only), and the
 * bytecode kept under its digest, so later calls neither read the module
 * nor parse it. The digest is the identity: a module key overwritten
 * with other bytes does not change what an entry runs until the entry
 * names the new digest. Bounded: past NKV_EXEC_CACHE_MAX the least
 * recently used is dropped (its holders keep their reference).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"

#define NKV_EXEC_CACHE_MAX 64u

struct nkv_exec_module {
	uint8_t digest[NKV_EXEC_DIGEST_LEN];
	void *code;
	size_t code_len;
	uint32_t refs;		/* the cache's one, and each holder's */
	uint64_t used;		/* last use, on the cache's clock */
};

static pthread_mutex_t nkv_exec_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nkv_exec_module *nkv_exec_mods[NKV_EXEC_CACHE_MAX];
static uint32_t nkv_exec_nmods;
static uint64_t nkv_exec_clock, nkv_exec_compiled;

static void nkv_exec_module_unref(struct nkv_exec_module *m)
{
	if (--m->refs)
		return;
	free(m->code);
	free(m);
}

void nkv_exec_module_put(struct nkv_exec_module *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&nkv_exec_cache_lock);
	nkv_exec_module_unref(m);
	pthread_mutex_unlock(&nkv_exec_cache_lock);
}

const void *nkv_exec_module_code(const struct nkv_exec_module *m, size_t *len)
{
	*len = m->code_len;
	return m->code;
}

/* Locked: the slot of digest, or -1. */
static int nkv_exec_slot(const uint8_t *digest)
{
	uint32_t i;

	for (i = 0; i < nkv_exec_nmods; i++)
		if (!memcmp(nkv_exec_mods[i]->digest, digest, NKV_EXEC_DIGEST_LEN))
			return (int)i;
	return -1;
}

struct nkv_exec_module *nkv_exec_cache_get(const uint8_t digest[NKV_EXEC_DIGEST_LEN])
{
	struct nkv_exec_module *m = NULL;
	int i;

	pthread_mutex_lock(&nkv_exec_cache_lock);
	i = nkv_exec_slot(digest);
	if (i >= 0) {
		m = nkv_exec_mods[i];
		m->refs++;
		m->used = ++nkv_exec_clock;
	}
	pthread_mutex_unlock(&nkv_exec_cache_lock);
	return m;
}

/* Locked: room for one more, the least recently used dropped if full. */
static void nkv_exec_evict(void)
{
	uint32_t i, lru = 0;

	if (nkv_exec_nmods < NKV_EXEC_CACHE_MAX)
		return;
	for (i = 1; i < nkv_exec_nmods; i++)
		if (nkv_exec_mods[i]->used < nkv_exec_mods[lru]->used)
			lru = i;
	nkv_exec_module_unref(nkv_exec_mods[lru]);
	nkv_exec_mods[lru] = nkv_exec_mods[--nkv_exec_nmods];
}

/* Locked: m (new, no reference yet) in the cache, or the one another
 * worker put there first; a reference for the caller either way. */
static struct nkv_exec_module *nkv_exec_insert(struct nkv_exec_module *m)
{
	int i = nkv_exec_slot(m->digest);

	if (i >= 0) {
		free(m->code);
		free(m);
		m = nkv_exec_mods[i];
	} else {
		nkv_exec_evict();
		nkv_exec_mods[nkv_exec_nmods++] = m;
		m->refs++;		/* the cache's */
		nkv_exec_compiled++;
	}
	m->refs++;			/* the caller's */
	m->used = ++nkv_exec_clock;
	return m;
}

int nkv_exec_cache_add(const uint8_t digest[NKV_EXEC_DIGEST_LEN], const void *src, size_t len,
		       struct nkv_exec_module **out, char *msg, size_t msglen)
{
	uint8_t got[NKV_EXEC_DIGEST_LEN];
	struct nkv_exec_module *m;
	char hex[2 * NKV_EXEC_DIGEST_LEN + 1];

	nkv_exec_sha256(src, len, got);
	if (memcmp(got, digest, sizeof(got))) {
		nkv_exec_hex(got, sizeof(got), hex);
		snprintf(msg, msglen, "module bytes hash to %s", hex);
		return NKV_SC_EXEC_DIGEST;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(msg, msglen, "no memory");
		return NKV_SC_EXEC_MODULE;
	}
	memcpy(m->digest, digest, sizeof(m->digest));
	if (nkv_exec_compile(src, len, &m->code, &m->code_len, msg, msglen)) {
		free(m);
		return NKV_SC_EXEC_MODULE;
	}
	pthread_mutex_lock(&nkv_exec_cache_lock);
	*out = nkv_exec_insert(m);
	pthread_mutex_unlock(&nkv_exec_cache_lock);
	return 0;
}

void nkv_exec_cache_stats(uint64_t *cached, uint64_t *compiled)
{
	pthread_mutex_lock(&nkv_exec_cache_lock);
	*cached = nkv_exec_nmods;
	*compiled = nkv_exec_compiled;
	pthread_mutex_unlock(&nkv_exec_cache_lock);
}

void nkv_exec_cache_clear(void)
{
	pthread_mutex_lock(&nkv_exec_cache_lock);
	while (nkv_exec_nmods)
		nkv_exec_module_unref(nkv_exec_mods[--nkv_exec_nmods]);
	pthread_mutex_unlock(&nkv_exec_cache_lock);
}
