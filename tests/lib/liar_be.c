/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "liar_be.h"
#include "wrap_be.h"

struct liar_be {
	struct wrap_be w;
	unsigned what;
};

/* Two entries, "abc" padded right and "xyz" with pad byte 19 set: the
 * core counts them (nkv_be_list_add), then the whole payload is
 * overwritten with this one (its header rewritten with the count). */
static void liar_list(struct nkv_be_op *op)
{
	static const uint8_t bad[20] = { 2, 0, 0, 0, 3, 0, 'a', 'b', 'c', 0, 0, 0,
					 3, 0, 'x', 'y', 'z', 0, 0, 'p' };

	if (op->len < sizeof(bad) || nkv_be_list_add(op, bad + 6, 3) ||
	    nkv_be_list_add(op, bad + 14, 3))
		op->status = NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_INTERNAL);
	else
		op->status = nkv_be_copy_out(op, bad, sizeof(bad));
	op->done(op);
}

static int liar_submit(struct nkv_be *be, struct nkv_be_op *op)
{
	struct liar_be *l = (struct liar_be *)be;
	uint8_t *junk;

	if (l->what & LIAR_STATUS) {
		op->status = NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_INTERNAL);
		op->done(op);
		return 0;
	}
	if (op->opc == NKV_KV_LIST && (l->what & LIAR_LIST)) {
		liar_list(op);
		return 0;
	}
	if (op->opc != NKV_KV_RETRIEVE || !(l->what & LIAR_RETRIEVE))
		return l->w.inner->ops->submit(l->w.inner, op);
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

static const struct nkv_be_ops liar_ops = {
	.name = "liar",
	.submit = liar_submit,
	.bytes_used = wrap_be_bytes_used,
	.keys_used = wrap_be_keys_used,
	.destroy = wrap_be_destroy,
};

struct nkv_be *liar_be_create(struct nkv_be *inner, unsigned what)
{
	struct liar_be *l = calloc(1, sizeof(*l));

	if (!l) {
		inner->ops->destroy(inner);
		return NULL;
	}
	wrap_be_init(&l->w, inner, &liar_ops);
	l->what = what;
	return &l->w.be;
}
