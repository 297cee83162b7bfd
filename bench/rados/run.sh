#!/usr/bin/env bash
# bench/rados/run.sh - nkv-target's RADOS backend beside plain librados,
# in one run on one throwaway cluster, same object sizes and concurrency:
#
#   nkv-bench (cpu engine, wave batches) -> vfio-user -> nkv-target
#       --backend rados -> librados           [batch size = in flight]
#   bench/rados/rados_loop: librados aio, N in flight, each op timed
#   rados bench write / seq -t N -b SIZE      (Ceph's own tool)
#
# for 4 KiB and 1 MiB values at 1 and 32 in flight, each point repeated
# (medians reported, tools interleaved so machine drift hits all alike).
# Prints a markdown table (also OUT/summary.md); raw results in
# OUT/results.jsonl. Not part of CI: it takes a few minutes.
set -uo pipefail

usage() {
	cat <<EOF
usage: $0 [--build DIR] [--out DIR] [--repeat N] [--sizes "4096 1048576"]
          [--inflight "1 32"] [--rbench-seconds S] [--target-bin PATH]

  --build DIR          build root with bin/nkv-bench, bin/nkv-target (default build)
  --out DIR            results directory (default BUILD/bench-rados)
  --repeat N           runs per point, median reported (default 3)
  --sizes LIST         value sizes in bytes (default "4096 1048576")
  --inflight LIST      commands in flight (default "1 32")
  --rbench-seconds S   duration of each rados bench pass (default 3)
  --target-bin PATH    nkv-target to measure (default BUILD/bin/nkv-target)
EOF
}

BUILD=build
OUT=""
REPEAT=3
SIZES="4096 1048576"
INFLIGHT="1 32"
RB_SECS=3
TGT=""
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--repeat) REPEAT=$2; shift 2 ;;
	--sizes) SIZES=$2; shift 2 ;;
	--inflight) INFLIGHT=$2; shift 2 ;;
	--rbench-seconds) RB_SECS=$2; shift 2 ;;
	--target-bin) TGT=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
OUT=${OUT:-$BUILD/bench-rados}
cd "$(dirname "$0")/../.." || exit 1

die() {
	echo "bench/rados: $*" >&2
	exit 1
}

make -s BUILD="$BUILD" bench-rados >/dev/null || die "build failed (make BUILD=$BUILD bench-rados)"
NKVB=$BUILD/bin/nkv-bench
TGT=${TGT:-$BUILD/bin/nkv-target}
LOOP=$BUILD/bench/rados_loop
rm -rf "$OUT"
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
CL=$OUT/cluster
RES=$OUT/results.jsonl
TPID=""

cleanup() {
	[ -n "$TPID" ] && kill "$TPID" 2>/dev/null && wait "$TPID" 2>/dev/null
	scripts/ceph-dev-cluster.sh stop "$CL" >/dev/null 2>&1
}
trap cleanup EXIT

# 1 MiB values at 32 in flight need room: memstore holds everything in RAM.
NKV_CEPH_MEMSTORE_MB=${NKV_CEPH_MEMSTORE_MB:-4096} \
	scripts/ceph-dev-cluster.sh start "$CL" || die "the dev cluster did not start"
CONF=$CL/ceph.conf

"$TGT" --socket "$OUT/nkv.sock" --backend rados --conf "$CONF" --pool kvpool \
	--ns-map 1=bench_nkv --log-level warn >"$OUT/nkv-target.log" 2>&1 &
TPID=$!
for _ in $(seq 100); do
	[ -S "$OUT/nkv.sock" ] && break
	kill -0 "$TPID" 2>/dev/null || die "nkv-target exited: $(tail -n 3 "$OUT/nkv-target.log")"
	sleep 0.1
done
[ -S "$OUT/nkv.sock" ] || die "nkv-target socket did not appear"

# Keys and passes per point: enough ops to time, little enough memory.
plan() {	# size inflight -> "keys iterations"
	if [ "$1" -ge 262144 ]; then
		[ "$2" -ge 8 ] && echo "64 4" || echo "24 2"
	else
		[ "$2" -ge 8 ] && echo "1024 2" || echo "400 1"
	fi
}

nkv_point() {	# op size t keys iters rep
	local j
	j=$(timeout 300 "$NKVB" --engine cpu --target "vfio-user:$OUT/nkv.sock" --kv-op "$1" \
		--value-size "$2" --batch-size "$3" --num-keys "$4" --iterations "$5" \
		--key-prefix "b$2-" --json --quiet) || { echo "nkv-bench $1 $2 x$3 failed" >&2; return 1; }
	echo "{\"tool\":\"nkv\",\"op\":\"$1\",\"size\":$2,\"inflight\":$3,\"rep\":$6,\"r\":$j}" >>"$RES"
}

