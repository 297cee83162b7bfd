# nkv-target: the vfio-user server (in libnkvtarget.a, so nkv-bench can
# embed it) and the program around it.
NKV_TGT_VFU_SRCS := $(wildcard src/target/vfio-user/*.c)
TARGET_SRCS += $(NKV_TGT_VFU_SRCS)
PROGRAMS += nkv-target
nkv-target_SRCS := src/target/main.c
nkv-target_LIBS := $(LIBNKVTGT)
nkv-target_LDLIBS = $(TARGET_LDLIBS)
