/* SPDX-License-Identifier: MIT */
/*
 * nkv_mr.h - values in the caller's own memory: a Store or Retrieve whose
 * data is a range of a registered memory region, or a list of runs in
 * regions, from device code and from the host's synchronous API (the same
 * builders). Header only, like nkv_dev.h, beside which it sits so the hot
 * path header stays what a kernel author reads.
 *
 * A region is registered once per controller (nkv_mem_register() and
 * friends, nkv_host.h); device code gets its descriptor, struct
 * nkv_dev_mr, from nkv_mem_dev(). A command names its data as runs
 * (struct nkv_runs, by value: an array of struct nkv_dev_iov {region,
 * offset, length}, liburing's registered buffer, rdma-core's ibv_sge; a
 * pattern of bases plus a shift, a KV cache's block; or one range) and a
 * per-command memory index @cmd of its
 * queue pair (0..nr_cmds-1, like a slot: no two commands in flight share
 * one; nkv_wave_slot() gives each lane its own). That memory holds what
 * the command needs beside the runs: a key in head form, and the SGL
 * segments or PRP list pages when the runs need more than DPTR carries
 * (docs/host.md, "Memory regions").
 *
 * The data pointer, in order of preference:
 *  - SGL, where the controller takes SGLs (SGLS 01b; 10b when every piece
 *    is dword aligned): one Data Block when the data is one piece, else
 *    Segment / Last Segment lists in the command's memory (255 Data Blocks
 *    and a pointer per page);
 *  - PRPs: every run but the first starts on a page and every run but the
 *    last ends on one (under a head form, the value starts on a page);
 *    PRP2 into the region's own PRP table when the data is one run and the
 *    table's chain entries fall where the controller expects them, else a
 *    list in the command's memory, chained by the specification's rule (the
 *    last entry of a list page chains only when more pages remain than
 *    entries are left).
 * Anything else is NKV_EINVAL before a command is sent, and *bad (where
 * given) names the run and why (enum nkv_run_why).
 *
 * Who may call: any lane, on its own @cmd; the entries are written before
 * the lane publishes its SQE, whose release fence orders them.
 */
#ifndef NKV_MR_H
#define NKV_MR_H

#include "nkv_dev.h"

/* A registered region as device code sees it. The host fills it once at
 * registration; read-only afterwards. */
struct nkv_dev_mr {
	uint64_t addr;		/* device-visible address of byte 0 */
	uint64_t len;		/* bytes, a page multiple */
	uint64_t iova;		/* controller address of byte 0 (NKV_DEV_MR_CONTIG) */
	uint64_t pages_addr;	/* uint64_t[npages]: the controller address
				 * of each page (device-visible) */
	uint64_t tab_addr;	/* uint64_t[tab_pages]: the controller address
				 * of each page of the region's PRP table: page
				 * t holds data pages 511 t .. 511 t + 510 in
				 * entries 0..510 and chains to page t + 1 in
				 * entry 511; 0: no table */
	uint32_t npages;
	uint32_t flags;		/* NKV_DEV_MR_* */
	uint32_t tab_pages;
	uint32_t rsvd;
};
NKV_ASSERT_SIZE(struct nkv_dev_mr, 56);
NKV_ASSERT_OFF(struct nkv_dev_mr, addr, 0);
NKV_ASSERT_OFF(struct nkv_dev_mr, len, 8);
NKV_ASSERT_OFF(struct nkv_dev_mr, iova, 16);
NKV_ASSERT_OFF(struct nkv_dev_mr, pages_addr, 24);
NKV_ASSERT_OFF(struct nkv_dev_mr, tab_addr, 32);
NKV_ASSERT_OFF(struct nkv_dev_mr, npages, 40);
NKV_ASSERT_OFF(struct nkv_dev_mr, flags, 44);
NKV_ASSERT_OFF(struct nkv_dev_mr, tab_pages, 48);
NKV_ASSERT_OFF(struct nkv_dev_mr, rsvd, 52);
#define NKV_DEV_MR_READ 0x1u	/* the controller may read it (Store) */
#define NKV_DEV_MR_WRITE 0x2u	/* the controller may write it (Retrieve, List) */
#define NKV_DEV_MR_CONTIG 0x4u	/* one run of controller addresses */
/* Entries of a PRP list page, and of a region's PRP table page that hold
 * data pages (its last entry chains). */
