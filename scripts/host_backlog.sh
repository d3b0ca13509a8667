#!/bin/bash
# Samples the backlog of an emulated host's link (its htb shaper: the root
# qdisc's, and each class's with host_qdisc pacer) every INTERVAL seconds
# for SECONDS while a run is under way, and prints the packets and bytes
# queued at the median, P90 and maximum: how long a packet put on the link
# waits behind what is there. HOST is the agent's --name (h1); the host's
# namespace is its agent process's. Sampling begins when that agent is up
# (it waits up to ten minutes for a run to start).
#
#   scripts/host_backlog.sh HOST SECONDS [INTERVAL]
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 HOST SECONDS [INTERVAL]" >&2; exit 2; }
host=$1 secs=$2 every=${3:-0.05}
for _ in $(seq 6000); do
	pgrep -f -- "agent --socket .* --name $host " >/dev/null && break
	sleep 0.1
done
end=$(($(date +%s) + secs))
samples=$(mktemp)
trap 'rm -f "$samples"' EXIT
while [ "$(date +%s)" -lt "$end" ]; do
	pid=$(pgrep -f -- "agent --socket .* --name $host " | head -1 || true)
	if [ -n "$pid" ]; then
		# "class htb 5:20 …" or "qdisc htb 5: root …", then " backlog 123b 4p …"
		dev=$(nsenter -t "$pid" -n ip -o link show | awk -F': ' '$2 != "lo" {print $2; exit}' | cut -d@ -f1)
		nsenter -t "$pid" -n tc -s class show dev "$dev" 2>/dev/null | awk '
			/^class htb/ {c=$3}
			/backlog/ {for (i=1;i<=NF;i++) if ($i=="backlog") {b=$(i+1); p=$(i+2); sub("b","",b); sub("p","",p); print c, b, p}}' >>"$samples" || true
	fi
	sleep "$every"
done
python3 - "$samples" <<'PY'
import sys, collections
by = collections.defaultdict(list)
for line in open(sys.argv[1]):
    c, b, p = line.split()
    by[c].append((int(b), int(p)))
for c, xs in sorted(by.items()):
    xs.sort()
    q = lambda f: xs[min(len(xs) - 1, int(f * len(xs)))]
    print(f"class {c}: {len(xs)} samples; backlog bytes/packets median {q(0.5)}, P90 {q(0.9)}, max {xs[-1]}")
PY
