/* SPDX-License-Identifier: MIT */
/*
 * tcp_srv.h - nkv-target's NVMe/TCP transport in the test's own process,
 * the other side of tcp_host.h: one subsystem with one KV namespace on a
 * given backend, served on 127.0.0.1 at an ephemeral port.
 */
#ifndef NKV_TEST_TCP_SRV_H
#define NKV_TEST_TCP_SRV_H

#include <stdint.h>

#include "target/core/backend.h"
#include "target/tcp/server.h"

/*
 * A subsystem with be as namespace 1 (be is owned from now on, freed
 * with the subsystem), served by a new server with o's options (o->ss
 * and o->ctrl.size are set here; NULL: the defaults): *ss, *s and *port.
 * 0, or a negative errno (nothing left to stop then).
 */
int tcp_srv_start(struct nkv_be *be, struct nkv_tcp_server_opts *o, struct nkv_subsys **ss,
		  struct nkv_tcp_server **s, uint16_t *port);
/* The server stopped, then the subsystem destroyed. */
void tcp_srv_stop(struct nkv_subsys *ss, struct nkv_tcp_server *s);

#endif /* NKV_TEST_TCP_SRV_H */
