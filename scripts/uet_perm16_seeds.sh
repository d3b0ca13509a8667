#!/bin/bash
# Runs scenarios/uet-htsim-perm16-sim.yaml (UET on a 16-host fat tree,
# 128 entropies and one) over the random permutations of seeds FIRST..LAST
# (homatb cm permutation --seed N) and prints each one's completion times:
# how much a one-path permutation's tail depends on which flows share a
# path. The twin repeats a run exactly, so one run per permutation.
#
#   scripts/uet_perm16_seeds.sh HOMATB OUT [FIRST LAST]
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 HOMATB OUT [FIRST LAST]" >&2; exit 2; }
bin=$1 out=$2 first=${3:-1} last=${4:-9}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
for s in $(seq "$first" "$last"); do
	"$bin" cm permutation --nodes 16 --bytes 2MB --seed "$s" --out "$out/perm16-s$s.cm"
	sed "s#connection_matrix: perm16-random.cm#connection_matrix: $out/perm16-s$s.cm#" \
		"$here/scenarios/uet-htsim-perm16-sim.yaml" >"$out/perm16-s$s.yaml"
	rm -rf "$out/run-s$s"
	"$bin" run --simulate -q --run-dir "$out/run-s$s" "$out/perm16-s$s.yaml" >"$out/run-s$s.out" 2>&1
	echo "seed $s: $(grep -o 'uet-paths-[0-9]* .*flows in [0-9.]* [µm]s' "$out/run-s$s.out" | sed 's/ *issued.*flows in/:/' | paste -sd' ')"
done
