/* SPDX-License-Identifier: MIT */
/*
 * dispatch.c - one message in, one reply out: receiving, checking,
 * dispatching, and the handlers of the device messages (VERSION,
 * DEVICE_GET_INFO, REGION_INFO, IRQ_INFO, SET_IRQS, REGION_READ/WRITE,
 * DEVICE_RESET; DMA_MAP/UNMAP are in dma.c). Handlers return 0 or a
 * negative errno for the error reply.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/vfio-user/vfu.h"

int nkv_vfu_reply_alloc(struct nkv_vfu_conn *c, size_t len)
{
	free(c->rbuf);
	c->rbuf = calloc(1, len ? len : 1);
	c->rlen = len;
	return c->rbuf ? 0 : -ENOMEM;
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
		ri.size = c->bar0.size;
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
			area.offset = c->bar0.db_offset;
			area.size = c->bar0.size - c->bar0.db_offset;
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
	if (off >= c->bar0.size || off + count > c->bar0.size || (off & (count - 1)))
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
int nkv_vfu_handle_one(struct nkv_vfu_conn *c)
{
	struct nkv_vfu_bounds b = { .stop_fd = c->s->stop_fd };
	struct nkv_vfu_msg m;
	int rc;

	/* The whole message and its reply, from the first byte: a deadline
	 * per recv would restart with every byte a slow client drips. */
	c->last_msg_ns = nkv_vfu_now_ns();
	b.deadline_ns = c->last_msg_ns + nkv_vfu_ms(&c->s->o.msg_ms, NKV_VFU_MSG_MS);
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
