# libFuzzer targets for everything nkv parses from a peer (docs/fuzzing.md).
#   make fuzz            build them into $(BUILD)/fuzz/ (clang only)
# They are not Criterion tests (not in TESTS): scripts/stages.d/45-fuzz.sh
# runs each for a bounded time; run them longer by hand.
FUZZ_CC ?= clang
FUZZ_B := $(BUILD)/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS := -std=c11 -g -O1 -fno-omit-frame-pointer -pthread $(WARN) \
	-fsanitize=fuzzer-no-link $(FUZZ_SAN) -DNKV_FUZZ
FUZZ_LDFLAGS := -pthread -fsanitize=fuzzer $(FUZZ_SAN)
FUZZ_TARGETS := fuzz_list_decode fuzz_ctrl_cmds fuzz_vfu_server fuzz_vfu_client fuzz_rpc \
	fuzz_tcp_pdu fuzz_tcp_conn fuzz_nvmf_host

fuzz_list_decode_FSRCS := tests/fuzz/fuzz_list_decode.c
fuzz_ctrl_cmds_FSRCS = tests/fuzz/fuzz_ctrl_cmds.c $(NKV_TGT_CORE) $(NKV_TGT_EXEC_SRCS)
fuzz_ctrl_cmds_FLDLIBS = $(LUA_LIBS) -lcrypto
$(patsubst %.c,$(FUZZ_B)/obj/%.o,$(NKV_TGT_EXEC_SRCS)): CPPFLAGS += $(LUA_CFLAGS)
# The whole target as libnkvtarget.a holds it (embedded target, registry,
# every backend), instrumented; hence the backends' libraries.
fuzz_vfu_server_FSRCS = tests/fuzz/fuzz_vfu_server.c $(sort $(TARGET_SRCS))
fuzz_vfu_server_FLDLIBS = $(TARGET_LDLIBS)
# The NVMe/TCP PDU codec: every common header a peer sends.
fuzz_tcp_pdu_FSRCS := tests/fuzz/fuzz_tcp_pdu.c src/nvme-tcp/pdu.c
fuzz_tcp_pdu_FLDLIBS := -lisal
# The NVMe/TCP transport whole: a server per input, the test host in front.
fuzz_tcp_conn_FSRCS = tests/fuzz/fuzz_tcp_conn.c tests/lib/tcp_host.c $(sort $(TARGET_SRCS))
fuzz_tcp_conn_FLDLIBS = $(TARGET_LDLIBS)
# nkv's NVMe/TCP initiator on whatever a remote sends.
fuzz_nvmf_host_FSRCS := tests/fuzz/fuzz_nvmf_host.c $(NKV_NVMF_HOST_SRCS) src/nvme-tcp/pdu.c
fuzz_nvmf_host_FLDLIBS := -lisal
fuzz_vfu_client_FSRCS := tests/fuzz/fuzz_vfu_client.c src/host/vfio_user_client.c \
	src/vfio-user/msg.c

# The control socket's server and registry (json-c, not instrumented).
fuzz_rpc_FSRCS = tests/fuzz/fuzz_rpc.c src/target/rpc/server.c src/target/rpc/registry.c \
	src/target/core/pidlock.c src/target/core/be_log.c src/target/core/clock.c
fuzz_rpc_FLDLIBS = $(JSONC_LIBS)
$(patsubst %.c,$(FUZZ_B)/obj/%.o,$(fuzz_rpc_FSRCS)): CPPFLAGS += $(JSONC_CFLAGS)

fuzz_obj = $(patsubst %.c,$(FUZZ_B)/obj/%.o,$(1))

$(FUZZ_B)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

define fuzz_template
$(FUZZ_B)/$(1): $$(call fuzz_obj,$$($(1)_FSRCS))
	@mkdir -p $$(@D)
	$$(FUZZ_CC) $$(FUZZ_LDFLAGS) $$^ $$($(1)_FLDLIBS) -o $$@
endef
$(foreach f,$(FUZZ_TARGETS),$(eval $(call fuzz_template,$(f))))

.PHONY: fuzz
fuzz: $(addprefix $(FUZZ_B)/,$(FUZZ_TARGETS))

-include $(shell find $(FUZZ_B)/obj -name '*.d' 2>/dev/null)
