# nkv-admin run as a user runs it, against an in-process nkv-target.
TESTS += test_nkv_admin
test_nkv_admin_SRCS = tests/tools/test_nkv_admin.c $(TL_HOST)
test_nkv_admin_LIBS = $(TL_HOST_LIBS)
test_nkv_admin_LDLIBS = $(TL_HOST_LDLIBS)
# It execs BUILD/bin/nkv-admin: built first (order-only, not linked in).
$(B)/tests/test_nkv_admin: | $(B)/bin/nkv-admin
