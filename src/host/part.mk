# The host library (include/nkv_host.h): connect, bring-up, queue pairs,
# memory placement, descriptors for device code, the synchronous API.
NKV_HOST_SRCS := src/host/log.c src/host/status.c src/host/uri.c \
	src/host/dmamem.c src/host/prp.c src/host/admin.c src/host/placement.c \
	src/host/ctrl.c src/host/qpair.c src/host/sync.c src/host/stats.c \
	src/host/qpair_gpu.c src/host/gpu_modes.c
LIBNKV_SRCS += $(NKV_HOST_SRCS)
# The GPU runtime: make GPU=cuda | GPU=hip (Makefile), else emulated.
LIBNKV_SRCS += src/host/gpu_$(if $(GPU),$(GPU),emul).c

# Tests: real vfio-user conversations with an in-process nkv-target.
NKV_HOST_TEST_SRCS := tests/host/host_util.c tests/target/delay_be.c tests/target/liar_be.c
NKV_HOST_TEST_LIBS = $(LIBNKV) $(LIBNKVTGT)
NKV_HOST_TEST_LDLIBS = -lcriterion -lm $(LIBNKV_LDLIBS) $(TARGET_LDLIBS)

TESTS += test_host_sync
TESTS += test_host_msgs
test_host_msgs_SRCS := tests/host/test_host_msgs.c $(NKV_HOST_TEST_SRCS)
test_host_msgs_LIBS = $(NKV_HOST_TEST_LIBS)
test_host_msgs_LDLIBS = $(NKV_HOST_TEST_LDLIBS)
test_host_sync_SRCS := tests/host/test_host_sync.c $(NKV_HOST_TEST_SRCS)
test_host_sync_LIBS = $(NKV_HOST_TEST_LIBS)
test_host_sync_LDLIBS = $(NKV_HOST_TEST_LDLIBS)

TESTS += test_host_waves
test_host_waves_SRCS := tests/host/test_host_waves.c tests/host/wave_util.c $(NKV_HOST_TEST_SRCS)
test_host_waves_LIBS = $(NKV_HOST_TEST_LIBS)
test_host_waves_LDLIBS = $(NKV_HOST_TEST_LDLIBS)

TESTS += test_host_units
test_host_units_SRCS := tests/host/test_host_units.c
test_host_units_LIBS = $(LIBNKV)
test_host_units_LDLIBS = -lcriterion $(LIBNKV_LDLIBS)

TESTS += test_host_ctrl
test_host_ctrl_SRCS := tests/host/test_host_ctrl.c $(NKV_HOST_TEST_SRCS)
test_host_ctrl_LIBS = $(NKV_HOST_TEST_LIBS)
test_host_ctrl_LDLIBS = $(NKV_HOST_TEST_LDLIBS)

TESTS += test_host_threads
test_host_threads_SRCS := tests/host/test_host_threads.c tests/host/wave_util.c $(NKV_HOST_TEST_SRCS)
test_host_threads_LIBS = $(NKV_HOST_TEST_LIBS)
test_host_threads_LDLIBS = $(NKV_HOST_TEST_LDLIBS)
TSAN_TESTS += test_host_threads

TESTS += test_host_procs
test_host_procs_SRCS := tests/host/test_host_procs.c tests/host/wave_util.c $(NKV_HOST_TEST_SRCS)
test_host_procs_LIBS = $(NKV_HOST_TEST_LIBS)
test_host_procs_LDLIBS = $(NKV_HOST_TEST_LDLIBS)

TESTS += test_host_gpu
test_host_gpu_SRCS := tests/host/test_host_gpu.c $(NKV_HOST_TEST_SRCS)
test_host_gpu_LIBS = $(NKV_HOST_TEST_LIBS)
test_host_gpu_LDLIBS = $(NKV_HOST_TEST_LDLIBS)
