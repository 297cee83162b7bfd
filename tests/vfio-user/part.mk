# vfio-user tests: protocol units, client <-> server end to end, hostile
# messages from a raw socket, nkv-probe.
VFU_TEST_LIBS := $(LIBNKVTGT)
VFU_TEST_LDLIBS = -lcriterion $(TARGET_LDLIBS)
VFU_TEST_COMMON = $(TL_VFU)

TESTS += test_vfu_proto test_vfu_e2e test_vfu_sigbus test_vfu_dmamsg
test_vfu_dmamsg_SRCS := tests/vfio-user/test_vfu_dmamsg.c $(VFU_TEST_COMMON)
test_vfu_dmamsg_LIBS := $(VFU_TEST_LIBS)
test_vfu_dmamsg_LDLIBS = $(VFU_TEST_LDLIBS)
test_vfu_proto_SRCS := tests/vfio-user/test_vfu_proto.c $(VFU_TEST_COMMON)
test_vfu_proto_LIBS := $(VFU_TEST_LIBS)
test_vfu_proto_LDLIBS = $(VFU_TEST_LDLIBS)
test_vfu_e2e_SRCS := tests/vfio-user/test_vfu_e2e.c $(VFU_TEST_COMMON)
test_vfu_e2e_LIBS := $(VFU_TEST_LIBS)
test_vfu_e2e_LDLIBS = $(VFU_TEST_LDLIBS)
test_vfu_sigbus_SRCS := tests/vfio-user/test_vfu_sigbus.c $(VFU_TEST_COMMON)
test_vfu_sigbus_LIBS := $(VFU_TEST_LIBS)
test_vfu_sigbus_LDLIBS = $(VFU_TEST_LDLIBS)
# Namespace Attribute Changed through a vfio-user connection (issue 46).
TESTS += test_vfu_aen
test_vfu_aen_SRCS := tests/vfio-user/test_vfu_aen.c $(VFU_TEST_COMMON)
test_vfu_aen_LIBS := $(VFU_TEST_LIBS)
test_vfu_aen_LDLIBS = $(VFU_TEST_LDLIBS)
# The probe test runs the built program (order-only: not linked in).
$(B)/tests/test_vfu_e2e: | $(B)/bin/nkv-probe

# Hostile clients beside good ones (issue 18). --wrap lets a test fail or
# delay the server's pthread_create (see the file's header).
TESTS += test_vfu_hostile
test_vfu_hostile_SRCS := tests/vfio-user/test_vfu_hostile.c $(VFU_TEST_COMMON)
test_vfu_hostile_LIBS := $(VFU_TEST_LIBS)
test_vfu_hostile_LDLIBS = -Wl,--wrap=pthread_create $(VFU_TEST_LDLIBS)
# The SIGTERM test runs the built program.
$(B)/tests/test_vfu_hostile: | $(B)/bin/nkv-target
TSAN_TESTS += test_vfu_hostile

# DMA fd sealing (vfio-user server hardening).
TESTS += test_vfu_seal
test_vfu_seal_SRCS := tests/vfio-user/test_vfu_seal.c src/host/dmamem.c \
	src/host/log.c $(NKV_TGT_VFU_SRCS) src/vfio-user/msg.c $(NKV_TGT_CORE)
# The rest (the embedded target's subsystem, the registry) from the archive.
test_vfu_seal_LIBS = $(LIBNKVTGT)
test_vfu_seal_LDLIBS = -lcriterion $(TARGET_LDLIBS)

# Not a test: the figure of docs/bench.md "One good client beside hostile
# ones" (make bench-hostile; build/bench/bench_hostile [seconds]).
BENCH_HOSTILE_OBJS = $(patsubst %.c,$(B)/obj/%.o,tests/vfio-user/bench_hostile.c $(TL_VFU))
$(B)/bench/bench_hostile: $(BENCH_HOSTILE_OBJS) $(LIBNKVTGT)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ $(TARGET_LDLIBS) -o $@
.PHONY: bench-hostile
bench-hostile: $(B)/bench/bench_hostile

# The rocksdb backend through the nkv-target program, SIGKILLed mid-storm
# and restarted (NKV_CRASH_ROUNDS rounds, default 20); the backend itself
# (libnkvtarget) then reopens the database to check its counts.
TESTS += test_rocks_crash
test_rocks_crash_SRCS := tests/vfio-user/test_rocks_crash.c
test_rocks_crash_LIBS := $(LIBNKV) $(LIBNKVTGT)
test_rocks_crash_LDLIBS = -lcriterion $(LIBNKV_LDLIBS) $(TARGET_LDLIBS)
$(B)/tests/test_rocks_crash: | $(B)/bin/nkv-target

# One target per socket path, who may connect (issue 41): the built
# nkv-target, spawned.
TESTS += test_vfu_socket
test_vfu_socket_SRCS := tests/vfio-user/test_vfu_socket.c $(VFU_TEST_COMMON)
test_vfu_socket_LIBS := $(VFU_TEST_LIBS)
test_vfu_socket_LDLIBS = $(VFU_TEST_LDLIBS)
$(B)/tests/test_vfu_socket: | $(B)/bin/nkv-target
