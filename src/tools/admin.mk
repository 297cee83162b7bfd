# nkv-admin: list PCIe NVMe controllers and their drivers, the namespaces
# (KV or NVM) of those bound to nkv.ko, and any controller's info by URI.
PROGRAMS += nkv-admin
nkv-admin_SRCS := src/tools/nkv_admin.c src/tools/ctrl_show.c
nkv-admin_LIBS = $(LIBNKV)
nkv-admin_LDLIBS = $(LIBNKV_LDLIBS)
