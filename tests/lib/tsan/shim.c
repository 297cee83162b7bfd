/* SPDX-License-Identifier: MIT */
/*
 * The runner behind tests/lib/tsan/criterion/criterion.h: runs every
 * registered test in a child process (a failed assertion or a crash ends
 * only that test), with a time limit, and prints Criterion's summary line.
 */
#include <criterion/criterion.h>

#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NKV_SHIM_MAX 256
#define NKV_SHIM_DEFAULT_TIMEOUT 120
#define NKV_SHIM_SKIP_EXIT 77

struct nkv_shim_test {
	const char *suite;
	const char *name;
	void (*fn)(void);
	const struct nkv_shim_opts *o;
};

static struct nkv_shim_test tests[NKV_SHIM_MAX];
static struct nkv_shim_test suites[NKV_SHIM_MAX];
static int ntests, nsuites, expect_failed;

void nkv_shim_register(const char *suite, const char *name, void (*fn)(void),
		       const struct nkv_shim_opts *o)
{
	if (ntests == NKV_SHIM_MAX) {
		fprintf(stderr, "shim: more than %d tests\n", NKV_SHIM_MAX);
		exit(2);
	}
	tests[ntests++] = (struct nkv_shim_test){ suite, name, fn, o };
}

void nkv_shim_register_suite(const char *suite, const struct nkv_shim_opts *o)
{
	if (nsuites < NKV_SHIM_MAX)
		suites[nsuites++] = (struct nkv_shim_test){ suite, NULL, NULL, o };
}

void nkv_shim_fail(int fatal, const char *file, int line, const char *expr,
		   const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "[----] %s:%d: Assertion Failed: %s", file, line, expr);
	if (fmt[0]) {
		fputs(": ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
	fputc('\n', stderr);
	if (fatal)
		_exit(1);
	expect_failed = 1;
}

void nkv_shim_skip(const char *fmt, ...)
{
	va_list ap;

	fputs("[----] skipped: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(NKV_SHIM_SKIP_EXIT);
}

static const struct nkv_shim_opts *suite_opts(const char *suite)
{
	static const struct nkv_shim_opts none;
	int i;

	for (i = 0; i < nsuites; i++)
		if (!strcmp(suites[i].suite, suite))
			return suites[i].o;
	return &none;
}

/* In the child: hooks, body, hooks; the exit status says how it went. */
static void run_child(const struct nkv_shim_test *t, const struct nkv_shim_opts *s)
{
	void (*init)(void) = t->o->init ? t->o->init : s->init;
	void (*fini)(void) = t->o->fini ? t->o->fini : s->fini;
	double to = t->o->timeout ? t->o->timeout : s->timeout;

	alarm(to > 0 ? (unsigned)to + 1 : NKV_SHIM_DEFAULT_TIMEOUT);
	if (init)
		init();
	t->fn();
	if (fini)
		fini();
	_exit(expect_failed ? 1 : 0);
}

/* 0 passed, 1 failed, 2 crashed, 3 skipped. */
static int run_one(const struct nkv_shim_test *t)
{
	const struct nkv_shim_opts *s = suite_opts(t->suite);
	int st;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0)
		run_child(t, s);
	if (waitpid(pid, &st, 0) != pid)
		return 2;
	if (WIFSIGNALED(st))
		return 2;
	if (WEXITSTATUS(st) == NKV_SHIM_SKIP_EXIT)
		return 3;
	return WEXITSTATUS(st) ? 1 : 0;
}

int main(void)
{
	static const char *const verdict[] = { "PASS", "FAIL", "FAIL", "SKIP" };
	int i, r, counts[4] = { 0 }, tested = 0;

	for (i = 0; i < ntests; i++) {
		if (tests[i].o->disabled || suite_opts(tests[i].suite)->disabled)
			continue;
		r = run_one(&tests[i]);
		counts[r]++;
		tested += r != 3;
		fprintf(stderr, "[%s] %s::%s%s\n", verdict[r], tests[i].suite,
			tests[i].name, r == 2 ? " (crashed or timed out)" : "");
	}
	/* Like Criterion, skipped tests are not counted as tested. */
	fprintf(stderr, "[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: %d\n",
		tested, counts[0], counts[1] + counts[2], counts[2]);
	return counts[1] + counts[2] ? 1 : 0;
}
