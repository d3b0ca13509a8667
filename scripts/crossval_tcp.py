#!/usr/bin/env python3
"""Prints docs/simulation.md's second TCP-family table: per configuration of
an emulated run (the kernel's TCP) and a simulated one (the simulator's
model of TCP) of the same scenario, the bottleneck's queueing (the switch's
queue-delay percentiles of the busiest queue on the busiest port), its CE
marks and drops, and the senders' retransmitted segments; each the median
over repetitions with the range.

    scripts/crossval_tcp.py OUT/emu-incast-tcp OUT/sim-incast-tcp
"""
import json
import os
import re
import statistics
import sys


def bottleneck(path):
    """The busiest port's busiest queue of the one switch file in path."""
    best = None
    for f in sorted(os.listdir(path)):
        if not f.endswith(".json"):
            continue
        for p in json.load(open(os.path.join(path, f)))["ports"]:
            if best is None or p["tx_bytes"] > best["tx_bytes"]:
                best = p
    queues = best["queues"]
    q = max(queues, key=lambda q: q["sent_bytes"])
    return {"delay_p50_ms": q["delay_p50_us"] / 1000, "delay_p99_ms": q["delay_p99_us"] / 1000,
            "ce": sum(x["ce_marked_pkts"] for x in queues), "drops": sum(x["drop_pkts"] for x in queues),
            "queue": q["queue"]}


def retrans(counters):
    return counters.get("tcp_retrans_segs", counters.get("tcpmodel_retransmits", 0))


def runs(d):
    m = json.load(open(os.path.join(d, "manifest.json")))
    out = {}
    for e in m["experiments"]:
        key = re.sub(r"-r\d+$", "", e["name"])
        row = bottleneck(os.path.join(d, "switch", e["name"]))
        row["retrans"] = retrans(e.get("transport_counters") or {})
        out.setdefault(key, []).append(row)
    return out


def cell(vals):
    m = statistics.median(vals)
    f = (lambda v: f"{v:.3g}") if any(isinstance(v, float) for v in vals) else (lambda v: f"{v:.0f}")
    return f(m) if len(vals) == 1 else f"{f(m)} ({f(min(vals))}–{f(max(vals))})"


emu, sim = runs(sys.argv[1]), runs(sys.argv[2])
cols = [("busiest queue", "queue"), ("queue delay P50 (ms)", "delay_p50_ms"), ("queue delay P99 (ms)", "delay_p99_ms"),
        ("CE marks", "ce"), ("drops", "drops"), ("retransmitted segments", "retrans")]
head = ["configuration", "reps"]
for name, _ in cols:
    head += [name + " emulated", "simulated"]
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for key in emu:
    if key not in sim:
        continue
    row = [key, str(len(emu[key]))]
    for _, f in cols:
        row += [cell([r[f] for r in emu[key]]), cell([r[f] for r in sim[key]])]
    print("| " + " | ".join(row) + " |")
