#!/bin/bash
# nkv-target with and without NKV_AF (atomic flush) alternated, + rocks_loop
NB=${NB:-build}
D=$(mktemp -d /tmp/nkv-af.XXXX)
SZ=${SIZE:-33554432}; BT=${BATCH:-2}; KY=${KEYS:-16}; IT=${ITERS:-1}
one() { local name=$1 af=$2
  rm -f $D/s.sock; rm -rf $D/db
  env $af $NB/bin/nkv-target --socket $D/s.sock --capacity $((8<<30)) --log-level warn --backend rocksdb --db $D/db --sync ${SYNC:-always} > $D/t.log 2>&1 &
  local tp=$!
  for i in $(seq 100); do [ -S $D/s.sock ] && break; sleep 0.05; done
  $NB/bin/nkv-bench --json --quiet --engine cpu --target vfio-user:$D/s.sock --value-size $SZ --batch-size $BT --num-keys $KY --iterations $IT --timeout-ms 60000 --poll-sched idle --kv-op store --no-verify --fill once --key-prefix s$RANDOM- | python3 -c "import json,sys; j=json.load(sys.stdin); print('$name %d %.0f' % (j['iops'], j['latency_ns']['p50']/1e3), end=' ')"
  kill $tp; wait $tp
  echo -n "wal=$(du -sm $D/db/*.log 2>/dev/null | awk '{s+=$1} END {print s}')M "
}
loop() { rm -rf $D/l; $NB/bench/rocks_loop --db $D/l --op put --size $SZ --batch $BT --keys $KY --iters $IT --sync ${SYNC:-always} --via rocksdb --prefill | python3 -c "import json,sys; j=json.load(sys.stdin); print('loop %d' % j['iops'], end=' ')"; }
for r in $(seq ${1:-6}); do
  if [ $((r%2)) = 1 ]; then one base ""; one af NKV_AF=1; else one af NKV_AF=1; one base ""; fi; loop; echo
done
rm -rf $D
