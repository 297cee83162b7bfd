# NVMe/TCP protocol layer: PDU structures and the codec (header checks,
# CRC32C digests through ISA-L), shared by nkv-target's tcp transport and
# an initiator (issue 45), as src/vfio-user/ is for vfio-user.
NKV_TCP_PROTO_SRCS := src/nvme-tcp/pdu.c
TARGET_SRCS += $(NKV_TCP_PROTO_SRCS)
# ISA-L: Debian's libisal (CRC32C with the CPU's instructions).
TARGET_LDLIBS += -lisal
