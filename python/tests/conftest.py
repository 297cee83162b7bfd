# SPDX-License-Identifier: MIT
"""pytest fixtures for the nkv package: nkv-target processes spawned per
backend (mem, rocksdb, rados), the package and libnkv from the build tree
unless NKV_LIB / PYTHONPATH say otherwise, and one "NKV-PY name
PASS|FAIL|SKIP [reason]" line per test at the end, which the CI stage
counts (scripts/stages.d/50-python.sh): a skipped test is a SKIP there.

The rados backend needs a Ceph cluster: scripts/ceph-dev-cluster.sh starts
a throwaway one (a few seconds) where Debian's ceph-mon is installed;
without it, or with NKV_PY_RADOS=0, the rados cases are skipped by name,
with the reason."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
BUILD = os.environ.get("NKV_BUILD", os.path.join(ROOT, "build"))
os.environ.setdefault("NKV_LIB", os.path.join(BUILD, "lib", "libnkv.so"))
TARGET = os.environ.get("NKV_TARGET_BIN", os.path.join(BUILD, "bin", "nkv-target"))
# An Exec module every target allowlists as op-ID 1 under key "pyexec"
# (docs/exec.md): the input, then the value's first 4 bytes.
EXEC_MODULE = b"return function(v, i) return i .. v:sub(1, 4) end"
EXEC_ROW = "1:1:%s:%s" % (hashlib.sha256(EXEC_MODULE).hexdigest(), b"pyexec".hex())


class Target:
    """One nkv-target process on a socket of its own, stopped by its pid."""

    def __init__(self, backend: str, extra: list, tmp: str) -> None:
        self.backend = backend
        self.sock = os.path.join(tmp, f"{backend}.sock")
        self.log = open(os.path.join(tmp, f"{backend}.log"), "w")
        cmd = [TARGET, "--socket", self.sock, "--backend", backend, "--log-level", "error",
               "--poll-interval-ns", "2000", "--exec-allow", EXEC_ROW] + extra
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(500):
            if os.path.exists(self.sock):
                break
            if self.proc.poll() is not None:
                raise RuntimeError(f"nkv-target --backend {backend} exited {self.proc.returncode}")
            time.sleep(0.02)
        self.uri = f"vfio-user:{self.sock}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class Ceph:
    def __init__(self, tmp: str) -> None:
        self.dir = os.path.join(tmp, "ceph")
        self.script = os.path.join(ROOT, "scripts", "ceph-dev-cluster.sh")
        r = subprocess.run([self.script, "start", self.dir], capture_output=True, text=True,
                           timeout=180)
        if r.returncode:
            raise RuntimeError("ceph-dev-cluster.sh start: " + (r.stderr + r.stdout)[-800:])
        self.conf = os.path.join(self.dir, "ceph.conf")

    def stop(self) -> None:
        subprocess.run([self.script, "stop", self.dir], capture_output=True, timeout=120)


@pytest.fixture(scope="session")
def tmpdir_session():
    d = tempfile.mkdtemp(prefix="nkv-py-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


_targets: dict = {}


@pytest.fixture(scope="session", params=["mem", "rocksdb", "rados"])
def target(request, tmpdir_session):
    backend = request.param
    if backend == "rados":
        if os.environ.get("NKV_PY_RADOS") == "0":
            pytest.skip("rados: NKV_PY_RADOS=0")
        if not shutil.which("ceph-mon"):
            pytest.skip("rados: needs a Ceph cluster and ceph-mon is not installed "
                        "(scripts/ceph-dev-cluster.sh)")
    if backend not in _targets:
        extra: list = []
        ceph = None
        if backend == "rocksdb":
            extra = ["--db", os.path.join(tmpdir_session, "db"), "--sync", "none"]
        elif backend == "rados":
            ceph = Ceph(tmpdir_session)
            extra = ["--conf", ceph.conf, "--pool", "kvpool", "--ns-map", "1=pytest"]
        t = Target(backend, extra, tmpdir_session)
        t.ceph = ceph
        _targets[backend] = t
        request.addfinalizer(lambda: _stop(backend))
    return _targets[backend]


def _stop(backend: str) -> None:
    t = _targets.pop(backend, None)
    if t:
        t.stop()
        if t.ceph:
            t.ceph.stop()


@pytest.fixture()
def conn(target):
    import nkv
    with nkv.connect(target.uri) as c:
        yield c


@pytest.fixture()
def ns(conn):
    with conn.namespace() as n:
        yield n


_results: list = []


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
            _results.append((report.nodeid, "SKIP", reason.replace("Skipped: ", "")))
        elif report.failed:
            _results.append((report.nodeid, "FAIL", report.when))
        else:
            _results.append((report.nodeid, "PASS", ""))
    elif report.when == "teardown" and report.failed:
        _results.append((report.nodeid, "FAIL", "teardown"))


def pytest_terminal_summary(terminalreporter):
    for nodeid, res, why in _results:
        name = nodeid.split("::", 1)[-1]
        terminalreporter.write_line(f"NKV-PY {name} {res}{' ' + why if why else ''}")
