#!/usr/bin/env bash
# The cpu-engine examples against a separately started nkv-target, and two
# built against an installed nkv (make install DESTDIR= PREFIX=, then
# pkg-config --cflags --libs nkv only): one with the examples' helper
# headers, and the self-contained first_retrieve. One line per check:
# "NKV-EX <name> PASS|FAIL|SKIP". usage: tests/examples/run.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
TMP=$(mktemp -d /tmp/nkv-examples-XXXXXX)
TPID=
FAILS=0

cleanup() {
	[ -n "$TPID" ] && kill "$TPID" 2>/dev/null && wait "$TPID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

result() {	# NAME RC [WHY]
	if [ "$2" = 0 ]; then
		echo "NKV-EX $1 PASS"
	else
		echo "NKV-EX $1 FAIL ${3:-}"
		FAILS=$((FAILS + 1))
	fi
}

# exec_slice's modules allowlisted as op-IDs 1..3 of namespace 1, each by
# the SHA-256 of its file and the key it stores it under (docs/exec.md).
exec_rows() {
	local i=1 m sha key
	for m in slice digest forbidden; do
		sha=$(sha256sum "examples/exec/$m.lua" | cut -d' ' -f1)
		key=$(printf 'exec/%s.lua' "$m" | od -An -tx1 | tr -d ' \n')
		printf -- '--exec-allow 1:%d:%s:%s ' "$i" "$sha" "$key"
		i=$((i + 1))
	done
}

start_target() {
	# shellcheck disable=SC2046 # the rows are words
	"$B/bin/nkv-target" --socket "$TMP/t.sock" --log-level error --poll-interval-ns 2000 \
		$(exec_rows) &
	TPID=$!
	for _ in $(seq 500); do
		[ -S "$TMP/t.sock" ] && return 0
		sleep 0.01
	done
	echo "NKV-EX target FAIL nkv-target did not start"
	exit 1
}

# run_example NAME BINARY WANT: exit 0 and WANT in its output, within 60 s.
run_example() {
	local out rc
	out=$(timeout 60 "$2" "vfio-user:$TMP/t.sock" 2>&1)
	rc=$?
	echo "$out" | sed "s/^/  $1: /"
	if [ $rc -eq 0 ] && ! grep -q "$3" <<<"$out"; then
		rc=1
	fi
	result "$1" $rc "exit $rc, want '$3'"
}

start_target
run_example first_retrieve "$B/examples/first_retrieve_cpu" "every lane stored and retrieved its value: all bytes match"
run_example batch_store_retrieve "$B/examples/batch_store_retrieve_cpu" "SQ doorbells: 8 for 256 stores, 8 for 256 retrieves"
run_example multi_queue "$B/examples/multi_queue_cpu" "64 SQ doorbells for 1024 commands"
run_example cache_lookup "$B/examples/cache_lookup_cpu" "64 hits (retrieved), 64 misses (87h, computed), 0 wrong: ok"
run_example sync_roundtrip "$B/examples/sync_roundtrip" "sync round trip: every answer as expected: ok"
run_example exec_slice "$B/examples/exec_slice" "exec slice: every answer as expected: ok"
# prefix_cache at the CI size: the first run stores request 1 and hits
# 75 % of request 2; a second process running the same requests finds
# every block (content-derived keys) and stores nothing new.
run_prefix() {	# NAME WANT1 WANT2 [FLAGS]
	local out rc
	out=$(timeout 60 "$B/examples/prefix_cache_cpu" --ci ${4:-} "vfio-user:$TMP/t.sock" 2>&1)
	rc=$?
	echo "$out" | sed "s/^/  $1: /"
	[ $rc -eq 0 ] && grep -q "$2" <<<"$out" && grep -q "$3" <<<"$out" &&
		grep -q "every page byte-checked (256 pages of 8192 bytes): 0 bad: ok" <<<"$out"
	result "$1" $? "exit $rc, want '$2' and '$3'"
}
run_prefix prefix_cache "48 of 64 blocks hit" "256 stored, 0 already there"
run_prefix prefix_cache-second-process "64 of 64 blocks hit" "0 stored, 256 already there"
run_prefix prefix_cache-sha256 "48 of 64 blocks hit" "256 stored, 0 already there" "--hash sha256"
# The engine's own cache in a registered region (vLLM's layout, no
# slots): it finds every block the slot runs stored, byte for byte; it
# stores new ones (other extra keys) that a slot run then finds.
run_prefix prefix_cache-region-reads-slots "64 of 64 blocks hit" "0 stored, 256 already there" \
	"--dest region"
run_prefix prefix_cache-region "48 of 64 blocks hit" "256 stored, 0 already there" \
	"--dest region --extra 5"
run_prefix prefix_cache-slots-read-region "64 of 64 blocks hit" "0 stored, 256 already there" \
	"--extra 5"
run_prefix prefix_cache-region-sha256 "48 of 64 blocks hit" "256 stored, 0 already there" \
	"--dest region --extra 6 --hash sha256"
# One exit table for every example, as for nkv's programs: no URI is a
# bad argument (2), no controller behind it a setup failure (3), and the
# library's own lines come through the examples' log callback ("nkv: ").
for ex in first_retrieve_cpu batch_store_retrieve_cpu multi_queue_cpu cache_lookup_cpu \
	prefix_cache_cpu sync_roundtrip; do
	out=$(NKV_TARGET= timeout 10 "$B/examples/$ex" 2>&1)
	rc=$?
	[ $rc -eq 2 ] && grep -q "usage:" <<<"$out"
	result "${ex%_cpu}-without-target-exits-2" $? "exit $rc: $out"
	out=$(timeout 30 "$B/examples/$ex" "vfio-user:$TMP/nobody.sock" 2>&1)
	rc=$?
	[ $rc -eq 3 ] && grep -q "cannot connect to vfio-user:$TMP/nobody.sock" <<<"$out"
	result "${ex%_cpu}-no-controller-exits-3" $? "exit $rc: $out"
done
# Without a GPU runtime the library says the arena stands in for VRAM.
out=$(timeout 60 "$B/examples/batch_store_retrieve_cpu" "vfio-user:$TMP/t.sock" 2>&1)
if grep -q "device arena in host memory" <<<"$out"; then
	grep -q "^nkv: memory-mode 0x8: no GPU" <<<"$out"
	result example-shows-library-lines $? "$out"
else
	echo "NKV-EX example-shows-library-lines SKIP a GPU runtime: no arena line to show"
fi

# Install into a temporary root, build an example with pkg-config only.
DEST=$TMP/root
PREFIX=/opt/nkv
if ! make -s BUILD="$B" install DESTDIR="$DEST" PREFIX="$PREFIX" >"$TMP/install.log" 2>&1; then
	result install 1 "$(tail -5 "$TMP/install.log")"
else
	result install 0
	# It says how programs find the library (README "Installing").
	grep -q "libnkv.so.[0-9]* is in $PREFIX/lib. A program linked with it finds it at run time" \
		"$TMP/install.log" && grep -q "run ldconfig (as root) once" "$TMP/install.log" &&
		grep -q -- "-Wl,-rpath,$PREFIX/lib" "$TMP/install.log"
	result install-says-how-programs-find-libnkv $? "$(cat "$TMP/install.log")"
	export PKG_CONFIG_PATH=$DEST$PREFIX/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$DEST
	# Where the pc file says the headers and libraries are, inside DEST;
	# the shared library under the soname the build gave it.
	soname=$(readelf -d "$B/lib/libnkv.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
	for f in include/nkv_dev.h include/nkv_host.h include/nkv_cpu.h lib/libnkv.a \
		"lib/${soname:-libnkv.so-without-soname}" bin/nkv-bench bin/nkv-target \
		share/man/man1/nkv-bench.1; do
		[ -e "$DEST$PREFIX/$f" ] || { result "installed-$f" 1 missing; }
	done
	# The shared library exports exactly the functions the public headers
	# declare (src/libnkv.map): nothing internal, nothing missing. Macros
	# that look like calls (nkv_cpu_ballot(mask, pred)) are not functions.
	exported=$(nm -D --defined-only "$DEST$PREFIX/lib/$soname" | awk '$2 == "T" { print $3 }' |
		sed 's/@.*//' | sort)
	declared=$(grep -hv '^#define' include/nkv_host.h include/nkv_cpu.h |
		grep -ohE '\bnkv_[a-z0-9_]+\(' | tr -d '(' | sort -u)
	[ "$exported" = "$declared" ]
	result exports $? "only in the .so: $(comm -23 <(echo "$exported") <(echo "$declared") | xargs)
		only declared: $(comm -13 <(echo "$exported") <(echo "$declared") | xargs)"
	# pkg-config and the installed soname say the Makefile's version.
	version=$(sed -n 's/^VERSION := //p' Makefile)
	soversion=$(sed -n 's/^SOVERSION := //p' Makefile)
	[ "$(pkg-config --modversion nkv)" = "$version" ] && [ "$soname" = "libnkv.so.$soversion" ] &&
		[ -e "$DEST$PREFIX/lib/libnkv.so.$version" ]
	result version $? "pkg-config says '$(pkg-config --modversion nkv)', soname '$soname'; the Makefile $version / $soversion"
	flags=$(pkg-config --cflags --libs --static nkv)
	cp examples/batch_store_retrieve_cpu.c examples/ex_host.h examples/kv_kernels.h "$TMP/"
	if cc -std=c11 -O2 -Wall -Werror "$TMP/batch_store_retrieve_cpu.c" $flags -o "$TMP/ex_installed" \
		>"$TMP/cc.log" 2>&1; then
		result build-against-install 0
		out=$(LD_LIBRARY_PATH=$DEST$PREFIX/lib timeout 60 "$TMP/ex_installed" "vfio-user:$TMP/t.sock" 2>&1)
		rc=$?
		# ldd's output read whole: grep -q on a pipe may end ldd by SIGPIPE,
		# which pipefail would count as "not linked".
		libs=$(LD_LIBRARY_PATH=$DEST$PREFIX/lib ldd "$TMP/ex_installed" 2>&1)
		grep -q "$DEST$PREFIX/lib/libnkv.so" <<<"$libs"
		linked=$?
		[ $rc -eq 0 ] && [ $linked -eq 0 ] && grep -q "all bytes match" <<<"$out"
		result run-installed-example $? "exit $rc, linked to installed libnkv: $linked: $out"
	else
		result build-against-install 1 "flags '$flags': $(tail -5 "$TMP/cc.log")"
	fi
	# sync_roundtrip as README "Installing" says for a prefix the linker
	# does not search: the shared library, found by its runtime path
	# alone (no LD_LIBRARY_PATH).
	mkdir -p "$TMP/sync" && cp examples/sync_roundtrip.c "$TMP/sync/"
	if cc -std=c11 -O2 -Wall -Werror "$TMP/sync/sync_roundtrip.c" \
		$(pkg-config --cflags --libs nkv) -Wl,-rpath,"$DEST$PREFIX/lib" \
		-o "$TMP/sync_installed" >"$TMP/cc-sync.log" 2>&1; then
		out=$(env -u LD_LIBRARY_PATH timeout 60 "$TMP/sync_installed" "vfio-user:$TMP/t.sock" 2>&1)
		rc=$?
		libs=$(env -u LD_LIBRARY_PATH ldd "$TMP/sync_installed" 2>&1)
		grep -q "$DEST$PREFIX/lib/libnkv.so.$soversion" <<<"$libs"
		linked=$?
		[ $rc -eq 0 ] && [ $linked -eq 0 ] && grep -q "every answer as expected: ok" <<<"$out"
		result run-installed-sync-roundtrip-by-rpath $? "exit $rc, linked by rpath: $linked: $out $libs"
	else
		result run-installed-sync-roundtrip-by-rpath 1 "$(tail -5 "$TMP/cc-sync.log")"
	fi
	# The self-contained example builds from its own source and the
	# installed headers alone (a directory of its own), as its comment says.
	mkdir -p "$TMP/solo" && cp examples/first_retrieve_cpu.c "$TMP/solo/"
	if cc -std=c11 -O2 -Wall -Werror "$TMP/solo/first_retrieve_cpu.c" $flags -o "$TMP/first_installed" \
		>"$TMP/cc-first.log" 2>&1; then
		out=$(LD_LIBRARY_PATH=$DEST$PREFIX/lib timeout 60 "$TMP/first_installed" "vfio-user:$TMP/t.sock" 2>&1)
		rc=$?
		[ $rc -eq 0 ] && grep -q "all bytes match" <<<"$out"
		result run-installed-first-retrieve $? "exit $rc: $(tail -3 <<<"$out")"
	else
		result run-installed-first-retrieve 1 "flags '$flags': $(tail -5 "$TMP/cc-first.log")"
	fi
	# The Python package, installed beside the library for Debian's
	# python3, finds the installed libnkv on its own and runs its selftest.
	pydir=$DEST$(make -s BUILD="$B" print-pydir PREFIX="$PREFIX")
	if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import numpy" 2>/dev/null; then
		out=$(PYTHONPATH=$pydir timeout 60 /usr/bin/python3 -m nkv.selftest "vfio-user:$TMP/t.sock" 2>&1)
		rc=$?
		[ $rc -eq 0 ] && [ -e "$pydir/nkv/_config.py" ]
		result run-installed-python-selftest $? "exit $rc: $(tail -3 <<<"$out")"
	else
		echo "NKV-EX run-installed-python-selftest SKIP no /usr/bin/python3 with python3-numpy"
	fi
fi
echo "$FAILS failed"
[ $FAILS -eq 0 ]
