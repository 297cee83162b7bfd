/* SPDX-License-Identifier: MIT */
/*
 * Memory regions (issue 42): values stored from and retrieved into the
 * caller's own memory, against an in-process nkv-target over vfio-user,
 * every byte checked. Each kind of region (nkv_mem_alloc, a memfd and a
 * file by fd, anonymous memory by messages), each data-pointer form (one
 * SGL Data Block, Segment / Last Segment lists, PRP1/PRP2, PRPs from the
 * region's table, per-command PRP lists with a chain, a key head as the
 * first descriptor), the sync API and the cpu engine (a wave, a block);
 * what PRP-only and dword-SGL queue pairs refuse; deregistration while a
 * command uses a region; queue pairs without slots; short Retrieves
 * reported; a 1-page region and a sparse 4 GiB one.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "big_util.h"
#include "host_util.h"
#include "nkv_block.h"
#include "nkv_cpu.h"
#include "nkv_kvcache.h"
#include "nkv_mr.h"

#define PG 4096u
#define MiB (1u << 20)

static struct tl_server srv;
static struct nkv_ctrl *ctrl;
static struct nkv_qpair *qp;

static void up_with(const struct ht_server_opts *so, uint32_t qflags)
{
	struct nkv_qpair_opts o = { .size = sizeof(o), .depth = 128, .flags = qflags };
	char err[256] = "";

	cr_assert_eq(ht_server_start(&srv, so), 0);
	cr_assert_eq(ht_connect(&srv, 0, 2, &ctrl, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nkv_qpair_create(ctrl, &o, &qp), 0);
}

static void setup(void) { up_with(NULL, 0); }
static void setup_prp(void) { up_with(NULL, NKV_QPAIR_PRP_ONLY); }
static void setup_noslots(void) { up_with(NULL, NKV_QPAIR_NO_SLOTS); }
static void setup_short(void) { up_with(NULL, NKV_QPAIR_REPORT_SHORT); }

/* Controllers that advertise dword-aligned SGLs only (SGLS 10b), and no
 * SGLs at all (bits 1:0 00b). */
static void setup_dword(void)
{
	struct ht_server_opts so = { .sgls = NKV_SGLS_DWORD_ALIGNED };

	up_with(&so, 0);
}

static void setup_no_sgl(void)
{
	struct ht_server_opts so = { .sgls = NKV_SGLS_LONGER_THAN_DATA };

	up_with(&so, 0);
}

static void setup_slow(void)
{
	struct ht_server_opts so = { .delay_hold_us = 300000 };

	up_with(&so, 0);
}

static void down(void)
{
	big_log_stop();
	nkv_qpair_destroy(qp);
	nkv_ctrl_close(ctrl);
	tl_server_stop(&srv);
}

/* Store @len bytes of pattern @seed from (@mr, @off), Retrieve them into
 * (@mr2, @off2) and check every byte. */
static void roundtrip(struct nkv_mr *mr, uint8_t *base, size_t off, struct nkv_mr *mr2,
		      uint8_t *base2, size_t off2, uint32_t len, const char *key, uint32_t seed)
{
	uint32_t klen = (uint32_t)strlen(key), vlen = 0;

	ht_fill(base + off, len, seed);
	cr_assert_eq(nkv_store_mr(qp, key, klen, 0, mr, off, len), 0, "store %s %u", key, len);
	memset(base2 + off2, 0xa5, len);
	cr_assert_eq(nkv_retrieve_mr(qp, key, klen, mr2, off2, len, &vlen), 0, "retrieve %s", key);
	cr_assert_eq(vlen, len);
	cr_assert_eq(ht_check(base2 + off2, len, seed), -1, "%s: %u bytes at %zu", key, len, off2);
}

Test(host_mr, alloc_ranges_every_size, .init = setup, .fini = down)
{
	static const uint32_t sizes[] = { 1, 7, 4096, 4097, 65536, 2 * MiB, 2 * MiB + 3 };
	static const size_t offs[] = { 0, 4, 12288, 4093, 8 * PG };
	struct nkv_mr *a, *b;
	struct nkv_mr_info in = { .size = sizeof(in) };
	void *pa, *pb;
	unsigned i, j;

	cr_assert_eq(nkv_mem_alloc(ctrl, 8 * MiB, 0, &a, &pa), 0);
	cr_assert_eq(nkv_mem_alloc(ctrl, 8 * MiB, 0, &b, &pb), 0);
	cr_assert_eq(nkv_mem_info(a, &in), 0);
	cr_expect_eq(in.by_messages, 0);
	cr_expect_eq(in.contiguous, 1);
	cr_expect_eq(in.prp_table, 1);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (j = 0; j < sizeof(offs) / sizeof(offs[0]); j++) {
			char key[16];

			snprintf(key, sizeof(key), "r%u-%u", i, j);
			roundtrip(a, pa, offs[j], b, pb, offs[(j + 1) % 5], sizes[i], key, i * 7 + j);
		}
	cr_assert_eq(nkv_mem_deregister(a), 0);
	cr_assert_eq(nkv_mem_deregister(b), 0);
}

/* Runs spread over the region: 64 runs of a 2 MiB value, 300 small runs
 * (a Segment chained to a Last Segment), odd offsets. */
