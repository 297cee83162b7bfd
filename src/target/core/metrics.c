/* SPDX-License-Identifier: MIT */
/*
 * metrics.c - the core's counters for the metrics endpoint (metrics.h):
 * what a command counts and where; the tables are each thread's own
 * (metrics_thread.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "core.h"
#include "metrics_int.h"

int nkv_tgt_metrics_on;
/* nkv_tgt_metrics_batch's stamp; 0: none, read the clock. */
static __thread uint64_t nkv_tgt_met_batch_ns;

static const char *const nkv_tgt_mop_names[NKV_TGT_MOP_N] = {
	"store", "retrieve", "list", "delete", "exist", "read", "write", "flush", "other",
};

static uint64_t nkv_tgt_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The stamps' clock. A vDSO clock_gettime costs ~25 ns, and a command
 * takes two: on x86-64 where the kernel itself keeps time by the TSC
 * (its clocksource is "tsc": invariant, synchronised across CPUs), a
 * TSC read (~7 ns) scaled by a ratio measured at enable stands in.
 * Elsewhere, CLOCK_MONOTONIC.
 */
static double nkv_tgt_tsc_ns;	/* ns per TSC tick; 0: use the clock */
static uint64_t nkv_tgt_tsc0, nkv_tgt_ns0;

#if defined(__x86_64__)
static int nkv_tgt_kernel_uses_tsc(void)
{
	char cs[32] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");

	if (f) {
		if (!fgets(cs, sizeof(cs), f))
			cs[0] = 0;
		fclose(f);
	}
	return !strcmp(cs, "tsc\n");
}

static void nkv_tgt_tsc_calibrate(void)
{
	struct timespec d = { 0, 20 * 1000 * 1000 };	/* 20 ms: ratio to ~1e-4 */
	uint64_t t0, n0, t1, n1;

	if (!nkv_tgt_kernel_uses_tsc())
		return;
	n0 = nkv_tgt_clock_ns();
	t0 = __rdtsc();
	nanosleep(&d, NULL);
	n1 = nkv_tgt_clock_ns();
	t1 = __rdtsc();
	if (t1 <= t0 || n1 <= n0)
		return;
	nkv_tgt_tsc0 = t1;
	nkv_tgt_ns0 = n1;
	nkv_tgt_tsc_ns = (double)(n1 - n0) / (double)(t1 - t0);
}
#else
static void nkv_tgt_tsc_calibrate(void)
{
}
#endif

void nkv_tgt_metrics_enable(void)
{
	if (__atomic_load_n(&nkv_tgt_metrics_on, __ATOMIC_RELAXED))
		return;
	nkv_tgt_tsc_calibrate();	/* before any stamp: then read only */
	__atomic_store_n(&nkv_tgt_metrics_on, 1, __ATOMIC_RELEASE);
}

const char *nkv_tgt_mop_name(enum nkv_tgt_mop op)
{
	return op < NKV_TGT_MOP_N ? nkv_tgt_mop_names[op] : "other";
}

double nkv_tgt_hist_le(unsigned i)
{
	return (double)(1ull << i) * 1e-6;
}

uint64_t nkv_tgt_metrics_stamp(void)
{
	/* Acquire: the calibration enable published is seen with it. */
	if (!__atomic_load_n(&nkv_tgt_metrics_on, __ATOMIC_ACQUIRE))
		return 0;
#if defined(__x86_64__)
	if (nkv_tgt_tsc_ns > 0) {
		int64_t d = (int64_t)(__rdtsc() - nkv_tgt_tsc0);

		/* Never 0 (off): ns0 is a monotonic time well past boot; a
		 * CPU whose TSC reads a hair behind calibration's gets ns0. */
		return nkv_tgt_ns0 + (d > 0 ? (uint64_t)((double)d * nkv_tgt_tsc_ns) : 0);
	}
#endif
	return nkv_tgt_clock_ns();
}

void nkv_tgt_metrics_batch_on(int begin)
{
	nkv_tgt_met_batch_ns = begin ? nkv_tgt_metrics_stamp() : 0;
}

int nkv_tgt_metrics_ns(uint32_t nsid, struct nkv_tgt_ns_metrics *out)
{
	if (!nsid || nsid > NKV_TGT_MAX_NS)
		return -EINVAL;
	nkv_tgt_met_sum(nsid, out);
	return 0;
}

