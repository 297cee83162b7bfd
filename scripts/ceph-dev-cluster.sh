#!/usr/bin/env bash
# ceph-dev-cluster.sh - a throwaway single-node Ceph cluster for tests.
#
# One monitor and one OSD on 127.0.0.1 (msgr v2 only, auth none), from
# Debian's ceph-mon / ceph-osd packages, with every file (config, data,
# logs, sockets, pid files) inside DIR. No systemd, no mgr: nothing here
# needs one, and `ceph` commands that would are never issued.
#
# Clients use DIR/ceph.conf, e.g.
#   rados -c DIR/ceph.conf -p kvpool -N gpukv ls
set -uo pipefail

POOL=kvpool
MEMSTORE_MB=${NKV_CEPH_MEMSTORE_MB:-512}

usage() {
	cat <<EOF
usage: $0 start|stop|status DIR [--port N] [--bluestore] [--pool NAME]

  start DIR     create DIR if needed and start 1 mon + 1 OSD in it; pool
                '$POOL' (size 1); returns once a real object write succeeds
  stop DIR      stop the daemons this script started in DIR (OSD first)
  status DIR    print 'running' or 'stopped' (exit 0 / 3)

  --port N      monitor port (default: a free port picked at start)
  --bluestore   OSD on bluestore in a 1 GiB sparse file (survives SIGKILL)
                instead of memstore (${MEMSTORE_MB} MiB, RAM only)
  --pool NAME   pool to create (default $POOL)

Everything lives in DIR: ceph.conf, data/, log/, run/ (sockets, pids).
EOF
}

die() {
	echo "ceph-dev-cluster: $*" >&2
	exit 1
}