# tool "loop": N always in flight; "loopb": batches of N, like nkv-bench.
loop_point() {	# op size t ops objects rep [--batch]
	local j tool=loop
	[ $# -ge 7 ] && tool=loopb
	j=$(timeout 300 "$LOOP" -c "$CONF" -p kvpool -N bench_loop --op "$1" --size "$2" \
		--inflight "$3" --ops "$4" --objects "$5" --json ${7:-}) \
		|| { echo "rados_loop $1 $2 x$3 failed" >&2; return 1; }
	echo "{\"tool\":\"$tool\",\"op\":\"$1\",\"size\":$2,\"inflight\":$3,\"rep\":$6,\"r\":$j}" >>"$RES"
}

# rados bench reports average IOPS and average latency (no percentiles).
rbench_point() {	# mode size t rep
	local out iops lat run=rb-$2-$3
	# -b only for write: seq reads back the objects write left.
	out=$(timeout 120 rados -c "$CONF" -p kvpool bench "$RB_SECS" "$1" \
		$([ "$1" = write ] && echo "-b $2") -t "$3" \
		--run-name "$run" --no-cleanup 2>&1) || { echo "rados bench $1 failed: $out" >&2; return 1; }
	iops=$(awk -F: '/^Average IOPS/ {gsub(/ /, "", $2); print $2}' <<<"$out")
	lat=$(awk -F: '/^Average Latency\(s\)/ {gsub(/ /, "", $2); print $2}' <<<"$out")
	echo "{\"tool\":\"rbench\",\"op\":\"$1\",\"size\":$2,\"inflight\":$3,\"rep\":$4,\"r\":{\"iops\":${iops:-0},\"avg_lat_s\":${lat:-0}}}" >>"$RES"
}

for size in $SIZES; do
	for t in $INFLIGHT; do
		read -r keys iters < <(plan "$size" "$t")
		ops=$((keys * iters))
		for rep in $(seq "$REPEAT"); do
			echo "bench/rados: $size B x $t in flight, run $rep/$REPEAT" >&2
			nkv_point store "$size" "$t" "$keys" "$iters" "$rep"
			nkv_point retrieve "$size" "$t" "$keys" "$iters" "$rep"
			loop_point write "$size" "$t" "$ops" "$keys" "$rep"
			loop_point read "$size" "$t" "$ops" "$keys" "$rep"
			loop_point write "$size" "$t" "$ops" "$keys" "$rep" --batch
			loop_point read "$size" "$t" "$ops" "$keys" "$rep" --batch
			rbench_point write "$size" "$t" "$rep"
			rbench_point seq "$size" "$t" "$rep"
			timeout 120 rados -c "$CONF" -p kvpool cleanup --run-name "rb-$size-$t" \
				>/dev/null 2>&1
		done
	done
done

kill -0 "$TPID" 2>/dev/null || die "nkv-target died during the run: $(tail -n 5 "$OUT/nkv-target.log")"
python3 - "$RES" "$(nproc)" <<'EOF' | tee "$OUT/summary.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(tool, op, size, t, f):
    v = [f(r["r"]) for r in rows if (r["tool"], r["op"], r["size"], r["inflight"]) == (tool, op, size, t)]
    return statistics.median(v) if v else float("nan")
iops = lambda r: r.get("iops", 0.0)
p50 = lambda r: r["latency_ns"]["p50"] / 1e3
avg_rb = lambda r: r["avg_lat_s"] * 1e6
def sz(s):
    return f"{s // 1048576} MiB" if s >= 1048576 else f"{s // 1024} KiB"
print("| op | value | in flight | nkv IOPS | loop batched IOPS | loop IOPS | rados bench IOPS | "
      "nkv / loop batched | nkv / loop | nkv / rados bench | nkv p50 us | loop batched p50 us | "
      "loop p50 us | rados bench avg us | nkv / loop batched p50 | nkv / loop p50 |")
print("|" + "---|" * 16)
keys = sorted({(r["size"], r["inflight"]) for r in rows})
for nop, lop, rop, name in (("store", "write", "write", "write"), ("retrieve", "read", "seq", "read")):
    for size, t in keys:
        a, b, c = med("nkv", nop, size, t, iops), med("loopb", lop, size, t, iops), med("loop", lop, size, t, iops)
        d = med("rbench", rop, size, t, iops)
        la, lb, lc = med("nkv", nop, size, t, p50), med("loopb", lop, size, t, p50), med("loop", lop, size, t, p50)
        ld = med("rbench", rop, size, t, avg_rb)
        print(f"| {name} | {sz(size)} | {t} | {a:.0f} | {b:.0f} | {c:.0f} | {d:.0f} | {a / b:.2f} | {a / c:.2f} | "
              f"{a / d:.2f} | {la:.0f} | {lb:.0f} | {lc:.0f} | {ld:.0f} | {la / lb:.2f} | {la / lc:.2f} |")
print()
print(f"{sys.argv[2]} CPUs, cluster (1 mon, 1 memstore OSD), nkv-target and clients on one box; "
      f"medians of {max(r['rep'] for r in rows)} runs. nkv and loop-batched latency = the batch's (submit -> last completion).")
EOF
