# Controller-core and backend suites. They link the core's objects
# directly, so a half-written file of another part in TARGET_SRCS cannot
# break them.
NKV_TGT_TEST_LDLIBS := -lcriterion

TESTS += test_tgt_dma
test_tgt_dma_SRCS := tests/target/test_dma.c src/target/core/dma.c src/target/core/memguard.c
test_tgt_dma_LDLIBS := $(NKV_TGT_TEST_LDLIBS)

TESTS += test_tgt_regs
test_tgt_regs_SRCS = tests/target/test_regs.c $(TL_TGT_HOST) $(NKV_TGT_CORE)
test_tgt_regs_LDLIBS := $(NKV_TGT_TEST_LDLIBS)

TESTS += test_tgt_admin
test_tgt_admin_SRCS = tests/target/test_admin.c $(TL_TGT_HOST) $(NKV_TGT_CORE)
test_tgt_admin_LDLIBS := $(NKV_TGT_TEST_LDLIBS)

TESTS += test_tgt_kv
test_tgt_kv_SRCS = tests/target/test_kv.c $(TL_TGT_HOST) $(NKV_TGT_CORE)
test_tgt_kv_LDLIBS := $(NKV_TGT_TEST_LDLIBS)

# The option byte, TTL and touch, read-only namespaces, the size query.
TESTS += test_tgt_kv_opts
test_tgt_kv_opts_SRCS = tests/target/test_kv_opts.c $(TL_TGT_HOST) $(NKV_TGT_CORE)
test_tgt_kv_opts_LDLIBS := $(NKV_TGT_TEST_LDLIBS)

TESTS += test_tgt_queue
test_tgt_queue_SRCS = tests/target/test_queue.c $(TL_TGT_HOST) $(NKV_TGT_CORE)
test_tgt_queue_LDLIBS := $(NKV_TGT_TEST_LDLIBS)
TSAN_TESTS += test_tgt_queue

# An SQ burst's ops left for the backend's poll; completions from a
# backend thread held for one wake-up (core/handoff.c).
TESTS += test_tgt_handoff
test_tgt_handoff_SRCS = tests/target/test_handoff.c $(TL_TGT_HOST) $(NKV_TGT_CORE)
test_tgt_handoff_LDLIBS := $(NKV_TGT_TEST_LDLIBS)
TSAN_TESTS += test_tgt_handoff

# cpu-engine waves (nkv_dev.h) against the core; the engine's sources are
# the device part's, compiled here only.
TESTS += test_tgt_cpu_waves
test_tgt_cpu_waves_SRCS = tests/target/test_cpu_waves.c $(TL_TGT_HOST) \
	$(NKV_TGT_CORE) src/device/cpu/engine.c src/device/cpu/fiber.c src/device/cpu/ctx_switch.c
test_tgt_cpu_waves_LDLIBS := $(NKV_TGT_TEST_LDLIBS)

TESTS += test_tgt_memguard
test_tgt_memguard_SRCS := tests/target/test_memguard.c src/target/core/memguard.c
test_tgt_memguard_LDLIBS := $(NKV_TGT_TEST_LDLIBS)

TESTS += test_tgt_be_mem
test_tgt_be_mem_SRCS := tests/target/test_be_mem.c src/target/backends/mem.c src/target/backends/kvmap.c src/target/backends/lru.c src/target/backends/lend.c \
	$(NKV_TGT_OWNERS) src/target/core/memguard.c src/target/core/be_data.c src/target/backends/valloc.c src/target/core/clock.c \
	src/target/core/be_log.c
# --wrap=malloc: the test counts the backend's mallocs.
test_tgt_be_mem_LDLIBS := -Wl,--wrap=malloc $(NKV_TGT_TEST_LDLIBS)

TESTS += test_tgt_valloc
test_tgt_valloc_SRCS := tests/target/test_valloc.c src/target/backends/valloc.c
test_tgt_valloc_LDLIBS := $(NKV_TGT_TEST_LDLIBS)

TESTS += test_tgt_lend
test_tgt_lend_SRCS := tests/target/test_lend.c src/target/backends/lend.c src/target/core/be_log.c
test_tgt_lend_LDLIBS := $(NKV_TGT_TEST_LDLIBS)
TSAN_TESTS += test_tgt_lend

TESTS += test_tgt_lru
test_tgt_lru_SRCS := tests/target/test_lru.c src/target/backends/lru.c
test_tgt_lru_LDLIBS := $(NKV_TGT_TEST_LDLIBS)

