#!/bin/bash
# Alternated A/B: main's and h52's nkv-target (nkv-bench as bench-compare
# runs it) and plain rocks_loop, REPS reps; one JSON line per measurement.
# As run for docs/bench.md ("Issue 52, second pass"): main built from
# `git archive main` in /tmp/h52/main-src, this branch in /work/wt-52.
REPS=${1:-7}
W=/work/wt-52; M=/tmp/h52/main-src
D=/tmp/h52/ab; mkdir -p $D
one_nkv() { # bin size batch keys iters op sync
	local t=$1 s=$2 b=$3 k=$4 i=$5 op=$6 sy=$7
	rm -rf $D/db; rm -f $D/t.sock
	$t --socket $D/t.sock --capacity $((8<<30)) --log-level warn --backend rocksdb --db $D/db --sync $sy > $D/t.log 2>&1 &
	local T=$!
	for n in $(seq 200); do [ -S $D/t.sock ] && break; sleep 0.05; done
	local fill="--key-prefix r$s-"; [ $op = store ] && fill="--fill once --key-prefix s$s-"
	$W/build/bin/nkv-bench --json --quiet --engine cpu --target vfio-user:$D/t.sock --value-size $s --batch-size $b --num-keys $k --iterations $i --timeout-ms 60000 --poll-sched idle --no-verify --kv-op $op $fill | python3 -c 'import json,sys; print(json.load(sys.stdin)["iops"])'
	kill $T; wait $T
}
one_loop() { # size batch keys iters op sync
	rm -rf $D/ldb
	$W/build/bench/rocks_loop --db $D/ldb --op $5 --size $1 --batch $2 --keys $3 --iters $4 --sync $6 | python3 -c 'import json,sys; print(json.load(sys.stdin)["iops"])'
}
for r in $(seq $REPS); do
	for pt in "65536 32 2048 2 retrieve get always" "65536 32 2048 2 retrieve get none" "2097152 8 64 1 retrieve get always" "4096 32 2048 2 store put none" "4096 32 2048 2 store put always"; do
		set -- $pt
		if [ $((r % 2)) = 1 ]; then
			a=$(one_nkv $M/build/bin/nkv-target $1 $2 $3 $4 $5 $7)
			b=$(one_nkv $W/build/bin/nkv-target $1 $2 $3 $4 $5 $7)
		else
			b=$(one_nkv $W/build/bin/nkv-target $1 $2 $3 $4 $5 $7)
			a=$(one_nkv $M/build/bin/nkv-target $1 $2 $3 $4 $5 $7)
		fi
		l=$(one_loop $1 $2 $3 $4 $6 $7)
		echo "{\"rep\":$r,\"size\":$1,\"op\":\"$5\",\"sync\":\"$7\",\"main\":$a,\"h52\":$b,\"loop\":$l,\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\"}"
	done
done
