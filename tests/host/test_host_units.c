/* SPDX-License-Identifier: MIT */
/*
 * Host library pieces without a controller: PRP lists over scattered
 * page addresses (walked as a controller walks them, chained lists
 * included), the emulated device arena's allocator, URI parsing, status
 * names, where the library's log lines go.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"

/* Walk PRP1/PRP2 for npages pages the way NVMe Base 2.0 4.1.1 says. */
static void walk(const uint64_t *iova, size_t npages, uint64_t **lva, const uint64_t *liova,
		 size_t nl, uint64_t prp1, uint64_t prp2)
{
	size_t i = 1, l = 0, k = 0;
	uint64_t *page;

	cr_assert_eq(prp1, iova[0]);
	if (npages == 1)
		return;
	if (npages == 2) {
		cr_assert_eq(prp2, iova[1]);
		return;
	}
	cr_assert_eq(prp2, liova[0]);
	page = lva[0];
	while (i < npages) {
		if (k == NKV_PRP_PER_PAGE - 1 && npages - i > 1) {
			/* Last entry of a full page with more to come: a chain. */
			cr_assert_lt(l + 1, nl);
			cr_assert_eq(page[k], liova[l + 1], "chain pointer of list page %zu", l);
			page = lva[++l];
			k = 0;
			continue;
		}
		cr_assert_eq(page[k], iova[i], "entry for page %zu", i);
		k++;
		i++;
	}
	cr_assert_eq(l + 1, nl, "every list page used");
}

static void prp_case(size_t npages)
{
	size_t nl = nkv_h_prp_list_pages(npages), i;
	uint64_t *iova = calloc(npages, 8), **lva = calloc(nl + 1, sizeof(*lva));
	uint64_t *liova = calloc(nl + 1, 8), p1 = 0, p2 = 0;

	/* Scattered, descending page addresses: nothing may assume order. */
	for (i = 0; i < npages; i++)
		iova[i] = 0x7000000000ull - i * 3 * NKV_PAGE_SIZE;
	for (i = 0; i < nl; i++) {
		lva[i] = aligned_alloc(NKV_PAGE_SIZE, NKV_PAGE_SIZE);
		memset(lva[i], 0xa5, NKV_PAGE_SIZE);
		liova[i] = 0x100000000ull + i * 7 * NKV_PAGE_SIZE;
	}
	cr_assert_eq(nkv_h_prp_build(iova, npages, lva, liova, nl, &p1, &p2), 0, "%zu pages", npages);
	walk(iova, npages, lva, liova, nl, p1, p2);
	if (nl)
		cr_expect_eq(nkv_h_prp_build(iova, npages, lva, liova, nl - 1, &p1, &p2), -EINVAL,
			     "too few list pages refused");
	for (i = 0; i < nl; i++)
		free(lva[i]);
	free(lva);
	free(liova);
	free(iova);
}

Test(host_prp, list_page_counts)
{
	cr_expect_eq(nkv_h_prp_list_pages(1), 0);
	cr_expect_eq(nkv_h_prp_list_pages(2), 0);
	cr_expect_eq(nkv_h_prp_list_pages(3), 1);
	cr_expect_eq(nkv_h_prp_list_pages(513), 1, "512 entries fill one page");
	cr_expect_eq(nkv_h_prp_list_pages(514), 2, "513 entries need a chain");
	cr_expect_eq(nkv_h_prp_list_pages(1024), 2);
	cr_expect_eq(nkv_h_prp_list_pages(1 + 511 + 512), 2);
	cr_expect_eq(nkv_h_prp_list_pages(1 + 511 + 513), 3);
}

Test(host_prp, scattered_pages)
{
	static const size_t n[] = { 1, 2, 3, 4, 256, 512, 513, 514, 1024, 1025, 1536, 4096 };
	size_t i;

	for (i = 0; i < sizeof(n) / sizeof(n[0]); i++)
		prp_case(n[i]);
	cr_expect_eq(nkv_h_prp_build(NULL, 0, NULL, NULL, 0, NULL, NULL), -EINVAL);
}

