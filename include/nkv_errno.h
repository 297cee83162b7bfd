/* SPDX-License-Identifier: MIT */
/*
 * nkv_errno.h - the error codes nkv's header-only code returns (nkv_dev.h,
 * nkv_list.h): negative Linux errno values, named so device code needs no
 * <errno.h>. NVMe status is never folded into these: it travels in
 * struct nkv_dev_result (or the host's struct nkv_result) unchanged.
 */
#ifndef NKV_ERRNO_H
#define NKV_ERRNO_H

#define NKV_EIO (-5)		/* queue pair failed earlier; host must reset it */
#define NKV_EINVAL (-22)	/* bad argument or unknown option bits */
#define NKV_ENOSPC (-28)	/* no free CID: too many results not taken */
#define NKV_ERANGE (-34)	/* a size or block count out of range */
#define NKV_EBADMSG (-74)	/* malformed List payload */
#define NKV_EMSGSIZE (-90)	/* key length outside 1..16 (List: 0..16) */
#define NKV_ENOBUFS (-105)	/* List entry does not fit the buffer */
#define NKV_ETIMEDOUT (-110)	/* poll budget spent; queue pair now failed */

#endif /* NKV_ERRNO_H */
