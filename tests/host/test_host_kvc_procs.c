/* SPDX-License-Identifier: MIT */
/*
 * The content-addressed Store raced from two client processes: both store
 * the same 64 keys with the same values at the same moment (a wave in
 * one, a block in the other), against one nkv-target process. Each key is
 * stored by exactly one of them and "exists" for the other, no entry is
 * anything else, and every value reads back intact. (Its own binary: it
 * forks, and nothing else runs in the test process meanwhile.)
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>

#include "host_util.h"
#include "kvc_util.h"

/* Child @i: wait for the start, store every key, report ok / exists /
 * other on @out. */
static void kc_child(const struct tl_server *s, int i, int go, int out)
{
	struct kc_job *j = calloc(1, sizeof(*j));
	struct nkv_qpair *q;
	struct nkv_ctrl *c;
	uint32_t n[3];
	char b;

	alarm(50);
	if (!j || ht_connect(s, 0x0, 1, &c, NULL, 0) || kc_qpair(c, &q))
		_exit(2);
	j->qp = nkv_qpair_dev(q);
	j->wave = 16;
	j->block = i ? 32 : 0;
	kc_keys(j, 32, 9);
	kc_fill(q, j, 0, KC_N, 0);
	if (read(go, &b, 1) != 0 || kc_run(j, KC_STORE))
		_exit(3);
	n[0] = kc_count(j, 0, KC_N, NKV_KVC_OK);
	n[1] = kc_count(j, 0, KC_N, NKV_KVC_EXISTS);
	n[2] = KC_N - n[0] - n[1];
	if (write(out, n, sizeof(n)) != (ssize_t)sizeof(n))
		_exit(4);
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	_exit(0);
}

Test(host_kvcache, content_addressed_store_two_processes, .timeout = 60)
{
	struct ht_server_opts o = { .max_ioq = 8 };
	struct tl_server s;
	uint32_t n[2][3], i;
	int go[2], res[2], st;
	pid_t pid[2];
	struct kc_job *j = calloc(1, sizeof(*j));
	struct nkv_qpair *q;
	struct nkv_ctrl *c;

	alarm(60);
	cr_assert(j);
	cr_assert_eq(ht_server_fork(&s, &o), 0);
	cr_assert_eq(pipe(go), 0);
	cr_assert_eq(pipe(res), 0);
	for (i = 0; i < 2; i++) {
		pid[i] = fork();
		cr_assert_geq(pid[i], 0);
		if (pid[i] == 0) {
			close(go[1]);
			kc_child(&s, (int)i, go[0], res[1]);
		}
	}
	/* Both start together: closing the pipe wakes both readers. */
	close(go[0]);
	close(go[1]);
	for (i = 0; i < 2; i++) {
		cr_assert_eq(read(res[0], n[i], sizeof(n[i])), (ssize_t)sizeof(n[i]));
		st = -1;
	}
	for (i = 0; i < 2; i++) {
		cr_assert_eq(waitpid(pid[i], &st, 0), pid[i]);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %u: status %#x", i, st);
	}
	cr_expect_eq(n[0][0] + n[1][0], KC_N, "stored: %u + %u", n[0][0], n[1][0]);
	cr_expect_eq(n[0][1] + n[1][1], KC_N, "exists: %u + %u", n[0][1], n[1][1]);
	cr_expect_eq(n[0][2] + n[1][2], 0, "other outcomes");
	/* Every value as both wrote it. */
	cr_assert_eq(ht_connect(&s, 0x0, 1, &c, NULL, 0), 0);
	cr_assert_eq(kc_qpair(c, &q), 0);
	j->qp = nkv_qpair_dev(q);
	j->wave = 16;
	kc_keys(j, 32, 9);
	kc_clear(q);
	cr_assert_eq(kc_run(j, KC_RETRIEVE), 0);
	cr_expect_eq(j->ret, KC_N);
	for (i = 0; i < KC_N; i++)
		cr_expect_eq(kc_check(q, j, i), -1, "key %u", i);
	nkv_qpair_destroy(q);
	nkv_ctrl_close(c);
	tl_server_stop(&s);
	free(j);
}
