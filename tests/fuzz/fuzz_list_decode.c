/* SPDX-License-Identifier: MIT */
/*
 * fuzz_list_decode.c - the List payload decoder (nkv_list.h) on arbitrary
 * bytes, which a controller writes into the host's buffer, plus the
 * round-trip property: whatever the encoder writes, the decoder reads
 * back key by key.
 *
 * Input: byte 0 picks the mode. Even: the rest is a payload to decode.
 * Odd: the rest is cut into keys (a length byte, then up to 16 bytes),
 * the buffer capacity coming from byte 1.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nkv_list.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decode a payload held in an exact-size heap copy, so ASan sees any
 * read past its end. */
static void fz_decode(const uint8_t *p, size_t len)
{
	uint8_t *buf = malloc(len ? len : 1), key[NKV_KEY_MAX];
	struct nkv_list_dec d;
	uint32_t kl, n = 0, at = 0, off = 0;
	int chk, r;

	memcpy(buf, p, len);
	chk = nkv_list_check(buf, (uint32_t)len);
	if (nkv_list_check_at(buf, (uint32_t)len, &at, &off) != chk ||
	    (chk == NKV_EBADMSG && (off > len || at > off / 4u)))
		abort();	/* the place is inside the payload, one entry per 4 bytes at most */
	if (nkv_list_dec_init(&d, buf, (uint32_t)len) == 0) {
		while ((r = nkv_list_dec_next(&d, key, sizeof(key), &kl)) == 1) {
			if (kl < 1 || kl > NKV_KEY_MAX || d.off > len)
				abort();
			n++;
		}
		/* A valid payload decodes to exactly its announced count. */
		if (chk >= 0 && (r != 0 || n != (uint32_t)chk))
			abort();
	} else if (chk >= 0) {
		abort();
	}
	free(buf);
}

static void fz_roundtrip(const uint8_t *p, size_t len)
{
	uint32_t cap = len ? 4u + p[0] * 64u : 4u;
	uint8_t *buf = malloc(cap), keys[256][NKV_KEY_MAX], out[NKV_KEY_MAX];
	uint32_t klens[256], n = 0, i, kl;
	struct nkv_list_enc e;
	struct nkv_list_dec d;
	size_t off = len ? 1 : 0;

	if (nkv_list_enc_init(&e, buf, cap))
		abort();
	if (nkv_list_enc_add(&e, keys[0], NKV_KEY_MAX + 1) != NKV_EINVAL)
		abort();	/* one past the longest key */
	while (off < len && n < 256) {
		uint32_t want = p[off++];	/* 0 is bad, 1..255 good */
		uint32_t have = len - off < want ? (uint32_t)(len - off) : want;
		int r;

		memset(keys[n], 0, NKV_KEY_MAX);
		memcpy(keys[n], p + off, have);
		off += have;
		r = nkv_list_enc_add(&e, keys[n], want);
		if (want == 0) {
			if (r != NKV_EINVAL)
				abort();
			continue;
		}
		if (r == NKV_ENOBUFS)
			break;
		if (r)
			abort();
		klens[n++] = want;
	}
	if (nkv_list_enc_len(&e) > cap || nkv_list_check(buf, nkv_list_enc_len(&e)) != (int)n)
		abort();
	nkv_list_dec_init(&d, buf, nkv_list_enc_len(&e));
	for (i = 0; i < n; i++) {
		if (nkv_list_dec_next(&d, out, sizeof(out), &kl) != 1 || kl != klens[i] ||
		    memcmp(out, keys[i], kl))
			abort();
	}
	if (nkv_list_dec_next(&d, out, sizeof(out), &kl) != 0)
		abort();
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		fz_roundtrip(data + 1, size - 1);
	else
		fz_decode(data + 1, size - 1);
	return 0;
}
