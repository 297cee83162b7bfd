// SPDX-License-Identifier: MIT
/*
 * test_nkv_admin - the nkv-admin program run as a user runs it: info
 * against an nkv-target served on a private socket (a KV and an NVM-only
 * namespace), list on this machine, and its usage errors; nkv-probe's
 * registers and Identify lines; the vendor option lines both print, from
 * hand-made nkv_ns_ext data. The binaries are the ones built next to
 * this test (BUILD/bin/). Tests named ttl_e2e_* need nkv-target's side
 * of issue 32 (its nkvX vendor bytes).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_util.h"
#include "tool_run.h"
#include "tools/ctrl_show.h"

#define ADM_TIMEOUT_MS 20000

/* Run @tool with up to two arguments (NULL ends the list). */
static void adm_tool(struct tool_run *r, const char *tool, const char *a1, const char *a2)
{
	const char *const args[] = { a1, a1 ? a2 : NULL, NULL };

	cr_assert_eq(tool_run(r, tool, args, NULL, ADM_TIMEOUT_MS), 0, "%s", r->out);
}

static void adm_run(struct tool_run *r, const char *a1, const char *a2)
{
	adm_tool(r, "nkv-admin", a1, a2);
}

Test(nkv_admin, info_vfio_user_kv, .timeout = 30)
{
	struct tl_server s;
	struct tool_run r;

	cr_assert_eq(ht_server_start(&s, NULL), 0);
	adm_run(&r, "info", s.uri);
	tl_server_stop(&s);
	cr_assert_eq(r.status, 0, "exit %d:\n%s", r.status, r.out);
	cr_assert(strstr(r.out, "transport          vfio-user\n"), "%s", r.out);
	cr_assert(strstr(r.out, "namespace in use   1 (KV)\n"), "%s", r.out);
	cr_assert(strstr(r.out, "kv limits          key 255 B"), "%s", r.out);
	cr_assert(strstr(r.out, "doorbells          mapped\n"), "%s", r.out);
	cr_assert(strstr(r.out, "nsid 1  KV   max key 255 B, max value "), "%s", r.out);
	cr_assert(strstr(r.out, "namespaces         "), "%s", r.out);
	cr_assert(strstr(r.out, "largest key        255 B\n"), "%s", r.out);
	cr_assert(strstr(r.out, "largest value      67108864 B\n"), "%s", r.out);
	cr_assert(strstr(r.out, "MDTS               "), "%s", r.out);
	cr_assert(strstr(r.out, "SGLs               supported (SGLS "), "%s", r.out);
	cr_assert(strstr(r.out, "read-only          no\n"), "%s", r.out);
	cr_assert(strstr(r.out, "vendor options     "), "%s", r.out);
}

Test(nkv_admin, ttl_e2e_info_vendor_options, .timeout = 30)
{
	struct ht_server_opts o = { .read_only = 1 };
	struct tl_server s;
	struct tool_run r;

	cr_assert_eq(ht_server_start(&s, NULL), 0);
	adm_run(&r, "info", s.uri);
	tl_server_stop(&s);
	cr_assert_eq(r.status, 0, "exit %d:\n%s", r.status, r.out);
	cr_assert(strstr(r.out, "vendor options     TTL, ephemeral, touch, size query\n"), "%s", r.out);
	cr_assert(strstr(r.out, "longest TTL        any\n"), "%s", r.out);
	cr_assert(strstr(r.out, "exec               yes"), "the embedded target serves Exec: %s",
		  r.out);
	cr_assert_eq(ht_server_start(&s, &o), 0);
	adm_run(&r, "info", s.uri);
	tl_server_stop(&s);
	cr_assert(strstr(r.out, "read-only          yes"), "%s", r.out);
}

/* The lines both tools print, for each kind of controller, from data
 * made by hand: what nkv_ctrl_ns_ext() returns for it. */
static const char *ext_lines(const struct nkv_ns_ext *e, int rc)
{
	static char buf[1024];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	cr_assert_not_null(f);
	nkv_tool_show_ext(f, e, rc);
	fclose(f);
	return buf;
}

Test(tool_lines, vendor_options)
{
	struct nkv_ns_ext e = { .size = sizeof(e), .nsid = 1 };

	cr_expect_str_eq(ext_lines(&e, 0), "read-only          no\n"
					   "vendor options     not advertised\n");
	cr_expect_str_eq(ext_lines(&e, -ENODEV), "vendor options     not advertised (not a KV "
						 "namespace)\n");
	e.advertised = 1;
	cr_expect_str_eq(ext_lines(&e, 0), "read-only          no\n"
					   "vendor options     none\n"
					   "exec               no\n");
	e.store_opts = NKV_STORE_TTL | NKV_STORE_TOUCH;
	e.max_ttl = 3600;
	e.read_only = 1;
	cr_expect_str_eq(ext_lines(&e, 0), "read-only          yes: Store and Delete are refused\n"
					   "vendor options     TTL, touch\n"
					   "longest TTL        3600 s\n"
					   "exec               no\n");
	e.store_opts = NKV_STORE_VENDOR_MASK;
	e.size_query = 1;
	e.max_ttl = 0;
	e.read_only = 0;
	e.exec = 1;
	cr_expect_str_eq(ext_lines(&e, 0), "read-only          no\n"
					   "vendor options     TTL, ephemeral, touch, size query\n"
					   "longest TTL        any\n"
					   "exec               yes: op-IDs the allowlist binds "
					   "(docs/exec.md)\n");
}

