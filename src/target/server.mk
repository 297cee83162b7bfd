# nkv-target: the vfio-user server (in libnkvtarget.a, so nkv-bench can
# embed it) and the program around it.
TARGET_SRCS += src/target/vfio-user/server.c
PROGRAMS += nkv-target
nkv-target_SRCS := src/target/main.c
nkv-target_LIBS := $(LIBNKVTGT)
nkv-target_LDLIBS = $(TARGET_LDLIBS)
