/* SPDX-License-Identifier: MIT */
/*
 * sync_roundtrip.c - the synchronous API, whole, host code only: connect,
 * Store, Retrieve, List (paged), Delete, Exist, and both kinds of failure
 * (a call refused with a negative errno; an answer with an NVMe status):
 *   cc -std=c11 sync_roundtrip.c $(pkg-config --cflags --libs nkv)
 *   ./a.out vfio-user:/tmp/nkv.sock
 * Exit status, as nkv's programs (README "Exit status"): 0 ok, 1 a value
 * or status wrong, 2 bad arguments, 3 no controller, or it failed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nkv_host.h"
#include "nkv_list.h"

#define NONE NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_KV_KEY_NOT_EXISTS)	/* 87h, an answer */
static const char *const keys[] = { "sync-a", "sync-b", "sync-a-key-longer-than-16-bytes" };
static int bad, gone;	/* wrong answers; calls that did not complete */

/* A call that failed (rc < 0: exit 3) or a status other than want (exit 1). */
static int check(const char *what, int rc, const struct nkv_result *r, uint16_t want)
{
	if (rc) {
		fprintf(stderr, "%s: %s\n", what, strerror(-rc));
		gone++;
	} else if (r->status != want) {
		fprintf(stderr, "%s: status %#x (%s), want %#x\n", what, r->status,
			nkv_status_str(r->status), want);
		bad++;
	}
	return rc || r->status != want;
}

static void log_line(void *ctx, const char *line)	/* the library's lines */
{
	fprintf(stderr, "nkv: %s\n", line), (void)ctx;
}

int main(int argc, char **argv)
{
	static uint8_t buf[4096];	/* the default slot size */
	char val[64], key[NKV_KEY_MAX], start[NKV_KEY_MAX];
	uint32_t i, kl = 0, prev, n = 1, listed = 0, ours = 0;
	struct nkv_list_dec d;
	struct nkv_result r;
	struct nkv_qpair *q;
	struct nkv_ctrl *c;
	int rc;

	nkv_set_log(log_line, NULL);
	if (argc < 2)
		return fprintf(stderr, "usage: %s vfio-user:/tmp/nkv.sock\n", argv[0]), 2;
	rc = nkv_ctrl_connect(argv[1], NULL, &c);
	if (rc || (rc = nkv_qpair_create(c, NULL, &q)))	/* defaults */
		return fprintf(stderr, "cannot connect to %s: %s\n", argv[1], strerror(-rc)), 3;
	for (i = 0; i < 3; i++) {	/* Store each key, Retrieve it, compare */
		int len = snprintf(val, sizeof(val), "value of %s", keys[i]);

		check("store", nkv_store(q, keys[i], (uint32_t)strlen(keys[i]), val, (uint32_t)len,
					 0, &r), &r, 0);
		memset(buf, 0, sizeof(buf));
		if (!check("retrieve", nkv_retrieve(q, keys[i], (uint32_t)strlen(keys[i]), buf,
						    sizeof(buf), &r), &r, 0))	/* dw0: its size */
			bad += r.dw0 != (uint32_t)len || memcmp(buf, val, (size_t)len);
		printf("%s: stored and retrieved %u bytes \"%.*s\"\n", keys[i], r.dw0, len, buf);
	}
	/* List every key, a page at a time: a page starts at the last key of
	 * the one before (the first at klen 0), which it lists again. */
	while (n) {
		prev = kl;
		if (check("list", nkv_list(q, start, prev, buf, sizeof(buf), &r), &r, 0) ||
		    nkv_list_dec_init(&d, buf, sizeof(buf)))
			break;
		for (n = 0; nkv_list_dec_next(&d, (uint8_t *)key, sizeof(key), &kl) == 1;
		     memcpy(start, key, kl))
			if (!prev || kl != prev || memcmp(key, start, kl))	/* not the start */
				n++, ours += kl > 5 && !memcmp(key, "sync-", 5);
		listed += n;
	}
	printf("list: %u keys, %u of them ours\n", listed, ours);
	bad += ours < 3;
	/* Delete one: Exist then answers 87h (Key Does Not Exist) for it. */
	check("delete", nkv_delete(q, keys[0], (uint32_t)strlen(keys[0]), &r), &r, 0);
	check("exist (deleted)", nkv_exist(q, keys[0], (uint32_t)strlen(keys[0]), &r), &r, NONE);
	check("exist", nkv_exist(q, keys[1], (uint32_t)strlen(keys[1]), &r), &r, 0);
	/* Errors: a status is an answer; a negative errno a call refused. */
	check("retrieve (deleted)", nkv_retrieve(q, keys[0], (uint32_t)strlen(keys[0]), buf,
						 sizeof(buf), &r), &r, NONE);
	rc = nkv_retrieve(q, "", 0, buf, sizeof(buf), &r);	/* a key of 0 bytes */
	printf("retrieve of a 0-byte key: %s (nothing sent)\n", strerror(-rc));
	bad += rc != -EINVAL;
	puts(bad || gone ? "FAILED" : "sync round trip: every answer as expected: ok");
	fflush(stdout);	/* before the library's lines on teardown, if any */
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	return gone ? 3 : bad ? 1 : 0;
}