TESTS += test_tgt_kvmap
test_tgt_kvmap_SRCS := tests/target/test_kvmap.c src/target/backends/kvmap.c
test_tgt_kvmap_LDLIBS := $(NKV_TGT_TEST_LDLIBS)

TESTS += test_tgt_rdpool
test_tgt_rdpool_SRCS := tests/target/test_rdpool.c src/target/backends/rdpool.c
test_tgt_rdpool_LDLIBS := $(NKV_TGT_TEST_LDLIBS)
TSAN_TESTS += test_tgt_rdpool

# The backend registry: every backend by name, its options.
TESTS += test_registry
test_registry_SRCS := tests/target/test_registry.c
test_registry_LIBS = $(LIBNKVTGT)
test_registry_LDLIBS = $(TARGET_LDLIBS) $(NKV_TGT_TEST_LDLIBS)

# The RADOS backend against a throwaway cluster.
TESTS += test_be_rados
test_be_rados_SRCS = tests/target/test_be_rados.c $(TL_CEPH) $(TL_TGT_HOST)
test_be_rados_LIBS = $(LIBNKVTGT)
test_be_rados_LDLIBS = $(TARGET_LDLIBS) -lcriterion

# The RocksDB backend on a temporary directory.
TESTS += test_be_rocksdb
test_be_rocksdb_SRCS = tests/target/test_be_rocksdb.c $(TL_TGT_HOST)
test_be_rocksdb_LIBS = $(LIBNKVTGT)
test_be_rocksdb_LDLIBS = $(TARGET_LDLIBS) -lcriterion
# Reads served on the submitting threads race the worker's writes.
TSAN_TESTS += test_be_rocksdb

# Not a test: the mem backend's memory per value, charged and resident
# (make bench-mem-rss; build/bench/bench_mem_rss [COUNTxSIZE ...]).
BENCH_MEM_RSS_OBJS = $(patsubst %.c,$(B)/obj/%.o,tests/target/bench_mem_rss.c \
	src/target/backends/mem.c src/target/backends/kvmap.c src/target/backends/valloc.c src/target/backends/lru.c src/target/backends/lend.c \
	$(NKV_TGT_OWNERS) src/target/core/memguard.c src/target/core/be_data.c src/target/core/clock.c)
