/* SPDX-License-Identifier: MIT */
/*
 * probe_tcp.h - nkv-probe's NVMe/TCP part (tcp:HOST:PORT[/NQN]): what a
 * host finds before it drives a controller over the network.
 */
#ifndef NKV_TOOLS_PROBE_TCP_H
#define NKV_TOOLS_PROBE_TCP_H

#include <stdint.h>

/* Print CAP, VS and CSTS decoded (the vfio-user part prints the same). */
void nkv_probe_print_regs(uint64_t cap, uint64_t vs, uint64_t csts);

/*
 * The Discovery log page at the URI's address, then the subsystem's
 * admin queue (what ICReq/ICResp and Connect settled) and its CAP, VS,
 * CSTS by Property Get, reading only (the controller is not enabled).
 * An exit status (tools/exit.h).
 */
int nkv_probe_tcp(const char *uri);

#endif /* NKV_TOOLS_PROBE_TCP_H */
