/* SPDX-License-Identifier: MIT */
/*
 * vfio_user_server.c - nkv-target's vfio-user server.
 *
 * One accept thread; one thread per connection that both answers that
 * client's messages and polls its controller, so every nkv_tgt_ctrl_*
 * call for a controller comes from one thread, as ctrl.h asks. BAR0
 * lives in a memfd: its doorbell page is handed to the client as a
 * sparse-mmap area (unless disabled), so doorbells arrive as plain
 * stores that the controller polls; doorbells sent as REGION_WRITE go
 * through nkv_tgt_ctrl_reg_write and land in the same page.
 *
 * Every message is checked before it touches anything: a bad one gets
 * an error reply; one that leaves the stream out of sync (oversized,
 * torn) closes that connection only.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <linux/magic.h>

#include "target/vfio-user/server.h"
#include "vfio-user/msg.h"

#define NKV_VFU_PCI_VENDOR 0x1b36	/* the Identify VID the core reports */
#define NKV_VFU_PCI_DEVICE 0x0010
#define NKV_VFU_PCIE_CAP 0x40		/* PCI Express capability offset */
#define NKV_VFU_NUM_IRQS (VFIO_PCI_ERR_IRQ_INDEX + 2)	/* INTx..REQ */
#define NKV_VFU_SPIN_NS 200000ull	/* time without work before sleeping */
#define NKV_VFU_WAIT_SPIN_NS 10000ull	/* the same, commands at the backend */
#define NKV_VFU_SOCK_PASSES 16	/* controller passes per clock read */
#define NKV_VFU_SOCK_NS 20000ull	/* time between socket checks while spinning */
#define NKV_VFU_HANDSHAKE_MS 10000	/* defaults of the time limits (opts) */
#define NKV_VFU_IDLE_MS 60000
#define NKV_VFU_MSG_MS 5000
#define NKV_VFU_MS 1000000ull		/* ns per ms */
#define NKV_VFU_DMA_MAPS 256		/* default budgets (opts) */
#define NKV_VFU_DMA_BYTES (64ull << 30)
#define NKV_VFU_LOG_BURST 50		/* lines one connection may log at once */
#define NKV_VFU_LOG_PER_S 10		/* then this many a second; the rest counted */

/* A cheap clock for the busy time of connection threads, read at every
 * pass: the TSC where there is one (a few cycles, no system call; it is
 * converted to ns against CLOCK_MONOTONIC over the server's life). */
static inline uint64_t nkv_vfu_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	return nkv_vfu_now_ns();
#endif
}

struct nkv_vfu_server {
	struct nkv_vfu_server_opts o;
	char path[108];
	int lfd;
	pthread_t accept_thr;
	int stop;			/* atomic */
	int stop_fd;			/* eventfd, readable once stopping; or -1 */
	uint64_t sleeps;		/* atomic (relaxed): idle sleeps begun */
	uint64_t busy_ticks;		/* atomic (relaxed): passes that found work */
	uint64_t tick0, ns0;		/* at start: ticks to ns (stats) */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint32_t nconns;		/* under lock */
	uint16_t next_id;		/* under lock */
	struct nkv_vfu_server_stats st;	/* under lock */
};

/* Requests a client may send while a DMA_READ/WRITE of ours waits for
 * its reply; one more ends the connection. */
#define NKV_VFU_HELD 8

struct nkv_vfu_map {
	uint64_t iova;
	uint64_t len;
	void *ptr;
};

struct nkv_vfu_conn {
	struct nkv_vfu_server *s;
	int fd;
	uint16_t id;
	int negotiated;
	uint64_t max_xfer;		/* min(ours, the client's) */
	struct nkv_dma *dma;
	struct nkv_tgt_ctrl *ctrl;
	int bar_fd;			/* memfd holding BAR0 (doorbells at 0x1000) */
	uint8_t *bar;
	uint64_t bar_size;		/* power of two, as a PCI BAR */
	uint8_t cfg[NKV_PCI_CFG_SIZE];
	uint32_t bar_lo, bar_hi;	/* BAR0 as programmed by the client */
	const char *failed_logged;	/* the controller failure last logged */
	struct nkv_vfu_map *maps;
	uint32_t nmaps;
	uint64_t mapped;		/* bytes in maps */
	uint64_t opened_ns;		/* CLOCK_MONOTONIC */
	uint64_t last_msg_ns;
	const char *end_reason;		/* a time limit that ended it, or NULL */
	uint32_t log_tokens;		/* lines it may still log now */
	uint64_t log_refill_ns;
	uint64_t log_dropped;		/* lines not logged since the last one */
	uint64_t log_dropped_total;
	/* Client requests that arrived while waiting for the reply to one of
	 * ours (DMA_READ/WRITE): handled in order after the controller pass. */
	struct nkv_vfu_msg held[NKV_VFU_HELD];
	uint32_t nheld;
	uint16_t next_req_id;		/* msg_id of our next DMA_READ/WRITE */
	int dma_dead;			/* a DMA message failed the stream: end */
	uint64_t busy_ticks;		/* passes with work, not yet in the server's */
	/* The reply being built. */
	uint8_t *rbuf;
	size_t rlen;
	int rfd;
};

