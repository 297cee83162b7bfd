/* SPDX-License-Identifier: MIT */
/*
 * client.h - what the host library's vfio-user transport tells beyond the
 * transport ops (library-private): negotiated limits, the device's regions
 * and sparse-mmap areas, config space. nkv-probe prints these.
 */
#ifndef NKV_VFU_CLIENT_H
#define NKV_VFU_CLIENT_H

#include <stdint.h>

struct nkv_tr;

#define NKV_VFU_CLIENT_MAX_AREAS 8
#define NKV_VFU_CLIENT_MAX_REGIONS 9

struct nkv_vfu_region_desc {
	uint32_t index;
	uint32_t flags;		/* VFIO_REGION_INFO_FLAG_* */
	uint64_t size;
	uint64_t offset;	/* mmap offset base */
	uint32_t nr_areas;	/* sparse-mmap areas (those we keep) */
	struct {
		uint64_t offset;
		uint64_t size;
	} areas[NKV_VFU_CLIENT_MAX_AREAS];
};

struct nkv_vfu_client_info {
	uint16_t major, minor;		/* negotiated version */
	uint64_t max_xfer;		/* server's max_data_xfer_size */
	uint64_t max_fds;		/* server's max_msg_fds */
	uint32_t dev_flags;		/* VFIO_DEVICE_FLAGS_* */
	uint32_t num_regions, num_irqs;
	uint32_t nregions;		/* entries filled below */
	struct nkv_vfu_region_desc regions[NKV_VFU_CLIENT_MAX_REGIONS];
	int doorbells_mapped;		/* BAR0 doorbells reachable by stores */
};

/* Only valid on a transport opened by nkv_transport_vfio_user. */
void nkv_vfu_client_info(struct nkv_tr *tr, struct nkv_vfu_client_info *out);
/* Read len bytes (<= 256) of PCI config space. 0 or a negative errno. */
int nkv_vfu_client_cfg_read(struct nkv_tr *tr, uint32_t off, void *buf, uint32_t len);
/* Write len bytes (1..8) of PCI config space. 0 or a negative errno. */
int nkv_vfu_client_cfg_write(struct nkv_tr *tr, uint32_t off, const void *buf, uint32_t len);
/* The connection's socket, for tests that speak raw messages beside the
 * transport while it is idle (doorbells mapped, no request in flight). */
int nkv_vfu_client_fd(struct nkv_tr *tr);
/* One line saying why the last call on tr failed ("" if none did). */
const char *nkv_vfu_client_last_error(struct nkv_tr *tr);

#endif /* NKV_VFU_CLIENT_H */