#define NKV_PRP_ENTRIES (NKV_PAGE_SIZE / 8u)
#define NKV_MR_TAB_PER_PAGE (NKV_PRP_ENTRIES - 1u)

/* One run of a value: @len bytes at byte @off of region @mr (the device
 * address of its struct nkv_dev_mr). */
struct nkv_dev_iov {
	uint64_t mr;
	uint64_t off;
	uint32_t len;
	uint32_t rsvd;
};
NKV_ASSERT_SIZE(struct nkv_dev_iov, 24);
NKV_ASSERT_OFF(struct nkv_dev_iov, mr, 0);
NKV_ASSERT_OFF(struct nkv_dev_iov, off, 8);
NKV_ASSERT_OFF(struct nkv_dev_iov, len, 16);

/* Runs one command takes (the sync API's nkv_iov lists too): with a head,
 * what a queue pair's four list pages hold as one SGL (1021 descriptors),
 * as long as each run is one piece of controller addresses. */
#define NKV_IOV_MAX 1020u

/* The start of one run of a pattern: byte @off of region @mr (the device
 * address of its struct nkv_dev_mr). */
struct nkv_dev_base {
	uint64_t mr;
	uint64_t off;
};
NKV_ASSERT_SIZE(struct nkv_dev_base, 16);
NKV_ASSERT_OFF(struct nkv_dev_base, mr, 0);
NKV_ASSERT_OFF(struct nkv_dev_base, off, 8);

/*
 * A value's runs, by value (it lives in registers): @n runs from an
 * array @iov; or, with @iov NULL, a pattern: run i is @len bytes at
 * base[i].off + @shift of region base[i].mr (a KV cache's block: K and V
 * of each layer at their layer's base plus block x stride,
 * nkv_kvcache.h); or, with both NULL, one range: @len bytes at @shift of
 * region @mr. No run array is ever built on a GPU's stack.
 */
struct nkv_runs {
	const struct nkv_dev_iov *iov;
	const struct nkv_dev_base *base;
	uint64_t mr;
	uint64_t shift;
	uint32_t n;
	uint32_t len;
};

/* A run in a register-resident form (no array): (@mr, @off, @len). */
NKV_HD struct nkv_dev_iov nkv_dev_run(const struct nkv_dev_mr *mr, uint64_t off, uint32_t len)
{
	struct nkv_dev_iov v;

	v.mr = (uint64_t)(uintptr_t)mr;
	v.off = off;
	v.len = len;
	v.rsvd = 0;
	return v;
}


NKV_HD struct nkv_runs nkv_runs_of(const struct nkv_dev_iov *iov, uint32_t n)
{
	struct nkv_runs r;

	r.iov = iov;
	r.base = 0;
	r.mr = 0;
	r.shift = 0;
	r.n = n;
	r.len = 0;
	return r;
}

NKV_HD struct nkv_runs nkv_runs_pattern(const struct nkv_dev_base *base, uint32_t n,
					uint64_t shift, uint32_t len)
{
	struct nkv_runs r;

	r.iov = 0;
	r.base = base;
	r.mr = 0;
	r.shift = shift;
	r.n = n;
	r.len = len;
	return r;
}

NKV_HD struct nkv_runs nkv_runs_range(const struct nkv_dev_mr *mr, uint64_t off, uint32_t len)
{
	struct nkv_runs r;

	r.iov = 0;
	r.base = 0;
	r.mr = (uint64_t)(uintptr_t)mr;
	r.shift = off;
	r.n = 1;
	r.len = len;
	return r;
}

/* Run @i of @r. */
NKV_HD struct nkv_dev_iov nkv_run_at(struct nkv_runs r, uint32_t i)
{
	struct nkv_dev_iov v;

	if (r.iov)
		return r.iov[i];
	v.mr = r.base ? r.base[i].mr : r.mr;
	v.off = r.base ? r.base[i].off + r.shift : r.shift;
	v.len = r.len;
	v.rsvd = 0;
	return v;
}

