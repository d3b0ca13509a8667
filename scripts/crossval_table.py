#!/usr/bin/env python3
"""Prints docs/simulation.md's cross-validation table from compare.json
files of emulated (A) and simulated (B) runs: per configuration, the median
and range over repetitions of each side, and the simulated median's
difference from the emulated one's."""
import json
import re
import statistics
import sys


def fmt(v, unit):
    if v is None:
        return "-"
    if unit == "ms":
        return f"{v / 1000:.3g}"
    if unit == "mbit":
        return f"{v * 1000:.3g}"
    return f"{v:.0f}"


def cell(vals, unit):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-", None
    m = statistics.median(vals)
    if len(vals) == 1:
        return fmt(m, unit), m
    return f"{fmt(m, unit)} ({fmt(min(vals), unit)}–{fmt(max(vals), unit)})", m


def diff(a, b):
    if a is None or b is None or a == 0:
        return "-"
    return f"{(b - a) / a * 100:+.0f}%"


cols = [("goodput (Mbit/s)", "goodput_gbps", "mbit"), ("long P50 (ms)", "long_p50_us", "ms"),
        ("short P50 (ms)", "short_p50_us", "ms"), ("short P99 (ms)", "short_p99_us", "ms"),
        ("queue peak (pkts)", "max_queue_pkts", "n"), ("drops", "switch_drops", "n")]
# The emulated short tail's host share (latency anatomy), beside the
# difference: the simulator has no host time.
host = ("host share of emulated short tail", "tail_host_share")
head = ["configuration", "reps"]
for name, _, _ in cols:
    head += [name + " emulated", "simulated", "Δ"]
head.append(host[0])
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for path in sys.argv[1:]:
    c = json.load(open(path))
    groups = {}
    for p in c["pairs"]:
        key = re.sub(r"-r\d+$", "", p["name"])
        groups.setdefault(key, []).append(p)
    for key, ps in groups.items():
        row = [key, str(len(ps))]
        for _, field, unit in cols:
            a, am = cell([p["a"].get(field) for p in ps], unit)
            b, bm = cell([p["b"].get(field) for p in ps], unit)
            row += [a, b, diff(am, bm) if unit != "n" else ""]
        shares = [p["a"].get(host[1]) for p in ps if p["a"].get(host[1]) is not None]
        row.append(f"{statistics.median(shares):.2f}" if shares else "-")
        print("| " + " | ".join(row) + " |")
