/* SPDX-License-Identifier: MIT */
/*
 * test_vfu_sigbus.c - a client takes pages of its registered memory away
 * (truncates an unsealed memfd, punches a hole in a hugetlb one) and then
 * has the target touch them: the target, which here is this very process,
 * catches the SIGBUS, fails that command with Data Transfer Error, drops
 * that client, and goes on serving every other client, values intact.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include "target/core/memguard.h"
#include "vfio-user/client.h"
#include "vfu_util.h"

#define DTE NKV_STATUS(NKV_SCT_GENERIC, NKV_SC_DATA_XFER_ERROR)

static struct tl_server srv;

static void up(void) { cr_assert_eq(vt_server_start(&srv, 0), 0); }
static void down(void) { tl_server_stop(&srv); }

static int store(struct vt_nvme *n, const char *key, unsigned page, const char *val)
{
	struct nkv_sqe s;

	memcpy(vt_page(n, page), val, strlen(val));
	vt_kv_sqe(&s, NKV_KV_STORE, key, vt_iova(n, page), (uint32_t)strlen(val));
	return vt_cmd(n, 1, &s, NULL);
}

/* 0 when key reads back as val. */
static int check(struct vt_nvme *n, const char *key, const char *val)
{
	struct nkv_sqe s;
	uint32_t dw0 = 0;

	memset(vt_page(n, VT_DATA + 1), 0, 256);
	vt_kv_sqe(&s, NKV_KV_RETRIEVE, key, vt_iova(n, VT_DATA + 1), 4096);
	if (vt_cmd(n, 1, &s, &dw0) || dw0 != strlen(val))
		return 1;
	return memcmp(vt_page(n, VT_DATA + 1), val, strlen(val)) != 0;
}

/* The second client: keys stored before the trouble must survive it. */
static void bystander_up(struct vt_nvme *b)
{
	char key[17], val[32];
	int i;

	cr_assert_eq(vt_nvme_up(b, srv.path), 0);
	for (i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "by%02d", i);
		snprintf(val, sizeof(val), "bystander value %d", i);
		cr_assert_eq(store(b, key, VT_DATA, val), 0);
	}
}

static void bystander_check(struct vt_nvme *b)
{
	char key[17], val[32];
	int i;

	for (i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "by%02d", i);
		snprintf(val, sizeof(val), "bystander value %d", i);
		cr_expect_eq(check(b, key, val), 0, "%s", key);
	}
}

/* The server drops the client: its socket reads end of file. */
static int dropped(struct vt_nvme *n)
{
	int i;

	for (i = 0; i < 300; i++) {
		if (n->ops->alive(n->tr))
			return 1;
		usleep(10000);
	}
	return 0;
}

/* A client that truncates its unsealed memfd under a Store (the target
 * gathers from the vanished page) and one under a Retrieve (the target
 * scatters into it). */
Test(vfu_sigbus, truncated_memfd, .init = up, .fini = down)
{
	const unsigned gone = 40;	/* first page past the new end */
	struct vt_nvme a, b, c;
	uint64_t f0 = nkv_guard_faults();
	struct nkv_sqe s;

	bystander_up(&b);
	for (int op = 0; op < 2; op++) {
		cr_assert_eq(vt_nvme_up_mem(&a, srv.path, VT_MEM_UNSEALED), 0);
		cr_assert_eq(store(&a, "mine", VT_DATA, "before the truncate"), 0);
		cr_assert_eq(ftruncate(a.mem.fd, (off_t)gone * NKV_PAGE_SIZE), 0);
		/* The page is not touched here: the test is the target too. */
		vt_kv_sqe(&s, op ? NKV_KV_RETRIEVE : NKV_KV_STORE, "mine",
			  vt_iova(&a, gone + 2), 64);
		cr_expect_eq(vt_cmd(&a, 1, &s, NULL), DTE, "Data Transfer Error");
		cr_expect(dropped(&a), "the client must be dropped");
		vt_nvme_down(&a);
	}
	cr_expect_eq(nkv_guard_faults() - f0, 2, "both faults caught");
	bystander_check(&b);
	/* The target still takes new clients. */
	cr_assert_eq(vt_nvme_up(&c, srv.path), 0);
	cr_expect_eq(check(&c, "mine", "before the truncate"), 0);
	vt_nvme_down(&c);
	vt_nvme_down(&b);
}

/* The SQ itself vanishes: nothing to answer, the client is dropped. */
Test(vfu_sigbus, truncated_queue_memory, .init = up, .fini = down)
{
	struct vt_nvme a, b;

	bystander_up(&b);
	cr_assert_eq(vt_nvme_up_mem(&a, srv.path, VT_MEM_UNSEALED), 0);
	/* Truncate to nothing: rings and data go. Ring the SQ doorbell as
	 * if a command had been written (it cannot be: the page is gone). */
	cr_assert_eq(ftruncate(a.mem.fd, 0), 0);
	a.db[2u << a.dstrd] = 1;
	cr_expect(dropped(&a), "the client must be dropped");
	vt_nvme_down(&a);
	bystander_check(&b);
	vt_nvme_down(&b);
}

static long hugepages_free(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long v = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "HugePages_Free: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* Seals do not stop FALLOC_FL_PUNCH_HOLE. On hugetlb, the next touch of
 * the hole needs a fresh huge page: SIGBUS when the pool has none left,
 * a zeroed page otherwise. Either way the target lives and the other
 * client's values stay; which of the two happened is reported. */
Test(vfu_sigbus, hole_punched_hugetlb, .init = up, .fini = down)
{
	const unsigned hole = 512;	/* the second huge page */
	struct vt_nvme a, b;
	struct nkv_sqe s;
	int st;

	if (hugepages_free() < 2)
		cr_skip_test("no hugepages configured (HugePages_Free < 2 in /proc/meminfo)");
	bystander_up(&b);
	cr_assert_eq(vt_nvme_up_mem(&a, srv.path, VT_MEM_HUGETLB), 0);
	cr_assert_eq(store(&a, "huge", hole, "in the second huge page"), 0);
	cr_assert_eq(fallocate(a.mem.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       (off_t)hole * NKV_PAGE_SIZE, 2u << 20), 0);
	vt_kv_sqe(&s, NKV_KV_STORE, "huge", vt_iova(&a, hole), 64);
	st = vt_cmd(&a, 1, &s, NULL);
	cr_expect(st == 0 || st == DTE, "status %#x", st);
	if (st == DTE)
		cr_expect(dropped(&a));
	cr_log_info("hole punched in hugetlb: %s", st ? "SIGBUS caught, client dropped"
						      : "pool had a page: read zeros");
	vt_nvme_down(&a);
	bystander_check(&b);
	vt_nvme_down(&b);
}