Test(host_arena, first_fit_reuse_and_exhaustion)
{
	struct nkv_h_memsrc *a = nkv_h_memsrc_arena(16 * NKV_PAGE_SIZE);
	struct nkv_dmamem m[4], big;

	cr_assert_not_null(a);
	cr_expect_eq(a->is_device, 1);
	cr_expect_eq(a->emulated, 1);
	cr_assert_eq(a->ops->alloc(a, 4 * NKV_PAGE_SIZE, &m[0]), 0);
	cr_assert_eq(a->ops->alloc(a, 4 * NKV_PAGE_SIZE, &m[1]), 0);
	cr_assert_eq(a->ops->alloc(a, 4 * NKV_PAGE_SIZE, &m[2]), 0);
	cr_expect_eq(m[1].fd_offset, 4 * NKV_PAGE_SIZE);
	cr_expect_eq(m[0].fd, m[1].fd, "one arena memfd");
	memset(m[1].va, 0x5a, m[1].len);
	cr_expect_eq(a->ops->alloc(a, 8 * NKV_PAGE_SIZE, &big), -ENOMEM, "only 4 pages left");
	a->ops->free(a, &m[1]);
	cr_assert_eq(a->ops->alloc(a, 2 * NKV_PAGE_SIZE, &m[3]), 0);
	cr_expect_eq(m[3].fd_offset, 4 * NKV_PAGE_SIZE, "the freed gap, first fit");
	cr_expect_eq(((uint8_t *)m[3].va)[0], 0, "punched pages come back zeroed");
	cr_assert_eq(a->ops->alloc(a, 4 * NKV_PAGE_SIZE, &m[1]), 0);
	cr_expect_eq(m[1].fd_offset, 12 * NKV_PAGE_SIZE);
	a->ops->destroy(a);
}

Test(host_uri, schemes)
{
	const struct nkv_transport_ops *ops = NULL;
	const char *addr = NULL;
	char err[160] = "";

	cr_expect_eq(nkv_h_uri_parse("vfio-user:/tmp/x.sock", &ops, &addr, err, sizeof(err)), 0);
	cr_expect_eq(ops, &nkv_transport_vfio_user);
	cr_expect_str_eq(addr, "/tmp/x.sock");
	cr_expect_eq(nkv_h_uri_parse("pcie:0000:02:00.0", &ops, &addr, err, sizeof(err)), 0);
	cr_expect_eq(ops, &nkv_transport_pcie);
	cr_expect_str_eq(addr, "0000:02:00.0");
	cr_expect_eq(nkv_h_uri_parse("tcp:1.2.3.4:4420/nqn.x", &ops, &addr, err, sizeof(err)), 0);
	cr_expect_eq(ops, &nkv_transport_tcp);
	cr_expect_str_eq(addr, "1.2.3.4:4420/nqn.x");
	cr_expect_eq(nkv_h_uri_parse("rdma:1.2.3.4", &ops, &addr, err, sizeof(err)), -EPROTONOSUPPORT);
	cr_expect_neq(strstr(err, "unknown transport 'rdma'"), NULL, "%s", err);
	cr_expect_eq(nkv_h_uri_parse("vfio-user:", &ops, &addr, err, sizeof(err)), -EINVAL);
	cr_expect_eq(nkv_h_uri_parse("/tmp/x.sock", &ops, &addr, err, sizeof(err)), -EINVAL);
	cr_expect_eq(nkv_h_uri_parse("", &ops, &addr, NULL, 0), -EINVAL);
	cr_expect_eq(nkv_h_uri_parse(NULL, &ops, &addr, NULL, 0), -EINVAL);
}

