# nkv-probe: print a vfio-user NVMe controller's device, regions and
# registers. Linked with just the transport's objects: it needs nothing
# else of libnkv.
VFU_CLIENT_SRCS := src/host/vfio_user_client.c src/host/doorbell_fwd.c src/vfio-user/msg.c
PROGRAMS += nkv-probe
nkv-probe_SRCS := src/tools/nkv_probe.c $(VFU_CLIENT_SRCS)
