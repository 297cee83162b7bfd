# SPDX-License-Identifier: MIT
# Guest side of tests/vm/tcp.sh, sourced by /init as /cases.sh: the Linux
# kernel's NVMe/TCP host (nvme-tcp) driven by nvme-cli, first against the
# guest kernel's own nvmet-tcp target on the loopback (proves the modules,
# nvme-cli and its libraries, no nkv involved), then against nkv-target on
# the host through QEMU's guestfwd at 10.0.2.100:4420. Each case prints
# "NKV-CASE <name> PASS|FAIL"; facts for the host to keep print as
# "tcp-info: ...".
NKV=/lib/nkv
export PATH=/bin:/usr/sbin
SELF_NQN=nqn.2026-11.io.nkv:vm-nvmet
NKV_ADDR=10.0.2.100
NKV_PORT=4420

arg() {	# arg NAME: the value of NAME= on the kernel command line
	sed -n "s/.* $1=\([^ ]*\).*/\1/p" /proc/cmdline
}

run_case() {
	name=$1
	shift
	echo "--- case $name"
	rm -f /tmp/skip
	"$@"
	case $? in
	0) echo "NKV-CASE $name PASS" ;;
	2) echo "NKV-CASE $name SKIP $(cat /tmp/skip)" ;;
	*) echo "NKV-CASE $name FAIL" ;;
	esac
}

# say FILE: a command's output into the console log, prefixed.
say() {
	sed "s/^/tcp-info: /" "$1"
}

load_modules() {
	for m in $(cat $NKV/modules.order); do
		insmod "$NKV/$m" || return 1
	done
	mount -t configfs none /sys/kernel/config || return 1
	ip link set lo up &&
		ip addr add 10.0.2.15/24 dev eth0 && ip link set eth0 up || return 1
	mkdir -p /etc/nvme
	echo nqn.2014-08.org.nvmexpress:uuid:6e6b7600-0000-4000-8000-000000000044 > /etc/nvme/hostnqn
	echo 6e6b7600-0000-4000-8000-000000000044 > /etc/nvme/hostid
}

# The guest kernel's own target: null_blk's /dev/nullb0 as namespace 1 of
# SELF_NQN on port 4420 of every guest address.
nvmet_setup() {
	C=/sys/kernel/config/nvmet
	S=$C/subsystems/$SELF_NQN
	mkdir "$S" && echo 1 > "$S/attr_allow_any_host" || return 1
	mkdir "$S/namespaces/1" && echo -n /dev/nullb0 > "$S/namespaces/1/device_path" &&
		echo 1 > "$S/namespaces/1/enable" || return 1
	mkdir "$C/ports/1" || return 1
	echo tcp > "$C/ports/1/addr_trtype"
	echo ipv4 > "$C/ports/1/addr_adrfam"
	echo 0.0.0.0 > "$C/ports/1/addr_traddr"
	echo 4420 > "$C/ports/1/addr_trsvcid"
	ln -s "$S" "$C/ports/1/subsystems/$SELF_NQN"
}

# ctrl_of NQN: the nvmeX whose subsystem is NQN (empty when none).
ctrl_of() {
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c/subsysnqn" ] && [ "$(cat "$c/subsysnqn")" = "$1" ] && basename "$c" && return
	done
}

case_discover() {	# ADDR PORT NQN
	nvme discover -t tcp -a "$1" -s "$2" > /tmp/disc.out 2>&1
	r=$?
	say /tmp/disc.out
	[ $r -eq 0 ] && grep -q "subnqn: *$3\$" /tmp/disc.out
}

