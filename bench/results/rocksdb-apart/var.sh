#!/bin/bash
# one throwaway build, variants by environment, the backend alone on kept dbs, rotated; then rocks_loop
B=${B:?B=the throwaway build}; D=${D:-/tmp/nkv-var}; SY=${SYNC:-none}; SZ=${SIZE:-33554432}; BT=${BATCH:-2}; KY=${KEYS:-16}; IT=${ITERS:-1}
mkdir -p $D
run() { local name=$1 via=$2; shift 2; env "$@" $B/bench/rocks_loop --db $D/$name-$SY-$SZ --op put --size $SZ --batch $BT --keys $KY --iters $IT --sync $SY --via $via --prefill | python3 -c "import json,sys; j=json.load(sys.stdin); print('$name %.1f' % j['iops'], end='  ')"; }
V=("base X=1" "f2 NKV_FLUSHERS=2")
for r in $(seq ${1:-4}); do
  for i in 0 1; do v=(${V[$(( (i + r) % 2 ))]}); run ${v[0]} backend ${v[@]:1}; done
  run loop rocksdb X=1; echo
done
