# Exec (src/target/exec/, docs/exec.md): the command end to end over
# vfio-user against an in-process target with its Exec workers.
TESTS += test_exec
test_exec_SRCS = tests/exec/test_exec.c tests/host/big_util.c $(TL_HOST)
test_exec_LIBS = $(TL_HOST_LIBS)
test_exec_LDLIBS = $(TL_HOST_LDLIBS)

# Over NVMe/TCP: a real nkv-target process (--exec-allow), the initiator.
TESTS += test_exec_tcp
test_exec_tcp_SRCS = tests/exec/test_exec_tcp.c tests/lib/tgt_proc.c
test_exec_tcp_LIBS = $(LIBNKV) $(LIBNKVTGT)
test_exec_tcp_LDLIBS = -lcriterion $(LIBNKV_LDLIBS) $(TARGET_LDLIBS)
$(B)/tests/test_exec_tcp: | $(B)/bin/nkv-target $(NKV_TCP_PLUGIN)

# Hostile Exec SQEs against the core and the Exec room, the test as host.
TESTS += test_exec_sqe
test_exec_sqe_SRCS = tests/exec/test_exec_sqe.c $(TL_TGT_HOST) $(NKV_TGT_CORE) \
	$(NKV_TGT_EXEC_SRCS)
test_exec_sqe_LDLIBS = -lcriterion $(LUA_LIBS) -lcrypto

# The allowlist through a real nkv-target's control socket, its command
# line and its config file.
$(B)/obj/tests/exec/test_exec_rpc.o: CPPFLAGS += $(JSONC_CFLAGS)
TESTS += test_exec_rpc
test_exec_rpc_SRCS = tests/exec/test_exec_rpc.c tests/lib/http_get.c $(TL_RPC_PROC)
test_exec_rpc_LIBS = $(LIBNKV)
test_exec_rpc_LDLIBS = -lcriterion $(LIBNKV_LDLIBS) $(JSONC_LIBS) -lcrypto
$(B)/tests/test_exec_rpc: | $(B)/bin/nkv-target

# Exec on rocksdb, rados (a throwaway cluster; skipped saying why where
# none starts) and an nvmf front: real nkv-target processes over NVMe/TCP.
TESTS += test_exec_backends
test_exec_backends_SRCS = tests/exec/test_exec_backends.c tests/lib/tgt_proc.c \
	tests/lib/http_get.c $(TL_CEPH)
test_exec_backends_LIBS = $(LIBNKVTGT)
test_exec_backends_LDLIBS = -lcriterion $(TARGET_LDLIBS)
$(B)/tests/test_exec_backends: | $(B)/bin/nkv-target

# Exec's wire helpers and SQE builders, no target.
TESTS += test_exec_prep
test_exec_prep_SRCS := tests/exec/test_exec_prep.c
test_exec_prep_LDLIBS := -lcriterion
# The workers, the hand-off and the core under TSan.
TSAN_TESTS += test_exec_sqe

# exec/pager.c alone: ranges of a value through a small store's
# read_range (slices, readahead, a changed value, the tier's refusal).
TESTS += test_exec_pager
test_exec_pager_SRCS := tests/exec/test_exec_pager.c src/target/exec/pager.c
test_exec_pager_LDLIBS := -lcriterion
