/* SPDX-License-Identifier: MIT */
/*
 * admin_rpc.h - nkv-admin rpc: one JSON-RPC call to a running
 * nkv-target's control socket (docs/rpc.md).
 */
#ifndef NKV_TOOLS_ADMIN_RPC_H
#define NKV_TOOLS_ADMIN_RPC_H

/*
 * nkv-admin rpc --socket PATH METHOD [JSON], args after "rpc". Prints the
 * result as pretty JSON on stdout; the exit status: 0 a result, 1 an
 * error response (printed on stderr), 2 bad arguments (JSON that is not
 * an object), 3 no answer (cannot connect, closed, timed out).
 */
int nkv_admin_rpc(int argc, char **argv);

#endif /* NKV_TOOLS_ADMIN_RPC_H */