Test(host_status, names)
{
	cr_expect_str_eq(nkv_status_str(0), "Success");
	cr_expect_str_eq(nkv_status_str(0x81), "Capacity Exceeded");
	cr_expect_str_eq(nkv_status_str(0x85), "Invalid Value Size");
	cr_expect_str_eq(nkv_status_str(0x86), "Invalid Key Size");
	cr_expect_str_eq(nkv_status_str(0x87), "Key Does Not Exist");
	cr_expect_str_eq(nkv_status_str(0x88), "Unrecovered Error");
	cr_expect_str_eq(nkv_status_str(0x89), "Key Exists");
	cr_expect_str_eq(nkv_status_str(0x101), "Invalid Queue Identifier");
	cr_expect_str_eq(nkv_status_str(0x0ff), "Unknown Generic Status");
	cr_expect_str_eq(nkv_status_str(0x7ff), "Vendor Specific Status");
	cr_expect_str_eq(nkv_status_str(0xffff), "Vendor Specific Status", "DNR/More masked");
}

/* Both ways a controller says "read-only namespace" read as one. */
Test(host_status, read_only)
{
	cr_expect(nkv_status_read_only(0x182), "SCT 1h SC 82h (rados-nkv)");
	cr_expect(nkv_status_read_only(0x020), "Namespace is Write Protected");
	cr_expect(nkv_status_read_only(0x182 | NKV_STATUS_DNR), "DNR changes nothing");
	cr_expect(!nkv_status_read_only(0x082), "generic 82h is Namespace Not Ready");
	cr_expect(!nkv_status_read_only(0x120));
	cr_expect(!nkv_status_read_only(0));
	cr_expect_eq(strncmp(nkv_status_str(0x182), "read-only namespace: ", 21), 0, "%s",
		     nkv_status_str(0x182));
	cr_expect_eq(strncmp(nkv_status_str(0x020), "read-only namespace: ", 21), 0, "%s",
		     nkv_status_str(0x020));
}

/* KV Identify Namespace data built by hand: the nkvX vendor bytes, and
 * what is left when they are absent, foreign or of an older version. */
static struct nkv_id_ns_kv id_with(const char *sig, uint8_t ver, uint8_t flags, uint32_t opts,
				   uint32_t max_ttl)
{
	struct nkv_id_ns_kv id;
	struct nkv_kv_vs vs;

	memset(&id, 0, sizeof(id));
	memset(&vs, 0, sizeof(vs));
	memcpy(vs.sig, sig, 4);
	vs.ver = ver;
	vs.flags = flags;
	vs.store_opts = opts;
	vs.max_ttl = max_ttl;
	memcpy(id.vs, &vs, sizeof(vs));
	return id;
}

Test(host_ns_ext, vendor_bytes)
{
	struct nkv_id_ns_kv id = id_with("nkvX", 1, NKV_KV_VS_SIZE_QUERY,
					 NKV_STORE_VENDOR_MASK | NKV_STORE_MUST_EXIST | (1u << 20), 86400);
	struct nkv_ns_ext e;

	nkv_h_ns_ext_parse(&id, 3, &e);
	cr_expect_eq(e.size, sizeof(e));
	cr_expect_eq(e.nsid, 3u);
	cr_expect_eq(e.advertised, 1u);
	cr_expect_eq(e.store_opts, NKV_STORE_VENDOR_MASK, "only the vendor bits, known ones");
	cr_expect_eq(e.max_ttl, 86400u);
	cr_expect_eq(e.size_query, 1u);
	cr_expect_eq(e.read_only, 0u);
	id = id_with("nkvX", 2, NKV_KV_VS_READ_ONLY, NKV_STORE_TTL, 0);
	nkv_h_ns_ext_parse(&id, 1, &e);
	cr_expect_eq(e.advertised, 1u, "a later version keeps version 1's fields");
	cr_expect_eq(e.store_opts, NKV_STORE_TTL);
	cr_expect_eq(e.read_only, 1u);
	cr_expect_eq(e.size_query, 0u);
}

