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

# Issue 51: every failure named. The examples and programs against
# controllers that misbehave (DW0 0, stops completing, KML 16, a 4 KiB
# largest value, 06h on every I/O, SGLS 10b): exit status and the first
# line on stderr, which must name what failed with the numbers.
TESTS += test_named
test_named_SRCS = tests/faults/test_named.c $(TL_TOOL) $(TL_HOST)
test_named_LIBS = $(TL_HOST_LIBS)
test_named_LDLIBS = $(TL_HOST_LDLIBS)
$(B)/tests/test_named: | $(B)/bin/nkv-bench $(B)/bin/nkv-probe $(B)/bin/nkv-admin \
	$(B)/bin/nkv-target $(B)/examples/batch_store_retrieve_cpu \
	$(B)/examples/first_retrieve_cpu $(B)/examples/multi_queue_cpu \
	$(B)/examples/cache_lookup_cpu $(B)/examples/prefix_cache_cpu
