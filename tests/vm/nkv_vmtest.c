// SPDX-License-Identifier: MIT
/*
 * nkv_vmtest - runs inside the QEMU guest against QEMU's emulated NVMe
 * controller bound to nkv.ko. Static, so the busybox initramfs needs
 * nothing else.
 *
 *   nkv_vmtest rw URI EXPECT MODE [iommu]
 *       the host library (nkv_ctrl_connect("pcie:..."), two I/O queue
 *       pairs) and the cpu engine through nkv_dev.h: 2 waves x 16 lanes,
 *       each wave owning one queue pair, write then read back LFSR data
 *       with NVM Write/Read SQEs built by nkv_sqe_nvm_rw in the queue
 *       pairs' value slots, one nkv_wave_exec (one SQ doorbell) per batch;
 *       every batch's doorbells counted through the cpu engine's MMIO hook;
 *       more commands than the queue depth (the rings wrap). MODE is the
 *       memory-mode mask (0x8: value slots in the device arena, 0x4: the
 *       doorbell forwarder). EXPECT gets the data last written, for a
 *       compare through /dev/nvme0n1 after the handback.
 *   nkv_vmtest hammer URI         the same writes until killed
 *   nkv_vmtest p2p URI [iommu]
 *       one queue pair writes 1 MiB of LFSR data at disk offset 16 MiB from
 *       host memory, then NVM Reads it into a dma-buf of QEMU's ivshmem
 *       BAR (tests/vm/nkv_p2pexp.ko) imported by the pcie transport
 *       (NKV_IOC_DMABUF_IMPORT), at BAR offset 1 MiB; run.sh compares the
 *       host file behind the BAR with the disk image after the boot
 *   nkv_vmtest p2pimport DEV ERRNO|0   one import must give ERRNO
 *   nkv_vmtest p2pteardown DEV PCIADDR close / unbind with an import held
 *   nkv_vmtest p2prevoke DEV PCIADDR   the exporter revokes an import
 *   nkv_vmtest badargs DEV        every ioctl/mmap error path (vm_kmod.c)
 *   nkv_vmtest unbind DEV PCIADDR unbind nkv while the file is open
 *   nkv_vmtest open|retain|uffd|filepin|fork|msix|reset ...
 *       the safe-by-default rules of the module (vm_safety.c)
 *
 * URI is "pcie:/dev/nkv0" or "pcie:0000:00:04.0". Exit status 0 = pass;
 * every failure prints one "FAIL:" line.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nkv_cpu.h"
#include "nkv_dev.h"
#include "nkv_host.h"
#include "host/host.h"
#include "vmtest.h"

#define VT_QPS 2u		/* queue pairs, one wave each */
#define VT_LANES 16u		/* lanes per wave = commands per batch */
#define VT_DEPTH 32u		/* small, so 128 commands wrap the rings 4 times */
#define VT_CMDS 128u		/* commands per queue pair and pass */
#define VT_BATCHES (VT_CMDS / VT_LANES)
#define VT_CMD_BYTES 8192u	/* two pages: PRP1 + PRP2, no list */
#define VT_SLBA_BYTES (1u << 20)	/* I/O starts 1 MiB into the disk */
#define VT_TOTAL_BYTES ((size_t)VT_QPS * VT_CMDS * VT_CMD_BYTES)
#define VT_POLL_BUDGET (1ull << 22)	/* bounded: a lost completion fails */
#define VT_HAMMER_MS 60000u

enum vt_op { VT_WRITE, VT_READ };

/* One wave's queue pair and its doorbell count (the MMIO hook adds). */
struct vt_wave {
	struct nkv_dev_qp *qp;
	uint64_t sq_doorbells;
	uint64_t cq_doorbells;
};

