# nkv-target controller core (src/target), built into libnkvtarget.a.
NKV_TGT_CORE := $(sort $(wildcard src/target/core/*.c)) \
	src/target/backends/mem.c src/target/backends/kvmap.c src/target/backends/valloc.c
# Every backend: one file each (with its helpers), and the registry that
# lists them (registry.c: one line per backend). registry.c names the
# rados type, so it stays out of NKV_TGT_CORE: what needs the registry
# links libnkvtarget.a and $(TARGET_LDLIBS).
TARGET_SRCS += $(sort $(NKV_TGT_CORE) $(wildcard src/target/backends/*.c))