static void scatter(struct nkv_mr *mr, uint8_t *base, uint32_t n, uint32_t each, uint32_t gap,
		    uint32_t skew, const char *key, int expect)
{
	struct nkv_iov *iov = calloc(n, sizeof(*iov));
	uint8_t *want = malloc((size_t)n * each);
	uint32_t i, vlen = 0, klen = (uint32_t)strlen(key);

	cr_assert(iov && want);
	ht_fill(want, n * each, n + each);
	for (i = 0; i < n; i++) {
		iov[i] = (struct nkv_iov){ mr, (size_t)i * (each + gap) + skew, each };
		memcpy(base + iov[i].off, want + (size_t)i * each, each);
	}
	cr_assert_eq(nkv_store_iov(qp, key, klen, 0, iov, n), expect, "store %u runs", n);
	if (expect == 0) {
		for (i = 0; i < n; i++)
			memset(base + iov[i].off, 0, each);
		cr_assert_eq(nkv_retrieve_iov(qp, key, klen, iov, n, &vlen), 0);
		cr_assert_eq(vlen, n * each);
		for (i = 0; i < n; i++)
			cr_assert_eq(memcmp(base + iov[i].off, want + (size_t)i * each, each), 0,
				     "run %u of %u", i, n);
	}
	free(iov);
	free(want);
}

Test(host_mr, scatter_sgl_blocks_and_segments, .init = setup, .fini = down)
{
	struct nkv_mr *mr;
	void *p;

	cr_assert_eq(nkv_mem_alloc(ctrl, 64 * MiB, 0, &mr, &p), 0);
	scatter(mr, p, 64, 32768, 12345, 3, "s64", 0);
	scatter(mr, p, 300, 1000, 77, 1, "s300", 0);
	scatter(mr, p, NKV_IOV_MAX, 64, 64, 0, "smax", 0);
	/* A key in head form is the first Data Block of the list. */
	scatter(mr, p, 5, 4000, 96, 5, "a-key-of-more-than-sixteen-bytes", 0);
	cr_assert_eq(nkv_mem_deregister(mr), 0);
}

Test(host_mr, too_many_runs_refused, .init = setup, .fini = down)
{
	struct nkv_iov iov[2];
	struct nkv_mr *mr;
	void *p;

	cr_assert_eq(nkv_mem_alloc(ctrl, MiB, 0, &mr, &p), 0);
	iov[0] = (struct nkv_iov){ mr, 0, 10 };
	iov[1] = (struct nkv_iov){ mr, MiB - 4, 10 };
	big_log_start();
	cr_expect_eq(nkv_store_iov(qp, "x", 1, 0, iov, 2), -EINVAL);
	cr_expect(strstr(big_log(), "run 1 (offset 1048572, 10 bytes): empty, or outside"),
		  "%s", big_log());
	cr_expect_eq(nkv_store_iov(qp, "x", 1, 0, iov, 0), -EINVAL);
	cr_expect_eq(nkv_store_iov(qp, "x", 1, 0, iov, NKV_IOV_MAX + 1), -EINVAL);
	cr_assert_eq(nkv_mem_deregister(mr), 0);
}

