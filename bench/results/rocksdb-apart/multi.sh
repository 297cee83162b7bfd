#!/bin/bash
# N concurrent nkv-bench clients (one connection each) against one nkv-target: the sum of their IOPS
A=${A:?A=the build before}; Bd=${Bd:?Bd=the build after}; NB=${NB:-build}; N=${N:-4}; D=$(mktemp -d /tmp/nkv-multi.XXXX)
SZ=${SIZE:-4096}; SY=${SYNC:-none}; IT=${ITERS:-4}
one() { local name=$1 B=$2
  rm -f $D/s.sock; rm -rf $D/db
  $B/bin/nkv-target --socket $D/s.sock --capacity $((8<<30)) --log-level warn --backend rocksdb --db $D/db --sync $SY > $D/t.log 2>&1 &
  local tp=$!
  for i in $(seq 100); do [ -S $D/s.sock ] && break; sleep 0.05; done
  for c in $(seq $N); do
    $NB/bin/nkv-bench --json --quiet --engine cpu --target vfio-user:$D/s.sock --value-size $SZ --batch-size 32 --num-keys 1024 --iterations $IT --timeout-ms 60000 --poll-sched idle --kv-op store --no-verify --fill once --key-prefix c$c- > $D/o$c.json &
  done
  wait $(jobs -p | grep -v "^$tp$") 2>/dev/null
  python3 -c "
import json,sys
s=sum(json.load(open('$D/o%d.json'%c))['iops'] for c in range(1,$N+1)); print('$name %d' % s, end=' ')"
  kill $tp; wait $tp
}
for r in $(seq ${1:-4}); do
  if [ $((r%2)) = 1 ]; then one A $A; one B $Bd; else one B $Bd; one A $A; fi; echo
done
rm -rf $D