case_connect() {	# ADDR PORT NQN
	t0=$(date +%s)
	nvme connect -t tcp -a "$1" -s "$2" -n "$3" > /tmp/conn.out 2>&1
	r=$?
	say /tmp/conn.out
	echo "tcp-info: connect took $(($(date +%s) - t0)) s, exit $r"
	[ $r -eq 0 ] || return 1
	CTRL=$(ctrl_of "$3")
	[ -n "$CTRL" ] || return 1
	i=0
	while [ "$(cat /sys/class/nvme/$CTRL/state)" != live ] && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	echo "tcp-info: $CTRL state $(cat /sys/class/nvme/$CTRL/state) transport $(cat /sys/class/nvme/$CTRL/transport) address $(cat /sys/class/nvme/$CTRL/address)"
	[ "$(cat /sys/class/nvme/$CTRL/state)" = live ]
}

case_list_subsys() {	# ADDR PORT NQN
	nvme list-subsys > /tmp/ls.out 2>&1
	r=$?
	say /tmp/ls.out
	[ $r -eq 0 ] && grep -q "NQN=$3" /tmp/ls.out &&
		grep -q "$CTRL tcp traddr=$1,trsvcid=$2.* live" /tmp/ls.out
}

# id-ctrl: the fields print here; the host compares them with the target's.
case_id_ctrl() {	# NQN
	nvme id-ctrl "/dev/$CTRL" > /tmp/idc.out 2>&1
	r=$?
	grep -E "^(vid|sn|mn|fr|lpa|oaes|cntlid|ver|ctratt|cntrltype|oncs|sgls|ioccsz|iorcsz|icdoff|msdbd|subnqn|kas|maxcmd|nn|mdts) " /tmp/idc.out |
		sed "s/^/tcp-id-ctrl: /"
	[ $r -eq 0 ] && grep -q "^subnqn *: $1\$" /tmp/idc.out
}

case_ns_descs() {	# CSI (nvme-cli prints it in hex from 0x1 on)
	nvme ns-descs "/dev/$CTRL" -n 1 > /tmp/nsd.out 2>&1
	r=$?
	say /tmp/nsd.out
	[ $r -eq 0 ] && grep -qE "^csi *: *(0x)?$1\$" /tmp/nsd.out
}

# Identify CNS 05h, CSI 01h (CDW11 bits 31:24): the KV namespace data.
case_kv_identify() {
	nvme admin-passthru "/dev/$CTRL" --opcode=0x06 --namespace-id=1 --cdw10=0x05 \
		--cdw11=0x01000000 --data-len=4096 --read > /tmp/kvid.out 2>&1
	r=$?
	head -12 /tmp/kvid.out | sed "s/^/tcp-kv-identify: /"
	[ $r -eq 0 ] && grep -q "^0000: " /tmp/kvid.out
}

# A KV namespace is no block device: nvme-core scans it, warns about its
# command set and makes no nvmeXnY; the dmesg lines say what it did.
case_kv_ns() {
	sleep 1	# the namespace scan runs after connect returns
	dmesg | grep "nvme $CTRL:" | tail -4 | sed "s/^/tcp-dmesg: /"
	for d in /sys/class/nvme/$CTRL/nvme*n* /dev/ng*n*; do
		[ -e "$d" ] && echo "tcp-info: namespace node $d"
	done
	blk=0
	for d in /dev/nvme*n*; do
		[ -b "$d" ] && echo "tcp-info: block device $d" && blk=1
	done
	[ $blk -eq 0 ]
}

case_disconnect() {	# NQN
	nvme disconnect -n "$1" > /tmp/disc2.out 2>&1
	r=$?
	say /tmp/disc2.out
	[ $r -eq 0 ] && grep -q "disconnected 1 controller" /tmp/disc2.out &&
		[ ! -e "/sys/class/nvme/$CTRL" ]
}

