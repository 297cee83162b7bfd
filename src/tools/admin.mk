# nkv-admin: list PCIe NVMe controllers and their drivers, the namespaces
# (KV or NVM) of those bound to nkv.ko, and any controller's info by URI.
PROGRAMS += nkv-admin
nkv-admin_SRCS := src/tools/nkv_admin.c
nkv-admin_LIBS = $(LIBNKV)
nkv-admin_LDLIBS = $(LIBNKV_LDLIBS)

# The program run as a user runs it, against an in-process nkv-target.
TESTS += test_nkv_admin
test_nkv_admin_SRCS := tests/tools/test_nkv_admin.c tests/host/host_util.c tests/target/delay_be.c tests/target/liar_be.c
test_nkv_admin_LIBS = $(LIBNKV) $(LIBNKVTGT)
test_nkv_admin_LDLIBS = -lcriterion -lm $(LIBNKV_LDLIBS) $(TARGET_LDLIBS)
# It execs BUILD/bin/nkv-admin: built first (order-only, not linked in).
$(B)/tests/test_nkv_admin: | $(B)/bin/nkv-admin
