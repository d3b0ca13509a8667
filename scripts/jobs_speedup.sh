#!/bin/bash
# Times a simulated scenario run in one process (--jobs 1) and split over
# J processes (--jobs J), alternately, ROUNDS times each, and checks that
# each pair's records are byte-identical: every file of the run directory
# but manifest.json (which holds wall times), the report, the logs and a
# split run's own tasks/ and dispatch.json; compressed records compared
# decompressed. Prints a line per run (wall seconds, CPU seconds, peak
# resident memory of the largest process, load average before and after)
# and the ratio of each pair's wall times; exits 1 if any record differs.
# Each pair's run directories are removed once compared unless KEEP=1.
#
#   scripts/jobs_speedup.sh HOMATB OUT SCENARIO.yaml [J [ROUNDS]]
#
# e.g. on a quiet machine, one seed of the Homa paper's sweep:
#   scripts/jobs_speedup.sh ./homatb /tmp/jobs scenarios/homa2018-sim.yaml 2 1
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: $0 HOMATB OUT SCENARIO.yaml [J [ROUNDS]]" >&2; exit 2; }
bin=$1 out=$2 sc=$3 jobs=${4:-2} rounds=${5:-1}
mkdir -p "$out"
status=0

# run J DIR: one timed run; prints "wall cpu rss_kib".
run() {
	local j=$1 d=$2
	rm -rf "$d"
	/usr/bin/time -f "%e %U %S %M" -o "$d.time" "$bin" run --simulate -q --jobs "$j" --run-dir "$d" "$sc" >"$d.out" 2>&1 || {
		echo "run --jobs $j failed (see $d.out)" >&2
		return 1
	}
	awk '{printf "%.1f %.1f %d\n", $1, $2 + $3, $4}' "$d.time"
}

printf "%-6s %-7s %8s %8s %9s  %s\n" round jobs wall_s cpu_s rss_mib "load average before -> after"
for r in $(seq "$rounds"); do
	declare -A wall=()
	# Alternate which goes first, so a trend in the machine's load falls
	# on both.
	order="1 $jobs"
	[ $((r % 2)) -eq 0 ] && order="$jobs 1"
	for j in $order; do
		d=$out/r$r-j$j
		before=$(cut -d' ' -f1-3 /proc/loadavg)
		res=$(run "$j" "$d") || { status=1; continue 2; }
		after=$(cut -d' ' -f1-3 /proc/loadavg)
		read -r w c m <<<"$res"
		wall[$j]=$w
		printf "%-6s %-7s %8s %8s %9d  %s -> %s\n" "$r" "$j" "$w" "$c" $((m / 1024)) "$before" "$after"
	done
	if "$(dirname "$0")/same_records.sh" "$out/r$r-j1" "$out/r$r-j$jobs" | sed 's/^/  /'; then
		echo "round $r: records identical; wall --jobs 1 / --jobs $jobs = $(awk -v a="${wall[1]}" -v b="${wall[$jobs]}" 'BEGIN{printf "%.2f", a/b}')"
		[ "${KEEP:-0}" = 1 ] || rm -rf "$out/r$r-j1" "$out/r$r-j$jobs"
	else
		echo "round $r: RECORDS DIFFER (kept in $out)"
		status=1
	fi
done
exit $status