Test(host_mr, prp_only_table_lists_and_refusals, .init = setup_prp, .fini = down)
{
	struct nkv_qpair_info qi = { .size = sizeof(qi) };
	struct nkv_mr *mr, *dst;
	struct nkv_iov iov[3];
	void *p, *d;

	cr_assert_eq(nkv_qpair_get_info(qp, &qi), 0);
	cr_assert_eq(qi.dptr, 0);
	cr_assert_eq(nkv_mem_alloc(ctrl, 16 * MiB, 0, &mr, &p), 0);
	cr_assert_eq(nkv_mem_alloc(ctrl, 16 * MiB, 0, &dst, &d), 0);
	/* PRP1 only, PRP1 + PRP2, the table (from page 10), and the table's
	 * exact-fit case (the list ends on a chain entry of the table: a
	 * per-command list instead): a range of 512 pages from page 0. */
	roundtrip(mr, p, 100, dst, d, 200, 3000, "p1", 1);
	roundtrip(mr, p, 100, dst, d, 4, 6000, "p2", 2);
	roundtrip(mr, p, 10 * PG, dst, d, 20 * PG + 8, 3 * MiB, "tab", 3);
	roundtrip(mr, p, 0, dst, d, 0, 2 * MiB, "exact", 4);
	{
		/* Which list each took: the table's entry after the first
		 * page, or the command's own list page. */
		const struct nkv_dev_mr *dm = nkv_mem_dev(mr);
		const uint64_t *tab = (const uint64_t *)(uintptr_t)dm->tab_addr;
		struct nkv_dev_qp *dq = nkv_qpair_dev(qp);
		struct nkv_prep t = nkv_dev_store_mr(dq, 3, "k", 1, 0, dm, 10 * PG, 3 * MiB);
		struct nkv_prep e = nkv_dev_store_mr(dq, 3, "k", 1, 0, dm, 0, 2 * MiB);

		cr_assert_eq(t.err, 0);
		cr_expect_eq(t.sqe.prp1, dm->iova + 10 * PG);
		cr_expect_eq(t.sqe.prp2, tab[0] + 8u * 11u);
		cr_assert_eq(e.err, 0);
		cr_expect_eq(e.sqe.prp2, nkv_cmd_iova(dq, 3, PG));
		cr_expect_eq(nkv_sqe_psdt(&t.sqe), NKV_PSDT_PRP);
	}
	cr_expect(nkv_prp_tab_fits(1, 511) == 0);
	cr_expect(nkv_prp_tab_fits(0, 512) == 0);
	cr_expect(nkv_prp_tab_fits(1, 510) == 1);
	cr_expect(nkv_prp_tab_fits(1, 512) == 1);
	/* Two page-aligned runs of 767 pages in all: a per-command list that
	 * chains to its second page. */
	ht_fill((uint8_t *)p + 2 * MiB, 3 * MiB, 9);
	iov[0] = (struct nkv_iov){ mr, 2 * MiB + 100, 2 * MiB - 100 };
	iov[1] = (struct nkv_iov){ mr, 8 * MiB, MiB };
	memcpy((uint8_t *)p + 8 * MiB, (uint8_t *)p + 4 * MiB, MiB);
	cr_assert_eq(nkv_store_iov(qp, "two", 3, 0, iov, 2), 0);
	iov[2] = (struct nkv_iov){ dst, 0, 3 * MiB - 100 };
	cr_assert_eq(nkv_retrieve_iov(qp, "two", 3, &iov[2], 1, NULL), 0);
	cr_assert_eq(memcmp(d, (uint8_t *)p + 2 * MiB + 100, 2 * MiB - 100), 0);
	cr_assert_eq(memcmp((uint8_t *)d + 2 * MiB - 100, (uint8_t *)p + 8 * MiB, MiB), 0);
	/* An interior boundary off a page: refused before anything is sent. */
	big_log_start();
	iov[1].off = 8 * MiB + 8;
	cr_expect_eq(nkv_store_iov(qp, "two", 3, 0, iov, 2), -EINVAL);
	cr_expect(strstr(big_log(), "run 1 (offset 8388616, 1048576 bytes): PRPs need"), "%s",
		  big_log());
	/* A key in head form under PRPs: the value must start on a page. */
	cr_expect_eq(nkv_store_mr(qp, "a-key-of-more-than-sixteen", 26, 0, mr, 4, 100), -EINVAL);
	cr_expect(strstr(big_log(), "value to start on a 4 KiB page"), "%s", big_log());
	roundtrip(mr, p, 3 * PG, dst, d, 5 * PG, 70000, "a-key-of-more-than-sixteen", 5);
	cr_assert_eq(nkv_mem_deregister(mr), 0);
	cr_assert_eq(nkv_mem_deregister(dst), 0);
}

/* A controller that takes dword-aligned SGLs only (SGLS 10b): dword-
 * aligned runs go as SGLs, others as PRPs where those can carry them,
 * else EINVAL naming the dword rule. */
Test(host_mr, dword_sgl_only, .init = setup_dword, .fini = down)
{
	struct nkv_qpair_info qi = { .size = sizeof(qi) };
	struct nkv_mr *mr;
	void *p;

	cr_assert_eq(nkv_qpair_get_info(qp, &qi), 0);
	cr_assert_eq(qi.dptr, NKV_DEV_DPTR_SGL_DWORD);
	cr_assert_eq(nkv_mem_alloc(ctrl, 4 * MiB, 0, &mr, &p), 0);
	scatter(mr, p, 8, 4096, 100, 4, "dw", 0);
	big_log_start();
	scatter(mr, p, 8, 4096, 100, 1, "odd", -EINVAL);
	cr_expect(strstr(big_log(), "run 0 (offset 1, 4096 bytes): not dword aligned"), "%s",
		  big_log());
	/* A head of 19 bytes is no dword: PRPs carry it, the value on a page. */
	scatter(mr, p, 4, 8192, 4096, 0, "seventeen-bytes-k", 0);
	cr_assert_eq(nkv_mem_deregister(mr), 0);
}

/* A controller that takes no SGLs: page-aligned runs and the region's
 * table as PRPs, scattered small runs refused before anything is sent. */
Test(host_mr, prp_only_controller, .init = setup_no_sgl, .fini = down)
{
	struct nkv_qpair_info qi = { .size = sizeof(qi) };
	struct nkv_mr *mr;
	void *p;

	cr_assert_eq(nkv_qpair_get_info(qp, &qi), 0);
	cr_assert_eq(qi.dptr, 0);
	cr_assert_eq(nkv_mem_alloc(ctrl, 16 * MiB, 0, &mr, &p), 0);
	roundtrip(mr, p, 5 * PG, mr, p, 8 * MiB, 3 * MiB + 12, "tab", 71);
	scatter(mr, p, 6, 2 * PG, PG, 0, "pages", 0);
	big_log_start();
	scatter(mr, p, 6, 1000, 8, 0, "small", -EINVAL);
	cr_expect(strstr(big_log(), "run 0 (offset 0, 1000 bytes): PRPs need"), "%s", big_log());
	cr_assert_eq(nkv_mem_deregister(mr), 0);
	{
		/* PRPs into memory reached by messages: the table's entries
		 * name it as any other. */
		size_t len = 8 * MiB;
		uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				  -1, 0);

		cr_assert_neq(m, MAP_FAILED);
		cr_assert_eq(nkv_mem_register(ctrl, m, len, NKV_MEM_MESSAGES, &mr), 0);
		roundtrip(mr, m, PG, mr, m, 4 * MiB, 3 * MiB + 100, "msg-prp", 72);
		cr_assert_eq(nkv_mem_deregister(mr), 0);
		munmap(m, len);
	}
}

