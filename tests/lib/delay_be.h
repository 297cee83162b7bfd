/* SPDX-License-Identifier: MIT */
/*
 * delay_be.h - test-only backend wrapper: holds every op, then forwards
 * them to the wrapped backend from its own thread in scrambled order, so
 * completions arrive out of order and from another thread.
 */
#ifndef NKV_TEST_DELAY_BE_H
#define NKV_TEST_DELAY_BE_H

#include "target/core/backend.h"

/* Wraps inner (owned from now on). Ops are released, all that are held,
 * once batch of them are held, or hold_us microseconds after the first
 * of them arrived. NULL when out of memory (inner freed). */
struct nkv_be *delay_be_create(struct nkv_be *inner, unsigned batch,
			       unsigned hold_us);
/* The first @n ops from now go to the inner backend at once, not held:
 * with a long hold, a controller that stops completing after @n. */
void delay_be_pass(struct nkv_be *be, unsigned n);
/* From now, each held op's completion is said to be near
 * (nkv_be_wait_near): the poll thread stays awake for it. */
void delay_be_near(struct nkv_be *be, int on);
/* Ops completed out of submission order so far. */
unsigned long delay_be_reordered(struct nkv_be *be);

#endif
