#!/usr/bin/env python3
"""Prints docs/simulation.md's table of the Homa paper's headline metric
from one or more run directories (summary.json): the P99 slowdown of the
shortest 50% of messages per workload (the swept sizes parameter) and
configuration, the median over every repetition and run given, with the
range, and the RPCs that did not complete.

Usage: scripts/paper_table.py RUN_DIR [RUN_DIR ...]"""
import json
import statistics
import sys


def main(dirs):
    cells, configs, workloads, failed = {}, [], [], {}
    for d in dirs:
        with open(f"{d}/summary.json") as f:
            s = json.load(f)
        param = next((p for p in s.get("swept_params") or [] if p.startswith("phases.") and p.endswith(".sizes")), None)
        for e in s["experiments"]:
            w = str(e["params"].get(param, "-")) if param else "-"
            c = e.get("config") or e["transport"]
            if w not in workloads:
                workloads.append(w)
            if c not in configs:
                configs.append(c)
            h = e.get("shortest_half") or {}
            if h.get("s99") is not None:
                cells.setdefault((w, c), []).append(h["s99"])
            r = e["rpcs"]
            failed[(w, c)] = failed.get((w, c), 0) + r["failed"]
    print("| workload | " + " | ".join(configs) + " |")
    print("|---" * (len(configs) + 1) + "|")
    for w in workloads:
        row = []
        for c in configs:
            v = cells.get((w, c))
            if not v:
                row.append("-")
                continue
            t = f"{statistics.median(v):.2f}"
            if len(v) > 1:
                t += f" ({min(v):.2f}–{max(v):.2f})"
            if failed.get((w, c)):
                t += f", {failed[(w, c)]} not completed"
            row.append(t)
        print(f"| {w} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
