# SPDX-License-Identifier: MIT
# Guest side of tests/vm/run.sh, sourced by /init. Each case prints one
# "NKV-CASE <name> PASS|FAIL" line that the host parses.
NKV=/lib/nkv
T=/nkv_vmtest

wait_for() {
	i=0
	while [ $i -lt 150 ]; do
		[ -e "$1" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	echo "timeout waiting for $1"
	return 1
}

driver_of() {
	l=$(readlink "/sys/bus/pci/devices/$1/driver") || return 0
	basename "$l"
}

run_case() {
	name=$1
	shift
	echo "--- case $name"
	if "$@"; then
		echo "NKV-CASE $name PASS"
	else
		echo "NKV-CASE $name FAIL"
	fi
}

load_modules() {
	for m in $(cat $NKV/modules.order); do
		insmod "$NKV/$m" || return 1
	done
	# A small pin limit so the limit case needs little memory.
	insmod $NKV/nkv.ko max_pinned_mb=8 || return 1
	# The test-only dma-buf exporter; it binds the ivshmem device if any.
	insmod $NKV/nkv_p2pexp.ko || return 1
	# The module logs quiesce at debug level; the cases count those lines.
	mount -t debugfs none /sys/kernel/debug &&
		echo "module nkv +p" > /sys/kernel/debug/dynamic_debug/control
}

P=/sys/module/nkv/parameters

# Bit 6 of the taint mask: TAINT_USER, what allow_unsafe_dma sets.
tainted_user() {
	[ $(($(cat /proc/sys/kernel/tainted) & 64)) -ne 0 ]
}

# Without an IOMMU, open is refused by default, and with allow_unsafe_dma
# still refused to a caller without CAP_SYS_RAWIO.
case_refuse_noiommu() {
	$T open /dev/nkv0 EPERM 0 || return 1
	dmesg | grep -q "open refused: no translating IOMMU domain" || return 1
	echo 1 > $P/allow_unsafe_dma
	$T open /dev/nkv0 EPERM 0 norawio
}

# allow_unsafe_dma with CAP_SYS_RAWIO opens, says so and taints the kernel.
case_unsafe_taint() {
	tainted_user && { echo "tainted before the unsafe open"; return 1; }
	$T open /dev/nkv0 0 0x8 || return 1
	tainted_user && dmesg | grep -q "opened without DMA isolation"
}

# A translating IOMMU domain with interrupt remapping, alone in its group:
# opens by default, no taint.
case_safe_open() {
	$T open /dev/nkv0 0 0x7 && ! tainted_user
}

# swiotlb=force: bouncing DMA is refused even with allow_unsafe_dma.
case_bounce() {
	echo 1 > $P/allow_unsafe_dma
	$T open /dev/nkv0 EOPNOTSUPP 0 &&
		dmesg | grep -q "open refused: swiotlb bounce buffering is forced"
}

# INTx is disabled (PCI command register bit 10) once nkv has the device.
case_intx() {
	b=$(dd if="/sys/bus/pci/devices/$PCI/config" bs=1 skip=5 count=1 2>/dev/null | od -An -tx1)
	echo "command register high byte: $b"
	[ $((0x$(echo $b) & 4)) -ne 0 ]
}

# max_pinned_mb is bounded: 0 and absurd values are refused.
case_params() {
	echo 99999999 > $P/max_pinned_mb 2>/dev/null && return 1
	echo 0 > $P/max_pinned_mb 2>/dev/null && return 1
	[ "$(cat $P/max_pinned_mb)" = 8 ] || return 1
	echo 16 > $P/max_pinned_mb && echo 8 > $P/max_pinned_mb
}

# File-backed shared mappings are not pinned: a file on ramfs.
case_filepin() {
	mkdir -p /mnt/ramfs && mount -t ramfs none /mnt/ramfs || return 1
	$T filepin /dev/nkv0 /mnt/ramfs/f
	r=$?
	umount /mnt/ramfs
	return $r
}

# Closing logs at debug level only: every quiesce line is <7>.
case_closelog() {
	n=$(dmesg -r | grep -c "controller quiesced")
	bad=$(dmesg -r | grep "controller quiesced" | grep -vc "^<7>")
	echo "quiesce lines: $n, not at debug level: $bad"
	[ "$n" -gt 0 ] && [ "$bad" -eq 0 ]
}

find_nvme() {
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/class")" = 0x010802 ] && basename "$d" && return
	done
}