static void nkv_vfu_vlog(struct nkv_vfu_server *s, int level, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
static void nkv_vfu_vlog(struct nkv_vfu_server *s, int level, const char *fmt, va_list ap)
{
	static const char *const lv[] = { "error", "warn", "info", "debug" };
	char line[512];
	struct timespec ts;
	int n;

	if (level > s->o.log_level)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(line, sizeof(line), "ts=%lld.%06ld level=%s ", (long long)ts.tv_sec,
		     ts.tv_nsec / 1000, lv[level]);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	/* One write per line keeps concurrent connections' lines whole. */
	fprintf(s->o.log ? s->o.log : stderr, "%s\n", line);
	fflush(s->o.log ? s->o.log : stderr);
}

static void nkv_vfu_log(struct nkv_vfu_server *s, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void nkv_vfu_log(struct nkv_vfu_server *s, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	nkv_vfu_vlog(s, level, fmt, ap);
	va_end(ap);
}

/*
 * A line caused by what one client sends: a token bucket per connection
 * (NKV_VFU_LOG_BURST, refilled NKV_VFU_LOG_PER_S a second) keeps a client
 * that repeats bad messages from filling the disk; lines over it are
 * counted, reported when logging resumes and when the connection closes.
 * Debug lines pass: whoever asks for every message gets them.
 */
static int nkv_vfu_log_ok(struct nkv_vfu_conn *c, int level)
{
	uint64_t now, add;

	if (level > c->s->o.log_level || level == NKV_VFU_LOG_DEBUG)
		return level <= c->s->o.log_level;
	now = nkv_vfu_now_ns();
	add = (now - c->log_refill_ns) * NKV_VFU_LOG_PER_S / 1000000000ull;
	if (add) {
		c->log_tokens = add >= NKV_VFU_LOG_BURST - c->log_tokens ? NKV_VFU_LOG_BURST
									 : c->log_tokens + (uint32_t)add;
		c->log_refill_ns = now;
	}
	if (!c->log_tokens) {
		c->log_dropped++;
		c->log_dropped_total++;
		return 0;
	}
	c->log_tokens--;
	if (c->log_dropped)
		nkv_vfu_log(c->s, NKV_VFU_LOG_WARN, "event=log_suppressed conn=%u lines=%llu",
			    c->id, (unsigned long long)c->log_dropped);
	c->log_dropped = 0;
	return 1;
}

static void nkv_vfu_clog(struct nkv_vfu_conn *c, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void nkv_vfu_clog(struct nkv_vfu_conn *c, int level, const char *fmt, ...)
{
	va_list ap;

	if (!nkv_vfu_log_ok(c, level))
		return;
	va_start(ap, fmt);
	nkv_vfu_vlog(c->s, level, fmt, ap);
	va_end(ap);
}

/* ---------------------------------------------------------------- */
/* PCI configuration space                                            */
/* ---------------------------------------------------------------- */

static void nkv_vfu_put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void nkv_vfu_put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* A type-0 header for an NVMe controller with one 64-bit memory BAR and a
 * PCI Express endpoint capability (what drivers look for first). */
static void nkv_vfu_cfg_init(struct nkv_vfu_conn *c)
{
	uint8_t *p = c->cfg;

	memset(p, 0, sizeof(c->cfg));
	nkv_vfu_put16(p + NKV_PCI_VENDOR_ID, NKV_VFU_PCI_VENDOR);
	nkv_vfu_put16(p + NKV_PCI_DEVICE_ID, NKV_VFU_PCI_DEVICE);
	nkv_vfu_put16(p + NKV_PCI_STATUS, NKV_PCI_STATUS_CAP_LIST);
	p[NKV_PCI_CLASS] = NKV_PCI_CLASS_NVME & 0xff;
	p[NKV_PCI_CLASS + 1] = (NKV_PCI_CLASS_NVME >> 8) & 0xff;
	p[NKV_PCI_CLASS + 2] = (NKV_PCI_CLASS_NVME >> 16) & 0xff;
	nkv_vfu_put16(p + NKV_PCI_SUBSYS_VENDOR, NKV_VFU_PCI_VENDOR);
	nkv_vfu_put16(p + NKV_PCI_SUBSYS_ID, NKV_VFU_PCI_DEVICE);
	p[NKV_PCI_CAP_PTR] = NKV_VFU_PCIE_CAP;
	p[NKV_PCI_INTERRUPT_PIN] = 1;		/* INTA#: see nkv_vfu_check_intx */
	p[NKV_VFU_PCIE_CAP] = 0x10;		/* cap id: PCI Express */
	p[NKV_VFU_PCIE_CAP + 1] = 0;		/* last capability */
	nkv_vfu_put16(p + NKV_VFU_PCIE_CAP + 2, 0x0002);	/* v2, endpoint */
	c->bar_lo = 0;
	c->bar_hi = 0;
}

/* The config space as read now: BAR0 shows its size mask like hardware
 * (64-bit, non-prefetchable memory: type bits 10b). */
static void nkv_vfu_cfg_view(const struct nkv_vfu_conn *c, uint8_t *out)
{
	uint32_t lo = (c->bar_lo & ~(uint32_t)(c->bar_size - 1)) | 0x4u;

	memcpy(out, c->cfg, NKV_PCI_CFG_SIZE);
	nkv_vfu_put32(out + NKV_PCI_BAR0, lo);
	nkv_vfu_put32(out + NKV_PCI_BAR0 + 4, c->bar_hi);
}

/*
 * The Command register bits a PCI Express endpoint with one memory BAR
 * implements (PCIe Base 7.5.1.1.3): Memory Space, Bus Master, Parity
 * Error Response, SERR# Enable, Interrupt Disable. I/O Space is 0 with
 * no I/O BAR; Special Cycles, MWI, VGA snoop, IDSEL and fast
 * back-to-back are hardwired 0 on PCI Express.
 */
#define NKV_VFU_CMD_RW (NKV_PCI_CMD_MEMORY | NKV_PCI_CMD_MASTER | NKV_PCI_CMD_PARITY | \
			NKV_PCI_CMD_SERR | NKV_PCI_CMD_INTX_DISABLE)

static uint16_t nkv_vfu_command(const struct nkv_vfu_conn *c)
{
	uint16_t v;

	memcpy(&v, c->cfg + NKV_PCI_COMMAND, 2);
	return v;
}

/* A controller failure (the core's, or ours below) gets one log line. */
static void nkv_vfu_log_failed(struct nkv_vfu_conn *c)
{
	const char *why = c->ctrl ? nkv_tgt_ctrl_failed(c->ctrl) : NULL;

	if (why && why != c->failed_logged)
		nkv_vfu_log(c->s, NKV_VFU_LOG_WARN,
			    "event=controller_fatal conn=%u csts=%#x pci_command=%#x reason=%s",
			    c->id, (uint32_t)nkv_tgt_ctrl_reg_read(c->ctrl, NKV_REG_CSTS, 4),
			    nkv_vfu_command(c), why);
	c->failed_logged = why;
}

/*
 * An enabled controller whose function has Interrupt Disable clear (and
 * no MSI/MSI-X: none is offered) signals completions with INTx. vfio-user
 * delivers interrupts only through an eventfd the client hands over with
 * SET_IRQS, and this server takes none: it cannot raise INTx, so it fails
 * the controller (CSTS.CFS) rather than leave a driver waiting for
 * interrupts that never come. Drivers that poll set Interrupt Disable.
 */
static void nkv_vfu_check_intx(struct nkv_vfu_conn *c)
{
	if (!c->ctrl || nkv_tgt_ctrl_failed(c->ctrl) ||
	    (nkv_vfu_command(c) & NKV_PCI_CMD_INTX_DISABLE) ||
	    !(nkv_tgt_ctrl_reg_read(c->ctrl, NKV_REG_CSTS, 4) & NKV_CSTS_RDY))
		return;
	nkv_tgt_ctrl_fail(c->ctrl, "intx_needed_but_not_deliverable(set_Interrupt_Disable_in_the_PCI_Command_register)");
}

/* Writable: the command register and BAR0/BAR1; the rest is read-only. */
static void nkv_vfu_cfg_write(struct nkv_vfu_conn *c, uint32_t off, const uint8_t *d,
			      uint32_t len)
{
	uint8_t view[NKV_PCI_CFG_SIZE];
	uint32_t i;

	nkv_vfu_cfg_view(c, view);
	for (i = 0; i < len; i++) {
		uint32_t o = off + i;

		if (o == NKV_PCI_COMMAND || o == NKV_PCI_COMMAND + 1)
			c->cfg[o] = d[i] & (uint8_t)(NKV_VFU_CMD_RW >> (8 * (o - NKV_PCI_COMMAND)));
		else if (o >= NKV_PCI_BAR0 && o < NKV_PCI_BAR0 + 8)
			view[o] = d[i];
	}
	memcpy(&c->bar_lo, view + NKV_PCI_BAR0, 4);
	memcpy(&c->bar_hi, view + NKV_PCI_BAR0 + 4, 4);
	if (c->ctrl)
		nkv_tgt_ctrl_set_bus_master(c->ctrl, nkv_vfu_command(c) & NKV_PCI_CMD_MASTER);
}

/* ---------------------------------------------------------------- */
/* Controller instance                                                */
/* ---------------------------------------------------------------- */

static uint64_t nkv_vfu_pow2(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static int nkv_vfu_dma_xfer(void *ctx, uint64_t iova, void *buf, uint64_t len, int to_client);

static int nkv_vfu_ctrl_new(struct nkv_vfu_conn *c)
{
	struct nkv_tgt_ctrl_opts co = c->s->o.ctrl;

	co.size = sizeof(co);
	co.cntlid = c->id;
	memset(c->bar, 0, c->bar_size);
	c->ctrl = nkv_tgt_ctrl_create(c->s->o.ss, c->dma,
				      (volatile uint32_t *)(c->bar + NKV_REG_DBS), &co);
	if (!c->ctrl)
		return -ENOMEM;
	if (nkv_tgt_ctrl_bar0_size(c->ctrl) > c->bar_size) {
		nkv_vfu_clog(c, NKV_VFU_LOG_ERROR, "event=bar0_too_small conn=%u need=%u have=%llu",
			    c->id, nkv_tgt_ctrl_bar0_size(c->ctrl),
			    (unsigned long long)c->bar_size);
		nkv_tgt_ctrl_destroy(c->ctrl);
		c->ctrl = NULL;
		return -EINVAL;
	}
	nkv_tgt_ctrl_set_bus_master(c->ctrl, nkv_vfu_command(c) & NKV_PCI_CMD_MASTER);
	nkv_tgt_ctrl_set_xfer(c->ctrl, nkv_vfu_dma_xfer, c);
	c->failed_logged = NULL;
	return 0;
}

static int nkv_vfu_conn_setup(struct nkv_vfu_conn *c)
{
	uint32_t max_ioq = c->s->o.ctrl.max_ioq ? c->s->o.ctrl.max_ioq : 64;
	uint64_t db_bytes = (2ull * (max_ioq + 1)) << (2 + c->s->o.ctrl.dstrd);

	c->bar_fd = -1;
	c->bar_size = nkv_vfu_pow2(NKV_REG_DBS + ((db_bytes + NKV_PAGE_SIZE - 1) & ~(uint64_t)(NKV_PAGE_SIZE - 1)));
	c->max_xfer = NKV_VFU_MAX_XFER;
	c->dma = nkv_dma_create();
	if (!c->dma)
		return -ENOMEM;
	c->bar_fd = memfd_create("nkv-bar0", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (c->bar_fd < 0 || ftruncate(c->bar_fd, (off_t)c->bar_size) < 0)
		return -errno;
	/* The client maps this fd: it must not be able to shrink it under
	 * our own mapping either (the same SIGBUS, the other way round). */
	fcntl(c->bar_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	c->bar = mmap(NULL, c->bar_size, PROT_READ | PROT_WRITE, MAP_SHARED, c->bar_fd, 0);
	if (c->bar == MAP_FAILED) {
		c->bar = NULL;
		return -errno;
	}
	nkv_vfu_cfg_init(c);
	return nkv_vfu_ctrl_new(c);
}

/* Controller first (it finishes or fails in-flight commands, which may
 * still point into DMA memory), then the memory. */
static void nkv_vfu_conn_teardown(struct nkv_vfu_conn *c)
{
	uint32_t i;

	c->dma_dead = c->dma_dead ? c->dma_dead : -ECONNRESET;	/* no more messages */
	if (c->ctrl)
		nkv_tgt_ctrl_destroy(c->ctrl);
	for (i = 0; i < c->nheld; i++)
		nkv_vfu_msg_free(&c->held[i]);
	for (i = 0; i < c->nmaps; i++) {
		nkv_dma_unmap(c->dma, c->maps[i].iova, c->maps[i].len);
		munmap(c->maps[i].ptr, c->maps[i].len);
	}
	free(c->maps);
	if (c->dma)
		nkv_dma_destroy(c->dma);
	if (c->bar)
		munmap(c->bar, c->bar_size);
	if (c->bar_fd >= 0)
		close(c->bar_fd);
	close(c->fd);
	free(c->rbuf);
}

/* ---------------------------------------------------------------- */
/* Message handlers: 0 or a negative errno for the error reply.        */
/* ---------------------------------------------------------------- */

static int nkv_vfu_reply_alloc(struct nkv_vfu_conn *c, size_t len)
{
	free(c->rbuf);
	c->rbuf = calloc(1, len ? len : 1);
	c->rlen = len;
	return c->rbuf ? 0 : -ENOMEM;
}

static uint32_t nkv_vfu_max_maps(const struct nkv_vfu_server *s)
{
	uint32_t v = s->o.max_dma_maps ? s->o.max_dma_maps : NKV_VFU_DMA_MAPS;

	return v < NKV_VFU_MAX_DMA_MAPS ? v : NKV_VFU_MAX_DMA_MAPS;
}

/* Would one more region of size bytes exceed the connection's budget? */
static int nkv_vfu_dma_budget(struct nkv_vfu_conn *c, uint64_t size)
{
	const struct nkv_vfu_server *s = c->s;
	uint64_t max = s->o.max_dma_bytes ? s->o.max_dma_bytes : NKV_VFU_DMA_BYTES;

	if (c->nmaps < nkv_vfu_max_maps(s) && size <= max && c->mapped <= max - size)
		return 0;
	nkv_vfu_clog(c, NKV_VFU_LOG_WARN,
		     "event=dma_map_refused conn=%u reason=budget maps=%u/%u bytes=%llu+%llu/%llu",
		     c->id, c->nmaps, nkv_vfu_max_maps(s), (unsigned long long)c->mapped,
		     (unsigned long long)size, (unsigned long long)max);
	return -ENOSPC;
}

static int nkv_vfu_h_version(struct nkv_vfu_conn *c, struct nkv_vfu_msg *m)
{
	char caps[160];
	struct nkv_vfu_version v;
	int rc, n;

	if (c->negotiated)
		return -EINVAL;
	if (m->len < sizeof(v))
		return -EINVAL;
	memcpy(&v, m->payload, sizeof(v));
	if (v.major != NKV_VFU_MAJOR)
		return -ENOTSUP;
	if (m->len > sizeof(v)) {
		const char *js = (const char *)m->payload + sizeof(v);
		size_t jl = m->len - sizeof(v);
		uint64_t x;

		if (memchr(js, '\0', jl) == NULL)
			return -EINVAL;	/* the JSON must be NUL-terminated */
		if (!nkv_vfu_json_u64(js, strlen(js), "max_data_xfer_size", &x) &&
		    x >= 8 && x < c->max_xfer)
			c->max_xfer = x;
	}
	n = snprintf(caps, sizeof(caps),
		     "{\"capabilities\":{\"max_msg_fds\":8,\"max_data_xfer_size\":1048576,"
		     "\"pgsizes\":4096,\"max_dma_maps\":%u}}", nkv_vfu_max_maps(c->s));
	rc = nkv_vfu_reply_alloc(c, sizeof(v) + (size_t)n + 1);
	if (rc)
		return rc;
	if (v.minor > NKV_VFU_MINOR)
		v.minor = NKV_VFU_MINOR;
	memcpy(c->rbuf, &v, sizeof(v));
	memcpy(c->rbuf + sizeof(v), caps, (size_t)n + 1);
	c->negotiated = 1;
	return 0;
}

static int nkv_vfu_h_device_info(struct nkv_vfu_conn *c, struct nkv_vfu_msg *m)
{
	struct nkv_vfu_device_info di;
	int rc;

	if (m->len != sizeof(di))
		return -EINVAL;
	memcpy(&di, m->payload, sizeof(di));
	if (di.argsz < sizeof(di))
		return -EINVAL;
	rc = nkv_vfu_reply_alloc(c, sizeof(di));
	if (rc)
		return rc;
	di.argsz = sizeof(di);
	di.flags = VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET;
	di.num_regions = VFIO_PCI_NUM_REGIONS;
	di.num_irqs = NKV_VFU_NUM_IRQS;
	memcpy(c->rbuf, &di, sizeof(di));
	return 0;
}

static int nkv_vfu_h_region_info(struct nkv_vfu_conn *c, struct nkv_vfu_msg *m)
{
	struct vfio_region_info ri;
	struct vfio_region_info_cap_sparse_mmap sm;
	struct vfio_region_sparse_mmap_area area;
	size_t full = sizeof(ri);
	int sparse, rc;

	if (m->len != sizeof(ri))
		return -EINVAL;
	memcpy(&ri, m->payload, sizeof(ri));
	if (ri.argsz < sizeof(ri) || ri.index >= VFIO_PCI_NUM_REGIONS)
		return -EINVAL;
	sparse = ri.index == NKV_VFU_BAR0 && !c->s->o.no_sparse_mmap;
	if (sparse)
		full += sizeof(sm) + sizeof(area);
	rc = nkv_vfu_reply_alloc(c, ri.argsz >= full ? full : sizeof(ri));
	if (rc)
		return rc;
	ri.flags = 0;
	ri.cap_offset = 0;
	ri.size = 0;
	ri.offset = 0;
	if (ri.index == NKV_VFU_BAR0) {
		ri.flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
		ri.size = c->bar_size;
	} else if (ri.index == NKV_VFU_CONFIG) {
		ri.flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
		ri.size = NKV_PCI_CFG_SIZE;
	}
	if (sparse) {
		/* The fd maps all of BAR0 (offset 0); only the doorbells are
		 * offered, the registers stay behind messages. */
		ri.flags |= VFIO_REGION_INFO_FLAG_MMAP | VFIO_REGION_INFO_FLAG_CAPS;
		c->rfd = c->bar_fd;
		if (ri.argsz >= full) {
			memset(&sm, 0, sizeof(sm));
			sm.header.id = VFIO_REGION_INFO_CAP_SPARSE_MMAP;
			sm.header.version = NKV_VFU_SPARSE_MMAP_VERSION;
			sm.header.next = 0;
			sm.nr_areas = 1;
			area.offset = NKV_REG_DBS;
			area.size = c->bar_size - NKV_REG_DBS;
			ri.cap_offset = sizeof(ri);
			memcpy(c->rbuf + sizeof(ri), &sm, sizeof(sm));
			memcpy(c->rbuf + sizeof(ri) + sizeof(sm), &area, sizeof(area));
		}
	}
	ri.argsz = (uint32_t)full;
	memcpy(c->rbuf, &ri, sizeof(ri));
	return 0;
}

static int nkv_vfu_h_irq_info(struct nkv_vfu_conn *c, struct nkv_vfu_msg *m)
{
	struct vfio_irq_info ii;
	int rc;

	if (m->len != sizeof(ii))
		return -EINVAL;
	memcpy(&ii, m->payload, sizeof(ii));
	if (ii.argsz < sizeof(ii) || ii.index >= NKV_VFU_NUM_IRQS)
		return -EINVAL;
	rc = nkv_vfu_reply_alloc(c, sizeof(ii));
	if (rc)
		return rc;
	/* Clients poll completion queues: no interrupt is offered. */
	ii.argsz = sizeof(ii);
	ii.flags = 0;
	ii.count = 0;
	memcpy(c->rbuf, &ii, sizeof(ii));
	return 0;
}

static int nkv_vfu_h_set_irqs(struct nkv_vfu_conn *c, struct nkv_vfu_msg *m)
{
	struct vfio_irq_set is;

	(void)c;
	if (m->len < sizeof(is))
		return -EINVAL;
	memcpy(&is, m->payload, sizeof(is));
	if (is.argsz < sizeof(is) || is.index >= NKV_VFU_NUM_IRQS)
		return -EINVAL;
	/* Only "disable" (count 0) is meaningful with no vectors. */
	if (is.count != 0 || m->nfds)
		return -EINVAL;
	return 0;
}

static int nkv_vfu_bar0_check(const struct nkv_vfu_conn *c, uint64_t off, uint32_t count)
{
	if (count != 4 && count != 8)
		return -EINVAL;
	if (off >= c->bar_size || off + count > c->bar_size || (off & (count - 1)))
		return -EINVAL;
	return 0;
}

static int nkv_vfu_rw_check(const struct nkv_vfu_conn *c, const struct nkv_vfu_region_rw *rw)
{
	if (rw->count == 0 || rw->count > c->max_xfer)
		return -EINVAL;
	if (rw->region == NKV_VFU_BAR0)
		return nkv_vfu_bar0_check(c, rw->offset, rw->count);
	if (rw->region == NKV_VFU_CONFIG)
		return rw->offset < NKV_PCI_CFG_SIZE &&
		       rw->count <= NKV_PCI_CFG_SIZE - rw->offset ? 0 : -EINVAL;
	return -EINVAL;	/* no other region is implemented */
}

static int nkv_vfu_h_region_read(struct nkv_vfu_conn *c, struct nkv_vfu_msg *m)
{
	struct nkv_vfu_region_rw rw;
	int rc;

	if (m->len != sizeof(rw))
		return -EINVAL;
	memcpy(&rw, m->payload, sizeof(rw));
	rc = nkv_vfu_rw_check(c, &rw);
	if (rc)
		return rc;
	rc = nkv_vfu_reply_alloc(c, sizeof(rw) + rw.count);
	if (rc)
		return rc;
	memcpy(c->rbuf, &rw, sizeof(rw));
	if (rw.region == NKV_VFU_BAR0) {
		uint64_t v = nkv_tgt_ctrl_reg_read(c->ctrl, (uint32_t)rw.offset, rw.count);

		memcpy(c->rbuf + sizeof(rw), &v, rw.count);
	} else {
		uint8_t view[NKV_PCI_CFG_SIZE];

		nkv_vfu_cfg_view(c, view);
		memcpy(c->rbuf + sizeof(rw), view + rw.offset, rw.count);
	}
	return 0;
}

static int nkv_vfu_h_region_write(struct nkv_vfu_conn *c, struct nkv_vfu_msg *m)
{
	struct nkv_vfu_region_rw rw;
	const uint8_t *data;
	int rc;

	if (m->len < sizeof(rw))
		return -EINVAL;
	memcpy(&rw, m->payload, sizeof(rw));
	if (m->len != sizeof(rw) + (uint64_t)rw.count)
		return -EINVAL;
	rc = nkv_vfu_rw_check(c, &rw);
	if (rc)
		return rc;
	data = m->payload + sizeof(rw);
	if (rw.region == NKV_VFU_BAR0) {
		uint64_t v = 0;

		memcpy(&v, data, rw.count);
		nkv_tgt_ctrl_reg_write(c->ctrl, (uint32_t)rw.offset, v, rw.count);
	} else {
		nkv_vfu_cfg_write(c, (uint32_t)rw.offset, data, rw.count);
	}
	nkv_vfu_check_intx(c);
	nkv_vfu_log_failed(c);
	rc = nkv_vfu_reply_alloc(c, sizeof(rw));
	if (!rc)
		memcpy(c->rbuf, &rw, sizeof(rw));
	return rc;
}

static struct nkv_vfu_map *nkv_vfu_find_map(struct nkv_vfu_conn *c, uint64_t iova, uint64_t len)
{
	uint32_t i;

	for (i = 0; i < c->nmaps; i++)
		if (c->maps[i].iova == iova && c->maps[i].len == len)
			return &c->maps[i];
	return NULL;
}

/* The fd must really hold [offset, offset + size) now: a range past its
 * end could never be used. (Pages that vanish later, by a truncate or a
 * punched hole, are survived: memguard.h.) */
static int nkv_vfu_fd_covers(int fd, uint64_t offset, uint64_t size)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size < offset + size)
		return -EINVAL;
	if (S_ISSOCK(st.st_mode) || S_ISDIR(st.st_mode) || S_ISFIFO(st.st_mode))
		return -EBADF;
	return 0;
}

/*
 * Can the pages of this fd never vanish under our mapping? Only shmem
 * (a memfd) sealed against shrinking: a hole punched in it reads back
 * zeros, never SIGBUS. hugetlbfs raises SIGBUS at a hole when its pool is
 * empty, seals or not. Such regions are NKV_DMA_STABLE: threads the
 * target does not own (librados') may touch them.
 */
static int nkv_vfu_fd_stable(int fd)
{
	struct statfs sf;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstatfs(fd, &sf) < 0)
		return 0;
	return sf.f_type != HUGETLBFS_MAGIC;
}

/* Character and block devices are not memory the client shares with us:
 * /dev/zero maps as fresh anonymous memory the client never sees (every
 * transfer silently lost), others reach hardware. A dma-buf is an
 * anonymous inode, not a device. */
static int nkv_vfu_fd_not_device(struct nkv_vfu_conn *c, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
		return 0;
	nkv_vfu_clog(c, NKV_VFU_LOG_WARN,
		     "event=dma_map_refused conn=%u reason=device_fd_is_not_dma_memory(use_a_sealed_memfd_or_dma-buf)",
		     c->id);
	return -EPERM;
}

static int nkv_vfu_h_dma_map(struct nkv_vfu_conn *c, struct nkv_vfu_msg *m)
{
	struct nkv_vfu_dma_map dm;
	struct nkv_vfu_map *nm;
	uint32_t prot = 0;
	int mprot = 0, rc, fd;
	void *p;

	if (m->len != sizeof(dm) || m->nfds > 1)
		return -EINVAL;
	memcpy(&dm, m->payload, sizeof(dm));
	if (dm.argsz != sizeof(dm) || !dm.size || (dm.flags & ~3u) || !dm.flags)
		return -EINVAL;
	if ((dm.addr | dm.size | dm.offset) & (NKV_PAGE_SIZE - 1) ||
	    dm.addr + dm.size < dm.addr || dm.offset + dm.size < dm.offset ||
	    dm.size > (1ull << 40))
		return -EINVAL;
	rc = nkv_vfu_dma_budget(c, dm.size);
	if (rc)
		return rc;
	fd = m->nfds ? m->fds[0] : -1;
	rc = fd >= 0 ? nkv_vfu_fd_covers(fd, dm.offset, dm.size) : 0;
	if (!rc && fd >= 0)
		rc = nkv_vfu_fd_not_device(c, fd);
	if (rc)
		return rc;
	if (dm.flags & NKV_VFU_DMA_F_READ) {
		prot |= NKV_DMA_READ;
		mprot |= PROT_READ;
	}
	if (dm.flags & NKV_VFU_DMA_F_WRITE) {
		prot |= NKV_DMA_WRITE;
		mprot |= PROT_READ | PROT_WRITE;
	}
	/* Unsealed memfds and files are accepted too: their pages may vanish,
	 * which memguard.h survives; sealed shmem stays the fast path. */
	if (fd < 0 || nkv_vfu_fd_stable(fd))
		prot |= NKV_DMA_STABLE;
	/* No fd: memory we cannot map (a GPU's, say), reached with DMA_READ
	 * and DMA_WRITE messages. The controller works on a local shadow,
	 * reserved here and populated only where commands put data. */
	if (fd < 0)
		prot |= NKV_DMA_MSG;
	nkv_vfu_log(c->s, NKV_VFU_LOG_DEBUG,
		    "event=dma_map conn=%u iova=%#llx size=%#llx stable=%d path=%s",
		    c->id, (unsigned long long)dm.addr, (unsigned long long)dm.size,
		    !!(prot & NKV_DMA_STABLE), fd < 0 ? "messages" : "fd");
	nm = realloc(c->maps, (c->nmaps + 1) * sizeof(*c->maps));
	if (!nm)
		return -ENOMEM;
	c->maps = nm;
	if (fd < 0)
		p = mmap(NULL, dm.size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	else
		p = mmap(NULL, dm.size, mprot, MAP_SHARED, fd, (off_t)dm.offset);
	if (p == MAP_FAILED)
		return -errno;
	rc = nkv_dma_map(c->dma, dm.addr, dm.size, p, prot);
	if (rc) {
		munmap(p, dm.size);
		return rc;
	}
	c->maps[c->nmaps].iova = dm.addr;
	c->maps[c->nmaps].len = dm.size;
	c->maps[c->nmaps].ptr = p;
	c->nmaps++;
	c->mapped += dm.size;
	return nkv_vfu_reply_alloc(c, 0);
}

static int nkv_vfu_unmap_one(struct nkv_vfu_conn *c, struct nkv_vfu_map *mp)
{
	int rc;

	if (c->ctrl && nkv_tgt_ctrl_dma_busy(c->ctrl, mp->iova, mp->len))
		return -EBUSY;
	rc = nkv_dma_unmap(c->dma, mp->iova, mp->len);
	if (rc)
		return rc;
	munmap(mp->ptr, mp->len);
	c->mapped -= mp->len;
	*mp = c->maps[--c->nmaps];
	return 0;
}

static int nkv_vfu_h_dma_unmap(struct nkv_vfu_conn *c, struct nkv_vfu_msg *m)
{
	struct nkv_vfu_dma_unmap du;
	struct nkv_vfu_map *mp;
	uint32_t i;
	int rc;

	if (m->len != sizeof(du))
		return -EINVAL;
	memcpy(&du, m->payload, sizeof(du));
	if (du.argsz < sizeof(du))
		return -EINVAL;
	if (du.flags & NKV_VFU_UNMAP_DIRTY_BITMAP)
		return -ENOTSUP;
	if (du.flags & ~NKV_VFU_UNMAP_ALL)
		return -EINVAL;
	if (du.flags & NKV_VFU_UNMAP_ALL) {
		if (du.addr || du.size)
			return -EINVAL;
		for (i = 0; i < c->nmaps; i++)
			if (c->ctrl && nkv_tgt_ctrl_dma_busy(c->ctrl, c->maps[i].iova, c->maps[i].len))
				return -EBUSY;
		while (c->nmaps) {
			rc = nkv_vfu_unmap_one(c, &c->maps[0]);
			if (rc)
				return rc;
		}
	} else {
		mp = nkv_vfu_find_map(c, du.addr, du.size);
		if (!mp)
			return -ENOENT;
		rc = nkv_vfu_unmap_one(c, mp);
		if (rc)
			return rc;
	}
	rc = nkv_vfu_reply_alloc(c, sizeof(du));
	if (!rc)
		memcpy(c->rbuf, &du, sizeof(du));
	return rc;
}

/* Device reset: a fresh controller (in-flight commands finished or failed
 * first); DMA maps survive, as with a real device reset. */
static int nkv_vfu_h_reset(struct nkv_vfu_conn *c, struct nkv_vfu_msg *m)
{
	int rc;

	if (m->len)
		return -EINVAL;
	if (c->ctrl)
		nkv_tgt_ctrl_destroy(c->ctrl);
	c->ctrl = NULL;
	nkv_vfu_cfg_init(c);
	rc = nkv_vfu_ctrl_new(c);
	return rc ? rc : nkv_vfu_reply_alloc(c, 0);
}

static int nkv_vfu_dispatch(struct nkv_vfu_conn *c, struct nkv_vfu_msg *m)
{
	uint16_t cmd = m->hdr.cmd;

	if (nkv_vfu_type(m->hdr.flags) != NKV_VFU_TYPE_COMMAND)
		return -EINVAL;
	if (m->fds_truncated)
		return -EINVAL;
	if (m->nfds && cmd != NKV_VFU_DMA_MAP)
		return -EINVAL;	/* fds where none belong */
	if (!c->negotiated && cmd != NKV_VFU_VERSION)
		return -EINVAL;
	if (!c->ctrl && cmd != NKV_VFU_VERSION && cmd != NKV_VFU_DEVICE_RESET)
		return -EIO;	/* a failed reset left no controller */
	switch (cmd) {
	case NKV_VFU_VERSION: return nkv_vfu_h_version(c, m);
	case NKV_VFU_DMA_MAP: return nkv_vfu_h_dma_map(c, m);
	case NKV_VFU_DMA_UNMAP: return nkv_vfu_h_dma_unmap(c, m);
	case NKV_VFU_DEVICE_GET_INFO: return nkv_vfu_h_device_info(c, m);
	case NKV_VFU_DEVICE_GET_REGION_INFO: return nkv_vfu_h_region_info(c, m);
	case NKV_VFU_DEVICE_GET_IRQ_INFO: return nkv_vfu_h_irq_info(c, m);
	case NKV_VFU_DEVICE_SET_IRQS: return nkv_vfu_h_set_irqs(c, m);
	case NKV_VFU_REGION_READ: return nkv_vfu_h_region_read(c, m);
	case NKV_VFU_REGION_WRITE: return nkv_vfu_h_region_write(c, m);
	case NKV_VFU_DEVICE_RESET: return nkv_vfu_h_reset(c, m);
	default: return -ENOSYS;
	}
}

static int nkv_vfu_send_error(struct nkv_vfu_conn *c, const struct nkv_vfu_hdr *req, int err,
			      const struct nkv_vfu_bounds *b)
{
	struct nkv_vfu_hdr h = { req->msg_id, req->cmd, 0, NKV_VFU_TYPE_REPLY | NKV_VFU_F_ERROR,
				 (uint32_t)err };

	pthread_mutex_lock(&c->s->lock);
	c->s->st.errors++;
	pthread_mutex_unlock(&c->s->lock);
	nkv_vfu_clog(c, NKV_VFU_LOG_WARN, "event=msg_error conn=%u cmd=%s id=%u size=%u errno=%d",
		    c->id, nkv_vfu_cmd_name(req->cmd), req->msg_id, req->size, err);
	return nkv_vfu_send_bounded(c->fd, &h, NULL, 0, NULL, 0, b);
}

static uint64_t nkv_vfu_ms(uint32_t v, uint32_t def)
{
	return (uint64_t)(v ? v : def) * NKV_VFU_MS;
}

/* Receive one message against b's deadline. Non-zero: close. */
static int nkv_vfu_recv_one(struct nkv_vfu_conn *c, struct nkv_vfu_msg *m,
			    const struct nkv_vfu_bounds *b)
{
	int rc = nkv_vfu_recv_bounded(c->fd, m, NKV_VFU_MAX_MSG, b);

	if (rc == -ETIMEDOUT)
		c->end_reason = "message_timeout";
	if (rc == -EMSGSIZE)	/* the rest of the stream cannot be trusted */
		nkv_vfu_send_error(c, &m->hdr, m->hdr.size < sizeof(m->hdr) ? EINVAL : E2BIG, b);
	if (rc)
		nkv_vfu_msg_free(m);
	return rc;
}

static int nkv_vfu_process(struct nkv_vfu_conn *c, struct nkv_vfu_msg *m,
			   const struct nkv_vfu_bounds *b);

/* One message in (held, or from the socket), one reply out. Non-zero:
 * close the connection. */
static int nkv_vfu_handle_one(struct nkv_vfu_conn *c)
{
	struct nkv_vfu_bounds b = { .stop_fd = c->s->stop_fd };
	struct nkv_vfu_msg m;
	int rc;

	/* The whole message and its reply, from the first byte: a deadline
	 * per recv would restart with every byte a slow client drips. */
	c->last_msg_ns = nkv_vfu_now_ns();
	b.deadline_ns = c->last_msg_ns + nkv_vfu_ms(c->s->o.msg_ms, NKV_VFU_MSG_MS);
	if (c->nheld) {
		m = c->held[0];
		memmove(&c->held[0], &c->held[1], --c->nheld * sizeof(c->held[0]));
	} else {
		rc = nkv_vfu_recv_one(c, &m, &b);
		if (rc)
			return rc;
	}
	return nkv_vfu_process(c, &m, &b);
}

static int nkv_vfu_process(struct nkv_vfu_conn *c, struct nkv_vfu_msg *m,
			   const struct nkv_vfu_bounds *b)
{
	struct nkv_vfu_hdr h;
	int rc;

	nkv_vfu_clog(c, NKV_VFU_LOG_DEBUG, "event=msg conn=%u cmd=%s id=%u size=%u fds=%d",
		    c->id, nkv_vfu_cmd_name(m->hdr.cmd), m->hdr.msg_id, m->hdr.size, m->nfds);
	c->rlen = 0;
	c->rfd = -1;
	rc = nkv_vfu_dispatch(c, m);
	if (c->dma_dead) {
		rc = c->dma_dead;	/* a DMA message of ours broke the stream */
	} else if (rc) {
		rc = nkv_vfu_send_error(c, &m->hdr, -rc, b);
		/* A major version we do not speak: nothing else can follow. */
		if (!rc && m->hdr.cmd == NKV_VFU_VERSION && !c->negotiated)
			rc = -EPROTO;
	} else if (!(m->hdr.flags & NKV_VFU_F_NO_REPLY)) {
		h = (struct nkv_vfu_hdr){ m->hdr.msg_id, m->hdr.cmd, 0, NKV_VFU_TYPE_REPLY, 0 };
		rc = nkv_vfu_send_bounded(c->fd, &h, c->rbuf, c->rlen, &c->rfd,
					  c->rfd >= 0 ? 1 : 0, b);
	}
	nkv_vfu_msg_free(m);
	if (rc == -ETIMEDOUT && !c->end_reason)
		c->end_reason = "reply_timeout";
	return rc;
}

/* The DMA message path failed the stream: the connection ends. */
static int nkv_vfu_dma_fail(struct nkv_vfu_conn *c, int rc, const char *why)
{
	c->dma_dead = rc;
	c->end_reason = why;
	return rc;
}

/* Wait for the reply to our request h, holding client requests that come
 * first. 0 with the reply in *r, or a negative errno (the stream is lost). */
static int nkv_vfu_dma_wait(struct nkv_vfu_conn *c, const struct nkv_vfu_hdr *h,
			    struct nkv_vfu_msg *r, const struct nkv_vfu_bounds *b)
{
	for (;;) {
		int rc = nkv_vfu_recv_bounded(c->fd, r, NKV_VFU_MAX_MSG, b);

		if (rc == -ETIMEDOUT)
			return nkv_vfu_dma_fail(c, rc, "dma_reply_timeout");
		if (rc) {
			nkv_vfu_msg_free(r);
			return nkv_vfu_dma_fail(c, rc, rc == -ECANCELED ? NULL : "dma_reply_lost");
		}
		if (nkv_vfu_type(r->hdr.flags) == NKV_VFU_TYPE_REPLY) {
			if (r->hdr.msg_id == h->msg_id && r->hdr.cmd == h->cmd && !r->nfds)
				return 0;
			nkv_vfu_msg_free(r);
			return nkv_vfu_dma_fail(c, -EPROTO, "unexpected_reply");
		}
		if (c->nheld == NKV_VFU_HELD) {
			nkv_vfu_msg_free(r);
			return nkv_vfu_dma_fail(c, -ENOBUFS, "too_many_requests_during_dma");
		}
		c->held[c->nheld++] = *r;
	}
}

/* One DMA_READ or DMA_WRITE of at most max_xfer bytes, and its reply. */
static int nkv_vfu_dma_msg(struct nkv_vfu_conn *c, uint64_t iova, void *buf,
			   uint64_t len, int to_client)
{
	struct nkv_vfu_bounds b = { .stop_fd = c->s->stop_fd };
	struct nkv_vfu_dma_rw rw = { iova, len }, back;
	struct nkv_vfu_hdr h = { c->next_req_id++, to_client ? NKV_VFU_DMA_WRITE : NKV_VFU_DMA_READ,
				 0, NKV_VFU_TYPE_COMMAND, 0 };
	size_t want = sizeof(rw) + (to_client ? 0 : len);
	struct nkv_vfu_msg r;
	uint8_t *out = NULL;
	int rc;

	b.deadline_ns = nkv_vfu_now_ns() + nkv_vfu_ms(c->s->o.msg_ms, NKV_VFU_MSG_MS);
	if (to_client) {
		out = malloc(sizeof(rw) + len);
		if (!out)
			return -ENOMEM;
		memcpy(out, &rw, sizeof(rw));
		memcpy(out + sizeof(rw), buf, len);
	}
	rc = nkv_vfu_send_bounded(c->fd, &h, to_client ? (void *)out : (void *)&rw,
				  to_client ? sizeof(rw) + len : sizeof(rw), NULL, 0, &b);
	free(out);
	if (rc)
		return nkv_vfu_dma_fail(c, rc, rc == -ETIMEDOUT ? "dma_request_timeout" : "dma_request_lost");
	rc = nkv_vfu_dma_wait(c, &h, &r, &b);
	if (rc)
		return rc;
	if (r.hdr.flags & NKV_VFU_F_ERROR) {
		rc = r.hdr.error ? -(int)r.hdr.error : -EIO;
	} else if (r.len != want) {
		rc = -EIO;	/* short, or long */
	} else {
		memcpy(&back, r.payload, sizeof(back));
		rc = back.addr == iova && back.count == len ? 0 : -EIO;
		if (!rc && !to_client)
			memcpy(buf, r.payload + sizeof(rw), len);
	}
	pthread_mutex_lock(&c->s->lock);
	c->s->st.dma_msgs++;
	c->s->st.dma_bytes += rc ? 0 : len;
	pthread_mutex_unlock(&c->s->lock);
	if (rc)
		nkv_vfu_clog(c, NKV_VFU_LOG_WARN,
			     "event=dma_msg_failed conn=%u cmd=%s iova=%#llx count=%llu reply_len=%zu errno=%d",
			     c->id, nkv_vfu_cmd_name(h.cmd), (unsigned long long)iova,
			     (unsigned long long)len, r.len, -rc);
	nkv_vfu_msg_free(&r);
	return rc;
}

/* nkv_tgt_xfer_fn: data of a region mapped without an fd, on the
 * connection thread, in pieces the client accepts. */
static int nkv_vfu_dma_xfer(void *ctx, uint64_t iova, void *buf, uint64_t len, int to_client)
{
	struct nkv_vfu_conn *c = ctx;
	uint8_t *p = buf;
	int rc;

	while (len) {
		uint64_t n = len < c->max_xfer ? len : c->max_xfer;

		if (c->dma_dead)
			return -EIO;
		rc = nkv_vfu_dma_msg(c, iova, p, n, to_client);
		if (rc)
			return rc;
		iova += n;
		p += n;
		len -= n;
	}
	return 0;
}

/*
 * Wait for the socket (and, while asleep, for a backend completion) at
 * most *to. Returns ppoll's result for the socket entry, or -errno of the
 * ppoll itself (read before anything else can overwrite errno).
 */
static int nkv_vfu_conn_wait(struct nkv_vfu_conn *c, struct pollfd *p,
			     const struct timespec *to, int sleep)
{
	static const struct timespec zero = { 0, 0 };
	struct pollfd fds[3] = { *p, { .fd = -1, .events = POLLIN },
				 { .fd = c->s->stop_fd, .events = POLLIN } };
	int n, armed = 0;

	/* No controller (a failed reset): nothing to wake for but messages. */
	if (sleep && c->ctrl) {
		armed = nkv_tgt_ctrl_sleep_begin(c->ctrl);
		sleep = armed;
		if (armed)
			fds[1].fd = nkv_tgt_ctrl_wake_fd(c->ctrl);
	}
	if (sleep)
		__atomic_add_fetch(&c->s->sleeps, 1, __ATOMIC_RELAXED);
	n = ppoll(fds, 3, sleep ? to : &zero, NULL);
	if (n < 0)
		n = -errno;
	if (armed)
		nkv_tgt_ctrl_sleep_end(c->ctrl);
	p->revents = fds[0].revents;
	return n < 0 ? n : !!fds[0].revents;
}

/*
 * How long an idle connection sleeps: the poll interval while its
 * controller is ready (doorbells in shared memory wake nobody). A
 * controller that is not ready has no queues to poll: only a message
 * (register writes included) or a backend completion can give it work,
 * and both wake the ppoll, so it sleeps until its next time limit.
 */
static struct timespec nkv_vfu_sleep_for(const struct nkv_vfu_conn *c, uint64_t interval_ns)
{
	const struct nkv_vfu_server_opts *o = &c->s->o;
	uint64_t ns = interval_ns, now, end;

	if (!c->ctrl || !(nkv_tgt_ctrl_reg_read(c->ctrl, NKV_REG_CSTS, 4) & NKV_CSTS_RDY)) {
		now = nkv_vfu_now_ns();
		end = c->negotiated ? c->last_msg_ns + nkv_vfu_ms(o->idle_ms, NKV_VFU_IDLE_MS)
				    : c->opened_ns + nkv_vfu_ms(o->handshake_ms, NKV_VFU_HANDSHAKE_MS);
		/* 1 ms past the limit, so the wake-up finds it passed. */
		ns = (end > now ? end - now : 0) + NKV_VFU_MS;
	}
	return (struct timespec){ (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
}

/* Why a connection ended: the client's doing (info) or ours (warn, and
 * counted as dropped). rc 0 is a server stop. */
static void nkv_vfu_conn_end(struct nkv_vfu_conn *c, int rc)
{
	struct nkv_vfu_server *s = c->s;
	int by_client = rc == -ECONNRESET || rc == -EPIPE;

	if (!rc || rc == -ECANCELED)
		return;		/* the server is stopping */
	nkv_vfu_log(s, by_client ? NKV_VFU_LOG_INFO : NKV_VFU_LOG_WARN,
		    "event=conn_end conn=%u reason=%s", c->id,
		    c->end_reason ? c->end_reason :
		    rc == -ECONNRESET ? "client_closed" : rc == -EPIPE ? "hangup" : strerror(-rc));
	if (by_client)
		return;
	pthread_mutex_lock(&s->lock);
	s->st.dropped++;
	pthread_mutex_unlock(&s->lock);
}

/* A connection that never says VERSION, or whose controller stays
 * disabled with no message, holds one of max_conns: past its limit it
 * ends (-ETIMEDOUT, with end_reason set). */
static int nkv_vfu_conn_expired(struct nkv_vfu_conn *c)
{
	const struct nkv_vfu_server_opts *o = &c->s->o;
	uint64_t now = nkv_vfu_now_ns();

	if (!c->negotiated) {
		if (now - c->opened_ns < nkv_vfu_ms(o->handshake_ms, NKV_VFU_HANDSHAKE_MS))
			return 0;
		c->end_reason = "handshake_timeout";
		return -ETIMEDOUT;
	}
	if (now - c->last_msg_ns < nkv_vfu_ms(o->idle_ms, NKV_VFU_IDLE_MS))
		return 0;
	if (c->ctrl && (nkv_tgt_ctrl_reg_read(c->ctrl, NKV_REG_CSTS, 4) & NKV_CSTS_RDY))
		return 0;
	c->end_reason = "idle_timeout_controller_disabled";
	return -ETIMEDOUT;
}

/* A connection's busy ticks into the server's total (stats). */
static void nkv_vfu_busy_flush(struct nkv_vfu_conn *c)
{
	__atomic_add_fetch(&c->s->busy_ticks, c->busy_ticks, __ATOMIC_RELAXED);
	c->busy_ticks = 0;
}

/*
 * One thread per connection: poll the controller, check the socket. While
 * spinning, busy or idle, the socket is looked at only every
 * NKV_VFU_SOCK_NS (the clock is read every NKV_VFU_SOCK_PASSES passes): a
 * ppoll costs ~1 us in a VM, more than a command, and checking it on every
 * pass put the thread in the kernel when the next doorbell came. After
 * NKV_VFU_SPIN_NS without work the thread sleeps up to the poll interval,
 * woken early by a message or a backend completion. With commands at the
 * backend it sleeps after NKV_VFU_WAIT_SPIN_NS already: their completions
 * wake it, and a backend that takes hundreds of us (RADOS) shares the
 * cores with its daemons, which a spinning thread slows. Doorbells in
 * shared memory wake nobody: the poll interval bounds how late a doorbell
 * rung after a quiet spell is seen.
 */
static int nkv_vfu_conn_loop(struct nkv_vfu_conn *c)
{
	struct nkv_vfu_server *s = c->s;
	uint64_t ns = s->o.poll_interval_ns ? s->o.poll_interval_ns : 100000;
	uint64_t work_ns = nkv_vfu_now_ns();	/* when work was last seen */
	uint64_t sock_ns = 0;			/* when the socket was last checked */
	uint64_t pass_end = 0;			/* when the last pass ended; 0: the
						 * loop did something else since */
	unsigned passes = 0;
	int work = 0;

	/* Short poll intervals mean it: no 50 us default timer slack. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		struct timespec to;
		uint64_t now, t;
		int n, sleep, w;

		/* One clock read a pass: a pass with work counts from the end
		 * of the one before (the loop's own checks included), unless
		 * the loop did something else in between (a message, a socket
		 * check, a sleep): then it reads the clock before the pass. */
		if (!pass_end)
			pass_end = nkv_vfu_ticks();
		w = c->ctrl ? nkv_tgt_ctrl_poll(c->ctrl) : 0;
		t = nkv_vfu_ticks();
		if (w)
			c->busy_ticks += t - pass_end;
		pass_end = t;
		work |= w;
		if (c->ctrl && nkv_tgt_ctrl_failed(c->ctrl) != c->failed_logged)
			nkv_vfu_log_failed(c);
		if (c->dma_dead)	/* logged by nkv_vfu_conn_end() */
			return c->dma_dead;
		if (c->nheld) {	/* requests that came during a DMA message */
			int rc = nkv_vfu_handle_one(c);

			pass_end = 0;
			if (rc)
				return rc == -ECANCELED ? 0 : rc;
			continue;
		}
		if (c->ctrl && nkv_tgt_ctrl_lost_memory(c->ctrl)) {
			/* Logged and counted as dropped by nkv_vfu_conn_end(). */
			c->end_reason = "client_memory_vanished(SIGBUS_caught:truncated_or_hole_punched_dma_fd)";
			return -EFAULT;
		}
		if (++passes < NKV_VFU_SOCK_PASSES)
			continue;
		passes = 0;
		now = nkv_vfu_now_ns();
		if (work)
			work_ns = now;
		work = 0;
		sleep = now - work_ns >= (c->ctrl && nkv_tgt_ctrl_inflight(c->ctrl) ?
					  NKV_VFU_WAIT_SPIN_NS : NKV_VFU_SPIN_NS);
		if (!sleep && now - sock_ns < NKV_VFU_SOCK_NS)
			continue;
		sock_ns = now;
		pass_end = 0;
		nkv_vfu_busy_flush(c);
		if (sleep && c->ctrl)	/* idle: give a burst's objects back */
			nkv_tgt_ctrl_trim(c->ctrl, NKV_TGT_CMD_KEEP);
		if (sleep)
			to = nkv_vfu_sleep_for(c, ns);
		n = nkv_vfu_conn_wait(c, &p, &to, sleep);
		/* A signal for an embedding program is not the client's doing. */
		if (n == -EINTR || n == 0) {
			n = nkv_vfu_conn_expired(c);
			if (n)
				return n;
			continue;
		}
		if (n < 0)
			return n;
		work_ns = nkv_vfu_now_ns();
		if (p.revents & POLLIN) {
			int rc = nkv_vfu_handle_one(c);

			if (rc == -ECANCELED)
				return 0;
			if (rc)
				return rc;
		} else if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) {
			return -EPIPE;
		}
	}
	return 0;
}

/*
 * SCHED_IDLE takes no privilege; a failure (a seccomp filter, say) leaves
 * the thread as it was, which still works, so it is logged, not fatal.
 */
static void nkv_vfu_conn_sched(struct nkv_vfu_conn *c)
{
	struct sched_param sp = { .sched_priority = 0 };
	int rc;

	if (c->s->o.poll_sched != NKV_VFU_SCHED_IDLE)
		return;
	rc = pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
	if (rc)
		nkv_vfu_log(c->s, NKV_VFU_LOG_WARN, "event=sched_idle_failed conn=%u errno=%d",
			    c->id, rc);
}

static void *nkv_vfu_conn_main(void *arg)
{
	struct nkv_vfu_conn *c = arg;
	struct nkv_vfu_server *s = c->s;
	int rc;

	nkv_vfu_log(s, NKV_VFU_LOG_INFO, "event=conn_open conn=%u", c->id);
	nkv_vfu_conn_sched(c);
	rc = nkv_vfu_conn_setup(c);
	if (rc) {
		nkv_vfu_log(s, NKV_VFU_LOG_ERROR, "event=conn_setup_failed conn=%u errno=%d", c->id, -rc);
		pthread_mutex_lock(&s->lock);
		s->st.failed++;
		pthread_mutex_unlock(&s->lock);
	} else {
		nkv_vfu_conn_end(c, nkv_vfu_conn_loop(c));
		nkv_vfu_busy_flush(c);
	}
	nkv_vfu_conn_teardown(c);
	nkv_vfu_log(s, NKV_VFU_LOG_INFO, "event=conn_closed conn=%u log_suppressed=%llu", c->id,
		    (unsigned long long)c->log_dropped_total);
	free(c);
	pthread_mutex_lock(&s->lock);
	s->nconns--;
	s->st.closed++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);	/* nothing touches s after this */
	return NULL;
}

/* A client we accepted but cannot serve (no memory, no thread): closed,
 * logged and counted, never silently. Called with s->lock held. */
static void nkv_vfu_accept_failed(struct nkv_vfu_server *s, int fd, const char *why, int err)
{
	s->st.failed++;
	pthread_mutex_unlock(&s->lock);
	nkv_vfu_log(s, NKV_VFU_LOG_ERROR, "event=conn_failed reason=%s errno=%d", why, err);
	if (fd >= 0)
		close(fd);
}

static void nkv_vfu_accept_one(struct nkv_vfu_server *s)
{
	struct nkv_vfu_conn *c;
	pthread_attr_t at;
	pthread_t t;
	int fd, rc, max = s->o.max_conns > 0 ? s->o.max_conns : 16;

	fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0) {
		rc = errno;
		if (rc == EAGAIN || rc == EINTR || rc == ECONNABORTED)
			return;
		/* Out of fds or memory: the client stays queued; do not spin. */
		pthread_mutex_lock(&s->lock);
		nkv_vfu_accept_failed(s, -1, "accept", rc);
		usleep(10000);
		return;
	}
	pthread_mutex_lock(&s->lock);
	if (s->nconns >= (uint32_t)max) {
		s->st.refused++;
		pthread_mutex_unlock(&s->lock);
		nkv_vfu_log(s, NKV_VFU_LOG_WARN, "event=conn_refused reason=max_conns max=%d", max);
		close(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		nkv_vfu_accept_failed(s, fd, "no_memory", ENOMEM);
		return;
	}
	c->s = s;
	c->fd = fd;
	c->id = ++s->next_id;
	if (!c->id)
		c->id = ++s->next_id;	/* cntlid 0 is avoided */
	c->opened_ns = c->last_msg_ns = c->log_refill_ns = nkv_vfu_now_ns();
	c->log_tokens = NKV_VFU_LOG_BURST;
	/* The connection thread frees c when it ends, which can be before
	 * pthread_create returns here: nothing reads c after it starts (it
	 * logs its own conn_open, so the log never shows a close first). */
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &at, nkv_vfu_conn_main, c);
	if (rc) {
		pthread_attr_destroy(&at);
		free(c);
		nkv_vfu_accept_failed(s, fd, "thread_create", rc);
		return;
	}
	pthread_attr_destroy(&at);
	s->nconns++;
	s->st.accepted++;
	pthread_mutex_unlock(&s->lock);
}

static void *nkv_vfu_accept_main(void *arg)
{
	struct nkv_vfu_server *s = arg;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		struct pollfd p[2] = { { .fd = s->lfd, .events = POLLIN },
				       { .fd = s->stop_fd, .events = POLLIN } };

		/* The stop eventfd ends the wait at once. */
		if (poll(p, 2, 50) > 0 && (p[0].revents & POLLIN))
			nkv_vfu_accept_one(s);
	}
	return NULL;
}

