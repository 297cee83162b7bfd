#!/bin/bash
# 2x2: target {old,new} x client {old,new}, alternated; Store/Retrieve OP size SIZE sync SYNC
# bench/results/rocksdb-burst: run from the source tree, OB= a build of the commit before.
NB=${NB:-build}; OB=${OB:?OB=the before build dir}
D=$(mktemp -d /tmp/nkv-ab.XXXX)
SZ=${SIZE:-4096}; BT=${BATCH:-32}; KY=${KEYS:-2048}; IT=${ITERS:-2}; OP=${OP:-store}
one() { # label targetbin clientbin
  local name=$1 tb=$2 cb=$3
  rm -f $D/s.sock
  $tb --socket $D/s.sock --capacity $((8<<30)) --log-level warn --backend rocksdb --db $D/nkv-$name-$RANDOM --sync ${SYNC:-none} > $D/t.log 2>&1 &
  local tp=$!
  for i in $(seq 100); do [ -S $D/s.sock ] && break; sleep 0.05; done
  local fill="--fill once"; [ $OP = retrieve ] && fill=""
  $cb --json --quiet --engine cpu --target vfio-user:$D/s.sock --value-size $SZ --batch-size $BT --num-keys $KY --iterations $IT --timeout-ms 60000 --poll-sched idle --kv-op $OP --no-verify $fill --key-prefix s$RANDOM- | python3 -c "import json,sys; j=json.load(sys.stdin); print('$name %d %.0f' % (j['iops'], j['latency_ns']['p50']/1e3))"
  kill $tp; wait $tp
}
combos=("TOCO $OB/bin/nkv-target $OB/bin/nkv-bench" "TNCO $NB/bin/nkv-target $OB/bin/nkv-bench" "TOCN $OB/bin/nkv-target $NB/bin/nkv-bench" "TNCN $NB/bin/nkv-target $NB/bin/nkv-bench")
for r in $(seq ${1:-4}); do
  for i in 0 1 2 3; do c=${combos[$(( (i + r) % 4 ))]}; one $c; done | sort | tr '\n' ' '
  lop=put; [ $OP = retrieve ] && lop=get
  $NB/bench/rocks_loop --db $D/loop-$r --op $lop --size $SZ --batch $BT --keys $KY --iters $IT --sync ${SYNC:-none} --via rocksdb | python3 -c "import json,sys; j=json.load(sys.stdin); print('loop %d' % j['iops'])"
done
rm -rf $D