struct vt_job {
	struct vt_wave w[VT_QPS];
	enum vt_op op;
	uint32_t salt;		/* per pass: the data differs every pass */
	uint32_t block;		/* bytes per block */
	uint32_t nsid;
	uint64_t disk_off;	/* bytes: where command 0's data lives */
	/* p2p reads: command g's two pages are dst_iova[2g], [2g + 1] */
	const uint64_t *dst_iova;
	uint64_t deadline_ms;	/* hammer: stop here; else 0 = one pass */
	uint64_t ok, bad, errs;	/* lanes add with atomics */
	int last_err;
	uint16_t last_status;
};

#define VT_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)

static uint64_t vt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Galois LFSR, taps 32,22,2,1: cheap data that differs in every dword. */
static uint32_t vt_lfsr(uint32_t x)
{
	return (x >> 1) ^ (-(x & 1u) & 0x80200003u);
}

/* Command g's data: its seed mixes the pass and the command index. */
static uint32_t vt_seed(uint32_t salt, uint32_t g)
{
	return (salt * 0x1000193u) ^ (g * 2654435761u) ^ 0x6b76u;
}

static void vt_fill(uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed | 1u, *w = (uint32_t *)p;
	size_t i;

	for (i = 0; i < len / 4; i++) {
		x = vt_lfsr(x);
		w[i] = x;
	}
}

/* Index of the first differing dword, or -1. */
static long vt_check(const uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed | 1u;
	const uint32_t *w = (const uint32_t *)p;
	size_t i;

	for (i = 0; i < len / 4; i++) {
		x = vt_lfsr(x);
		if (w[i] != x)
			return (long)i;
	}
	return -1;
}

/* Counts the doorbell stores device code makes (the cpu engine calls
 * this after every MMIO store); set only while no launch runs. */
static void vt_mmio_hook(void *ctx, volatile uint32_t *addr, uint32_t v)
{
	struct vt_job *j = ctx;
	uint32_t i;

	(void)v;
	for (i = 0; i < VT_QPS; i++) {
		if ((uintptr_t)addr == j->w[i].qp->sq_db_addr)
			VT_ADD(&j->w[i].sq_doorbells, 1);
		else if ((uintptr_t)addr == j->w[i].qp->cq_db_addr)
			VT_ADD(&j->w[i].cq_doorbells, 1);
	}
}

/* One lane's SQE for command g (disk offset by g) through its slot. */
static struct nkv_prep vt_prep(struct vt_job *j, struct nkv_dev_qp *qp, uint32_t slot, uint32_t g)
{
	const struct nkv_dev_slot *s = nkv_dev_slot_get(qp, slot);
	uint8_t *buf = (uint8_t *)(uintptr_t)s->addr;
	uint64_t slba = (j->disk_off + (uint64_t)g * VT_CMD_BYTES) / j->block;
	uint8_t opc = j->op == VT_WRITE ? NKV_NVM_WRITE : NKV_NVM_READ;

	if (j->op == VT_READ && j->dst_iova)	/* into the imported dma-buf */
		return nkv_sqe_nvm_rw(opc, j->nsid, slba, VT_CMD_BYTES / j->block,
				      j->dst_iova[2 * g], j->dst_iova[2 * g + 1]);

	if (j->op == VT_WRITE)
		vt_fill(buf, VT_CMD_BYTES, vt_seed(j->salt, g));
	else
		memset(buf, 0xee, VT_CMD_BYTES);
	/* An 8 KiB slot: PRP2 is its second page, not a list. */
	return nkv_sqe_nvm_rw(opc, j->nsid, slba, VT_CMD_BYTES / j->block, s->prp1, s->prp2);
}

