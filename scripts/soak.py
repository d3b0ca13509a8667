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
  - every process that lived past the first minute kept its resident
    memory within 10% of its size at one minute, and its threads and
    descriptors did not grow after it (a leak grows them steadily);
  - nothing of the run is left: `homatb clean --run TAG --dry-run` finds no
    process, interface or file of its tag.

--scale shrinks every duration in minutes of the scenarios (a smoke test
of the soak itself: --scale 0.05 runs 90 s and 30 s).
"""
import argparse
import csv
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

GROWTH = 0.10    # allowed RSS growth after the first minute
SETTLE = 60.0    # seconds of a process's life before its size counts


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
    path = os.path.join(run_dir, "rpcs.csv")
    opener = open
    if not os.path.exists(path):
        path, opener = path + ".gz", gzip.open
    with opener(path, "rt") as f:
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
    """Per process: RSS growth after its first minute, thread and fd growth."""
    by = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            by.setdefault((int(row["pid"]), row["name"]), []).append(
                (float(row["t_s"]), int(row["rss_kib"]), int(row["threads"]), int(row["fds"]),
                 int(row.get("anon_kib") or 0), int(row.get("file_kib") or 0)))
    problems, figures = [], []
    for (pid, name), ss in sorted(by.items()):
        t0 = ss[0][0]
        settled = [s for s in ss if s[0] - t0 >= SETTLE]
        if len(settled) < 2:
            continue
        base = settled[0]
        peak = max(s[1] for s in settled)
        growth = (peak - base[1]) / base[1]
        thr = max(s[2] for s in settled) - base[2]
        fds = max(s[3] for s in settled) - base[3]
        at_peak = max(settled, key=lambda s: s[1])
        # Not checked, a guide: a garbage-collected heap saws up and down,
        # so one sample at a minute may fall high or low; a leak raises
        # the mean from one third of the run to the next.
        k = len(settled) // 3
        trend = ""
        if k:
            mean = lambda ss: sum(x[1] for x in ss) / len(ss)
            trend = f"; mean by thirds after {mean(settled[:k]) / 1024:.1f}, {mean(settled[k:-k] or settled[k:]) / 1024:.1f}, {mean(settled[-k:]) / 1024:.1f} MiB"
        figures.append(f"{name} (pid {pid}, {ss[-1][0] - t0:.0f} s): RSS {base[1] / 1024:.1f} MiB at 1 min, "
                       f"peak {peak / 1024:.1f} MiB after ({100 * growth:+.1f}%; anonymous {base[4] / 1024:.1f} -> "
                       f"{at_peak[4] / 1024:.1f}, file-backed {base[5] / 1024:.1f} -> {at_peak[5] / 1024:.1f} MiB) at "
                       f"{at_peak[0] - t0:.0f} s{trend}; threads {base[2]}{thr:+d}; fds {base[3]}{fds:+d}")
        if growth > GROWTH:
            problems.append(f"{name} (pid {pid}): RSS grew {100 * growth:.1f}% after its first minute")
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


def soak(binary, scenario, out, simulate, interval, heap_profile=None):
    cmd = ["nice", "-n", "10", binary, "run", "--no-report", "-q", "--out", out, scenario]
    if simulate:
        cmd.insert(5, "--simulate")
    if heap_profile:
        # The run's agents and switches profile themselves too.
        cmd.insert(5, "--heap-profile=" + heap_profile + ("-sim" if simulate else "-emu"))
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
    ap.add_argument("--out", required=True, help="parent of the run directories")
    ap.add_argument("--part", choices=["sim", "emu", "both"], default="both")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--interval", type=float, default=5.0, help="seconds between samples")
    ap.add_argument("--heap-profile", metavar="PREFIX",
                    help="every homatb process writes heap profiles PREFIX-{sim,emu}-...pprof every 30 s "
                         "(each forces a collection: a diagnosis, not a measured soak)")
    args = ap.parse_args()
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
        problems, figures = soak(args.bin, scaled(scen, args.scale), os.path.join(args.out, name), sim, args.interval,
                                 args.heap_profile)
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
