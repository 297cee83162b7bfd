/* SPDX-License-Identifier: MIT */
/*
 * fiber.c - lanes as cooperative fibers on one OS thread per block (a
 * block of one wave by default).
 *
 * A lane runs until it blocks in a collective (or returns), then swaps back
 * to its block's scheduler, which resumes the next lane that can make
 * progress. Stacks are mmap'd with a PROT_NONE guard page below them so an
 * overflow faults instead of corrupting a neighbour. The sanitizers are
 * told about every switch: ASan must know the stack it is on (or it reports
 * false stack overflows and leaks fake frames), TSan must know the fiber
 * (or it mixes the shadow states of different lanes).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "device/cpu/ctx_switch.h"
#include "device/cpu/engine.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NKV_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define NKV_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(NKV_ASAN)
#define NKV_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__) && !defined(NKV_TSAN)
#define NKV_TSAN 1
#endif

#ifdef NKV_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define asan_start(save, bottom, len) __sanitizer_start_switch_fiber(save, bottom, len)
#define asan_finish(save, bottom, len) __sanitizer_finish_switch_fiber(save, bottom, len)
#else
#define asan_start(save, bottom, len) ((void)(save), (void)(bottom), (void)(len))
#define asan_finish(save, bottom, len) ((void)(save), (void)(bottom), (void)(len))
#endif

#ifdef NKV_TSAN
#include <sanitizer/tsan_interface.h>
#endif

/* Asked once: switch_in() needs it at every fiber switch, and sysconf()
 * is a libc call (racing first callers store the same value). */
static size_t sys_page_size(void)
{
	static size_t pg;
	size_t v = __atomic_load_n(&pg, __ATOMIC_RELAXED);
	long p;

	if (v)
		return v;
	p = sysconf(_SC_PAGESIZE);
	v = p > 0 ? (size_t)p : 4096u;
	__atomic_store_n(&pg, v, __ATOMIC_RELAXED);
	return v;
}

static void lane_entry(void)
{
	struct nkv_cpu_lane *l = nkv_cpu_cur;
	struct nkv_cpu_block *b = l->w->blk;

	/* First time on this stack: learn the scheduler's stack for the way back. */
	asan_finish(NULL, &b->sched_stack, &b->sched_stack_len);
	b->run->fn(b->run->arg);
	nkv_cpu_lane_exit(l);
	l->done = 1;
	/* Leaving for good: no fake stack to keep. */
	asan_start(NULL, b->sched_stack, b->sched_stack_len);
#ifdef NKV_TSAN
	__tsan_switch_to_fiber(b->sched_tsan_fiber, 0);
#endif
#ifdef NKV_CTX_ASM
	/* A finished lane is never switched to again. */
	nkv_ctx_switch(&l->sp, b->sched_sp);
	__builtin_unreachable();
#endif
	/* ucontext: returning goes to uc_link, the scheduler. */
}

#ifdef NKV_CTX_ASM
static int make_ctx(struct nkv_cpu_lane *l)
{
	l->sp = nkv_ctx_make((char *)l->map + l->map_len, lane_entry);
	return 0;
}

static void ctx_swap(void **save_sp, ucontext_t *save, void *load_sp, ucontext_t *load)
{
	(void)save;
	(void)load;
	nkv_ctx_switch(save_sp, load_sp);
}
#else
/* getcontext() returns twice: keep it away from locals that live on. */
static int make_ctx(struct nkv_cpu_lane *l)
{
	if (getcontext(&l->ctx))
		return -ENOMEM;
	l->ctx.uc_stack.ss_sp = (char *)l->map + sys_page_size();
	l->ctx.uc_stack.ss_size = l->map_len - sys_page_size();
	l->ctx.uc_link = &l->w->blk->sched;
	makecontext(&l->ctx, lane_entry, 0);
	return 0;
}

static void ctx_swap(void **save_sp, ucontext_t *save, void *load_sp, ucontext_t *load)
{
	(void)save_sp;
	(void)load_sp;
	swapcontext(save, load);
}
#endif

