/* SPDX-License-Identifier: MIT */
/*
 * admin.c - the synchronous admin queue. One command at a time (the
 * caller holds the controller lock), rings in host RAM whatever the
 * memory mode (only the library touches them), doorbells written straight
 * to the mapped doorbell page or as register writes. Every wait is
 * bounded by the controller's timeout; a timeout or a lost transport
 * marks the controller dead, and later calls fail at once with -ENOTCONN.
 * CSTS.CFS is read after every completion and while waiting: a failed
 * controller makes the command fail with -EIO and is dead from then on.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host/host.h"

uint64_t nkv_h_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int nkv_h_reg_read(struct nkv_ctrl *c, uint32_t off, unsigned size, uint64_t *v)
{
	int rc = c->dead ? -ENOTCONN : c->ops->reg_read(c->tr, off, size, v);

	if (rc && !c->dead) {
		nkv_h_trace("register read %#x failed: %d; controller marked dead", off, rc);
		c->dead = 1;
	}
	return rc;
}

int nkv_h_reg_write(struct nkv_ctrl *c, uint32_t off, uint64_t v, unsigned size)
{
	int rc = c->dead ? -ENOTCONN : c->ops->reg_write(c->tr, off, v, size);

	if (rc && !c->dead) {
		nkv_h_trace("register write %#x failed: %d; controller marked dead", off, rc);
		c->dead = 1;
	}
	return rc;
}

/* Admin doorbells: the mapped page when there is one (release: the SQE
 * stores before it), else a register write (the message orders it). */
static int nkv_h_admin_db(struct nkv_ctrl *c, uint32_t idx, uint32_t v)
{
	if (c->dbmap) {
		__atomic_store_n(&c->dbmap[idx * c->db_stride / 4u], v, __ATOMIC_RELEASE);
		return 0;
	}
	return nkv_h_reg_write(c, NKV_REG_DBS + idx * c->db_stride, v, 4);
}

int nkv_h_admin_init(struct nkv_ctrl *c, uint32_t depth)
{
	int rc;

	c->adepth = depth;
	c->atail = c->ahead = 0;
	c->aphase = 1;
	rc = nkv_h_buf_alloc(c, c->host, (size_t)depth * sizeof(struct nkv_sqe), &c->asq);
	if (!rc)
		rc = nkv_h_buf_alloc(c, c->host, (size_t)depth * sizeof(struct nkv_cqe), &c->acq);
	if (!rc)
		rc = nkv_h_buf_alloc(c, c->host, NKV_PAGE_SIZE, &c->idbuf);
	if (!rc && ((!c->asq.m.contiguous && c->asq.m.npages > 1) ||
		    (!c->acq.m.contiguous && c->acq.m.npages > 1)))
		rc = -ENOMEM;	/* admin queues must be physically contiguous */
	return rc;
}

void nkv_h_admin_fini(struct nkv_ctrl *c)
{
	nkv_h_buf_free(c, &c->idbuf);
	nkv_h_buf_free(c, &c->acq);
	nkv_h_buf_free(c, &c->asq);
}

/* CSTS.CFS set: the controller failed (NVMe Base 2.0, 3.1.3.6 and 10.5);
 * it is dead to us from now on. 0, -EIO, or -ENOTCONN if CSTS is out of
 * reach. */
int nkv_h_check_cfs(struct nkv_ctrl *c, const char *when)
{
	uint64_t csts = 0;

	if (nkv_h_reg_read(c, NKV_REG_CSTS, 4, &csts))
		return -ENOTCONN;
	if (!(csts & NKV_CSTS_CFS))
		return 0;
	if (!c->failed_csts)
		nkv_h_log("controller fatal status (CSTS %#x: CFS set) %s", (uint32_t)csts, when);
	c->failed_csts = (uint32_t)csts;
	c->dead = 1;
	return -EIO;
}

/* Why a wait ended without a completion: the transport, or CSTS.CFS. */
static int nkv_h_admin_dead(struct nkv_ctrl *c, uint8_t opc)
{
	char when[48];
	int rc = c->ops->alive ? c->ops->alive(c->tr) : 0;

	if (rc) {
		nkv_h_log("admin opcode %#x: the controller is unreachable: %s", opc, strerror(-rc));
		c->dead = 1;
		return -ENOTCONN;
	}
	snprintf(when, sizeof(when), "waiting for admin opcode %#x", opc);
	return nkv_h_check_cfs(c, when) == -EIO ? -EIO : 0;
}

/* Step past the CQE at the head: the next slot, the head doorbell. */
static int nkv_h_admin_pop(struct nkv_ctrl *c)
{
	if (++c->ahead == c->adepth) {
		c->ahead = 0;
		c->aphase ^= 1u;
	}
	return nkv_h_admin_db(c, 1, c->ahead);
}

/* The CQE at the head (phase matched) is the outstanding AER's: hand it
 * to aen.c and step past it. 1 if it was, 0 if not, or -errno. */
