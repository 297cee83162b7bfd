// SPDX-License-Identifier: MIT
// Compiled with g++ -std=c++17 at build time: nkv_wire.h, nkv_dev.h,
// nkv_mr.h and nkv_list.h must be valid C++ (what hipcc and nvcc see), and nkv_host.h /
// nkv_cpu.h too (C++ frameworks embed the host library); a build failure
// fails the test.
#include "nkv_dev.h"
#include "nkv_list.h"
#include "nkv_mr.h"
#include "nkv_cpu.h"
#include "nkv_host.h"

extern "C" unsigned nkv_cxx_probe_sizes(void);
extern "C" unsigned nkv_cxx_probe_sizes(void)
{
	struct nkv_prep p = nkv_sqe_store(1, "gpukey01", 8, 0, 4096, 0x100000000ull, 0);

	if (p.err || p.sqe.cdw2 != 0x6b757067u)
		return 0;
	/* The host API links from C++ with C names (extern "C" in the header). */
	if (nkv_status_str(0) == nullptr)
		return 0;
	return (unsigned)(sizeof(struct nkv_sqe) + sizeof(struct nkv_cqe) + sizeof(struct nkv_dev_qp) +
			  sizeof(struct nkv_dev_mr) + sizeof(struct nkv_dev_iov));
}
