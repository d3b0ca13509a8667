#!/usr/bin/env python3
"""Where a run's CPU goes: each homatb process's CPU time and run-queue wait.

  run_cpu.py sample OUT.csv SECONDS [ROOT_PID]
      once a second for at most SECONDS, for every homatb process (the
      agents, the switches, `homatb run`; with ROOT_PID only that process
      and its descendants, so that other sessions' runs are left out): the
      CPU time its threads used and
      the time they spent runnable but waiting for a CPU, from
      /proc/PID/task/*/schedstat, and their context switches; with the
      machine's busy fraction from /proc/stat. Start it beside a run and
      stop it after (or let SECONDS end it).

  run_cpu.py report OUT.csv RUN_DIR
      per experiment of RUN_DIR's manifest.json, over its measurement (from
      a second after its start to its end): the agents together, the
      switches together and `homatb run`, as vCPUs used, threads waiting on
      average, and context switches per second; with the machine's busy
      fraction and the other processes' vCPUs the run recorded.

Read only /proc; the processes are found by their command lines."""
import csv
import json
import os
import sys
import time
from collections import defaultdict


def role(cmd):
    """The class of a homatb process from its argv, or None."""
    if not cmd or not any("homatb" in c for c in cmd[:2]):
        return None
    for r in ("agent", "switch", "run"):
        if r in cmd[1:3]:
            return r
    return None


def parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def descends(pid, root):
    for _ in range(64):
        if pid == root:
            return True
        if pid <= 1:
            return False
        pid = parent(pid)
    return False


def processes(root):
    found = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = [c.decode(errors="replace") for c in f.read().split(b"\0") if c]
        except OSError:
            continue
        r = role(cmd)
        if r and (root is None or descends(int(p), root)):
            found[int(p)] = r
    return found


def schedstat(pid):
    """CPU ns, run-queue wait ns and time slices of pid's threads, or None."""
    cpu = wait = slices = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                v = f.read().split()
        except OSError:
            continue  # the thread exited
        cpu, wait, slices = cpu + int(v[0]), wait + int(v[1]), slices + int(v[2])
    return cpu, wait, slices


def machine():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[3] + v[4]  # total, idle + iowait


def sample(out, seconds, root):
    prev, m0, t0 = {}, machine(), time.time()
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["unix_s", "role", "pid", "cpu_ms", "wait_ms", "slices", "machine_busy"])
        while time.time() - t0 < seconds:
            time.sleep(1)
            m1 = machine()
            busy = 1 - (m1[1] - m0[1]) / max(1, m1[0] - m0[0])
            m0, now = m1, time.time()
            for pid, r in processes(root).items():
                s = schedstat(pid)
                if s is None:
                    continue
                if pid in prev:
                    d = [a - b for a, b in zip(s, prev[pid])]
                    w.writerow([f"{now:.2f}", r, pid, f"{d[0] / 1e6:.1f}", f"{d[1] / 1e6:.1f}", d[2], f"{busy:.3f}"])
                prev[pid] = s
            f.flush()


def report(out, run):
    with open(out) as f:
        rows = list(csv.DictReader(f))
    with open(os.path.join(run, "manifest.json")) as f:
        exps = json.load(f)["experiments"]
    print("experiment | busy | other vCPUs | agents: vCPUs, waiting, switches/s | switch: ... | run: ...")
    for e in exps:
        lo, hi = e["started_unix_ns"] / 1e9 + 1, e["ended_unix_ns"] / 1e9
        agg, secs, busy = defaultdict(lambda: [0.0, 0.0, 0]), set(), {}
        for r in rows:
            t = float(r["unix_s"])
            if lo <= t <= hi:
                a = agg[r["role"]]
                a[0] += float(r["cpu_ms"])
                a[1] += float(r["wait_ms"])
                a[2] += int(r["slices"])
                secs.add(t)
                busy[t] = float(r["machine_busy"])
        n = len(secs)
        if n == 0:
            print(f"{e['name']} | no samples")
            continue
        parts = [f"{agg[r][0] / n / 1000:.2f}, {agg[r][1] / n / 1000:.2f}, {agg[r][2] / n:.0f}" for r in ("agent", "switch", "run")]
        print(f"{e['name']} | {sum(busy.values()) / len(busy):.2f} | {e.get('other_cpus', 0):.2f} | " + " | ".join(parts))


def main(argv):
    if len(argv) in (4, 5) and argv[1] == "sample":
        sample(argv[2], float(argv[3]), int(argv[4]) if len(argv) == 5 else None)
    elif len(argv) == 4 and argv[1] == "report":
        report(argv[2], argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
