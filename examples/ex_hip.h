// SPDX-License-Identifier: MIT
/*
 * ex_hip.h - what the HIP examples share on the host: the connect and
 * queue-pair helpers of ex_host.h (one code path for every example), and
 * a check for HIP runtime calls. Copy what you need.
 */
#ifndef NKV_EXAMPLES_EX_HIP_H
#define NKV_EXAMPLES_EX_HIP_H

#include <hip/hip_runtime.h>

#include "ex_host.h"

/* A failed HIP runtime call ends main() with its message. */
#define EX_HIP(call)                                                            \
	do {                                                                    \
		hipError_t e_ = (call);                                         \
		if (e_ != hipSuccess) {                                         \
			fprintf(stderr, "%s: %s\n", #call, hipGetErrorString(e_)); \
			return 1;                                               \
		}                                                               \
	} while (0)

#endif /* NKV_EXAMPLES_EX_HIP_H */
