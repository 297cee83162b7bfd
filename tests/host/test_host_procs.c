/* SPDX-License-Identifier: MIT */
/*
 * Two client processes drive cpu-engine waves against one nkv-target
 * process at the same time, each with its own controller instance and
 * key set, in memory modes 0x0 and 0x8. (Its own binary: it forks, and
 * nothing else runs in the test process meanwhile.)
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/wait.h>

#include "host_util.h"
#include "nkv_cpu.h"
#include "wave_util.h"

/* Two client processes at once, each with its own controller; the target
 * is a third process, so nothing forks while threads run. */
Test(host_waves, two_processes)
{
	alarm(60);	/* a hang becomes a crash, not a stuck suite */
	struct ht_server_opts o = { .max_ioq = 8 };
	struct tl_server s;
	pid_t pid[2];
	int i;

	cr_assert_eq(ht_server_fork(&s, &o), 0);
	for (i = 0; i < 2; i++) {
		pid[i] = fork();
		cr_assert_geq(pid[i], 0);
		if (pid[i] == 0) {
			struct wu_run r = { .nqp = 2, .keys = 150, .salt = 50 + (uint32_t)i,
					    .max_size = 1u << 20, .wave = 16,
					    .mode = NKV_CPU_FIBERS };
			struct wu_result res;
			struct nkv_ctrl *c;
			int ok;

			alarm(50);
			if (ht_connect(&s, i ? 0x8 : 0x0, 2, &c, NULL, 0) || wu_qpairs(c, &r, 0))
				_exit(2);
			ok = !wu_full_cycle(&r, &res) && !res.bad && !res.errs &&
			     res.ok == 5u * 300u && res.listed == 300u;
			if (!ok)
				fprintf(stderr, "child %d: ok %llu bad %llu errs %llu listed %llu\n", i,
					(unsigned long long)res.ok, (unsigned long long)res.bad,
					(unsigned long long)res.errs, (unsigned long long)res.listed);
			wu_qpairs_free(&r);
			nkv_ctrl_close(c);
			_exit(ok ? 0 : 1);
		}
	}
	for (i = 0; i < 2; i++) {
		int st = -1;

		cr_assert_eq(waitpid(pid[i], &st, 0), pid[i]);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: status %#x", i, st);
	}
	tl_server_stop(&s);
}
