# The guest programs of tests/vm/run.sh and tests/vm/powerloss.sh, linked statically (the busybox
# initramfs has no libc): `make vm-guest`. libpciaccess.a comes with
# Debian's libpciaccess-dev; its static archive needs nothing more.
VMTEST_SRCS := tests/vm/nkv_vmtest.c tests/vm/vm_kmod.c tests/vm/vm_safety.c tests/vm/vm_p2p.c
# (obj is defined after the fragments are read: spell the objects out.)
VM_STATIC_LDLIBS = $(LIBNKV_LDLIBS)

$(B)/vm/nkv_vmtest: $(patsubst %.c,$(B)/obj/%.o,$(VMTEST_SRCS)) $(LIBNKV)
	@mkdir -p $(@D)
	$(CC) -static $(LDFLAGS) $^ $(VM_STATIC_LDLIBS) -o $@

# nkv-admin as src/tools/admin.mk builds it, its rpc command's json-c
# from Debian's static archive (libjson-c-dev ships libjson-c.a).
$(B)/vm/nkv-admin: $(B)/obj/src/tools/nkv_admin.o $(B)/obj/src/tools/ctrl_show.o \
		   $(B)/obj/src/tools/admin_rpc.o $(LIBNKV)
	@mkdir -p $(@D)
	$(CC) -static $(LDFLAGS) $^ $(VM_STATIC_LDLIBS) $(shell pkg-config --static --libs json-c) -o $@

# The storm and check of the power-loss round (tests/vm/powerloss.sh).
$(B)/vm/nkv_storm: $(B)/obj/tests/vm/nkv_storm.o $(LIBNKV)
	@mkdir -p $(@D)
	$(CC) -static $(LDFLAGS) $^ $(VM_STATIC_LDLIBS) -o $@

vm-guest: $(B)/vm/nkv_vmtest $(B)/vm/nkv-admin $(B)/vm/nkv_storm
.PHONY: vm-guest
