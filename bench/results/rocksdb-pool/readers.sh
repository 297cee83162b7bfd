#!/bin/bash
# This branch's nkv-target with --readers 0, 1, 2 (rotated order), 64 KiB
# and 2 MiB Retrieves as bench-compare runs them; REPS reps.
REPS=${1:-5}
W=/work/wt-52; D=/tmp/h52/ab2; mkdir -p $D
one() { # readers size batch keys iters sync
	rm -rf $D/db; rm -f $D/t.sock
	$W/build/bin/nkv-target --socket $D/t.sock --capacity $((8<<30)) --log-level warn --backend rocksdb --db $D/db --sync $6 --readers $1 > $D/t.log 2>&1 &
	local T=$!
	for n in $(seq 200); do [ -S $D/t.sock ] && break; sleep 0.05; done
	$W/build/bin/nkv-bench --json --quiet --engine cpu --target vfio-user:$D/t.sock --value-size $2 --batch-size $3 --num-keys $4 --iterations $5 --timeout-ms 60000 --poll-sched idle --no-verify --kv-op retrieve --key-prefix r$2- | python3 -c 'import json,sys; print(json.load(sys.stdin)["iops"])'
	kill $T; wait $T
}
for r in $(seq $REPS); do
	for pt in "65536 32 2048 2 always" "2097152 8 64 1 always"; do
		set -- $pt
		case $((r % 3)) in 1) ord="0 1 2";; 2) ord="1 2 0";; 0) ord="2 0 1";; esac
		line="{\"rep\":$r,\"size\":$1"
		for n in $ord; do line="$line,\"r$n\":$(one $n $1 $2 $3 $4 $5)"; done
		echo "$line,\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\"}"
	done
done