/* The metrics opcode of a command on a namespace of csi. */
static enum nkv_tgt_mop nkv_tgt_mop_of(uint8_t csi, uint8_t opc)
{
	if (csi == NKV_CSI_NVM)
		return opc == NKV_NVM_READ ? NKV_TGT_MOP_READ : opc == NKV_NVM_WRITE ?
		       NKV_TGT_MOP_WRITE : opc == NKV_NVM_FLUSH ? NKV_TGT_MOP_FLUSH : NKV_TGT_MOP_OTHER;
	switch (opc) {
	case NKV_KV_STORE: return NKV_TGT_MOP_STORE;
	case NKV_KV_RETRIEVE: return NKV_TGT_MOP_RETRIEVE;
	case NKV_KV_LIST: return NKV_TGT_MOP_LIST;
	case NKV_KV_DELETE: return NKV_TGT_MOP_DELETE;
	case NKV_KV_EXIST: return NKV_TGT_MOP_EXIST;
	default: return NKV_TGT_MOP_OTHER;
	}
}

static void nkv_tgt_add(uint64_t *v, uint64_t n)
{
	nkv_tgt_inc(v, n);	/* this thread's table: no lock prefix */
}

static void nkv_tgt_hist_add(struct nkv_tgt_hist *h, uint64_t ns)
{
	uint64_t us = (ns + 999) / 1000;
	unsigned i = us <= 1 ? 0 : 64 - (unsigned)__builtin_clzll(us - 1);

	nkv_tgt_add(&h->bucket[i < NKV_TGT_HIST_FINITE ? i : NKV_TGT_HIST_FINITE], 1);
	nkv_tgt_add(&h->sum_ns, ns);
}

/* The first slot holding status, or a free one claimed for it. */
static void nkv_tgt_err_add(struct nkv_tgt_ns_metrics *m, enum nkv_tgt_mop op, uint32_t st)
{
	unsigned i;

	nkv_tgt_add(&m->errors[op], 1);
	for (i = 0; i < NKV_TGT_MET_ERRS; i++) {
		uint32_t *s = &m->err[op][i].status;

		if (!*s)	/* a free slot: named before its count shows */
			__atomic_store_n(s, st, __ATOMIC_RELAXED);
		if (*s == st) {
			nkv_tgt_add(&m->err[op][i].count, 1);
			return;
		}
	}
}

/* The namespace a completed I/O command counts for, or NULL. */
static struct nkv_tgt_ns_metrics *nkv_tgt_met_of(struct nkv_tgt_ctrl *c,
						  const struct nkv_tgt_cmd *cmd,
						  enum nkv_tgt_mop *op)
{
	uint32_t nsid = cmd->sqe.nsid;
	struct nkv_be *be;

	if (!cmd->sqid || !nsid || nsid > NKV_TGT_MAX_NS)
		return NULL;	/* admin, or no namespace to name */
	be = nkv_tgt_ns(c, nsid);
	if (!be)
		return NULL;
	*op = nkv_tgt_mop_of(be->csi, (uint8_t)nkv_sqe_opc(&cmd->sqe));
	return nkv_tgt_met_mine(nsid);
}

void nkv_tgt_metrics_cmd_on(struct nkv_tgt_ctrl *c, const struct nkv_tgt_cmd *cmd)
{
	struct nkv_tgt_ns_metrics *m;
	enum nkv_tgt_mop op;
	uint64_t now;

	m = nkv_tgt_met_of(c, cmd, &op);
	if (!m)
		return;
	now = nkv_tgt_met_batch_ns ? nkv_tgt_met_batch_ns : nkv_tgt_metrics_stamp();
	nkv_tgt_add(&m->cmds[op], 1);
	if (cmd->status)
		nkv_tgt_err_add(m, op, cmd->status);
	else if (cmd->bytes)
		nkv_tgt_add(op == NKV_TGT_MOP_STORE || op == NKV_TGT_MOP_WRITE ? &m->bytes_in :
			    &m->bytes_out, cmd->bytes);
	if (cmd->op.t_fetch_ns && now > cmd->op.t_fetch_ns)
		nkv_tgt_hist_add(&m->cmd_lat[op], now - cmd->op.t_fetch_ns);
}

void nkv_tgt_metrics_be_on(struct nkv_tgt_ctrl *c, const struct nkv_tgt_cmd *cmd)
{
	struct nkv_tgt_ns_metrics *m;
	enum nkv_tgt_mop op;
	uint64_t now;

	if (!cmd->op.t_submit_ns)
		return;
	m = nkv_tgt_met_of(c, cmd, &op);
	now = nkv_tgt_metrics_stamp();
	if (m && now > cmd->op.t_submit_ns)
		nkv_tgt_hist_add(&m->be_lat[op], now - cmd->op.t_submit_ns);
}
