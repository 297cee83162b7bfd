# kmod/nkv.ko: built only on request (`make kmod`), against Debian's
# linux-headers-*-amd64 tree, into $(BUILD)/kmod (sources stay untouched).
#   make kmod                         the first Debian tree under /lib/modules
#   make kmod KERNEL=6.12.x+deb12-amd64   that one, into $(BUILD)/kmod-$(KERNEL)
# tests/vm/run.sh always passes KERNEL=, so it boots the kernel it built for.
ifneq ($(KERNEL),)
KMOD_KDIR ?= /lib/modules/$(KERNEL)/build
KMOD_OUT := $(abspath $(BUILD)/kmod-$(KERNEL))
else
KMOD_KDIR ?= $(firstword $(wildcard /lib/modules/*-amd64/build))
KMOD_OUT := $(abspath $(BUILD)/kmod)
endif

# The kernel build sees none of this Makefile's variables (CC, CFLAGS...).
# The sources are copied next to the objects: Kbuild from 6.6 on no longer
# builds M= objects from a src= elsewhere.
kmod:
	@test -e "$(KMOD_KDIR)/Makefile" || { echo "kmod: no kernel headers at '$(KMOD_KDIR)' (linux-headers-amd64)" >&2; exit 1; }
	@mkdir -p $(KMOD_OUT)
	@cp -p kmod/nkv.c kmod/Kbuild include/nkv_kmod.h $(KMOD_OUT)/
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL $(MAKE) -C $(KMOD_KDIR) \
		M=$(KMOD_OUT) W=1 modules
.PHONY: kmod

# make install-kmod [KERNEL=...] [DESTDIR=...] [NKV_GROUP=nkv]: the module
# into /lib/modules/<version>/updates/, the udev rule (/dev/nkvN mode 0660,
# group NKV_GROUP), and, unless DESTDIR is set (a staging tree), the system
# group, depmod and a udev reload. Run as root.
NKV_GROUP ?= nkv
KMOD_VER = $(notdir $(patsubst %/build,%,$(KMOD_KDIR)))
install-kmod: kmod
	install -D -m 0644 $(KMOD_OUT)/nkv.ko $(DESTDIR)/lib/modules/$(KMOD_VER)/updates/nkv.ko
	@mkdir -p $(DESTDIR)/etc/udev/rules.d
	sed 's/GROUP="nkv"/GROUP="$(NKV_GROUP)"/' kmod/99-nkv.rules >$(DESTDIR)/etc/udev/rules.d/99-nkv.rules
	@if [ -z "$(DESTDIR)" ]; then \
		getent group $(NKV_GROUP) >/dev/null || groupadd --system $(NKV_GROUP); \
		depmod -a $(KMOD_VER); \
		! command -v udevadm >/dev/null || udevadm control --reload; \
		echo "install-kmod: nkv.ko for $(KMOD_VER); /dev/nkvN for group $(NKV_GROUP)"; \
	fi
.PHONY: install-kmod
