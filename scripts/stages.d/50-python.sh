# The Python package (issue 50, docs/python.md): python/tests under Debian's
# python3 against spawned nkv-targets (mem, rocksdb, rados), one
# "NKV-PY <test> PASS|FAIL|SKIP" line per test, skipped ones counted as
# skipped. Sourced by scripts/test.sh after the build stage.
stage python run_counted NKV-PY timeout 600 tests/python/run.sh build