$(B)/bench/bench_mem_rss: $(BENCH_MEM_RSS_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@
.PHONY: bench-mem-rss
bench-mem-rss: $(B)/bench/bench_mem_rss

# The control socket (issue 46): the built nkv-target with --rpc-socket,
# spawned; every method, JSON-RPC's errors, hostile clients beside a
# libnkv client (tests/lib/rpc_proc.c: the process and a json-c client).
$(B)/obj/tests/target/test_rpc.o: CPPFLAGS += $(JSONC_CFLAGS)
TESTS += test_rpc
test_rpc_SRCS = tests/target/test_rpc.c $(TL_RPC_PROC) $(TL_CLIENT)
test_rpc_LIBS = $(LIBNKV)
test_rpc_LDLIBS = -lcriterion $(LIBNKV_LDLIBS) $(JSONC_LIBS)
$(B)/tests/test_rpc: | $(B)/bin/nkv-target $(NKV_TCP_PLUGIN)

# The transport-neutral request (req.h) and the fabrics controller model
# (Connect, properties, keep alive, AERs, discovery) without a transport.
TESTS += test_tgt_capsule
test_tgt_capsule_SRCS = tests/target/test_capsule.c $(TL_TGT_HOST) $(NKV_TGT_CORE)
test_tgt_capsule_LDLIBS := $(NKV_TGT_TEST_LDLIBS)

# Namespace Attribute Changed notices and log page 04h (issue 46).
TESTS += test_tgt_aen
test_tgt_aen_SRCS = tests/target/test_aen.c $(TL_TGT_HOST) $(NKV_TGT_CORE)
test_tgt_aen_LDLIBS := $(NKV_TGT_TEST_LDLIBS)

# The NVMe/TCP transport's suites (tests/target/tcp/).
# The NVMe/TCP transport (src/target/tcp): in-process against the test
# host (tests/lib/tcp_host.c); the hostile hosts and the many hosts at
# once in suites of their own.
NKV_TCP_TEST_LIBS = $(LIBNKVTGT)
NKV_TCP_TEST_LDLIBS = -lcriterion $(TARGET_LDLIBS)

TESTS += test_tcp
test_tcp_SRCS := tests/target/tcp/test_tcp.c tests/lib/tcp_host.c $(TL_TCP_SRV)
test_tcp_LIBS = $(NKV_TCP_TEST_LIBS)
test_tcp_LDLIBS = $(NKV_TCP_TEST_LDLIBS)

TESTS += test_tcp_hostile
test_tcp_hostile_SRCS := tests/target/tcp/test_tcp_hostile.c tests/lib/tcp_host.c $(TL_TCP_SRV)
test_tcp_hostile_LIBS = $(NKV_TCP_TEST_LIBS)
test_tcp_hostile_LDLIBS = $(NKV_TCP_TEST_LDLIBS)

TESTS += test_tcp_hosts
test_tcp_hosts_SRCS := tests/target/tcp/test_tcp_hosts.c tests/lib/tcp_host.c $(TL_TCP_SRV) \
	tests/lib/delay_be.c
test_tcp_hosts_LIBS = $(NKV_TCP_TEST_LIBS)
test_tcp_hosts_LDLIBS = $(NKV_TCP_TEST_LDLIBS)
$(B)/tests/test_tcp_hosts: | $(B)/bin/nkv-target
# The poll thread against 16 host threads and a backend's own thread.
TSAN_TESTS += test_tcp_hosts test_tcp_hostile test_tcp

# The metrics endpoint (issue 47): the built nkv-target with --metrics,
# scraped over HTTP (tests/lib/http_get.c), checked by promtool and by a
# real Prometheus server of the test's own (both skipped where absent).
$(B)/obj/tests/target/metrics/test_metrics.o: CPPFLAGS += $(JSONC_CFLAGS)
TESTS += test_metrics
test_metrics_SRCS = tests/target/metrics/test_metrics.c tests/lib/http_get.c $(TL_RPC_PROC)
test_metrics_LIBS = $(LIBNKV)
test_metrics_LDLIBS = -lcriterion $(LIBNKV_LDLIBS) $(JSONC_LIBS)
$(B)/tests/test_metrics: | $(B)/bin/nkv-target

# The configuration file (issue 47): --config, --print-config and SIGHUP
# against the built nkv-target (tests/lib/tool_run.c, rpc_proc.c).
$(B)/obj/tests/target/config/test_config.o: CPPFLAGS += $(JSONC_CFLAGS)
TESTS += test_config
test_config_SRCS = tests/target/config/test_config.c $(TL_RPC_PROC) $(TL_TOOL)
test_config_LIBS = $(LIBNKV)
test_config_LDLIBS = -lcriterion $(LIBNKV_LDLIBS) $(JSONC_LIBS)
$(B)/tests/test_config: | $(B)/bin/nkv-target

# The service (issue 47): share/systemd's units through systemd-analyze
# verify, the tmpfiles entry, and sd_notify on a socket of the test's own.
$(B)/obj/tests/target/service/test_service.o: CPPFLAGS += $(JSONC_CFLAGS)
TESTS += test_service
test_service_SRCS = tests/target/service/test_service.c $(TL_RPC_PROC)
test_service_LIBS = $(LIBNKV)
test_service_LDLIBS = -lcriterion $(LIBNKV_LDLIBS) $(JSONC_LIBS)
$(B)/tests/test_service: | $(B)/bin/nkv-target

# The nvmf forwarding backend: real nkv-target processes (a remote on
# mem and rocksdb, a front), nkv's initiator as the client.
TESTS += test_be_nvmf
test_be_nvmf_SRCS := tests/target/test_be_nvmf.c tests/lib/tgt_proc.c
test_be_nvmf_LIBS = $(LIBNKVTGT)
test_be_nvmf_LDLIBS = -lcriterion $(TARGET_LDLIBS)

# The front over a remote on the rados backend (a throwaway Ceph cluster;
# skipped, saying why, where none starts).
TESTS += test_be_nvmf_rados
test_be_nvmf_rados_SRCS := tests/target/test_be_nvmf_rados.c tests/lib/tgt_proc.c $(TL_CEPH)
test_be_nvmf_rados_LIBS = $(LIBNKVTGT)
test_be_nvmf_rados_LDLIBS = -lcriterion $(TARGET_LDLIBS)
# They run the nkv-target program (tgt_proc.h), so build it with them
# (make SAN=asan tests included).
$(B)/tests/test_be_nvmf $(B)/tests/test_be_nvmf_rados: | $(B)/bin/nkv-target
