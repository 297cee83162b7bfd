/* SPDX-License-Identifier: MIT */
/*
 * dma.h - the memory a client registered with nkv-target, and nothing else.
 *
 * A DMA space maps IOVA ranges to local pointers. Every access the
 * controller makes to client memory goes through it and is bounds-checked
 * against exactly one registered region; PRPs are resolved here. The
 * transport (vfio-user DMA_MAP with a file descriptor, or a test acting as
 * host) adds and removes regions.
 */
#ifndef NKV_TGT_DMA_H
#define NKV_TGT_DMA_H

#include <stdint.h>
#include <sys/uio.h>

#include "nkv_wire.h"

#define NKV_DMA_READ 0x1	/* controller may read (host -> device) */
#define NKV_DMA_WRITE 0x2	/* controller may write (device -> host) */
#define NKV_DMA_STABLE 0x4	/* region attribute: its pages cannot vanish
				 * (sealed, non-hugetlb shmem) */
#define NKV_DMA_MSG 0x8		/* region attribute: the client's memory is
				 * reachable only by messages (vfio-user
				 * DMA_READ/WRITE); ptr is the transport's
				 * local shadow of it, which the controller
				 * fills and drains around each command */

struct nkv_dma;

struct nkv_dma *nkv_dma_create(void);
void nkv_dma_destroy(struct nkv_dma *dma);

/* Register [iova, iova + len) backed by ptr with prot (NKV_DMA_READ,
 * _WRITE, and _STABLE when its pages cannot vanish). Overlap with an
 * existing region: -EEXIST. Zero length or wrap-around: -EINVAL. */
int nkv_dma_map(struct nkv_dma *dma, uint64_t iova, uint64_t len, void *ptr,
		uint32_t prot);
/* Remove exactly a registered region (not registered: -ENOENT). Whether
 * a queue or an in-flight command still uses it is the controller's to
 * say (nkv_tgt_ctrl_dma_busy); the transport asks before unmapping. */
int nkv_dma_unmap(struct nkv_dma *dma, uint64_t iova, uint64_t len);

/* Local pointer for [iova, iova + len) if it lies wholly inside one
 * region with the access rights asked for (NKV_DMA_*), else NULL. A
 * region reachable only by messages (NKV_DMA_MSG) answers only prot 0
 * (a lookup, never an access): queues and PRP lists cannot live there. */
void *nkv_dma_ptr(struct nkv_dma *dma, uint64_t iova, uint64_t len,
		  uint32_t prot);
/* The same; *stable says whether the region is NKV_DMA_STABLE. */
void *nkv_dma_ptr_stable(struct nkv_dma *dma, uint64_t iova, uint64_t len,
			 uint32_t prot, int *stable);

/*
 * Where a PRP or SGL walk puts the local segments it finds: iov holds
 * cap entries (the caller's array); a walk that needs more moves them to
 * a heap array and grows it (heap set: iov is then the caller's to free,
 * whatever the walk returned), up to max entries in all. cap == max: a
 * fixed array, never replaced. rd_head (input): the first rd_head bytes
 * are read by the controller whatever prot says (a key head in front of
 * a buffer it writes), so they need NKV_DMA_READ as well.
 */
struct nkv_dma_segs {
	struct iovec *iov;
	int cap;
	int max;
	int heap;
	uint64_t rd_head;
};

/* Resolve a command's PRP1/PRP2 (and PRP lists, chained) describing len
 * bytes into at most segs->max local segments (contiguous pages merge
 * into one). Returns the number of segments, or a negative NVMe status
 * code value (-(int)NKV_STATUS(...)) for a misaligned entry, memory
 * outside registered regions, a list of more than segs->max segments
 * (Invalid Field) or no memory to grow the array (Internal Error).
 * page_size is the controller's CC.MPS page size. *stable (if not NULL)
 * says whether every segment lies in a region registered
 * NKV_DMA_STABLE. The walk is a loop over the list pages: no recursion,
 * no stack that grows with len. */
int nkv_dma_prp_to_iov(struct nkv_dma *dma, uint64_t prp1, uint64_t prp2,
		       uint64_t len, uint32_t page_size, uint32_t prot,
		       struct nkv_dma_segs *segs, int *stable);

/*
 * Resolve an SGL (SGL1 from the command's DPTR) describing at least len
 * bytes, as nkv_dma_prp_to_iov() does PRPs: SGL1 a Data Block, or a
 * Segment / Last Segment pointing to a list of descriptors in registered
 * memory (a Segment's list may end in a Segment or Last Segment that
 * chains to the next list; a Last Segment's list holds Data Blocks
 * only). Data Blocks may have any byte alignment and may describe more
 * than len bytes (the rest is ignored). Errors, as negative NVMe status
 * values: a list or data outside registered memory or the wrong
 * direction, Data Transfer Error; a type or subtype other than those,
 * or a list pointer anywhere but a Segment list's end, SGL Descriptor
 * Type Invalid; fewer bytes than len (or a list length not a multiple
 * of 16), Data SGL Length Invalid; more than segs->max Data Blocks or
 * more than segs->max lists, Invalid Number of SGL Descriptors.
 */
int nkv_dma_sgl_to_iov(struct nkv_dma *dma, const struct nkv_sgl_desc *sgl1, uint64_t len,
		       uint32_t prot, struct nkv_dma_segs *segs, int *stable);

/*
 * Which part of the local range [ptr, ptr + len) (a segment from
 * nkv_dma_prp_to_iov) lies in one region, starting at ptr: *run bytes
 * at *iova. Returns 1 when that region is reachable only by messages
 * (NKV_DMA_MSG), 0 when it is mapped, -ENOENT when ptr is in no region.
 */
int nkv_dma_msg_range(struct nkv_dma *dma, const void *ptr, uint64_t len,
		      uint64_t *iova, uint64_t *run);

/* Is any region reachable only by messages? (The common case, none,
 * costs the command path one load.) */
int nkv_dma_has_msg(struct nkv_dma *dma);

/* Did a PRP list page vanish under the walk (SIGBUS caught by memguard.h;
 * the walk answered Data Transfer Error)? Sticky. */
int nkv_dma_faulted(struct nkv_dma *dma);

#endif /* NKV_TGT_DMA_H */
