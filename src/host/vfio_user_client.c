/* SPDX-License-Identifier: MIT */
/*
 * vfio_user_client.c - the host library's vfio-user transport.
 *
 * Written against the public protocol only, so it drives any conformant
 * vfio-user NVMe controller: doorbells are used as memory when BAR0 offers
 * a sparse-mmap (or whole-region mmap) area covering 0x1000, and through
 * REGION_WRITE messages otherwise (the caller then runs a doorbell
 * forwarder). Opening sets the PCI function up as a driver does (Memory
 * Space, Bus Master Enable, Interrupt Disable). One request is on the
 * wire at a time (a mutex), every receive has a socket timeout, and a
 * transport whose server went away stays failed: calls return -ENOTCONN
 * at once instead of hanging.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "host/transport.h"
#include "vfio-user/client.h"
#include "vfio-user/msg.h"

#define NKV_VFU_TIMEOUT_MS_DEFAULT 5000

struct nkv_tr {
	int fd;
	pthread_mutex_t lock;	/* one request/reply on the wire at a time */
	uint16_t next_id;
	int dead;		/* the connection failed: every call errors */
	int timeout_ms;
	struct nkv_vfu_client_info info;
	void *db_map;		/* the mmap()ed area holding the doorbells */
	size_t db_map_len;
	volatile uint32_t *db;
	size_t db_len;
	char last_err[160];
};

int nkv_vfu_client_fd(struct nkv_tr *tr)
{
	return tr->fd;
}

static void nkv_vfu_seterr(struct nkv_tr *tr, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void nkv_vfu_seterr(struct nkv_tr *tr, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tr->last_err, sizeof(tr->last_err), fmt, ap);
	va_end(ap);
}

/* Send one command and wait for its reply (caller holds tr->lock). The
 * reply is left in *rep (free it with nkv_vfu_msg_free). */
static int nkv_vfu_call_locked(struct nkv_tr *tr, uint16_t cmd, const void *req,
			       size_t len, const int *fds, int nfds,
			       struct nkv_vfu_msg *rep)
{
	struct nkv_vfu_hdr h = { 0 };
	int rc;

	memset(rep, 0, sizeof(*rep));
	rep->nfds = 0;
	if (tr->dead) {
		nkv_vfu_seterr(tr, "vfio-user: connection already failed");
		return -ENOTCONN;
	}
	h.msg_id = tr->next_id++;
	h.cmd = cmd;
	h.flags = NKV_VFU_TYPE_COMMAND;
	rc = nkv_vfu_send(tr->fd, &h, req, len, fds, nfds);
	if (rc) {
		tr->dead = 1;
		nkv_vfu_seterr(tr, "vfio-user: sending %s failed: %s (server gone?)",
			       nkv_vfu_cmd_name(cmd), strerror(-rc));
		return rc == -EPIPE ? -ECONNRESET : rc;
	}
	rc = nkv_vfu_recv(tr->fd, rep, NKV_VFU_MAX_MSG);
	if (rc) {
		tr->dead = 1;
		nkv_vfu_msg_free(rep);
		if (rc == -ETIMEDOUT)
			nkv_vfu_seterr(tr, "vfio-user: no reply to %s within %d ms",
				       nkv_vfu_cmd_name(cmd), tr->timeout_ms);
		else
			nkv_vfu_seterr(tr, "vfio-user: reading reply to %s: %s",
				       nkv_vfu_cmd_name(cmd), strerror(-rc));
		return rc;
	}
	if (nkv_vfu_type(rep->hdr.flags) != NKV_VFU_TYPE_REPLY ||
	    rep->hdr.msg_id != h.msg_id || rep->hdr.cmd != cmd) {
		tr->dead = 1;
		nkv_vfu_seterr(tr, "vfio-user: protocol mismatch: expected reply to %s id %u, got cmd %u id %u flags 0x%x",
			       nkv_vfu_cmd_name(cmd), h.msg_id, rep->hdr.cmd,
			       rep->hdr.msg_id, rep->hdr.flags);
		nkv_vfu_msg_free(rep);
		return -EPROTO;
	}
	if (rep->hdr.flags & NKV_VFU_F_ERROR) {
		rc = rep->hdr.error ? -(int)rep->hdr.error : -EIO;
		nkv_vfu_seterr(tr, "vfio-user: server refused %s: %s",
			       nkv_vfu_cmd_name(cmd), strerror(-rc));
		nkv_vfu_msg_free(rep);
		return rc;
	}
	return 0;
}

