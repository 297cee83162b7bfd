/* SPDX-License-Identifier: MIT */
/* List payload: encoder/decoder round trip, padding, truncation to whole
 * entries, malformed payloads rejected. */
#include <criterion/criterion.h>
#include <string.h>

#include "nkv_list.h"

Test(list, round_trip_odd_lengths)
{
	uint8_t buf[256], key[16], k[16];
	struct nkv_list_enc e;
	struct nkv_list_dec d = { NULL, 0, 0, 0, 0 };
	uint32_t kl, i;

	memset(buf, 0xee, sizeof(buf));
	cr_assert_eq(nkv_list_enc_init(&e, buf, sizeof(buf)), 0);
	for (i = 1; i <= 16; i++) {
		memset(k, 'a' + i, i);
		cr_assert_eq(nkv_list_enc_add(&e, k, i), 0);
	}
	cr_expect_eq(e.count, 16u);
	cr_expect_eq(buf[0], 16);
	/* Key "b" (1 byte): {01 00 'b' 00}; then 2 bytes {02 00 'c' 'c'}. */
	cr_expect_eq(buf[4], 1);
	cr_expect_eq(buf[5], 0);
	cr_expect_eq(buf[6], 'b');
	cr_expect_eq(buf[7], 0, "pad is zero");
	cr_expect_eq(buf[8], 2);
	cr_expect_eq(nkv_list_check(buf, nkv_list_enc_len(&e)), 16);
	cr_assert_eq(nkv_list_dec_init(&d, buf, nkv_list_enc_len(&e)), 0);
	for (i = 1; i <= 16; i++) {
		cr_assert_eq(nkv_list_dec_next(&d, key, sizeof(key), &kl), 1);
		cr_expect_eq(kl, i);
		memset(k, 'a' + i, i);
		cr_expect_arr_eq(key, k, i);
		cr_expect_eq(d.off % 4, 0u, "entries stay 4-byte aligned");
	}
	cr_expect_eq(nkv_list_dec_next(&d, key, sizeof(key), &kl), 0);
}

Test(list, truncation_to_whole_entries)
{
	uint8_t buf[16];
	struct nkv_list_enc e;

	cr_assert_eq(nkv_list_enc_init(&e, buf, sizeof(buf)), 0);
	cr_assert_eq(nkv_list_enc_add(&e, "abcde", 5), 0);	/* 8 bytes */
	cr_expect_eq(nkv_list_enc_add(&e, "abcdefg", 7), NKV_ENOBUFS);	/* needs 12 */
	cr_expect_eq(e.count, 1u, "payload unchanged by the entry that did not fit");
	cr_expect_eq(nkv_list_enc_len(&e), 12u);
	cr_expect_eq(nkv_list_enc_add(&e, "ab", 2), 0);	/* exactly 4 more */
	cr_expect_eq(nkv_list_check(buf, 16), 2);
	cr_expect_eq(nkv_list_enc_init(&e, buf, 3), NKV_ENOBUFS);
	cr_expect_eq(nkv_list_enc_add(&e, "", 0), NKV_EINVAL);
	cr_assert_eq(nkv_list_enc_init(&e, buf, 16), 0);
	cr_expect_eq(nkv_list_enc_add(&e, buf, NKV_KEY_MAX + 1), NKV_EINVAL);
}

/* Keys to 255 bytes; a decode buffer too short for the next key says so
 * and leaves the entry for a longer one. */
Test(list, long_keys)
{
	uint8_t buf[1024], key[NKV_KEY_MAX], out[NKV_KEY_MAX], small[16];
	struct nkv_list_enc e;
	struct nkv_list_dec d;
	uint32_t i, kl;

	for (i = 0; i < NKV_KEY_MAX; i++)
		key[i] = (uint8_t)(i * 7 + 1);
	cr_assert_eq(nkv_list_enc_init(&e, buf, sizeof(buf)), 0);
	cr_assert_eq(nkv_list_enc_add(&e, key, 17), 0);
	cr_assert_eq(nkv_list_enc_add(&e, key, NKV_KEY_MAX), 0);
	cr_expect_eq(nkv_list_enc_len(&e), 4u + 20u + 260u);
	cr_expect_eq(nkv_list_check(buf, nkv_list_enc_len(&e)), 2);
	cr_assert_eq(nkv_list_dec_init(&d, buf, nkv_list_enc_len(&e)), 0);
	cr_expect_eq(nkv_list_dec_next(&d, small, sizeof(small), &kl), NKV_ENOBUFS);
	cr_assert_eq(nkv_list_dec_next(&d, out, sizeof(out), &kl), 1);
	cr_expect_eq(kl, 17u);
	cr_expect_arr_eq(out, key, 17);
	cr_assert_eq(nkv_list_dec_next(&d, out, sizeof(out), &kl), 1);
	cr_expect_eq(kl, NKV_KEY_MAX);
	cr_expect_arr_eq(out, key, NKV_KEY_MAX);
	cr_expect_eq(nkv_list_dec_next(&d, out, sizeof(out), &kl), 0);
}

