/* SPDX-License-Identifier: MIT */
/*
 * doorbell_fwd.h - forwards a shadow doorbell page to a controller whose
 * doorbells are reachable only by messages (vfio-user REGION_WRITE).
 *
 * Device code writes the shadow page exactly as it would write real
 * doorbells (dword i = BAR0 + 0x1000 + 4 i). One host thread polls it and
 * writes every changed dword to the controller, in index order. A doorbell
 * value is a queue position, so the newest value subsumes the ones before
 * it: forwarding the latest value seen never loses a submission or a
 * consumed completion, and the final value is always forwarded (flush and
 * stop make a last pass).
 */
#ifndef NKV_HOST_DOORBELL_FWD_H
#define NKV_HOST_DOORBELL_FWD_H

#include <stddef.h>
#include <stdint.h>

struct nkv_dbfwd;
struct nkv_tr;
struct nkv_transport_ops;

struct nkv_dbfwd_opts {
	size_t size;			/* sizeof(struct nkv_dbfwd_opts) */
	/* The shadow page: host RAM, or "VRAM" with memory-mode bit 0x4.
	 * Other agents write it; the forwarder only reads it. */
	volatile uint32_t *shadow;
	size_t len;			/* bytes of doorbells, multiple of 4 */
	/* Where values go: write(arg, BAR0 offset, value). 0 or -errno. */
	int (*write)(void *arg, uint32_t off, uint32_t val);
	void *arg;
	uint64_t idle_sleep_ns;		/* sleep when nothing changed; 0: 20 us */
};

/* Start the forwarder thread. The shadow page's current content counts as
 * already forwarded (the controller's doorbells start at zero too: pass
 * a zeroed page). 0 or a negative errno. */
int nkv_dbfwd_start(const struct nkv_dbfwd_opts *opts, struct nkv_dbfwd **out);
/* Forward whatever changed up to now, from the calling thread too, and
 * return once it has gone out: 0, or the forwarder's first error. */
int nkv_dbfwd_flush(struct nkv_dbfwd *f);
/* First write error (the forwarder stops forwarding after one), or 0. */
int nkv_dbfwd_error(const struct nkv_dbfwd *f);
/* Values written to the controller so far. */
uint64_t nkv_dbfwd_count(const struct nkv_dbfwd *f);
/* Last pass, then stop the thread and free. */
void nkv_dbfwd_stop(struct nkv_dbfwd *f);

/* Adapter: write through a transport's reg_write (arg = the transport
 * struct nkv_dbfwd_tr *, write = nkv_dbfwd_transport_write). */
struct nkv_dbfwd_tr {
	const struct nkv_transport_ops *ops;
	struct nkv_tr *tr;
};
int nkv_dbfwd_transport_write(void *arg, uint32_t off, uint32_t val);

#endif /* NKV_HOST_DOORBELL_FWD_H */