# The guest's nvmet again, but the long way round: 10.0.2.100:4421 is a
# guestfwd whose socat goes to the host's 127.0.0.1:FWD, a hostfwd back
# to the guest's 10.0.2.15:4420. With a write and a poll queue beside the
# default one the host opens an admin and three I/O connections, each its
# own socat: the path nkv-target's cases take, proven without nkv.
case_fwd() {
	nvme connect -t tcp -a 10.0.2.100 -s 4421 -n $SELF_NQN --nr-write-queues=1 \
		--nr-poll-queues=1 > /tmp/fwd.out 2>&1
	r=$?
	say /tmp/fwd.out
	[ $r -eq 0 ] || return 1
	CTRL=$(ctrl_of $SELF_NQN)
	# 6402000A:1145 is 10.0.2.100:4421 in /proc/net/tcp (the address in
	# host byte order); state 01 is established.
	n=$(grep -c " 6402000A:1145 01 " /proc/net/tcp)
	echo "tcp-info: $CTRL through the guestfwd: $n TCP connections, $(cat /sys/class/nvme/$CTRL/queue_count) queues"
	wait_blk /dev/${CTRL}n1 &&
		dd if=/dev/${CTRL}n1 of=/dev/null bs=64k count=16 2>/dev/null || r=1
	nvme disconnect -n $SELF_NQN > /tmp/fwd.out 2>&1 || r=1
	say /tmp/fwd.out
	[ $r -eq 0 ] && [ "$n" -ge 4 ]
}

# Header and data digests (CRC32C, crc32c_generic loaded): connect with
# -g -G, one data-carrying admin command (Identify through ns-descs), and
# for nvmet a 1 MiB read; then disconnect.
case_digest() {	# ADDR PORT NQN
	nvme connect -t tcp -a "$1" -s "$2" -n "$3" -g -G > /tmp/dg.out 2>&1
	r=$?
	say /tmp/dg.out
	[ $r -eq 0 ] || return 1
	CTRL=$(ctrl_of "$3")
	[ -n "$CTRL" ] || return 1
	# Each queue's digest transform holds a reference on the CRC32C module.
	n=$(cat /sys/module/crc32c_generic/refcnt)
	echo "tcp-info: $CTRL with digests: crc32c_generic refcnt $n"
	[ "$n" -gt 0 ] || r=1
	nvme ns-descs "/dev/$CTRL" -n 1 > /tmp/dg.out 2>&1 || r=1
	say /tmp/dg.out
	if [ "$3" = $SELF_NQN ]; then
		wait_blk /dev/${CTRL}n1 &&
			dd if=/dev/${CTRL}n1 of=/dev/null bs=64k count=16 2>/dev/null || r=1
	fi
	nvme disconnect -n "$3" > /tmp/dg.out 2>&1 || r=1
	say /tmp/dg.out
	return $r
}

