# nkv-admin and nkv-probe run as a user runs them, against an in-process
# nkv-target; their shared lines (ctrl_show.c) from hand-made data.
TESTS += test_nkv_admin
test_nkv_admin_SRCS = tests/tools/test_nkv_admin.c src/tools/ctrl_show.c $(TL_TOOL) $(TL_HOST)
test_nkv_admin_LIBS = $(TL_HOST_LIBS)
test_nkv_admin_LDLIBS = $(TL_HOST_LDLIBS)
# It execs BUILD/bin/nkv-admin and nkv-probe: built first (order-only, not linked in).
$(B)/tests/test_nkv_admin: | $(B)/bin/nkv-admin $(B)/bin/nkv-probe
# What the programs say and how they exit when the controller lies (a
# backend that does), dies (a forked target, killed) or stays silent (a
# socket nobody answers); every --help's exit table.
TESTS += test_tool_msgs
test_tool_msgs_SRCS = tests/tools/test_tool_msgs.c $(TL_TOOL) $(TL_HOST)
test_tool_msgs_LIBS = $(TL_HOST_LIBS)
test_tool_msgs_LDLIBS = $(TL_HOST_LDLIBS)
$(B)/tests/test_tool_msgs: | $(B)/bin/nkv-bench $(B)/bin/nkv-probe $(B)/bin/nkv-admin $(B)/bin/nkv-target
# One version everywhere: the Makefile's, in every man page, --version
# and the README (issue 41).
TESTS += test_versions
test_versions_SRCS = tests/tools/test_versions.c $(TL_TOOL)
test_versions_LDLIBS = -lcriterion
$(B)/tests/test_versions: | $(B)/bin/nkv-bench $(B)/bin/nkv-probe $(B)/bin/nkv-admin $(B)/bin/nkv-target
# nkv-admin rpc against the built nkv-target's control socket (issue 46).
TESTS += test_admin_rpc
$(B)/obj/tests/tools/test_admin_rpc.o: CPPFLAGS += $(JSONC_CFLAGS)
test_admin_rpc_SRCS = tests/tools/test_admin_rpc.c $(TL_TOOL) $(TL_RPC_PROC)
test_admin_rpc_LDLIBS = -lcriterion $(JSONC_LIBS)
$(B)/tests/test_admin_rpc: | $(B)/bin/nkv-admin $(B)/bin/nkv-target
