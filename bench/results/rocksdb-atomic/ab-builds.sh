#!/bin/bash
# before/after builds alternated: nkv (fresh db) and the backend alone
NB=${NB:-build}; OB=${OB:?OB=the before build dir}
D=$(mktemp -d /tmp/nkv-ab3.XXXX)
SZ=${SIZE:-65536}; BT=${BATCH:-32}; KY=${KEYS:-2048}; IT=${ITERS:-2}; SY=${SYNC:-none}
nkv() { local name=$1 B=$2
  rm -f $D/s.sock; rm -rf $D/db
  $B/bin/nkv-target --socket $D/s.sock --capacity $((8<<30)) --log-level warn --backend rocksdb --db $D/db --sync $SY > $D/t.log 2>&1 &
  local tp=$!
  for i in $(seq 100); do [ -S $D/s.sock ] && break; sleep 0.05; done
  $B/bin/nkv-bench --json --quiet --engine cpu --target vfio-user:$D/s.sock --value-size $SZ --batch-size $BT --num-keys $KY --iterations $IT --timeout-ms 60000 --poll-sched idle --kv-op store --no-verify --fill once --key-prefix s$RANDOM- | python3 -c "import json,sys; j=json.load(sys.stdin); print('nkv-$name %d' % j['iops'], end=' ')"
  kill $tp; wait $tp
}
alone() { rm -rf $D/l; $2/bench/rocks_loop --db $D/l --op put --size $SZ --batch $BT --keys $KY --iters $IT --sync $SY --via ${3:-backend} --prefill | python3 -c "import json,sys; j=json.load(sys.stdin); print('$1 %d' % j['iops'], end=' ')"; }
for r in $(seq ${1:-6}); do
  if [ $((r%2)) = 1 ]; then nkv old $OB; nkv new $NB; alone aold $OB; alone anew $NB; else nkv new $NB; nkv old $OB; alone anew $NB; alone aold $OB; fi; alone loop $NB rocksdb; echo
done
rm -rf $D
