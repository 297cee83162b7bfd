#!/bin/bash
# TOCO vs TNCN alternated, Store
# bench/results/rocksdb-burst: run from the source tree, OB= a build of the commit before.
NB=${NB:-build}; OB=${OB:?OB=the before build dir}
D=$(mktemp -d /tmp/nkv-ab.XXXX)
SZ=${SIZE:-4096}; BT=${BATCH:-32}; KY=${KEYS:-2048}; IT=${ITERS:-2}
one() { local name=$1 tb=$2 cb=$3
  rm -f $D/s.sock
  $tb --socket $D/s.sock --capacity $((8<<30)) --log-level warn --backend rocksdb --db $D/nkv-$name-$RANDOM --sync ${SYNC:-always} > $D/t.log 2>&1 &
  local tp=$!
  for i in $(seq 100); do [ -S $D/s.sock ] && break; sleep 0.05; done
  $cb --json --quiet --engine cpu --target vfio-user:$D/s.sock --value-size $SZ --batch-size $BT --num-keys $KY --iterations $IT --timeout-ms 60000 --poll-sched idle --kv-op store --no-verify --fill once --key-prefix s$RANDOM- | python3 -c "import json,sys; j=json.load(sys.stdin); print('$name %d %.0f' % (j['iops'], j['latency_ns']['p50']/1e3))"
  kill $tp; wait $tp
}
for r in $(seq ${1:-6}); do
  if [ $((r%2)) = 1 ]; then one old $OB/bin/nkv-target $OB/bin/nkv-bench; one new $NB/bin/nkv-target $NB/bin/nkv-bench; else one new $NB/bin/nkv-target $NB/bin/nkv-bench; one old $OB/bin/nkv-target $OB/bin/nkv-bench; fi | sort | tr '\n' ' '; echo
done
rm -rf $D
