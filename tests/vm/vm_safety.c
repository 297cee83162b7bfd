// SPDX-License-Identifier: MIT
/*
 * vm_safety.c - guest cases for nkv.ko's safe-by-default rules (issue 15):
 * who may open, what stays pinned after UNMAP, that open never waits on a
 * MAP parked in a page fault, which memory may be pinned, fork, and the
 * MSI-X pages of BAR0. Each mode prints "ok:" lines and one "FAIL:" line
 * on failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nkv_kmod.h"
#include "vmtest.h"

#define VS_PAGE 4096u

static uint64_t vs_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int vs_map(int fd, void *addr, size_t len, uint64_t *handle)
{
	uint64_t iova[64];
	struct nkv_kmod_map m = {
		.addr = (uintptr_t)addr, .len = len, .npages = len / VS_PAGE,
		.iova_ptr = (uintptr_t)iova,
	};

	if (len / VS_PAGE > 64)
		return EINVAL;
	if (ioctl(fd, NKV_IOC_MAP, &m))
		return errno;
	if (handle)
		*handle = m.handle;
	return 0;
}

static int vs_unmap(int fd, uint64_t handle)
{
	struct nkv_kmod_unmap u = { .handle = handle };

	return ioctl(fd, NKV_IOC_UNMAP, &u) ? errno : 0;
}

static int vs_info(int fd, struct nkv_kmod_info *info)
{
	return ioctl(fd, NKV_IOC_INFO, info) ? errno : 0;
}

static int vs_errno_of(const char *s)
{
	if (!strcmp(s, "EPERM"))
		return EPERM;
	if (!strcmp(s, "EOPNOTSUPP"))
		return EOPNOTSUPP;
	if (!strcmp(s, "EBUSY"))
		return EBUSY;
	return atoi(s);
}

/* Drop CAP_SYS_RAWIO from this process's effective set. */
static int vs_drop_rawio(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		FAIL("capget: %s", strerror(errno));
	d[CAP_SYS_RAWIO / 32].effective &= ~(1u << (CAP_SYS_RAWIO % 32));
	if (syscall(SYS_capset, &h, d))
		FAIL("capset: %s", strerror(errno));
	printf("ok: CAP_SYS_RAWIO dropped\n");
	return 0;
}

/*
 * open DEV must give WANT ("0" for success, then the info flags must be
 * FLAGS); with "norawio", without CAP_SYS_RAWIO.
 */
int vs_mode_open(const char *dev, const char *want, const char *flags, int norawio)
{
	struct nkv_kmod_info info;
	int w = vs_errno_of(want), fd, got;

	if (norawio && vs_drop_rawio())
		return -1;
	fd = open(dev, O_RDWR);
	got = fd < 0 ? errno : 0;
	if (got != w)
		FAIL("open %s: got %s, want %s", dev, strerror(got), strerror(w));
	printf("ok: open %s -> %s\n", dev, strerror(got));
	if (fd < 0)
		return 0;
	if ((got = vs_info(fd, &info)))
		FAIL("info: %s", strerror(got));
	close(fd);
	printf("ok: info flags 0x%x\n", info.flags);
	if (info.flags != strtoul(flags, NULL, 0))
		FAIL("info flags 0x%x, want %s", info.flags, flags);
	return 0;
}

