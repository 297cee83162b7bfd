# kmod/nkv.ko: built only on request (`make kmod`), against Debian's
# linux-headers-amd64 tree, into $(BUILD)/kmod (sources stay untouched).
KMOD_KDIR ?= $(firstword $(wildcard /lib/modules/*-amd64/build))
KMOD_OUT := $(abspath $(BUILD)/kmod)

# The kernel build sees none of this Makefile's variables (CC, CFLAGS...).
kmod:
	@test -n "$(KMOD_KDIR)" || { echo "kmod: no linux-headers-amd64 tree under /lib/modules" >&2; exit 1; }
	@mkdir -p $(KMOD_OUT)
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL $(MAKE) -C $(KMOD_KDIR) \
		M=$(KMOD_OUT) src=$(abspath kmod) W=1 modules
.PHONY: kmod

# Host-side layout test of the uapi header.
TESTS += test_kmod_uapi
test_kmod_uapi_SRCS := tests/kmod/test_kmod_uapi.c
test_kmod_uapi_LDLIBS := -lcriterion
