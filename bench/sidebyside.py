# SPDX-License-Identifier: MIT
"""bench/sidebyside.py - what the alternated-rounds scripts (bench/front.py,
bench/rpc_hostile.py) share: their common flags, the ratio summary
(median and range of per-round ratios), and where results are written."""
import argparse
import json
import os
import statistics


def parser(doc, out):
    """--build, --rounds and --out (default out), for a script whose
    docstring is doc."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=out)
    return ap


def span(v):
    """Per-round ratios as 'median (min-max)'."""
    return "%.2fx (%.2fx-%.2fx)" % (statistics.median(v), min(v), max(v))


def write(out, lines, data):
    """out.md (the table) and out.json (every figure)."""
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out + ".md", "w") as fh:
        fh.write("\n".join(lines) + "\n")
    with open(out + ".json", "w") as fh:
        json.dump(data, fh, indent=1)