/* UNMAP drops the handle; the pages stay pinned and charged until close. */
int vs_mode_retain(const char *dev)
{
	struct nkv_kmod_info info;
	uint64_t h;
	uint8_t *p = mmap(NULL, 4 * VS_PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = open(dev, O_RDWR), e;

	if (fd < 0 || p == MAP_FAILED)
		FAIL("open %s: %s", dev, strerror(errno));
	if ((e = vs_map(fd, p, 4 * VS_PAGE, &h)))
		FAIL("map: %s", strerror(e));
	if ((e = vs_unmap(fd, h)))
		FAIL("unmap: %s", strerror(e));
	if ((e = vs_unmap(fd, h)) != EINVAL)
		FAIL("second unmap of the handle: %s, want EINVAL", strerror(e));
	if ((e = vs_info(fd, &info)))
		FAIL("info: %s", strerror(e));
	printf("ok: after unmap: handle gone, pinned %llu\n", (unsigned long long)info.pinned);
	if (info.pinned != 4 * VS_PAGE)
		FAIL("pinned %llu after unmap, want %u until the controller is quiesced",
		     (unsigned long long)info.pinned, 4 * VS_PAGE);
	close(fd);
	fd = open(dev, O_RDWR);
	if (fd < 0 || (e = vs_info(fd, &info)))
		FAIL("reopen: %s", strerror(errno));
	close(fd);
	printf("ok: after close and reopen: pinned %llu\n", (unsigned long long)info.pinned);
	if (info.pinned)
		FAIL("pinned %llu after close", (unsigned long long)info.pinned);
	return 0;
}

/*
 * Child A: own the device, register a userfaultfd page, fork the fault
 * handler B (reports the fault on @report, answers it 3 s later), then
 * MAP a page with the iova array on the userfaultfd page: the MAP parks
 * in the fault of its copy to user space. (Pinning itself does not park:
 * a FOLL_LONGTERM pin of a missing userfaultfd page fails at once.) Exit 0 if the MAP finally
 * succeeded. Runs in its own process: a MAP parked in a fault holds that
 * address space's mmap_lock, which the test itself must not wait on.
 */
static void vs_uffd_owner(const char *dev, int report)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffdio_copy cp = { 0 };
	struct nkv_kmod_map m = { 0 };
	struct uffd_msg msg;
	struct pollfd pfd;
	int fd, uffd, st, e;
	uint8_t *area, *src;
	char c = 1;
	pid_t b;

	setpgid(0, 0);	/* the test can kill A and B together */
	fd = open(dev, O_RDWR);
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (fd < 0 || uffd < 0 || ioctl(uffd, UFFDIO_API, &api))
		_exit(10);
	area = mmap(NULL, VS_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	src = mmap(NULL, VS_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	reg.range.start = (uintptr_t)area;
	reg.range.len = VS_PAGE;
	if (area == MAP_FAILED || src == MAP_FAILED || ioctl(uffd, UFFDIO_REGISTER, &reg))
		_exit(11);
	memset(src, 0x5a, VS_PAGE);
	b = fork();
	if (b == 0) {
		pfd.fd = uffd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 10000) != 1 || read(uffd, &msg, sizeof(msg)) != sizeof(msg))
			_exit(1);
		if (write(report, &c, 1) != 1)
			_exit(1);
		sleep(3);
		cp.dst = (uintptr_t)area;
		cp.src = (uintptr_t)src;
		cp.len = VS_PAGE;
		_exit(ioctl(uffd, UFFDIO_COPY, &cp) ? 2 : 0);
	}
	close(report);
	/* The data page is ordinary; the iova array the MAP fills is not. */
	m.addr = (uintptr_t)src;
	m.len = VS_PAGE;
	m.npages = 1;
	m.iova_ptr = (uintptr_t)area;
	e = ioctl(fd, NKV_IOC_MAP, &m) ? errno : 0;
	waitpid(b, &st, 0);
	_exit(e ? 20 : (WIFEXITED(st) && !WEXITSTATUS(st)) ? 0 : 21);
}

/* Where every process of this test sits in the kernel (for a hang). */
static void vs_dump_stacks(pid_t a)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "for p in /proc/[0-9]*; do p=${p#/proc/}; "
		 "grep -q nkv_vmtest /proc/$p/cmdline 2>/dev/null && "
		 "echo stack of $p: && cat /proc/$p/stack; done");
	printf("owner pid %d\n", (int)a);
	if (system(cmd))
		printf("no stacks\n");
}

/*
 * A MAP parked on a userfaultfd page must not hold any lock that open
 * takes: a second open of DEV is EBUSY at once, and an unrelated misc
 * device opens at once (open runs under the global misc mutex).
 */
