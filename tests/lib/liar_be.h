/* SPDX-License-Identifier: MIT */
/*
 * liar_be.h - a test-only backend wrapper that lies as a broken
 * controller might, so the instruments that read values must notice:
 * LIAR_RETRIEVE answers every Retrieve with success, length 0 and junk
 * bytes in the host buffer; LIAR_LIST answers every List with success
 * and a payload whose second entry has a non-zero pad byte (entry 1, at
 * byte 12, stops parsing); LIAR_STATUS answers every op with 06h,
 * Internal Error, a status outside the KV set's 80h..8Fh. Everything
 * else goes to the wrapped backend.
 */
#ifndef NKV_TEST_LIAR_BE_H
#define NKV_TEST_LIAR_BE_H

#include "target/core/backend.h"

#define LIAR_RETRIEVE 0x1u
#define LIAR_LIST 0x2u
#define LIAR_STATUS 0x4u

/* Lie about the ops in @what (LIAR_*). Takes ownership of @inner; NULL
 * when out of memory. */
struct nkv_be *liar_be_create(struct nkv_be *inner, unsigned what);

#endif /* NKV_TEST_LIAR_BE_H */
