/* SPDX-License-Identifier: MIT */
/*
 * wrap_be.h - what the test-only backend wrappers (delay_be, liar_be,
 * cfs_be) share: each stands in front of an inner backend, with the
 * inner one's fields copied (so limits, options and the advertised
 * command time read the same), and passes the counts and, unless it has
 * its own, the teardown through. A wrapper's struct starts with a struct
 * wrap_be and is allocated with calloc.
 */
#ifndef NKV_TEST_WRAP_BE_H
#define NKV_TEST_WRAP_BE_H

#include <stdlib.h>

#include "target/core/backend.h"

struct wrap_be {
	struct nkv_be be;
	struct nkv_be *inner;
};

static inline struct nkv_be *wrap_be_inner(struct nkv_be *be)
{
	return ((struct wrap_be *)be)->inner;
}

/* @w (the start of a wrapper just calloc'd) in front of @inner, served
 * by @ops. */
static inline void wrap_be_init(struct wrap_be *w, struct nkv_be *inner,
				const struct nkv_be_ops *ops)
{
	w->be = *inner;
	w->be.ops = ops;
	w->inner = inner;
}

static inline uint64_t wrap_be_bytes_used(struct nkv_be *be)
{
	return wrap_be_inner(be)->ops->bytes_used(wrap_be_inner(be));
}

static inline uint64_t wrap_be_keys_used(struct nkv_be *be)
{
	return wrap_be_inner(be)->ops->keys_used(wrap_be_inner(be));
}

/* The inner backend, then the wrapper (which holds nothing else). */
static inline void wrap_be_destroy(struct nkv_be *be)
{
	struct nkv_be *inner = wrap_be_inner(be);

	inner->ops->destroy(inner);
	free(be);
}

#endif /* NKV_TEST_WRAP_BE_H */
