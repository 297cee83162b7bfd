# The "pcie" transport (kmod/nkv.ko). Programs linking libnkv.a add
# $(LIBNKV_LDLIBS), which carries libpciaccess for controller discovery;
# Debian's libpciaccess.a also links statically with nothing more (the VM
# guest programs of `make vm-guest`).
LIBNKV_SRCS += src/host/pcie.c
LIBNKV_LDLIBS += -lpciaccess
