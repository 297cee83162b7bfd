/* SPDX-License-Identifier: MIT */
/*
 * nkv_list.h - the KV List payload codec, one for device code, the host
 * library and nkv-target: u32 count, then per key {u16 length, bytes, zero
 * pad to 4} (nkv_wire.h: NKV_LIST_HDR_SIZE, nkv_list_entry_size()).
 * Little-endian, built byte by byte so any host order works.
 *
 * Header-only and compiled as C11, C++17, HIP and CUDA alike (no <errno.h>:
 * errors are nkv_errno.h's). Every function is pure on its arguments: any
 * thread or lane may call it on an encoder or decoder it owns.
 */
#ifndef NKV_LIST_H
#define NKV_LIST_H

#include "nkv_wire.h"
#include "nkv_errno.h"

NKV_HD void nkv_le32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

NKV_HD uint32_t nkv_le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Write one whole entry for @key (@klen bytes, 1..255: the caller checks)
 * at @p: length, key, zero padding; nkv_list_entry_size(klen) bytes. */
NKV_HD uint32_t nkv_list_entry_put(uint8_t *p, const void *key, uint32_t klen)
{
	const uint8_t *k = (const uint8_t *)key;
	uint32_t sz = nkv_list_entry_size(klen), i;

	p[0] = (uint8_t)klen;
	p[1] = (uint8_t)(klen >> 8);
	for (i = 0; i < sz - 2u; i++)
		p[2 + i] = i < klen ? k[i] : 0;
	return sz;
}

struct nkv_list_enc {
	uint8_t *buf;
	uint32_t cap;
	uint32_t len;	/* bytes used, header included */
	uint32_t count;
};

/* Start an empty payload in @buf (@cap bytes, >= 4, else NKV_ENOBUFS). */
NKV_HD int nkv_list_enc_init(struct nkv_list_enc *e, void *buf, uint32_t cap)
{
	if (!e || !buf)
		return NKV_EINVAL;
	if (cap < NKV_LIST_HDR_SIZE)
		return NKV_ENOBUFS;
	e->buf = (uint8_t *)buf;
	e->cap = cap;
	e->len = NKV_LIST_HDR_SIZE;
	e->count = 0;
	nkv_le32_put(e->buf, 0);
	return 0;
}

/* Append one key (1..255 bytes). NKV_ENOBUFS when the whole entry does not
 * fit: the payload is left as it was (only whole entries are returned). */
NKV_HD int nkv_list_enc_add(struct nkv_list_enc *e, const void *key, uint32_t klen)
{
	if (klen == 0 || klen > NKV_KEY_MAX)
		return NKV_EINVAL;
	if (!key)
		return NKV_EINVAL;
	if (nkv_list_entry_size(klen) > e->cap - e->len)
		return NKV_ENOBUFS;
	e->len += nkv_list_entry_put(e->buf + e->len, key, klen);
	e->count++;
	nkv_le32_put(e->buf, e->count);
	return 0;
}

/* Bytes of payload built so far (header included). */
NKV_HD uint32_t nkv_list_enc_len(const struct nkv_list_enc *e) { return e->len; }

struct nkv_list_dec {
	const uint8_t *buf;
	uint32_t len;
	uint32_t off;
	uint32_t count;	/* entries announced by the header */
	uint32_t seen;	/* entries returned so far */
};

/* Parse the header of a payload of @len valid bytes. */
NKV_HD int nkv_list_dec_init(struct nkv_list_dec *d, const void *buf, uint32_t len)
{
	if (!d || !buf)
		return NKV_EINVAL;
	if (len < NKV_LIST_HDR_SIZE)
		return NKV_EBADMSG;
	d->buf = (const uint8_t *)buf;
	d->len = len;
	d->off = NKV_LIST_HDR_SIZE;
	d->count = nkv_le32_get(d->buf);
	d->seen = 0;
	return 0;
}

/* Next key into @key (@cap bytes; NULL: check the entry only) and @klen:
 * 1 = got one, 0 = end, NKV_EBADMSG = key length 0 or > 255, entry past
 * @len, non-zero pad; NKV_ENOBUFS = the key is longer than @cap (the
 * entry is not consumed: call again with NKV_KEY_MAX bytes). */
NKV_HD int nkv_list_dec_next(struct nkv_list_dec *d, uint8_t *key, uint32_t cap, uint32_t *klen)
{
	const uint8_t *p;
	uint32_t kl, sz, i;

	if (d->seen == d->count)
		return 0;
	if (d->len - d->off < 2u)
		return NKV_EBADMSG;
	p = d->buf + d->off;
	kl = (uint32_t)p[0] | (uint32_t)p[1] << 8;
	if (kl == 0 || kl > NKV_KEY_MAX)
		return NKV_EBADMSG;
	sz = nkv_list_entry_size(kl);
	if (sz > d->len - d->off)
		return NKV_EBADMSG;
	for (i = kl; i < sz - 2u; i++)
		if (p[2 + i])
			return NKV_EBADMSG;
	if (key && kl > cap)
		return NKV_ENOBUFS;
	for (i = 0; key && i < kl; i++)
		key[i] = p[2 + i];
	*klen = kl;
	d->off += sz;
	d->seen++;
	return 1;
}

/*
 * Validate a whole payload of @len bytes: its key count, or NKV_EBADMSG /
 * NKV_EINVAL. On NKV_EBADMSG, where it stops parsing: *@entry the index
 * of the first entry that does not parse (one past the last good one; 0
 * with a header shorter than 4 bytes), *@off the byte offset where that
 * entry starts (0 for the header). Either pointer may be NULL.
 */
NKV_HD int nkv_list_check_at(const void *buf, uint32_t len, uint32_t *entry, uint32_t *off)
{
	struct nkv_list_dec d;
	uint32_t kl;
	int r;

	d.seen = 0;
	d.off = 0;	/* a header that does not parse stops at byte 0 */
	r = nkv_list_dec_init(&d, buf, len);
	/* Every entry takes >= 4 bytes: a count larger than the payload
	 * holds stops at the entry that runs past @len, within len / 4. */
	if (!r)
		while ((r = nkv_list_dec_next(&d, NULL, 0, &kl)) == 1)
			;
	if (r == NKV_EBADMSG && entry)
		*entry = d.seen;
	if (r == NKV_EBADMSG && off)
		*off = d.off;
	return r ? r : (int)d.count;
}

/* nkv_list_check_at without the place: the key count, or NKV_EBADMSG /
 * NKV_EINVAL. */
NKV_HD int nkv_list_check(const void *buf, uint32_t len)
{
	return nkv_list_check_at(buf, len, NULL, NULL);
}

#endif /* NKV_LIST_H */
