# nkv-probe: print a vfio-user NVMe controller's device, regions and
# registers, then what a host bringing it up finds (libnkv).
PROGRAMS += nkv-probe
nkv-probe_SRCS := src/tools/nkv_probe.c src/tools/ctrl_show.c
nkv-probe_LIBS = $(LIBNKV)
nkv-probe_LDLIBS = $(LIBNKV_LDLIBS)
