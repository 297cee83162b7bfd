/* SPDX-License-Identifier: MIT */
/*
 * tcp_plugin.h - the ABI between libnkv's tcp: transport
 * (src/host/tcp_local.c) and libnkv-tcp.so (src/target/tcp_plugin.c):
 * a local controller whose one namespace forwards to a remote NVMe/TCP
 * controller (the nvmf backend), served over vfio-user on a private
 * socket in this process.
 *
 * Why a plugin: the local controller is nkv-target's core, its vfio-user
 * server and the nvmf backend. Linking them into libnkv would give every
 * libnkv user their dependencies (ISA-L, libvfio-user; the registry's
 * librados and librocksdb) and two copies of the core in programs that
 * also link libnkvtarget.a (nkv-bench, the tests). libnkv dlopen()s the
 * plugin only when a tcp: URI is used, so its public API and its
 * dependencies stay as they were.
 */
#ifndef NKV_HOST_TCP_PLUGIN_H
#define NKV_HOST_TCP_PLUGIN_H

#include <stddef.h>

#define NKV_TCP_PLUGIN_NAME "libnkv-tcp.so"
#define NKV_TCP_PLUGIN_START "nkv_tcp_plugin_start"
#define NKV_TCP_PLUGIN_STOP "nkv_tcp_plugin_stop"

/* Where the local controller's backend lines go (event=remote_lost,
 * event=remote_back, ...): one line, without newline, any thread. */
typedef void (*nkv_tcp_plugin_log_fn)(const char *line);

/*
 * Start a local controller for uri ("tcp:HOST:PORT[/NQN]"), its
 * backend's warnings to log: 0 with *h,
 * the vfio-user URI to connect to in vfu (vlen bytes) and what crosses
 * the network in desc ("tcp: 127.0.0.1:4420 nqn ..., via a local
 * controller"), or a negative errno with a one-line reason in err.
 */
typedef int (*nkv_tcp_plugin_start_fn)(const char *uri, nkv_tcp_plugin_log_fn log, void **h,
				       char *vfu, size_t vlen, char *desc, size_t dlen, char *err,
				       size_t errlen);
/* Stop it (after the vfio-user client closed). */
typedef void (*nkv_tcp_plugin_stop_fn)(void *h);

#endif /* NKV_HOST_TCP_PLUGIN_H */