Test(host_mr, register_anonymous_by_messages_only_when_allowed, .init = setup, .fini = down)
{
	size_t len = 4 * MiB;
	uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct nkv_mr_info in = { .size = sizeof(in) };
	struct nkv_mr *mr;

	cr_assert_neq(m, MAP_FAILED);
	big_log_start();
	cr_expect_eq(nkv_mem_register(ctrl, m, len, 0, &mr), -EOPNOTSUPP);
	cr_expect(strstr(big_log(), "NKV_MEM_MESSAGES"), "%s", big_log());
	cr_expect_eq(nkv_mem_register(ctrl, m + 1, len - PG, NKV_MEM_MESSAGES, &mr), -EINVAL);
	cr_assert_eq(nkv_mem_register(ctrl, m, len, NKV_MEM_MESSAGES, &mr), 0);
	cr_assert_eq(nkv_mem_info(mr, &in), 0);
	cr_expect_eq(in.by_messages, 1);
	{
		/* Two registrations of one page (two small buffers that
		 * share it): controller addresses of their own, no clash. */
		struct nkv_mr *a, *b;

		cr_assert_eq(nkv_mem_register(ctrl, m + 3 * MiB, PG, NKV_MEM_MESSAGES, &a), 0);
		cr_assert_eq(nkv_mem_register(ctrl, m + 3 * MiB, PG, NKV_MEM_MESSAGES, &b), 0);
		roundtrip(a, m + 3 * MiB, 0, b, m + 3 * MiB, 2048, 1000, "shared-page", 15);
		cr_assert_eq(nkv_mem_deregister(a), 0);
		cr_assert_eq(nkv_mem_deregister(b), 0);
	}
	roundtrip(mr, m, 0, mr, m, 2 * MiB, MiB + 5, "anon", 11);
	scatter(mr, m, 16, 5000, 3, 1, "anon-s", 0);
	cr_assert_eq(nkv_mem_deregister(mr), 0);
	munmap(m, len);
}

Test(host_mr, register_fd_memfd_and_file, .init = setup, .fini = down)
{
	char path[] = "/tmp/nkv-mr-XXXXXX";
	int mfd = memfd_create("mr", 0), ffd = mkstemp(path);
	size_t len = 2 * MiB;
	struct nkv_mr_info in = { .size = sizeof(in) };
	struct nkv_mr *a, *b;
	uint8_t *pa, *pb;

	cr_assert(mfd >= 0 && ffd >= 0);
	unlink(path);
	cr_assert_eq(ftruncate(mfd, (off_t)(len + PG)), 0);
	cr_assert_eq(ftruncate(ffd, (off_t)len), 0);
	pa = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, PG);
	pb = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, ffd, 0);
	cr_assert(pa != MAP_FAILED && pb != MAP_FAILED);
	cr_expect_eq(nkv_mem_register_fd(ctrl, ffd, PG, pb, len, 0, &b), -EINVAL);
	cr_assert_eq(nkv_mem_register_fd(ctrl, mfd, PG, pa, len, 0, &a), 0);
	cr_assert_eq(nkv_mem_register_fd(ctrl, ffd, 0, pb, len, 0, &b), 0);
	cr_assert_eq(nkv_mem_info(b, &in), 0);
	cr_expect_eq(in.by_messages, 0);
	roundtrip(a, pa, 12, b, pb, 4096, MiB, "fd", 21);
	roundtrip(b, pb, 0, a, pa, 0, 2 * MiB, "fd2", 22);
	cr_assert_eq(nkv_mem_deregister(a), 0);
	cr_assert_eq(nkv_mem_deregister(b), 0);
	munmap(pa, len);
	munmap(pb, len);
	close(mfd);
	close(ffd);
}

/* GPU memory (NKV_MEM_DEVICE) on the emulated runtime, whose device
 * memory is host memory: over vfio-user only by messages, served with the
 * runtime's copies, registered or allocated by the library. */
Test(host_mr, device_memory_by_messages, .init = setup, .fini = down)
{
	size_t len = 2 * MiB;
	uint8_t *m = aligned_alloc(PG, len), *pa;
	struct nkv_mr_info in = { .size = sizeof(in) };
	struct nkv_mr *mr, *a;

	cr_assert(m);
	big_log_start();
	cr_expect_eq(nkv_mem_register(ctrl, m, len, NKV_MEM_DEVICE, &mr), -EOPNOTSUPP);
	cr_expect(strstr(big_log(), "only by messages") && strstr(big_log(), "NKV_MEM_MESSAGES"),
		  "%s", big_log());
	cr_expect_eq(nkv_mem_register_fd(ctrl, 0, 0, m, len, NKV_MEM_DEVICE, &mr), -EINVAL);
	cr_assert_eq(nkv_mem_register(ctrl, m, len, NKV_MEM_DEVICE | NKV_MEM_MESSAGES, &mr), 0);
	cr_assert_eq(nkv_mem_info(mr, &in), 0);
	cr_expect(in.device == 1 && in.by_messages == 1, "device %u by_messages %u", in.device,
		  in.by_messages);
	cr_assert_eq(nkv_mem_alloc(ctrl, len, NKV_MEM_DEVICE, &a, (void **)&pa), 0);
	cr_assert_eq(nkv_mem_info(a, &in), 0);
	cr_expect(in.device == 1 && in.by_messages == 1, "alloc: device %u by_messages %u",
		  in.device, in.by_messages);
	roundtrip(mr, m, 4, a, pa, 8192, MiB + 3, "gpu-1", 81);
	roundtrip(a, pa, 0, mr, m, MiB, MiB, "gpu-2", 82);
	scatter(a, pa, 9, 3000, 5, 2, "gpu-s", 0);
	cr_assert_eq(nkv_mem_deregister(mr), 0);
	cr_assert_eq(nkv_mem_deregister(a), 0);
	free(m);
}

