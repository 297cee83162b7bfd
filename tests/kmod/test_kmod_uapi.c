// SPDX-License-Identifier: MIT
/*
 * Layout of include/nkv_kmod.h as user space sees it: sizes and offsets the
 * module was built with (the header's static asserts run in both builds;
 * these checks name the values and the ioctl encodings explicitly), and
 * the ioctl numbers, which must encode the structure sizes and directions.
 */
#include <criterion/criterion.h>
#include <stddef.h>
#include <linux/ioctl.h>

#include "nkv_kmod.h"

Test(kmod_uapi, info_layout)
{
	cr_assert_eq(sizeof(struct nkv_kmod_info), 64);
	cr_assert_eq(offsetof(struct nkv_kmod_info, abi), 0);
	cr_assert_eq(offsetof(struct nkv_kmod_info, flags), 4);
	cr_assert_eq(offsetof(struct nkv_kmod_info, bar0_size), 8);
	cr_assert_eq(offsetof(struct nkv_kmod_info, domain), 16);
	cr_assert_eq(offsetof(struct nkv_kmod_info, bus), 20);
	cr_assert_eq(offsetof(struct nkv_kmod_info, dev), 24);
	cr_assert_eq(offsetof(struct nkv_kmod_info, fn), 28);
	cr_assert_eq(offsetof(struct nkv_kmod_info, vendor), 32);
	cr_assert_eq(offsetof(struct nkv_kmod_info, device), 36);
	cr_assert_eq(offsetof(struct nkv_kmod_info, class_code), 40);
	cr_assert_eq(offsetof(struct nkv_kmod_info, pin_limit), 48);
	cr_assert_eq(offsetof(struct nkv_kmod_info, pinned), 56);
}

Test(kmod_uapi, map_layout)
{
	cr_assert_eq(sizeof(struct nkv_kmod_map), 48);
	cr_assert_eq(offsetof(struct nkv_kmod_map, addr), 0);
	cr_assert_eq(offsetof(struct nkv_kmod_map, len), 8);
	cr_assert_eq(offsetof(struct nkv_kmod_map, iova_ptr), 16);
	cr_assert_eq(offsetof(struct nkv_kmod_map, npages), 24);
	cr_assert_eq(offsetof(struct nkv_kmod_map, handle), 32);
	cr_assert_eq(offsetof(struct nkv_kmod_map, flags), 40);
	cr_assert_eq(offsetof(struct nkv_kmod_map, rsvd), 44);
	cr_assert_eq(sizeof(struct nkv_kmod_unmap), 8);
}

Test(kmod_uapi, dmabuf_layout)
{
	cr_assert_eq(sizeof(struct nkv_kmod_dmabuf), 80);
	cr_assert_eq(offsetof(struct nkv_kmod_dmabuf, fd), 0);
	cr_assert_eq(offsetof(struct nkv_kmod_dmabuf, flags), 4);
	cr_assert_eq(offsetof(struct nkv_kmod_dmabuf, offset), 8);
	cr_assert_eq(offsetof(struct nkv_kmod_dmabuf, len), 16);
	cr_assert_eq(offsetof(struct nkv_kmod_dmabuf, iova_ptr), 24);
	cr_assert_eq(offsetof(struct nkv_kmod_dmabuf, npages), 32);
	cr_assert_eq(offsetof(struct nkv_kmod_dmabuf, handle), 40);
	cr_assert_eq(offsetof(struct nkv_kmod_dmabuf, exporter), 48);
	cr_assert_eq(sizeof(((struct nkv_kmod_dmabuf *)0)->exporter), 32);
	/* The flags an import reports are distinct from MAP's. */
	cr_assert_eq(NKV_KMOD_MAP_P2P & NKV_KMOD_MAP_CONTIGUOUS, 0);
}

/* Every field is 8-byte aligned where 64-bit, so 32-bit callers agree. */
Test(kmod_uapi, u64_alignment)
{
	cr_assert_eq(offsetof(struct nkv_kmod_map, handle) % 8, 0);
	cr_assert_eq(offsetof(struct nkv_kmod_info, pin_limit) % 8, 0);
	cr_assert_eq(offsetof(struct nkv_kmod_dmabuf, offset) % 8, 0);
	cr_assert_eq(sizeof(struct nkv_kmod_info) % 8, 0);
	cr_assert_eq(sizeof(struct nkv_kmod_map) % 8, 0);
}

Test(kmod_uapi, ioctl_numbers)
{
	cr_assert_eq(_IOC_TYPE(NKV_IOC_INFO), 'N');
	cr_assert_eq(_IOC_NR(NKV_IOC_INFO), 0xa0);
	cr_assert_eq(_IOC_NR(NKV_IOC_MAP), 0xa1);
	cr_assert_eq(_IOC_NR(NKV_IOC_UNMAP), 0xa2);
	cr_assert_eq(_IOC_NR(NKV_IOC_DMABUF_IMPORT), 0xa3);
	cr_assert_eq(_IOC_DIR(NKV_IOC_INFO), _IOC_READ);
	cr_assert_eq(_IOC_DIR(NKV_IOC_MAP), _IOC_READ | _IOC_WRITE);
	cr_assert_eq(_IOC_DIR(NKV_IOC_UNMAP), _IOC_WRITE);
	cr_assert_eq(_IOC_DIR(NKV_IOC_DMABUF_IMPORT), _IOC_READ | _IOC_WRITE);
	cr_assert_eq(_IOC_SIZE(NKV_IOC_INFO), sizeof(struct nkv_kmod_info));
	cr_assert_eq(_IOC_SIZE(NKV_IOC_MAP), sizeof(struct nkv_kmod_map));
	cr_assert_eq(_IOC_SIZE(NKV_IOC_UNMAP), sizeof(struct nkv_kmod_unmap));
	cr_assert_eq(_IOC_SIZE(NKV_IOC_DMABUF_IMPORT), sizeof(struct nkv_kmod_dmabuf));
	/* All distinct. */
	cr_assert_neq(NKV_IOC_MAP, NKV_IOC_DMABUF_IMPORT);
	cr_assert_neq(NKV_IOC_INFO, NKV_IOC_UNMAP);
}

Test(kmod_uapi, constants)
{
	cr_assert_eq(NKV_KMOD_PAGE_SIZE, 4096u);
	cr_assert_eq(NKV_KMOD_ABI, 3);
	cr_assert_eq(NKV_KMOD_INFO_IOMMU, 1u);
	cr_assert_eq(NKV_KMOD_MAP_CONTIGUOUS, 1u);
	cr_assert_eq(NKV_KMOD_MAP_P2P, 2u);
}