Test(list, malformed_rejected)
{
	uint8_t b[32];
	struct nkv_list_enc e;

	cr_expect_eq(nkv_list_check(b, 3), NKV_EBADMSG, "short header");
	memset(b, 0, sizeof(b));
	b[0] = 1;
	cr_expect_eq(nkv_list_check(b, 4), NKV_EBADMSG, "count 1 but no entry");
	b[4] = 0;
	cr_expect_eq(nkv_list_check(b, 8), NKV_EBADMSG, "key length 0");
	b[4] = 0;
	b[5] = 1;
	cr_expect_eq(nkv_list_check(b, 32), NKV_EBADMSG, "key length 256");
	b[4] = 17;
	b[5] = 0;
	cr_expect_eq(nkv_list_check(b, 32), 1, "key length 17, within the payload");
	b[4] = 3;
	b[5] = 0;
	cr_expect_eq(nkv_list_check(b, 6), NKV_EBADMSG, "entry past the end");
	b[6] = 'x';
	cr_expect_eq(nkv_list_check(b, 12), 1, "3-byte key, 3 pad bytes");
	b[4] = 1;	/* now bytes 7 are pad: 'x','y' must be zero */
	b[7] = 'y';
	cr_expect_eq(nkv_list_check(b, 8), NKV_EBADMSG, "non-zero pad");
	memset(b, 0, sizeof(b));
	b[3] = 0x80;	/* count 2^31 */
	cr_expect_eq(nkv_list_check(b, 32), NKV_EBADMSG, "count larger than the payload");
	cr_assert_eq(nkv_list_enc_init(&e, b, 32), 0);
	cr_assert_eq(nkv_list_enc_add(&e, "abc", 3), 0);
	cr_expect_eq(nkv_list_check(b, 32), 1, "trailing bytes after the entries ignored");
	cr_expect_eq(nkv_list_check(NULL, 32), NKV_EINVAL);
}

/* Where a payload stops parsing: the first entry that does not parse
 * and the byte it starts at, whatever is wrong with it. */
Test(list, check_at_names_entry_and_offset)
{
	uint8_t b[64];
	struct nkv_list_enc e;
	uint32_t entry = 99, off = 99;

	cr_expect_eq(nkv_list_check_at(b, 3, &entry, &off), NKV_EBADMSG, "short header");
	cr_expect(entry == 0 && off == 0, "the header: entry %u, byte %u", entry, off);
	cr_assert_eq(nkv_list_enc_init(&e, b, sizeof(b)), 0);
	cr_assert_eq(nkv_list_enc_add(&e, "abc", 3), 0);	/* bytes 4..11 */
	cr_assert_eq(nkv_list_enc_add(&e, "xyz", 3), 0);	/* bytes 12..19 */
	cr_assert_eq(nkv_list_enc_add(&e, "q", 1), 0);	/* bytes 20..23 */
	entry = off = 99;
	cr_expect_eq(nkv_list_check_at(b, 24, &entry, &off), 3);
	cr_expect(entry == 99 && off == 99, "a good payload leaves both alone");
	b[19] = 'p';	/* entry 1's pad */
	cr_expect_eq(nkv_list_check_at(b, 24, &entry, &off), NKV_EBADMSG, "non-zero pad");
	cr_expect(entry == 1 && off == 12, "entry %u at byte %u", entry, off);
	b[19] = 0;
	b[20] = 0;	/* entry 2: key length 0 */
	cr_expect_eq(nkv_list_check_at(b, 24, &entry, &off), NKV_EBADMSG, "key length 0");
	cr_expect(entry == 2 && off == 20, "entry %u at byte %u", entry, off);
	b[20] = 1;
	cr_expect_eq(nkv_list_check_at(b, 22, &entry, &off), NKV_EBADMSG, "past the end");
	cr_expect(entry == 2 && off == 20, "entry %u at byte %u", entry, off);
	b[0] = 200;	/* count 200: runs out after the three that are there */
	cr_expect_eq(nkv_list_check_at(b, 24, &entry, &off), NKV_EBADMSG, "count too large");
	cr_expect(entry == 3 && off == 24, "entry %u at byte %u", entry, off);
	cr_expect_eq(nkv_list_check_at(b, 24, NULL, NULL), NKV_EBADMSG, "no place asked");
	cr_expect_eq(nkv_list_check_at(NULL, 24, &entry, &off), NKV_EINVAL);
}
