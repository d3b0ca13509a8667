#!/usr/bin/env python3
"""Prints docs/scenarios.md's table of scenarios/adversaries.yaml: per
attack kind and switch defences on/off, the victims' short-message P99
(all victims' short RPCs, and the probes phase alone), long-message
goodput, failed RPCs, and what the switch's defences counted (re-marked,
metered, spoofed), each the median over every repetition of every run
given with the range, and the short P99 as a multiple of the
attack-free run's, without defences and with the same setting.

Usage: scripts/adversaries_table.py RUN_DIR [RUN_DIR ...]"""
import json
import statistics
import sys

KINDS = ["none", "forged_grants", "forged_resend", "unsched_flood", "priority_abuse", "malformed"]


def cell(vals, fmt):
    if not vals:
        return "-"
    m = statistics.median(vals)
    if len(vals) == 1:
        return fmt(m)
    return f"{fmt(m)} ({fmt(min(vals))}–{fmt(max(vals))})"


def main(dirs):
    rows = {}
    for d in dirs:
        with open(f"{d}/summary.json") as f:
            s = json.load(f)
        for e in s["experiments"]:
            p = e["params"]
            key = (p.get("adversaries.0.kind", "none"), str(p.get("switch.defences", "true")))
            r = rows.setdefault(key, {"p99": [], "probe": [], "gput": [], "failed": 0, "issued": 0, "rem": [], "met": [], "spf": [], "n": 0})
            r["n"] += 1
            if e["short"].get("p99_us") is not None:
                r["p99"].append(e["short"]["p99_us"] / 1000)
            for ph in e.get("phases") or []:
                if ph["name"] == "probes" and ph.get("p99_us") is not None:
                    r["probe"].append(ph["p99_us"] / 1000)
            r["gput"].append(e["goodput_gbps"] * 1000)
            r["failed"] += e["rpcs"]["failed"]
            r["issued"] += e["rpcs"]["issued"]
            sw = e["switch"]
            r["rem"].append(sw.get("remarked_pkts", 0))
            r["met"].append(sw.get("metered_pkts", 0))
            r["spf"].append(sw.get("spoof_drops", 0))
    ms = lambda v: f"{v:.3g} ms"
    mb = lambda v: f"{v:.1f}"
    n0 = lambda v: f"{v:,.0f}"
    print("| attack | switch defences | runs | short P99 | × attack-free, defences off | × attack-free, same defences | goodput (Mbit/s) | failed / issued | re-marked | metered | spoofed, dropped |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for k in KINDS:
        for on in ("false", "true"):
            r = rows.get((k, on))
            if not r:
                continue
            ratios = []
            for base in (rows.get(("none", "false")), rows.get(("none", on))):
                ratios.append("-")
                if base and base["p99"] and r["p99"]:
                    ratios[-1] = f"{statistics.median(r['p99']) / statistics.median(base['p99']):.2f}"
            print(f"| {k} | {'on' if on == 'true' else 'off'} | {r['n']} | {cell(r['p99'], ms)} | {ratios[0]} | {ratios[1]} | {cell(r['gput'], mb)} | "
                  f"{r['failed']} / {r['issued']:,} | {cell(r['rem'], n0)} | {cell(r['met'], n0)} | {cell(r['spf'], n0)} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