int vs_mode_uffd(const char *dev)
{
	uint64_t t0, t_misc, t_busy;
	int fd2, busy_errno, pipefd[2], st, ret = 0;
	struct pollfd pfd;
	char c = 0;
	pid_t a;

	if (pipe(pipefd))
		FAIL("pipe: %s", strerror(errno));
	a = fork();
	if (a == 0) {
		close(pipefd[0]);
		vs_uffd_owner(dev, pipefd[1]);
	}
	close(pipefd[1]);
	pfd.fd = pipefd[0];
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 15000) != 1 || read(pipefd[0], &c, 1) != 1 || c != 1) {
		vs_dump_stacks(a);
		kill(-a, SIGKILL);
		waitpid(a, &st, 0);
		FAIL("the MAP did not park in the userfaultfd page");
	}
	alarm(30);	/* a hang is a failure, not a stuck VM */
	printf("ok: MAP parked on a userfaultfd page\n");
	t0 = vs_now_ms();
	fd2 = open(dev, O_RDWR);
	busy_errno = fd2 < 0 ? errno : 0;
	t_busy = vs_now_ms() - t0;
	if (fd2 >= 0)
		close(fd2);
	t0 = vs_now_ms();
	fd2 = open("/dev/cpu_dma_latency", O_RDONLY);
	t_misc = vs_now_ms() - t0;
	if (fd2 >= 0)
		close(fd2);
	printf("ok: second open of %s: %s in %llu ms; open /dev/cpu_dma_latency in %llu ms\n",
	       dev, strerror(busy_errno), (unsigned long long)t_busy, (unsigned long long)t_misc);
	if (t_misc > 1000 || t_busy > 1000) {
		printf("FAIL: an open waited for a MAP parked in a page fault\n");
		ret = -1;
	}
	if (busy_errno != EBUSY) {
		printf("FAIL: second open: %s, want EBUSY\n", strerror(busy_errno));
		ret = -1;
	}
	waitpid(a, &st, 0);
	alarm(0);
	printf("ok: owner exit %d (0: the parked MAP succeeded once answered)\n",
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		FAIL("the parked MAP did not complete");
	return ret;
}

/*
 * Only anonymous, shmem/memfd and hugetlb memory may be pinned: a shared
 * mapping of a regular file (FILE, on ramfs) is refused with EOPNOTSUPP by
 * the module's folio check (kernels from 6.5 refuse the pin first: EFAULT).
 */
