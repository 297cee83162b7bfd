/* SPDX-License-Identifier: MIT */
/*
 * ns.h - namespaces attached while controllers serve (issue 46): the
 * subsystem side of nkv-target's namespace_add.
 *
 * Removal: every reader of a namespace's backend holds it
 * (nkv_subsys_ns_get, core.h: a command from lookup to completion,
 * Identify while it fills, nkv_subsys_mdts(); another thread through
 * nkv_subsys_ns_hold below), so nkv_subsys_ns_remove clears the slot
 * (new commands: Invalid Namespace), waits for the holders to let go,
 * then closes the backend. Clients are told either way
 * (nkv_tgt_ns_changed).
 *
 * Threading: any thread; attaches and removals are serialised here. The
 * slot is published after a release fence; readers take it with
 * nkv_subsys_ns_get() (acquire, and a count a removal waits for).
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
 * Detach namespace nsid and close its backend: new commands for nsid are
 * answered Invalid Namespace from the next lookup on; those in flight
 * finish (up to wait_ms: then nsid serves again and -ETIMEDOUT says so);
 * then be->ops->destroy, then nkv_tgt_ns_changed(ss, nsid). 0; -ENOENT
 * (nothing attached there); -EINVAL (nsid out of 1..NKV_TGT_MAX_NS).
 * Blocks: not from a poll thread.
 */
int nkv_subsys_ns_remove(struct nkv_subsys *ss, uint32_t nsid, uint32_t wait_ms);

/*
 * For a thread outside the core that reads a backend (a stats line):
 * nsid's backend, held (NULL: none), so a removal waits for the release.
 */
struct nkv_be *nkv_subsys_ns_hold(struct nkv_subsys *ss, uint32_t nsid);
void nkv_subsys_ns_release(struct nkv_subsys *ss, uint32_t nsid);

/*
 * The one hook for a namespace that came or went: records nsid as changed
 * (every controller's log page 04h lists it until that controller reads
 * the page with RAE clear), logs an event=namespace_changed line, then
 * calls each listener, which wakes its transport's poll threads so that
 * each controller sends Namespace Attribute Changed
 * (nkv_tgt_ctrl_ns_events(), ctrl.h). Any thread.
 */
void nkv_tgt_ns_changed(struct nkv_subsys *ss, uint32_t nsid);

/*
 * Be told of namespace changes: fn(arg) runs on the changing thread,
 * under ns.c's lock, so it only hands the news over (a kick, an eventfd)
 * and never calls back into ns.h. 0; -ENOSPC past NKV_SUBSYS_LISTENERS;
 * -EINVAL. Unlisten before arg goes away; after it returns fn is not
 * running and will not run.
 */
int nkv_subsys_ns_listen(struct nkv_subsys *ss, void (*fn)(void *arg), void *arg);
void nkv_subsys_ns_unlisten(struct nkv_subsys *ss, void (*fn)(void *arg), void *arg);

#endif /* NKV_TGT_NS_H */