/* Why a run cannot be carried (nkv_run_why_str() names it on the host). */
enum nkv_run_why {
	NKV_RUN_OK = 0,
	NKV_RUN_NO_REGION,	/* a NULL region, or no runs at all */
	NKV_RUN_OUTSIDE,	/* offset + length beyond the region, or length 0 */
	NKV_RUN_ACCESS,		/* the region was not registered for this direction */
	NKV_RUN_TOO_MANY,	/* more runs than NKV_IOV_MAX, or a total over 4 GiB */
	NKV_RUN_PAGE,		/* PRPs only: an interior boundary not on a page */
	NKV_RUN_DWORD,		/* a PRP1 or a dword-only SGL piece not dword aligned */
	NKV_RUN_HEAD_PAGE,	/* PRPs and a key in head form: value not page aligned */
	NKV_RUN_LIST_ROOM,	/* the lists need more than the command's memory */
	NKV_RUN_NO_CMD,		/* @cmd is not one of the queue pair's */
};
/* Where a builder found its trouble: the run index and why. */
struct nkv_run_bad {
	uint32_t run;
	uint32_t why;		/* enum nkv_run_why */
};

/* ---- the command's own memory ---- */

/* Device address of byte @off of command memory @cmd. */
NKV_HD uint8_t *nkv_cmd_mem(const struct nkv_dev_qp *qp, uint32_t cmd, uint32_t off)
{
	return NKV_DEV_PTR(uint8_t, qp->cmd_addr + (uint64_t)cmd * qp->cmd_size + off);
}

/* Controller address of byte @off of command memory @cmd. */
NKV_HD uint64_t nkv_cmd_iova(const struct nkv_dev_qp *qp, uint32_t cmd, uint32_t off)
{
	const uint64_t *pg = NKV_DEV_PTR(const uint64_t, qp->cmd_pages_addr);
	uint64_t b = (uint64_t)cmd * qp->cmd_size + off;

	return pg[b / NKV_PAGE_SIZE] + b % NKV_PAGE_SIZE;
}

/* List pages of each command's memory: everything after its head page. */
NKV_HD uint32_t nkv_cmd_list_pages(const struct nkv_dev_qp *qp)
{
	return qp->cmd_size / NKV_PAGE_SIZE - 1u;
}

/* ---- regions ---- */

/* Controller address of byte @off of region @m. */
NKV_HD uint64_t nkv_mr_iova(const struct nkv_dev_mr *m, uint64_t off)
{
	const uint64_t *pg = NKV_DEV_PTR(const uint64_t, m->pages_addr);

	if (m->flags & NKV_DEV_MR_CONTIG)
		return m->iova + off;
	return pg[off / NKV_PAGE_SIZE] + off % NKV_PAGE_SIZE;
}

/* Bytes from @off of @m that are one run of controller addresses, up to
 * @len. */
NKV_HD uint64_t nkv_mr_piece(const struct nkv_dev_mr *m, uint64_t off, uint64_t len)
{
	uint64_t n = NKV_PAGE_SIZE - off % NKV_PAGE_SIZE;

	if (m->flags & NKV_DEV_MR_CONTIG)
		return len;
	while (n < len && nkv_mr_iova(m, off + n) == nkv_mr_iova(m, off) + n)
		n += NKV_PAGE_SIZE;
	return n < len ? n : len;
}

NKV_HD struct nkv_run_bad nkv_run_bad_at(uint32_t run, uint32_t why)
{
	struct nkv_run_bad b;

	b.run = run;
	b.why = why;
	return b;
}

/* Every run inside its region, registered for @need (NKV_DEV_MR_*),
 * @n 1..NKV_IOV_MAX, the total under 4 GiB (into *total). */