int nkv_fiber_init(struct nkv_cpu_lane *l, size_t stack)
{
	size_t pg = sys_page_size();
	char *map;

	stack = (stack + pg - 1) & ~(pg - 1);
	map = mmap(NULL, stack + pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (map == MAP_FAILED)
		return -ENOMEM;
	l->map = map;
	l->map_len = stack + pg;
	/* The guard page below the stack turns an overflow into a fault. */
	if (mprotect(map, pg, PROT_NONE) || make_ctx(l)) {
		nkv_fiber_free(l);
		return -ENOMEM;
	}
#ifdef NKV_TSAN
	l->tsan_fiber = __tsan_create_fiber(0);
#endif
	return 0;
}

void nkv_fiber_free(struct nkv_cpu_lane *l)
{
#ifdef NKV_TSAN
	if (l->tsan_fiber)
		__tsan_destroy_fiber(l->tsan_fiber);
	l->tsan_fiber = NULL;
#endif
	if (l->map) {
#ifdef NKV_ASAN
		/* A lane stopped by a protocol error left its frames poisoned;
		 * the next launch may map its stacks here. */
		__asan_unpoison_memory_region(l->map, l->map_len);
#endif
		munmap(l->map, l->map_len);
	}
	l->map = NULL;
}

/* Scheduler -> lane, and back when the lane yields or returns. */
static void switch_in(struct nkv_cpu_block *b, struct nkv_cpu_lane *l)
{
	nkv_cpu_cur = l;
	asan_start(&b->sched_asan_fake, (char *)l->map + sys_page_size(),
		   l->map_len - sys_page_size());
#ifdef NKV_TSAN
	__tsan_switch_to_fiber(l->tsan_fiber, 0);
#endif
	ctx_swap(&b->sched_sp, &b->sched, l->sp, &l->ctx);
	asan_finish(b->sched_asan_fake, NULL, NULL);
	nkv_cpu_cur = NULL;
}

/* A blocked lane is worth resuming only once its collective completed. */
static int runnable(const struct nkv_cpu_lane *l)
{
	return !l->done && !l->pending;
}

/* NKV_CPU_CHECK: a random runnable thread; else the next one in order. */
static int pick(struct nkv_cpu_block *b, uint32_t after)
{
	uint32_t i, n = 0, k;

	if (!nkv_cpu_checking(b->run)) {
		for (i = 0; i < b->threads; i++) {
			if (++after == b->threads)
				after = 0;
			if (runnable(b->lane[after]))
				return (int)after;
		}
		return -1;
	}
	for (i = 0; i < b->threads; i++)
		n += runnable(nkv_cpu_thread(b, i));
	if (!n)
		return -1;
	k = (uint32_t)(nkv_cpu_rand(b) % n);
	for (i = 0; i < b->threads; i++)
		if (runnable(nkv_cpu_thread(b, i)) && k-- == 0)
			break;
	return (int)i;
}

/* No thread of @b can run, yet some have not returned: name the first
 * waiting one, and one that waits somewhere else if there is one. */
static void deadlock(struct nkv_cpu_block *b)
{
	struct nkv_cpu_lane *first = NULL, *l;
	char a[160], o[160];
	uint32_t t;

	for (t = 0; t < b->threads; t++) {
		l = nkv_cpu_thread(b, t);
		if (l->done)
			continue;
		if (!first) {
			first = l;
		} else if (l->c_kind != first->c_kind || strcmp(l->c_site, first->c_site)) {
			nkv_cpu_describe(a, sizeof(a), first);
			nkv_cpu_describe(o, sizeof(o), l);
			nkv_cpu_violation(b, "block %u: %s and %s: no thread of the block can run",
					  b->id, a, o);
			return;
		}
	}
	nkv_cpu_describe(a, sizeof(a), first);
	nkv_cpu_violation(b, "wave %u: %s: no thread of the block can run", first->w->id, a);
}

/* Runs the block's lanes until all returned or a protocol error stopped
 * the block (its lanes are then abandoned where they stand: their stacks
 * are unmapped with the launch). */
void nkv_fiber_schedule(struct nkv_cpu_block *b)
{
	uint32_t i, left;
	int next = (int)b->threads - 1;

#ifdef NKV_TSAN
	b->sched_tsan_fiber = __tsan_get_current_fiber();
#endif
	while (!b->stopped) {
		next = pick(b, (uint32_t)next);
		if (next >= 0) {
			switch_in(b, nkv_cpu_thread(b, (uint32_t)next));
			continue;
		}
		for (i = 0, left = 0; i < b->threads; i++)
			left += !nkv_cpu_thread(b, i)->done;
		if (!left)
			break;
		/* Every thread left waits in a collective nobody can complete. */
		deadlock(b);
	}
}

void nkv_fiber_yield(struct nkv_cpu_lane *l)
{
	struct nkv_cpu_block *b = l->w->blk;

	asan_start(&l->asan_fake, b->sched_stack, b->sched_stack_len);
#ifdef NKV_TSAN
	__tsan_switch_to_fiber(b->sched_tsan_fiber, 0);
#endif
	ctx_swap(&l->sp, &l->ctx, b->sched_sp, &b->sched);
	asan_finish(l->asan_fake, &b->sched_stack, &b->sched_stack_len);
}
