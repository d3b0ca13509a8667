#!/usr/bin/env python3
"""Prints where a ring collective's step time goes, per experiment, from a
run's rpcs.csv: for each completed step message (a row with a collective),

  lag       input_ns -> sent_ns: from its input's arrival at the host to the
            agent sending it (the host's reaction)
  out       sent_ns -> req_out_ns: until the transport had its last byte
            out of the host (engine transports; TCP records none)
  delivery  sent_ns -> the next host's input_ns for the next step: the
            message's one-way trip to the next host, whole
  answered  sent_ns -> done_ns
  step      sent_ns -> the next host's send of the next step: lag + delivery

as P50 / P99 in ms, with the calibrated unloaded RTT of a message that long
(manifest.json, the transport's) for comparison, and the switch's drops.

Usage: scripts/collective_steps.py RUN_DIR"""
import csv
import json
import statistics
import sys
from collections import defaultdict
from runfiles import open_run_file


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(round(q * len(v))) - 1))]


def interp(rtt_us, length):
    pts = sorted((int(k), v) for k, v in rtt_us.items())
    for (l0, r0), (l1, r1) in zip(pts, pts[1:]):
        if l0 <= length <= l1:
            return r0 + (length - l0) / (l1 - l0) * (r1 - r0)
    return None


def main(run):
    with open(f"{run}/manifest.json") as f:
        man = json.load(f)
    with open(f"{run}/summary.json") as f:
        drops = {e["name"]: (e.get("switch") or {}).get("drops") for e in json.load(f)["experiments"]}
    rows = defaultdict(list)
    with open_run_file(run, "rpcs.csv") as f:
        for r in csv.DictReader(f):
            if r.get("collective") and r["status"] == "completed":
                rows[r["experiment"]].append(r)
    tr = {e["name"]: e.get("transport", "") for e in man["experiments"]}
    print("experiment | lag | out | delivery | answered | step | unloaded RTT | drops")
    for exp, rs in rows.items():
        nxt = {(r["iteration"], r["client"], int(r["step"])): r for r in rs}
        m = defaultdict(list)
        for r in rs:
            sent = int(r["sent_ns"])
            if int(r["input_ns"] or 0) > 0:
                m["lag"].append(sent - int(r["input_ns"]))
            m["answered"].append(int(r["done_ns"]) - sent)
            if int(r.get("req_out_ns") or 0) > 0:
                m["out"].append(int(r["req_out_ns"]) - sent)
            n = nxt.get((r["iteration"], r["server_host"], int(r["step"]) + 1))
            if n and int(n["input_ns"] or 0) > 0:
                m["delivery"].append(int(n["input_ns"]) - sent)
                m["step"].append(int(n["sent_ns"]) - sent)
        cells = []
        for k in ("lag", "out", "delivery", "answered", "step"):
            v = m[k]
            cells.append(f"{statistics.median(v) / 1e6:.2f} / {pct(v, 0.99) / 1e6:.2f}" if v else "-")
        cal = (man.get("calibration") or {}).get(tr.get(exp, ""), {})
        length = statistics.median(int(r["req_bytes"]) for r in rs)
        base = interp(cal.get("rtt_us") or {}, length)
        cells.append(f"{base / 1e3:.2f}" if base else "-")
        cells.append(str(drops.get(exp)))
        print(exp, "|", " | ".join(cells))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
