#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The power-loss rounds of the rocksdb backend (docs/target.md; CI stage
# vm-power runs one, 20 were run by hand): nkv-target --backend rocksdb runs inside a QEMU
# guest (Debian's kernel, a busybox initramfs) on an ext4 file system on a
# virtio-blk disk with cache=none (O_DIRECT on the host: what QEMU has
# written is on the host's disk, what the guest kernel still held is not),
# while tests/vm/nkv_storm.c's clients Store and Delete 4 KiB and 2 MiB
# values. The guest's second serial port carries the clients' ack log to
# a host file. 1 to 5 s into the storm, QEMU itself is SIGKILLed: the
# whole guest dies at once, its page cache and the disk requests QEMU had
# not yet written with it. The next boot, on the same image, checks every
# key against the log of all earlier rounds (every acknowledged Store byte
# for byte or the one in flight, every acknowledged Delete absent unless a
# Store was in flight after it, no value never given), then storms again.
# One line per round:
#   NKV-POWER round N: PASS|FAIL ...
# and a summary; exit 0 only if every check passed.
#
#   tests/vm/powerloss.sh [ROUNDS]        (default 3)
# Env: BUILD (default build), NKV_KERNEL (a version with an image in
# /boot, default the first Debian one), NKV_VM_ACCEL (kvm or tcg; default
# tcg; kvm adds -cpu host), NKV_POWER_DIR (where the disk image
# goes, default $BUILD/vm/power: its file system must take O_DIRECT),
# NKV_VM_TIMEOUT (s per boot, 300), NKV_POWER_SYNC (nkv-target's --sync,
# default always; none is the negative control: the WAL is left in the
# guest's page cache, so a round should lose acknowledged commands).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
ROUNDS=${1:-3}
OUT=${NKV_POWER_DIR:-$BUILD/vm/power}
TIMEOUT=${NKV_VM_TIMEOUT:-300}
IMG=$OUT/disk.img

die() {
	echo "NKV-POWER setup FAIL ($*)"
	exit 1
}

# Something this needs is absent: said by name, not a failure.
skip() {
	echo "NKV-POWER rounds SKIP ($*)"
	exit 0
}

find_kernel() {
	local k
	if [ -n "${NKV_KERNEL:-}" ]; then
		KVER=$NKV_KERNEL
	else
		for k in /boot/vmlinuz-*-amd64; do
			KVER=${k#/boot/vmlinuz-}
			break
		done
	fi
	[ -n "${KVER:-}" ] && [ -r "/boot/vmlinuz-$KVER" ] && [ -e "/lib/modules/$KVER/modules.dep" ]
}

check_prereqs() {
	[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number"
	find_kernel || skip "no readable /boot/vmlinuz-* with its /lib/modules tree${NKV_KERNEL:+ for $NKV_KERNEL}"
	command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed"
	BUSYBOX=$(command -v busybox) || skip "busybox-static not installed"
	ldd "$BUSYBOX" >/dev/null 2>&1 && skip "$BUSYBOX is not static (install busybox-static)"
	command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 not installed (e2fsprogs)"
	command -v python3 >/dev/null || skip "python3 not installed"
	# TCG by default: on the nested VMs this was written on, KVM guests
	# either sat in the firmware (the default CPU model) or QEMU aborted
	# setting an MSR (-cpu host). Both tried.
	ACCEL=${NKV_VM_ACCEL:-tcg}
	case $ACCEL in
	tcg) ;;
	kvm) [ -w /dev/kvm ] || die "NKV_VM_ACCEL=kvm but /dev/kvm cannot be opened" ;;
	*) die "NKV_VM_ACCEL=$ACCEL: kvm or tcg" ;;
	esac
}

