#!/usr/bin/env bash
# metrics-cost.sh [ROUNDS] [ITERATIONS]: what --metrics and a 1/s scraper
# cost the data path (docs/metrics.md, "Cost"). Alternates ROUNDS pairs of
# nkv-bench runs (64-byte Retrieves, batches of 64) against a fresh
# nkv-target without --metrics and one with --metrics scraped every
# second, and prints each run's IOPS and p50/p99; then times 200 scrapes
# of a target that served a run and reads the CPU they took from
# /proc/PID/stat. Every process it starts it ends by PID.
set -euo pipefail
ROUNDS=${1:-5}
ITER=${2:-1000}
B=${BUILD:-build}
dir=$(mktemp -d /tmp/nkv-mcost-XXXXXX)
tpid=; spid=
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null || true
	[ -n "$tpid" ] && kill "$tpid" 2>/dev/null && wait "$tpid" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

start_target() {	# $1: extra options
	rm -f "$dir"/t.sock*
	# shellcheck disable=SC2086
	"$B/bin/nkv-target" --socket "$dir/t.sock" --poll-interval-ns 1000 --log-level warn $1 \
		2>"$dir/t.log" &
	tpid=$!
	for _ in $(seq 100); do [ -S "$dir/t.sock" ] && break; sleep 0.05; done
}
stop_target() { kill "$tpid"; wait "$tpid" 2>/dev/null || true; tpid=; }
port() { sed -n 's/.*event=metrics_listening.* port=\([0-9]*\).*/\1/p' "$dir/t.log" | head -1; }
bench() {
	"$B/bin/nkv-bench" --kv-op retrieve --target "vfio-user:$dir/t.sock" --value-size 64 \
		--iterations "$ITER" --json | python3 -c 'import json,sys; j=json.load(sys.stdin);
print("%.0f %d %d" % (j["iops"], j["latency_ns"]["p50"], j["latency_ns"]["p99"]))'
}
echo "run        iops      p50_ns  p99_ns"
for r in $(seq "$ROUNDS"); do
	start_target ""
	echo "off-$r   $(bench)"
	stop_target
	start_target "--metrics 127.0.0.1:0"
	echo "count-$r $(bench)"
	stop_target
	start_target "--metrics 127.0.0.1:0"
	sleep 0.2
	p=$(port)
	( while :; do curl -s -o /dev/null "http://127.0.0.1:$p/metrics"; sleep 1; done ) &
	spid=$!
	echo "on-$r    $(bench)"
	kill "$spid"; spid=
	stop_target
done
# The scrape's own cost, on a target whose histograms are all in use.
start_target "--metrics 127.0.0.1:0"
sleep 0.2
p=$(port)
bench >/dev/null
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{ s = substr($0, index($0, ")") + 2); split(s, f, " ");
	print (f[12] + f[13]) / t }' "/proc/$tpid/stat"; }
c0=$(cpu); t0=$(date +%s.%N)
for _ in $(seq 200); do curl -s -o "$dir/scrape" "http://127.0.0.1:$p/metrics"; done
c1=$(cpu); t1=$(date +%s.%N)
python3 -c "c=($c1-$c0)/200; print('scrape: %d bytes, %.2f ms CPU each (target), %.1f ms wall; at 1/s: %.3f %% of a core' % ($(stat -c %s "$dir/scrape"), c*1e3, ($t1-$t0)/200*1e3, c*100))"
stop_target
