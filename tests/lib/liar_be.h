/* SPDX-License-Identifier: MIT */
/*
 * liar_be.h - a test-only backend wrapper that answers every Retrieve
 * with success, length 0 and junk bytes in the host buffer, as a broken
 * controller might: the instruments that read values must notice.
 * Everything else goes to the wrapped backend.
 */
#ifndef NKV_TEST_LIAR_BE_H
#define NKV_TEST_LIAR_BE_H

#include "target/core/backend.h"

/* Takes ownership of @inner; NULL when out of memory. */
struct nkv_be *liar_be_create(struct nkv_be *inner);

#endif /* NKV_TEST_LIAR_BE_H */
