#!/bin/bash
# targets alternated: nkv-target A vs B (same nkv-bench), fresh db each; then rocks_loop
A=${A:?A=the build before}; Bd=${Bd:?Bd=the build after}; NB=${NB:-build}
D=$(mktemp -d /tmp/nkv-ab.XXXX)
SZ=${SIZE:-4096}; BT=${BATCH:-32}; KY=${KEYS:-2048}; IT=${ITERS:-4}; SY=${SYNC:-none}; OP=${OP:-store}
nkv() { local name=$1 B=$2
  rm -f $D/s.sock; rm -rf $D/db
  $B/bin/nkv-target --socket $D/s.sock --capacity $((8<<30)) --log-level warn --backend rocksdb --db $D/db --sync $SY > $D/t.log 2>&1 &
  local tp=$!
  for i in $(seq 100); do [ -S $D/s.sock ] && break; sleep 0.05; done
  if [ $OP = retrieve ]; then $NB/bin/nkv-bench --json --quiet --engine cpu --target vfio-user:$D/s.sock --value-size $SZ --batch-size $BT --num-keys $KY --iterations 1 --timeout-ms 60000 --kv-op store --no-verify --fill once --key-prefix r- >/dev/null; fi
  $NB/bin/nkv-bench --json --quiet --engine cpu --target vfio-user:$D/s.sock --value-size $SZ --batch-size $BT --num-keys $KY --iterations $IT --timeout-ms 60000 --poll-sched idle --kv-op $OP --no-verify $([ $OP = store ] && echo --fill once) --key-prefix r- | python3 -c "import json,sys; j=json.load(sys.stdin); print('$name %d' % j['iops'], end=' ')"
  kill $tp; wait $tp
}
loop() { rm -rf $D/l; local o=put; [ $OP = retrieve ] && o=get; $NB/bench/rocks_loop --db $D/l --op $o --size $SZ --batch $BT --keys $KY --iters $IT --sync $SY --via rocksdb --prefill | python3 -c "import json,sys; j=json.load(sys.stdin); print('loop %d' % j['iops'], end=' ')"; }
for r in $(seq ${1:-6}); do
  if [ $((r%2)) = 1 ]; then nkv A $A; nkv B $Bd; else nkv B $Bd; nkv A $A; fi
  [ -n "$LOOP" ] && loop; echo
done
rm -rf $D