Test(host_ns_ext, nothing_advertised)
{
	static const char *const sigs[] = { "nkvx", "NKVX", "abcd" };
	struct nkv_id_ns_kv id;
	struct nkv_ns_ext e;
	size_t i;

	for (i = 0; i < 3; i++) {
		id = id_with(sigs[i], 1, 0xff, NKV_STORE_VENDOR_MASK, 5);
		nkv_h_ns_ext_parse(&id, 1, &e);
		cr_expect_eq(e.advertised | e.store_opts | e.size_query | e.max_ttl | e.read_only, 0u,
			     "sig %s", sigs[i]);
	}
	id = id_with("nkvX", 0, 0xff, NKV_STORE_VENDOR_MASK, 5);
	nkv_h_ns_ext_parse(&id, 1, &e);
	cr_expect_eq(e.advertised | e.store_opts, 0u, "version 0");
	memset(&id, 0, sizeof(id));
	id.nsattr = NKV_NSATTR_WRITE_PROTECTED;
	nkv_h_ns_ext_parse(&id, 1, &e);
	cr_expect_eq(e.advertised, 0u);
	cr_expect_eq(e.read_only, 1u, "NSATTR is the base specification's, vendor bytes or not");
}

Test(host_ns_ext, option_names)
{
	char b[96];

	cr_expect_str_eq(nkv_h_store_opts_str(0, b, sizeof(b)), "none");
	cr_expect_str_eq(nkv_h_store_opts_str(NKV_STORE_MUST_EXIST, b, sizeof(b)), "none");
	cr_expect_str_eq(nkv_h_store_opts_str(NKV_STORE_VENDOR_MASK, b, sizeof(b)),
			 "TTL (option bit 3), ephemeral (option bit 4), touch (option bit 5)");
	cr_expect_str_eq(nkv_h_store_opts_str(NKV_STORE_TOUCH, b, 8), "touch (", "cut, terminated");
}

/* The library says nothing unasked: without a callback, NKV_LOG or the
 * trace, a log line goes nowhere (each Test runs in a process of its
 * own, so NKV_LOG is read afresh). */
Test(log, quiet_by_default, .init = cr_redirect_stderr)
{
	unsetenv("NKV_LOG");
	unsetenv("NKV_TRACE");
	nkv_h_log("a line no one asked for %d", 1);
	fflush(stderr);
	cr_expect_stderr_eq_str("");
}

Test(log, nkv_log_stderr_asks_for_it, .init = cr_redirect_stderr)
{
	setenv("NKV_LOG", "stderr", 1);
	unsetenv("NKV_TRACE");
	nkv_h_log("asked for %d", 2);
	fflush(stderr);
	cr_expect_stderr_eq_str("nkv: asked for 2\n");
}

Test(log, the_trace_asks_for_it, .init = cr_redirect_stderr)
{
	unsetenv("NKV_LOG");
	nkv_set_trace(1);
	nkv_h_log("traced %d", 3);
	nkv_set_trace(0);
	fflush(stderr);
	cr_expect_stderr_eq_str("nkv: traced 3\n");
}

static void log_to(void *ctx, const char *line)
{
	snprintf(ctx, 64, "%s", line);
}

/* A callback gets the line (without "nkv: " or a newline), and NKV_LOG
 * does not send it to stderr too; NULL goes back to the default. */
Test(log, callback_takes_every_line, .init = cr_redirect_stderr)
{
	char got[64] = "";

	setenv("NKV_LOG", "1", 1);
	nkv_set_log(log_to, got);
	nkv_h_log("to the callback %d", 4);
	nkv_set_log(NULL, NULL);
	cr_expect_str_eq(got, "to the callback 4");
	nkv_h_log("back to stderr %d", 5);
	fflush(stderr);
	cr_expect_stderr_eq_str("nkv: back to stderr 5\n");
}
