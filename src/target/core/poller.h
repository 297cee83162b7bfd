/* SPDX-License-Identifier: MIT */
/*
 * poller.h - the target's one poll policy: when a controller's poll
 * thread polls again, looks at its other sources (a transport's socket)
 * or sleeps, and how much of its time went into passes that found work.
 * The vfio-user transport and the tests drive controllers with it.
 *
 * After each pass (nkv_tgt_poller_pass), nkv_tgt_poller_next() says what
 * to do. While spinning, busy or idle, the other sources are looked at
 * only every NKV_TGT_POLL_CHECK_NS (the clock is read every
 * NKV_TGT_POLL_PASSES passes): a ppoll costs ~1 us in a VM, more than a
 * command, and checking a socket on every pass put the thread in the
 * kernel when the next doorbell came. After NKV_TGT_POLL_SPIN_NS without
 * work the thread sleeps up to the poll interval, woken early by its
 * other sources or a backend completion (nkv_tgt_ctrl_sleep_begin). With
 * commands at the backend it sleeps after NKV_TGT_POLL_WAIT_SPIN_NS
 * already: their completions wake it, and a backend that takes hundreds
 * of us (RADOS) shares the cores with its daemons, which a spinning
 * thread slows. Held Asynchronous Event Requests are not such commands
 * (nkv_tgt_ctrl_at_work): no completion of theirs is coming, and libnkv
 * keeps one held on every controller. Commands whose backend said their
 * completion is near (nkv_be_wait_near: the rocksdb worker's write, a
 * thread of this process that needs no other core) keep the thread
 * awake up to NKV_TGT_POLL_NEAR_SPIN_NS while they are all that is at
 * the backend: asleep, it was woken across an idle virtual CPU after
 * each write, and a batch of 32 4 KiB Stores paid that wake-up and the
 * doorbell seen late after it (docs/bench.md, issue 52 seventh pass);
 * spinning through every backend wait took the cores the rocksdb read
 * pool's threads needed (64 KiB Retrieves 20 % slower).
 * Doorbells in shared memory wake nobody: the sleep bounds how late a
 * doorbell rung after a quiet spell is seen. A wait of
 * NKV_TGT_POLL_WAIT_LONG_NS or more, idle or with commands at the
 * backend (whose completions wake the thread anyway), relaxes that
 * bound: the sleep grows with the wait, a quarter of the time since the
 * last work, up to NKV_TGT_POLL_WAIT_SLEEP_NS (never below the
 * interval), so a doorbell after a quiet spell of T is seen within
 * max(interval, min(T/4, 200 us)). At a 1 us interval (libnkv's tcp:
 * front) the thread otherwise woke ~every 3 us through a 10 ms 32 MiB
 * Retrieve (most of a core on the 2-core VM, taken from the threads
 * moving the bytes) and kept a whole CPU busy while its controller sat
 * idle (11 % with the growing sleep). Shorter waits keep the interval:
 * a thread asleep for longer is woken across an idle virtual CPU, tens
 * of us that a 4 KiB round trip through the front felt.
 * Going to sleep gives a burst's command objects back (nkv_tgt_ctrl_trim).
 * Idle for NKV_TGT_POLL_YIELD_NS, the thread yields at each clock read
 * (sched_yield: returns at once when nothing else waits for the core),
 * so a client polling its completions on the same core (the cpu engine
 * yields too) runs, reaps and rings the next doorbell at once instead
 * of when this thread sleeps: on the 2-core VM, loaded, 4 KiB Retrieve
 * batches of 32 took 370 us at p50 (200 us of spin the client waited
 * out, then up to the poll interval asleep) and take 120 us yielding
 * (docs/bench.md).
 *
 * The hot path (pass, next) is inline: two TSC reads and a counter per
 * pass beside the controller's own.
 *
 * Threading: a poller belongs to its controller's poll thread.
 */
#ifndef NKV_TGT_POLLER_H
#define NKV_TGT_POLLER_H

#include <stdint.h>

#include "ctrl.h"

#define NKV_TGT_POLL_SPIN_NS 200000ull	/* time without work before sleeping */
#define NKV_TGT_POLL_WAIT_SPIN_NS 10000ull	/* the same, commands at the backend */
#define NKV_TGT_POLL_NEAR_SPIN_NS 2000000ull	/* the same, all of them near */
#define NKV_TGT_POLL_PASSES 16		/* controller passes per clock read */
#define NKV_TGT_POLL_CHECK_NS 20000ull	/* time between checks of other sources */
#define NKV_TGT_POLL_YIELD_NS 20000ull	/* idle this long: yield each clock read */
#define NKV_TGT_POLL_INTERVAL_NS 100000ull	/* default longest sleep */
#define NKV_TGT_POLL_WAIT_LONG_NS 1000000ull	/* a wait this long may sleep longer */
#define NKV_TGT_POLL_WAIT_SLEEP_NS 200000ull	/* longest sleep after a long wait */

