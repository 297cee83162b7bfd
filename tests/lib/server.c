/* SPDX-License-Identifier: MIT */
/* server.c - see server.h. Every wait here is bounded. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "server.h"

uint64_t tl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void tl_server_opts(struct nkv_tgt_embed_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->server.size = sizeof(o->server);
	o->server.ctrl.size = sizeof(o->server.ctrl);
	o->server.poll_interval_ns = 20000;
	o->server.log_level = getenv("NKV_TEST_LOG") ? NKV_VFU_LOG_DEBUG : NKV_VFU_LOG_ERROR;
}

static void tl_names(struct tl_server *s, const char *name)
{
	static int seq;

	memset(s, 0, sizeof(*s));
	snprintf(s->path, sizeof(s->path), "/tmp/%s-%d-%d.sock", name, (int)getpid(), seq++);
	snprintf(s->uri, sizeof(s->uri), "vfio-user:%s", s->path);
}

static int tl_serve(struct tl_server *s, const struct nkv_tgt_embed_opts *o)
{
	struct nkv_tgt_embed_opts eo = *o;
	char err[256];
	int rc;

	eo.server.socket_path = s->path;
	rc = nkv_tgt_embed_start(&eo, &s->tgt, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "test target: %s\n", err);
		return rc;
	}
	s->srv = nkv_tgt_embed_server(s->tgt);
	return 0;
}

int tl_server_start(struct tl_server *s, const char *name, const struct nkv_tgt_embed_opts *o)
{
	tl_names(s, name);
	return tl_serve(s, o);
}

int tl_server_fork(struct tl_server *s, const char *name, const struct nkv_tgt_embed_opts *o)
{
	struct stat st;
	uint64_t t0;

	tl_names(s, name);
	s->pid = fork();
	if (s->pid < 0)
		return -errno;
	if (s->pid == 0) {
		/* The child serves until killed, or for 60 s at most. */
		if (tl_serve(s, o))
			_exit(1);
		sleep(60);
		_exit(0);
	}
	for (t0 = tl_now_ms(); tl_now_ms() - t0 < 5000; usleep(2000))
		if (!stat(s->path, &st))
			return 0;
	return -ETIMEDOUT;
}

void tl_server_kill(struct tl_server *s)
{
	if (s->pid > 0) {
		char lock[sizeof(s->path) + 8];

		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
		/* What the killed target held: its socket and PATH.lock. */
		snprintf(lock, sizeof(lock), "%s.lock", s->path);
		unlink(s->path);
		unlink(lock);
	}
}

void tl_server_stop(struct tl_server *s)
{
	if (s->pid > 0) {
		tl_server_kill(s);
		return;
	}
	nkv_tgt_embed_stop(s->tgt);
	s->tgt = NULL;
	s->srv = NULL;
}
