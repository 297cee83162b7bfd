/* SPDX-License-Identifier: MIT */
/*
 * ctrl_show.h - what nkv-admin info and nkv-probe both print about a
 * controller a host drives: the namespace in use's largest key and
 * value, MDTS, SGL support, read-only, the vendor options it advertises.
 */
#ifndef NKV_TOOLS_CTRL_SHOW_H
#define NKV_TOOLS_CTRL_SHOW_H

#include <stdio.h>

#include "nkv_host.h"

/* The read-only and vendor options lines for @e as nkv_ctrl_ns_ext()
 * returned it (@rc): the set, "none" for a controller whose vendor bytes
 * hold nothing, "not advertised" for one without them. */
void nkv_tool_show_ext(FILE *f, const struct nkv_ns_ext *e, int rc);
/* Lines of "%-18s %s" form, from the public API only. */
void nkv_tool_show_caps(FILE *f, struct nkv_ctrl *c, const struct nkv_ctrl_info *i);

#endif
