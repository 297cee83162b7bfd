/* SPDX-License-Identifier: MIT */
/*
 * prp.c - PRP lists for value slots, built once by the host so device
 * code never builds one (NVMe Base 2.0, 4.1.1: PRP1 = first page, PRP2 =
 * the second page, or the address of a list of the remaining pages; a
 * list page holds 512 entries and, when more follow, its last entry
 * points to the next list page). Pages are 4 KiB (CC.MPS = 0) and slots
 * page aligned, so every entry has offset 0. Any page may sit at any
 * controller address: the pcie transport gives one address per page.
 */
#include <errno.h>

#include "host/host.h"

size_t nkv_h_prp_list_pages(size_t npages)
{
	size_t entries, pages = 0;

	if (npages <= 2)
		return 0;
	entries = npages - 1;	/* PRP1 holds the first page */
	/* Every page but the last gives one entry up to the chain pointer. */
	while (entries > NKV_PRP_PER_PAGE) {
		entries -= NKV_PRP_PER_PAGE - 1;
		pages++;
	}
	return pages + 1;
}

int nkv_h_prp_build(const uint64_t *iova, size_t npages, uint64_t **list_va,
		    const uint64_t *list_iova, size_t nlist, uint64_t *prp1,
		    uint64_t *prp2)
{
	size_t left, i = 1, l;

	if (!npages)
		return -EINVAL;
	*prp1 = iova[0];
	*prp2 = npages == 2 ? iova[1] : 0;
	if (npages <= 2)
		return 0;
	if (nlist < nkv_h_prp_list_pages(npages))
		return -EINVAL;
	*prp2 = list_iova[0];
	for (l = 0;; l++) {
		uint64_t *e = list_va[l];
		size_t k;

		left = npages - i;
		if (left <= NKV_PRP_PER_PAGE) {
			for (k = 0; k < left; k++)
				e[k] = iova[i++];
			return 0;
		}
		for (k = 0; k < NKV_PRP_PER_PAGE - 1; k++)
			e[k] = iova[i++];
		e[NKV_PRP_PER_PAGE - 1] = list_iova[l + 1];
	}
}
