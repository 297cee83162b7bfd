/* SPDX-License-Identifier: MIT */
/*
 * server.h - the embedded nkv-target (src/target/embed.h) on a test's own
 * socket, /tmp/<name>-<pid>-<n>.sock: served by threads of the test's
 * process, or by a forked child that a test can kill. The suites' presets
 * (host_util.h, vfu_util.h) fill the options; this starts, waits and stops.
 */
#ifndef NKV_TEST_SERVER_H
#define NKV_TEST_SERVER_H

#include <sys/types.h>

#include "target/embed.h"

struct tl_server {
	char path[108];
	char uri[128];
	struct nkv_tgt_embed *tgt;
	struct nkv_vfu_server *srv;	/* the server, when served by threads here */
	pid_t pid;			/* > 0: served by a child process */
};

/* What every suite's target has: sizes set, one KV mem namespace, 20 us
 * idle polls, errors logged (everything with NKV_TEST_LOG set). */
void tl_server_opts(struct nkv_tgt_embed_opts *o);
/* Serve on threads of this process. 0 or a negative errno (the reason
 * on stderr). */
int tl_server_start(struct tl_server *s, const char *name, const struct nkv_tgt_embed_opts *o);
/* Serve from a forked child, for 60 s at most; returns once its socket
 * is there (or -ETIMEDOUT after 5 s). */
int tl_server_fork(struct tl_server *s, const char *name, const struct nkv_tgt_embed_opts *o);
/* SIGKILL the child: the target vanishes mid-conversation. */
void tl_server_kill(struct tl_server *s);
/* Stop (or kill) whichever serves. */
void tl_server_stop(struct tl_server *s);
uint64_t tl_now_ms(void);

#endif
