# The host library (include/nkv_host.h): connect, bring-up, queue pairs,
# memory placement, descriptors for device code, the synchronous API.
NKV_HOST_SRCS := src/host/log.c src/host/status.c src/host/uri.c \
	src/host/dmamem.c src/host/prp.c src/host/admin.c src/host/placement.c \
	src/host/ctrl.c src/host/ns_ext.c src/host/qpair.c src/host/sync.c src/host/stats.c \
	src/host/mr.c src/host/sync_mr.c src/host/batch.c src/host/gpu_mem.c \
	src/host/qpair_gpu.c src/host/gpu_modes.c src/host/watch.c \
	src/host/aen.c src/host/tcp_local.c src/host/exec.c
LIBNKV_SRCS += $(NKV_HOST_SRCS)
# The GPU runtime: make GPU=cuda | GPU=hip (Makefile), else emulated.
LIBNKV_SRCS += src/host/gpu_$(if $(GPU),$(GPU),emul).c
