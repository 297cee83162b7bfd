# nkv-probe: print a vfio-user NVMe controller's device, regions and
# registers, then what a host bringing it up finds (libnkv).
PROGRAMS += nkv-probe
# tcp: (probe_tcp.c) links nkv's NVMe/TCP initiator and its PDU codec
# in (ISA-L's CRC32C): reading the discovery log and the registers needs
# no target, only the initiator.
nkv-probe_SRCS := src/tools/nkv_probe.c src/tools/ctrl_show.c src/tools/probe_tcp.c \
	$(NKV_NVMF_HOST_SRCS) $(NKV_TCP_PROTO_SRCS)
nkv-probe_LIBS = $(LIBNKV)
nkv-probe_LDLIBS = $(LIBNKV_LDLIBS) -lisal