Test(host_mr, access_rights_checked, .init = setup, .fini = down)
{
	struct nkv_mr *ro, *wo;
	void *pr, *pw;

	cr_assert_eq(nkv_mem_alloc(ctrl, MiB, NKV_MEM_READ, &ro, &pr), 0);
	cr_assert_eq(nkv_mem_alloc(ctrl, MiB, NKV_MEM_WRITE, &wo, &pw), 0);
	roundtrip(ro, pr, 0, wo, pw, 0, 5000, "rw", 31);
	big_log_start();
	cr_expect_eq(nkv_retrieve_mr(qp, "rw", 2, ro, 0, 5000, NULL), -EINVAL);
	cr_expect_eq(nkv_store_mr(qp, "rw", 2, 0, wo, 0, 5000), -EINVAL);
	cr_expect(strstr(big_log(), "not registered for this direction"), "%s", big_log());
	cr_expect_eq(nkv_mem_alloc(ctrl, MiB, 0x1000, &wo, &pw), -EINVAL);
	cr_assert_eq(nkv_mem_deregister(ro), 0);
}

struct slow_job {
	struct nkv_mr *mr;
	int rc;
};

static void *slow_retrieve(void *arg)
{
	struct slow_job *j = arg;

	j->rc = nkv_retrieve_mr(qp, "slow", 4, j->mr, 0, 4096, NULL);
	return NULL;
}

Test(host_mr, deregister_while_in_use_is_ebusy, .init = setup_slow, .fini = down)
{
	struct slow_job j = { 0 };
	pthread_t t;
	void *p;

	cr_assert_eq(nkv_mem_alloc(ctrl, MiB, 0, &j.mr, &p), 0);
	cr_assert_eq(nkv_store_mr(qp, "slow", 4, 0, j.mr, 0, 4096), 0);
	cr_assert_eq(pthread_create(&t, NULL, slow_retrieve, &j), 0);
	usleep(100000);
	big_log_start();
	cr_expect_eq(nkv_mem_deregister(j.mr), -EBUSY);
	cr_expect(strstr(big_log(), "a synchronous command uses the region"), "%s", big_log());
	pthread_join(t, NULL);
	cr_expect_eq(j.rc, 0);
	cr_assert_eq(nkv_mem_deregister(j.mr), 0);
}

Test(host_mr, queue_pair_without_slots, .init = setup_noslots, .fini = down)
{
	struct nkv_qpair_opts o = { .size = sizeof(o), .slots = 4, .flags = NKV_QPAIR_NO_SLOTS };
	struct nkv_qpair_info qi = { .size = sizeof(qi) };
	struct nkv_result res;
	struct nkv_qpair *q2;
	struct nkv_mr *mr;
	char buf[64];
	void *p;

	cr_assert_eq(nkv_qpair_get_info(qp, &qi), 0);
	cr_expect_eq(qi.slots, 0);
	cr_expect_eq(qi.cmds, 127);
	cr_expect_null(nkv_qpair_slot(qp, 0, NULL));
	cr_expect_eq(nkv_qpair_create(ctrl, &o, &q2), -EINVAL);
	cr_assert_eq(nkv_mem_alloc(ctrl, 4 * MiB, 0, &mr, &p), 0);
	roundtrip(mr, p, 0, mr, p, 2 * MiB, 2 * MiB, "ns", 41);
	/* The buffer API keeps its own buffer. */
	cr_assert_eq(nkv_store(qp, "b", 1, "hello", 5, 0, &res), 0);
	cr_assert_eq(nkv_retrieve(qp, "b", 1, buf, sizeof(buf), &res), 0);
	cr_expect_eq(res.dw0, 5);
	cr_assert_eq(nkv_mem_deregister(mr), 0);
}

Test(host_mr, short_retrieve_reported_when_asked, .init = setup_short, .fini = down)
{
	struct nkv_result res;
	struct nkv_mr *mr;
	uint32_t vlen = 0;
	char buf[16];
	uint8_t *p;

	cr_assert_eq(nkv_mem_alloc(ctrl, MiB, 0, &mr, (void **)&p), 0);
	ht_fill(p, 10000, 51);
	cr_assert_eq(nkv_store_mr(qp, "long", 4, 0, mr, 0, 10000), 0);
	cr_expect_eq(nkv_retrieve_mr(qp, "long", 4, mr, 20000, 6000, &vlen), -EMSGSIZE);
	cr_expect_eq(vlen, 10000);
	cr_expect_eq(memcmp(p + 20000, p, 6000), 0, "the prefix landed");
	cr_expect_eq(nkv_retrieve_mr(qp, "long", 4, mr, 40000, 10000, &vlen), 0);
	cr_expect_eq(nkv_retrieve(qp, "long", 4, buf, sizeof(buf), &res), -EMSGSIZE);
	cr_expect_eq(res.dw0, 10000);
	cr_expect_eq(memcmp(buf, p, sizeof(buf)), 0);
	/* The size query is never short. */
	cr_expect_eq(nkv_retrieve(qp, "long", 4, NULL, 0, &res), 0);
	cr_expect_eq(res.dw0, 10000);
	cr_assert_eq(nkv_mem_deregister(mr), 0);
}

