#!/usr/bin/env bash
# scripts/agent_rss.sh HOST OUT [INTERVAL]: samples the resident memory of
# the run's agent for HOST (`homatb agent ... --name HOST`) every INTERVAL
# seconds (default 1) into OUT as "unix_seconds,rss_kib" lines, from the
# agent's start until it exits. Start it before `homatb run`; it waits up
# to 10 minutes for the agent to appear.
set -euo pipefail
host=$1 out=$2 interval=${3:-1}
pid=
for _ in $(seq 600); do
	pid=$(pgrep -f -- "homatb agent .*--name $host( |$)" | head -1 || true)
	[ -n "$pid" ] && break
	sleep 1
done
[ -n "$pid" ] || { echo "agent_rss: no agent for $host" >&2; exit 1; }
echo "unix_seconds,rss_kib" >"$out"
while rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null) && [ -n "$rss" ]; do
	echo "$(date +%s),$rss" >>"$out"
	sleep "$interval"
done
