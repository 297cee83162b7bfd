# The "pcie" transport (kmod/nkv.ko). Programs linking libnkv.a add
# $(LIBNKV_LDLIBS), which carries libpciaccess for controller discovery;
# Debian's libpciaccess.a also links statically with nothing more (the VM
# guest programs, tests/vm/vm.mk).
LIBNKV_SRCS += src/host/pcie.c
LIBNKV_LDLIBS += -lpciaccess

TESTS += test_pcie
test_pcie_SRCS := tests/host/test_pcie.c src/host/pcie.c src/host/log.c
test_pcie_LDLIBS := -lcriterion -lpciaccess
