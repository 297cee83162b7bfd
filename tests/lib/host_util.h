/* SPDX-License-Identifier: MIT */
/*
 * host_util.h - test helpers for the host library: the host suites'
 * nkv-target (server.h: threads of this process, or a forked process
 * that can be killed), LFSR value patterns, log-uniform sizes.
 */
#ifndef NKV_TEST_HOST_UTIL_H
#define NKV_TEST_HOST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nkv_host.h"
#include "server.h"

struct ht_server_opts {
	int no_sparse;		/* doorbells by REGION_WRITE only */
	uint32_t max_ioq;	/* 0: 8 */
	uint32_t mqes;		/* 0: target default */
	uint64_t capacity;	/* 0: 1 GiB */
	unsigned delay_hold_us;	/* > 0: hold each op this long */
	int nvm_only;		/* namespace 1 is an NVM one */
	int lie_retrieve;	/* Retrieve answers length 0 and junk (liar_be.h) */
	int lie_list;		/* List answers a payload padded wrongly (liar_be.h) */
	uint32_t quirks;	/* NKV_TGT_QUIRK_* of the controllers */
	uint32_t dstrd;		/* CAP.DSTRD of the controllers */
	uint32_t mdts;		/* MDTS of the controllers; 0: from the max value */
	int no_store_opts;	/* namespace 1 honours (and advertises) no
				 * vendor Store option */
	int read_only;		/* namespace 1 is read-only (--ns-map 1=NAME:ro) */
	uint32_t cmd_timeout_ms; /* namespace 1 advertises this command time
				  * (nkv_kv_vs), as a backend with a timeout
				  * of its own does */
	unsigned cfs_after;	/* > 0: the controller raises CSTS.CFS on the
				 * op after this many (cfs_be.h) */
	unsigned stop_after;	/* > 0: the first this many ops complete, the
				 * rest are held 10 minutes (delay_be.h) */
	int lie_status;		/* every op answers 06h, Internal Error (liar_be.h) */
	uint32_t sgls;		/* Identify SGLS advertised; 0: the target's */
	uint32_t kml;		/* KML advertised; 0: the target's (255) */
	uint32_t max_value;	/* namespace 1's largest value; 0: the target's */
};

/* Serve (o NULL: defaults) on threads of this process. 0 or a negative
 * errno. Stop with tl_server_stop. */
int ht_server_start(struct tl_server *s, const struct ht_server_opts *o);
/* Serve from a forked child (kill it with tl_server_kill). */
int ht_server_fork(struct tl_server *s, const struct ht_server_opts *o);

/* Connect with a memory mode and queue count; asserts nothing. */
int ht_connect(const struct tl_server *s, uint32_t mode, uint32_t ioq,
	       struct nkv_ctrl **c, char *err, size_t errlen);

/* Deterministic key i ("k" + hex, 1..16 bytes) and value pattern. */
uint32_t ht_key(uint32_t i, uint32_t salt, uint8_t key[16]);
/* Log-uniform size in [1, max] for index i. */
uint32_t ht_size(uint32_t i, uint32_t salt, uint32_t max);
/* 32-bit Galois LFSR bytes seeded by seed. */
void ht_fill(void *buf, uint32_t len, uint32_t seed);
/* Index of the first byte that differs from the pattern, or -1. */
long ht_check(const void *buf, uint32_t len, uint32_t seed);

#endif
