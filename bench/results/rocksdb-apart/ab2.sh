#!/bin/bash
# before (OB) vs after (NB) alternated: the backend alone on kept dbs, nkv on kept dbs, loop
OB=${OB:?OB=the build of the commit before}; NB=${NB:-build}; D=${D:-/tmp/nkv-ab-apart}
SY=${SYNC:-always}; SZ=${SIZE:-33554432}; BT=${BATCH:-2}; KY=${KEYS:-16}; IT=${ITERS:-1}
mkdir -p $D
alone() { $2/bench/rocks_loop --db $D/$1-$SY-$SZ --op put --size $SZ --batch $BT --keys $KY --iters $IT --sync $SY --via $3 --prefill | python3 -c "import json,sys; j=json.load(sys.stdin); print('$1 %.1f' % j['iops'], end='  ')"; }
nkv() { local name=$1 B=$2; rm -f $D/s.sock
  $B/bin/nkv-target --socket $D/s.sock --capacity $((8<<30)) --log-level warn --backend rocksdb --db $D/$name-$SY --sync $SY >> $D/t.log 2>&1 &
  local tp=$!
  for i in $(seq 100); do [ -S $D/s.sock ] && break; sleep 0.05; done
  $NB/bin/nkv-bench --json --quiet --engine cpu --target vfio-user:$D/s.sock --value-size $SZ --batch-size $BT --num-keys $KY --iterations $IT --timeout-ms 60000 --poll-sched idle --kv-op store --no-verify --fill once --key-prefix r${SZ}s- | python3 -c "import json,sys; j=json.load(sys.stdin); print('$name %.1f' % j['iops'], end='  ')"
  kill $tp; wait $tp
}
for r in $(seq ${1:-4}); do
  if [ $((r%2)) = 1 ]; then nkv nkv-old $OB; nkv nkv-new $NB; alone be-old $OB backend; alone be-new $NB backend
  else nkv nkv-new $NB; nkv nkv-old $OB; alone be-new $NB backend; alone be-old $OB backend; fi
  alone loop $NB rocksdb; echo
done
