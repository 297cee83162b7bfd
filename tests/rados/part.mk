# End-to-end suite of nkv-target's RADOS backend: cpu-engine waves ->
# host library -> vfio-user -> the built nkv-target (a separate process,
# --backend rados) -> a throwaway Ceph cluster, checked with the rados CLI.
TESTS += test_rados_e2e
test_rados_e2e_SRCS := tests/rados/test_rados_e2e.c tests/rados/e2e_util.c \
	tests/target/ceph_cluster.c tests/host/host_util.c tests/target/delay_be.c tests/target/liar_be.c \
	tests/vfio-user/vfu_util.c
test_rados_e2e_LIBS = $(LIBNKV) $(LIBNKVTGT)
test_rados_e2e_LDLIBS = -lcriterion -lm $(LIBNKV_LDLIBS) $(TARGET_LDLIBS)
# The suite runs the nkv-target of the same build (order-only: not linked).
$(B)/tests/test_rados_e2e: | $(B)/bin/nkv-target
