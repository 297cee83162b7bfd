// SPDX-License-Identifier: MIT
/*
 * test_versions - one version everywhere (issue 41): the Makefile's
 * VERSION (and SOVERSION) is what every man page's .TH line, every
 * program's --version and the README's library line say. The Makefile,
 * docs/ and README.md are read from the source tree above the build
 * directory; the programs are the ones built next to this test.
 */
#include <criterion/criterion.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool_run.h"

static char root[PATH_MAX];

/* The source tree: the nearest directory above this test holding a
 * Makefile and docs/man (build/tests, build/asan/tests, ...). */
static void find_root(void)
{
	char p[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", root, sizeof(root) - 1);
	char *s;

	cr_assert_gt(n, 0);
	root[n] = 0;
	while ((s = strrchr(root, '/')) && s != root) {
		*s = 0;
		snprintf(p, sizeof(p), "%s/docs/man", root);
		if (!access(p, F_OK)) {
			snprintf(p, sizeof(p), "%s/Makefile", root);
			if (!access(p, F_OK))
				return;
		}
	}
	cr_skip_test("no source tree above the test");
}

/* "NAME := VALUE" of the Makefile. */
static void make_var(const char *name, char *out, size_t len)
{
	char p[PATH_MAX + 16], line[256], fmt[64];
	FILE *f;

	snprintf(p, sizeof(p), "%s/Makefile", root);
	f = fopen(p, "r");
	cr_assert_not_null(f, "%s", p);
	snprintf(fmt, sizeof(fmt), "%s := %%%zus", name, len - 1);
	out[0] = 0;
	while (!out[0] && fgets(line, sizeof(line), f))
		if (sscanf(line, fmt, out) != 1)
			out[0] = 0;
	fclose(f);
	cr_assert(out[0], "no '%s := ' line in %s", name, p);
}

Test(versions, every_man_page_says_the_makefiles)
{
	char version[32], pat[PATH_MAX + 32], line[512], want[64];
	glob_t g;
	size_t i;

	find_root();
	make_var("VERSION", version, sizeof(version));
	snprintf(pat, sizeof(pat), "%s/docs/man/*.1", root);
	cr_assert_eq(glob(pat, 0, NULL, &g), 0, "no man pages at %s", pat);
	snprintf(want, sizeof(want), "\"nkv %s\"", version);
	for (i = 0; i < g.gl_pathc; i++) {
		FILE *f = fopen(g.gl_pathv[i], "r");

		cr_assert_not_null(f);
		line[0] = 0;
		while (fgets(line, sizeof(line), f) && strncmp(line, ".TH ", 4))
			line[0] = 0;
		fclose(f);
		cr_expect(strstr(line, want), "%s: .TH line '%.*s' does not say %s (the Makefile's "
			  "VERSION)", g.gl_pathv[i], (int)strcspn(line, "\n"), line, want);
	}
	cr_log_info("%zu man pages say nkv %s\n", g.gl_pathc, version);
	globfree(&g);
}

Test(versions, every_programs_version_says_the_makefiles, .timeout = 60)
{
	static const char *const progs[] = { "nkv-bench", "nkv-target", "nkv-probe", "nkv-admin" };
	static const char *const args[] = { "--version", NULL };
	char version[32], want[64];
	struct tool_run r;
	size_t i;

	find_root();
	make_var("VERSION", version, sizeof(version));
	for (i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		cr_assert_eq(tool_run(&r, progs[i], args, NULL, 30000), 0, "%s", r.out);
		snprintf(want, sizeof(want), "%s (nkv) %s\n", progs[i], version);
		cr_expect_eq(r.status, 0, "%s --version: status %d", progs[i], r.status);
		cr_expect_str_eq(r.out, want, "%s --version", progs[i]);
	}
}

Test(versions, the_readme_names_the_library_version_and_soname)
{
	char version[32], so[16], p[PATH_MAX + 16], want[96], *text;
	FILE *f;
	long n;

	find_root();
	make_var("VERSION", version, sizeof(version));
	make_var("SOVERSION", so, sizeof(so));
	snprintf(p, sizeof(p), "%s/README.md", root);
	f = fopen(p, "r");
	cr_assert_not_null(f, "%s", p);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	cr_assert_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	snprintf(want, sizeof(want), "(`pkg-config nkv`, %s, `libnkv.so.%s`)", version, so);
	cr_expect(strstr(text, want), "README.md does not say %s", want);
	free(text);
}

/* The Python package (python/nkv) says the library's version. */
Test(versions, the_python_package_says_the_makefiles)
{
	char version[32], p[PATH_MAX + 32], line[256], want[64];
	int found = 0;
	FILE *f;

	find_root();
	make_var("VERSION", version, sizeof(version));
	snprintf(p, sizeof(p), "%s/python/nkv/__init__.py", root);
	f = fopen(p, "r");
	cr_assert_not_null(f, "%s", p);
	snprintf(want, sizeof(want), "__version__ = \"%s\"", version);
	while (!found && fgets(line, sizeof(line), f))
		found = !strncmp(line, want, strlen(want));
	fclose(f);
	cr_assert(found, "%s has no line %s", p, want);
}
