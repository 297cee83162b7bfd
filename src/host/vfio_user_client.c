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
 *
 * Memory registered without an fd (nkv_dmamem.by_messages) is reached by
 * the server's DMA_READ / DMA_WRITE requests. From the first such
 * registration on, a reader thread owns the socket's receiving side: it
 * hands replies to the one waiting caller and serves the server's
 * requests (any time, also while a caller waits), sending under a lock.
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
#include <time.h>

#include "host/transport.h"
#include "vfio-user/client.h"
#include "vfio-user/msg.h"

#define NKV_VFU_TIMEOUT_MS_DEFAULT 5000

/* A region the server reaches by messages. */
struct nkv_vfu_mregion {
	uint64_t iova;
	const struct nkv_dmamem *m;
};

struct nkv_tr {
	int fd;
	pthread_mutex_t lock;	/* one request/reply on the wire at a time */
	uint16_t next_id;
	int dead;		/* the connection failed: every call errors */
	/* The reader thread (started by the first region by messages). */
	int rd_on;		/* under lock */
	int rd_stop;		/* atomic */
	pthread_t rd;
	pthread_mutex_t send_lock;	/* whole messages out, one at a time */
	pthread_mutex_t wlock;		/* the reply hand-off below */
	pthread_cond_t wcond;
	int waiting, have_reply;
	uint16_t want_id;
	struct nkv_vfu_msg reply;
	pthread_mutex_t mlock;		/* mregions; held while serving one */
	struct nkv_vfu_mregion *mr;
	size_t nmr;
	/* Controller addresses of memory reached by messages: a space of
	 * their own, so two registrations that share a page of this
	 * process (two small buffers) never collide (atomic). */
	uint64_t msg_iova;
	uint64_t dma_reads, dma_writes;	/* served (under mlock) */
	int timeout_ms;
	struct nkv_vfu_client_info info;
	void *db_map;		/* the mmap()ed area holding the doorbells */
	size_t db_map_len;
	volatile uint32_t *db;
	size_t db_len;
	pthread_mutex_t errlock;	/* last_err: the watch's alive() writes it too */
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
	pthread_mutex_lock(&tr->errlock);
	vsnprintf(tr->last_err, sizeof(tr->last_err), fmt, ap);
	pthread_mutex_unlock(&tr->errlock);
	va_end(ap);
}

/* With the reader thread on: wait (bounded) for it to hand the reply
 * over. 0, or -ETIMEDOUT / -ECONNRESET. */