# KV commands from the kernel host, by io-passthru: a Store of "value"
# under the inline key "key", then a Retrieve compared with it, through
# the generic node /dev/ngXnY the kernel makes for a KV namespace (no
# block device). Without the node (a controller that refuses log page
# 05h gets its namespace dropped) the kernel refuses them on the
# controller node (ENOTTY) before anything is sent: FAIL.
case_kv_io() {
	ng=
	for d in /dev/ng*n1; do
		[ -c "$d" ] && ng=${d#/dev/} && break
	done
	dev=/dev/$CTRL
	[ -n "$ng" ] && dev=/dev/$ng
	echo "tcp-info: generic namespace node: ${ng:-none}; commands to $dev"
	printf value > /tmp/v
	# Store: CDW10 value size, CDW11 KL 3, CDW2 the key bytes "key".
	nvme io-passthru $dev --opcode=0x01 --namespace-id=1 --cdw10=5 --cdw11=3 \
		--cdw2=0x0079656b --data-len=5 --input-file=/tmp/v --write > /tmp/kio.out 2>&1
	r=$?
	say /tmp/kio.out
	# nkv-target answers log page 05h, after which the kernel takes the
	# KV namespace as a generic node: without one the I/O went nowhere.
	[ -n "$ng" ] || echo "tcp-info: no /dev/ngXn1: the kernel set up no namespace for nsid 1"
	[ -n "$ng" ] && [ $r -eq 0 ] || return 1
	# Retrieve into a 5-byte buffer (CDW10), raw to a file.
	nvme io-passthru $dev --opcode=0x02 --namespace-id=1 --cdw10=5 --cdw11=3 \
		--cdw2=0x0079656b --data-len=5 --read -b > /tmp/got 2> /tmp/kio.out
	r=$?
	say /tmp/kio.out
	[ $r -eq 0 ] && cmp /tmp/v /tmp/got
}

# Keep Alive: a 2 s KATO (-k 2); the kernel sends Keep Alive within it
# (the host counts them in the recorded stream) and the controller is
# still live after 4 s, then disconnects.
case_keep_alive() {	# ADDR PORT NQN
	nvme connect -t tcp -a "$1" -s "$2" -n "$3" -k 2 > /tmp/ka.out 2>&1
	r=$?
	say /tmp/ka.out
	[ $r -eq 0 ] || return 1
	CTRL=$(ctrl_of "$3")
	[ -n "$CTRL" ] || return 1
	sleep 4
	s=$(cat /sys/class/nvme/$CTRL/state)
	echo "tcp-info: $CTRL after 4 s with a 2 s KATO: $s"
	nvme disconnect -n "$3" > /tmp/ka.out 2>&1 || r=1
	say /tmp/ka.out
	[ $r -eq 0 ] && [ "$s" = live ]
}

# restrict=on: the host's own port of nkv-target, through the gateway
# alias 10.0.2.2 (which without restrict reaches the host's 127.0.0.1),
# does not answer; only the guestfwd leads out.
case_restricted() {	# HOSTPORT
	if nc -w 2 10.0.2.2 "$1" < /dev/null > /dev/null 2>&1; then
		echo "tcp-info: 10.0.2.2:$1 answered"
		return 1
	fi
	echo "tcp-info: 10.0.2.2:$1 unreachable"
}

wait_blk() {
	i=0
	while [ ! -b "$1" ] && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -b "$1" ]
}

case_dmesg() {
	! dmesg | grep -E "WARNING:|BUG:|Oops|general protection|Call Trace"
}

run_boot() {
	load_modules || { echo "NKV-CASE modules FAIL"; return; }
	echo "NKV-CASE modules PASS"
	run_case nvmet-setup nvmet_setup
	run_case nvmet-discover case_discover 127.0.0.1 4420 $SELF_NQN
	run_case nvmet-connect case_connect 127.0.0.1 4420 $SELF_NQN
	run_case nvmet-list-subsys case_list_subsys 127.0.0.1 4420 $SELF_NQN
	run_case nvmet-id-ctrl case_id_ctrl $SELF_NQN
	run_case nvmet-ns-descs case_ns_descs 0
	run_case nvmet-disconnect case_disconnect $SELF_NQN
	run_case nvmet-fwd case_fwd
	run_case nvmet-digest case_digest 127.0.0.1 4420 $SELF_NQN
	NQN=$(arg nkv_nqn)
	if [ -n "$NQN" ]; then
		run_case restricted case_restricted "$(arg nkv_hport)"
		run_case discover case_discover $NKV_ADDR $NKV_PORT "$NQN"
		run_case connect case_connect $NKV_ADDR $NKV_PORT "$NQN"
		run_case list-subsys case_list_subsys $NKV_ADDR $NKV_PORT "$NQN"
		run_case id-ctrl case_id_ctrl "$NQN"
		run_case ns-descs case_ns_descs 1
		run_case kv-identify case_kv_identify
		run_case kv-ns case_kv_ns
		run_case kv-io case_kv_io
		run_case disconnect case_disconnect "$NQN"
		run_case rediscover case_discover $NKV_ADDR $NKV_PORT "$NQN"
		run_case digest case_digest $NKV_ADDR $NKV_PORT "$NQN"
		run_case keep-alive case_keep_alive $NKV_ADDR $NKV_PORT "$NQN"
	fi
	run_case dmesg case_dmesg
}