static void vt_result(struct vt_job *j, struct nkv_dev_qp *qp, uint32_t slot, uint32_t g,
		      const struct nkv_dev_result *res)
{
	const struct nkv_dev_slot *s = nkv_dev_slot_get(qp, slot);
	long at;

	if (res->status) {
		j->last_status = res->status;
		VT_ADD(&j->bad, 1);
		return;
	}
	if (j->op == VT_READ && !j->dst_iova) {
		at = vt_check((const uint8_t *)(uintptr_t)s->addr, VT_CMD_BYTES, vt_seed(j->salt, g));
		if (at >= 0) {
			printf("rw: command %u: data differs at dword %ld\n", g, at);
			VT_ADD(&j->bad, 1);
			return;
		}
	}
	VT_ADD(&j->ok, 1);
}

/* Collective: one wave walks its queue pair's commands a batch at a time;
 * each batch is one nkv_wave_exec (one SQ tail doorbell). */
static void vt_lane(void *arg)
{
	struct vt_job *j = arg;
	const struct nkv_wave wv = nkv_wave_enter();
	uint32_t w = nkv_cpu_wave_id(), lane = wv.lane, slot = nkv_wave_slot(wv, 0), b;
	struct nkv_dev_qp *qp = j->w[w].qp;
	uint64_t loops;
	int again = 1;

	for (loops = 0; again; loops++) {
		for (b = 0; b < VT_BATCHES; b++) {
			uint32_t g = w * VT_CMDS + b * VT_LANES + lane;
			struct nkv_dev_result res = nkv_wave_exec(wv, qp, 1, vt_prep(j, qp, slot, g));

			if (res.err) {
				j->last_err = res.err;
				VT_ADD(&j->errs, 1);
			} else {
				vt_result(j, qp, slot, g, &res);
			}
			/* Results are per lane: leave together if any failed. */
			if (nkv_arch_ballot(wv.mask, res.err != 0))
				return;
		}
		if (j->deadline_ms && w == 0 && lane == 0 && loops == 0) {
			printf("HAMMER-RUNNING\n");
			fflush(stdout);
		}
		again = j->deadline_ms && vt_now_ms() < j->deadline_ms;
		again = (int)nkv_cpu_bcast(wv.mask, (uint64_t)again, wv.leader);
	}
}

static int vt_launch(struct vt_job *j, enum vt_op op, uint32_t waves)
{
	struct nkv_cpu_cfg cfg = { .size = sizeof(cfg), .mode = NKV_CPU_FIBERS };
	uint32_t i;
	int rc;

	cfg.waves = waves;
	cfg.wave_size = VT_LANES;
	j->op = op;
	j->ok = j->bad = j->errs = 0;
	for (i = 0; i < VT_QPS; i++)
		j->w[i].sq_doorbells = j->w[i].cq_doorbells = 0;
	nkv_cpu_set_mmio_hook(vt_mmio_hook, j);
	rc = nkv_cpu_launch(&cfg, vt_lane, j);
	nkv_cpu_set_mmio_hook(NULL, NULL);
	if (rc)
		FAIL("nkv_cpu_launch: %d", rc);
	if (j->errs)
		FAIL("%s: %llu lane errors, last %d (queue pair state %u)",
		     op == VT_WRITE ? "write" : "read", (unsigned long long)j->errs, j->last_err,
		     nkv_dev_qp_failed(j->w[0].qp) | nkv_dev_qp_failed(j->w[waves - 1].qp));
	if (j->bad || j->ok != (uint64_t)waves * VT_CMDS)
		FAIL("%s: %llu ok, %llu bad, last status %#x (%s)", op == VT_WRITE ? "write" : "read",
		     (unsigned long long)j->ok, (unsigned long long)j->bad, j->last_status,
		     nkv_status_str(j->last_status));
	return 0;
}

/* One SQ tail doorbell per batch: the batch always fits the credits
 * (VT_LANES < VT_DEPTH - 1 and every batch is reaped before the next). */