# Move the controller from nvme to nkv the documented way.
case_bind() {
	wait_for /dev/nvme0n1 || return 1
	[ "$(driver_of "$PCI")" = nvme ] || return 1
	echo "$PCI" > /sys/bus/pci/drivers/nvme/unbind
	echo nkv > "/sys/bus/pci/devices/$PCI/driver_override"
	echo "$PCI" > /sys/bus/pci/drivers_probe
	wait_for /dev/nkv0 || return 1
	[ "$(driver_of "$PCI")" = nkv ] && [ ! -e /dev/nvme0n1 ]
}

# A device that is not NVMe must be refused even when forced.
case_refuse() {
	for d in /sys/bus/pci/devices/*; do
		a=$(basename "$d")
		[ "$(cat "$d/class")" != 0x010802 ] && [ -z "$(driver_of "$a")" ] && break
		a=
	done
	[ -n "$a" ] || { echo "no unbound non-NVMe device"; return 1; }
	echo "forcing $a ($(cat /sys/bus/pci/devices/$a/class))"
	echo nkv > "/sys/bus/pci/devices/$a/driver_override"
	echo "$a" > /sys/bus/pci/drivers_probe
	echo > "/sys/bus/pci/devices/$a/driver_override"
	[ -z "$(driver_of "$a")" ] && dmesg | grep -q "is not an NVMe controller"
}

# The host library and the cpu engine through nkv_dev.h, in memory mode
# $1: by device node and by PCI address alike.
case_rw() {
	uri=pcie:/dev/nkv0
	[ "$1" = 0x8 ] && uri=pcie:$PCI
	$T rw "$uri" /tmp/expect "$1" $IOMMU
}

# nkv-admin sees the controller on nkv, connects and lists its namespace
# (QEMU's is NVM, not KV); info prints what bring-up found.
case_admin() {
	nkv-admin list > /tmp/list.out 2>&1
	r=$?
	sed 's/^/admin: /' /tmp/list.out
	[ $r -eq 0 ] || return 1
	grep -q "^$PCI .*nkv */dev/nkv0" /tmp/list.out || return 1
	grep -q "nsid 1 .*NVM" /tmp/list.out || return 1
	nkv-admin info pcie:/dev/nkv0 > /tmp/info.out 2>&1 || { cat /tmp/info.out; return 1; }
	sed 's/^/admin: /' /tmp/info.out
	grep -q "transport *pcie" /tmp/info.out && ! nkv-admin info pcie:/dev/nkv9 2>/dev/null
}

# After the handback nkv-admin reports the controller on nvme, untouched.
case_admin_nvme() {
	nkv-admin list > /tmp/list.out 2>&1 || return 1
	sed 's/^/admin: /' /tmp/list.out
	grep -q "^$PCI .*nvme" /tmp/list.out && [ -e /dev/nvme0n1 ]
}

# SIGKILL the owner mid-I/O: release must quiesce and unpin; afterwards
# the controller comes up again for the next owner.
case_kill() {
	q0=$(dmesg | grep -c "controller quiesced")
	$T hammer pcie:/dev/nkv0 > /tmp/hammer.out 2>&1 &
	hp=$!
	i=0
	while ! grep -q HAMMER-RUNNING /tmp/hammer.out && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	cat /tmp/hammer.out
	grep -q HAMMER-RUNNING /tmp/hammer.out || { kill -9 $hp; return 1; }
	sleep 0.2
	kill -9 $hp
	wait $hp
	q1=$(dmesg | grep -c "controller quiesced")
	echo "quiesce messages: $q0 -> $q1"
	[ "$q1" -gt "$q0" ] || return 1
	$T rw pcie:/dev/nkv0 /tmp/expect 0x0 $IOMMU
}

case_unbind() {
	n=$(dmesg | grep -c "unbound while open")
	$T unbind /dev/nkv0 "$PCI" || return 1
	[ -z "$(driver_of "$PCI")" ] && [ ! -e /dev/nkv0 ] &&
		[ "$(dmesg | grep -c "unbound while open")" -gt "$n" ]
}

# Bound to nkv again, opened through the library, then unbound under it:
# the library's teardown must not touch the vanished register mapping.
case_libunbind() {
	echo "$PCI" > /sys/bus/pci/drivers_probe
	wait_for /dev/nkv0 || return 1
	$T libunbind pcie:/dev/nkv0 "$PCI" || return 1
	[ -z "$(driver_of "$PCI")" ] && [ ! -e /dev/nkv0 ]
}