NKV_HD struct nkv_run_bad nkv_runs_check(struct nkv_runs r, uint32_t need, uint64_t *total)
{
	uint32_t i;

	*total = 0;
	if ((!r.iov && !r.base && !r.mr) || !r.n)
		return nkv_run_bad_at(0, NKV_RUN_NO_REGION);
	if (r.n > NKV_IOV_MAX)
		return nkv_run_bad_at(NKV_IOV_MAX, NKV_RUN_TOO_MANY);
	for (i = 0; i < r.n; i++) {
		struct nkv_dev_iov v = nkv_run_at(r, i);
		const struct nkv_dev_mr *m = NKV_DEV_PTR(const struct nkv_dev_mr, v.mr);

		if (!v.mr)
			return nkv_run_bad_at(i, NKV_RUN_NO_REGION);
		if (!v.len || v.off > m->len || v.len > m->len - v.off)
			return nkv_run_bad_at(i, NKV_RUN_OUTSIDE);
		if ((m->flags & need) != need)
			return nkv_run_bad_at(i, NKV_RUN_ACCESS);
		*total += v.len;
	}
	if (*total > 0xffffffffull)
		return nkv_run_bad_at(r.n - 1u, NKV_RUN_TOO_MANY);
	return nkv_run_bad_at(0, NKV_RUN_OK);
}

/* ---- SGL ---- */

/* Data Blocks the head (@hl bytes, 0: none) and the runs take, each run
 * split where its controller addresses break; 0 when a piece is not
 * dword aligned and @dword (run index in *bad). */
NKV_HD uint32_t nkv_sgl_count(struct nkv_runs r, uint32_t hl, int dword,
			      struct nkv_run_bad *bad)
{
	uint32_t cnt = hl ? 1u : 0u, i;

	if (dword && (hl & 3u)) {
		*bad = nkv_run_bad_at(0, NKV_RUN_DWORD);
		return 0;
	}
	for (i = 0; i < r.n; i++) {
		struct nkv_dev_iov v = nkv_run_at(r, i);
		const struct nkv_dev_mr *m = NKV_DEV_PTR(const struct nkv_dev_mr, v.mr);
		uint64_t off = v.off, left = v.len;

		while (left) {
			uint64_t p = nkv_mr_piece(m, off, left);

			if (dword && ((nkv_mr_iova(m, off) | p) & 3u)) {
				*bad = nkv_run_bad_at(i, NKV_RUN_DWORD);
				return 0;
			}
			cnt++;
			off += p;
			left -= p;
		}
	}
	return cnt;
}

/* Descriptor @k of list page @page of the command's memory (256 a page,
 * the last chaining when more follow): its device address. */
NKV_HD struct nkv_sgl_desc *nkv_sgl_slot(const struct nkv_dev_qp *qp, uint32_t cmd, uint32_t page,
					 uint32_t k)
{
	return NKV_DEV_PTR(struct nkv_sgl_desc,
			   (uint64_t)(uintptr_t)nkv_cmd_mem(qp, cmd, (1u + page) * NKV_PAGE_SIZE)) + k;
}

NKV_HD void nkv_sgl_put(struct nkv_sgl_desc *d, uint64_t addr, uint32_t len, uint32_t type)
{
	uint32_t i;

	d->addr = addr;
	d->len = len;
	for (i = 0; i < 3u; i++)
		d->rsvd[i] = 0;
	d->id = nkv_sgl_id(type);
}

/*
 * Write the @cnt Data Blocks (head first) into the command's list pages:
 * page p holds 256 descriptors, or 255 and a pointer to page p + 1 (a
 * Segment when more pages follow it, else a Last Segment). SGL1 points at
 * page 0's list the same way.
 */
NKV_HD struct nkv_dptr nkv_sgl_lists(const struct nkv_dev_qp *qp, uint32_t cmd,
				     struct nkv_runs r, uint32_t hl, uint32_t cnt)
{
	const uint32_t per = NKV_PAGE_SIZE / 16u;
	uint32_t page = 0, k = 0, left = cnt, i;
	struct nkv_dptr d;

