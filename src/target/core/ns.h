/* SPDX-License-Identifier: MIT */
/*
 * ns.h - namespaces attached while controllers serve (issue 46): the
 * subsystem side of nkv-target's namespace_add.
 *
 * Removal is not here yet: the core's readers of the namespace table
 * (Identify's active list, the I/O path's completion accounting) look a
 * namespace up without holding it, so taking one away under them needs
 * a reference they hold, which comes with the Asynchronous Event Request
 * work (issue 46's second part), as does telling clients.
 *
 * Threading: any thread; attaches are serialised here. The slot is
 * published after a release fence; every reader loads it with acquire
 * (nkv_tgt_ns(), Identify's active list, nkv_subsys_mdts()).
 */
#ifndef NKV_TGT_NS_H
#define NKV_TGT_NS_H

#include <stdint.h>

#include "backend.h"
#include "ctrl.h"

/*
 * Attach be as namespace nsid of a subsystem controllers already serve:
 * new commands for nsid reach it from the next lookup on, and Identify's
 * active namespace lists include it. The subsystem owns be on success.
 * 0; -EEXIST (nsid attached); -EINVAL (nsid out of 1..NKV_TGT_MAX_NS, a
 * malformed backend); -EMSGSIZE: a KV namespace whose max value needs a
 * larger MDTS than the running controllers advertise (nkv_subsys_mdts()).
 * Then nkv_tgt_ns_changed(ss, nsid).
 */
int nkv_subsys_ns_attach(struct nkv_subsys *ss, uint32_t nsid, struct nkv_be *be);

/*
 * The one hook for a namespace that came (or, later, went): where the
 * Asynchronous Event Request work posts Namespace Attribute Changed to
 * every controller and logs the nsid in log page 04h. Today it logs an
 * event=namespace_changed line.
 */
void nkv_tgt_ns_changed(struct nkv_subsys *ss, uint32_t nsid);

#endif /* NKV_TGT_NS_H */