static int vt_check_doorbells(struct vt_job *j)
{
	uint32_t i;

	for (i = 0; i < VT_QPS; i++) {
		printf("rw: qp %u: %llu SQ doorbells, %llu CQ doorbells for %u batches\n", i,
		       (unsigned long long)j->w[i].sq_doorbells,
		       (unsigned long long)j->w[i].cq_doorbells, VT_BATCHES);
		if (j->w[i].sq_doorbells != VT_BATCHES)
			FAIL("qp %u: %llu SQ doorbell writes for %u batches", i,
			     (unsigned long long)j->w[i].sq_doorbells, VT_BATCHES);
		if (j->w[i].cq_doorbells < 1 || j->w[i].cq_doorbells > VT_CMDS)
			FAIL("qp %u: %llu CQ doorbell writes", i,
			     (unsigned long long)j->w[i].cq_doorbells);
	}
	return 0;
}

/* With the forwarder, the host saw every entry the doorbells moved. */
static int vt_check_forwarder(struct nkv_qpair **qp, uint64_t per_qp)
{
	struct nkv_qpair_stats st;
	uint32_t i;

	for (i = 0; i < VT_QPS; i++) {
		if (nkv_qpair_get_stats(qp[i], &st))
			FAIL("nkv_qpair_stats");
		printf("rw: qp %u forwarder: %llu SQ doorbells moved %llu entries, %llu completed\n",
		       i, (unsigned long long)st.sq_doorbells,
		       (unsigned long long)st.fwd_submitted, (unsigned long long)st.fwd_completed);
		if (st.fwd_submitted != per_qp || st.fwd_completed != per_qp ||
		    !st.sq_doorbells || st.sq_doorbells > per_qp / VT_LANES)
			FAIL("qp %u: forwarder counted %llu/%llu entries in %llu doorbells, want %llu",
			     i, (unsigned long long)st.fwd_submitted,
			     (unsigned long long)st.fwd_completed,
			     (unsigned long long)st.sq_doorbells, (unsigned long long)per_qp);
	}
	return 0;
}

struct vt_lib {
	struct nkv_ctrl *c;
	struct nkv_qpair *qp[VT_QPS];
	struct nkv_ctrl_info info;
};

static void vt_lib_close(struct vt_lib *l)
{
	uint32_t i;

	for (i = 0; i < VT_QPS; i++)
		nkv_qpair_destroy(l->qp[i]);
	nkv_ctrl_close(l->c);
}

static int vt_lib_open(struct vt_lib *l, struct vt_job *j, const char *uri, uint32_t mode)
{
	struct nkv_ctrl_opts o = { .size = sizeof(o), .memory_mode = mode, .io_queues = VT_QPS };
	struct nkv_qpair_opts qo = { .size = sizeof(qo), .depth = VT_DEPTH, .slots = VT_LANES,
				     .slot_size = VT_CMD_BYTES, .poll_budget = VT_POLL_BUDGET };
	char err[512] = "";
	uint32_t i;
	int rc;

	memset(l, 0, sizeof(*l));
	o.err = err;
	o.errlen = sizeof(err);
	rc = nkv_ctrl_connect(uri, &o, &l->c);
	if (rc)
		FAIL("nkv_ctrl_connect(%s, mode %#x): %s: %s", uri, mode, strerror(-rc), err);
	nkv_ctrl_get_info(l->c, &l->info);
	printf("identify: %s '%s' sn '%s' nsid %u csi %u, %llu blocks of %u bytes, %u queues, "
	       "mqes %u, doorbells %s, vram %s\n", l->info.transport, l->info.model,
	       l->info.serial, l->info.nsid, l->info.csi, (unsigned long long)l->info.capacity,
	       l->info.block_size, l->info.io_queues, l->info.mqes,
	       l->info.doorbells_mapped ? "mapped" : "forwarded",
	       l->info.vram_is_emulated ? "emulated arena" : "none");
	for (i = 0; i < VT_QPS && !rc; i++)
		rc = nkv_qpair_create(l->c, &qo, &l->qp[i]);
	if (rc) {
		vt_lib_close(l);
		FAIL("nkv_qpair_create: %s", strerror(-rc));
	}
	memset(j, 0, sizeof(*j));
	for (i = 0; i < VT_QPS; i++)
		j->w[i].qp = nkv_qpair_dev(l->qp[i]);
	j->block = l->info.block_size;
	j->nsid = l->info.nsid;
	j->disk_off = VT_SLBA_BYTES;
	return 0;
}

