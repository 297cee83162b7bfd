# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Shared by the VM runners (tests/vm/run.sh, tests/vm/tcp.sh): result
# lines, the Debian kernel, its modules for the initramfs, and a QEMU run
# with a hard timeout. Sourced, not run. The runner sets TAG, OUT, TIMEOUT
# and defines all_cases (every case name it can report, for skip_all).
PASSED=0 FAILED=0 SKIPPED=0

report() {	# report NAME RESULT [REASON]
	echo "NKV-VM $TAG$1 $2${3:+ ($3)}"
	case $2 in
	PASS) PASSED=$((PASSED + 1)) ;;
	SKIP) SKIPPED=$((SKIPPED + 1)) ;;
	*) FAILED=$((FAILED + 1)) ;;
	esac
}

finish() {
	echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
	[ $FAILED -eq 0 ]
	exit
}

skip_all() {	# skip_all REASON: every case SKIP, then finish
	local c
	for c in $(all_cases); do
		report "$c" SKIP "$1"
	done
	finish
}

# The Debian kernel: a version with an image (and, with "headers", a
# headers tree too), NKV_KERNEL or the first Debian one. Sets KVER.
find_kernel() {
	local d v need=${1:-}
	if [ -n "${NKV_KERNEL:-}" ]; then
		KVER=$NKV_KERNEL
		[ -e "/boot/vmlinuz-$KVER" ] || return 1
		[ -z "$need" ] || [ -e "/lib/modules/$KVER/build/Makefile" ]
		return
	fi
	for d in /lib/modules/*-amd64; do
		v=${d##*/}
		if [ -e "/boot/vmlinuz-$v" ] && { [ -z "$need" ] || [ -e "$d/build/Makefile" ]; }; then
			KVER=$v
			return 0
		fi
	done
	return 1
}

# copy_modules DST MOD...: each module (a path under kernel/ without .ko,
# e.g. drivers/nvme/host/nvme) and its dependencies from the guest
# kernel's own tree, decompressed, their load order in DST/modules.order.
copy_modules() {
	local dst=$1 mod mods m
	local dep=/lib/modules/$KVER/modules.dep
	shift
	: >"$dst/modules.order"
	for mod in "$@"; do
		mods=$(awk -F: -v m="kernel/$mod" \
			'$1 == m ".ko" || $1 == m ".ko.xz" { print $1 " " $2 }' "$dep")
		[ -n "$mods" ] || { echo "no module $mod in $dep"; return 1; }
		# modules.dep lists dependencies nearest first: load them in reverse.
		# Newer kernels ship them xz-compressed; busybox insmod wants them plain.
		for m in $(echo "$mods" | tr ' ' '\n' | tac); do
			m=${m%.xz}
			grep -qxF "${m##*/}" "$dst/modules.order" && continue
			if [ -e "/lib/modules/$KVER/$m.xz" ]; then
				xz -dc "/lib/modules/$KVER/$m.xz" >"$dst/${m##*/}" || return 1
			else
				cp "/lib/modules/$KVER/$m" "$dst/" || return 1
			fi
			echo "${m##*/}" >>"$dst/modules.order"
		done
	done
}

# copy_program ROOT PATH: a dynamically linked program at the same path
# in ROOT, with every library ldd names and the dynamic loader.
copy_program() {
	local root=$1 prog=$2 lib
	mkdir -p "$root${prog%/*}"
	cp -L "$prog" "$root$prog" || return 1
	for lib in $(ldd "$prog" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
		mkdir -p "$root${lib%/*}"
		cp -L "$lib" "$root$lib" || return 1
	done
}

# run_qemu NAME ARGS...: run qemu-system-x86_64 ARGS, its serial console in
# $OUT/NAME.log, killed by PID after TIMEOUT s; prints how long it ran.
run_qemu() {
	local name=$1 pid t0
	shift
	rm -f "$OUT/$name.log"
	t0=$(date +%s)
	qemu-system-x86_64 "$@" -serial "file:$OUT/$name.log" -monitor none -no-reboot \
		</dev/null >"$OUT/$name.qemu" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		if [ $(($(date +%s) - t0)) -ge "$TIMEOUT" ]; then
			echo "boot $name: timeout after $TIMEOUT s, killing QEMU $pid"
			kill "$pid" 2>/dev/null
			sleep 1
			kill -9 "$pid" 2>/dev/null
			break
		fi
		sleep 0.5
	done
	wait "$pid" 2>/dev/null
	echo "boot $name: $(($(date +%s) - t0)) s"
}
