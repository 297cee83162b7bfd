#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Linux kernel as an NVMe/TCP host of nkv-target: boots Debian's
# kernel under qemu-system-x86_64 -accel tcg with a busybox initramfs that
# holds the kernel's own nvme-tcp, nvme-fabrics, nvme-core (and, for a
# first self-check, nvmet-tcp with null_blk) from /lib/modules, and
# Debian's nvme-cli with its shared libraries and the dynamic loader.
# nkv-target runs here on 127.0.0.1 (an ephemeral port, memory backend);
# the guest reaches it through QEMU user networking with restrict=on and
# one guestfwd, 10.0.2.100:4420, whose "cmd:" form starts one socat per
# guest connection (a chardev guestfwd would serve only the first, and
# NVMe/TCP opens one connection per queue); each socat records its
# connection both ways, and tests/vm/tcp_pdus.py prints every command the
# kernel sent and its status. Guest cases (tests/vm/tcp_cases.sh) print
# "NKV-CASE name PASS|FAIL|SKIP [reason]"; this prints
#   NKV-VM tcp-<case> PASS|FAIL|SKIP [reason]
# and ends "N passed, N failed, N skipped". Exit 0 only if nothing failed.
#
#   tests/vm/tcp.sh
# Env: BUILD (build root, default build), SAN (e.g. asan: the target and
# nkv-admin built with make SAN=..., under BUILD/SAN), NKV_VM_TIMEOUT (s
# for the boot, 120), NKV_KERNEL (a version under /lib/modules with an
# image in /boot).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
BUILD=${BUILD:-build}
OUT=$BUILD/vm-tcp
TIMEOUT=${NKV_VM_TIMEOUT:-120}
TAG=tcp-
SAN=${SAN:-}
BIN=$BUILD${SAN:+/$SAN}/bin
NQN=nqn.2026-11.io.nkv:vm-tcp
. tests/vm/lib.sh

# Guest cases against the guest's own nvmet, then against nkv-target;
# target-alive is the host's own check after the boot.
SELF_CASES="modules nvmet-setup nvmet-discover nvmet-connect nvmet-list-subsys nvmet-id-ctrl nvmet-ns-descs nvmet-disconnect nvmet-fwd nvmet-digest"
NKV_CASES="restricted discover connect list-subsys id-ctrl ns-descs kv-identify kv-ns kv-io disconnect rediscover digest keep-alive"
all_cases() {
	echo $SELF_CASES $NKV_CASES target-alive target-exit dmesg
}

check_prereqs() {
	find_kernel || skip_all "no Debian linux-image${NKV_KERNEL:+ for $NKV_KERNEL}"
	[ -r "/boot/vmlinuz-$KVER" ] || skip_all "/boot/vmlinuz-$KVER not readable"
	command -v qemu-system-x86_64 >/dev/null || skip_all "qemu-system-x86_64 not installed"
	BUSYBOX=$(command -v busybox) || skip_all "busybox-static not installed"
	ldd "$BUSYBOX" >/dev/null 2>&1 && skip_all "$BUSYBOX is not static (install busybox-static)"
	command -v python3 >/dev/null || skip_all "python3 not installed"
	NVME=$(command -v nvme) || skip_all "nvme-cli not installed"
	command -v socat >/dev/null || skip_all "socat not installed (the guestfwd's per-connection proxy)"
	grep -q "drivers/nvme/host/nvme-tcp.ko" "/lib/modules/$KVER/modules.dep" ||
		skip_all "$KVER has no nvme-tcp module"
}

make_initramfs() {
	local root=$OUT/root
	rm -rf "$root"
	mkdir -p "$root/bin" "$root/lib/nkv"
	cp "$BUSYBOX" "$root/bin/busybox"
	cp tests/vm/init "$root/"
	cp tests/vm/tcp_cases.sh "$root/cases.sh"
	chmod +x "$root/init"
	copy_program "$root" "$NVME" || return 1
	copy_modules "$root/lib/nkv" drivers/net/ethernet/intel/e1000/e1000 \
		drivers/nvme/host/nvme-tcp drivers/block/null_blk/null_blk \
		drivers/nvme/target/nvmet-tcp crypto/crc32c_generic || return 1
	python3 tests/vm/mkcpio.py "$root" "$OUT/initramfs.cpio"
}

TGT_PID= TGT_RC=
stop_target() {
	[ -n "$TGT_PID" ] || return 0
	kill "$TGT_PID" 2>/dev/null
	wait "$TGT_PID" 2>/dev/null
	TGT_RC=$?
	TGT_PID=
}

