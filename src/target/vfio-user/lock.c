/* SPDX-License-Identifier: MIT */
/*
 * lock.c - one target per socket path: PATH.lock, taken before PATH is
 * bound, removed after PATH when the server stops (server.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "target/core/pidlock.h"
#include "target/vfio-user/vfu.h"

int nkv_vfu_lock_take(const char *socket_path, struct nkv_vfu_lock **out, pid_t *holder)
{
	struct nkv_vfu_lock *l;
	int fd;

	*out = NULL;
	*holder = 0;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	if (snprintf(l->path, sizeof(l->path), "%s.lock", socket_path) >= (int)sizeof(l->path)) {
		free(l);
		return -ENAMETOOLONG;
	}
	fd = nkv_pidlock_take(l->path, holder, &l->stale);
	if (fd < 0) {
		free(l);
		return fd == -EWOULDBLOCK ? -EADDRINUSE : fd;
	}
	l->fd = fd;
	*out = l;
	return 0;
}

void nkv_vfu_lock_release(struct nkv_vfu_lock *l)
{
	if (!l)
		return;
	nkv_pidlock_release(l->path, l->fd);
	free(l);
}
