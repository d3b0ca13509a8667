#!/bin/bash
# Runs each scenario in the twin with two homatb binaries (e.g. main's and
# a branch's) and checks their records are byte-identical: every file of
# the run directory but manifest.json (which holds wall times), the report
# and the logs, compressed records compared decompressed (same_records.sh). Prints one line
# per scenario and per differing file; exits 1 if any differ.
#
#   scripts/twin_identical.sh BASE_HOMATB NEW_HOMATB OUT SCENARIO.yaml...
set -uo pipefail
[ $# -ge 4 ] || { echo "usage: $0 BASE_HOMATB NEW_HOMATB OUT SCENARIO.yaml..." >&2; exit 2; }
base=$1 new=$2 out=$3
shift 3
status=0
for sc in "$@"; do
	name=$(basename "$sc" .yaml)
	d=$out/$name
	rm -rf "$d"
	mkdir -p "$d"
	for v in base new; do
		bin=$base
		[ $v = new ] && bin=$new
		if ! "$bin" run --simulate -q --run-dir "$d/$v" "$sc" >"$d/$v.out" 2>&1; then
			echo "$name: $v run failed (see $d/$v.out)"
			status=1
			continue 2
		fi
	done
	if ! "$(dirname "$0")/same_records.sh" "$d/base" "$d/new" | sed "s/^/$name: /"; then
		status=1
	fi
done
exit $status
