#!/usr/bin/env bash
# Installs every Debian 12 package nkv builds, tests or benchmarks with.
# Idempotent: packages already present are left alone. Needs root (or sudo).
set -euo pipefail

# Grouped by the part that needs them, so a reader sees why each is here.
core=(build-essential pkg-config clang lld libclang-rt-14-dev libcriterion-dev
      python3)
gpu=(hipcc libamdhip64-dev)
ceph=(librados-dev ceph-mon ceph-osd ceph-common)
kmod=(libpciaccess-dev qemu-system-x86 linux-headers-amd64 linux-image-amd64
      busybox-static cpio kmod nvme-cli)
bench=(gnuplot-nox)

want=("${core[@]}" "${gpu[@]}" "${ceph[@]}" "${kmod[@]}" "${bench[@]}")
case "${1:-all}" in
	core) want=("${core[@]}") ;;
	all) ;;
	*) echo "usage: $0 [all|core]" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
		|| missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#want[@]} packages present"
	exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
