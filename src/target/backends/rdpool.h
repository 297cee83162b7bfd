/* SPDX-License-Identifier: MIT */
/*
 * rdpool.h - a few threads that run a backend's slow reads beside the
 * poll thread (rocksdb: Retrieves of large values).
 *
 * A poll thread that serves a 64 KiB+ Retrieve itself spends tens of
 * microseconds a value (a blob read, RocksDB's checksum of it, the copy
 * out) while the rest of its batch waits; pushed here, the reads of one
 * batch run on the pool's threads side by side and the poll thread goes
 * on fetching. Items run in push order per thread, with no order between
 * threads. Push is safe from any thread; destroy runs every item pushed
 * before it, then joins the threads.
 */
#ifndef NKV_TGT_BACKENDS_RDPOOL_H
#define NKV_TGT_BACKENDS_RDPOOL_H

struct nkv_rdpool;

/* n threads (1..NKV_RDPOOL_MAX) each calling run(arg, item) per item
 * pushed; NULL (errno set) when one cannot start. */
#define NKV_RDPOOL_MAX 8
struct nkv_rdpool *nkv_rdpool_create(unsigned n, void (*run)(void *arg, void *item), void *arg);
/* Queue item for a thread: 0, or -ENOMEM (not queued). */
int nkv_rdpool_push(struct nkv_rdpool *p, void *item);
/* Run what is queued, stop the threads, free the pool (NULL: nothing). */
void nkv_rdpool_destroy(struct nkv_rdpool *p);

#endif /* NKV_TGT_BACKENDS_RDPOOL_H */
