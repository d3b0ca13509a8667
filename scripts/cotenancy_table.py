"""Prints the table of scripts/cotenancy_emulated.sh's runs: for each
host_qdisc, Homa's short-message P99 alone and beside TCP, their ratio,
and TCP's P99 (its 1 MB messages) alone and beside Homa; each the median
of the rounds with its range. Homa's ratio is to its P99 alone without
the host queue, as HomaModule's perf.txt gives it, and with it.

    python3 scripts/cotenancy_table.py OUT ROUNDS
"""

import json
import os
import statistics
import sys


def summary(out, kind, r):
    with open(os.path.join(out, f"{kind}-s{r}", "summary.json")) as f:
        return json.load(f)["experiments"]


def pick(exps, qdisc, transport, what="p99"):
    """The P99 (or P50) in µs of transport's RPCs in the experiment with
    host_qdisc: Homa's short messages, TCP's every message; what "lag" is
    the P99 of Homa's clients' send lag (how late the machine let them
    issue)."""
    for e in exps:
        if e["params"].get("host_qdisc") == qdisc and e["transport"] == transport:
            if what == "lag":
                return e["send_lag_us"]["p99"]
            return e["short"][what + "_us"] if transport == "homa" else e["rtt_us"][what]
    raise KeyError(f"no {transport} experiment with host_qdisc {qdisc}")


def spread(xs, unit=1e3, fmt="{:.1f}"):
    m = statistics.median(xs)
    return f"{fmt.format(m / unit)} ({fmt.format(min(xs) / unit)}–{fmt.format(max(xs) / unit)})"


def main():
    out, rounds = sys.argv[1], int(sys.argv[2])
    rows = {}
    for r in range(1, rounds + 1):
        shared, homa, tcp = (summary(out, k, r) for k in ("shared", "homa", "tcp-cubic"))
        for q in ("none", "pacer"):
            rows.setdefault(q, []).append({
                "homa_alone": pick(homa, q, "homa"), "homa_alone_none": pick(homa, "none", "homa"),
                "homa_shared": pick(shared, q, "homa"),
                "tcp_alone": pick(tcp, q, "tcp"), "tcp_alone_none": pick(tcp, "none", "tcp"),
                "tcp_shared": pick(shared, q, "tcp"),
                "homa_alone_p50": pick(homa, q, "homa", "p50"), "homa_shared_p50": pick(shared, q, "homa", "p50"),
                "lag_alone": pick(homa, q, "homa", "lag"), "lag_shared": pick(shared, q, "homa", "lag"),
            })
    print("| host_qdisc | Homa alone (ms) | Homa beside TCP (ms) | ratio to Homa alone, none | ratio to Homa alone, same qdisc | TCP alone (s) | TCP beside Homa (s) | ratio to TCP alone, none |")
    print("|---|---|---|---|---|---|---|---|")
    for q, rs in rows.items():
        col = lambda k: [x[k] for x in rs]
        ratio = lambda a, b: [x[a] / x[b] for x in rs]
        print(f"| `{q}` | {spread(col('homa_alone'))} | {spread(col('homa_shared'))} | "
              f"{spread(ratio('homa_shared', 'homa_alone_none'), 1)}x | {spread(ratio('homa_shared', 'homa_alone'), 1)}x | "
              f"{spread(col('tcp_alone'), 1e6, '{:.2f}')} | {spread(col('tcp_shared'), 1e6, '{:.2f}')} | "
              f"{spread(ratio('tcp_shared', 'tcp_alone_none'), 1, '{:.2f}')}x |")
    print()
    print("| host_qdisc | Homa P50 alone (ms) | Homa P50 beside TCP (ms) | Homa clients' send lag P99, alone (ms) | beside TCP (ms) |")
    print("|---|---|---|---|---|")
    for q, rs in rows.items():
        col = lambda k: [x[k] for x in rs]
        print(f"| `{q}` | {spread(col('homa_alone_p50'), 1e3, '{:.2f}')} | {spread(col('homa_shared_p50'), 1e3, '{:.2f}')} | "
              f"{spread(col('lag_alone'))} | {spread(col('lag_shared'))} |")
    print()
    for q, rs in rows.items():
        print(f"{q}: Homa P99 beside TCP / alone without the queue, by round:",
              ", ".join(f"{x['homa_shared'] / 1e3:.1f}/{x['homa_alone_none'] / 1e3:.1f}" for x in rs))


if __name__ == "__main__":
    main()