# The modules for the virtio disk and ext4, with their dependencies, in
# load order (modules.dep lists a module's dependencies nearest first).
copy_modules() {
	local dst=$1 want m mods
	local dep=/lib/modules/$KVER/modules.dep
	: >"$dst/modules.order"
	for want in virtio_pci virtio_blk crc32c_generic ext4; do
		mods=$(awk -F: -v w="$want" '{ n = $1; sub(/.*\//, "", n); sub(/\.ko(\.xz|\.zst)?$/, "", n) }
			n == w { print $1 " " $2 }' "$dep")
		[ -n "$mods" ] || return 1
		for m in $(echo "$mods" | tr ' ' '\n' | tac); do
			grep -qx "$(basename "${m%.xz}")" "$dst/modules.order" && continue
			case $m in
			*.xz) xz -dc "/lib/modules/$KVER/$m" >"$dst/$(basename "${m%.xz}")" || return 1 ;;
			*) cp "/lib/modules/$KVER/$m" "$dst/" || return 1 ;;
			esac
			basename "${m%.xz}" >>"$dst/modules.order"
		done
	done
}

# nkv-target is linked against the host's shared librocksdb and librados
# (no static librados exists): it goes in with every library ldd names and
# the loader, at their own paths.
copy_target() {
	local root=$1 lib dirs=""
	mkdir -p "$root/bin"
	cp "$BUILD/bin/nkv-target" "$BUILD/vm/nkv_storm" "$root/bin/"
	for lib in $(ldd "$BUILD/bin/nkv-target" | awk '$2 == "=>" { print $3 } $1 ~ /^\// { print $1 }'); do
		[ -e "$lib" ] || return 1
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
		case ":$dirs:" in *":$(dirname "$lib"):"*) ;; *) dirs=${dirs:+$dirs:}$(dirname "$lib") ;; esac
	done
	echo "$dirs" >"$root/lib/nkv/libdirs"
}

make_initramfs() {
	local root=$OUT/root
	rm -rf "$root"
	mkdir -p "$root/bin" "$root/lib/nkv" "$root/mnt"
	cp "$BUSYBOX" "$root/bin/busybox"
	cp tests/vm/power_init "$root/init"
	chmod +x "$root/init"
	copy_modules "$root/lib/nkv" || die "modules for virtio-blk and ext4 not found for $KVER"
	copy_target "$root" || die "a library of nkv-target not found"
	python3 tests/vm/mkcpio.py "$root" "$OUT/base.cpio"
}

# The disk: O_DIRECT (cache=none) must work where it lies.
make_disk() {
	rm -f "$IMG"
	truncate -s 2G "$IMG"
	mkfs.ext4 -q -F "$IMG" || die "mkfs.ext4 $IMG failed"
	python3 - "$IMG" <<'EOF' || die "O_DIRECT refused on $(dirname "$IMG")'s file system: set NKV_POWER_DIR"
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 4096)
os.preadv(fd, [buf], 0)
EOF
}

# The initramfs of boot N: the base, then an archive holding /hist, every
# earlier boot's ack log in order (the kernel unpacks archives one after
# the other).
boot_initrd() {
	local n=$1 i
	rm -rf "$OUT/hist" && mkdir -p "$OUT/hist"
	for ((i = 1; i < n; i++)); do
		cat "$OUT/acks-$i.log"
	done >"$OUT/hist/hist"
	python3 tests/vm/mkcpio.py "$OUT/hist" "$OUT/hist.cpio"
	cat "$OUT/base.cpio" "$OUT/hist.cpio" >"$OUT/initrd.cpio"
}

