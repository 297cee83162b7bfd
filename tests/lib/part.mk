# tests/lib: test support shared by the suites, never linked from src/.
# Every test object finds these headers by name (-Itests/lib).
$(B)/obj/tests/%.o: CPPFLAGS += -Itests/lib
$(FUZZ_B)/obj/tests/%.o: CPPFLAGS += -Itests/lib

# The embedded target (src/target/embed.h) on a test's own socket.
TL_SERVER := tests/lib/server.c
# Host-library suites: the target as a client's peer, with backends
# that delay, lie or fail the controller; LFSR values, log-uniform sizes.
TL_HOST := tests/lib/host_util.c tests/lib/delay_be.c tests/lib/liar_be.c tests/lib/cfs_be.c \
	$(TL_SERVER)
TL_HOST_LIBS = $(LIBNKV) $(LIBNKVTGT)
TL_HOST_LDLIBS = -lcriterion -lm $(LIBNKV_LDLIBS) $(TARGET_LDLIBS)
# vfio-user suites: the target, and a tiny NVMe driver over the transport.
TL_VFU := tests/lib/vfu_util.c $(TL_SERVER) src/host/vfio_user_client.c src/host/doorbell_fwd.c
# Controller-core suites: the test acts as the host, in-process.
TL_TGT_HOST := tests/lib/tgt_host.c tests/lib/delay_be.c
# Device-side suites: controllers faked in memory.
TL_FAKE_CTRL := tests/lib/fake_ctrl.c
# nkv's programs run as a user runs them (BUILD/bin/), output and exit.
TL_TOOL := tests/lib/tool_run.c
# The built nkv-target with a control socket, and a json-c JSON-RPC client.
TL_RPC_PROC := tests/lib/rpc_proc.c
$(B)/obj/tests/lib/rpc_proc.o: CPPFLAGS += $(shell pkg-config --cflags json-c)
# A libnkv client of the suite's target: controller and queue pair.
TL_CLIENT := tests/lib/tl_client.c
# A throwaway Ceph cluster on 127.0.0.1.
TL_CEPH := tests/lib/ceph_cluster.c
# NVMe/TCP suites: a small host that can also misbehave.
TL_TCP_HOST := tests/lib/tcp_host.c
# ... and nkv-target's NVMe/TCP transport in the suite's own process.
TL_TCP_SRV := tests/lib/tcp_srv.c
