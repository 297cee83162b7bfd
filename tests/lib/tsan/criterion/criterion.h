/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for <criterion/criterion.h> in TSan builds only.
 *
 * Criterion cannot start under ThreadSanitizer (its sandbox arena fails:
 * Snaipe/Criterion#274), so the race suites are compiled against this
 * header instead (make SAN=tsan puts tests/lib/tsan first on the include
 * path). It covers the subset those suites use: Test, TestSuite with
 * .init/.fini/.timeout/.disabled, cr_assert* (cr_assert_str_eq and
 * _str_empty among them), cr_expect*, cr_skip_test,
 * cr_log_*. Each test runs in its own child process with a time limit, and
 * the run ends with Criterion's own summary line, so the stage runner
 * counts it the same way.
 */
#ifndef NKV_TSAN_CRITERION_SHIM_H
#define NKV_TSAN_CRITERION_SHIM_H

/* What the real header brings in, which suites rely on. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* fmt may be "" (no message), so no printf format attribute here. */

struct nkv_shim_opts {
	void (*init)(void);
	void (*fini)(void);
	double timeout;		/* seconds; 0: the shim's default */
	int disabled;
	const char *description;
};

void nkv_shim_register(const char *suite, const char *name, void (*fn)(void),
		       const struct nkv_shim_opts *o);
void nkv_shim_register_suite(const char *suite, const struct nkv_shim_opts *o);
void nkv_shim_fail(int fatal, const char *file, int line, const char *expr,
		   const char *fmt, ...);
void nkv_shim_skip(const char *fmt, ...);

#define Test(suite, name, ...)                                              \
	static void suite##_##name##_impl(void);                            \
	__attribute__((constructor)) static void suite##_##name##_reg(void) \
	{                                                                   \
		static const struct nkv_shim_opts o = { __VA_ARGS__ };      \
		nkv_shim_register(#suite, #name, suite##_##name##_impl, &o); \
	}                                                                   \
	static void suite##_##name##_impl(void)

#define TestSuite(suite, ...)                                               \
	__attribute__((constructor)) static void suite##_suite_reg(void)   \
	{                                                                   \
		static const struct nkv_shim_opts o = { __VA_ARGS__ };      \
		nkv_shim_register_suite(#suite, &o);                        \
	}

#define NKV_SHIM_CHECK(fatal, cond, expr, ...)                              \
	do {                                                                \
		if (!(cond))                                                \
			nkv_shim_fail(fatal, __FILE__, __LINE__, expr,      \
				      "" __VA_ARGS__);                      \
	} while (0)

#define cr_assert(c, ...) NKV_SHIM_CHECK(1, c, #c, __VA_ARGS__)
#define cr_expect(c, ...) NKV_SHIM_CHECK(0, c, #c, __VA_ARGS__)
#define cr_assert_not(c, ...) NKV_SHIM_CHECK(1, !(c), "!(" #c ")", __VA_ARGS__)
#define cr_expect_not(c, ...) NKV_SHIM_CHECK(0, !(c), "!(" #c ")", __VA_ARGS__)
#define cr_assert_eq(a, b, ...) NKV_SHIM_CHECK(1, (a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...) NKV_SHIM_CHECK(1, (a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...) NKV_SHIM_CHECK(1, (a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...) NKV_SHIM_CHECK(1, (a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...) NKV_SHIM_CHECK(1, (a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...) NKV_SHIM_CHECK(1, (a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_assert_null(p, ...) NKV_SHIM_CHECK(1, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...) NKV_SHIM_CHECK(1, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) \
	NKV_SHIM_CHECK(1, !strcmp((a), (b)), #a " == " #b, __VA_ARGS__)
#define cr_assert_str_empty(a, ...) NKV_SHIM_CHECK(1, !*(a), #a " is empty", __VA_ARGS__)
#define cr_expect_eq(a, b, ...) NKV_SHIM_CHECK(0, (a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_expect_neq(a, b, ...) NKV_SHIM_CHECK(0, (a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_expect_lt(a, b, ...) NKV_SHIM_CHECK(0, (a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_expect_leq(a, b, ...) NKV_SHIM_CHECK(0, (a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_expect_not_null(p, ...) NKV_SHIM_CHECK(0, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_expect_str_eq(a, b, ...) NKV_SHIM_CHECK(0, !strcmp((a), (b)), #a " == " #b, __VA_ARGS__)
#define cr_skip_test(...) nkv_shim_skip("" __VA_ARGS__)
#define cr_log_info(...) (fprintf(stderr, "[----] " __VA_ARGS__), fputc('\n', stderr))
#define cr_log_warn(...) cr_log_info(__VA_ARGS__)
#define cr_log_error(...) cr_log_info(__VA_ARGS__)

#endif /* NKV_TSAN_CRITERION_SHIM_H */
