#!/bin/bash
# one throwaway build, options by environment (NKV_WALBPS: wal_bytes_per_sync), the backend alone
# on kept databases: be2 without, bwb with, alternated; then rocks_loop
B=${B:?B=the throwaway build}; D=${D:-/tmp/nkv-env-ab}; SY=${SYNC:-always}; SZ=${SIZE:-33554432}; BT=${BATCH:-2}; KY=${KEYS:-16}; IT=${ITERS:-1}
mkdir -p $D
run() { local name=$1 via=$2; shift 2; env "$@" $B/bench/rocks_loop --db $D/$name-$SY --op put --size $SZ --batch $BT --keys $KY --iters $IT --sync $SY --via $via --prefill | python3 -c "import json,sys; j=json.load(sys.stdin); print('$name %.1f' % j['iops'], end='  ')"; }
for r in $(seq ${1:-4}); do if [ $((r%2)) = 1 ]; then run be2 backend X=1; run bwb backend NKV_WALBPS=${BPS:-1048576}; else run bwb backend NKV_WALBPS=${BPS:-1048576}; run be2 backend X=1; fi; run loop rocksdb X=1; echo; done