static int nkv_vfu_wait_reply(struct nkv_tr *tr, struct nkv_vfu_msg *rep)
{
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += tr->timeout_ms / 1000;
	until.tv_nsec += (long)(tr->timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&tr->wlock);
	while (!tr->have_reply && !__atomic_load_n(&tr->dead, __ATOMIC_ACQUIRE) && !rc)
		rc = pthread_cond_timedwait(&tr->wcond, &tr->wlock, &until);
	tr->waiting = 0;
	if (tr->have_reply) {
		*rep = tr->reply;
		tr->have_reply = 0;
		rc = 0;
	} else {
		rc = rc == ETIMEDOUT ? -ETIMEDOUT : -ECONNRESET;
	}
	pthread_mutex_unlock(&tr->wlock);
	return rc;
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
	if (__atomic_load_n(&tr->dead, __ATOMIC_ACQUIRE)) {
		nkv_vfu_seterr(tr, "vfio-user: connection already failed");
		return -ENOTCONN;
	}
	h.msg_id = tr->next_id++;
	h.cmd = cmd;
	h.flags = NKV_VFU_TYPE_COMMAND;
	if (tr->rd_on) {
		pthread_mutex_lock(&tr->wlock);
		tr->waiting = 1;
		tr->have_reply = 0;
		tr->want_id = h.msg_id;
		pthread_mutex_unlock(&tr->wlock);
	}
	pthread_mutex_lock(&tr->send_lock);
	rc = nkv_vfu_send(tr->fd, &h, req, len, fds, nfds);
	pthread_mutex_unlock(&tr->send_lock);
	if (rc) {
		__atomic_store_n(&tr->dead, 1, __ATOMIC_RELEASE);
		nkv_vfu_seterr(tr, "vfio-user: sending %s failed: %s (server gone?)",
			       nkv_vfu_cmd_name(cmd), strerror(-rc));
		return rc == -EPIPE ? -ECONNRESET : rc;
	}
	rc = tr->rd_on ? nkv_vfu_wait_reply(tr, rep) : nkv_vfu_recv(tr->fd, rep, NKV_VFU_MAX_MSG);
	if (rc) {
		__atomic_store_n(&tr->dead, 1, __ATOMIC_RELEASE);
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
		__atomic_store_n(&tr->dead, 1, __ATOMIC_RELEASE);
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

/* The region holding [addr, addr + count), under mlock; NULL if none. */
static const struct nkv_dmamem *nkv_vfu_mregion(struct nkv_tr *tr, uint64_t addr,
						uint64_t count, size_t *off)
{
	size_t i;

	for (i = 0; i < tr->nmr; i++) {
		uint64_t base = tr->mr[i].iova, len = tr->mr[i].m->len;

		if (addr >= base && addr - base < len && count <= len - (addr - base)) {
			*off = (size_t)(addr - base);
			return tr->mr[i].m;
		}
	}
	return NULL;
}

static int nkv_vfu_mcopy(const struct nkv_dmamem *m, size_t off, void *host, size_t len,
			 int to_mem)
{
	uint8_t *p = (uint8_t *)m->va + off;

	if (m->copy)
		return m->copy(m->copy_ctx, m, off, host, len, to_mem);
	if (to_mem)
		memcpy(p, host, len);
	else
		memcpy(host, p, len);
	return 0;
}

/* Serve one DMA_READ / DMA_WRITE of the server's: copy, then answer
 * (a DMA_WRITE only once the copy is done, so the data is visible to
 * device code before the server may post the command's completion). */
static int nkv_vfu_serve_dma(struct nkv_tr *tr, const struct nkv_vfu_msg *m)
{
	struct nkv_vfu_hdr h = { m->hdr.msg_id, m->hdr.cmd, 0, NKV_VFU_TYPE_REPLY, 0 };
	int wr = m->hdr.cmd == NKV_VFU_DMA_WRITE;
	const struct nkv_dmamem *mem = NULL;
	struct nkv_vfu_dma_rw rw = { 0, 0 };
	uint8_t *out = NULL;
	size_t off = 0, olen = 0;
	int err = 0, rc;

	if (m->len < sizeof(rw) || m->nfds)
		err = EINVAL;
	if (!err) {
		memcpy(&rw, m->payload, sizeof(rw));
		if (!rw.count || rw.count > NKV_VFU_MAX_XFER ||
		    m->len != sizeof(rw) + (wr ? rw.count : 0))
			err = EINVAL;
	}
	pthread_mutex_lock(&tr->mlock);
	if (!err && !(mem = nkv_vfu_mregion(tr, rw.addr, rw.count, &off)))
		err = EFAULT;
	if (!err && !wr) {
		olen = sizeof(rw) + rw.count;
		out = malloc(olen);
		if (!out)
			err = ENOMEM;
		else
			memcpy(out, &rw, sizeof(rw));
	}
	if (!err) {
		rc = nkv_vfu_mcopy(mem, off, wr ? m->payload + sizeof(rw) : out + sizeof(rw),
				   rw.count, wr);
		err = rc ? -rc : 0;
	}
	if (!err && wr)
		tr->dma_writes++;
	else if (!err)
		tr->dma_reads++;
	pthread_mutex_unlock(&tr->mlock);
	if (err) {
		h.flags |= NKV_VFU_F_ERROR;
		h.error = (uint32_t)err;
		olen = 0;
	} else if (wr) {
		out = NULL;
		olen = sizeof(rw);
	}
	pthread_mutex_lock(&tr->send_lock);
	rc = nkv_vfu_send(tr->fd, &h, out ? (const void *)out : (const void *)&rw, olen, NULL, 0);
	pthread_mutex_unlock(&tr->send_lock);
	free(out);
	return rc;
}

/* The connection failed under the reader: wake the waiting caller. */
static void nkv_vfu_reader_dead(struct nkv_tr *tr)
{
	pthread_mutex_lock(&tr->wlock);
	__atomic_store_n(&tr->dead, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&tr->wcond);
	pthread_mutex_unlock(&tr->wlock);
}

/* Hand a reply to the waiting caller. 0, or -EPROTO: nobody asked. */
static int nkv_vfu_reader_reply(struct nkv_tr *tr, struct nkv_vfu_msg *m)
{
	int rc = -EPROTO;

	pthread_mutex_lock(&tr->wlock);
	if (tr->waiting && !tr->have_reply && m->hdr.msg_id == tr->want_id) {
		tr->reply = *m;
		tr->have_reply = 1;
		pthread_cond_broadcast(&tr->wcond);
		rc = 0;
	}
	pthread_mutex_unlock(&tr->wlock);
	return rc;
}

static void *nkv_vfu_reader(void *arg)
{
	struct nkv_tr *tr = arg;

	while (!__atomic_load_n(&tr->rd_stop, __ATOMIC_ACQUIRE)) {
		struct pollfd p = { .fd = tr->fd, .events = POLLIN };
		struct nkv_vfu_msg m;
		int rc;

		if (poll(&p, 1, 100) <= 0)
			continue;
		rc = nkv_vfu_recv(tr->fd, &m, NKV_VFU_MAX_MSG);
		if (rc) {
			nkv_vfu_msg_free(&m);
			break;
		}
		if (nkv_vfu_type(m.hdr.flags) == NKV_VFU_TYPE_REPLY) {
			if (nkv_vfu_reader_reply(tr, &m)) {
				nkv_vfu_msg_free(&m);
				break;	/* a reply nobody waits for: out of sync */
			}
			continue;	/* the caller frees it */
		}
		if (m.hdr.cmd == NKV_VFU_DMA_READ || m.hdr.cmd == NKV_VFU_DMA_WRITE) {
			rc = nkv_vfu_serve_dma(tr, &m);
		} else {
			struct nkv_vfu_hdr h = { m.hdr.msg_id, m.hdr.cmd, 0,
						 NKV_VFU_TYPE_REPLY | NKV_VFU_F_ERROR, ENOSYS };

			pthread_mutex_lock(&tr->send_lock);
			rc = nkv_vfu_send(tr->fd, &h, NULL, 0, NULL, 0);
			pthread_mutex_unlock(&tr->send_lock);
		}
		nkv_vfu_msg_free(&m);
		if (rc)
			break;
	}
	nkv_vfu_reader_dead(tr);
	return NULL;
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

		/* SO_SNDTIMEO ran out: a listener that takes no connections
		 * (stopped, or its backlog full) is as silent as one that
		 * does not answer VERSION, and is said the same way. */
		if (e == EAGAIN) {
			nkv_vfu_seterr(tr, "vfio-user: no reply to VERSION within %d ms (the "
				       "controller did not take the connection: stalled, or its "
				       "listen queue is full)", tr->timeout_ms);
			return -ETIMEDOUT;
		}
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
	if (tr->rd_on) {
		__atomic_store_n(&tr->rd_stop, 1, __ATOMIC_RELEASE);
		shutdown(tr->fd, SHUT_RDWR);	/* wakes the reader's poll at once */
		pthread_join(tr->rd, NULL);
		if (tr->have_reply)
			nkv_vfu_msg_free(&tr->reply);
	}
	free(tr->mr);
	pthread_mutex_destroy(&tr->send_lock);
	pthread_mutex_destroy(&tr->wlock);
	pthread_mutex_destroy(&tr->mlock);
	pthread_cond_destroy(&tr->wcond);
	if (tr->db_map)
		munmap(tr->db_map, tr->db_map_len);
	if (tr->fd >= 0)
		close(tr->fd);
	pthread_mutex_destroy(&tr->lock);
	pthread_mutex_destroy(&tr->errlock);
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
	pthread_mutex_init(&tr->errlock, NULL);
	pthread_mutex_init(&tr->send_lock, NULL);
	pthread_mutex_init(&tr->wlock, NULL);
	pthread_mutex_init(&tr->mlock, NULL);
	pthread_cond_init(&tr->wcond, NULL);
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

/* Where the controller addresses of memory reached by messages start:
 * above any user-space address (x86-64 and arm64 end below 2^57). */
#define NKV_VFU_MSG_IOVA (1ull << 58)

/*
 * IOVA = the process VA for shared memory: unique among one process's
 * registrations, and contiguous by construction; memory reached by
 * messages gets addresses of its own (NKV_VFU_MSG_IOVA up). If m->iova is NULL we allocate the page
 * array (freed by dma_unmap); otherwise the caller's npages entries.
 */
/* Add or drop a region reached by messages (the reader looks them up). */
static int nkv_vfu_mr_add(struct nkv_tr *tr, const struct nkv_dmamem *m, uint64_t iova)
{
	struct nkv_vfu_mregion *n;
	int rc = 0;

	pthread_mutex_lock(&tr->mlock);
	n = realloc(tr->mr, (tr->nmr + 1) * sizeof(*n));
	if (n) {
		tr->mr = n;
		tr->mr[tr->nmr++] = (struct nkv_vfu_mregion){ iova, m };
	} else {
		rc = -ENOMEM;
	}
	pthread_mutex_unlock(&tr->mlock);
	return rc;
}

static void nkv_vfu_mr_del(struct nkv_tr *tr, const struct nkv_dmamem *m)
{
	size_t i;

	pthread_mutex_lock(&tr->mlock);
	for (i = 0; i < tr->nmr; i++) {
		if (tr->mr[i].m == m) {
			tr->mr[i] = tr->mr[--tr->nmr];
			break;
		}
	}
	pthread_mutex_unlock(&tr->mlock);
}

/* DMA_MAP without an fd; the reader thread starts with the first. */
static int nkv_vfu_map_by_messages(struct nkv_tr *tr, struct nkv_dmamem *m,
				   struct nkv_vfu_dma_map *dm)
{
	struct nkv_vfu_msg rep;
	int rc = nkv_vfu_mr_add(tr, m, dm->addr);

	if (rc)
		return rc;
	pthread_mutex_lock(&tr->lock);
	rc = nkv_vfu_call_locked(tr, NKV_VFU_DMA_MAP, dm, sizeof(*dm), NULL, 0, &rep);
	if (!rc) {
		nkv_vfu_msg_free(&rep);
		if (!tr->rd_on && pthread_create(&tr->rd, NULL, nkv_vfu_reader, tr) == 0)
			tr->rd_on = 1;
		if (!tr->rd_on) {
			struct nkv_vfu_dma_unmap du = { sizeof(du), 0, dm->addr, dm->size };

			nkv_vfu_seterr(tr, "vfio-user: cannot start the thread serving DMA messages");
			if (!nkv_vfu_call_locked(tr, NKV_VFU_DMA_UNMAP, &du, sizeof(du), NULL, 0, &rep))
				nkv_vfu_msg_free(&rep);
			rc = -EAGAIN;
		}
	}
	pthread_mutex_unlock(&tr->lock);
	if (rc)
		nkv_vfu_mr_del(tr, m);
	return rc;
}

static int nkv_vfu_dma_map(struct nkv_tr *tr, struct nkv_dmamem *m)
{
	struct nkv_vfu_dma_map dm;
	struct nkv_vfu_msg rep;
	size_t i, npages;
	int rc;

	if (m->dmabuf && !m->by_messages) {
		nkv_vfu_seterr(tr, "vfio-user: a dma-buf of device memory cannot be shared with "
			       "the target process");
		return -EOPNOTSUPP;
	}
	if ((m->fd < 0 && !m->by_messages) || !m->len || (m->len & (NKV_PAGE_SIZE - 1)) ||
	    ((uintptr_t)m->va & (NKV_PAGE_SIZE - 1))) {
		nkv_vfu_seterr(tr, "vfio-user: DMA memory must be fd-backed (or by messages) and page aligned");
		return -EINVAL;
	}
	npages = m->len / NKV_PAGE_SIZE;
	if (m->iova && m->npages < npages)
		return -EINVAL;
	dm.argsz = sizeof(dm);
	dm.flags = (m->prot & NKV_DMAMEM_READ ? NKV_VFU_DMA_F_READ : 0u) |
		   (m->prot & NKV_DMAMEM_WRITE ? NKV_VFU_DMA_F_WRITE : 0u);
	if (!m->prot)
		dm.flags = NKV_VFU_DMA_F_READ | NKV_VFU_DMA_F_WRITE;
	dm.offset = m->fd_offset;
	dm.addr = (uint64_t)(uintptr_t)m->va;
	dm.size = m->len;
	if (m->by_messages) {
		dm.offset = 0;
		dm.addr = NKV_VFU_MSG_IOVA + __atomic_fetch_add(&tr->msg_iova, m->len,
								__ATOMIC_RELAXED);
		rc = nkv_vfu_map_by_messages(tr, m, &dm);
	} else {
		rc = nkv_vfu_call(tr, NKV_VFU_DMA_MAP, &dm, sizeof(dm), &m->fd, 1, &rep);
		if (!rc)
			nkv_vfu_msg_free(&rep);
	}
	if (rc)
		return rc;
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
	/* The address it was mapped at: the process's for shared memory,
	 * one of the message space's otherwise. */
	uint64_t iova = m->iova ? m->iova[0] : (uint64_t)(uintptr_t)m->va;
	struct nkv_vfu_dma_unmap du = { sizeof(du), 0, iova, m->len };
	struct nkv_vfu_msg rep;
	int rc;

	rc = nkv_vfu_call(tr, NKV_VFU_DMA_UNMAP, &du, sizeof(du), NULL, 0, &rep);
	if (!rc)
		nkv_vfu_msg_free(&rep);
	/* The caller frees the memory whatever the server said: its later
	 * DMA requests for it get EFAULT, never freed memory. */
	if (m->by_messages)
		nkv_vfu_mr_del(tr, m);
	/* A server that is gone no longer holds the memory either. */
	if (!rc || __atomic_load_n(&tr->dead, __ATOMIC_ACQUIRE)) {
		if (m->tr_priv && m->tr_priv == m->iova) {
			free(m->iova);
			m->iova = NULL;
			m->tr_priv = NULL;
		}
	}
	return rc;
}

/* Any thread (the watch calls it every few ms): poll() only, nothing
 * read from the socket. */
static int nkv_vfu_alive(struct nkv_tr *tr)
{
	struct pollfd p = { .fd = tr->fd, .events = POLLRDHUP };
	int live = 0;

	if (__atomic_load_n(&tr->dead, __ATOMIC_ACQUIRE))
		return -ENOTCONN;
	if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
		if (__atomic_compare_exchange_n(&tr->dead, &live, 1, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
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