	/* SGL1: the first list, a Segment when another follows it. */
	d.d1 = nkv_cmd_iova(qp, cmd, NKV_PAGE_SIZE);
	d.d2 = (uint64_t)(16u * (left > per ? per : left)) |
	       ((uint64_t)nkv_sgl_id(left > per ? NKV_SGL_SEGMENT : NKV_SGL_LAST_SEGMENT) << 56);
	d.psdt = NKV_PSDT_SGL;
	for (i = 0; i <= r.n; i++) {
		struct nkv_dev_iov v = i ? nkv_run_at(r, i - 1u) : nkv_dev_run(0, 0, hl);
		const struct nkv_dev_mr *m = NKV_DEV_PTR(const struct nkv_dev_mr, v.mr);
		uint64_t off = v.off, len = v.len;

		while (len) {
			uint64_t p = m ? nkv_mr_piece(m, off, len) : len;
			uint64_t a = m ? nkv_mr_iova(m, off)
				       : nkv_cmd_iova(qp, cmd, NKV_PAGE_SIZE - hl);

			if (k == per - 1u && left > 1u) {
				/* Chain: the next page's list, a Segment again
				 * when yet another follows it. */
				uint32_t next = left > per ? per : left;

				nkv_sgl_put(nkv_sgl_slot(qp, cmd, page, k),
					    nkv_cmd_iova(qp, cmd, (2u + page) * NKV_PAGE_SIZE),
					    16u * next, left > per ? NKV_SGL_SEGMENT
								   : NKV_SGL_LAST_SEGMENT);
				page++;
				k = 0;
			}
			nkv_sgl_put(nkv_sgl_slot(qp, cmd, page, k), a, (uint32_t)p,
				    NKV_SGL_DATA_BLOCK);
			k++;
			left--;
			off += p;
			len -= p;
		}
	}
	return d;
}

/* Pages the lists of @cnt descriptors take (255 a page and a chain). */
NKV_HD uint32_t nkv_sgl_pages(uint32_t cnt)
{
	const uint32_t per = NKV_PAGE_SIZE / 16u;

	return cnt <= per ? 1u : 1u + (cnt - 2u) / (per - 1u);
}

/* SGL data pointer for the head and runs, or *ok = 0 (bad names why). */
NKV_HD struct nkv_dptr nkv_runs_sgl(const struct nkv_dev_qp *qp, uint32_t cmd,
				    struct nkv_runs r, uint32_t hl, struct nkv_run_bad *bad,
				    int *ok)
{
	int dword = (qp->dptr & NKV_DEV_DPTR_SGL_DWORD) != 0;
	uint32_t cnt = nkv_sgl_count(r, hl, dword, bad);
	struct nkv_dev_iov v0 = nkv_run_at(r, 0);

	*ok = 0;
	if (!cnt)
		return nkv_dptr_prp(0, 0);
	if (cnt == 1u) {
		*ok = 1;
		return nkv_dptr_sgl(nkv_mr_iova(NKV_DEV_PTR(const struct nkv_dev_mr, v0.mr), v0.off),
				    v0.len);
	}
	if (nkv_sgl_pages(cnt) > nkv_cmd_list_pages(qp)) {
		*bad = nkv_run_bad_at(r.n - 1u, NKV_RUN_LIST_ROOM);
		return nkv_dptr_prp(0, 0);
	}
	*ok = 1;
	return nkv_sgl_lists(qp, cmd, r, hl, cnt);
}

/* ---- PRPs ---- */

/* The runs fit PRPs: every interior boundary on a page, PRP1 dword
 * aligned, and under a head (@hl) the value starting on a page. Data
 * pages into *pages. */
NKV_HD struct nkv_run_bad nkv_runs_prp_ok(struct nkv_runs r, uint32_t hl, uint64_t *pages)
{
	uint32_t i, n = r.n;

	*pages = 0;
	for (i = 0; i < n; i++) {
		struct nkv_dev_iov v = nkv_run_at(r, i);
		const struct nkv_dev_mr *m = NKV_DEV_PTR(const struct nkv_dev_mr, v.mr);
		uint64_t a = nkv_mr_iova(m, v.off);
		uint64_t first = a % NKV_PAGE_SIZE, end = first + v.len;

		if ((i || hl) && first)
			return nkv_run_bad_at(i, hl && !i ? NKV_RUN_HEAD_PAGE : NKV_RUN_PAGE);
		if (!i && (a & 3u))
			return nkv_run_bad_at(i, NKV_RUN_DWORD);
		if (i + 1u < n && end % NKV_PAGE_SIZE)
			return nkv_run_bad_at(i, NKV_RUN_PAGE);
		*pages += (end + NKV_PAGE_SIZE - 1u) / NKV_PAGE_SIZE;
	}
	return nkv_run_bad_at(0, NKV_RUN_OK);
}

