#!/usr/bin/env python3
"""Prints the RoCE measurements of docs/transports.md from run directories
(summary.json, rpcs.csv, telemetry.csv): one row per experiment with the
RPCs' books, the short-message P99, the goodput of long messages (request
of at least --long bytes, or those of --client alone), the switch's drops,
CE marks and PAUSE frames, the hosts' pauses, CNPs and retransmissions,
and the bottleneck queue (--port SW/PORT, --queue Q): its peak and the
share of telemetry samples below Kmin, between Kmin and Kmax, and above
Kmax (--kmin, --kmax). With several run directories it adds, per
configuration, the median and range over them (--summary).

Usage: scripts/roce_table.py [--client H] [--port s1/1] [--queue 3]
       [--kmin 10] [--kmax 60] [--long 100000] [--summary] RUN_DIR..."""
import argparse
import csv
import json
import statistics
from runfiles import open_run_file


def rows_of(d, a):
    with open(f"{d}/summary.json") as f:
        s = json.load(f)
    long_bytes, n_long = {}, {}
    with open_run_file(d, "rpcs.csv") as f:
        for r in csv.DictReader(f):
            if r["phase"] != "measure" or r["status"] != "completed":
                continue
            if a.client and r["client"] != a.client:
                continue
            if not a.client and int(r["req_bytes"]) < a.long:
                continue
            e = r["experiment"]
            long_bytes[e] = long_bytes.get(e, 0) + int(r["req_bytes"]) + int(r["resp_bytes"])
            n_long[e] = n_long.get(e, 0) + 1
    sw, port = a.port.split("/")
    depths = {}
    try:  # a simulated run writes no telemetry
        with open(f"{d}/telemetry.csv") as f:
            for r in csv.DictReader(f):
                if r["switch"] == sw and r["port"] == port and r["queue"] == str(a.queue):
                    depths.setdefault(r["experiment"], []).append(int(r["depth_pkts"]))
    except FileNotFoundError:
        pass
    out = []
    for e in s["experiments"]:
        name, st = e["name"], e["switch"]
        c = (e.get("transport_internals") or {}).get("counters") or {}
        pfc = st.get("pfc") or []
        q = depths.get(name, [])
        dur = e.get("duration_s") or 0
        out.append({
            "run": d.rstrip("/").split("/")[-1], "experiment": name, "config": e.get("config") or e["transport"],
            "issued": e["rpcs"]["issued"], "completed": e["rpcs"]["completed"], "failed": e["rpcs"]["failed"],
            "in_flight": e["rpcs"]["in_flight"],
            "short_p99_ms": (e.get("short") or {}).get("p99_us", 0) / 1e3 if (e.get("short") or {}).get("p99_us") else None,
            "long_mbps": long_bytes.get(name, 0) * 8 / dur / 1e6 if dur else None, "long_n": n_long.get(name, 0),
            "drops": st["drops"], "ce": st["ce_marks"],
            "pauses_sent": sum(p["pauses_sent"] for p in pfc), "pauses_switch_rx": sum(p["pauses_received"] for p in pfc),
            "paused_ms_switch": sum(p["paused_ms"] for p in pfc),
            "host_pauses": c.get("homa_pfc_pauses_received", 0), "host_paused_ms": c.get("homa_pfc_paused_us", 0) / 1e3,
            "cnps": c.get("homa_cnps_sent", 0), "retransmits": c.get("homa_retransmits", 0),
            "peak": max(q) if q else None,
            "below_kmin": sum(x < a.kmin for x in q) / len(q) if q else None,
            "in_band": sum(a.kmin <= x <= a.kmax for x in q) / len(q) if q else None,
            "above_kmax": sum(x > a.kmax for x in q) / len(q) if q else None,
        })
    return out


def fmt(v, p=1):
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.{p}f}"
    return str(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--client", default="")
    ap.add_argument("--port", default="s1/1")
    ap.add_argument("--queue", type=int, default=3)
    ap.add_argument("--kmin", type=int, default=10)
    ap.add_argument("--kmax", type=int, default=60)
    ap.add_argument("--long", type=int, default=100000)
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    rows = [r for d in a.dirs for r in rows_of(d, a)]
    cols = ["experiment", "issued", "completed", "failed", "in_flight", "short_p99_ms", "long_mbps", "drops", "ce",
            "pauses_sent", "pauses_switch_rx", "paused_ms_switch", "host_pauses", "cnps", "retransmits", "peak",
            "below_kmin", "in_band", "above_kmax"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(fmt(r[c], 2 if c in ("below_kmin", "in_band", "above_kmax") else 1) for c in cols) + " |")
    if a.summary:
        print()
        print("| configuration | runs | short P99 ms, median (range) | long goodput Mbit/s, median (range) | drops, median (range) |")
        print("|---|---|---|---|---|")
        by = {}
        for r in rows:
            by.setdefault(r["config"], []).append(r)
        for cfg, rs in by.items():
            def spread(k, p=1):
                v = [r[k] for r in rs if r[k] is not None]
                if not v:
                    return "—"
                return f"{statistics.median(v):.{p}f} ({min(v):.{p}f}–{max(v):.{p}f})"
            print(f"| {cfg} | {len(rs)} | {spread('short_p99_ms')} | {spread('long_mbps')} | {spread('drops', 0)} |")


if __name__ == "__main__":
    main()
