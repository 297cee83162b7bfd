# Issue 35's table of faults (a controller killed mid-batch, stopped,
# failed with CSTS.CFS, lying about DW0 or a List payload) against
# nkv-bench, the sync API, device code on the cpu engine and two
# examples: each cell's code, first line and time printed and checked.
TESTS += test_faults
test_faults_SRCS = tests/faults/test_faults.c tests/lib/fault_table.c $(TL_TOOL) $(TL_HOST)
test_faults_LIBS = $(TL_HOST_LIBS)
test_faults_LDLIBS = $(TL_HOST_LDLIBS)
# It runs the programs of the same build (order-only: not linked in).
$(B)/tests/test_faults: | $(B)/bin/nkv-bench $(B)/examples/batch_store_retrieve_cpu \
	$(B)/examples/first_retrieve_cpu
