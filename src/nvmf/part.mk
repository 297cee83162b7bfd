# The NVMe/TCP initiator (src/nvmf/tcp_*.c, tcp_host.h): the forwarding
# backend (src/target/backends/nvmf.c) uses it, so it goes into
# libnkvtarget.a beside the PDU codec it is built on (src/nvme-tcp/).
NKV_NVMF_HOST_SRCS := src/nvmf/tcp_host.c src/nvmf/tcp_rx.c src/nvmf/tcp_assoc.c src/nvmf/tcp_kv.c
TARGET_SRCS += $(NKV_NVMF_HOST_SRCS)
