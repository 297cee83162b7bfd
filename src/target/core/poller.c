/* SPDX-License-Identifier: MIT */
/*
 * poller.c - the poll policy's clock reads and sleeps (poller.h); the
 * per-pass part is inline in the header.
 */
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "target/core/poller.h"
#include "nkv_wire.h"

void nkv_tgt_clock_init(struct nkv_tgt_clock *k)
{
	k->tick0 = nkv_tgt_ticks();
	k->ns0 = nkv_tgt_now_ns();
}

uint64_t nkv_tgt_clock_ns(const struct nkv_tgt_clock *k, uint64_t ticks)
{
	uint64_t dt = nkv_tgt_ticks() - k->tick0, dns = nkv_tgt_now_ns() - k->ns0;

	return dt ? (uint64_t)((double)ticks * (double)dns / (double)dt) : ticks;
}

void nkv_tgt_poller_init(struct nkv_tgt_poller *p, uint64_t interval_ns)
{
	memset(p, 0, sizeof(*p));
	p->interval_ns = interval_ns ? interval_ns : NKV_TGT_POLL_INTERVAL_NS;
	p->work_ns = nkv_tgt_now_ns();
}

/* How long the thread spins without work before it sleeps (poller.h). */
static uint64_t nkv_tgt_poller_spin_ns(const struct nkv_tgt_ctrl *c)
{
	uint32_t work = c ? nkv_tgt_ctrl_at_work(c) : 0;

	if (!work)
		return NKV_TGT_POLL_SPIN_NS;
	return nkv_tgt_ctrl_near(c) >= work ? NKV_TGT_POLL_NEAR_SPIN_NS :
					      NKV_TGT_POLL_WAIT_SPIN_NS;
}

enum nkv_tgt_poll_next nkv_tgt_poller_decide(struct nkv_tgt_poller *p, struct nkv_tgt_ctrl *c)
{
	uint64_t now = nkv_tgt_now_ns();
	int sleep;

	p->passes = 0;
	if (p->work)
		p->work_ns = now;
	p->work = 0;
	sleep = now - p->work_ns >= nkv_tgt_poller_spin_ns(c);
	if (!sleep && now - p->work_ns >= NKV_TGT_POLL_YIELD_NS)
		sched_yield();	/* a client on this core reaps and submits now */
	if (!sleep && now - p->check_ns < NKV_TGT_POLL_CHECK_NS)
		return NKV_TGT_POLL_AGAIN;
	p->check_ns = now;
	p->pass_end = 0;
	if (!sleep)
		return NKV_TGT_POLL_CHECK;
	if (c)	/* idle: give a burst's objects back */
		nkv_tgt_ctrl_trim(c, NKV_TGT_CMD_KEEP);
	return NKV_TGT_POLL_SLEEP;
}

void nkv_tgt_poller_woken(struct nkv_tgt_poller *p)
{
	p->work_ns = nkv_tgt_now_ns();
}

/* The interval, or longer after a long wait, idle or not (poller.h). */
static uint64_t nkv_tgt_poller_nap_ns(const struct nkv_tgt_poller *p, struct nkv_tgt_ctrl *c)
{
	uint64_t waited, nap;

	if (!c || p->interval_ns >= NKV_TGT_POLL_WAIT_SLEEP_NS)
		return p->interval_ns;
	waited = nkv_tgt_now_ns() - p->work_ns;
	if (waited < NKV_TGT_POLL_WAIT_LONG_NS)
		return p->interval_ns;	/* a 4 KiB round trip: stay at hand */
	nap = waited / 4 < NKV_TGT_POLL_WAIT_SLEEP_NS ? waited / 4 : NKV_TGT_POLL_WAIT_SLEEP_NS;
	return nap > p->interval_ns ? nap : p->interval_ns;
}

uint64_t nkv_tgt_poller_sleep_ns(const struct nkv_tgt_poller *p, struct nkv_tgt_ctrl *c)
{
	if (!c || !(nkv_tgt_ctrl_reg_read(c, NKV_REG_CSTS, 4) & NKV_CSTS_RDY))
		return 0;
	return nkv_tgt_poller_nap_ns(p, c);
}

/* Sleep up to the interval (longer after a long wait), woken early by a
 * backend completion. */
static void nkv_tgt_poller_sleep(struct nkv_tgt_poller *p, struct nkv_tgt_ctrl *c)
{
	uint64_t ns = nkv_tgt_poller_nap_ns(p, c);
	struct timespec to = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
	struct pollfd fd = { .fd = -1, .events = POLLIN };
	int armed = c && nkv_tgt_ctrl_sleep_begin(c);

	if (c && !armed)
		return;		/* a completion is waiting */
	if (armed)
		fd.fd = nkv_tgt_ctrl_wake_fd(c);
	ppoll(&fd, 1, &to, NULL);
	if (armed)
		nkv_tgt_ctrl_sleep_end(c);
}

void nkv_tgt_poller_run(struct nkv_tgt_poller *p, struct nkv_tgt_ctrl *c, const int *stop)
{
	while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
		nkv_tgt_poller_pass(p, c);
		if (nkv_tgt_poller_next(p, c) == NKV_TGT_POLL_SLEEP)
			nkv_tgt_poller_sleep(p, c);
	}
}
