# nkv-target (src/target): everything below goes into libnkvtarget.a, so
# that nkv-bench, the tests and the fuzzers can embed the target; main.c
# is the nkv-target program around it.

# The controller core and the mem backend: what the core's own tests and
# fuzzer link, without librados.
NKV_TGT_CORE := $(sort $(wildcard src/target/core/*.c)) \
	src/target/backends/mem.c src/target/backends/kvmap.c src/target/backends/valloc.c \
	src/target/backends/lru.c
# Every backend: one file each (with its helpers), and the registry that
# lists them (registry.c: one line per backend). registry.c names the
# rados type, so it stays out of NKV_TGT_CORE: what needs the registry
# links libnkvtarget.a and $(TARGET_LDLIBS) (librados, for rados;
# librocksdb, for rocksdb).
TARGET_SRCS += $(sort $(NKV_TGT_CORE) $(wildcard src/target/backends/*.c))
TARGET_LDLIBS += -lrados -lrocksdb
# The vfio-user transport.
NKV_TGT_VFU_SRCS := $(wildcard src/target/vfio-user/*.c)
TARGET_SRCS += $(NKV_TGT_VFU_SRCS)
# The embedded target (embed.h): subsystem, registry backends and server
# as threads of another program.
TARGET_SRCS += src/target/embed.c

PROGRAMS += nkv-target
nkv-target_SRCS := src/target/main.c
nkv-target_LIBS := $(LIBNKVTGT)
nkv-target_LDLIBS = $(TARGET_LDLIBS)
# The NVMe/TCP transport (src/target/tcp/; the PDU codec: src/nvme-tcp/).
NKV_TGT_TCP_SRCS := $(wildcard src/target/tcp/*.c)
TARGET_SRCS += $(NKV_TGT_TCP_SRCS)

# libnkv-tcp.so: the local controller behind libnkv's tcp: URIs (the
# embedded target with the nvmf backend; src/host/tcp_plugin.h says why
# it is a plugin). libnkv dlopen()s it; it exports two symbols and binds
# its own (-Bsymbolic), so a program that also links libnkvtarget.a
# keeps two separate copies of the core, never a mix.
NKV_TCP_PLUGIN := $(B)/lib/libnkv-tcp.so
$(NKV_TCP_PLUGIN): $(B)/obj/src/target/tcp_plugin.o $(LIBNKVTGT) src/target/tcp_plugin.map
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -Wl,-Bsymbolic -Wl,--version-script=src/target/tcp_plugin.map \
		$(call obj,src/target/tcp_plugin.c) $(LIBNKVTGT) $(TARGET_LDLIBS) -o $@
lib: $(NKV_TCP_PLUGIN)
