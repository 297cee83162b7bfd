#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Memory regions side by side (issue 42's goals, docs/bench.md).

Three measurements, each an interleaved A/B over --runs rounds on the same
machine in one invocation, medians and spread reported:

  scatter   2 MiB Retrieves into one registered region as one run and as
            64 runs spread over it (--dest region --scatter 64), embedded
            mem target: the scattered IOPS over the one-run IOPS.
  dest      Retrieves of 4 KiB, 64 KiB, 2 MiB and 32 MiB into one registered
            region (--dest region, no slots) against the same into slots.
  slots     the slot path of this build against another build's nkv-bench
            (--baseline BIN, e.g. the commit before regions), 4 KiB to
            32 MiB Retrieves: figures unchanged within the spread.
  example   examples/prefix_cache_cpu (default shape: 32 layers, 2 MiB
            blocks, 128 blocks, 75 % shared) with its pages in the queue
            pair's slots and with --dest region (the engine's own cache in
            vLLM's layout), nkv-target its own process: the share of the
            load hidden behind compute, and the load alone.
  rss       one ring of 1023 Retrieves of 2 MiB (--batch-size 1023, one
            doorbell) against nkv-target as its own process: the client's
            peak RSS with the slot pool and with --dest region (a 2 GiB
            region, no slots), from getrusage of the child.

usage: bench/regions.py [--build DIR] [--baseline NKV_BENCH] [--runs N]
                        [--out DIR] [--only scatter,dest,slots,example,rss]
Writes OUT/regions.json and OUT/regions.md; prints the table.
"""
import argparse
import json
import re
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run_bench(exe, args, timeout=600):
    """One nkv-bench run with --json: its report (every value checked)."""
    p = subprocess.run([exe, "--quiet", "--json"] + args, capture_output=True, text=True,
                       timeout=timeout)
    if p.returncode != 0:
        raise SystemExit("nkv-bench %s: exit %d: %s" % (" ".join(args), p.returncode,
                                                        p.stderr.strip()[-400:]))
    j = json.loads(p.stdout)
    if j["unexpected"] or j["errors"]["verify_failures"]:
        raise SystemExit("nkv-bench %s: %d unexpected outcomes" % (" ".join(args),
                                                                 j["unexpected"]))
    return j


def spread(xs):
    m = statistics.median(xs)
    return {"median": m, "min": min(xs), "max": max(xs),
            "spread_pct": 100.0 * (max(xs) - min(xs)) / m if m else 0.0}


def ab(label, a, b, runs):
    """Interleave A and B @runs times; the IOPS of each and the ratio B / A."""
    ia, ib, ratios = [], [], []
    for _ in range(runs):
        ja = run_bench(*a)
        jb = run_bench(*b)
        ia.append(ja["iops"])
        ib.append(jb["iops"])
        ratios.append(jb["iops"] / ja["iops"])
    return {"label": label, "a": spread(ia), "b": spread(ib), "ratio": spread(ratios)}


def scatter(o, runs):
    common = ["--kv-op", "retrieve", "--value-size", "2M", "--num-keys", "256", "--batch-size",
              "32", "--iterations", "8", "--dest", "region"]
    return [ab("2 MiB Retrieve, batch 32: 64 runs / one run", (o.bench, common),
               (o.bench, common + ["--scatter", "64"]), runs)]


SIZES = (("4K", "4096", "16"), ("64K", "1024", "8"), ("2M", "256", "8"), ("32M", "32", "4"))


def dest(o, runs):
    """Retrieves into a registered region against the same into slots."""
    out = []
    for size, keys, it in SIZES:
        args = ["--kv-op", "retrieve", "--value-size", size, "--num-keys", keys, "--batch-size",
                "32" if size != "32M" else "8", "--iterations", it]
        out.append(ab("%s Retrieve, batch %s: --dest region / slots" % (
            size, "32" if size != "32M" else "8"), (o.bench, args),
            (o.bench, args + ["--dest", "region"]), runs))
    return out


def slots(o, runs):
    out = []
    for size, keys, it in SIZES:
        batch = "32" if size != "32M" else "8"
        args = ["--kv-op", "retrieve", "--value-size", size, "--num-keys", keys, "--batch-size",
                batch, "--iterations", it]
        out.append(ab("%s Retrieve slots, batch %s: this build / baseline" % (size, batch),
                      (o.baseline, args), (o.bench, args), runs))
    return out


def start_target(o, tmp, *extra):
    sock = os.path.join(tmp, "t.sock")
    tgt = subprocess.Popen([o.target, "--socket", sock, "--backend", "mem"] + list(extra),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if os.path.exists(sock):
            break
        time.sleep(0.05)
    return tgt, "vfio-user:" + sock


def example(o, runs):
    """The prefix_cache example, slots then region, @runs rounds each."""
    exe = os.path.join(o.build, "examples", "prefix_cache_cpu")
    tmp = tempfile.mkdtemp(prefix="nkv-regions-")
    tgt, uri = start_target(o, tmp, "--poll-interval-ns", "2000", "--capacity", "4G")
    res = {"slots": [], "region": []}
    try:
        for _ in range(runs):
            for dest in ("slots", "region"):
                p = subprocess.run([exe, "--dest", dest, uri], capture_output=True, text=True,
                                   timeout=600)
                if p.returncode:
                    raise SystemExit("prefix_cache_cpu --dest %s: exit %d: %s" % (
                        dest, p.returncode, p.stderr.strip()[-300:]))
                hid = re.search(r"(\d+) % of the retrieval time hidden", p.stdout)
                alone = re.search(r"MiB in ([0-9.]+) ms alone, ([0-9.]+) GB/s", p.stdout)
                res[dest].append({"hidden_pct": int(hid.group(1)),
                                  "alone_ms": float(alone.group(1)),
                                  "alone_gbs": float(alone.group(2))})
    finally:
        tgt.terminate()
        tgt.wait(10)
    return {d: {"hidden_pct": spread([r["hidden_pct"] for r in v]),
                "alone_ms": spread([r["alone_ms"] for r in v]), "runs": v}
            for d, v in res.items()}


def rss_child(exe, args):
    """Run one nkv-bench from a fresh python process, whose RUSAGE_CHILDREN
    maximum is then that nkv-bench's own peak RSS (KiB)."""
    code = ("import resource,subprocess,sys,json;"
            "p=subprocess.run(sys.argv[1:],capture_output=True,text=True);"
            "print(json.dumps({'rc':p.returncode,'out':p.stdout,'err':p.stderr[-400:],"
            "'rss':resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))")
    p = subprocess.run([sys.executable, "-c", code, exe, "--quiet", "--json"] + args,
                       capture_output=True, text=True, timeout=900)
    r = json.loads(p.stdout)
    if r["rc"] != 0:
        raise SystemExit("nkv-bench %s: exit %d: %s" % (" ".join(args), r["rc"], r["err"]))
    j = json.loads(r["out"])
    if j["unexpected"] or j["errors"]["verify_failures"]:
        raise SystemExit("nkv-bench %s: unexpected outcomes" % " ".join(args))
    return j, r["rss"]


