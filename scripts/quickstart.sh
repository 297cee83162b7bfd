#!/usr/bin/env bash
# The README's quick start on a fresh Debian 12 machine: install the Debian
# packages (scripts/install-deps.sh, root or sudo; NKV_SKIP_DEPS=1 skips
# it), build the library and tools, then run the main job:
#
#   build/bin/nkv-bench --kv-op retrieve --memory-mode 8
#
# nkv-bench starts its own nkv-target (mem backend) as threads on a private
# socket, stores its keys (the target starts empty), then measures 4 KiB
# Retrieves in wave batches of 64 with values placed in "VRAM" (without a
# GPU: the emulated device arena, as its report says), verifying every byte.
# Extra arguments go to nkv-bench (e.g. --json, --batch-size 8).
# NKV_BUILD=DIR builds there instead of build/.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${NKV_BUILD:-build}

if [ "${NKV_SKIP_DEPS:-0}" != 1 ]; then
	scripts/install-deps.sh
fi
echo "quickstart: building (make lib programs) ..."
mkdir -p "$B"
if ! make -j"$(nproc)" BUILD="$B" lib programs >"$B/quickstart.log" 2>&1; then
	tail -20 "$B/quickstart.log" >&2
	echo "quickstart: build failed; full log in $B/quickstart.log" >&2
	exit 1
fi
echo "quickstart: $B/bin/nkv-bench --kv-op retrieve --memory-mode 8 $*"
exec "$B/bin/nkv-bench" --kv-op retrieve --memory-mode 8 "$@"