/* Controller address of data page @k (0-based over every run's pages). */
NKV_HD uint64_t nkv_runs_page(struct nkv_runs r, uint64_t k)
{
	uint32_t i;

	for (i = 0; i < r.n; i++) {
		struct nkv_dev_iov v = nkv_run_at(r, i);
		const struct nkv_dev_mr *m = NKV_DEV_PTR(const struct nkv_dev_mr, v.mr);
		uint64_t base = v.off - nkv_mr_iova(m, v.off) % NKV_PAGE_SIZE;
		uint64_t np = (nkv_mr_iova(m, v.off) % NKV_PAGE_SIZE + v.len + NKV_PAGE_SIZE - 1u) /
			      NKV_PAGE_SIZE;

		if (k < np)
			return nkv_mr_iova(m, base + k * NKV_PAGE_SIZE);
		k -= np;
	}
	return 0;
}

/* Does a list of @need entries read from entry @slot of a list page end
 * on a data entry wherever the table puts a chain entry? The controller
 * takes the last entry of a page as a chain only when more remain. */
NKV_HD int nkv_prp_tab_fits(uint64_t slot, uint64_t need)
{
	uint64_t nent = NKV_PRP_ENTRIES - slot;

	while (need > nent) {
		need -= nent - 1u;
		nent = NKV_PRP_ENTRIES;
	}
	return need != nent;
}

/* List pages a per-command list of @need entries takes (511 a page and a
 * chain; the last page up to 512). */
NKV_HD uint64_t nkv_prp_list_pages_for(uint64_t need)
{
	return need <= NKV_PRP_ENTRIES ? 1u : 1u + (need - 2u) / (NKV_PRP_ENTRIES - 1u);
}

/* Entries @first.. of the data pages into the command's list pages. */
NKV_HD uint64_t nkv_prp_cmd_list(const struct nkv_dev_qp *qp, uint32_t cmd, struct nkv_runs r,
				 uint64_t first, uint64_t need)
{
	uint64_t page = 0, k = 0, i;

	for (i = 0; i < need; i++) {
		uint64_t *e;

		if (k == NKV_PRP_ENTRIES - 1u && need - i > 1u) {
			e = NKV_DEV_PTR(uint64_t, (uint64_t)(uintptr_t)nkv_cmd_mem(
							  qp, cmd, (uint32_t)(1u + page) * NKV_PAGE_SIZE));
			e[k] = nkv_cmd_iova(qp, cmd, (uint32_t)(2u + page) * NKV_PAGE_SIZE);
			page++;
			k = 0;
		}
		e = NKV_DEV_PTR(uint64_t, (uint64_t)(uintptr_t)nkv_cmd_mem(
						  qp, cmd, (uint32_t)(1u + page) * NKV_PAGE_SIZE));
		e[k++] = nkv_runs_page(r, first + i);
	}
	return nkv_cmd_iova(qp, cmd, NKV_PAGE_SIZE);
}

