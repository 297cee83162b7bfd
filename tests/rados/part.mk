# End-to-end suite of nkv-target's RADOS backend: cpu-engine waves ->
# host library -> vfio-user -> the built nkv-target (a separate process,
# --backend rados) -> a throwaway Ceph cluster, checked with the rados CLI.
TESTS += test_rados_e2e
test_rados_e2e_SRCS = tests/rados/test_rados_e2e.c tests/rados/e2e_util.c \
	$(TL_CEPH) $(TL_HOST) $(TL_TOOL) tests/lib/vfu_util.c tests/lib/fault_table.c
test_rados_e2e_LIBS = $(TL_HOST_LIBS)
test_rados_e2e_LDLIBS = $(TL_HOST_LDLIBS)
# The suite runs the nkv-target of the same build, and for the stopped
# cluster's row of the faults table nkv-bench and an example (order-only:
# not linked).
$(B)/tests/test_rados_e2e: | $(B)/bin/nkv-target $(B)/bin/nkv-bench \
	$(B)/examples/first_retrieve_cpu