static int nkv_vfu_call(struct nkv_tr *tr, uint16_t cmd, const void *req,
			size_t len, const int *fds, int nfds, struct nkv_vfu_msg *rep)
{
	int rc;

	pthread_mutex_lock(&tr->lock);
	rc = nkv_vfu_call_locked(tr, cmd, req, len, fds, nfds, rep);
	pthread_mutex_unlock(&tr->lock);
	return rc;
}

static int nkv_vfu_connect(struct nkv_tr *tr, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		nkv_vfu_seterr(tr, "vfio-user: socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	tr->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (tr->fd < 0)
		return -errno;
	tv.tv_sec = tr->timeout_ms / 1000;
	tv.tv_usec = (tr->timeout_ms % 1000) * 1000;
	setsockopt(tr->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(tr->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(tr->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		nkv_vfu_seterr(tr, "vfio-user: cannot connect to %s: %s", path, strerror(e));
		return -e;
	}
	return 0;
}

static int nkv_vfu_negotiate(struct nkv_tr *tr)
{
	static const char caps[] =
		"{\"capabilities\":{\"max_msg_fds\":8,\"max_data_xfer_size\":1048576}}";
	uint8_t req[sizeof(struct nkv_vfu_version) + sizeof(caps)];
	struct nkv_vfu_version v = { NKV_VFU_MAJOR, NKV_VFU_MINOR };
	struct nkv_vfu_msg rep;
	int rc;

	memcpy(req, &v, sizeof(v));
	memcpy(req + sizeof(v), caps, sizeof(caps));
	rc = nkv_vfu_call(tr, NKV_VFU_VERSION, req, sizeof(req), NULL, 0, &rep);
	if (rc) {
		if (rc == -ECONNRESET || rc == -EPROTO)
			nkv_vfu_seterr(tr, "vfio-user: server closed the connection during version negotiation (connection limit or protocol mismatch)");
		return rc;
	}
	rc = -EPROTO;
	if (rep.len < sizeof(v)) {
		nkv_vfu_seterr(tr, "vfio-user: VERSION reply too short (%zu bytes)", rep.len);
		goto out;
	}
	memcpy(&v, rep.payload, sizeof(v));
	if (v.major != NKV_VFU_MAJOR || v.minor > NKV_VFU_MINOR) {
		nkv_vfu_seterr(tr, "vfio-user: protocol mismatch: server answered %u.%u to our %u.%u",
			       v.major, v.minor, NKV_VFU_MAJOR, NKV_VFU_MINOR);
		goto out;
	}
	tr->info.major = v.major;
	tr->info.minor = v.minor;
	tr->info.max_xfer = NKV_VFU_MAX_XFER;
	tr->info.max_fds = 1;	/* the spec's default when absent */
	if (rep.len > sizeof(v)) {
		const char *js = (const char *)rep.payload + sizeof(v);
		size_t jl = strnlen(js, rep.len - sizeof(v));

		nkv_vfu_json_u64(js, jl, "max_data_xfer_size", &tr->info.max_xfer);
		nkv_vfu_json_u64(js, jl, "max_msg_fds", &tr->info.max_fds);
	}
	rc = 0;
out:
	nkv_vfu_msg_free(&rep);
	return rc;
}

static int nkv_vfu_device_info(struct nkv_tr *tr)
{
	struct nkv_vfu_device_info di = { .argsz = sizeof(di) };
	struct nkv_vfu_msg rep;
	int rc;

	rc = nkv_vfu_call(tr, NKV_VFU_DEVICE_GET_INFO, &di, sizeof(di), NULL, 0, &rep);
	if (rc)
		return rc;
	if (rep.len < sizeof(di)) {
		nkv_vfu_seterr(tr, "vfio-user: DEVICE_GET_INFO reply too short");
		nkv_vfu_msg_free(&rep);
		return -EPROTO;
	}
	memcpy(&di, rep.payload, sizeof(di));
	nkv_vfu_msg_free(&rep);
	tr->info.dev_flags = di.flags;
	tr->info.num_regions = di.num_regions;
	tr->info.num_irqs = di.num_irqs;
	if (!(di.flags & VFIO_DEVICE_FLAGS_PCI) || di.num_regions <= NKV_VFU_CONFIG) {
		nkv_vfu_seterr(tr, "vfio-user: not a PCI device (flags 0x%x, %u regions)",
			       di.flags, di.num_regions);
		return -ENODEV;
	}
	return 0;
}

/* Walk the capability chain of a region info reply, bounds-checked. */
static void nkv_vfu_parse_caps(struct nkv_vfu_region_desc *d, const uint8_t *buf,
			       size_t len, uint32_t off)
{
	int hops;

	for (hops = 0; off && hops < 16; hops++) {
		struct vfio_info_cap_header ch;
		struct vfio_region_info_cap_sparse_mmap sm;
		uint32_t i;

		if (off < sizeof(struct vfio_region_info) || off > len ||
		    len - off < sizeof(ch))
			return;
		memcpy(&ch, buf + off, sizeof(ch));
		if (ch.id == VFIO_REGION_INFO_CAP_SPARSE_MMAP &&
		    ch.version == NKV_VFU_SPARSE_MMAP_VERSION &&
		    len - off >= sizeof(sm)) {
			memcpy(&sm, buf + off, sizeof(sm));
			for (i = 0; i < sm.nr_areas && d->nr_areas < NKV_VFU_CLIENT_MAX_AREAS; i++) {
				size_t a = off + sizeof(sm) + i * sizeof(struct vfio_region_sparse_mmap_area);

				if (a + sizeof(struct vfio_region_sparse_mmap_area) > len)
					break;
				memcpy(&d->areas[d->nr_areas++], buf + a,
				       sizeof(struct vfio_region_sparse_mmap_area));
			}
		}
		off = ch.next;
	}
}

/* Region info; *fd receives the region's mmap fd when one came (else -1). */
static int nkv_vfu_region_info(struct nkv_tr *tr, uint32_t index,
			       struct nkv_vfu_region_desc *d, int *fd)
{
	struct vfio_region_info ri = { .argsz = sizeof(ri), .index = index };
	struct nkv_vfu_msg rep;
	int rc, tries;

	*fd = -1;
	memset(d, 0, sizeof(*d));
	for (tries = 0; tries < 2; tries++) {
		uint32_t want;

		rc = nkv_vfu_call(tr, NKV_VFU_DEVICE_GET_REGION_INFO, &ri, sizeof(ri),
				  NULL, 0, &rep);
		if (rc)
			return rc;
		if (rep.len < sizeof(ri)) {
			nkv_vfu_seterr(tr, "vfio-user: region %u info reply too short", index);
			nkv_vfu_msg_free(&rep);
			return -EPROTO;
		}
		memcpy(&want, rep.payload, sizeof(want));
		/* The server tells the size the capabilities need: ask again. */
		if (tries == 0 && want > rep.len && want <= 65536) {
			ri.argsz = want;
			nkv_vfu_msg_free(&rep);
			continue;
		}
		break;
	}
	memcpy(&ri, rep.payload, sizeof(ri));
	d->index = index;
	d->flags = ri.flags;
	d->size = ri.size;
	d->offset = ri.offset;
	if (ri.flags & VFIO_REGION_INFO_FLAG_CAPS)
		nkv_vfu_parse_caps(d, rep.payload, rep.len, ri.cap_offset);
	if (ri.flags & VFIO_REGION_INFO_FLAG_MMAP)
		*fd = nkv_vfu_msg_take_fd(&rep, 0);
	nkv_vfu_msg_free(&rep);
	return 0;
}

/*
 * Does the server's fd really hold [base, base + len)? Stores past the end
 * of a (mem)file mapping kill the process with SIGBUS, and the size the
 * server announces is only its word. Objects without a file size
 * (devices, dma-bufs) are taken as announced.
 */
static int nkv_vfu_fd_holds(int fd, uint64_t base, uint64_t len)
{
	struct stat st;

	if (base + len < base || fstat(fd, &st) < 0)
		return 0;
	return !S_ISREG(st.st_mode) || (uint64_t)st.st_size >= base + len;
}

/* Map the BAR0 area that holds the doorbells, when the server offers one. */
static void nkv_vfu_map_doorbells(struct nkv_tr *tr, const struct nkv_vfu_region_desc *d, int fd)
{
	uint64_t aoff = 0, asz = d->size;
	uint32_t i;
	void *p;

	if (fd < 0 || !(d->flags & VFIO_REGION_INFO_FLAG_MMAP))
		return;
	if (d->nr_areas) {
		asz = 0;
		for (i = 0; i < d->nr_areas; i++) {
			if (d->areas[i].offset <= NKV_REG_DBS &&
			    d->areas[i].offset + d->areas[i].size > NKV_REG_DBS) {
				aoff = d->areas[i].offset;
				asz = d->areas[i].size;
				break;
			}
		}
	}
	if (!asz || asz > d->size || aoff > d->size - asz || aoff + asz <= NKV_REG_DBS)
		return;
	if (!nkv_vfu_fd_holds(fd, d->offset, aoff + asz))
		return;		/* REGION_WRITE doorbells instead of a SIGBUS */
	p = mmap(NULL, asz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(d->offset + aoff));
	if (p == MAP_FAILED)
		return;		/* fall back to REGION_WRITE doorbells */
	tr->db_map = p;
	tr->db_map_len = asz;
	tr->db = (volatile uint32_t *)((uint8_t *)p + (NKV_REG_DBS - aoff));
	tr->db_len = aoff + asz - NKV_REG_DBS;
	tr->info.doorbells_mapped = 1;
}

static int nkv_vfu_read_regions(struct nkv_tr *tr)
{
	uint32_t idx;
	int rc;

	for (idx = 0; idx < tr->info.num_regions && idx < NKV_VFU_CLIENT_MAX_REGIONS; idx++) {
		struct nkv_vfu_region_desc *d = &tr->info.regions[idx];
		int fd;

		rc = nkv_vfu_region_info(tr, idx, d, &fd);
		if (rc)
			return rc;
		tr->info.nregions = idx + 1;
		if (idx == NKV_VFU_BAR0)
			nkv_vfu_map_doorbells(tr, d, fd);
		if (fd >= 0)
			close(fd);
	}
	if (tr->info.regions[NKV_VFU_BAR0].size < NKV_REG_DBS + 8) {
		nkv_vfu_seterr(tr, "vfio-user: BAR0 too small for an NVMe controller (%llu bytes)",
			       (unsigned long long)tr->info.regions[NKV_VFU_BAR0].size);
		return -ENODEV;
	}
	return 0;
}

static void nkv_vfu_close(struct nkv_tr *tr)
{
	if (!tr)
		return;
	if (tr->db_map)
		munmap(tr->db_map, tr->db_map_len);
	if (tr->fd >= 0)
		close(tr->fd);
	pthread_mutex_destroy(&tr->lock);
	free(tr);
}

static int nkv_vfu_pci_enable(struct nkv_tr *tr);

static int nkv_vfu_open(const char *addr, struct nkv_tr **out, char *err, size_t errlen)
{
	struct nkv_tr *tr;
	const char *t = getenv("NKV_VFU_TIMEOUT_MS");
	int rc;

	*out = NULL;
	tr = calloc(1, sizeof(*tr));
	if (!tr) {
		snprintf(err, errlen, "vfio-user: out of memory");
		return -ENOMEM;
	}
	tr->fd = -1;
	tr->timeout_ms = t && atoi(t) > 0 ? atoi(t) : NKV_VFU_TIMEOUT_MS_DEFAULT;
	pthread_mutex_init(&tr->lock, NULL);
	rc = nkv_vfu_connect(tr, addr);
	if (!rc)
		rc = nkv_vfu_negotiate(tr);
	if (!rc)
		rc = nkv_vfu_device_info(tr);
	if (!rc)
		rc = nkv_vfu_read_regions(tr);
	if (!rc)
		rc = nkv_vfu_pci_enable(tr);
	if (rc) {
		if (err && errlen)
			snprintf(err, errlen, "%s", tr->last_err[0] ? tr->last_err : strerror(-rc));
		nkv_vfu_close(tr);
		return rc;
	}
	*out = tr;
	return 0;
}

static int nkv_vfu_region_read(struct nkv_tr *tr, uint32_t region, uint64_t off,
			       void *buf, uint32_t count)
{
	struct nkv_vfu_region_rw rw = { off, region, count };
	struct nkv_vfu_region_rw echo;
	struct nkv_vfu_msg rep;
	int rc;

	rc = nkv_vfu_call(tr, NKV_VFU_REGION_READ, &rw, sizeof(rw), NULL, 0, &rep);
	if (rc)
		return rc;
	if (rep.len != sizeof(rw) + count) {
		nkv_vfu_seterr(tr, "vfio-user: REGION_READ reply of %zu bytes for %u", rep.len, count);
		nkv_vfu_msg_free(&rep);
		return -EPROTO;
	}
	memcpy(&echo, rep.payload, sizeof(echo));
	memcpy(buf, rep.payload + sizeof(rw), count);
	nkv_vfu_msg_free(&rep);
	return echo.count == count ? 0 : -EPROTO;
}

static int nkv_vfu_region_write(struct nkv_tr *tr, uint32_t region, uint64_t off,
				const void *buf, uint32_t count)
{
	uint8_t req[sizeof(struct nkv_vfu_region_rw) + 8];
	struct nkv_vfu_region_rw rw = { off, region, count };
	struct nkv_vfu_msg rep;
	int rc;

	if (count == 0 || count > 8)
		return -EINVAL;
	memcpy(req, &rw, sizeof(rw));
	memcpy(req + sizeof(rw), buf, count);	/* little endian host */
	rc = nkv_vfu_call(tr, NKV_VFU_REGION_WRITE, req, sizeof(rw) + count, NULL, 0, &rep);
	if (!rc)
		nkv_vfu_msg_free(&rep);
	return rc;
}

/*
 * Set the function up as a PCI driver does before it touches the device
 * (Linux pci_enable_device_mem + pci_set_master + pci_intx(0)): Memory
 * Space and Bus Master Enable on, and Interrupt Disable on, since nkv
 * polls its completion queues and wants no INTx. Read-modify-write of the
 * 16-bit Command register; a device that then still reads Bus Master
 * Enable clear will not DMA, which the caller must hear about.
 */
static int nkv_vfu_pci_enable(struct nkv_tr *tr)
{
	const uint16_t want = NKV_PCI_CMD_MEMORY | NKV_PCI_CMD_MASTER | NKV_PCI_CMD_INTX_DISABLE;
	uint16_t cmd = 0;
	int rc;

	rc = nkv_vfu_region_read(tr, NKV_VFU_CONFIG, NKV_PCI_COMMAND, &cmd, 2);
	if (!rc && (cmd & want) != want) {
		cmd |= want;
		rc = nkv_vfu_region_write(tr, NKV_VFU_CONFIG, NKV_PCI_COMMAND, &cmd, 2);
		if (!rc)
			rc = nkv_vfu_region_read(tr, NKV_VFU_CONFIG, NKV_PCI_COMMAND, &cmd, 2);
	}
	if (rc) {
		nkv_vfu_seterr(tr, "vfio-user: cannot set up the PCI Command register: %s",
			       tr->last_err[0] ? tr->last_err : strerror(-rc));
		return rc;
	}
	if (!(cmd & NKV_PCI_CMD_MASTER)) {
		nkv_vfu_seterr(tr, "vfio-user: the device keeps Bus Master Enable clear (PCI Command %#x): it cannot DMA",
			       cmd);
		return -EIO;
	}
	return 0;
}

static int nkv_vfu_reg_read(struct nkv_tr *tr, uint32_t off, unsigned size, uint64_t *val)
{
	uint64_t v = 0;
	int rc;

	if (size != 4 && size != 8)
		return -EINVAL;
	rc = nkv_vfu_region_read(tr, NKV_VFU_BAR0, off, &v, size);
	if (!rc)
		*val = v;
	return rc;
}

static int nkv_vfu_reg_write(struct nkv_tr *tr, uint32_t off, uint64_t val, unsigned size)
{
	if (size != 4 && size != 8)
		return -EINVAL;
	return nkv_vfu_region_write(tr, NKV_VFU_BAR0, off, &val, size);
}

static volatile uint32_t *nkv_vfu_doorbells(struct nkv_tr *tr, size_t *len)
{
	if (len)
		*len = tr->db ? tr->db_len : 0;
	return tr->db;
}

/*
 * IOVA = the process VA: unique among one process's registrations, and
 * contiguous by construction. If m->iova is NULL we allocate the page
 * array (freed by dma_unmap); otherwise the caller's npages entries.
 */
static int nkv_vfu_dma_map(struct nkv_tr *tr, struct nkv_dmamem *m)
{
	struct nkv_vfu_dma_map dm;
	struct nkv_vfu_msg rep;
	size_t i, npages;
	int rc;

	if (m->dmabuf) {
		nkv_vfu_seterr(tr, "vfio-user: a dma-buf of device memory cannot be shared with "
			       "the target process");
		return -EOPNOTSUPP;
	}
	if (m->fd < 0 || !m->len || (m->len & (NKV_PAGE_SIZE - 1)) ||
	    ((uintptr_t)m->va & (NKV_PAGE_SIZE - 1))) {
		nkv_vfu_seterr(tr, "vfio-user: DMA memory must be fd-backed and page aligned");
		return -EINVAL;
	}
	npages = m->len / NKV_PAGE_SIZE;
	if (m->iova && m->npages < npages)
		return -EINVAL;
	dm.argsz = sizeof(dm);
	dm.flags = NKV_VFU_DMA_F_READ | NKV_VFU_DMA_F_WRITE;
	dm.offset = m->fd_offset;
	dm.addr = (uint64_t)(uintptr_t)m->va;
	dm.size = m->len;
	rc = nkv_vfu_call(tr, NKV_VFU_DMA_MAP, &dm, sizeof(dm), &m->fd, 1, &rep);
	if (rc)
		return rc;
	nkv_vfu_msg_free(&rep);
	if (!m->iova) {
		m->iova = calloc(npages, sizeof(*m->iova));
		if (!m->iova) {
			struct nkv_vfu_dma_unmap du = { sizeof(du), 0, dm.addr, dm.size };

			if (!nkv_vfu_call(tr, NKV_VFU_DMA_UNMAP, &du, sizeof(du), NULL, 0, &rep))
				nkv_vfu_msg_free(&rep);
			return -ENOMEM;
		}
		m->tr_priv = m->iova;	/* ours to free */
	}
	m->npages = npages;
	for (i = 0; i < npages; i++)
		m->iova[i] = dm.addr + i * NKV_PAGE_SIZE;
	m->contiguous = 1;
	return 0;
}

static int nkv_vfu_dma_unmap(struct nkv_tr *tr, struct nkv_dmamem *m)
{
	struct nkv_vfu_dma_unmap du = { sizeof(du), 0, (uint64_t)(uintptr_t)m->va, m->len };
	struct nkv_vfu_msg rep;
	int rc;

	rc = nkv_vfu_call(tr, NKV_VFU_DMA_UNMAP, &du, sizeof(du), NULL, 0, &rep);
	if (!rc)
		nkv_vfu_msg_free(&rep);
	/* A server that is gone no longer holds the memory either. */
	if (!rc || tr->dead) {
		if (m->tr_priv && m->tr_priv == m->iova) {
			free(m->iova);
			m->iova = NULL;
			m->tr_priv = NULL;
		}
	}
	return rc;
}

static int nkv_vfu_alive(struct nkv_tr *tr)
{
	struct pollfd p = { .fd = tr->fd, .events = POLLRDHUP };

	if (tr->dead)
		return -ENOTCONN;
	if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
		tr->dead = 1;
		nkv_vfu_seterr(tr, "vfio-user: server closed the connection");
		return -ECONNRESET;
	}
	return 0;
}

void nkv_vfu_client_info(struct nkv_tr *tr, struct nkv_vfu_client_info *out)
{
	*out = tr->info;
}

int nkv_vfu_client_cfg_read(struct nkv_tr *tr, uint32_t off, void *buf, uint32_t len)
{
	if (len == 0 || len > NKV_PCI_CFG_SIZE || off > NKV_PCI_CFG_SIZE - len)
		return -EINVAL;
	return nkv_vfu_region_read(tr, NKV_VFU_CONFIG, off, buf, len);
}

int nkv_vfu_client_cfg_write(struct nkv_tr *tr, uint32_t off, const void *buf, uint32_t len)
{
	if (len == 0 || len > 8 || len > NKV_PCI_CFG_SIZE || off > NKV_PCI_CFG_SIZE - len)
		return -EINVAL;
	return nkv_vfu_region_write(tr, NKV_VFU_CONFIG, off, buf, len);
}

const char *nkv_vfu_client_last_error(struct nkv_tr *tr)
{
	return tr->last_err;
}

const struct nkv_transport_ops nkv_transport_vfio_user = {
	.name = "vfio-user",
	.open = nkv_vfu_open,
	.close = nkv_vfu_close,
	.reg_read = nkv_vfu_reg_read,
	.reg_write = nkv_vfu_reg_write,
	.doorbells = nkv_vfu_doorbells,
	.dma_map = nkv_vfu_dma_map,
	.dma_unmap = nkv_vfu_dma_unmap,
	.alive = nkv_vfu_alive,
};