# Print the end of a daemon's log, so a failure explains itself.
log_tail() {
	local f
	for f in "$DIR"/log/*.log "$DIR"/log/*.out; do
		[ -s "$f" ] || continue
		echo "--- last lines of $f:" >&2
		tail -n 15 "$f" >&2
	done
}

fail() {
	echo "ceph-dev-cluster: $*" >&2
	log_tail
	stop_all
	exit 1
}

# A pid from our pid file is ours only if that process still runs a ceph
# daemon with our config: pids are reused, and we must never signal a
# stranger.
our_pid() {
	local name=$1 pid
	pid=$(cat "$DIR/run/$name.pid" 2>/dev/null) || return 1
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	# Read whole, not piped into grep -q (pipefail would see a SIGPIPE).
	grep -qF -- "$DIR/ceph.conf" <<<"$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline")" || return 1
	echo "$pid"
}

stop_one() {
	local name=$1 pid i
	pid=$(our_pid "$name") || { rm -f "$DIR/run/$name.pid"; return 0; }
	# A frozen (SIGSTOPped) daemon cannot act on SIGTERM.
	kill -CONT "$pid" 2>/dev/null
	kill -TERM "$pid" 2>/dev/null
	for i in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "ceph-dev-cluster: $name ($pid) ignored SIGTERM for 5 s, killing" >&2
		kill -KILL "$pid" 2>/dev/null
		sleep 0.1
	fi
	rm -f "$DIR/run/$name.pid"
}

# The OSD first: a monitor that goes first leaves it retrying for ages.
stop_all() {
	stop_one osd.0
	stop_one mon.a
}

# Below the kernel's ephemeral range, and free in every TCP state: a port
# the kernel handed to some client's outgoing connection (any test's
# socket) cannot be bound by the monitor, listening or not.
free_port() {
	local lo hi p i
	read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
	[ "$lo" -gt 11024 ] || lo=32768
	for i in $(seq 50); do
		p=$((10000 + RANDOM % (lo - 10000)))
		[ -n "$(ss -Htan "sport = :$p" 2>/dev/null)" ] || { echo "$p"; return 0; }
	done
	return 1
}

write_conf() {
	local fsid=$1 store=$2
	cat >"$DIR/ceph.conf" <<EOF
# Written by scripts/ceph-dev-cluster.sh: a throwaway test cluster.
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$PORT
mon initial members = a
public addr = 127.0.0.1
ms bind msgr1 = false
ms bind msgr2 = true
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = true
run dir = $DIR/run
admin socket = $DIR/run/\$name.asok
pid file = $DIR/run/\$name.pid
log file = $DIR/log/\$name.log
mon data = $DIR/data/\$name
osd data = $DIR/data/\$name
keyring = $DIR/keyring
crash dir = $DIR/crash
mon cluster log file = default=$DIR/log/\$channel.log cluster=$DIR/log/cluster.log
exporter sock dir = $DIR/run
log to stderr = false
err to stderr = true
debug ms = 0
# One OSD: pools of size 1, placement at OSD (not host) level.
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon data avail crit = 1
mon data avail warn = 2
# Fast elections and proposals: start in ~2 s instead of ~7 s.
paxos propose interval = 0.05
paxos min wait = 0.01
mon lease = 1
mon election timeout = 1
osd mon shutdown timeout = 1
osd fast shutdown = true
osd objectstore = $store
memstore device bytes = $((MEMSTORE_MB << 20))
bluestore block path = $DIR/data/osd.0/block.img
bluestore block size = $((1 << 30))
bluestore block create = true
bluestore fsck on mkfs = false
bluestore cache size = $((64 << 20))
osd memory target = $((512 << 20))
# memstore keeps the PG log in RAM: cap it or the OSD grows past 1 GB.
osd min pg log entries = 50
osd max pg log entries = 100
osd pg log trim min = 10
osd op num shards = 1
# One OSD and no peers: a PG's read lease (osd heartbeat grace x 0.8)
# must outlast any freeze a test makes (SIGSTOP, ~20-40 s under CI
# load). A size-1 PG whose lease ran out while its OSD was stopped can
# stay laggy after SIGCONT, its client ops parked in waiting_for_readable
# (Ceph tracker 61650 is such a stall); the likeliest reading of CI's
# Stores hanging 90 s after a freeze while a stat to another PG
# answered (docs/ceph.md). 120 s: a 96 s lease.
osd heartbeat grace = 120
osd op num threads per shard = 2

[client]
rados osd op timeout = 10
rados mon op timeout = 10
client mount timeout = 10
log file = $DIR/log/client.log
admin socket =
EOF
}

ceph_cmd() {
	# Never without a timeout: a command that needs a mgr hangs forever.
	timeout 10 ceph -c "$DIR/ceph.conf" "$@"
}

start_daemon() {
	local name=$1 pid
	shift
	setsid "$@" -f -c "$DIR/ceph.conf" >"$DIR/log/$name.out" 2>&1 </dev/null &
	pid=$!
	echo "$pid" >"$DIR/run/$name.pid"
	sleep 0.2
	kill -0 "$pid" 2>/dev/null || fail "$name exited at start"
}

start_mon() {
	local fsid=$1
	monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$PORT]" \
		"$DIR/data/monmap" >"$DIR/log/monmaptool.out" 2>&1 \
		|| fail "monmaptool failed: $(cat "$DIR/log/monmaptool.out")"
	ceph-mon --mkfs -i a --monmap "$DIR/data/monmap" -c "$DIR/ceph.conf" \
		>"$DIR/log/mon-mkfs.out" 2>&1 || fail "ceph-mon --mkfs failed"
	start_daemon mon.a ceph-mon -i a
}

# 0 once the monitor listens on PORT, 1 if it lost the port to someone
# else between free_port and its bind (it then exits), 2 otherwise.
mon_bound() {
	local i
	for i in $(seq 100); do
		[ -n "$(ss -Htln "sport = :$PORT" 2>/dev/null)" ] && return 0
		if ! our_pid mon.a >/dev/null; then
			grep -qs 'Address already in use' "$DIR/log/mon.a.log" "$DIR/log/mon.a.out" \
				&& return 1
			return 2
		fi
		sleep 0.1
	done
	return 2
}

# A picked port can be taken before the monitor binds it: pick again, up
# to three times. A port given by --port is used as given.
start_mon_on_a_port() {
	local fsid=$1 tries=1 rc
	[ -z "$PORT" ] || tries=0
	while :; do
		if [ "$tries" -gt 0 ]; then
			PORT=$(free_port) || die "no free TCP port found"
		fi
		write_conf "$fsid" "$STORE"
		rm -rf "$DIR/data/mon.a" "$DIR/data/monmap"
		start_mon "$fsid"
		mon_bound
		rc=$?
		[ "$rc" = 0 ] && return 0
		if [ "$rc" = 1 ] && [ "$tries" -gt 0 ] && [ "$tries" -lt 3 ]; then
			echo "ceph-dev-cluster: port $PORT was taken before the monitor bound it; picking another" >&2
			stop_one mon.a
			tries=$((tries + 1))
			continue
		fi
		fail "the monitor is not listening on 127.0.0.1:$PORT"
	done
}

start_osd() {
	local uuid id
	uuid=$(cat /proc/sys/kernel/random/uuid)
	id=$(ceph_cmd osd new "$uuid" 2>"$DIR/log/osd-new.out") \
		|| fail "'ceph osd new' failed (monitor not answering on port $PORT?)"
	[ "$id" = 0 ] || fail "'ceph osd new' gave id '$id', expected 0"
	mkdir -p "$DIR/data/osd.0"
	ceph-osd --mkfs -i 0 --osd-uuid "$uuid" -c "$DIR/ceph.conf" \
		>"$DIR/log/osd-mkfs.out" 2>&1 || fail "ceph-osd --mkfs failed"
	start_daemon osd.0 ceph-osd -i 0
}

# Usable means a real object write went through, not a health string.
wait_usable() {
	local i t0=$SECONDS
	echo probe >"$DIR/run/probe.in"
	for i in $(seq 60); do
		if timeout 5 rados -c "$DIR/ceph.conf" -p "$POOL" \
			--rados-osd-op-timeout 4 put nkv-dev-probe "$DIR/run/probe.in" \
			>"$DIR/log/probe.out" 2>&1; then
			timeout 5 rados -c "$DIR/ceph.conf" -p "$POOL" rm nkv-dev-probe \
				>/dev/null 2>&1
			return 0
		fi
		our_pid osd.0 >/dev/null || fail "the OSD died during start-up"
		[ $((SECONDS - t0)) -lt 40 ] || break
		sleep 0.2
	done
	fail "no object write succeeded within 40 s: $(tail -n 3 "$DIR/log/probe.out")"
}

cmd_start() {
	local fsid t0=$SECONDS
	STORE=memstore
	[ "$BLUESTORE" = 1 ] && STORE=bluestore
	if [ -e "$DIR/run/mon.a.pid" ] && our_pid mon.a >/dev/null; then
		die "a cluster already runs in $DIR (stop it first)"
	fi
	for b in ceph-mon ceph-osd monmaptool rados ceph; do
		command -v "$b" >/dev/null || die "$b not found (scripts/install-deps.sh installs Ceph)"
	done
	if [ -n "$PORT" ] && [ -n "$(ss -Htln "sport = :$PORT" 2>/dev/null)" ]; then
		die "port $PORT is already in use"
	fi
	# Only ever wipe a directory that is empty or one of ours.
	if [ -e "$DIR/ceph.conf" ]; then
		grep -q 'ceph-dev-cluster.sh' <<<"$(head -n 1 "$DIR/ceph.conf")" \
			|| die "$DIR/ceph.conf was not written by this script: refusing to reuse $DIR"
	elif [ -d "$DIR" ] && [ -n "$(ls -A "$DIR")" ]; then
		die "$DIR is not empty and holds no cluster of ours: refusing to use it"
	fi
	# A fresh cluster every time: old data would carry an old fsid.
	rm -rf "$DIR/data" "$DIR/log" "$DIR/run" "$DIR/crash"
	mkdir -p "$DIR/data" "$DIR/log" "$DIR/run" "$DIR/crash" || die "cannot create $DIR"
	DIR=$(cd "$DIR" && pwd)
	fsid=$(cat /proc/sys/kernel/random/uuid)
	start_mon_on_a_port "$fsid"
	start_osd
	ceph_cmd osd pool create "$POOL" 8 8 >"$DIR/log/pool.out" 2>&1 \
		|| fail "pool creation failed: $(cat "$DIR/log/pool.out")"
	ceph_cmd osd pool application enable "$POOL" nkv >/dev/null 2>&1
	wait_usable
	echo "ceph-dev-cluster: running in $DIR (mon v2:127.0.0.1:$PORT, pool $POOL, $STORE) after $((SECONDS - t0)) s"
	echo "ceph-dev-cluster: clients use -c $DIR/ceph.conf"
}

cmd_status() {
	local mon osd
	mon=$(our_pid mon.a) && osd=$(our_pid osd.0)
	if [ -n "${mon:-}" ] && [ -n "${osd:-}" ]; then
		echo "running (mon.a pid $mon, osd.0 pid $osd)"
		return 0
	fi
	if [ -n "${mon:-}" ] || our_pid osd.0 >/dev/null; then
		echo "partly running (mon.a ${mon:-down}, osd.0 $(our_pid osd.0 || echo down))"
		return 3
	fi
	echo "stopped"
	return 3
}

[ $# -ge 1 ] || { usage >&2; exit 2; }
case "$1" in
	-h|--help|help) usage; exit 0 ;;
esac
CMD=$1
shift
[ $# -ge 1 ] || { usage >&2; exit 2; }
DIR=$1
shift
PORT=""
BLUESTORE=0
while [ $# -gt 0 ]; do
	case "$1" in
		--port) [ $# -ge 2 ] || die "--port needs a number"
			[[ "$2" =~ ^[0-9]+$ ]] && [ "$2" -gt 0 ] && [ "$2" -lt 65536 ] \
				|| die "bad port '$2'"
			PORT=$2; shift 2 ;;
		--bluestore) BLUESTORE=1; shift ;;
		--pool) [ $# -ge 2 ] || die "--pool needs a name"
			POOL=$2; shift 2 ;;
		-h|--help) usage; exit 0 ;;
		*) usage >&2; die "unknown argument '$1'" ;;
	esac
done

case "$CMD" in
	start) cmd_start ;;
	stop)
		[ -d "$DIR" ] || die "no such directory: $DIR"
		DIR=$(cd "$DIR" && pwd)
		stop_all
		echo "stopped" ;;
	status)
		[ -d "$DIR" ] || { echo "stopped"; exit 3; }
		DIR=$(cd "$DIR" && pwd)
		cmd_status ;;
	*) usage >&2; die "unknown command '$CMD'" ;;
esac