/* What the poll thread does after a pass. */
enum nkv_tgt_poll_next {
	NKV_TGT_POLL_AGAIN = 0,	/* poll again at once */
	NKV_TGT_POLL_CHECK,	/* look at other sources without waiting */
	NKV_TGT_POLL_SLEEP,	/* idle: wait up to nkv_tgt_poller_sleep_ns() */
};

struct nkv_tgt_poller {
	uint64_t interval_ns;	/* longest sleep */
	uint64_t work_ns;	/* when work was last seen */
	uint64_t check_ns;	/* when other sources were last looked at */
	uint64_t pass_end;	/* ticks at the end of the last pass; 0: the
				 * thread did something else since */
	uint64_t busy_ticks;	/* in passes that found work, not yet taken */
	uint32_t passes;	/* since the last clock read */
	int work;		/* work seen since the last clock read */
};

/* CLOCK_MONOTONIC now, in ns. */
uint64_t nkv_tgt_now_ns(void);

/* A cheap clock for busy time, read at every pass: the TSC where there
 * is one (a few cycles, no system call; nkv_tgt_clock converts it). */
static inline uint64_t nkv_tgt_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	return nkv_tgt_now_ns();
#endif
}

/* Ticks to ns at the rate measured since nkv_tgt_clock_init(). */
struct nkv_tgt_clock {
	uint64_t tick0, ns0;
};
void nkv_tgt_clock_init(struct nkv_tgt_clock *k);
uint64_t nkv_tgt_clock_ns(const struct nkv_tgt_clock *k, uint64_t ticks);

/* interval_ns: the longest idle sleep (0: NKV_TGT_POLL_INTERVAL_NS). The
 * spin starts now. */
void nkv_tgt_poller_init(struct nkv_tgt_poller *p, uint64_t interval_ns);

/* One nkv_tgt_ctrl_poll() pass (none for c NULL), its time counted as
 * busy if it found work: from the end of the pass before, so that the
 * loop's own checks count, unless the thread did something else in
 * between (then from just before this pass). Returns the pass's work. */
static inline int nkv_tgt_poller_pass(struct nkv_tgt_poller *p, struct nkv_tgt_ctrl *c)
{
	uint64_t t;
	int w;

	if (!p->pass_end)
		p->pass_end = nkv_tgt_ticks();
	w = c ? nkv_tgt_ctrl_poll(c) : 0;
	t = nkv_tgt_ticks();
	if (w)
		p->busy_ticks += t - p->pass_end;
	p->pass_end = t;
	p->work |= w;
	return w;
}

/* The clock read behind nkv_tgt_poller_next(): not for callers. */
enum nkv_tgt_poll_next nkv_tgt_poller_decide(struct nkv_tgt_poller *p, struct nkv_tgt_ctrl *c);

/* After a pass: poll again, check, or sleep (a sleep decided has trimmed
 * c's cached command objects already). */
static inline enum nkv_tgt_poll_next nkv_tgt_poller_next(struct nkv_tgt_poller *p,
							 struct nkv_tgt_ctrl *c)
{
	if (++p->passes < NKV_TGT_POLL_PASSES)
		return NKV_TGT_POLL_AGAIN;
	return nkv_tgt_poller_decide(p, c);
}

/* The thread did something other than passes (handled a message): the
 * next pass's busy time starts just before it. */
static inline void nkv_tgt_poller_aside(struct nkv_tgt_poller *p)
{
	p->pass_end = 0;
}

/* Another source had work (a message arrived): spin on from now. */
void nkv_tgt_poller_woken(struct nkv_tgt_poller *p);

/*
 * How long to sleep: the poll interval while c is ready (doorbells in
 * shared memory wake nobody); after NKV_TGT_POLL_WAIT_LONG_NS since the
 * last work, a quarter of that time if it is longer, up to
 * NKV_TGT_POLL_WAIT_SLEEP_NS.
 * 0 for a controller that is not ready (or none): it has no queues to
 * poll, and only what wakes the thread (register writes, backend
 * completions) can give it work, so the caller sleeps as long as its
 * other sources allow.
 */
uint64_t nkv_tgt_poller_sleep_ns(const struct nkv_tgt_poller *p, struct nkv_tgt_ctrl *c);

/* Busy ticks since the last take (nkv_tgt_clock_ns converts them). */
static inline uint64_t nkv_tgt_poller_take_busy(struct nkv_tgt_poller *p)
{
	uint64_t t = p->busy_ticks;

	p->busy_ticks = 0;
	return t;
}

/* A poll thread with no other source: passes, and idle sleeps on c's
 * wake fd up to the interval, until *stop becomes non-zero (acquire). */
void nkv_tgt_poller_run(struct nkv_tgt_poller *p, struct nkv_tgt_ctrl *c, const int *stop);

#endif /* NKV_TGT_POLLER_H */