/* What the controller must report for this mode, before any I/O. */
static int vt_check_info(const struct vt_lib *l, uint32_t mode)
{
	const struct nkv_ctrl_info *i = &l->info;

	if (strcmp(i->transport, "pcie") || i->csi != NKV_CSI_NVM || i->io_queues < VT_QPS)
		FAIL("transport %s csi %u queues %u", i->transport, i->csi, i->io_queues);
	if (i->block_size < 512 || i->block_size > VT_CMD_BYTES ||
	    i->capacity * i->block_size < VT_SLBA_BYTES + VT_TOTAL_BYTES)
		FAIL("namespace of %llu x %u bytes too small", (unsigned long long)i->capacity,
		     i->block_size);
	if (i->memory_mode != mode || i->doorbells_mapped != !(mode & NKV_MEM_DB) ||
	    i->vram_is_emulated != !!mode)
		FAIL("mode %#x placed as %#x, doorbells mapped %d, emulated %d", mode,
		     i->memory_mode, i->doorbells_mapped, i->vram_is_emulated);
	return 0;
}

/* The data of the last pass in disk order, for the dd compare. */
static int vt_write_expect(const char *path, uint32_t salt)
{
	static uint8_t buf[VT_CMD_BYTES];
	FILE *f = fopen(path, "wb");
	uint32_t g;

	if (!f)
		FAIL("cannot write %s", path);
	for (g = 0; g < VT_QPS * VT_CMDS; g++) {
		vt_fill(buf, sizeof(buf), vt_seed(salt, g));
		if (fwrite(buf, 1, sizeof(buf), f) != sizeof(buf)) {
			fclose(f);
			FAIL("short write to %s", path);
		}
	}
	return fclose(f) ? -1 : 0;
}

/* Two passes with different data: the second proves the first was
 * overwritten, and both wrap the rings VT_CMDS / VT_DEPTH times. */
static int vt_rw_passes(struct vt_lib *l, struct vt_job *j, uint32_t mode)
{
	uint32_t pass;

	for (pass = 0; pass < 2; pass++) {
		j->salt = mode * 16u + pass;
		if (vt_launch(j, VT_WRITE, VT_QPS) || vt_check_doorbells(j) ||
		    vt_launch(j, VT_READ, VT_QPS) || vt_check_doorbells(j))
			return -1;
	}
	if ((mode & NKV_MEM_DB) && vt_check_forwarder(l->qp, 4u * VT_CMDS))
		return -1;
	printf("rw: mode %#x: %u commands of %u KiB on %u queue pairs verified, "
	       "each SQ wrapped %u times\n", mode, 4u * VT_QPS * VT_CMDS, VT_CMD_BYTES / 1024u,
	       VT_QPS, 4u * VT_CMDS / VT_DEPTH);
	return 0;
}

static int vt_mode_rw(const char *uri, const char *expect, uint32_t mode, int iommu)
{
	struct vt_lib l;
	struct vt_job j;
	int ret;

	if (strncmp(uri, "pcie:", 5) || vt_check_iommu(uri + 5, iommu))
		return -1;
	if (vt_lib_open(&l, &j, uri, mode))
		return -1;
	ret = vt_check_info(&l, mode) || vt_rw_passes(&l, &j, mode);
	vt_lib_close(&l);
	if (!ret)
		ret = vt_write_expect(expect, j.salt);
	return ret ? -1 : 0;
}

