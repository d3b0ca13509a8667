#!/bin/bash
# Runs scenarios/cotenancy.yaml (Homa's incast RPCs beside TCP's bulk
# streams on four emulated hosts, host_qdisc none and pacer) and its two
# baselines on the same hosts, phases and seeds (--only homa, --only
# tcp-cubic) in ROUNDS interleaved rounds: round r runs all three with
# seed r, starting each round with another of them, so a change in the
# machine's load spreads over all. Then prints the table of
# scripts/cotenancy_table.py. Set EMU_LOCK to a lock file to hold it
# (flock) for each run, not for the whole series; RATE (as 50Mbit) to run
# at another link rate than the scenario's 20Mbit.
#
#   scripts/cotenancy_emulated.sh HOMATB OUT [ROUNDS]
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 HOMATB OUT [ROUNDS]" >&2; exit 2; }
bin=$1 out=$2 rounds=${3:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
lock=()
[ -n "${EMU_LOCK:-}" ] && lock=(flock "$EMU_LOCK")
kinds=(shared homa tcp-cubic)
for r in $(seq 1 "$rounds"); do
	sed -e "s/^seed: 1$/seed: $r/" -e "s/^  rate: [0-9]*Mbit$/  rate: ${RATE:-20Mbit}/" "$here/scenarios/cotenancy.yaml" >"$out/cotenancy-s$r.yaml"
	grep -q "^seed: $r$" "$out/cotenancy-s$r.yaml" && grep -q "^  rate: ${RATE:-20Mbit}$" "$out/cotenancy-s$r.yaml" ||
		{ echo "scenarios/cotenancy.yaml has no 'seed: 1' or '  rate: NMbit' line to change" >&2; exit 1; }
	for i in 0 1 2; do
		k=${kinds[$(((r - 1 + i) % 3))]}
		only=()
		[ "$k" != shared ] && only=(--only "$k")
		rm -rf "$out/$k-s$r"
		echo "$(date -u +%H:%M:%S) round $r: $k ($(cut -d' ' -f1-3 /proc/loadavg))" >&2
		"${lock[@]}" "$bin" run -q --timeout 5m "${only[@]}" --run-dir "$out/$k-s$r" "$out/cotenancy-s$r.yaml" >"$out/$k-s$r.out" 2>&1
	done
done
python3 "$here/scripts/cotenancy_table.py" "$out" "$rounds"
