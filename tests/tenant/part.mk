# Tenants (issue 48, src/target/tenant/): access rules, owners, quotas,
# share-first eviction and metering against the core in this process;
# then real uids (forked children that set their uid and gid) against
# the built nkv-target over vfio-user.
TESTS += test_tenant_access
test_tenant_access_SRCS = tests/tenant/test_access.c $(TL_TGT_HOST) $(NKV_TGT_CORE)
test_tenant_access_LDLIBS := -lcriterion

TESTS += test_tenant_owners
test_tenant_owners_SRCS = tests/tenant/test_owners.c $(TL_TGT_HOST) $(NKV_TGT_CORE)
test_tenant_owners_LDLIBS := -lcriterion

$(B)/obj/tests/tenant/test_tenant_vfu.o: CPPFLAGS += $(JSONC_CFLAGS)
TESTS += test_tenant_vfu
test_tenant_vfu_SRCS = tests/tenant/test_tenant_vfu.c tests/lib/http_get.c $(TL_RPC_PROC) $(TL_CLIENT)
test_tenant_vfu_LIBS = $(LIBNKV)
test_tenant_vfu_LDLIBS = -lcriterion $(LIBNKV_LDLIBS) $(JSONC_LIBS)
$(B)/tests/test_tenant_vfu: | $(B)/bin/nkv-target

# Host NQN rules over NVMe/TCP (the server in-process, tests/lib/tcp_host.c).
TESTS += test_tenant_tcp
test_tenant_tcp_SRCS := tests/tenant/test_tenant_tcp.c tests/lib/tcp_host.c $(TL_TCP_SRV)
test_tenant_tcp_LIBS = $(LIBNKVTGT)
test_tenant_tcp_LDLIBS = -lcriterion $(TARGET_LDLIBS)

# Owners persisted by the rocksdb backend (backends/rocksdb_owner.c).
TESTS += test_tenant_rocksdb
test_tenant_rocksdb_SRCS = tests/tenant/test_owners_rocksdb.c $(TL_TGT_HOST)
test_tenant_rocksdb_LIBS = $(LIBNKVTGT)
test_tenant_rocksdb_LDLIBS = $(TARGET_LDLIBS) -lcriterion

# Not a test: what keeping owners costs the mem backend per op, with and
# without tenants, interleaved (make bench-owners; build/bench/bench_owners).
$(B)/bench/bench_owners: $(B)/obj/tests/tenant/bench_owners.o $(LIBNKVTGT)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(TARGET_LDLIBS) -lpthread
.PHONY: bench-owners
bench-owners: $(B)/bench/bench_owners
# The poll thread against the RPC thread changing rules.
TSAN_TESTS += test_tenant_access
