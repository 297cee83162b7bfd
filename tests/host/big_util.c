/* SPDX-License-Identifier: MIT */
/* big_util.c - see big_util.h. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "big_util.h"
#include "host_util.h"
#include "nkv_list.h"

const uint32_t big_sizes[BIG_NSIZES] = {
	1, 4096, 4097, 2 * BIG_MIB + 4097, 16 * BIG_MIB, 64 * BIG_MIB,
};

static uint32_t big_key(uint32_t i, uint8_t key[16])
{
	return (uint32_t)snprintf((char *)key, 16, "big-%u", i);
}

/* Every key of the sizes stored is named by a List into buflen bytes. */
static void big_list(struct nkv_qpair *qp, uint8_t *buf, uint32_t buflen, uint32_t nkeys)
{
	struct nkv_list_dec d;
	struct nkv_result r;
	uint8_t k[16];
	uint32_t kl, seen = 0;
	int rc;

	memset(buf, 0, buflen);
	cr_assert_eq(nkv_list(qp, NULL, 0, buf, buflen, &r), 0);
	cr_assert_eq(r.status, 0, "List into %u bytes: %s", buflen, nkv_status_str(r.status));
	cr_assert_eq(nkv_list_dec_init(&d, buf, buflen), 0);
	while ((rc = nkv_list_dec_next(&d, k, sizeof(k), &kl)) == 1)
		seen++;
	cr_assert_eq(rc, 0);
	cr_assert_eq(seen, nkeys, "List into %u bytes", buflen);
}

static void big_store_all(struct nkv_qpair *qp, uint8_t *buf, uint32_t n)
{
	struct nkv_result r;
	uint8_t key[16];
	uint32_t i;

	for (i = 0; i < n; i++) {
		ht_fill(buf, big_sizes[i], 0x5eed + i);
		cr_assert_eq(nkv_store(qp, key, big_key(i, key), buf, big_sizes[i], 0, &r), 0,
			     "store %u bytes", big_sizes[i]);
		cr_assert_eq(r.status, 0, "store %u bytes: %s", big_sizes[i],
			     nkv_status_str(r.status));
	}
}

static void big_retrieve_all(struct nkv_qpair *qp, uint8_t *buf, uint32_t n)
{
	struct nkv_result r;
	uint8_t key[16];
	uint32_t i, len;
	long off;

	for (i = 0; i < n; i++) {
		len = big_sizes[i];
		memset(buf, 0, len);
		cr_assert_eq(nkv_retrieve(qp, key, big_key(i, key), buf, len, &r), 0);
		cr_assert_eq(r.status, 0, "retrieve %u bytes: %s", len, nkv_status_str(r.status));
		cr_assert_eq(r.dw0, len);
		off = ht_check(buf, len, 0x5eed + i);
		cr_assert_eq(off, -1, "%u bytes: byte %ld differs", len, off);
		memset(buf, 0, 4098);
		cr_assert_eq(nkv_retrieve(qp, key, big_key(i, key), buf, 4097, &r), 0);
		cr_assert_eq(r.dw0, len, "the full size, whatever the buffer");
		cr_assert_eq(ht_check(buf, len < 4097 ? len : 4097, 0x5eed + i), -1);
		cr_assert_eq(buf[4097], 0, "nothing past the buffer");
		cr_assert_eq(nkv_exist(qp, key, big_key(i, key), &r), 0);
		cr_assert_eq(r.status, 0);
	}
}

void big_every_op(struct nkv_qpair *qp, uint32_t max)
{
	struct nkv_result r;
	uint8_t key[16], *buf;
	uint32_t n = 0, i;

	while (n < BIG_NSIZES && big_sizes[n] <= max)
		n++;
	buf = malloc(big_sizes[n - 1] > 4098 ? big_sizes[n - 1] : 4098);
	cr_assert_not_null(buf);
	big_store_all(qp, buf, n);
	big_retrieve_all(qp, buf, n);
	cr_assert_eq(nkv_list(qp, NULL, 0, buf, 1, &r), 0);
	cr_assert_eq(r.status, NKV_STATUS(0, NKV_SC_KV_INVALID_VALUE_SIZE), "List into 1 byte");
	big_list(qp, buf, 4096, n);
	big_list(qp, buf, 4097, n);
	if (big_sizes[n - 1] >= big_sizes[3])
		big_list(qp, buf, big_sizes[3], n);
	for (i = 0; i < n; i++) {
		cr_assert_eq(nkv_delete(qp, key, big_key(i, key), &r), 0);
		cr_assert_eq(r.status, 0);
		cr_assert_eq(nkv_exist(qp, key, big_key(i, key), &r), 0);
		cr_assert_eq(r.status, NKV_STATUS(0, NKV_SC_KV_KEY_NOT_EXISTS));
	}
	free(buf);
}

static pthread_mutex_t big_log_lock = PTHREAD_MUTEX_INITIALIZER;
static char big_log_buf[8192];

static void big_log_line(void *ctx, const char *line)
{
	size_t n;

	(void)ctx;
	pthread_mutex_lock(&big_log_lock);
	n = strlen(big_log_buf);
	snprintf(big_log_buf + n, sizeof(big_log_buf) - n, "%s\n", line);
	pthread_mutex_unlock(&big_log_lock);
}

void big_log_start(void)
{
	big_log_buf[0] = '\0';
	nkv_set_log(big_log_line, NULL);
}

const char *big_log(void)
{
	return big_log_buf;
}

void big_log_stop(void)
{
	nkv_set_log(NULL, NULL);
}
