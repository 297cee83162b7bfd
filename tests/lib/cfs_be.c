/* SPDX-License-Identifier: MIT */
/* cfs_be.c - see cfs_be.h. */
#include <stddef.h>
#include <stdlib.h>

#include "cfs_be.h"
#include "target/core/core.h"
#include "wrap_be.h"

struct cfs_be {
	struct wrap_be w;
	unsigned after;
	unsigned seen;		/* ops submitted; atomic */
};

static int cfs_submit(struct nkv_be *be, struct nkv_be_op *op)
{
	struct cfs_be *f = (struct cfs_be *)be;
	struct nkv_tgt_cmd *cmd = (struct nkv_tgt_cmd *)((char *)op -
							 offsetof(struct nkv_tgt_cmd, op));

	if (__atomic_add_fetch(&f->seen, 1, __ATOMIC_RELAXED) == f->after + 1)
		nkv_tgt_ctrl_fail(cmd->ctrl, "test_cfs_be(raised_mid_run)");
	/* The op still runs; its completion is one the failed core drops. */
	return f->w.inner->ops->submit(f->w.inner, op);
}

static const struct nkv_be_ops cfs_ops = {
	.name = "cfs",
	.submit = cfs_submit,
	.bytes_used = wrap_be_bytes_used,
	.keys_used = wrap_be_keys_used,
	.destroy = wrap_be_destroy,
};

struct nkv_be *cfs_be_create(struct nkv_be *inner, unsigned after)
{
	struct cfs_be *f = calloc(1, sizeof(*f));

	if (!f) {
		inner->ops->destroy(inner);
		return NULL;
	}
	wrap_be_init(&f->w, inner, &cfs_ops);
	f->after = after;
	return &f->w.be;
}
