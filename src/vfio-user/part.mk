# vfio-user protocol layer: framing and fd passing, shared by the host
# library (client) and nkv-target (server).
VFU_PROTO_SRCS := src/vfio-user/msg.c
LIBNKV_SRCS += $(VFU_PROTO_SRCS)
TARGET_SRCS += $(VFU_PROTO_SRCS)