# start_target: nkv-target on 127.0.0.1, an ephemeral port; sets PORT
# from its log. Returns 2 when this nkv-target has no TCP listener.
start_target() {
	local t=$BIN/nkv-target
	make -s -j2 BUILD="$BUILD" SAN="$SAN" "$t" "$BIN/nkv-admin" >"$OUT/build.log" 2>&1 || { cat "$OUT/build.log"; return 1; }
	[[ $("$t" --help 2>&1) == *"--listen tcp"* ]] || return 2
	rm -f "$OUT/target.log"
	"$t" --listen tcp:127.0.0.1:0 --nqn "$NQN" --socket "$OUT/nkv.sock" --backend mem \
		--capacity 64M >"$OUT/target.log" 2>&1 &
	TGT_PID=$!
	for _ in $(seq 100); do
		PORT=$(sed -n "s/.*event=tcp_listening addr=127\.0\.0\.1 port=\([0-9][0-9]*\).*/\1/p" "$OUT/target.log" | head -1)
		[ -n "$PORT" ] && return 0
		kill -0 "$TGT_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$OUT/target.log"
	stop_target
	return 1
}

# A free port here for the hostfwd (bound, read, closed: a small race).
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

boot() {
	local fwd append="console=ttyS0 quiet panic=-1 nkv_mode=tcp"
	# Each connection's bytes, both ways, for tests/vm/tcp_pdus.py.
	rm -rf "$OUT/pdus" && mkdir -p "$OUT/pdus"
	fwd=",guestfwd=tcp:10.0.2.100:4420-cmd:sh -c 'c=\$(date +%s%N).\$\$; exec socat -lf $OUT/socat.log"
	fwd="$fwd -r $OUT/pdus/h2c.\$c -R $OUT/pdus/c2h.\$c - TCP:127.0.0.1:${PORT:-9}'"
	# The nvmet-fwd case's round trip: guestfwd out, hostfwd back in.
	fwd="$fwd,guestfwd=tcp:10.0.2.100:4421-cmd:socat -lf $OUT/socat.log - TCP:127.0.0.1:$FWD_PORT"
	fwd="$fwd,hostfwd=tcp:127.0.0.1:$FWD_PORT-10.0.2.15:4420"
	[ -n "$TGT_PID" ] && append="$append nkv_nqn=$NQN nkv_hport=$PORT"
	run_qemu tcp -accel tcg -nographic -m 512M -machine pc \
		-kernel "/boot/vmlinuz-$KVER" -initrd "$OUT/initramfs.cpio" -append "$append" \
		-netdev "user,id=n0,restrict=on$fwd" -device e1000,netdev=n0
}

# id-ctrl: the model and serial the kernel's host read (the guest printed
# them) are those nkv-admin reads over the same target's vfio-user socket.
check_id_ctrl() {
	local want got f
	"$BIN/nkv-admin" info "vfio-user:$OUT/nkv.sock" >"$OUT/info.out" 2>&1 || {
		report id-ctrl FAIL "nkv-admin info: $(head -1 "$OUT/info.out")"
		return
	}
	for f in model:mn serial:sn; do
		want=$(sed -n "s/^${f%%:*}  *//p" "$OUT/info.out" | sed 's/ *$//')
		got=$(tr -d '\r' <"$OUT/tcp.log" | sed -n "s/^tcp-id-ctrl: ${f#*:}  *: //p" | sed 's/ *$//' | tail -1)
		if [ -z "$want" ] || [ "$want" != "$got" ]; then
			report id-ctrl FAIL "${f#*:} '$got', nkv-admin says ${f%%:*} '$want'"
			return
		fi
	done
	report id-ctrl PASS
}

# Why the kernel took no namespace, from the recorded commands: Linux
# (6.1, 6.12) reads the Commands Supported and Effects log (LID 05h) for
# the namespace's command set before it sets up a namespace whose CSI is
# not 0, and drops the namespace silently when that fails.
why_no_ns() {
	local l
	# Read whole, then searched: grep -m1 in a pipe would cut the writer off.
	l=$(python3 tests/vm/tcp_pdus.py "$OUT/pdus")
	l=$(grep -m1 "GetLogPage LID 05h CSI 1 .*-> SCT" <<<"$l")
	[ -z "$l" ] || echo "; nkv-target answered ${l#*: }"
}

# keep-alive: the kernel's Keep Alive commands answered on one admin
# connection (the case's: the one with the most).
check_keep_alive() {
	local n
	n=$(python3 tests/vm/tcp_pdus.py "$OUT/pdus")
	n=$(grep ": KeepAlive -> ok" <<<"$n" | awk '{ print $2 }' | sort | uniq -c | sort -rn |
		awk 'NR == 1 { print $1 }')
	n=${n:-0}
	if [ "$n" -ge 2 ]; then
		report keep-alive PASS
	else
		report keep-alive FAIL "$n Keep Alive commands answered, 2 or more expected in 4 s"
	fi
}

