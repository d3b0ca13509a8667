#!/bin/bash
# The cross-validation of docs/simulation.md: each scenario's engine
# transports emulated (3 repetitions) and simulated with the same seeds
# (with the emulated hosts' shaper as the simulated hosts' NIC),
# paired by `homatb compare`, then printed as one markdown table. The
# TCP family's row (incast-tcp) pairs the kernel's TCP, emulated, with the
# simulator's model of it.
#
#   scripts/crossval.sh [OUT]     (default results/crossval; needs root)
#   ROWS="incast-tcp tcp,pias" scripts/crossval.sh [OUT]   (some rows only:
#                                 "scenario transports", ';' between rows)
#
# An emulated run already in OUT/emu-<scenario> is reused, so the table can
# be rebuilt without emulating again; delete it to measure anew.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/crossval}
B=${HOMATB:-bin/homatb}
REPS=${REPS:-3}
mkdir -p "$OUT"
IFS=';' read -ra rows <<<"${ROWS:-incast homa;overcommit homa;priorities homa;compare2018 homa,pfabric,phost,ndp;incast-tcp tcp,pias}"
for row in "${rows[@]}"; do
	set -- $row
	s=$1 only=$2
	if [ ! -f "$OUT/emu-$s/summary.json" ]; then
		rm -rf "$OUT/emu-$s"
		"$B" run "scenarios/$s.yaml" --only "$only" --repetitions "$REPS" --run-dir "$OUT/emu-$s" -q
	fi
	rm -rf "$OUT/sim-$s" "$OUT/cmp-$s"
	"$B" run --simulate --host-nic shaper "scenarios/$s.yaml" --only "$only" --repetitions "$REPS" --run-dir "$OUT/sim-$s" -q >/dev/null
	"$B" compare "$OUT/emu-$s" "$OUT/sim-$s" --run-dir "$OUT/cmp-$s" 2>/dev/null >/dev/null
done
python3 scripts/crossval_table.py "$OUT"/cmp-*/compare.json
