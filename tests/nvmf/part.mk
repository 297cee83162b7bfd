# The NVMe/TCP initiator (src/nvmf/) against a real nkv-target process
# and a fake controller that breaks the protocol.
TESTS += test_nvmf_tcp_host
test_nvmf_tcp_host_SRCS := tests/nvmf/test_tcp_host.c tests/lib/tgt_proc.c
test_nvmf_tcp_host_LIBS = $(LIBNKVTGT)
test_nvmf_tcp_host_LDLIBS = -lcriterion $(TARGET_LDLIBS)
$(B)/tests/test_nvmf_tcp_host: | $(B)/bin/nkv-target
