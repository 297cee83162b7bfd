# nkv-target (src/target): everything below goes into libnkvtarget.a, so
# that nkv-bench, the tests and the fuzzers can embed the target; main.c
# is the nkv-target program around it.

# Tenants (issue 48): what a backend links for its keys' owners (owners.c,
# with the tables in tenant.c), and the whole room (access, metering).
NKV_TGT_OWNERS := src/target/tenant/owners.c src/target/tenant/tenant.c src/target/backends/lru_owner.c
NKV_TGT_TENANT := $(sort $(wildcard src/target/tenant/*.c))
# The controller core and the mem backend: what the core's own tests and
# fuzzer link, without librados.
NKV_TGT_CORE := $(sort $(wildcard src/target/core/*.c)) $(NKV_TGT_TENANT) \
	src/target/backends/mem.c src/target/backends/kvmap.c src/target/backends/valloc.c \
	src/target/backends/lru.c src/target/backends/lru_owner.c src/target/backends/lend.c
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
# The control socket (rpc/, docs/rpc.md): JSON-RPC 2.0 parsed by json-c,
# found through pkg-config (scripts/install-deps.sh: libjson-c-dev).
JSONC_CFLAGS := $(shell pkg-config --cflags json-c)
JSONC_LIBS := $(shell pkg-config --libs json-c)
NKV_TGT_RPC_SRCS := $(wildcard src/target/rpc/*.c)
TARGET_SRCS += $(NKV_TGT_RPC_SRCS)
TARGET_LDLIBS += $(JSONC_LIBS)
$(patsubst %.c,$(B)/obj/%.o,$(NKV_TGT_RPC_SRCS) src/target/main.c): CPPFLAGS += $(JSONC_CFLAGS)
# The metrics endpoint (metrics/, docs/metrics.md): Prometheus's text
# served over HTTP by libmicrohttpd (scripts/install-deps.sh:
# libmicrohttpd-dev), found through pkg-config.
MHD_CFLAGS := $(shell pkg-config --cflags libmicrohttpd)
MHD_LIBS := $(shell pkg-config --libs libmicrohttpd)
NKV_TGT_METRICS_SRCS := $(wildcard src/target/metrics/*.c)
TARGET_SRCS += $(NKV_TGT_METRICS_SRCS)
TARGET_LDLIBS += $(MHD_LIBS) -lm
$(patsubst %.c,$(B)/obj/%.o,$(NKV_TGT_METRICS_SRCS)): CPPFLAGS += $(MHD_CFLAGS) $(JSONC_CFLAGS)
# nkv-target's configuration file (config/, docs/service.md), read by
# libinih, and its readiness told to systemd by libsystemd's sd_notify
# (scripts/install-deps.sh: libinih-dev, libsystemd-dev).
NKV_TGT_CONFIG_SRCS := $(wildcard src/target/config/*.c)
TARGET_SRCS += $(NKV_TGT_CONFIG_SRCS)
TARGET_LDLIBS += $(shell pkg-config --libs inih libsystemd)
# Exec (exec/, docs/exec.md): modules in Lua 5.3 (liblua5.3-dev, the
# version Ceph's cls_lua links), allowlisted by SHA-256 (libcrypto,
# libssl-dev); registered with the core at start-up (core/exec_if.h), so
# the core's own tests link neither.
LUA_CFLAGS := $(shell pkg-config --cflags lua5.3)
LUA_LIBS := $(shell pkg-config --libs lua5.3)
NKV_TGT_EXEC_SRCS := $(wildcard src/target/exec/*.c)
TARGET_SRCS += $(NKV_TGT_EXEC_SRCS)
TARGET_LDLIBS += $(LUA_LIBS) -lcrypto
$(patsubst %.c,$(B)/obj/%.o,$(NKV_TGT_EXEC_SRCS)): CPPFLAGS += $(LUA_CFLAGS)
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