Test(host_mr, short_retrieve_is_success_by_default, .init = setup, .fini = down)
{
	struct nkv_mr *mr;
	uint32_t vlen = 0;
	void *p;

	cr_assert_eq(nkv_mem_alloc(ctrl, MiB, 0, &mr, &p), 0);
	cr_assert_eq(nkv_store_mr(qp, "long", 4, 0, mr, 0, 10000), 0);
	cr_expect_eq(nkv_retrieve_mr(qp, "long", 4, mr, 20000, 6000, &vlen), 0);
	cr_expect_eq(vlen, 10000);
	cr_expect_eq(nkv_retrieve_mr(qp, "none", 4, mr, 0, 10, &vlen), 0x87);
	cr_assert_eq(nkv_mem_deregister(mr), 0);
}

Test(host_mr, one_page_and_sparse_4gib_regions, .init = setup, .fini = down)
{
	size_t big = 4ull << 30;
	struct nkv_mr *one, *huge;
	uint8_t *p1, *ph;

	cr_assert_eq(nkv_mem_alloc(ctrl, PG, 0, &one, (void **)&p1), 0);
	roundtrip(one, p1, 0, one, p1, 0, PG, "one", 61);
	cr_assert_eq(nkv_mem_alloc(ctrl, big, 0, &huge, (void **)&ph), 0);
	roundtrip(huge, ph, big - 2 * MiB, huge, ph, 3ull << 30, 2 * MiB, "far", 62);
	roundtrip(one, p1, 0, huge, ph, big - PG, PG, "one-far", 63);
	cr_assert_eq(nkv_mem_deregister(huge), 0);
	cr_assert_eq(nkv_mem_deregister(one), 0);
}

/* ---- device code on the cpu engine ---- */

struct mr_job {
	struct nkv_dev_qp *qp;
	const struct nkv_dev_mr *mr;
	uint32_t each;
	int store;
	int ok, bad;
};

static void mr_wave_lane(void *arg)
{
	struct mr_job *j = arg;
	struct nkv_wave w = nkv_wave_enter();
	uint32_t r = nkv_wave_rank(w);
	uint8_t key[16];
	uint32_t klen = ht_key(r, 77, key);
	uint64_t off = (uint64_t)r * j->each * 2u + r;
	struct nkv_prep p = j->store ? nkv_dev_store_mr(j->qp, nkv_wave_slot(w, 0), key, klen, 0,
							j->mr, off, j->each)
				     : nkv_dev_retrieve_mr(j->qp, nkv_wave_slot(w, 0), key, klen,
							   j->mr, off + j->each, j->each);
	struct nkv_dev_result res = nkv_wave_exec(w, j->qp, 1, p);

	if (!res.err && !res.status && (j->store || res.dw0 == j->each))
		__atomic_fetch_add(&j->ok, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&j->bad, 1, __ATOMIC_RELAXED);
}

Test(host_mr, wave_stores_and_retrieves_in_place, .init = setup, .fini = down)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), NKV_CPU_FIBERS, 1, 32, 0 };
	struct mr_job j = { nkv_qpair_dev(qp), NULL, 70000, 1, 0, 0 };
	struct nkv_mr *mr;
	uint8_t *p;
	uint32_t r;

	cr_assert_eq(nkv_mem_alloc(ctrl, 8 * MiB, 0, &mr, (void **)&p), 0);
	j.mr = nkv_mem_dev(mr);
	for (r = 0; r < 32; r++)
		ht_fill(p + (size_t)r * j.each * 2u + r, j.each, r);
	cr_assert_eq(nkv_cpu_launch(&cfg, mr_wave_lane, &j), 0);
	cr_assert_eq(j.ok, 32, "%d bad", j.bad);
	j.store = 0;
	j.ok = 0;
	cr_assert_eq(nkv_cpu_launch(&cfg, mr_wave_lane, &j), 0);
	cr_assert_eq(j.ok, 32, "%d bad", j.bad);
	for (r = 0; r < 32; r++)
		cr_assert_eq(ht_check(p + (size_t)r * j.each * 2u + r + j.each, j.each, r), -1,
			     "lane %u", r);
	cr_assert_eq(nkv_mem_deregister(mr), 0);
}

struct busy_job {
	struct nkv_dev_qp *qp;
	struct nkv_mr *mr;
	int while_in_flight, after;
};

/* A wave submits Stores from the region, its leader tries to deregister
 * it before waiting (the commands are in flight), then after. */
