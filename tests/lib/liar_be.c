/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "liar_be.h"

struct liar_be {
	struct nkv_be be;
	struct nkv_be *inner;
};

static int liar_submit(struct nkv_be *be, struct nkv_be_op *op)
{
	struct liar_be *l = (struct liar_be *)be;
	uint8_t *junk;

	if (op->opc != NKV_KV_RETRIEVE)
		return l->inner->ops->submit(l->inner, op);
	junk = malloc(op->len);
	if (!junk)
		return -ENOMEM;	/* the core answers Internal Error */
	memset(junk, 0xa5, op->len);
	op->status = nkv_be_copy_out(op, junk, op->len);
	op->dw0 = 0;
	free(junk);
	op->done(op);
	return 0;
}

static uint64_t liar_bytes_used(struct nkv_be *be)
{
	struct liar_be *l = (struct liar_be *)be;

	return l->inner->ops->bytes_used(l->inner);
}

static uint64_t liar_keys_used(struct nkv_be *be)
{
	struct liar_be *l = (struct liar_be *)be;

	return l->inner->ops->keys_used(l->inner);
}

static void liar_destroy(struct nkv_be *be)
{
	struct liar_be *l = (struct liar_be *)be;

	l->inner->ops->destroy(l->inner);
	free(l);
}

static const struct nkv_be_ops liar_ops = {
	.name = "liar",
	.submit = liar_submit,
	.bytes_used = liar_bytes_used,
	.keys_used = liar_keys_used,
	.destroy = liar_destroy,
};

struct nkv_be *liar_be_create(struct nkv_be *inner)
{
	struct liar_be *l = calloc(1, sizeof(*l));

	if (!l) {
		inner->ops->destroy(inner);
		return NULL;
	}
	l->be = *inner;
	l->be.ops = &liar_ops;
	l->inner = inner;
	return &l->be;
}
