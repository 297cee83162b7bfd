#!/usr/bin/env bash
# Installs every Debian 12 package nkv builds, tests or benchmarks with.
# Idempotent: packages already present are left alone. Needs root (or sudo).
set -euo pipefail

# Grouped by the part that needs them, so a reader sees why each is here.
# core: build, tests (Criterion), sanitizers and libFuzzer (clang's runtime),
# the test and benchmark scripts (python3), the prefix_cache example's
# XXH3-128 block keys (libxxhash-dev; its SHA-256 ones: libssl-dev below),
# nkv-target's control socket and nkv-admin rpc (libjson-c-dev: JSON-RPC
# parsed by a kept library, never by hand; docs/rpc.md), nkv-target's
# metrics endpoint (libmicrohttpd-dev: its HTTP server; docs/metrics.md),
# its --config file (libinih-dev: the INI parser) and its readiness to
# systemd (libsystemd-dev: sd_notify; docs/service.md).
core=(build-essential pkg-config clang libclang-rt-14-dev libcriterion-dev
      python3 libxxhash-dev libjson-c-dev libmicrohttpd-dev libinih-dev libsystemd-dev)
gpu=(hipcc libamdhip64-dev)
ceph=(librados-dev ceph-mon ceph-osd ceph-common)
# rocksdb: nkv-target's persistent local backend (--backend rocksdb).
rocksdb=(librocksdb-dev)
# tcp: nkv-target's NVMe/TCP transport and its PDU codec (src/nvme-tcp):
# header and data digests are CRC32C, which ISA-L computes with the CPU's
# CRC instructions (crc32_iscsi).
tcp=(libisal-dev)
# exec: nkv-target's Exec modules (docs/exec.md) run in Lua 5.3, the
# version Ceph's cls_lua links (liblua5.3-dev); their SHA-256 digests by
# OpenSSL's libcrypto (libssl-dev).
exec=(liblua5.3-dev libssl-dev)
# kmod: the pcie transport's discovery, and the VM proof (Debian's kernel
# and headers, QEMU, a busybox initramfs). nvme-cli (2.3 in Debian 12):
# the Linux kernel as nkv-target's NVMe/TCP host in the VM (tests/vm/
# tcp.sh packs it and its libraries into the initramfs); socat: the
# per-connection proxy of that VM's guestfwd (NVMe/TCP opens one
# connection per queue, a chardev guestfwd serves one).
kmod=(libpciaccess-dev qemu-system-x86 linux-headers-amd64 linux-image-amd64
      busybox-static nvme-cli socat)
# bench: plots; libcrypto (libssl-dev) for nkv-bench --key-order sha256.
bench=(gnuplot-nox libssl-dev)
# python: the nkv package's tests (python/tests, the python stage) under
# Debian's python3: numpy for regions as arrays, torch for tensors over
# them (about 76 MB to download), xxhash for nkv.kvcache's XXH3-128 keys,
# pytest. Debian packages only: PEP 668 keeps pip out of the system.
python=(python3-numpy python3-torch python3-xxhash python3-pytest)

# observe: test_metrics checks a scrape with promtool and scrapes the
# target with a real Prometheus server (both from Debian's prometheus);
# test_service runs systemd-analyze verify (systemd, on every Debian).
observe=(prometheus)

want=("${core[@]}" "${gpu[@]}" "${ceph[@]}" "${rocksdb[@]}" "${tcp[@]}" "${exec[@]}" "${kmod[@]}" "${bench[@]}"
      "${python[@]}" "${observe[@]}")
if [ $# -gt 0 ]; then
	echo "usage: $0 (installs every package nkv builds, tests and benchmarks with)" >&2
	exit 2
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
updated=0
apt_update() {
	[ "$updated" = 1 ] && return 0
	$sudo apt-get update -qq
	updated=1
}
installed() {
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

# The second kernel Debian 12 offers (6.12, from its security updates): the
# VM stage vm-6.12 proves nkv.ko on it, and is skipped by name where the
# configured archive does not carry it, so it is wanted only if it does.
# A fresh machine's package lists may be empty or stale, and then know no
# candidate: they are updated before the archive is asked.
k612=(linux-image-6.12-amd64 linux-headers-6.12-amd64)
if ! installed "${k612[0]}" || ! installed "${k612[1]}"; then
	apt_update
	for p in "${k612[@]}"; do
		# Read whole, then matched: grep -q on the pipe would end it early
		# and pipefail would count apt-cache's SIGPIPE as "no candidate".
		policy=$(apt-cache policy "$p" 2>/dev/null || true)
		[[ "$policy" =~ Candidate:\ [0-9] ]] && want+=("$p")
	done
fi

missing=()
for p in "${want[@]}"; do
	installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#want[@]} packages present"
	exit 0
fi

echo "install-deps: installing ${missing[*]}"
apt_update
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
