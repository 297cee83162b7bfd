/* SPDX-License-Identifier: MIT */
/*
 * nkv_errno.h - the error codes nkv's header-only code returns (nkv_dev.h,
 * nkv_list.h): negative Linux errno values, named so device code needs no
 * <errno.h>, and why a queue pair stopped (enum nkv_qp_state), which
 * device code records and the host reads (nkv_qpair_failed()). NVMe
 * status is never folded into these: it travels in struct
 * nkv_dev_result (or the host's struct nkv_result) unchanged.
 *
 * One code per mistake, the same in the builders and the synchronous
 * API: a key of the wrong length is EINVAL, a value larger than its
 * buffer or the controller's limit EMSGSIZE.
 */
#ifndef NKV_ERRNO_H
#define NKV_ERRNO_H

#define NKV_EIO (-5)		/* queue pair failed earlier; host must reset it */
#define NKV_EINVAL (-22)	/* bad argument: key length outside 1..max_key
				 * (the controller's KML, up to 255; List: from
				 * 0; the inline nkv_sqe_*() forms: up to 16),
				 * unknown option bits, no such slot */
#define NKV_ENOSPC (-28)	/* no free CID: too many results not taken */
#define NKV_ERANGE (-34)	/* a count out of range (NVM blocks, queue depth) */
#define NKV_EBADMSG (-74)	/* malformed List payload */
#define NKV_EMSGSIZE (-90)	/* value larger than its slot or buffer */
#define NKV_ENOBUFS (-105)	/* List entry does not fit the buffer */
#define NKV_ENOTCONN (-107)	/* the controller is gone (NKV_QP_FAILED_GONE) */
#define NKV_ETIMEDOUT (-110)	/* poll budget spent; queue pair now failed */

/* Why a queue pair stopped (nkv_dev_qp.failed, its host-visible mirror,
 * and nkv_qpair_failed()). */
enum nkv_qp_state {
	NKV_QP_OK = 0,
	NKV_QP_FAILED_TIMEOUT = 1,	/* poll budget or timeout spent: controller may still DMA */
	NKV_QP_FAILED_BAD_CQE = 2,	/* CQE for a CID not in flight, or bad SQ head */
	NKV_QP_FAILED_INTERNAL = 3,	/* a lane could not publish its SQE */
	NKV_QP_FAILED_ARGS = 4,		/* a kernel was given what it cannot run
					 * (a batch wider than the wave) */
	NKV_QP_FAILED_GONE = 5,		/* the controller is gone: its vfio-user
					 * connection closed, or its registers
					 * read all-ones or CSTS.CFS; set by the
					 * host library's watch, seen by device
					 * code through the host-visible word */
};

#endif /* NKV_ERRNO_H */