def rss(o, runs):
    tmp = tempfile.mkdtemp(prefix="nkv-regions-")
    tgt, uri = start_target(o, tmp, "--capacity", "6G")
    try:
        args = ["--target", uri, "--kv-op", "retrieve", "--value-size", "2M", "--num-keys", "1023",
                "--batch-size", "1023", "--queue-length", "1024", "--iterations", "2"]
        res = {"slots": [], "region": []}
        for _ in range(runs):
            for dest in ("slots", "region"):
                j, kib = rss_child(o.bench, args + ["--dest", dest])
                res[dest].append({"rss_kib": kib, "iops": j["iops"],
                                  "bytes_per_s": j["bytes_per_s"]})
        region = 1023 * 2 * 1024 * 1024
        return {"region_bytes": region, "runs": res,
                "slots_peak_mib": max(r["rss_kib"] for r in res["slots"]) / 1024.0,
                "region_peak_mib": max(r["rss_kib"] for r in res["region"]) / 1024.0,
                "goal_mib": region / 1048576.0 + 64}
    finally:
        tgt.terminate()
        tgt.wait(10)


def table(res):
    lines = ["| figure | A IOPS (median) | B IOPS (median) | B / A median | B / A range | spread A, B |",
             "|---|---|---|---|---|---|"]
    for r in res.get("scatter", []) + res.get("dest", []) + res.get("slots", []):
        lines.append("| %s | %.0f | %.0f | %.3f | %.3f-%.3f | %.0f %%, %.0f %% |" % (
            r["label"], r["a"]["median"], r["b"]["median"], r["ratio"]["median"],
            r["ratio"]["min"], r["ratio"]["max"], r["a"]["spread_pct"], r["b"]["spread_pct"]))
    if "example" in res:
        x = res["example"]
        lines.append("")
        lines.append("prefix_cache_cpu, default shape: retrieval hidden behind compute, median "
                     "%.0f %% with slots (%.0f-%.0f), %.0f %% with --dest region (%.0f-%.0f); "
                     "the load alone %.1f ms with slots, %.1f ms with the region (medians)" % (
                         x["slots"]["hidden_pct"]["median"], x["slots"]["hidden_pct"]["min"],
                         x["slots"]["hidden_pct"]["max"], x["region"]["hidden_pct"]["median"],
                         x["region"]["hidden_pct"]["min"], x["region"]["hidden_pct"]["max"],
                         x["slots"]["alone_ms"]["median"], x["region"]["alone_ms"]["median"]))
    if "rss" in res:
        x = res["rss"]
        lines.append("")
        lines.append("1023 x 2 MiB Retrieves, one doorbell, nkv-target its own process: client "
                     "peak RSS %.0f MiB with slots, %.0f MiB with --dest region (goal: region "
                     "%.0f MiB + 64 = %.0f MiB)" % (x["slots_peak_mib"], x["region_peak_mib"],
                                                     x["region_bytes"] / 1048576.0, x["goal_mib"]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--baseline", help="another build's nkv-bench, for the slots figures")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default="bench/results/regions")
    ap.add_argument("--only", default="scatter,dest,slots,example,rss")
    o = ap.parse_args()
    o.bench = os.path.join(o.build, "bin", "nkv-bench")
    o.target = os.path.join(o.build, "bin", "nkv-target")
    only = o.only.split(",")
    res = {"machine": os.uname().nodename, "cpus": os.cpu_count(),
           "load_before": os.getloadavg()}
    if "scatter" in only:
        res["scatter"] = scatter(o, o.runs)
    if "slots" in only:
        if not o.baseline:
            print("regions: slots: skipped (no --baseline)", file=sys.stderr)
        else:
            res["slots"] = slots(o, o.runs)
    if "dest" in only:
        res["dest"] = dest(o, o.runs)
    if "example" in only:
        res["example"] = example(o, o.runs)
    if "rss" in only:
        res["rss"] = rss(o, max(1, o.runs // 3))
    res["load_after"] = os.getloadavg()
    os.makedirs(o.out, exist_ok=True)
    with open(os.path.join(o.out, "regions.json"), "w") as f:
        json.dump(res, f, indent=1)
    t = table(res)
    with open(os.path.join(o.out, "regions.md"), "w") as f:
        f.write("Load %.1f before, %.1f after (%d CPUs).\n\n%s\n" % (
            res["load_before"][0], res["load_after"][0], res["cpus"], t))
    print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