Test(nkv_probe, registers_then_identify, .timeout = 30)
{
	struct tl_server s;
	struct tool_run r;

	cr_assert_eq(ht_server_start(&s, NULL), 0);
	adm_tool(&r, "nkv-probe", s.uri, NULL);
	cr_assert_eq(r.status, 0, "exit %d:\n%s", r.status, r.out);
	cr_assert(strstr(r.out, "CSTS=0x00000000 RDY=0"), "read before any bring-up: %s", r.out);
	cr_assert(strstr(r.out, "identify: model \"nkv-host-test\", namespace 1 (KV)\n"), "%s",
		  r.out);
	cr_assert(strstr(r.out, "largest key        255 B\n"), "%s", r.out);
	cr_assert(strstr(r.out, "largest value      67108864 B\n"), "%s", r.out);
	cr_assert(strstr(r.out, "MDTS               "), "%s", r.out);
	cr_assert(strstr(r.out, "SGLs               supported"), "%s", r.out);
	cr_assert(strstr(r.out, "vendor options     "), "%s", r.out);
	adm_tool(&r, "nkv-probe", "--registers-only", s.uri);
	tl_server_stop(&s);
	cr_assert_eq(r.status, 0, "exit %d:\n%s", r.status, r.out);
	cr_assert(strstr(r.out, "CAP=0x"), "%s", r.out);
	cr_assert_null(strstr(r.out, "identify:"), "no bring-up: %s", r.out);
}

Test(nkv_probe, usage, .timeout = 30)
{
	struct tool_run r;

	adm_tool(&r, "nkv-probe", "--help", NULL);
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "--registers-only"), "%s", r.out);
	adm_tool(&r, "nkv-probe", NULL, NULL);
	cr_assert_eq(r.status, 2, "%s", r.out);
	adm_tool(&r, "nkv-probe", "--bogus", "vfio-user:/x");
	cr_assert_eq(r.status, 2, "%s", r.out);
	adm_tool(&r, "nkv-probe", "pcie:/dev/nkv0", NULL);
	cr_assert_eq(r.status, 2, "%s", r.out);
}

Test(nkv_admin, info_vfio_user_nvm_only, .timeout = 30)
{
	struct ht_server_opts o = { .nvm_only = 1 };
	struct tl_server s;
	struct tool_run r;

	cr_assert_eq(ht_server_start(&s, &o), 0);
	adm_run(&r, "info", s.uri);
	tl_server_stop(&s);
	cr_assert_eq(r.status, 0, "exit %d:\n%s", r.status, r.out);
	cr_assert(strstr(r.out, "namespace in use   1 (NVM)\n"), "%s", r.out);
	cr_assert(strstr(r.out, "nvm capacity       "), "%s", r.out);
	cr_assert(strstr(r.out, "nsid 1  NVM  "), "%s", r.out);
	cr_assert(strstr(r.out, "(not KV)"), "%s", r.out);
}

Test(nkv_admin, info_nobody_listening, .timeout = 30)
{
	struct tool_run r;

	adm_run(&r, "info", "vfio-user:/nonexistent/nkv-admin-test.sock");
	cr_assert_eq(r.status, 3, "cannot connect: exit %d:\n%s", r.status, r.out);
	cr_assert(strstr(r.out, "nkv-admin: vfio-user:/nonexistent/nkv-admin-test.sock: "), "%s",
		  r.out);
}

Test(nkv_admin, info_bad_uris, .timeout = 30)
{
	static const char *const bad[] = { "bogus:x", "pcie:", "pcie:zz:00.0", "", "vfio-user" };
	struct tool_run r;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		adm_run(&r, "info", bad[i]);
		cr_assert_eq(r.status, 2, "'%s' is a bad argument: exit %d:\n%s", bad[i], r.status,
			     r.out);
		cr_assert(strstr(r.out, "nkv-admin: "), "'%s': %s", bad[i], r.out);
	}
}

Test(nkv_admin, usage, .timeout = 30)
{
	struct tool_run r;

	adm_run(&r, "--help", NULL);
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "nkv-admin info vfio-user:/run/nkv.sock"), "%s", r.out);
	cr_assert(strstr(r.out, "(a reset)"), "%s", r.out);
	adm_run(&r, NULL, NULL);
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.out, "usage: nkv-admin list"), "%s", r.out);
	adm_run(&r, "frobnicate", NULL);
	cr_assert_eq(r.status, 2);
	adm_run(&r, "info", NULL);
	cr_assert_eq(r.status, 2);
}

/* This machine: a table or "none found", never a crash; nothing here is
 * bound to nkv, so nothing is connected to. */
Test(nkv_admin, list_this_machine, .timeout = 30)
{
	struct tool_run r;

	if (access("/sys/bus/pci/devices", R_OK))
		cr_skip_test("no /sys/bus/pci on this machine");
	adm_run(&r, "list", NULL);
	cr_assert_eq(r.status, 0, "exit %d:\n%s", r.status, r.out);
	cr_assert(!strncmp(r.out, "no PCIe NVMe controllers found\n", 31) ||
		  !strncmp(r.out, "PCI ADDRESS   VENDOR:DEV ", 25), "%s", r.out);
}