parse() {
	local log=$OUT/tcp.log c r
	for c in $SELF_CASES $NKV_CASES dmesg; do
		r=$(tr -d '\r' <"$log" 2>/dev/null | sed -n "s/^NKV-CASE $c \(PASS\|FAIL\|SKIP\)\( .*\)\{0,1\}$/\1\2/p" | tail -1)
		if [ "$c" = id-ctrl ] && [ "$r" = PASS ]; then
			check_id_ctrl
		elif [ "$c" = keep-alive ] && [ "$r" = PASS ]; then
			check_keep_alive
		elif [ "$c" = kv-io ] && [ "${r%% *}" = FAIL ]; then
			report "$c" FAIL "${r#FAIL }$(why_no_ns)"
		elif [ -n "$r" ]; then
			report "$c" "${r%% *}" "$(sed -n 's/^[A-Z]* //p' <<<"$r")"
		elif [ -z "$TGT_PID" ] && [[ " $NKV_CASES " == *" $c "* ]]; then
			report "$c" "$NO_TCP_RESULT" "$NO_TCP"
		else
			report "$c" FAIL "no result (guest log $log)"
		fi
	done
}

# ICReq (PDU type 0, 128 bytes: PFV 0, HPDA 0, no digests, MAXR2T 0) to
# PORT, expecting an ICResp (type 1, 128 bytes): the target still serves.
icreq() {
	python3 - "$1" <<'PY'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(struct.pack("<BBBBIHBBI", 0, 0, 128, 0, 128, 0, 0, 0, 0) + bytes(112))
r = b""
while len(r) < 128:
    b = s.recv(128 - len(r))
    if not b:
        break
    r += b
sys.exit(0 if len(r) == 128 and r[0] == 1 and r[2] == 128 else 1)
PY
}

# After the boot: the target's process is alive, answers a fresh ICReq,
# and its log has no error line and no sanitizer report.
check_alive() {
	if ! kill -0 "$TGT_PID" 2>/dev/null; then
		report target-alive FAIL "nkv-target exited (log $OUT/target.log)"
	elif ! icreq "$PORT"; then
		report target-alive FAIL "no ICResp to a new connection on 127.0.0.1:$PORT"
	elif grep -qE "level=error|ERROR|Sanitizer|runtime error" "$OUT/target.log"; then
		grep -E "level=error|ERROR|Sanitizer|runtime error" "$OUT/target.log" | head -5
		report target-alive FAIL "the target logged an error ($OUT/target.log)"
	else
		report target-alive PASS
	fi
}

# SIGTERM: a clean shutdown, exit 0, and (under SAN) no sanitizer report,
# leaks included, after the kernel's sessions.
check_exit() {
	stop_target
	if [ "$TGT_RC" != 0 ]; then
		report target-exit FAIL "exit status $TGT_RC after SIGTERM (log $OUT/target.log)"
	elif grep -qE "Sanitizer|runtime error" "$OUT/target.log"; then
		grep -E "Sanitizer|runtime error" "$OUT/target.log" | head -5
		report target-exit FAIL "a sanitizer report ($OUT/target.log)"
	else
		report target-exit PASS
	fi
}

mkdir -p "$OUT"
check_prereqs
OUT=$OUT/$KVER
mkdir -p "$OUT"
make_initramfs || { echo "initramfs failed"; exit 1; }
start_target
case $? in
0)
	echo "nkv-target $TGT_PID on 127.0.0.1:$PORT"
	trap stop_target EXIT
	;;
2) NO_TCP="$BIN/nkv-target has no --listen (no TCP transport)" NO_TCP_RESULT=SKIP ;;
*) NO_TCP="nkv-target did not build or start" NO_TCP_RESULT=FAIL ;;
esac
FWD_PORT=$(free_port)
boot
grep -a -E "^(--- case|NKV-|tcp-|timeout)" "$OUT/tcp.log" | tr -d '\r' | sed "s/^/  [tcp] /"
parse
if [ -n "$TGT_PID" ]; then
	echo "what the kernel's host sent nkv-target (tests/vm/tcp_pdus.py):"
	python3 tests/vm/tcp_pdus.py "$OUT/pdus" | sed "s/^/  [pdus] /"
fi
if [ -z "$TGT_PID" ]; then
	report target-alive "$NO_TCP_RESULT" "$NO_TCP"
else
	check_alive
fi
if [ -z "$TGT_PID" ]; then
	report target-exit "$NO_TCP_RESULT" "$NO_TCP"
else
	check_exit
fi
finish
