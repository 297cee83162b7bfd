#!/usr/bin/env bash
# The Python package's tests (python/tests) with Debian's python3 and its
# python3-pytest / -numpy / -torch / -xxhash, against nkv-targets it spawns
# (mem, rocksdb, and rados on a throwaway Ceph cluster where ceph-mon is
# installed). One line per test: "NKV-PY <test> PASS|FAIL|SKIP [reason]",
# written by python/tests/conftest.py from pytest's own reports, so a test
# pytest skipped is a SKIP, never a PASS. usage: tests/python/run.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
PY=/usr/bin/python3
if ! [ -x "$PY" ] || ! "$PY" -c "import pytest" 2>/dev/null; then
	echo "NKV-PY python-tests SKIP no /usr/bin/python3 with python3-pytest (scripts/install-deps.sh)"
	exit 0
fi
NKV_BUILD=$B NKV_LIB=$B/lib/libnkv.so "$PY" -m pytest -q -p no:cacheprovider python/tests