/*
 * Bind and listen on a temporary name, then rename it over path: the
 * socket file appears only once it accepts connections (a client that
 * waits for the file never sees ECONNREFUSED), and an old socket at path
 * is replaced in one step.
 */
static int nkv_vfu_bind_listen(int fd, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char tmp[sizeof(sa.sun_path)];
	int n = snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());

	if (n < 0 || (size_t)n >= sizeof(tmp))
		snprintf(tmp, sizeof(tmp), "%s", path);	/* no room: bind in place */
	strcpy(sa.sun_path, tmp);
	unlink(tmp);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	if (listen(fd, 16) < 0 || (strcmp(tmp, path) && rename(tmp, path) < 0)) {
		int e = -errno;

		unlink(tmp);
		return e;
	}
	return 0;
}

int nkv_vfu_server_start(const struct nkv_vfu_server_opts *opts, struct nkv_vfu_server **out)
{
	struct sockaddr_un sa;
	struct nkv_vfu_server *s;
	int rc;

	*out = NULL;
	if (!opts || opts->size < sizeof(*opts) || !opts->socket_path || !opts->ss ||
	    opts->ctrl.dstrd > 4 || (unsigned)opts->poll_sched > NKV_VFU_SCHED_IDLE)
		return -EINVAL;
	if (strlen(opts->socket_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *opts;
	s->tick0 = nkv_vfu_ticks();
	s->ns0 = nkv_vfu_now_ns();
	strcpy(s->path, opts->socket_path);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->lfd < 0 || s->stop_fd < 0) {
		rc = -errno;
		goto fail;
	}
	rc = nkv_vfu_bind_listen(s->lfd, s->path);
	if (rc)
		goto fail;
	if (pthread_create(&s->accept_thr, NULL, nkv_vfu_accept_main, s)) {
		rc = -EAGAIN;
		unlink(s->path);
		goto fail;
	}
	nkv_vfu_log(s, NKV_VFU_LOG_INFO, "event=listening socket=%s sparse_mmap=%d",
		    s->path, !s->o.no_sparse_mmap);
	*out = s;
	return 0;
fail:
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return rc;
}

void nkv_vfu_server_stop(struct nkv_vfu_server *s)
{
	if (!s)
		return;
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	/* Never read: stays readable, so every wait of every connection
	 * (asleep, or mid-message with a slow client) ends at once. */
	(void)!write(s->stop_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
	pthread_join(s->accept_thr, NULL);
	close(s->lfd);
	unlink(s->path);
	/* Connection threads see stop within one poll interval. */
	pthread_mutex_lock(&s->lock);
	while (s->nconns)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	nkv_vfu_log(s, NKV_VFU_LOG_INFO,
		    "event=stopped accepted=%llu closed=%llu refused=%llu failed=%llu dropped=%llu",
		    (unsigned long long)s->st.accepted, (unsigned long long)s->st.closed,
		    (unsigned long long)s->st.refused, (unsigned long long)s->st.failed,
		    (unsigned long long)s->st.dropped);
	close(s->stop_fd);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* Ticks to ns at the rate measured since the server started. */
static uint64_t nkv_vfu_ticks_ns(const struct nkv_vfu_server *s, uint64_t ticks)
{
	uint64_t dt = nkv_vfu_ticks() - s->tick0, dns = nkv_vfu_now_ns() - s->ns0;

	return dt ? (uint64_t)((double)ticks * (double)dns / (double)dt) : ticks;
}

void nkv_vfu_server_stats(struct nkv_vfu_server *s, struct nkv_vfu_server_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->st;
	st->conns = s->nconns;
	st->sleeps = __atomic_load_n(&s->sleeps, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->lock);
	st->busy_ns = nkv_vfu_ticks_ns(s, __atomic_load_n(&s->busy_ticks, __ATOMIC_RELAXED));
}

int nkv_vfu_serve_fd(const struct nkv_vfu_server_opts *opts, int fd)
{
	struct nkv_vfu_server *s;
	struct nkv_vfu_conn *c;

	if (!opts || opts->size < sizeof(*opts) || !opts->ss || fd < 0 || opts->ctrl.dstrd > 4) {
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	c = calloc(1, sizeof(*c));
	if (!s || !c) {
		free(s);
		free(c);
		close(fd);
		return -ENOMEM;
	}
	s->o = *opts;
	s->lfd = -1;
	s->stop_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->nconns = 1;		/* the connection below, as if accepted */
	s->st.accepted = 1;
	c->s = s;
	c->fd = fd;
	c->id = 1;
	c->opened_ns = c->last_msg_ns = c->log_refill_ns = nkv_vfu_now_ns();
	c->log_tokens = NKV_VFU_LOG_BURST;
	nkv_vfu_conn_main(c);	/* frees c, closes fd */
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return 0;
}