/* PRP data pointer for the head and runs, or *ok = 0. */
NKV_HD struct nkv_dptr nkv_runs_prp(const struct nkv_dev_qp *qp, uint32_t cmd,
				    struct nkv_runs r, uint32_t hl, struct nkv_run_bad *bad,
				    int *ok)
{
	struct nkv_dev_iov v0 = nkv_run_at(r, 0);
	const struct nkv_dev_mr *m = NKV_DEV_PTR(const struct nkv_dev_mr, v0.mr);
	uint64_t pages, first, need, prp1, slot;

	*ok = 0;
	*bad = nkv_runs_prp_ok(r, hl, &pages);
	if (bad->why)
		return nkv_dptr_prp(0, 0);
	/* PRP1: the head at the end of the command's head page, or the
	 * first data page; PRP2 and the list: the data pages after it. */
	prp1 = hl ? nkv_cmd_iova(qp, cmd, NKV_PAGE_SIZE - hl) : nkv_mr_iova(m, v0.off);
	first = hl ? 0u : 1u;
	need = pages - first;
	*ok = 1;
	if (need == 0)
		return nkv_dptr_prp(prp1, 0);
	if (need == 1)
		return nkv_dptr_prp(prp1, nkv_runs_page(r, first));
	/* One run: its pages are consecutive entries of the region's table. */
	slot = v0.off / NKV_PAGE_SIZE + first;
	if (r.n == 1u && m->tab_pages &&
	    nkv_prp_tab_fits(slot % NKV_MR_TAB_PER_PAGE, need)) {
		const uint64_t *tab = NKV_DEV_PTR(const uint64_t, m->tab_addr);

		return nkv_dptr_prp(prp1, tab[slot / NKV_MR_TAB_PER_PAGE] +
						  8u * (slot % NKV_MR_TAB_PER_PAGE));
	}
	if (nkv_prp_list_pages_for(need) > nkv_cmd_list_pages(qp)) {
		*ok = 0;
		*bad = nkv_run_bad_at(r.n - 1u, NKV_RUN_LIST_ROOM);
		return nkv_dptr_prp(0, 0);
	}
	return nkv_dptr_prp(prp1, nkv_prp_cmd_list(qp, cmd, r, first, need));
}

/* ---- commands ---- */

/*
 * One KV command whose data is @n runs (the whole value: @len bytes in
 * total, CDW10), through command memory @cmd: the key inline, or its
 * head written into the command memory. @need: NKV_DEV_MR_READ for a
 * Store, _WRITE for a Retrieve. SGL first where the controller takes
 * them, PRPs when an SGL cannot carry the runs. @bad, where given, says
 * which run and why on NKV_EINVAL (the SGL's reason where the controller
 * takes SGLs and neither form fits).
 */
NKV_HD struct nkv_prep nkv_dev_kv_runs(const struct nkv_dev_qp *qp, uint32_t cmd, uint8_t opc,
				       const void *key, uint32_t klen, uint32_t min_klen,
				       uint32_t opts, struct nkv_runs r, uint32_t need,
				       struct nkv_run_bad *bad)
{
	struct nkv_run_bad b = nkv_run_bad_at(0, NKV_RUN_OK), sb = b;
	int sgl = (qp->dptr & (NKV_DEV_DPTR_SGL | NKV_DEV_DPTR_SGL_DWORD)) != 0, ok = 0;
	uint32_t hl = 0;
	uint64_t total = 0;
	struct nkv_dptr dp = nkv_dptr_prp(0, 0);

	if ((klen && !key) || klen < min_klen || klen > nkv_dev_max_key(qp))
		return nkv_prep_err(NKV_EINVAL);
	if (cmd >= qp->nr_cmds)
		b = nkv_run_bad_at(0, NKV_RUN_NO_CMD);
	if (!b.why)
		b = nkv_runs_check(r, need, &total);
	if (!b.why && nkv_dev_key_head(qp, klen))
		hl = nkv_key_head_size(klen);
	if (!b.why && sgl)
		dp = nkv_runs_sgl(qp, cmd, r, hl, &sb, &ok);
	if (!b.why && !ok)
		dp = nkv_runs_prp(qp, cmd, r, hl, &b, &ok);
	if (!ok) {
		if (bad)
			*bad = sgl && sb.why ? sb : b;
		return nkv_prep_err(NKV_EINVAL);
	}
	if (hl) {
		nkv_key_head_put(nkv_cmd_mem(qp, cmd, NKV_PAGE_SIZE - hl), (const uint8_t *)key,
				 klen);
		return nkv_sqe_kv_head(opc, qp->nsid, opts, (uint32_t)total, dp);
	}
	return nkv_sqe_kv_dptr(opc, qp->nsid, key, klen, min_klen, opts, (uint32_t)total, dp);
}

/* Store the value in runs @r under @key; @opts as nkv_dev_store()'s
 * (no touch: a touch carries no value). */
NKV_HD struct nkv_prep nkv_dev_store_runs(const struct nkv_dev_qp *qp, uint32_t cmd,
					  const void *key, uint32_t klen, uint32_t opts,
					  struct nkv_runs r, struct nkv_run_bad *bad)
{
	if (!nkv_dev_store_opts_ok(qp, opts, 1) || (opts & NKV_STORE_TOUCH))
		return nkv_prep_err(NKV_EINVAL);
	return nkv_dev_kv_runs(qp, cmd, NKV_KV_STORE, key, klen, 1, opts, r, NKV_DEV_MR_READ, bad);
}