# Give the controller back to nvme and read what nkv wrote through the
# kernel's block device.
case_handback() {
	echo > "/sys/bus/pci/devices/$PCI/driver_override"
	[ "$(driver_of "$PCI")" = nkv ] && echo "$PCI" > /sys/bus/pci/drivers/nkv/unbind
	echo "$PCI" > /sys/bus/pci/drivers_probe
	wait_for /dev/nvme0n1 || return 1
	# 2 queue pairs x 128 commands x 8 KiB from 1 MiB on: 512 pages.
	dd if=/dev/nvme0n1 of=/tmp/got bs=4096 skip=256 count=512 2>/dev/null
	cmp /tmp/expect /tmp/got
}

PE=/sys/module/nkv_p2pexp/parameters

# An NVMe Read lands in the ivshmem BAR through an imported dma-buf; the
# host checks the bytes in the file behind the BAR after the boot.
case_p2p_read() {
	wait_for /dev/nkv_p2pexp || return 1
	$T p2p pcie:/dev/nkv0 $IOMMU
}

# Both misbehaving exporters are refused, EOPNOTSUPP and a log line naming
# the exporter; the well-behaved one is taken.
case_p2p_refuse() {
	echo 1 > $PE/refuse_p2p
	$T p2pimport /dev/nkv0 EOPNOTSUPP
	r=$?
	echo 0 > $PE/refuse_p2p
	[ $r -eq 0 ] || return 1
	dmesg | grep -q "dma-buf of nkv_p2pexp: exporter refused a peer-to-peer attachment" || return 1
	echo 1 > $PE/sysmem
	$T p2pimport /dev/nkv0 EOPNOTSUPP
	r=$?
	echo 0 > $PE/sysmem
	[ $r -eq 0 ] || return 1
	dmesg | grep -q "dma-buf of nkv_p2pexp refused: it is system memory" || return 1
	$T p2pimport /dev/nkv0 0
}

# The exporter revokes an imported buffer: DMA stops at once, EIO after.
case_p2p_revoke() {
	$T p2prevoke /dev/nkv0 "$PCI" && dmesg | grep -q "dma-buf of nkv_p2pexp moves away"
}

# Close and unbind with an import held; nkv binds again afterwards.
case_p2p_teardown() {
	$T p2pteardown /dev/nkv0 "$PCI" || return 1
	echo "$PCI" > /sys/bus/pci/drivers_probe
	wait_for /dev/nkv0
}

case_dmesg() {
	! dmesg | grep -E "WARNING:|BUG:|Oops|general protection|Call Trace|DMAR:.*[Ff]ault|nkv.*did not stop"
}

run_boot() {
	load_modules || { echo "NKV-CASE modules FAIL"; return; }
	PCI=$(find_nvme)
	echo "NVMe controller at $PCI"
	case $1 in
	noiommu)
		IOMMU=
		run_case bind case_bind
		run_case refuse-noiommu case_refuse_noiommu
		run_case unsafe-taint case_unsafe_taint
		run_case admin case_admin
		run_case refuse case_refuse
		run_case badargs $T badargs /dev/nkv0
		for m in 0 8 4 f; do
			run_case rw-m$m case_rw 0x$m
		done
		run_case p2p-read case_p2p_read
		run_case p2p-refuse case_p2p_refuse
		run_case p2p-revoke case_p2p_revoke
		run_case p2p-teardown case_p2p_teardown
		run_case kill case_kill
		run_case unbind case_unbind
		run_case libunbind case_libunbind
		run_case handback case_handback
		run_case admin-nvme case_admin_nvme
		run_case closelog case_closelog
		run_case dmesg case_dmesg
		;;
	iommu)
		IOMMU=iommu
		run_case bind case_bind
		run_case intx case_intx
		run_case safe-open case_safe_open
		for m in 0 8 4; do
			run_case rw-m$m case_rw 0x$m
		done
		run_case p2p-read case_p2p_read
		run_case retain $T retain /dev/nkv0
		run_case uffd $T uffd /dev/nkv0
		run_case filepin case_filepin
		run_case fork $T fork /dev/nkv0
		run_case msix $T msix /dev/nkv0 "$PCI"
		run_case params case_params
		run_case reset $T reset /dev/nkv0 "$PCI"
		run_case kill case_kill
		run_case handback case_handback
		run_case closelog case_closelog
		run_case dmesg case_dmesg
		;;
	swiotlb)
		run_case bind case_bind
		run_case bounce case_bounce
		run_case dmesg case_dmesg
		;;
	esac
	dmesg | grep -E "nkv|DMAR" | tail -20
}
