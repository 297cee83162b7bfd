/* SPDX-License-Identifier: MIT */
/*
 * e2e_util.h - helpers for the RADOS end-to-end suite: the built
 * nkv-target run as a separate process with --backend rados, cpu-engine
 * waves over host-library queue pairs, and the rados CLI.
 */
#ifndef NKV_TEST_RADOS_E2E_UTIL_H
#define NKV_TEST_RADOS_E2E_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nkv_host.h"
#include "device/wave_kernels.h"

/* An nkv-target process and its private directory (socket, log). */
struct e2e_tgt {
	pid_t pid;
	char dir[128];
	char sock[192];
	char uri[220];
	char log[192];
};

/* Path of the nkv-target built next to this test binary (or
 * $NKV_TARGET_BIN). 0, or -1 with the reason in why. */
int e2e_target_bin(char *path, size_t len, char *why, size_t whylen);

/*
 * Start `nkv-target --backend rados --conf CONF --pool kvpool --ns-map MAP
 * --mount-timeout 5 --log-level warn --op-timeout OP` (OP 0: no
 * --op-timeout, the default) and wait (bounded) until its socket
 * appears. 0, or -1 with the reason (log tail) in why.
 */
int e2e_tgt_start(struct e2e_tgt *t, const char *conf, const char *ns_map,
		  unsigned op_timeout_s, char *why, size_t whylen);
/* 1 while the process runs, 0 once it has exited (status in *st). */
int e2e_tgt_alive(struct e2e_tgt *t, int *st);
/* SIGTERM, wait up to limit_s; SIGKILL after that. Returns the exit code,
 * 128 + signal if it died by a signal, 255 if it had to be killed. */
int e2e_tgt_stop(struct e2e_tgt *t, int limit_s);
/* The last bytes of the target's log into buf (for assertion messages). */
void e2e_tgt_log(const struct e2e_tgt *t, char *buf, size_t len);
/* 1 when a line of the target's whole log holds what. */
int e2e_tgt_log_has(const struct e2e_tgt *t, const char *what);

/* Lowercase hex of key bytes (the object name the mapping promises),
 * written here independently of the backend's own function. */
void e2e_hex(const void *key, uint32_t klen, char *out);

/* One wave of `lanes` lanes runs nkv_wk_kv_batch over count keys of a
 * on the queue pair (key i through slot i % slots). 0 or launch error. */
int e2e_wave(struct nkv_qpair *q, uint32_t lanes, const struct nkv_wk_args *a);

double e2e_now(void);

#endif