int vs_mode_filepin(const char *dev, const char *file)
{
	int fd = open(dev, O_RDWR), ffd, mfd, e, ret = 0;
	uint8_t *fp, *mp, *sp;

	ffd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0600);
	mfd = memfd_create("nkv", 0);
	if (fd < 0 || ffd < 0 || mfd < 0 || ftruncate(ffd, 4 * VS_PAGE) ||
	    ftruncate(mfd, 4 * VS_PAGE))
		FAIL("open %s / %s / memfd: %s", dev, file, strerror(errno));
	fp = mmap(NULL, 4 * VS_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, ffd, 0);
	mp = mmap(NULL, 4 * VS_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	sp = mmap(NULL, 4 * VS_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (fp == MAP_FAILED || mp == MAP_FAILED || sp == MAP_FAILED)
		FAIL("mmap: %s", strerror(errno));
	memset(fp, 1, 4 * VS_PAGE);
	/* The module refuses it (EOPNOTSUPP); from 6.5 GUP itself does (EFAULT). */
	e = vs_map(fd, fp, 4 * VS_PAGE, NULL);
	printf("ok: map of a shared file mapping -> %s\n", strerror(e));
	if (e != EOPNOTSUPP && e != EFAULT) {
		printf("FAIL: file-backed shared mapping: %s, want EOPNOTSUPP (or EFAULT)\n",
		       strerror(e));
		ret = -1;
	}
	e = vs_map(fd, mp, 4 * VS_PAGE, NULL);
	printf("ok: map of memfd -> %s\n", strerror(e));
	if (e) {
		printf("FAIL: memfd: %s\n", strerror(e));
		ret = -1;
	}
	e = vs_map(fd, sp, 4 * VS_PAGE, NULL);
	printf("ok: map of shared anonymous (shmem) -> %s\n", strerror(e));
	if (e) {
		printf("FAIL: shared anonymous: %s\n", strerror(e));
		ret = -1;
	}
	close(fd);
	return ret;
}

/*
 * fork: the child has no BAR mapping (VM_DONTCOPY: touching it is
 * SIGSEGV) and cannot unmap its parent's handles (EPERM).
 */
int vs_mode_fork(const char *dev)
{
	int fd = open(dev, O_RDWR), st, e;
	uint8_t *p = mmap(NULL, VS_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	volatile uint32_t *bar;
	uint64_t h;
	pid_t pid;

	if (fd < 0 || p == MAP_FAILED)
		FAIL("open %s: %s", dev, strerror(errno));
	bar = mmap(NULL, VS_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (bar == MAP_FAILED || (e = vs_map(fd, p, VS_PAGE, &h)))
		FAIL("mmap BAR / map: %s", strerror(errno));
	printf("ok: parent reads VS 0x%x\n", bar[2]);
	pid = fork();
	if (pid == 0) {
		if (vs_unmap(fd, h) != EPERM)
			_exit(2);
		(void)bar[2];
		_exit(3);
	}
	waitpid(pid, &st, 0);
	printf("ok: child %s %d\n", WIFSIGNALED(st) ? "killed by signal" : "exited",
	       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	if (WIFEXITED(st) && WEXITSTATUS(st) == 2)
		FAIL("the child unmapped its parent's handle");
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV)
		FAIL("the child could read the parent's BAR mapping");
	if ((e = vs_unmap(fd, h)))
		FAIL("the parent's own unmap: %s", strerror(e));
	close(fd);
	return 0;
}

static sigjmp_buf vs_jb;

static void vs_on_sigbus(int sig)
{
	siglongjmp(vs_jb, sig);
}

/* Touch @addr; returns the signal it raised, 0 if none. */
static int vs_touch(volatile uint32_t *addr)
{
	int sig = sigsetjmp(vs_jb, 1);

	if (sig)
		return sig;
	(void)*addr;
	return 0;
}

/* The BAR0 pages of the MSI-X table and PBA are never mapped: SIGBUS. */
int vs_mode_msix(const char *dev, const char *pciaddr)
{
	char path[256];
	uint8_t cfg[256];
	uint32_t off[2];
	struct nkv_kmod_info info;
	struct sigaction sa = { .sa_handler = vs_on_sigbus };
	volatile uint8_t *bar;
	int cfd, fd, i, sig, ret = 0;
	unsigned int cap;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", pciaddr);
	cfd = open(path, O_RDONLY);
	if (cfd < 0 || pread(cfd, cfg, sizeof(cfg), 0) != sizeof(cfg))
		FAIL("read %s: %s", path, strerror(errno));
	close(cfd);
	for (cap = cfg[0x34] & ~3u; cap && cfg[cap] != 0x11; cap = cfg[cap + 1] & ~3u)
		;
	if (!cap)
		FAIL("no MSI-X capability in %s", path);
	memcpy(&off[0], cfg + cap + 4, 4);
	memcpy(&off[1], cfg + cap + 8, 4);
	printf("ok: MSI-X table BIR %u offset 0x%x, PBA BIR %u offset 0x%x\n",
	       off[0] & 7, off[0] & ~7u, off[1] & 7, off[1] & ~7u);
	if ((off[0] & 7) || (off[1] & 7))
		FAIL("MSI-X table or PBA not in BAR0: nothing to prove here");
	fd = open(dev, O_RDWR);
	if (fd < 0 || vs_info(fd, &info))
		FAIL("open %s: %s", dev, strerror(errno));
	bar = mmap(NULL, info.bar0_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (bar == MAP_FAILED)
		FAIL("mmap BAR0: %s", strerror(errno));
	sigaction(SIGBUS, &sa, NULL);
	sig = vs_touch((volatile uint32_t *)(bar + 8));
	printf("ok: register page: signal %d\n", sig);
	if (sig)
		FAIL("the register page raised signal %d", sig);
	for (i = 0; i < 2; i++) {
		sig = vs_touch((volatile uint32_t *)(bar + (off[i] & ~7u)));
		printf("ok: %s page: signal %d\n", i ? "PBA" : "table", sig);
		if (sig != SIGBUS) {
			printf("FAIL: the MSI-X %s is mapped to user space\n", i ? "PBA" : "table");
			ret = -1;
		}
	}
	munmap((void *)bar, info.bar0_size);
	close(fd);
	return ret;
}

/* Reset under the owner: the module takes the controller, calls get EIO. */
int vs_mode_reset(const char *dev, const char *pciaddr)
{
	char path[256];
	struct nkv_kmod_info info;
	uint8_t *p = mmap(NULL, VS_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = open(dev, O_RDWR), rfd, e;

	if (fd < 0 || p == MAP_FAILED || (e = vs_map(fd, p, VS_PAGE, NULL)))
		FAIL("open %s / map: %s", dev, strerror(errno));
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/reset", pciaddr);
	rfd = open(path, O_WRONLY);
	if (rfd < 0 || write(rfd, "1", 1) != 1)
		FAIL("reset through %s: %s", path, strerror(errno));
	close(rfd);
	e = vs_info(fd, &info);
	printf("ok: info after reset -> %s\n", strerror(e));
	if (e != EIO)
		FAIL("info after a reset under the owner: %s, want EIO", strerror(e));
	close(fd);
	fd = open(dev, O_RDWR);
	if (fd < 0 || (e = vs_info(fd, &info)) || info.pinned)
		FAIL("next owner after reset: %s", strerror(errno));
	close(fd);
	printf("ok: next owner opens with nothing pinned\n");
	return 0;
}
