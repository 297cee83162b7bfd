#!/bin/bash
# SPDX-License-Identifier: MIT
# front_exec.sh - Exec through libnkv's tcp: front (forwarded to the
# remote, which runs the module next to the value) beside a Retrieve
# through the same front: 32 MiB blocks (8 layers x 8 heads), one TP
# rank's heads (1/8) by examples/exec/slice.lua, batch 1, alternated
# ROUNDS times (docs/bench.md, "Exec through a front").
#
#   bench/exec/front_exec.sh [BUILD [ROUNDS]]     (from the source tree)
set -euo pipefail
B=${1:-build}
ROUNDS=${2:-5}
MOD=examples/exec/slice.lua
[ -x "$B/bin/nkv-bench" ] && [ -x "$B/bin/nkv-target" ] || { echo "front_exec.sh: build $B first (make)" >&2; exit 2; }
D=$(mktemp -d /tmp/nkv-front-exec.XXXXXX)
RP=""
cleanup() { [ -n "$RP" ] && kill "$RP" 2>/dev/null && wait "$RP" 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
SHA=$(sha256sum "$MOD" | cut -d' ' -f1)
KEY=$(printf 'nkv-bench/module' | od -An -tx1 | tr -d ' \n')
"$B/bin/nkv-target" --listen tcp:127.0.0.1:0 --socket "$D/r.sock" --backend mem --capacity 2G \
	--max-value 64M --poll-interval-ns 1000 --exec-allow "1:1:$SHA:$KEY" >"$D/remote.log" 2>&1 &
RP=$!
for _ in $(seq 100); do grep -q tcp_listening "$D/remote.log" && break; sleep 0.1; done
PORT=$(grep -o "tcp_listening addr=127.0.0.1 port=[0-9]*" "$D/remote.log" | grep -o "[0-9]*$") \
	|| { echo "front_exec.sh: the remote did not listen:" >&2; tail -5 "$D/remote.log" >&2; exit 1; }
COMMON=(--json --quiet --engine cpu --target "tcp:127.0.0.1:$PORT" --value-size 33554432
	--num-keys 4 --batch-size 1 --iterations 8 --no-verify)
show() {
	python3 -c 'import json, sys
j = json.loads(sys.stdin.read().splitlines()[-1])
if j["unexpected"]:
    sys.exit("front_exec.sh: %d unexpected outcomes" % j["unexpected"])
print(json.dumps({"round": int(sys.argv[1]), "op": sys.argv[2], "p50_ms": round(j["latency_ns"]["p50"] / 1e6, 2),
                  "bytes_to_client_per_cmd": j["bytes"] // j["commands"]}))' "$@"
}
for r in $(seq "$ROUNDS"); do
	"$B/bin/nkv-bench" "${COMMON[@]}" --kv-op retrieve | show "$r" retrieve
	"$B/bin/nkv-bench" "${COMMON[@]}" --kv-op exec --op-id 1 --exec-module "$MOD" \
		--exec-input "8 8 524288 8 3" | show "$r" exec
done