/* Retrieve @key into runs @r (CDW10 = their total; DW0 = the stored
 * size, which may exceed it: a prefix landed, in run order). */
NKV_HD struct nkv_prep nkv_dev_retrieve_runs(const struct nkv_dev_qp *qp, uint32_t cmd,
					     const void *key, uint32_t klen, struct nkv_runs r,
					     struct nkv_run_bad *bad)
{
	return nkv_dev_kv_runs(qp, cmd, NKV_KV_RETRIEVE, key, klen, 1, 0, r, NKV_DEV_MR_WRITE, bad);
}

/* The same with the runs in an array of @n. */
NKV_HD struct nkv_prep nkv_dev_store_iov(const struct nkv_dev_qp *qp, uint32_t cmd,
					 const void *key, uint32_t klen, uint32_t opts,
					 const struct nkv_dev_iov *iov, uint32_t n,
					 struct nkv_run_bad *bad)
{
	return nkv_dev_store_runs(qp, cmd, key, klen, opts, nkv_runs_of(iov, n), bad);
}

NKV_HD struct nkv_prep nkv_dev_retrieve_iov(const struct nkv_dev_qp *qp, uint32_t cmd,
					    const void *key, uint32_t klen,
					    const struct nkv_dev_iov *iov, uint32_t n,
					    struct nkv_run_bad *bad)
{
	return nkv_dev_retrieve_runs(qp, cmd, key, klen, nkv_runs_of(iov, n), bad);
}

/* One range: Store @len bytes at @off of @mr under @key. */
NKV_HD struct nkv_prep nkv_dev_store_mr(const struct nkv_dev_qp *qp, uint32_t cmd,
					const void *key, uint32_t klen, uint32_t opts,
					const struct nkv_dev_mr *mr, uint64_t off, uint32_t len)
{
	return nkv_dev_store_runs(qp, cmd, key, klen, opts, nkv_runs_range(mr, off, len), 0);
}

/* One range: Retrieve @key into @len bytes at @off of @mr. */
NKV_HD struct nkv_prep nkv_dev_retrieve_mr(const struct nkv_dev_qp *qp, uint32_t cmd,
					   const void *key, uint32_t klen,
					   const struct nkv_dev_mr *mr, uint64_t off, uint32_t len)
{
	return nkv_dev_retrieve_runs(qp, cmd, key, klen, nkv_runs_range(mr, off, len), 0);
}

/* Exist and Delete on a queue pair without slots: a key in head form
 * goes in command memory @cmd. */
NKV_HD struct nkv_prep nkv_dev_nodata_cmd(const struct nkv_dev_qp *qp, uint32_t cmd, uint8_t opc,
					  const void *key, uint32_t klen)
{
	uint32_t hl = nkv_key_head_size(klen);

	if ((klen && !key) || klen < 1u || klen > nkv_dev_max_key(qp))
		return nkv_prep_err(NKV_EINVAL);
	if (!nkv_dev_key_head(qp, klen))
		return nkv_sqe_kv_dptr(opc, qp->nsid, key, klen, 1, 0, 0, nkv_dptr_prp(0, 0));
	if (cmd >= qp->nr_cmds)
		return nkv_prep_err(NKV_EINVAL);
	nkv_key_head_put(nkv_cmd_mem(qp, cmd, NKV_PAGE_SIZE - hl), (const uint8_t *)key, klen);
	if (qp->dptr & NKV_DEV_DPTR_SGL)
		return nkv_sqe_kv_head(opc, qp->nsid, 0, 0,
				       nkv_dptr_sgl(nkv_cmd_iova(qp, cmd, NKV_PAGE_SIZE - hl), hl));
	return nkv_sqe_kv_head(opc, qp->nsid, 0, 0,
			       nkv_dptr_prp(nkv_cmd_iova(qp, cmd, NKV_PAGE_SIZE - hl), 0));
}

#endif /* NKV_MR_H */
