#!/bin/bash
# 32 MiB Stores on kept databases, bench-compare's shape: nkv, loop, backend alone
B=${B:-build}; D=${D:-/tmp/nkv-big}; SY=${SYNC:-always}; SZ=${SIZE:-33554432}; BT=${BATCH:-2}; KY=${KEYS:-16}
mkdir -p $D
nkv() { rm -f $D/s.sock
  $B/bin/nkv-target --socket $D/s.sock --capacity $((8<<30)) --log-level warn --backend rocksdb --db $D/nkv-$SY --sync $SY >> $D/t.log 2>&1 &
  local tp=$!
  for i in $(seq 100); do [ -S $D/s.sock ] && break; sleep 0.05; done
  $B/bin/nkv-bench --json --quiet --engine cpu --target vfio-user:$D/s.sock --value-size $SZ --batch-size $BT --num-keys $KY --iterations 1 --timeout-ms 60000 --poll-sched idle --kv-op store --no-verify --fill once --key-prefix r${SZ}s- | python3 -c "import json,sys; j=json.load(sys.stdin); print('nkv %.1f' % j['iops'], end='  ')"
  kill $tp; wait $tp
}
loop() { $B/bench/rocks_loop --db $D/$1-$SY --op put --size $SZ --batch $BT --keys $KY --iters 1 --sync $SY --via $1 --prefill | python3 -c "import json,sys; j=json.load(sys.stdin); print('$1 %.1f' % j['iops'], end='  ')"; }
for r in $(seq ${1:-4}); do nkv; loop rocksdb; loop backend; echo; done
