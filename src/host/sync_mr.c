/* SPDX-License-Identifier: MIT */
/*
 * sync_mr.c - the synchronous API on memory regions: Store and Retrieve
 * whose value is a range or runs of registered regions, built by the same
 * nkv_mr.h builders device code uses, through the queue pair's last
 * command-memory block (the one device code is never given), and run as
 * a one-lane wave like the rest of the synchronous API (sync.c). No copy:
 * the controller reads and writes the regions themselves.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"

const char *nkv_run_why_str(uint32_t why)
{
	switch (why) {
	case NKV_RUN_OK:
		return "fine";
	case NKV_RUN_NO_REGION:
		return "no region (or no runs)";
	case NKV_RUN_OUTSIDE:
		return "empty, or outside its region";
	case NKV_RUN_ACCESS:
		return "the region was not registered for this direction (NKV_MEM_READ for "
		       "Stores, NKV_MEM_WRITE for Retrieves)";
	case NKV_RUN_TOO_MANY:
		return "more runs than NKV_IOV_MAX, or over 4 GiB in all";
	case NKV_RUN_PAGE:
		return "PRPs need every run but the first to start on a 4 KiB page and every "
		       "run but the last to end on one";
	case NKV_RUN_DWORD:
		return "not dword aligned (PRP1, or a controller that takes dword-aligned SGLs "
		       "only)";
	case NKV_RUN_HEAD_PAGE:
		return "PRPs and a key in head form need the value to start on a 4 KiB page";
	case NKV_RUN_LIST_ROOM:
		return "its SGL or PRP lists need more than the command's list pages";
	case NKV_RUN_NO_CMD:
		return "no such command-memory block";
	}
	return "unknown reason";
}

/* The synchronous API's view of q: its descriptor with one more block,
 * the last, which only this API uses. */
static struct nkv_dev_qp nkv_h_mr_qp(const struct nkv_qpair *q, uint32_t *cmd)
{
	struct nkv_dev_qp d = *q->dev;

	*cmd = d.nr_cmds++;
	return d;
}

/* Host runs as device runs, the regions checked to be q's controller's. */
static int nkv_h_mr_runs(const struct nkv_qpair *q, const struct nkv_iov *iov, uint32_t n,
			 struct nkv_dev_iov *out)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		const struct nkv_dev_mr *m = nkv_h_mr_host(iov[i].mr, q->c);

		if (!m) {
			nkv_h_log("run %u: %s", i, iov[i].mr ? "a region of another controller"
							       : "no region");
			return -EINVAL;
		}
		out[i] = nkv_dev_run(m, iov[i].off, iov[i].len);
	}
	return 0;
}

static void nkv_h_mr_uses(const struct nkv_iov *iov, uint32_t n, int d)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		nkv_h_mr_use(iov[i].mr, d);
}

/* Say why the builder refused, naming the run. */
static int nkv_h_mr_refused(const struct nkv_iov *iov, uint32_t n, struct nkv_run_bad b)
{
	if (b.why == NKV_RUN_OK || b.run >= n)
		nkv_h_log("%u runs: %s", n, nkv_run_why_str(b.why ? b.why : NKV_RUN_PAGE));
	else
		nkv_h_log("run %u (offset %zu, %u bytes): %s", b.run, iov[b.run].off,
			  iov[b.run].len, nkv_run_why_str(b.why));
	return -EINVAL;
}

/* One Store or Retrieve on runs: 0, the NVMe status (> 0), or -errno. */
static int nkv_h_mr_cmd(struct nkv_qpair *q, uint8_t opc, const void *key, uint32_t klen,
			uint32_t opts, const struct nkv_iov *iov, uint32_t n, uint32_t *vlen)
{
	struct nkv_dev_iov small[8], *dv = small;
	struct nkv_run_bad bad = { 0, 0 };
	struct nkv_result res;
	struct nkv_dev_qp d;
	struct nkv_prep p;
	uint64_t total = 0;
	uint32_t cmd, i;
	int rc = nkv_h_sync_pre(q, &res);

	if (vlen)
		*vlen = 0;
	if (!rc)
		rc = nkv_h_sync_key(q, key, klen, 1);
	if (!rc && (!iov || !n || n > NKV_IOV_MAX))
		rc = nkv_h_mr_refused(iov, n, nkv_run_bad_at(0, n ? NKV_RUN_TOO_MANY
								  : NKV_RUN_NO_REGION));
	if (!rc && opc == NKV_KV_STORE)
		rc = nkv_h_sync_opts(q, opts, 0, 1);
	if (!rc && (opts & NKV_STORE_TOUCH))
		rc = -EINVAL;
	for (i = 0; !rc && i < n; i++)
		total += iov[i].len;
	if (!rc)
		rc = nkv_h_value_fits(q->c, opc == NKV_KV_STORE ? "value" : "buffer", total);
	if (!rc && n > 8) {
		dv = calloc(n, sizeof(*dv));
		rc = dv ? 0 : -ENOMEM;
	}
	if (!rc)
		rc = nkv_h_mr_runs(q, iov, n, dv);
	if (rc)
		goto out;
	d = nkv_h_mr_qp(q, &cmd);
	p = opc == NKV_KV_STORE ? nkv_dev_store_iov(&d, cmd, key, klen, opts, dv, n, &bad)
				: nkv_dev_retrieve_iov(&d, cmd, key, klen, dv, n, &bad);
	if (p.err) {
		rc = bad.why ? nkv_h_mr_refused(iov, n, bad) : -EINVAL;
		goto out;
	}
	nkv_h_mr_uses(iov, n, 1);
	rc = nkv_h_sync_exec(q, &p.sqe, &res);
	nkv_h_mr_uses(iov, n, -1);
	if (!rc || rc == -EMSGSIZE) {
		uint64_t moved = opc == NKV_KV_STORE ? total : res.dw0 < total ? res.dw0 : total;

		nkv_h_sync_count(q, &res, res.status ? 0 : moved);
		if (vlen)
			*vlen = res.dw0;
		if (!rc)
			rc = res.status;
	}
out:
	if (dv != small)
		free(dv);
	return rc;
}

int nkv_store_iov(struct nkv_qpair *q, const void *key, uint32_t klen, uint32_t opts,
		  const struct nkv_iov *iov, uint32_t n)
{
	return nkv_h_mr_cmd(q, NKV_KV_STORE, key, klen, opts, iov, n, NULL);
}

int nkv_retrieve_iov(struct nkv_qpair *q, const void *key, uint32_t klen,
		     const struct nkv_iov *iov, uint32_t n, uint32_t *vlen)
{
	return nkv_h_mr_cmd(q, NKV_KV_RETRIEVE, key, klen, 0, iov, n, vlen);
}

int nkv_store_mr(struct nkv_qpair *q, const void *key, uint32_t klen, uint32_t opts,
		 struct nkv_mr *mr, size_t off, uint32_t len)
{
	struct nkv_iov v = { mr, off, len };

	return nkv_store_iov(q, key, klen, opts, &v, 1);
}

int nkv_retrieve_mr(struct nkv_qpair *q, const void *key, uint32_t klen, struct nkv_mr *mr,
		    size_t off, uint32_t len, uint32_t *vlen)
{
	struct nkv_iov v = { mr, off, len };

	return nkv_retrieve_iov(q, key, klen, &v, 1, vlen);
}
