# nkv-admin: list PCIe NVMe controllers and their drivers, the namespaces
# (KV or NVM) of those bound to nkv.ko, and any controller's info by URI;
# rpc: a call to a running nkv-target's control socket (json-c).
PROGRAMS += nkv-admin
nkv-admin_SRCS := src/tools/nkv_admin.c src/tools/ctrl_show.c src/tools/admin_rpc.c
nkv-admin_LIBS = $(LIBNKV)
nkv-admin_LDLIBS = $(LIBNKV_LDLIBS) $(shell pkg-config --libs json-c)
$(B)/obj/src/tools/admin_rpc.o: CPPFLAGS += $(shell pkg-config --cflags json-c)