static int nkv_h_admin_aer_cqe(struct nkv_ctrl *c, uint32_t dw3)
{
	volatile struct nkv_cqe *cq = c->acq.m.va;

	if (!c->aer_out || nkv_cqe_cid(dw3) != c->aer_cid)
		return 0;
	nkv_h_aer_done(c, nkv_cqe_status(dw3) & 0x7ff, cq[c->ahead].dw0);
	return nkv_h_admin_pop(c) ? -ENOTCONN : 1;
}

int nkv_h_admin_reap(struct nkv_ctrl *c)
{
	volatile struct nkv_cqe *cq = c->acq.m.va;
	uint32_t dw3;
	int rc;

	while (nkv_cqe_phase(dw3 = __atomic_load_n(&cq[c->ahead].dw3, __ATOMIC_ACQUIRE)) ==
	       c->aphase) {
		rc = nkv_h_admin_aer_cqe(c, dw3);
		if (rc < 0)
			return rc;
		if (!rc) {
			nkv_h_log("admin: completion for CID %u with no command outstanding",
				  nkv_cqe_cid(dw3));
			c->dead = 1;
			return -EPROTO;
		}
	}
	return 0;
}

static int nkv_h_admin_wait(struct nkv_ctrl *c, uint8_t opc, uint16_t cid,
			    uint16_t *status, uint32_t *dw0)
{
	volatile struct nkv_cqe *cq = c->acq.m.va;
	uint64_t t0 = nkv_h_now_ms(), last_check = t0;
	unsigned spins = 0;
	int lost;

	for (;;) {
		uint32_t dw3 = __atomic_load_n(&cq[c->ahead].dw3, __ATOMIC_ACQUIRE);
		uint64_t now;

		if (nkv_cqe_phase(dw3) == c->aphase) {
			int aer = nkv_cqe_cid(dw3) != cid ? nkv_h_admin_aer_cqe(c, dw3) : 0;

			if (aer < 0)
				return aer;
			if (aer)
				continue;	/* the AER's, met on the way */
			if (nkv_cqe_cid(dw3) != cid) {
				nkv_h_log("admin: completion for CID %u while waiting for %u",
					  nkv_cqe_cid(dw3), cid);
				c->dead = 1;
				return -EPROTO;
			}
			char when[48];
			int rc;

			*status = nkv_cqe_status(dw3) & 0x7ff;
			if (dw0)
				*dw0 = cq[c->ahead].dw0;
			rc = nkv_h_admin_pop(c);
			/* A completion does not vouch for the controller: one
			 * that failed may still answer (CFS with RDY). */
			snprintf(when, sizeof(when), "after admin opcode %#x", opc);
			return rc ? rc : nkv_h_check_cfs(c, when);
		}
		/* The watch found it gone: let go of the lock now, so it can
		 * fail the queue pairs that device code waits on. */
		lost = __atomic_load_n(&c->lost, __ATOMIC_ACQUIRE);
		if (lost) {
			c->dead = 1;
			return lost == -EIO ? -EIO : -ENOTCONN;
		}
		now = nkv_h_now_ms();
		if (now - t0 > c->timeout_ms) {
			int rc = nkv_h_admin_dead(c, opc);

			if (!rc)
				nkv_h_log("admin opcode %#x: no completion within %u ms",
					  opc, c->timeout_ms);
			c->dead = 1;
			return rc ? rc : -ETIMEDOUT;
		}
		if (now - last_check >= 100) {
			int rc = nkv_h_admin_dead(c, opc);

			if (rc)
				return rc;
			last_check = now;
		}
		if (++spins > 64)
			usleep(spins > 1000 ? 200 : 10);
	}
}

int nkv_h_admin_submit(struct nkv_ctrl *c, struct nkv_sqe *sqe, uint16_t *cid)
{
	struct nkv_sqe *sq = c->asq.m.va;

	if (c->dead)
		return -ENOTCONN;
	*cid = c->acid++;
	if (c->aer_out && *cid == c->aer_cid)
		*cid = c->acid++;	/* after 64 Ki commands: never the AER's */
	sqe->cdw0 = (sqe->cdw0 & 0xffffu) | (uint32_t)*cid << 16;
	sq[c->atail] = *sqe;
	c->atail = (c->atail + 1) % c->adepth;
	nkv_h_trace("admin: opc %#x cid %u cdw10 %#x cdw11 %#x nsid %u",
		    (unsigned)nkv_sqe_opc(sqe), *cid, sqe->cdw10, sqe->cdw11, sqe->nsid);
	return nkv_h_admin_db(c, 0, c->atail);
}

int nkv_h_admin(struct nkv_ctrl *c, struct nkv_sqe *sqe, uint16_t *status,
		uint32_t *dw0)
{
	uint16_t cid;
	uint8_t opc = (uint8_t)nkv_sqe_opc(sqe);
	int rc = nkv_h_admin_submit(c, sqe, &cid);

	if (!rc)
		rc = nkv_h_admin_wait(c, opc, cid, status, dw0);
	if (!rc)
		nkv_h_trace("admin: opc %#x cid %u -> status %#x (%s)", opc, cid,
			    *status, nkv_status_str(*status));
	return rc;
}
