#!/usr/bin/env python3
"""scripts/soak.py: long runs that must stay healthy (docs/soak.md).

Runs scenarios/soak/sim.yaml in the twin and, as root with Mininet,
scenarios/soak/emu.yaml emulated, each with --no-report, sampling every
process of the run (the orchestrator and all its descendants: switch,
agents) every few seconds: resident memory, threads and open descriptors.
Afterwards it checks, and exits non-zero on any failure:

  - the run ended with status 0;
  - the books balance: per experiment, issued = completed + failed, the
    failures' reasons add up to the failed count, and rpcs.csv holds one
    row per issued RPC;
  - the orchestrator lived long enough for its memory to be checked (at
    --scale 1), and every process that lived past half a minute kept its resident
    memory flat after its first minute (after the first quarter of its
    life if that is shorter): the peak RSS of the last fifth of its samples
    after the first minute exceeds the peak of the first fifth by at most
    10%, once that difference is extrapolated from the two windows' ends
    to the whole span after the first minute (rss_growth); and its threads
    and descriptors did not grow after the first minute (a leak grows them
    steadily);
  - nothing of the run is left: `homatb clean --run TAG --dry-run` finds no
    process, interface or file of its tag.

--self-check only checks the RSS statistic on synthetic series (a GC
sawtooth whose one-minute sample falls low or high passes, a linear leak of
11% over the run fails); every soak runs it first.

--scale shrinks every duration in minutes of the scenarios (a smoke test
of the soak itself: --scale 0.05 runs 90 s and 30 s).
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

from runfiles import open_run_file

GROWTH = 0.10    # allowed RSS growth after the first minute
SETTLE = 60.0    # seconds of a process's life before its size counts
WINDOW = 5       # the windows compared are each 1/WINDOW of the samples after SETTLE


def rss_growth(settled):
    """Growth of RSS over the span of settled [(t_s, rss_kib), ...] (sorted,
    at least two): (growth, first peak, last peak).

    A garbage-collected heap saws between collections, so one sample may
    fall high or low; the peak of a window holding several cycles does not.
    The windows are the first and last fifth of the samples; their peaks'
    difference, over the time between the windows' last samples, is scaled
    to the whole span, so a steady leak counts in full (a linear growth of
    g over the span yields g).
    """
    k = max(1, len(settled) // WINDOW)
    first, last = settled[:k], settled[-k:]
    p0 = max(s[1] for s in first)
    p1 = max(s[1] for s in last)
    span = settled[-1][0] - settled[0][0]
    apart = settled[-1][0] - first[-1][0]
    if apart <= 0:
        return 0.0, p0, p1
    slope = (p1 - p0) / apart
    # Relative to the size the trend gives at the span's start, so a
    # linear growth of g yields g exactly, as one sample at a minute did.
    start = p0 - slope * (first[-1][0] - settled[0][0])
    return slope * span / start, p0, p1


def self_check():
    """Problems of rss_growth on synthetic series: a sawtooth of 30% swing
    (a GC cycle of 40 s, sampled every 5 s, its first sample at a low or a
    high) must pass, and so must the switch's warm-up (a step in the
    second minute, then flat); a linear leak of 11% over 9 minutes must
    fail, and so must one of 11% in the last third only."""
    ts = [60 + 5 * i for i in range(109)]  # minutes 1 to 10
    span = ts[-1] - ts[0]
    saw = lambda phase: [(t, int(100_000 * (1 + 0.3 * (((t + phase) % 40) / 40)))) for t in ts]
    cases = [
        ("sawtooth, low at 1 min", saw(0), False),
        ("sawtooth, high at 1 min", saw(35), False),
        ("warm-up step in minute 2, then flat", [(t, 93_000 if t < 120 else 111_000) for t in ts], False),
        ("linear leak 11%", [(t, int(100_000 * (1 + 0.11 * (t - 60) / span))) for t in ts], True),
        ("sawtooth plus linear leak 11%", [(t, int(r * (1 + 0.11 * (t - 60) / span))) for t, r in saw(10)], True),
        ("leak of 11% in the last third", [(t, int(100_000 * (1 + 0.11 * max(0, t - 60 - 2 * span / 3) / (span / 3))))
                                           for t in ts], True),
    ]
    problems = []
    for name, series, leak in cases:
        g, _, _ = rss_growth(series)
        if (g > GROWTH) != leak:
            problems.append(f"self-check: {name}: growth {100 * g:.1f}%, expected {'over' if leak else 'within'} "
                            f"{100 * GROWTH:.0f}%")
    return problems


def descendants(root):
    """The pids of root and every process below it."""
    parent = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # comm may hold spaces and parentheses: the fields follow the last ')'.
        fields = stat[stat.rfind(")") + 2:].split()
        parent[int(d)] = int(fields[1])
    out, todo = set(), [root]
    while todo:
        p = todo.pop()
        out.add(p)
        todo.extend(c for c, pp in parent.items() if pp == p and c not in out)
    return out


def sample(pid):
    """(name, rss_kib, threads, fds, anon_kib, file_kib) of pid, None once
    it is gone. anon and file split the resident memory: the heap and stacks,
    and the pages of the binary and other files (which grow as code runs for
    the first time, not as a leak does)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        name = " ".join(a.decode(errors="replace") for a in argv[:4] if a)
        rss = threads = None
        anon = files = 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
                elif line.startswith("RssAnon:"):
                    anon = int(line.split()[1])
                elif line.startswith(("RssFile:", "RssShmem:")):
                    files += int(line.split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    if rss is None:  # a zombie or a kernel thread
        return None
    return name, rss, threads, fds, anon, files


def sampler(root, out, interval, stop):
    """Writes t,pid,name,rss_kib,threads,fds,anon_kib,file_kib rows until
    stop is set."""
    start = time.monotonic()
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_s", "pid", "name", "rss_kib", "threads", "fds", "anon_kib", "file_kib"])
        while not stop.wait(interval):
            t = round(time.monotonic() - start, 1)
            for pid in sorted(descendants(root)):
                s = sample(pid)
                if s:
                    w.writerow([t, pid, *s])
            f.flush()


def scaled(path, scale):
    """The scenario with every "<N>m" duration scaled, in a temp file."""
    if scale == 1:
        return path
    text = open(path).read()
    text = re.sub(r"\b(\d+)m\b", lambda m: f"{int(m.group(1)) * 60 * scale:g}s", text)
    fd, tmp = tempfile.mkstemp(suffix=".yaml")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return tmp


def check_books(run_dir):
    """Failures of the books: per experiment issued vs completed + failed."""
    problems = []
    man = json.load(open(os.path.join(run_dir, "manifest.json")))
    rows = {}
    with open_run_file(run_dir, "rpcs.csv") as f:
        r = csv.DictReader(f)
        for row in r:
            if row["phase"] != "warmup":  # issued counts the measured RPCs
                rows[row["experiment"]] = rows.get(row["experiment"], 0) + 1
    summary = json.load(open(os.path.join(run_dir, "summary.json")))
    for e in summary["experiments"]:
        c = e["rpcs"]
        if c["issued"] != c["completed"] + c["failed"]:
            problems.append(f"{e['name']}: issued {c['issued']} != completed {c['completed']} + failed {c['failed']}")
        reasons = sum((c.get("failures") or {}).values())
        if reasons != c["failed"]:
            problems.append(f"{e['name']}: failure reasons add up to {reasons}, failed {c['failed']}")
    for me in man["experiments"]:
        if me["name"] not in rows:
            problems.append(f"{me['name']}: no rows in rpcs.csv")
    for e in summary["experiments"]:
        if rows.get(e["name"], 0) != e["rpcs"]["issued"]:
            problems.append(f"{e['name']}: rpcs.csv holds {rows.get(e['name'], 0)} measured rows, summary issued {e['rpcs']['issued']}")
    return problems, rows


def check_samples(path):
    """Per process: RSS growth after its first minute (rss_growth), thread
    and fd growth."""
    by = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            by.setdefault((int(row["pid"]), row["name"]), []).append(
                (float(row["t_s"]), int(row["rss_kib"]), int(row["threads"]), int(row["fds"]),
                 int(row.get("anon_kib") or 0), int(row.get("file_kib") or 0)))
    problems, figures = [], []
    for (pid, name), ss in sorted(by.items()):
        t0 = ss[0][0]
        life = ss[-1][0] - t0
        if life < SETTLE / 2:
            continue  # not a long-lived process
        # A process that lives less than four minutes (the twin runs its
        # hour in about two) settles for a quarter of its life, so its
        # memory is still checked.
        settle = min(SETTLE, life / 4)
        settled = [s for s in ss if s[0] - t0 >= settle]
        if len(settled) < 2:
            continue
        base = settled[0]
        growth, p0, p1 = rss_growth([(s[0], s[1]) for s in settled])
        peak = max(s[1] for s in settled)
        thr = max(s[2] for s in settled) - base[2]
        fds = max(s[3] for s in settled) - base[3]
        at_peak = max(settled, key=lambda s: s[1])
        k = len(settled) // 3
        trend = ""
        if k:
            mean = lambda ss: sum(x[1] for x in ss) / len(ss)
            trend = f"; mean by thirds after {mean(settled[:k]) / 1024:.1f}, {mean(settled[k:-k] or settled[k:]) / 1024:.1f}, {mean(settled[-k:]) / 1024:.1f} MiB"
        figures.append(f"{name} (pid {pid}, {ss[-1][0] - t0:.0f} s): RSS peak of the first fifth after {settle:.0f} s "
                       f"{p0 / 1024:.1f} MiB, of the last fifth {p1 / 1024:.1f} MiB: growth over the run {100 * growth:+.1f}% "
                       f"(checked, <= {100 * GROWTH:.0f}%); sample at {settle:.0f} s {base[1] / 1024:.1f} MiB, peak after "
                       f"{peak / 1024:.1f} MiB at {at_peak[0] - t0:.0f} s (anonymous {base[4] / 1024:.1f} -> "
                       f"{at_peak[4] / 1024:.1f}, file-backed {base[5] / 1024:.1f} -> {at_peak[5] / 1024:.1f} MiB)"
                       f"{trend}; threads {base[2]}{thr:+d}; fds {base[3]}{fds:+d}")
        if growth > GROWTH:
            problems.append(f"{name} (pid {pid}): RSS grew {100 * growth:.1f}% over the run after its first {settle:.0f} s "
                            f"(peak of the first fifth {p0 / 1024:.1f} MiB, of the last {p1 / 1024:.1f} MiB)")
        # Threads and descriptors may vary by a few (the Go runtime, a
        # reconnect); a leak grows them with time.
        if thr > max(4, base[2] // 2):
            problems.append(f"{name} (pid {pid}): threads grew by {thr}")
        if fds > max(8, base[3] // 2):
            problems.append(f"{name} (pid {pid}): descriptors grew by {fds}")
    return problems, figures


def leftovers(binary, tag):
    """What `homatb clean` would still find of the run's tag."""
    out = subprocess.run([binary, "clean", "--run", tag, "--dry-run"], capture_output=True, text=True)
    found = [l for l in out.stdout.splitlines() if l.startswith(("removing", "keeping", "  "))]
    return found


def soak(binary, scenario, out, simulate, interval, heap_profile=None, runtime_metrics=None, require_checked=True):
    cmd = ["nice", "-n", "10", binary, "run", "--no-report", "-q", "--out", out, scenario]
    if simulate:
        cmd.insert(5, "--simulate")
    if heap_profile:
        # The run's agents and switches profile themselves too.
        cmd.insert(5, "--heap-profile=" + heap_profile + ("-sim" if simulate else "-emu"))
    if runtime_metrics:
        # Every homatb process of the run writes its Go runtime's memory
        # classes beside its resident size every 5 s (no collection forced).
        cmd.insert(5, "--runtime-metrics=" + runtime_metrics + ("-sim" if simulate else "-emu"))
    os.makedirs(out, exist_ok=True)
    before = set(os.listdir(out))
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd)
    stop = threading.Event()
    samples = os.path.join(out, f"soak-{'sim' if simulate else 'emu'}-samples.csv")
    th = threading.Thread(target=sampler, args=(proc.pid, samples, interval, stop))
    th.start()
    rc = proc.wait()
    stop.set()
    th.join()
    wall = time.monotonic() - t0
    problems = [] if rc == 0 else [f"homatb run exited {rc}"]
    new = sorted(set(os.listdir(out)) - before - {os.path.basename(samples)})
    if len(new) != 1:
        return problems + [f"expected one run directory in {out}, found {new}"], []
    run_dir = os.path.join(out, new[0])
    rep = subprocess.run(["nice", "-n", "10", binary, "report", "-q", run_dir])
    if rep.returncode != 0:
        problems.append(f"homatb report exited {rep.returncode}")
        return problems, []
    p, rows = check_books(run_dir)
    problems += p
    p, figures = check_samples(samples)
    problems += p
    # A run too short for the memory check must not pass unchecked (the
    # twin got faster): the orchestrator's own line says it was checked.
    if require_checked and not any(f"(pid {proc.pid}," in f for f in figures):
        problems.append(f"the run lasted {wall:.0f} s, under the {SETTLE / 2:.0f} s a memory check needs: "
                        "nothing was checked; lengthen the scenario")
    tag = json.load(open(os.path.join(run_dir, "manifest.json"))).get("tag", "")
    if tag and not simulate:
        left = leftovers(binary, tag)
        if left:
            problems.append("left behind: " + "; ".join(left))
    summary = json.load(open(os.path.join(run_dir, "summary.json")))
    for e in summary["experiments"]:
        c = e["rpcs"]
        figures.insert(0, f"{e['name']}: issued {c['issued']}, completed {c['completed']}, failed {c['failed']} "
                          f"({', '.join(f'{k}: {v}' for k, v in sorted((c.get('failures') or {}).items())) or 'none'}); rows {rows.get(e['name'], 0)}")
    figures.insert(0, f"{run_dir}: wall {wall:.0f} s, tag {tag or '-'}")
    return problems, figures


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="bin/homatb")
    ap.add_argument("--out", help="parent of the run directories")
    ap.add_argument("--part", choices=["sim", "emu", "both"], default="both")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--interval", type=float, default=5.0, help="seconds between samples")
    ap.add_argument("--heap-profile", metavar="PREFIX",
                    help="every homatb process writes heap profiles PREFIX-{sim,emu}-...pprof every 30 s "
                         "(each forces a collection: a diagnosis, not a measured soak)")
    ap.add_argument("--runtime-metrics", metavar="PREFIX",
                    help="every homatb process writes its Go runtime's memory classes and goroutines beside its "
                         "resident size to PREFIX-{sim,emu}-WHO-PID.csv every 5 s (cheap: the soak still measures)")
    ap.add_argument("--self-check", action="store_true", help="only check the RSS statistic on synthetic series")
    ap.add_argument("--check-samples", metavar="CSV",
                    help="only check the processes of a samples file an earlier soak wrote (no run)")
    args = ap.parse_args()
    problems = self_check()
    for p in problems:
        print("FAIL " + p)
    if problems or args.self_check:
        print("soak: self-check " + ("FAILED" if problems else "ok"))
        return 1 if problems else 0
    if args.check_samples:
        problems, figures = check_samples(args.check_samples)
        for l in figures + ["FAIL " + p for p in problems]:
            print("  " + l)
        print("soak: " + ("FAILED" if problems else "ok"))
        return 1 if problems else 0
    if not args.out:
        ap.error("--out is required for a soak")
    here = os.path.dirname(os.path.abspath(__file__))
    parts = []
    if args.part in ("sim", "both"):
        parts.append(("sim", os.path.join(here, "../scenarios/soak/sim.yaml"), True))
    if args.part in ("emu", "both"):
        if os.geteuid() != 0 or not shutil_which("mn"):
            print("soak: the emulated part needs root and Mininet (mn); skipped", file=sys.stderr)
            if args.part == "emu":
                return 1
        else:
            parts.append(("emu", os.path.join(here, "../scenarios/soak/emu.yaml"), False))
    failed = False
    for name, scen, sim in parts:
        with open("/proc/loadavg") as f:
            load = " ".join(f.read().split()[:3])
        print(f"soak {name}: {scen} (scale {args.scale:g}), load average {load}", flush=True)
        # A shrunk soak (--scale below 1) is a smoke test of this script:
        # its runs may be too short for the memory check.
        problems, figures = soak(args.bin, scaled(scen, args.scale), os.path.join(args.out, name), sim, args.interval,
                                 args.heap_profile, args.runtime_metrics, require_checked=args.scale >= 1)
        for l in figures:
            print("  " + l)
        for p in problems:
            print("  FAIL " + p)
        failed = failed or bool(problems)
        with open("/proc/loadavg") as f:
            print(f"  load average after: {' '.join(f.read().split()[:3])}")
    print("soak: " + ("FAILED" if failed else "ok"))
    return 1 if failed else 0


def shutil_which(name):
    import shutil
    return shutil.which(name)


if __name__ == "__main__":
    sys.exit(main())
