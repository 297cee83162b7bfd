/* SPDX-License-Identifier: MIT */
/*
 * cfs_be.h - a test-only backend wrapper through which the controller
 * fails as a real one may mid-run: the command after the first @after
 * raises CSTS.CFS (nkv_tgt_ctrl_fail, the core's own way to fail), from
 * then on the controller posts no completion and fetches no command.
 * The controller is reached through the core's command that carries the
 * op (struct nkv_tgt_cmd), so this wrapper must be the outermost one:
 * the core calls its submit on the controller's poll thread.
 */
#ifndef NKV_TEST_CFS_BE_H
#define NKV_TEST_CFS_BE_H

#include "target/core/backend.h"

/* Fail the controller on op @after + 1 (counted over the namespace, all
 * connections). Takes ownership of @inner; NULL when out of memory. */
struct nkv_be *cfs_be_create(struct nkv_be *inner, unsigned after);

#endif /* NKV_TEST_CFS_BE_H */
