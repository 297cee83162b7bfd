#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Proves kmod/nkv.ko, the pcie transport and the host library in a real
# kernel: builds the module against Debian's linux-headers-amd64, the
# static guest programs (nkv_vmtest on libnkv.a + the cpu engine, and
# nkv-admin) and a busybox initramfs, then boots Debian's own kernel under
# qemu-system-x86_64 -accel tcg with QEMU's emulated NVMe disk: without an
# IOMMU (open refused by default; the cases run through the tainting
# allow_unsafe_dma opt-in), with an emulated translating IOMMU with
# interrupt remapping (intel-iommu, the default-safe open), and with
# swiotlb=force (bouncing DMA refused). The noiommu and iommu boots also
# get QEMU's ivshmem-plain device, its BAR2 backed by a host file filled
# with 0xa5: the test-only exporter tests/vm/nkv_p2pexp.ko exports it as
# dma-bufs, nkv.ko imports one, and an NVMe Read lands in the BAR; after
# the boot, case p2p-host compares that host file with the disk image,
# byte for byte. Each guest case
# prints "NKV-CASE name PASS|FAIL"; this prints one line per case:
#   NKV-VM <boot>-<case> PASS|FAIL|SKIP [reason]
# and ends "N passed, N failed, N skipped". Exit 0 only if nothing failed.
#
#   tests/vm/run.sh [noiommu] [iommu] [swiotlb]     (default: all three)
# Env: BUILD (build root, default build), NKV_VM_TIMEOUT (s per boot, 150),
# NKV_KERNEL (a version under /lib/modules with an image in /boot; default
# the first Debian one; the module is built for exactly that kernel),
# NKV_VM_TAG (prefix of the case names, e.g. "6.12-").
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
OUT=$BUILD/vm
TIMEOUT=${NKV_VM_TIMEOUT:-150}
TAG=${NKV_VM_TAG:-}
BOOTS=("$@")
[ ${#BOOTS[@]} -gt 0 ] || BOOTS=(noiommu iommu swiotlb)
. tests/vm/lib.sh

declare -A CASES=(
	[noiommu]="modules bind refuse-noiommu unsafe-taint admin refuse badargs rw-m0 rw-m8 rw-m4 rw-mf p2p-read p2p-refuse p2p-revoke p2p-teardown kill unbind libunbind handback admin-nvme closelog dmesg p2p-host"
	[iommu]="modules bind intx safe-open rw-m0 rw-m8 rw-m4 p2p-read retain uffd filepin fork msix params reset kill handback closelog dmesg p2p-host"
	[swiotlb]="modules bind bounce dmesg"
)

all_cases() {
	local b c
	for b in "${BOOTS[@]}"; do
		for c in ${CASES[$b]}; do
			echo "$b-$c"
		done
	done
}

check_prereqs() {
	find_kernel headers || skip_all "no Debian linux-image + linux-headers pair${NKV_KERNEL:+ for $NKV_KERNEL}"
	[ -r "/boot/vmlinuz-$KVER" ] || skip_all "/boot/vmlinuz-$KVER not readable"
	command -v qemu-system-x86_64 >/dev/null || skip_all "qemu-system-x86_64 not installed"
	BUSYBOX=$(command -v busybox) || skip_all "busybox-static not installed"
	ldd "$BUSYBOX" >/dev/null 2>&1 && skip_all "$BUSYBOX is not static (install busybox-static)"
	command -v python3 >/dev/null || skip_all "python3 not installed"
	[ -e /usr/lib/x86_64-linux-gnu/libpciaccess.a ] || skip_all "libpciaccess-dev not installed"
}

build_all() {
	make -s BUILD="$BUILD" KERNEL="$KVER" kmod >"$OUT/kmod.log" 2>&1 || {
		cat "$OUT/kmod.log"
		return 1
	}
	if grep -q "warning:" "$OUT/kmod.log"; then
		cat "$OUT/kmod.log"
		return 1
	fi
	# DKMS's version is the module's, and every parameter is described.
	local v
	v=$(sed -n 's/^#define NKV_KMOD_VERSION "\(.*\)"$/\1/p' kmod/nkv.c)
	if [ -z "$v" ] || ! grep -q "^PACKAGE_VERSION=\"$v\"$" kmod/dkms.conf; then
		echo "kmod/dkms.conf PACKAGE_VERSION is not the module's version '$v'"
		return 1
	fi
	# Outputs are read whole, never piped into grep -q: under pipefail its
	# early exit can kill the writer with SIGPIPE and read as "no match".
	local parms=""
	command -v modinfo >/dev/null && parms=$(modinfo -F parm "$BUILD/kmod-$KVER/nkv.ko")
	if [ -n "$parms" ] && grep -qv ':.\{10,\}' <<<"$parms"; then
		echo "a module parameter has no description:"
		modinfo -F parm "$BUILD/kmod-$KVER/nkv.ko"
		return 1
	fi
	# The test-only dma-buf exporter, for the same kernel, never installed.
	mkdir -p "$BUILD/vmkmod-$KVER"
	cp -p tests/vm/nkv_p2pexp.c tests/vm/nkv_p2pexp.h tests/vm/Kbuild "$BUILD/vmkmod-$KVER/"
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "/lib/modules/$KVER/build" \
		M="$PWD/$BUILD/vmkmod-$KVER" W=1 modules >"$OUT/p2pexp.log" 2>&1 || {
		cat "$OUT/p2pexp.log"
		return 1
	}
	if grep -q "warning:" "$OUT/p2pexp.log"; then
		cat "$OUT/p2pexp.log"
		return 1
	fi
	# Static guest programs on the host library (tests/vm/vm.mk).
	make -s -j2 BUILD="$BUILD" vm-guest >"$OUT/guest.log" 2>&1 || {
		cat "$OUT/guest.log"
		return 1
	}
}

make_initramfs() {
	local root=$OUT/root
	rm -rf "$root"
	mkdir -p "$root/bin" "$root/lib/nkv"
	cp "$BUSYBOX" "$root/bin/busybox"
	cp tests/vm/init tests/vm/cases.sh "$BUILD/vm/nkv_vmtest" "$root/"
	cp "$BUILD/vm/nkv-admin" "$root/bin/"
	chmod +x "$root/init"
	cp "$BUILD/kmod-$KVER/nkv.ko" "$BUILD/vmkmod-$KVER/nkv_p2pexp.ko" "$root/lib/nkv/"
	copy_modules "$root/lib/nkv" drivers/nvme/host/nvme || return 1
	python3 tests/vm/mkcpio.py "$root" "$OUT/initramfs.cpio"
}

# The p2p case's ranges, as tests/vm/nkv_vmtest.c has them (VT_P2P_*): the
# guest writes P2P_LEN bytes at disk offset P2P_DISK_OFF, then reads them
# into the ivshmem BAR at P2P_BAR_OFF.
P2P_DISK_OFF=$((16 << 20))
P2P_BAR_OFF=$((1 << 20))
P2P_LEN=$((1 << 20))
SHM_SIZE=$((4 << 20))

# p2p-host NAME: after the boot, the host file behind the BAR holds the
# disk's bytes exactly where the import pointed, and its 0xa5 fill
# everywhere else; the disk's bytes are the guest's data, not the fill.
check_p2p_host() {
	local name=$1 shm=$OUT/$1.shm disk=$OUT/$1.img
	if ! grep -q "^NKV-CASE p2p-read PASS$" < <(tr -d '\r' <"$OUT/$name.log"); then
		report "$name-p2p-host" FAIL "p2p-read did not pass"
	elif ! cmp -s -n "$P2P_LEN" -i "$P2P_BAR_OFF:$P2P_DISK_OFF" "$shm" "$disk"; then
		report "$name-p2p-host" FAIL "BAR at $P2P_BAR_OFF differs from disk at $P2P_DISK_OFF"
	elif cmp -s -n "$P2P_LEN" -i "$P2P_DISK_OFF:0" "$disk" "$OUT/fill.bin" ||
		cmp -s -n "$P2P_LEN" -i "$P2P_DISK_OFF:0" "$disk" /dev/zero; then
		report "$name-p2p-host" FAIL "the disk holds no written data"
	elif ! cmp -s -n "$P2P_BAR_OFF" "$shm" "$OUT/fill.bin" ||
		! cmp -s -i "$((P2P_BAR_OFF + P2P_LEN)):$((P2P_BAR_OFF + P2P_LEN))" "$shm" "$OUT/fill.bin"; then
		report "$name-p2p-host" FAIL "the BAR changed outside the imported range"
	else
		report "$name-p2p-host" PASS
	fi
}

# boot NAME: run one VM with a hard timeout (killed by PID), log to a file.
boot() {
	local name=$1 disk=$OUT/$1.img machine append shm=()
	machine=(-machine pc)
	append="console=ttyS0 quiet panic=-1 nkv_mode=$name"
	if [ "$name" = iommu ]; then
		machine=(-machine q35,kernel-irqchip=split -device intel-iommu,intremap=on)
		# no_timer_check: under a loaded TCG host the IO-APIC timer check
		# can miss its window and panic the boot.
		append="$append intel_iommu=on no_timer_check"
	elif [ "$name" = swiotlb ]; then
		append="$append swiotlb=force"
	fi
	if [ "$name" != swiotlb ]; then
		cp "$OUT/fill.bin" "$OUT/$name.shm"
		shm=(-object "memory-backend-file,id=hm,share=on,mem-path=$OUT/$name.shm,size=$SHM_SIZE"
			-device ivshmem-plain,memdev=hm)
	fi
	rm -f "$disk"
	truncate -s 64M "$disk"
	# TCG even where /dev/kvm exists: on the nested VMs this runs on, a KVM
	# guest sat in the firmware's boot for the whole timeout (tried).
	run_qemu "$name" -accel tcg -nographic -m 1G "${machine[@]}" \
		-kernel "/boot/vmlinuz-$KVER" -initrd "$OUT/initramfs.cpio" -append "$append" \
		-drive "file=$disk,if=none,id=d0,format=raw" -device nvme,serial=nkv0001,drive=d0 "${shm[@]}"
}

# Per expected case: its marker, or FAIL when the guest never printed one.
parse() {
	local name=$1 log=$OUT/$1.log c r
	for c in ${CASES[$name]}; do
		r=$(tr -d '\r' <"$log" 2>/dev/null | sed -n "s/^NKV-CASE $c \(PASS\|FAIL\)$/\1/p" | tail -1)
		if [ "$c" = p2p-host ]; then
			check_p2p_host "$name"
			continue
		fi
		if [ "$c" = modules ] && [ -z "$r" ] && grep -aq "NKV-CASE bind" "$log"; then
			r=PASS	# loading printed no failure and the cases ran
		fi
		if [ -n "$r" ]; then
			report "$name-$c" "$r"
		else
			report "$name-$c" FAIL "no result (guest log $log)"
		fi
	done
}

mkdir -p "$OUT"
check_prereqs
OUT=$OUT/$KVER	# logs, initramfs and disks per kernel; guest programs shared
mkdir -p "$OUT"
if ! build_all; then
	for b in "${BOOTS[@]}"; do
		for c in ${CASES[$b]}; do
			report "$b-$c" FAIL "build failed"
		done
	done
	finish
fi
make_initramfs || { echo "initramfs failed"; exit 1; }
head -c "$SHM_SIZE" /dev/zero | tr '\0' '\245' >"$OUT/fill.bin"
for b in "${BOOTS[@]}"; do
	[ -n "${CASES[$b]:-}" ] || { echo "unknown boot '$b'"; exit 2; }
	boot "$b"
	grep -a -E "^(--- case|FAIL:|ok:|NKV-|rw:|p2p:|info:|identify:|admin:|timeout|nkv:)" "$OUT/$b.log" | tr -d '\r' |
		sed "s/^/  [$b] /"
	parse "$b"
done
finish