/* Writes until killed (bounded so a lost kill cannot hang the boot). */
static int vt_mode_hammer(const char *uri)
{
	struct vt_lib l;
	struct vt_job j;

	if (vt_lib_open(&l, &j, uri, 0))
		return -1;
	j.salt = 0x55aa;
	j.deadline_ms = vt_now_ms() + VT_HAMMER_MS;
	if (vt_launch(&j, VT_WRITE, 1))
		return -1;
	FAIL("hammer was not killed within %u s", VT_HAMMER_MS / 1000u);
}

/*
 * The library holds the controller (queue pairs, forwarder with mode 0x4)
 * when the device is unbound from nkv.ko underneath it: the register
 * mapping is gone, so teardown must not touch it (a store would SIGBUS).
 */
static int vt_mode_libunbind(const char *uri, const char *pciaddr)
{
	struct vt_lib l;
	struct vt_job j;
	int fd;

	if (vt_lib_open(&l, &j, uri, NKV_MEM_DB))
		return -1;
	fd = open("/sys/bus/pci/drivers/nkv/unbind", O_WRONLY);
	if (fd < 0 || write(fd, pciaddr, strlen(pciaddr)) < 0)
		FAIL("unbind %s: %s", pciaddr, strerror(errno));
	close(fd);
	vt_lib_close(&l);
	printf("ok: queue pairs and controller closed after unbind, no fault\n");
	return 0;
}

/* run.sh's P2P_DISK_OFF, P2P_BAR_OFF and P2P_LEN: keep them equal. */
#define VT_P2P_DISK (16u << 20)
#define VT_P2P_BAR (1u << 20)
#define VT_P2P_LEN ((size_t)VT_CMDS * VT_CMD_BYTES)

/* Where the import's addresses point: without an IOMMU, at the BAR itself. */
static int vt_p2p_where(const uint64_t *iova, int iommu)
{
	uint64_t bar;

	if (vp_bar2(&bar))
		return -1;
	printf("p2p: BAR2 at 0x%llx, import iova[0] 0x%llx\n", (unsigned long long)bar,
	       (unsigned long long)iova[0]);
	if (!iommu && iova[0] != bar + VT_P2P_BAR)
		FAIL("without an IOMMU the address is not the BAR's own");
	return 0;
}

/*
 * The dma-buf covers BAR [0, 2 MiB); the library's pcie transport imports
 * its second MiB (a dma-buf nkv_dmamem, as the GPU runtime's VRAM would
 * come), and the Reads' PRPs name those addresses.
 */
static int vt_p2p_read(struct vt_lib *l, struct vt_job *j, int dfd, int iommu)
{
	struct nkv_dmamem mem = { .fd = dfd, .fd_offset = VT_P2P_BAR, .len = VT_P2P_LEN,
				  .dmabuf = 1 };
	int ret = l->c->ops->dma_map(l->c->tr, &mem);

	if (ret)
		FAIL("transport import of the dma-buf: %s", strerror(-ret));
	printf("p2p: transport imported %zu pages, contiguous %d\n", mem.npages, mem.contiguous);
	if (mem.npages != VT_P2P_LEN / NKV_PAGE_SIZE || vt_p2p_where(mem.iova, iommu)) {
		l->c->ops->dma_unmap(l->c->tr, &mem);
		return -1;
	}
	j->dst_iova = mem.iova;
	ret = vt_launch(j, VT_READ, 1);
	j->dst_iova = NULL;
	if (l->c->ops->dma_unmap(l->c->tr, &mem))
		FAIL("transport unmap of the import");
	if (!ret)
		printf("p2p: %u reads of %u KiB into the dma-buf completed\n", VT_CMDS,
		       VT_CMD_BYTES / 1024u);
	return ret;
}