static void mr_busy_lane(void *arg)
{
	struct busy_job *j = arg;
	struct nkv_wave w = nkv_wave_enter();
	uint8_t key[16];
	uint32_t klen = ht_key(nkv_wave_rank(w), 5, key);
	struct nkv_ticket t = nkv_wave_submit(
		w, j->qp, 1,
		nkv_dev_store_mr(j->qp, nkv_wave_slot(w, 0), key, klen, 0, nkv_mem_dev(j->mr),
				 (uint64_t)nkv_wave_rank(w) * PG, 100));

	if (w.lane == w.leader)
		j->while_in_flight = nkv_mem_deregister(j->mr);
	nkv_wave_wait(w, j->qp, t);
	if (w.lane == w.leader)
		j->after = nkv_mem_deregister(j->mr);
}

Test(host_mr, deregister_while_a_wave_has_commands_in_flight, .init = setup, .fini = down)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), NKV_CPU_FIBERS, 1, 8, 0 };
	struct busy_job j = { nkv_qpair_dev(qp), NULL, 1, 1 };
	void *p;

	cr_assert_eq(nkv_mem_alloc(ctrl, MiB, 0, &j.mr, &p), 0);
	big_log_start();
	cr_assert_eq(nkv_cpu_launch(&cfg, mr_busy_lane, &j), 0);
	cr_expect_eq(j.while_in_flight, -EBUSY);
	cr_expect(strstr(big_log(), "commands in flight"), "%s", big_log());
	cr_expect_eq(j.after, 0);
}

struct blk_job {
	struct nkv_dev_qp *qp;
	const struct nkv_dev_mr *mr;
	int store;
	int ok;
};

/* Each thread of a 64-thread block: a 3-run value (one run per page,
 * scattered), one doorbell for the block. */
static void mr_block_lane(void *arg)
{
	struct blk_job *j = arg;
	NKV_BLOCK_SHARED(sh);
	const struct nkv_block b = nkv_block_enter(sh);
	struct nkv_dev_iov v[3];
	uint8_t key[16];
	uint32_t klen = ht_key(b.thread, 88, key), k;
	struct nkv_prep p;
	struct nkv_dev_result res;

	for (k = 0; k < 3; k++)
		v[k] = nkv_dev_run(j->mr, ((uint64_t)k * 64u + b.thread) * PG + (j->store ? 0 : MiB),
				   1000u + k);
	p = j->store ? nkv_dev_store_iov(j->qp, nkv_block_slot(b, 0), key, klen, 0, v, 3, NULL)
		     : nkv_dev_retrieve_iov(j->qp, nkv_block_slot(b, 0), key, klen, v, 3, NULL);
	res = nkv_block_exec(b, j->qp, 1, p);
	if (!res.err && !res.status && (j->store || res.dw0 == 3003u))
		__atomic_fetch_add(&j->ok, 1, __ATOMIC_RELAXED);
}

Test(host_mr, block_scatters_in_place, .init = setup, .fini = down)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), NKV_CPU_FIBERS, 2, 32, 0 };
	struct blk_job j = { nkv_qpair_dev(qp), NULL, 1, 0 };
	struct nkv_mr *mr;
	uint8_t *p;
	uint32_t t, k;

	cfg.block_size = 64;
	cr_assert_eq(nkv_mem_alloc(ctrl, 2 * MiB, 0, &mr, (void **)&p), 0);
	j.mr = nkv_mem_dev(mr);
	ht_fill(p, MiB, 99);
	cr_assert_eq(nkv_cpu_launch(&cfg, mr_block_lane, &j), 0);
	cr_assert_eq(j.ok, 64, "stores: %d ok", j.ok);
	j.store = 0;
	j.ok = 0;
	cr_assert_eq(nkv_cpu_launch(&cfg, mr_block_lane, &j), 0);
	cr_assert_eq(j.ok, 64, "retrieves: %d ok", j.ok);
	for (t = 0; t < 64; t++)
		for (k = 0; k < 3; k++) {
			size_t o = ((size_t)k * 64u + t) * PG;

			cr_assert_eq(memcmp(p + MiB + o, p + o, 1000u + k), 0, "thread %u run %u",
				     t, k);
		}
	cr_assert_eq(nkv_mem_deregister(mr), 0);
}

/* ---- an engine's cache in place (nkv_kvcache.h with a layout) ---- */

#define KC_LAYERS 6u
#define KC_BLOCKS 40u
#define KC_HALF 3000u	/* K (or V) of one layer of one block: no page multiple */

struct kc_job {
	struct nkv_dev_qp *qp;
	struct nkv_kvc_layout *lay;
	uint8_t keys[KC_BLOCKS][32];
	uint32_t blocks[KC_BLOCKS];
	struct nkv_kvc_entry out[KC_BLOCKS];
	uint32_t klen, layer, op, done, hits;
	int block;
};

static void kc_lane(void *arg)
{
	struct kc_job *j = arg;
	struct nkv_kvc_list l = nkv_kvc_list_cache(&j->keys[0][0], j->klen, KC_BLOCKS, j->blocks,
						   j->lay, j->layer, 0);

	if (j->block) {
		NKV_BLOCK_SHARED(sh);
		const struct nkv_block b = nkv_block_enter(sh);
		uint32_t n = j->op == NKV_KV_EXIST
				     ? nkv_block_kvc_prefix(b, j->qp, nkv_block_slot(b, 0), l, j->out)
				     : nkv_block_kvc_all(b, j->qp, (uint8_t)j->op, l, j->out);

		if (b.thread == 0)
			j->done = n;
		return;
	} else {
		struct nkv_wave w = nkv_wave_enter();
		uint32_t n = j->op == NKV_KV_EXIST
				     ? nkv_wave_kvc_prefix(w, j->qp, nkv_wave_slot(w, 0), l, j->out)
				     : nkv_wave_kvc_all(w, j->qp, (uint8_t)j->op, l, j->out);

		if (w.lane == w.leader)
			j->done = n;
	}
}

