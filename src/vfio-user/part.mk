# vfio-user protocol layer: framing and fd passing, shared by the host
# library (client) and nkv-target (server).
VFU_PROTO_SRCS := src/vfio-user/msg.c
LIBNKV_SRCS += $(VFU_PROTO_SRCS)
TARGET_SRCS += $(VFU_PROTO_SRCS)

# The host library's vfio-user transport and its doorbell forwarder.
LIBNKV_SRCS += src/host/vfio_user_client.c src/host/doorbell_fwd.c
