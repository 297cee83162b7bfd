/* SPDX-License-Identifier: MIT */
/*
 * methods.c - nkv-target's methods (target.h): one line per file that
 * holds some, as the backends' registry.c has one per backend.
 */
#include "target/rpc/target.h"

int nkv_rpc_target_register(void)
{
	static int (*const sets[])(void) = {
		nkv_rpc_namespace_register,
		nkv_rpc_connection_register,
		nkv_rpc_stats_register,
		nkv_rpc_settings_register,
		nkv_rpc_tenant_register,
		nkv_rpc_exec_register,
	};
	unsigned i;
	int rc = 0;

	for (i = 0; i < sizeof(sets) / sizeof(sets[0]) && !rc; i++)
		rc = sets[i]();
	return rc;
}
