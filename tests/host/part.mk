# Host library suites: real vfio-user conversations with an in-process
# nkv-target (tests/lib), the library's units, the pcie transport.
TESTS += test_host_sync
TESTS += test_host_msgs
test_host_msgs_SRCS = tests/host/test_host_msgs.c tests/host/big_util.c $(TL_HOST)
test_host_msgs_LIBS = $(TL_HOST_LIBS)
test_host_msgs_LDLIBS = $(TL_HOST_LDLIBS)
test_host_sync_SRCS = tests/host/test_host_sync.c tests/host/big_util.c $(TL_HOST)
test_host_sync_LIBS = $(TL_HOST_LIBS)
test_host_sync_LDLIBS = $(TL_HOST_LDLIBS)

TESTS += test_host_keys
test_host_keys_SRCS = tests/host/test_host_keys.c tests/host/big_util.c $(TL_HOST)
test_host_keys_LIBS = $(TL_HOST_LIBS)
test_host_keys_LDLIBS = $(TL_HOST_LDLIBS)

# The vendor Store options, their discovery, read-only namespaces.
TESTS += test_host_opts
test_host_opts_SRCS = tests/host/test_host_opts.c tests/host/big_util.c $(TL_HOST)
test_host_opts_LIBS = $(TL_HOST_LIBS)
test_host_opts_LDLIBS = $(TL_HOST_LDLIBS)

TESTS += test_host_waves
test_host_waves_SRCS = tests/host/test_host_waves.c tests/host/wave_util.c $(TL_HOST)
test_host_waves_LIBS = $(TL_HOST_LIBS)
test_host_waves_LDLIBS = $(TL_HOST_LDLIBS)

TESTS += test_host_units
test_host_units_SRCS := tests/host/test_host_units.c
test_host_units_LIBS = $(LIBNKV)
test_host_units_LDLIBS = -lcriterion $(LIBNKV_LDLIBS)

TESTS += test_host_ctrl
test_host_ctrl_SRCS = tests/host/test_host_ctrl.c $(TL_HOST)
test_host_ctrl_LIBS = $(TL_HOST_LIBS)
test_host_ctrl_LDLIBS = $(TL_HOST_LDLIBS)

TESTS += test_host_threads
test_host_threads_SRCS = tests/host/test_host_threads.c tests/host/wave_util.c $(TL_HOST)
test_host_threads_LIBS = $(TL_HOST_LIBS)
test_host_threads_LDLIBS = $(TL_HOST_LDLIBS)
TSAN_TESTS += test_host_threads test_host_gone

TESTS += test_host_procs
test_host_procs_SRCS = tests/host/test_host_procs.c tests/host/wave_util.c $(TL_HOST)
test_host_procs_LIBS = $(TL_HOST_LIBS)
test_host_procs_LDLIBS = $(TL_HOST_LDLIBS)

TESTS += test_host_gpu
test_host_gpu_SRCS = tests/host/test_host_gpu.c $(TL_HOST)
test_host_gpu_LIBS = $(TL_HOST_LIBS)
test_host_gpu_LDLIBS = $(TL_HOST_LDLIBS)

# A controller that is gone (killed, CFS, all-ones) or stalled: the
# watch ends every wait; the sync API sleeps while it waits.
TESTS += test_host_gone
test_host_gone_SRCS = tests/host/test_host_gone.c $(TL_HOST)
test_host_gone_LIBS = $(TL_HOST_LIBS)
test_host_gone_LDLIBS = $(TL_HOST_LDLIBS)

# The pcie transport (kmod/nkv.ko) against fake sysfs trees.
TESTS += test_pcie
test_pcie_SRCS := tests/host/test_pcie.c src/host/pcie.c src/host/log.c
test_pcie_LDLIBS := -lcriterion -lpciaccess

# Block batches (nkv_block.h) on the cpu engine against the target.
TESTS += test_host_block
test_host_block_SRCS = tests/host/test_host_block.c $(TL_HOST)
test_host_block_LIBS = $(TL_HOST_LIBS)
test_host_block_LDLIBS = $(TL_HOST_LDLIBS)

# The KV-cache tier (nkv_kvcache.h) on the cpu engine against the target.
TESTS += test_host_kvcache test_host_kvc_procs
test_host_kvcache_SRCS = tests/host/test_host_kvcache.c tests/host/kvc_util.c $(TL_HOST)
test_host_kvcache_LIBS = $(TL_HOST_LIBS)
test_host_kvcache_LDLIBS = $(TL_HOST_LDLIBS)
test_host_kvc_procs_SRCS = tests/host/test_host_kvc_procs.c tests/host/kvc_util.c $(TL_HOST)
test_host_kvc_procs_LIBS = $(TL_HOST_LIBS)
test_host_kvc_procs_LDLIBS = $(TL_HOST_LDLIBS)

# Memory regions: values in the caller's own memory (nkv_mr.h, mr.c).
TESTS += test_host_mr
test_host_mr_SRCS = tests/host/test_host_mr.c tests/host/big_util.c $(TL_HOST)
test_host_mr_LIBS = $(TL_HOST_LIBS)
test_host_mr_LDLIBS = $(TL_HOST_LDLIBS)

# The host batch API (issue 50): many commands, one doorbell.
TESTS += test_host_batch
test_host_batch_SRCS = tests/host/test_host_batch.c $(TL_HOST)
test_host_batch_LIBS = $(TL_HOST_LIBS)
test_host_batch_LDLIBS = $(TL_HOST_LDLIBS)

# tcp: URIs: a remote nkv-target process, the library's local controller
# (libnkv-tcp.so, found in BUILD/lib/).
TESTS += test_host_tcp
test_host_tcp_SRCS := tests/host/test_host_tcp.c tests/lib/tgt_proc.c tests/lib/tool_run.c
test_host_tcp_LIBS = $(LIBNKV)
test_host_tcp_LDLIBS = -lcriterion $(LIBNKV_LDLIBS)
$(B)/tests/test_host_tcp: | $(NKV_TCP_PLUGIN) $(B)/bin/nkv-bench $(B)/bin/nkv-target \
	$(B)/bin/nkv-admin $(B)/bin/nkv-probe $(B)/examples/first_retrieve_cpu \
	$(B)/examples/batch_store_retrieve_cpu