# boot N MODE: run the guest; in storm mode SIGKILL QEMU 1-5 s after the
# first acknowledged command, else wait for its power-off.
boot() {
	local n=$1 mode=$2 pid t0 kill_at="" now
	local con=$OUT/console-$n.log acks=$OUT/acks-$n.log
	boot_initrd "$n"
	rm -f "$con" "$acks"
	t0=$(date +%s)
	qemu-system-x86_64 -accel "$ACCEL" "${CPU[@]}" -nographic -m 2G -smp 2 -machine pc \
		-kernel "/boot/vmlinuz-$KVER" -initrd "$OUT/initrd.cpio" \
		-append "console=ttyS0 quiet panic=-1 nkv_round=$n nkv_power=$mode nkv_sync=$SYNC" \
		-drive "file=$IMG,if=none,id=d0,format=raw,cache=none,aio=$AIO" \
		-device virtio-blk-pci,drive=d0 \
		-serial "file:$con" -serial "file:$acks" -monitor none -no-reboot \
		</dev/null >"$OUT/qemu-$n.log" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		now=$(date +%s%N)
		if [ "$mode" = storm ] && [ -z "$kill_at" ] && grep -q "^A " "$acks" 2>/dev/null; then
			DELAY_MS=$((1000 + RANDOM % 4001))
			kill_at=$((now + DELAY_MS * 1000000))
		fi
		if [ -n "$kill_at" ] && [ "$now" -ge "$kill_at" ]; then
			kill -9 "$pid"
			break
		fi
		if [ $(($(date +%s) - t0)) -ge "$TIMEOUT" ]; then
			echo "boot $n: timeout after $TIMEOUT s, killing QEMU $pid"
			kill -9 "$pid"
			break
		fi
		sleep 0.05
	done
	wait "$pid" 2>/dev/null
	BOOT_S=$(($(date +%s) - t0))
	KILLED=$([ -n "$kill_at" ] && echo 1 || echo 0)
}

# What boot N's console says of the check of the rounds before it.
check_result() {
	local con=$OUT/console-$1.log
	if grep -aq "^NKV-POWER check PASS" < <(tr -d '\r' <"$con"); then
		CHECK=PASS
	else
		CHECK=FAIL
	fi
	CHECK_LINE=$(tr -d '\r' <"$con" | grep -a -E "^(check:|FAIL:|NKV-POWER FAIL)" | tr '\n' ' ' | sed 's/ $//')
}

check_prereqs
mkdir -p "$OUT"
make -s -j2 BUILD="$BUILD" "$BUILD/bin/nkv-target" vm-guest >"$OUT/build.log" 2>&1 ||
	{ cat "$OUT/build.log"; die "build failed"; }
make_initramfs
make_disk
AIO=native
SYNC=${NKV_POWER_SYNC:-always}
[[ $SYNC =~ ^(always|none)$ ]] || die "NKV_POWER_SYNC=$SYNC: always or none"
CPU=()
[ "$ACCEL" = kvm ] && CPU=(-cpu host)
echo "powerloss: kernel $KVER, $(qemu-system-x86_64 --version | head -1), accel $ACCEL," \
	"disk $IMG (ext4, virtio-blk, cache=none, aio=$AIO), --sync $SYNC, $ROUNDS rounds"
FAILED=0 ACKED=0
for ((r = 1; r <= ROUNDS + 1; r++)); do
	mode=storm
	[ "$r" -gt "$ROUNDS" ] && mode=check
	boot "$r" "$mode"
	if [ "$r" -gt 1 ]; then
		check_result "$r"
		echo "NKV-POWER round $((r - 1)): $CHECK ($CHECK_LINE)"
		[ "$CHECK" = PASS ] || FAILED=$((FAILED + 1))
		[ "$CHECK" = PASS ] || break
	fi
	if [ "$mode" = storm ]; then
		n=$(grep -c "^A .* E$" "$OUT/acks-$r.log")
		ACKED=$((ACKED + n))
		if [ "$KILLED" = 1 ]; then
			echo "boot $r: storm of $n acknowledged commands, QEMU SIGKILLed $DELAY_MS ms after the first ($BOOT_S s boot)"
		else
			echo "NKV-POWER round $r: FAIL (the storm never started in $BOOT_S s; $OUT/console-$r.log)"
			tr -d '\r' <"$OUT/console-$r.log" | grep -a "NKV-POWER\|FAIL" | sed 's/^/  /'
			FAILED=$((FAILED + 1))
			break
		fi
	fi
done
echo "powerloss: $ROUNDS rounds, $ACKED acknowledged commands checked, $FAILED failed"
[ "$FAILED" -eq 0 ]