static void kc_run(struct kc_job *j, uint32_t op)
{
	struct nkv_cpu_cfg cfg = { sizeof(cfg), NKV_CPU_FIBERS, j->block ? 2 : 1, 16, 0 };

	cfg.block_size = j->block ? 32 : 0;
	j->op = op;
	cr_assert_eq(nkv_cpu_launch(&cfg, kc_lane, j), 0);
}

/* Byte @i of block @b's value (K0 V0 K1 V1 ... of every layer). */
static uint8_t kc_byte(uint32_t b, uint32_t layer, uint32_t kv, uint32_t i)
{
	return (uint8_t)(b * 131u + layer * 17u + kv * 7u + i * 3u + (i >> 8));
}

/* Each cache block's K and V of every layer at its place in vLLM's
 * layout; the whole block is one value (2 x layers runs), stored from
 * the cache, retrieved into another block of it, byte for byte; the
 * prefix lookup with 32-byte keys (heads in command memory). */
static void kc_whole_blocks(int block)
{
	size_t per = 2u * KC_BLOCKS * (size_t)KC_HALF * 2u,
	       len = nkv_kvc_vllm_bytes(KC_LAYERS, 2 * KC_BLOCKS, KC_HALF);
	struct nkv_dev_base base[2 * KC_LAYERS];
	struct nkv_kvc_layout lay;
	struct kc_job *j = calloc(1, sizeof(*j));
	struct nkv_mr *mr;
	uint8_t *p;
	uint32_t b, l, kv, i;

	cr_assert(j);
	len = (len + PG - 1) / PG * PG;
	cr_assert_eq(nkv_mem_alloc(ctrl, len, 0, &mr, (void **)&p), 0);
	/* 2 x KC_BLOCKS cache blocks per layer: the first half stores, the
	 * second half receives. */
	lay = nkv_kvc_layout_vllm(base, (uint64_t)(uintptr_t)base, nkv_mem_dev(mr), 0, KC_LAYERS,
				  2 * KC_BLOCKS, KC_HALF);
	for (l = 0; l < KC_LAYERS; l++) {
		cr_assert_eq(base[2 * l].off, l * per);
		cr_assert_eq(base[2 * l + 1].off, l * per + per / 2);
	}
	j->qp = nkv_qpair_dev(qp);
	j->lay = &lay;
	j->klen = 32;
	j->layer = NKV_KVC_ALL_LAYERS;
	j->block = block;
	for (b = 0; b < KC_BLOCKS; b++) {
		/* Odd seeds: ht_fill() seeds with seed | 1. */
		ht_fill(j->keys[b], 32, 2u * b + 1u + 1000u * (uint32_t)block);
		j->blocks[b] = b;
		for (l = 0; l < KC_LAYERS; l++)
			for (kv = 0; kv < 2; kv++)
				for (i = 0; i < KC_HALF; i++)
					p[base[2 * l + kv].off + (size_t)b * KC_HALF + i] =
						kc_byte(b, l, kv, i);
	}
	kc_run(j, NKV_KV_STORE);
	cr_assert_eq(j->done, KC_BLOCKS, "stored %u", j->done);
	cr_expect_eq(j->out[0].outcome, NKV_KVC_OK);
	kc_run(j, NKV_KV_EXIST);
	cr_assert_eq(j->done, KC_BLOCKS, "prefix %u", j->done);
	for (b = 0; b < KC_BLOCKS; b++)
		j->blocks[b] = KC_BLOCKS + (KC_BLOCKS - 1u - b);
	kc_run(j, NKV_KV_RETRIEVE);
	cr_assert_eq(j->done, KC_BLOCKS, "retrieved %u (first outcome %u dw0 %u)", j->done,
		     j->out[0].outcome, j->out[0].dw0);
	cr_expect_eq(j->out[3].dw0, 2u * KC_LAYERS * KC_HALF);
	for (b = 0; b < KC_BLOCKS; b++)
		for (l = 0; l < KC_LAYERS; l++)
			for (kv = 0; kv < 2; kv++)
				for (i = 0; i < KC_HALF; i++)
					cr_assert_eq(p[base[2 * l + kv].off +
						       (size_t)j->blocks[b] * KC_HALF + i],
						     kc_byte(b, l, kv, i), "block %u layer %u %c byte %u",
						     b, l, kv ? 'V' : 'K', i);
	/* A second writer of the same content: 89h, nothing changed. */
	kc_run(j, NKV_KV_STORE);
	cr_expect_eq(j->out[5].outcome, NKV_KVC_EXISTS);
	free(j);
	cr_assert_eq(nkv_mem_deregister(mr), 0);
}

Test(host_mr, kvcache_whole_blocks_in_place_wave, .init = setup, .fini = down)
{
	kc_whole_blocks(0);
}

Test(host_mr, kvcache_whole_blocks_in_place_block, .init = setup, .fini = down)
{
	kc_whole_blocks(1);
}