static int vt_mode_p2p(const char *uri, int iommu)
{
	struct vt_lib l;
	struct vt_job j;
	int dfd, ret;

	if (strncmp(uri, "pcie:", 5) || vt_check_iommu(uri + 5, iommu))
		return -1;
	if (vt_lib_open(&l, &j, uri, 0))
		return -1;
	j.disk_off = VT_P2P_DISK;
	j.salt = 0x9292;
	ret = vt_launch(&j, VT_WRITE, 1);
	dfd = ret ? -1 : vp_export(0, 2 * VT_P2P_LEN);
	if (dfd >= 0) {
		ret = vt_p2p_read(&l, &j, dfd, iommu);
		close(dfd);
	}
	vt_lib_close(&l);
	return ret || dfd < 0 ? -1 : 0;
}

static int vt_parse_mode(const char *s, uint32_t *mode)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);

	if (!*s || *end || v > NKV_MEM_ALL)
		FAIL("memory mode '%s' is not 0x0..0xf", s);
	*mode = (uint32_t)v;
	return 0;
}

int main(int argc, char **argv)
{
	uint32_t mode = 0;
	int ret = -1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "rw")) {
		if (!vt_parse_mode(argv[4], &mode))
			ret = vt_mode_rw(argv[2], argv[3], mode, argc == 6 && !strcmp(argv[5], "iommu"));
	} else if ((argc == 3 || argc == 4) && !strcmp(argv[1], "p2p")) {
		ret = vt_mode_p2p(argv[2], argc == 4 && !strcmp(argv[3], "iommu"));
	} else if (argc == 4 && !strcmp(argv[1], "p2pimport")) {
		ret = vp_mode_import(argv[2], argv[3]);
	} else if (argc == 4 && !strcmp(argv[1], "p2pteardown")) {
		ret = vp_mode_teardown(argv[2], argv[3]);
	} else if (argc == 4 && !strcmp(argv[1], "p2prevoke")) {
		ret = vp_mode_revoke(argv[2], argv[3]);
	} else if (argc == 3 && !strcmp(argv[1], "hammer")) {
		ret = vt_mode_hammer(argv[2]);
	} else if (argc == 3 && !strcmp(argv[1], "badargs")) {
		ret = vt_mode_badargs(argv[2]);
	} else if (argc == 4 && !strcmp(argv[1], "unbind")) {
		ret = vt_mode_unbind(argv[2], argv[3]);
	} else if (argc == 4 && !strcmp(argv[1], "libunbind")) {
		ret = vt_mode_libunbind(argv[2], argv[3]);
	} else if ((argc == 5 || argc == 6) && !strcmp(argv[1], "open")) {
		ret = vs_mode_open(argv[2], argv[3], argv[4], argc == 6 && !strcmp(argv[5], "norawio"));
	} else if (argc == 3 && !strcmp(argv[1], "retain")) {
		ret = vs_mode_retain(argv[2]);
	} else if (argc == 3 && !strcmp(argv[1], "uffd")) {
		ret = vs_mode_uffd(argv[2]);
	} else if (argc == 4 && !strcmp(argv[1], "filepin")) {
		ret = vs_mode_filepin(argv[2], argv[3]);
	} else if (argc == 3 && !strcmp(argv[1], "fork")) {
		ret = vs_mode_fork(argv[2]);
	} else if (argc == 4 && !strcmp(argv[1], "msix")) {
		ret = vs_mode_msix(argv[2], argv[3]);
	} else if (argc == 4 && !strcmp(argv[1], "reset")) {
		ret = vs_mode_reset(argv[2], argv[3]);
	} else {
		fprintf(stderr, "usage: %s rw URI EXPECT MODE [iommu] | hammer URI | "
			"p2p URI [iommu] | p2pimport DEV ERRNO|0 | p2pteardown|p2prevoke DEV PCIADDR | "
			"badargs DEV | unbind DEV PCIADDR | libunbind URI PCIADDR | "
			"open DEV ERRNO|0 FLAGS [norawio] | retain DEV | uffd DEV | "
			"filepin DEV FILE | fork DEV | msix DEV PCIADDR | reset DEV PCIADDR\n",
			argv[0]);
	}
	return ret ? 1 : 0;
}
