/* SPDX-License-Identifier: MIT */
/*
 * memguard.c - SIGBUS-safe copies to and from client memory.
 *
 * Each guarded copy sets a thread-local recovery point (sigsetjmp) and the
 * two address ranges it touches, copies, then clears them. The SIGBUS
 * handler jumps back only when the signal was raised by the kernel for a
 * fault (si_code > 0), in a thread with a recovery point armed, at an
 * address inside that thread's ranges; otherwise it hands the signal on
 * (the previous handler, or the default action: the fault repeats and
 * kills the process as before). The handler runs with SA_NODEFER, so
 * leaving it by siglongjmp without restoring a signal mask (sigsetjmp's
 * savemask 0: no system call per copy) leaves SIGBUS unblocked.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

#include "memguard.h"

struct nkv_guard {
	sigjmp_buf *jb;			/* armed: the recovery point */
	uintptr_t lo[2], hi[2];		/* the ranges the copy touches */
};

/* initial-exec: no lazy TLS allocation inside the signal handler. */
static __thread struct nkv_guard nkv_guard_tls __attribute__((tls_model("initial-exec")));
static struct sigaction nkv_guard_prev;
static pthread_once_t nkv_guard_once = PTHREAD_ONCE_INIT;
static int nkv_guard_rc;
static uint64_t nkv_guard_nfaults;

static int nkv_guard_ours(const struct nkv_guard *g, const siginfo_t *si)
{
	uintptr_t a = (uintptr_t)si->si_addr;

	if (!g->jb || si->si_code <= 0)
		return 0;	/* not armed, or sent by a process (kill, tgkill) */
	return (a >= g->lo[0] && a < g->hi[0]) || (a >= g->lo[1] && a < g->hi[1]);
}

static void nkv_guard_handler(int sig, siginfo_t *si, void *uc)
{
	struct nkv_guard *g = &nkv_guard_tls;

	if (nkv_guard_ours(g, si)) {
		sigjmp_buf *jb = g->jb;

		g->jb = NULL;
		__atomic_add_fetch(&nkv_guard_nfaults, 1, __ATOMIC_RELAXED);
		siglongjmp(*jb, 1);
	}
	if ((nkv_guard_prev.sa_flags & SA_SIGINFO) && nkv_guard_prev.sa_sigaction) {
		nkv_guard_prev.sa_sigaction(sig, si, uc);
		return;
	}
	if (nkv_guard_prev.sa_handler != SIG_DFL && nkv_guard_prev.sa_handler != SIG_IGN) {
		nkv_guard_prev.sa_handler(sig);
		return;
	}
	/* Default action: returning re-executes the faulting access, which
	 * faults again and now kills the process; a SIGBUS sent by kill()
	 * is raised again the same way. */
	signal(sig, SIG_DFL);
	if (si->si_code <= 0)
		raise(sig);
}

static void nkv_guard_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = nkv_guard_handler;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	nkv_guard_rc = sigaction(SIGBUS, &sa, &nkv_guard_prev) ? -errno : 0;
}

int nkv_guard_init(void)
{
	pthread_once(&nkv_guard_once, nkv_guard_install);
	return nkv_guard_rc;
}

uint64_t nkv_guard_faults(void)
{
	return __atomic_load_n(&nkv_guard_nfaults, __ATOMIC_RELAXED);
}

static void nkv_guard_arm(struct nkv_guard *g, sigjmp_buf *jb, const void *a, size_t an,
			  const void *b, size_t bn)
{
	g->lo[0] = (uintptr_t)a;
	g->hi[0] = (uintptr_t)a + an;
	g->lo[1] = (uintptr_t)b;
	g->hi[1] = (uintptr_t)b + bn;
	/* The ranges before the recovery point: the handler reads them. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	g->jb = jb;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static void nkv_guard_disarm(struct nkv_guard *g)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	g->jb = NULL;
}

int nkv_guard_copy(void *dst, const void *src, size_t n)
{
	struct nkv_guard *g = &nkv_guard_tls;
	sigjmp_buf jb;

	if (!n)
		return 0;
	if (sigsetjmp(jb, 0))
		return -EFAULT;
	nkv_guard_arm(g, &jb, dst, n, src, n);
	memcpy(dst, src, n);
	nkv_guard_disarm(g);
	return 0;
}

int nkv_guard_copy_publish(void *dst, const void *src, size_t n, uint32_t *flag, uint32_t v)
{
	struct nkv_guard *g = &nkv_guard_tls;
	uintptr_t lo = (uintptr_t)dst < (uintptr_t)flag ? (uintptr_t)dst : (uintptr_t)flag;
	uintptr_t hi = (uintptr_t)dst + n > (uintptr_t)(flag + 1) ? (uintptr_t)dst + n
								    : (uintptr_t)(flag + 1);
	sigjmp_buf jb;

	if (sigsetjmp(jb, 0))
		return -EFAULT;
	/* One range covering both writes, the source as the other. */
	nkv_guard_arm(g, &jb, (const void *)lo, hi - lo, src, n);
	memcpy(dst, src, n);
	__atomic_store_n(flag, v, __ATOMIC_RELEASE);
	nkv_guard_disarm(g);
	return 0;
}

int nkv_guard_gather(void *dst, const struct iovec *iov, int cnt, uint64_t len)
{
	uint8_t *d = dst;
	uint64_t done = 0;
	int i;

	for (i = 0; i < cnt && done < len; i++) {
		uint64_t n = iov[i].iov_len < len - done ? iov[i].iov_len : len - done;

		if (nkv_guard_copy(d + done, iov[i].iov_base, n))
			return -EFAULT;
		done += n;
	}
	return 0;
}

int nkv_guard_scatter_at(const struct iovec *iov, int cnt, uint64_t off, const void *src,
			 uint64_t len)
{
	const uint8_t *s = src;
	uint64_t done = 0;
	int i;

	for (i = 0; i < cnt && done < len; i++) {
		uint64_t l = iov[i].iov_len, n;

		if (off >= l) {
			off -= l;
			continue;
		}
		n = l - off < len - done ? l - off : len - done;
		if (nkv_guard_copy((uint8_t *)iov[i].iov_base + off, s + done, n))
			return -EFAULT;
		done += n;
		off = 0;
	}
	return 0;
}

int nkv_guard_scatter(const struct iovec *iov, int cnt, const void *src, uint64_t len)
{
	return nkv_guard_scatter_at(iov, cnt, 0, src, len);
}
