/* SPDX-License-Identifier: MIT */
/*
 * pc_keys.h - block keys of a KV cache, chained as vLLM's are: block i's
 * hash is hash(hash of block i-1, its token ids, extra keys), block 0's
 * parent a root hash of the model's shape; one value per layer, keyed
 * hash(block hash, layer). 16-byte XXH3-128 (libxxhash) or 32-byte
 * SHA-256 (libcrypto). Shared by the prefix_cache example (pc_host.h) and
 * nkv-bench --workload prefix (bench/prefix.c), so both derive the same
 * keys the same way. Valid C and C++.
 */
#ifndef NKV_EXAMPLES_PC_KEYS_H
#define NKV_EXAMPLES_PC_KEYS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <xxhash.h>

/* What a request's keys depend on. */
struct pc_chain {
	uint32_t klen;		/* 16: XXH3-128, 32: SHA-256 */
	uint32_t layers;
	uint32_t blocks;	/* per request */
	uint32_t block_tokens;
	uint32_t value_bytes;	/* one value (a layer of a block): in the root */
	uint32_t extra;		/* vLLM's extra keys (LoRA id, cache salt, ...) */
};

/* The block hash: @klen bytes of XXH3-128 (canonical, big-endian) or
 * SHA-256 of @len bytes at @p. */
static inline void pc_hash(uint32_t klen, const void *p, size_t len, uint8_t *out)
{
	if (klen == 16) {
		XXH128_canonical_t c;

		XXH128_canonicalFromHash(&c, XXH3_128bits(p, len));
		memcpy(out, c.digest, 16);
	} else {
		EVP_Digest(p, len, out, NULL, EVP_sha256(), NULL);
	}
}

/* Token id @i of a request: the shared prefix from seed 1, the rest from
 * @seed (a request of its own). */
static inline uint32_t pc_token(uint32_t seed, uint32_t shared, uint32_t i)
{
	uint32_t x = (i < shared ? 1u : seed) * 0x85ebca6bu ^ i * 0x9e3779b9u;

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	return (x ^ x >> 12) % 128256u;	/* Llama 3's vocabulary */
}

/* Keys [layer][block] (c->klen bytes each) of a request of @seed sharing
 * @shared tokens with request 1: block i's hash is hash(hash of block
 * i-1, its token ids, extra), block 0's parent a root hash of the
 * model's shape (every process agrees on it); layer l's key is
 * hash(block hash, l). 0, or -1 out of memory. */
static inline int pc_chain_keys(const struct pc_chain *c, uint32_t seed, uint32_t shared,
				uint8_t *keys)
{
	size_t in_len = c->klen + 4u * (c->block_tokens + 1u);
	uint8_t *in = (uint8_t *)calloc(1, in_len), parent[32], lk[36];
	uint32_t b, t, l;

	if (!in)
		return -1;
	/* The root: the model's shape in it, so two shapes never share a
	 * key (a serving engine would put its model's name there too). */
	snprintf((char *)in, in_len, "nkv prefix_cache %u %u", c->layers, c->value_bytes);
	pc_hash(c->klen, in, in_len, parent);
	for (b = 0; b < c->blocks; b++) {
		memcpy(in, parent, c->klen);
		for (t = 0; t < c->block_tokens; t++) {
			uint32_t tok = pc_token(seed, shared, b * c->block_tokens + t);

			memcpy(in + c->klen + 4u * t, &tok, 4);
		}
		memcpy(in + c->klen + 4u * c->block_tokens, &c->extra, 4);
		pc_hash(c->klen, in, in_len, parent);
		for (l = 0; l < c->layers; l++) {
			memcpy(lk, parent, c->klen);
			memcpy(lk + c->klen, &l, 4);
			pc_hash(c->klen, lk, c->klen + 4u, keys + ((size_t)l * c->blocks + b) * c->klen);
		}
	}
	free(in);
	return 0;
}

#endif /* NKV_EXAMPLES_PC_KEYS_H */
